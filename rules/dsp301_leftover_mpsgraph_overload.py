"""
## What it does
Flags an op family of `native_functions.yaml` that is half migrated: some overloads (functional,
inplace, out; Tensor and Scalar variants, following `structured_delegate`) reach MPS through the shared
stub line (`CPU, CUDA, MPS: x`), while others still name an MPS-only function (`MPS: x_mps`). Each
leftover is reported on its yaml `MPS:` line, and the host implementation left for it
(`TORCH_IMPL_FUNC(x_mps)` or a structured-op macro) is reported in the `.mm` file.

## Why is this bad?
Every overload has its own `dispatch:` block. An entry left at `MPS: x_mps` still routes that overload
to the old MPSGraph code, so callers silently land on the old path depending on which overload they
hit (`torch.atan2(a, b)` vs `torch.atan2(a, b, out=c)`): different numerics, different dtype support,
and the old code can never be deleted.

## Example
```yaml
- func: atan2.out(Tensor self, Tensor other, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU, CUDA, MPS: atan2_out
- func: atan2.Scalar_out(Tensor self, Scalar other, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU, CUDA: atan2_Scalar_out
    MPS: atan2_Scalar_out_mps     # leftover
```

## Use instead
```yaml
  dispatch:
    CPU, CUDA, MPS: atan2_Scalar_out
```

## How to fix
The unsafe fix rewrites the yaml (MPS joins the shared line, the `MPS: x_mps` line goes) when the tree
registers the shared stub for MPS; review that the stub kernel covers this overload's dtypes and scalar
arguments before applying it. By hand: add `MPS` to the overload's shared dispatch line, make sure the stub it reaches has an MPS
registration (`REGISTER_DISPATCH(..._stub, &..._mps_kernel)`), then delete the `*_mps` implementation
and its `#include <ATen/ops/..._native.h>`. Grep the legacy name until nothing references it.

Off by default (`--select DSP301`): it is a migration audit. On PyTorch's tree (`docs/real-world.md`, fourth
run, strict count) 1 of its 4 findings was a patch to merge as is: the shared sibling of an overload often
redispatches (`isin`, `pow`), so moving the overload changes nothing, and when the shared kernel calls a stub
MPS does not register the patch breaks the op. mpslint cannot see the shared kernels' sources to tell which.

Guide: *Step 1 — For Migrating from MPSGraph* — "Update every overload".
"""

from __future__ import annotations

from mpslint.families import family_routes, leftovers, line_range, mps_registered_stubs, shared_non_mps_kernel
from mpslint.graph import stub_candidates
from mpslint.model import Fix, Severity
from mpslint.rule import Rule


class LeftoverMpsgraphOverload(Rule):
    code = "DSP301"
    default_enabled = False  # measured below the default set's bar: see "Off by default" above
    name = "leftover-mpsgraph-overload"
    severity = Severity.WARNING
    scope = "dispatch"
    summary = "Op family half migrated: some overloads share the CPU/CUDA stub, others still dispatch to an MPS-only function"
    fixable = "unsafe"
    guide = "Step 1: Update native_functions.yaml (migrating)"
    contexts = ("pytorch",)  # a PyTorch convention (mpslint.context)

    def check(self, ctx):
        natives = ctx.project.natives
        if natives is None:
            return
        graph = ctx.graph
        for family, routes in sorted(family_routes(natives).items()):
            left, migrated = leftovers(routes)
            if not left:
                continue
            sib = ", ".join(f"`{r.overload.name}`" for r in migrated[:3]) + (" ..." if len(migrated) > 3 else "")
            shared_kernel = migrated[0].route.kernel
            for r in left:
                ov = r.overload
                g = ov.group_for("MPS")
                target = shared_non_mps_kernel(ov)
                yield ctx.finding(
                    self,
                    natives.path,
                    g.span,
                    f"`{ov.name}` still dispatches MPS to `{g.kernel}` while its siblings {sib} reach MPS through the "
                    f"shared stub (`{shared_kernel}`); add MPS to this overload's shared line (`CPU, CUDA, MPS: {target}`) "
                    f"and delete `{g.kernel}`.",
                    fix=self._fix(ctx, ov, g, target),
                    op=family,
                    overload=ov.name,
                )
                for impl in graph.impls_of(g.kernel):
                    a = graph.attrs(impl)
                    yield ctx.finding(
                        self,
                        a["path"],
                        a["span"],
                        f"`{g.kernel}` implements `{ov.name}`, a leftover of the `{family}` family whose other overloads were "
                        f"migrated to the shared stub; migrate this overload too and delete this implementation.",
                        op=family,
                        overload=ov.name,
                    )

    @staticmethod
    def _fix(ctx, ov, g, target):
        """Join MPS to the shared line and drop the `MPS: x_mps` line — only when the tree registers the
        stub the shared kernel reaches for MPS (otherwise the rewrite would route MPS to a missing kernel)."""
        stubs = mps_registered_stubs(ctx.project)
        if not any(s in stubs for s in stub_candidates(target, ov)):
            return None
        shared = next((grp for grp in ov.groups if grp.kernel == target and "MPS" not in grp.keys and ("CUDA" in grp.keys or "CPU" in grp.keys)), None)
        if shared is None:
            return None
        path = ctx.project.natives.path
        text = ctx.text(path)
        line = text[shared.span.start : shared.span.end]
        colon = line.find(":")
        if colon < 0 or shared.span.line == g.span.line:
            return None
        at = shared.span.start + len(line[:colon].rstrip())
        a, b = line_range(text, g.span.start, g.span.end)
        keys = ", ".join(shared.keys + ("MPS",))
        return Fix(
            f"Dispatch MPS through `{keys}: {target}` and drop `MPS: {g.kernel}`",
            (ctx.edit(path, at, at, ", MPS"), ctx.edit(path, a, b, "")),
            "unsafe",
        )
