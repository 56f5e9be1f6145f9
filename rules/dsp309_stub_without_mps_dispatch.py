"""
## What it does
Flags a `native_functions.yaml` overload with no MPS key whose CPU and CUDA share a kernel (`CPU, CUDA:
x_out`) that reaches a DispatchStub the MPS sources of the tree register
(`REGISTER_DISPATCH(x_stub, &x_mps_kernel)`): the native kernel is written and registered, but the
yaml never sends MPS to it. Overloads that decompose (`CompositeImplicitAutograd`,
`CompositeExplicitAutograd`, or no dispatch at all) are not reported.

The stub a shared kernel calls is PyTorch's naming convention (`x_out` -> `x_stub`, the family's
`x_stub`), so only the stub named after the op's own family or kernel counts.

## Why is this bad?
Without an MPS key the op is not implemented for MPS: it raises "not currently implemented for the MPS
device", or, with `PYTORCH_ENABLE_MPS_FALLBACK=1`, silently runs on the CPU with two copies — while the
Metal kernel written for it is never used.

## Example
```yaml
- func: logit.out(Tensor self, float? eps=None, *, Tensor(a!) out) -> Tensor(a!)
  dispatch:
    CPU, CUDA: logit_out
```
with `REGISTER_DISPATCH(logit_stub, &logit_mps_kernel)` in an MPS source.

## Use instead
```yaml
  dispatch:
    CPU, CUDA, MPS: logit_out
```

## How to fix
Add MPS to the shared dispatch line of every overload that should reach the kernel, and remove the op's
expected failures from `common_mps.py`.

Guide: *Checklist* — "Added MPS dispatch to `native_functions.yaml`"; *Step 1 — Shared implementation
across devices*.
"""

from __future__ import annotations

from mpslint.families import family_routes, mps_registered_stubs, shared_non_mps_kernel
from mpslint.graph import stub_candidates
from mpslint.model import Severity
from mpslint.rule import Rule


class StubWithoutMpsDispatch(Rule):
    code = "DSP309"
    name = "stub-without-mps-dispatch"
    severity = Severity.WARNING
    scope = "dispatch"
    summary = "Overload without an MPS key although MPS sources register the stub its shared CPU/CUDA kernel calls"
    guide = "Checklist: Added MPS dispatch to native_functions.yaml"
    contexts = ("pytorch",)  # a PyTorch convention (mpslint.context)

    def check(self, ctx):
        project = ctx.project
        natives = project.natives
        registered = mps_registered_stubs(project)
        if natives is None or not registered:
            return
        routes = family_routes(natives)
        for stub in sorted(registered):
            family = stub[: -len("_stub")] if stub.endswith("_stub") else None
            if not family or family not in routes:
                continue
            p, reg = registered[stub][0]
            for r in routes[family]:
                ov = r.overload
                if r.route.kind != "none":
                    continue
                shared = shared_non_mps_kernel(ov)
                if shared is None:
                    continue
                # the stub named after the shared kernel (x_out -> x_stub); the family's stub only for out/structured
                # overloads (an inplace `x_` or functional `x` usually calls `at::x_out`, not the stub)
                named = stub_candidates(shared, ov)[:1] + ([family + "_stub"] if ov.structured or ov.is_out else [])
                if stub not in named:
                    continue
                grp = ov.group_for("CUDA") or ov.group_for("CPU")
                keys = ", ".join(grp.keys + ("MPS",))
                yield ctx.finding(
                    self,
                    natives.path,
                    grp.span,
                    f"`{ov.name}` has no MPS key, but `{reg.macro}({stub}, ...)` at {p}:{reg.span.line} registers an MPS "
                    f"kernel for the stub `{shared}` calls; MPS never reaches it (the op is unimplemented or falls back to "
                    f"the CPU); dispatch `{keys}: {shared}`.",
                    op=family,
                    overload=ov.name,
                )
