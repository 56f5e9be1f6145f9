"""
## What it does
Flags a `native_functions.yaml` entry that routes MPS through a shared structured kernel
(`CPU, CUDA, MPS: x_out`, `structured_inherits: TensorIteratorBase`) while no MPS source registers the
DispatchStub that kernel calls (`REGISTER_DISPATCH(x_stub, ...)` / `REGISTER_MPS_DISPATCH`).

The stub's name is not written in the yaml: the shared `TORCH_IMPL_FUNC(x_out)` in a `.cpp` outside
`mps/` calls `x_stub(device_type(), *this)`, and those files are not linted. mpslint guesses the name
from PyTorch's convention (`x_out` -> `x_stub`; the op family's `x_stub`) and, to tell a missing
registration from a guess that is simply wrong, reports only when:

- the tree holds MPS operation sources that register stubs at all (a tree with only the yaml reports
  nothing), and
- the tree says MPS was meant to serve the op natively: a Metal op registered under the op's name in a
  source whose host side is in the tree too (Metal embedded in a host file, or a `.metal` file whose
  `X_metallib.h` an MPS operations file includes — in a partial tree the registering `.mm` may simply
  be missing), a stub-shaped MPS function `x_mps_kernel(TensorIteratorBase&)` that nothing registers or calls, or a
  `DECLARE_DISPATCH` of the guessed stub, and
- no registered MPS stub function already launches that Metal op (then the stub just has another name).

## Why is this bad?
The build succeeds, and the first call of the op on MPS fails with "DispatchStub: missing kernel for
mps" — the yaml promises MPS a kernel the stub never received.

## Example
```yaml
- func: i0.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  structured_inherits: TensorIteratorBase
  dispatch:
    CPU, CUDA, MPS: i0_out
```
with `REGISTER_UNARY_OP(i0, float, float)` in a `.metal` file and no `REGISTER_DISPATCH(i0_stub, ...)`.

## Use instead
```objc
static void i0_mps_kernel(TensorIteratorBase& iter) {
  lib.exec_unary_kernel(iter, "i0");
}
REGISTER_DISPATCH(i0_stub, &i0_mps_kernel)
```

## How to fix
Register the stub from the MPS operations source that launches the kernel (the message names the stub
mpslint expects; check the shared `TORCH_IMPL_FUNC` for the real one).

Guide: *Step 3 — Stub Registration Pattern (Preferred for Native Metal)*.
"""

from __future__ import annotations

import posixpath

from mpslint.families import declared_stubs, family_routes, metallib_sources, mps_registered_stubs, operation_sources
from mpslint.graph import stub_candidates
from mpslint.model import Severity
from mpslint.rule import Rule


class MissingStubRegistration(Rule):
    code = "DSP305"
    name = "missing-stub-registration"
    severity = Severity.WARNING
    scope = "dispatch"
    summary = "yaml routes MPS through a shared structured stub that no MPS source registers"
    guide = "Step 3: Stub Registration Pattern"
    contexts = ("pytorch",)  # a PyTorch convention (mpslint.context)

    def check(self, ctx):
        project, graph = ctx.project, ctx.graph
        natives = project.natives
        registered = mps_registered_stubs(project)
        if natives is None or not registered:
            return
        declared = declared_stubs(project)
        stub_targets = {reg.function for regs in registered.values() for _p, reg in regs}
        # MPS functions written but never wired: not a stub target, not called from anywhere in the tree
        mps_fns = {
            fn.name
            for p in operation_sources(project)
            for fn in project.hosts[p].functions
            if fn.name.endswith("_mps_kernel")
            and any("TensorIteratorBase" in prm.type for prm in fn.params)
            and fn.name not in stub_targets
            and not graph.into(f"impl:{p}:{fn.name}", "calls")
        }
        # .metal sources whose host side is in the tree (a host file includes their X_metallib.h)
        hosted = {lib for p in operation_sources(project) for lib in metallib_sources(project.hosts[p])}
        # Metal ops that registered stub functions already launch (a stub under another name serves them)
        served: set[str] = set()
        for stub in registered:
            for impl in graph.stub_registrations(stub):
                for mop in graph.metal_ops_of(impl):
                    served.add(graph.attrs(mop)["name"])
        for _family, routes in sorted(family_routes(natives).items()):
            for r in routes:
                ov = r.overload
                g = ov.group_for("MPS")
                if g is None or r.route.kind != "shared" or not ov.structured or ov.structured_inherits != "TensorIteratorBase":
                    continue
                cands = stub_candidates(g.kernel, ov)
                if any(c in registered for c in cands) or graph.out("fn:" + g.kernel, "uses_stub"):
                    continue
                ops = [c[: -len("_stub")] for c in cands]
                if any(o in served for o in ops):
                    continue
                evidence = None
                for o in ops:
                    mop = graph.attrs("mop:" + o)
                    homes = {p for p, _r in mop.get("registrations", []) + mop.get("kernels", [])}
                    # the Metal op is only evidence when the host file that would register its stub is here too
                    homes = [h for h in homes if (h in project.hosts) or posixpath.basename(h) in hosted]
                    if homes:
                        evidence = f"Metal op `{o}` is registered in {homes[0]}, whose host side is in the tree"
                        break
                    if o + "_mps_kernel" in mps_fns:
                        evidence = f"`{o}_mps_kernel(TensorIteratorBase&)` is defined in the MPS sources but registered nowhere"
                        break
                    if o + "_stub" in declared:
                        evidence = f"`{o}_stub` is declared with DECLARE_DISPATCH"
                        break
                if evidence is None:
                    continue
                yield ctx.finding(
                    self,
                    natives.path,
                    g.span,
                    f"`{ov.name}` routes MPS through the shared structured kernel `{g.kernel}`, but no MPS source registers its "
                    f"stub (expected `{cands[0]}`; {evidence}); add `REGISTER_DISPATCH({cands[0]}, &{ops[0]}_mps_kernel)` to the "
                    f"MPS operations source, or the op fails with \"DispatchStub: missing kernel for mps\".",
                    op=ov.family,
                    overload=ov.name,
                )
