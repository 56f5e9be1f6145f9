"""
## What it does
Flags an MPS implementation that no `native_functions.yaml` entry reaches any more: a
`TORCH_IMPL_FUNC(x_mps)`, a structured-op macro that makes one
(`CREATE_MPS_STRUCTURED_..._FUNC(x_out_mps, ...)`), or a non-static `x_mps` function, in an MPS
operations file, whose name no dispatch key of the yaml names, no stub registration points to, and
nothing else in the tree calls, declares or references — while the op it is named after (`x`) is still
in the yaml. Also flags the `#include <ATen/ops/x_native.h>` left behind for it when nothing else in the
file uses what that header declares (reported on its own when the op now reaches MPS through a shared
kernel, the mark of a finished migration). A left-behind include reported on its own has severity `info`: it
is cleanup (build time), not a defect.

The rule only looks at functions named like dispatch targets (`..._mps`, `..._mps_`) and at
`TORCH_IMPL_FUNC`s, only when the yaml holds MPS dispatch entries, and only for ops the yaml knows.

## Why is this bad?
After a migration to the shared stub (`CPU, CUDA, MPS: x_out`), the old MPSGraph implementation is
dead code. A dead `TORCH_IMPL_FUNC(x_out_mps)` no longer compiles once the generated
`structured_x_out_mps` class is gone ("'structured_x_out_mps' has not been declared"); a dead plain
function compiles but is never run, so fixes land in code that does nothing, and reviewers read the old
path as if it were live.

## Example
```yaml
- func: logaddexp.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU, CUDA, MPS: logaddexp_out
```
```objc
#include <ATen/ops/logaddexp_native.h>

TORCH_IMPL_FUNC(logaddexp_out_mps)(const Tensor& self, const Tensor& other, const Tensor& output) {
  mps::binary_op_graph(self, other, output, "logaddexp");
}
```

## Use instead
Nothing: the shared stub (`REGISTER_DISPATCH(logaddexp_stub, &logaddexp_mps_kernel)`) serves every
overload.

## How to fix
Delete the implementation and the `#include <ATen/ops/x_native.h>` left for it (the unsafe fix does
both), then grep the old name to make sure nothing refers to it. If the function is in fact still
wanted, give the yaml entry that should reach it its `MPS:` key back.

Guide: *Step 3 — Migration: Removing Old MPSGraph Implementation*.
"""

from __future__ import annotations

from mpslint.families import dead_mps_implementations, deletion_range, line_range
from mpslint.model import Fix, Severity
from mpslint.rule import Rule


class DeadMpsImplementation(Rule):
    code = "DSP302"
    name = "dead-mps-implementation"
    severity = Severity.WARNING
    scope = "dispatch"
    summary = "MPS implementation (or its ATen/ops/x_native.h include) that no native_functions.yaml entry reaches"
    fixable = "unsafe"
    guide = "Step 3: Migration: Removing Old MPSGraph Implementation"
    contexts = ("pytorch",)  # a PyTorch convention (mpslint.context)

    def check(self, ctx):
        dead, includes, dying = dead_mps_implementations(ctx.project, ctx.graph)
        last_of: dict[tuple[str, str], int] = {}
        for d in dead:
            key = (d.path, d.family)
            last_of[key] = max(last_of.get(key, -1), d.start)
        for d in dead:
            text = ctx.text(d.path)
            a, b = deletion_range(text, d.start, d.end)
            edits = [ctx.edit(d.path, a, b, "")]
            inc = dying.get((d.path, d.family))
            with_inc = inc is not None and last_of[(d.path, d.family)] == d.start
            if with_inc:
                ia, ib = line_range(text, inc.span.start, inc.span.end)
                edits.insert(0, ctx.edit(d.path, ia, ib, ""))
            what = "TORCH_IMPL_FUNC" if d.kind == "impl_func" else ("structured-op macro" if d.kind.startswith("macro:") else "function")
            yield ctx.finding(
                self,
                d.path,
                d.span,
                f"{what} `{d.name}` is dead: no native_functions.yaml entry of `{d.family}` dispatches to it and nothing "
                f"in the tree calls it; delete it" + (f" and `#include <{inc.header}>`" if with_inc else "")
                + f" (or give the overload that should reach it its `MPS: {d.name}` key back).",
                fix=Fix(f"Delete `{d.name}`" + (f" and `#include <{inc.header}>`" if with_inc else ""), tuple(edits), "unsafe"),
                op=d.family,
            )
        for inc in includes:
            text = ctx.text(inc.path)
            ia, ib = line_range(text, inc.span.start, inc.span.end)
            yield ctx.finding(
                self,
                inc.path,
                inc.span,
                f"`#include <{inc.header}>` is left behind: `{inc.family}` reaches MPS through a shared kernel now and nothing "
                f"in this file implements or calls what the header declares; delete the include (cleanup: it costs build "
                f"time, not correctness).",
                fix=Fix(f"Delete `#include <{inc.header}>`", (ctx.edit(inc.path, ia, ib, ""),), "unsafe"),
                op=inc.family,
                # a stale include is harmless: on PyTorch's tree a reviewer counts it cleanup, not a defect
                severity=Severity.INFO,
            )
