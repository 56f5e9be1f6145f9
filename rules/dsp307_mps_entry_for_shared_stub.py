"""
## What it does
Flags an MPS-specific `native_functions.yaml` entry (`MPS: x_out_mps`) on an overload whose CPU and
CUDA share one kernel (`CPU, CUDA: x_out`) that reaches a DispatchStub MPS could share — when the tree
shows that stub exists:

- MPS sources already register it (`REGISTER_DISPATCH(x_stub, ...)` / `REGISTER_MPS_DISPATCH`): the
  native kernel is written, and this entry keeps the overload away from it; or
- a header of the tree declares it (`DECLARE_DISPATCH(..., x_stub)`).

What it cannot know: stubs declared in headers outside the linted tree (PyTorch declares most of them in
`ATen/native/*.h`, which mpslint does not read unless given) and the stub a shared kernel really calls
(the name is PyTorch's convention, `x_out` -> `x_stub`). Families that are half migrated are DSP301's.

## Why is this bad?
An MPS-specific entry duplicates the op's logic (argument checks, output resizing, type promotion) that
the shared structured kernel already does for CPU and CUDA, and it usually routes to the old MPSGraph
path. When the MPS stub kernel already exists, the entry makes it unreachable for this overload.

## Example
```yaml
- func: digamma.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU, CUDA: digamma_out
    MPS: digamma_out_mps
```
with `REGISTER_DISPATCH(digamma_stub, &digamma_mps_kernel)` in an MPS source.

## Use instead
```yaml
  dispatch:
    CPU, CUDA, MPS: digamma_out
```

## How to fix
Add MPS to the shared line, register the stub for MPS if it is not yet
(`REGISTER_MPS_DISPATCH(x_stub, &x_mps_kernel)`), and delete the `x_mps` implementation.

Guide: *Working with TensorIterators* — "Share the CPU/CUDA stub via `REGISTER_MPS_DISPATCH`".
"""

from __future__ import annotations

from mpslint.families import declared_stubs, family_routes, leftovers, mps_registered_stubs, shared_non_mps_kernel
from mpslint.graph import stub_candidates
from mpslint.model import Severity
from mpslint.rule import Rule


class MpsEntryForSharedStub(Rule):
    code = "DSP307"
    name = "mps-entry-for-shared-stub"
    severity = Severity.WARNING
    scope = "dispatch"
    summary = "MPS-specific yaml entry for an overload whose CPU/CUDA stub MPS could share (the stub is registered or declared in the tree)"
    guide = "Working with TensorIterators: Share the CPU/CUDA stub via REGISTER_MPS_DISPATCH"
    contexts = ("pytorch",)  # a PyTorch convention (mpslint.context)

    def check(self, ctx):
        project = ctx.project
        natives = project.natives
        if natives is None:
            return
        registered = mps_registered_stubs(project)
        declared = declared_stubs(project)
        if not registered and not declared:
            return
        for _family, routes in sorted(family_routes(natives).items()):
            left, _ = leftovers(routes)
            skip = {r.overload.name for r in left}
            for r in routes:
                ov = r.overload
                if ov.name in skip or r.route.kind != "mps_specific" or not r.own_mps:
                    continue
                shared = shared_non_mps_kernel(ov)
                if shared is None:
                    continue
                g = ov.group_for("MPS")
                for stub in stub_candidates(shared, ov):
                    if stub in registered:
                        p, reg = registered[stub][0]
                        evidence = f"`{reg.macro}({stub}, ...)` at {p}:{reg.span.line} already gives MPS a kernel this entry bypasses"
                    elif stub in declared:
                        p, decl = declared[stub][0]
                        evidence = f"`{stub}` is declared at {p}:{decl.span.line}"
                    else:
                        continue
                    yield ctx.finding(
                        self,
                        natives.path,
                        g.span,
                        f"`{ov.name}` dispatches MPS to its own `{g.kernel}` although CPU and CUDA share `{shared}` through "
                        f"`{stub}` ({evidence}); use `CPU, CUDA, MPS: {shared}` with `REGISTER_MPS_DISPATCH({stub}, ...)` and "
                        f"delete `{g.kernel}`.",
                        op=ov.family,
                        overload=ov.name,
                    )
                    break
