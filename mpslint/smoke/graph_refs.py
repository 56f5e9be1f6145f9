"""References for smoke runs, found through the dispatch graph.

A Metal op (``atan2``) is launched by host code (``exec_binary_kernel(iter, "atan2")`` in
``atan2_mps_kernel``), which is registered on a DispatchStub (``REGISTER_DISPATCH(atan2_stub, ...)``),
which a shared structured kernel (``CPU, CUDA, MPS: atan2_out``) reaches, which dispatches an overload of
the yaml (``atan2.out``): its family names the torch function to compare with (``torch.atan2``).
"""

from __future__ import annotations

import re

from ..graph import DispatchGraph


def torch_ops_for(graph: DispatchGraph, metal_op: str, depth: int = 3) -> set[str]:
    """Families of the yaml whose MPS path launches ``metal_op``."""
    impls: list[str] = []
    for kref in graph.into("mop:" + metal_op, "resolves"):
        impls.extend(graph.into(kref, "launches"))
    seen = list(dict.fromkeys(impls))
    k = 0
    while k < len(seen) and k < 200:  # callers, a few levels up
        if seen.index(seen[k]) < 50 and depth > 0:
            for caller in graph.into(seen[k], "calls"):
                if caller not in seen:
                    seen.append(caller)
        k += 1
    families: set[str] = set()
    for impl in seen:
        fns = list(graph.into(impl, "implemented_by"))
        for stub in graph.into(impl, "registered_by"):
            fns.extend(graph.into(stub, "uses_stub"))
        for fn in fns:
            for op in graph.into(fn, "dispatches"):
                ov = graph.attrs(op).get("overload")
                if ov is not None:
                    families.add(ov.family)
    return families


def _arity(graph: DispatchGraph, family: str) -> int:
    fams = graph.families().get(family, [])
    for ov in fams:
        if not ov.overload_name or ov.overload_name in ("Tensor", "out"):
            args = ov.func.split("(", 1)[1].split(")", 1)[0].split("*")[0]
            return len(re.findall(r"\bTensor\b(?!\()", args))
    return 0


def graph_reference_for(graph: DispatchGraph):
    """A ``reference_for(metal_op)`` hook for the smoke runner."""
    from .reference import Reference, builtin_reference

    def hook(metal_op: str):
        families = torch_ops_for(graph, metal_op)
        if len(families) != 1:
            return None  # unknown or ambiguous: the built-in table decides
        family = next(iter(families))
        known = builtin_reference(family)
        if known is not None:
            return known  # the table knows input domains and tolerances
        import torch

        fn = getattr(torch, family, None) or getattr(torch.special, family.removeprefix("special_"), None)
        if fn is None or not callable(fn):
            return None
        n = _arity(graph, family)
        if n not in (1, 2, 3):
            return None
        return Reference(lambda *a, **_: fn(*a[:n]), name=f"torch.{family}", note="found through the dispatch graph")

    return hook
