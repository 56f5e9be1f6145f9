"""
## What it does
Flags an entry of `common_mps.py`'s "not implemented" lists (`UNIMPLEMENTED_XFAILLIST`,
`MPS_XFAILLIST`, `MPS_SKIPLIST`) for an op whose MPS path in the tree is now native Metal for the
dtypes the entry names: every overload of the op that has an MPS path reaches a Metal kernel (through a
registered stub or an MPS function), none builds an MPSGraph, and the Metal registrations it reaches
cover the listed dtypes (for an entry with no dtype list, float, half and bfloat). A dtype check in the
op's own implementation (`TORCH_CHECK(isFloatingType(...))`) wins over the registrations: ops that share
a launch helper with a uint8 kernel but reject uint8 themselves keep their uint8 entry.

The key must name the op as `native_functions.yaml` does (OpInfo variants such as `nn.functional.x`
are not matched), and the MPS operation sources must be in the tree. Lists kept for other reasons
(gradients, macOS versions, undefined results, precision) are not checked. Information only: the
test run is what proves the entry stale.

## Why is this bad?
An xfail for an op that now works turns into an "unexpected success" failure in `test_mps.py`, and a
skip hides the new kernel from `test_output_match` — regressions in it go unnoticed.

## Example
```python
UNIMPLEMENTED_XFAILLIST = {
    "logaddexp": [torch.float16, torch.bfloat16],   # native Metal since the migration
}
```

## Use instead
Remove the entry, then run `python test/test_mps.py -k test_output_match_logaddexp`.

## How to fix
Delete the line (the unsafe fix does) and run the op's tests; also remove MPS skip/xfail decorators
from its OpInfo.

Guide: *Testing — Remove from common_mps.py*.
"""

from __future__ import annotations

import re

from mpslint.facts.metal import FLOAT_TYPES
from mpslint.families import family_routes, line_range, operation_sources
from mpslint.model import Fix, Severity
from mpslint.rule import Rule

LISTS = re.compile(r"(UNIMPLEMENTED_XFAILLIST|MPS_XFAILLIST|MPS_SKIPLIST)")
TORCH_TO_METAL = {
    "float32": "float", "float": "float", "float16": "half", "half": "half", "bfloat16": "bfloat",
    "int64": "long", "long": "long", "int32": "int", "int": "int", "int16": "short", "short": "short",
    "int8": "char", "uint8": "uchar", "bool": "bool", "complex64": "float2", "cfloat": "float2",
    "complex32": "half2", "chalf": "half2",
}


def native_metal_dtypes(graph, routes) -> set[str] | None:
    """Input dtypes of the Metal ops every MPS path of the family reaches; None unless all of them are native Metal."""
    dtypes: set[str] = set()
    seen_mps = False
    for r in routes:
        kind = r.route.kind
        if kind == "composite":
            continue
        if kind == "none":
            return None
        seen_mps = True
        fid = "fn:" + r.route.kernel
        if kind == "shared":
            impls = [i for s in graph.out(fid, "uses_stub") for i in graph.out(s, "registered_by")]
        else:
            impls = graph.out(fid, "implemented_by")
        if not impls:
            return None
        for impl in impls:
            if graph.uses_mpsgraph(impl):
                return None
            mops = graph.metal_ops_of(impl)
            if not mops:
                return None
            reached: set[str] = set()
            for mop in mops:
                reached |= {reg.dtype for _p, reg in graph.attrs(mop).get("registrations", [])}
            # the implementation's own dtype check wins over what its kernels are registered for:
            # `TORCH_CHECK(isFloatingType(...))` before a launch shared with a uint8 op keeps uint8 unimplemented
            own = graph.attrs(impl).get("dtype_filters") or []
            if own:
                reached &= {t for f in own for t in f.dtypes}
            dtypes |= reached
    return dtypes if seen_mps else None


class StaleXfail(Rule):
    code = "DSP306"
    name = "stale-xfail"
    severity = Severity.INFO
    scope = "dispatch"
    summary = "common_mps.py lists an op as unimplemented although its MPS path is native Metal for the listed dtypes"
    fixable = "unsafe"
    guide = "Testing: Remove from common_mps.py"
    contexts = ("pytorch",)  # a PyTorch convention (mpslint.context)

    def check(self, ctx):
        project, graph = ctx.project, ctx.graph
        if project.natives is None or not operation_sources(project):
            return
        routes = family_routes(project.natives)
        for path, pf in sorted(project.pythons.items()):
            for e in pf.xfails:
                if not LISTS.fullmatch(e.list_name) or e.op not in routes:
                    continue
                have = native_metal_dtypes(graph, routes[e.op])
                if not have:
                    continue
                if e.dtypes is None:
                    wanted = list(FLOAT_TYPES)
                else:
                    wanted = [TORCH_TO_METAL.get(d) for d in e.dtypes]
                    if any(w is None for w in wanted):
                        continue
                if not all(w in have for w in wanted):
                    continue
                text = ctx.text(path)
                a, b = _entry_range(text, e.span.start, e.span.end)
                listed = "every dtype" if e.dtypes is None else ", ".join(e.dtypes)
                yield ctx.finding(
                    self,
                    path,
                    e.span,
                    f"`{e.op}` is in `{e.list_name}` ({listed}) but its MPS path is now native Metal registered for "
                    f"{', '.join(sorted(set(wanted)))}; remove the entry and run `test_output_match_{e.op}`.",
                    fix=Fix(f"Remove `{e.op}` from `{e.list_name}`", (ctx.edit(path, a, b, ""),), "unsafe"),
                    op=e.op,
                )


def _entry_range(text: str, start: int, end: int) -> tuple[int, int]:
    """The entry with its trailing comma; whole lines when it is alone on them."""
    m = re.match(r"\s*,?", text[end:])
    stop = end + (m.end() if m else 0)
    a, b = line_range(text, start, end)
    before = text[a:start]
    rest = text[stop : b].strip()
    if before.strip() == "" and (rest == "" or rest.startswith("#")):
        return a, b
    m2 = re.match(r"[ \t]*", text[stop:])
    return start, stop + (m2.end() if m2 else 0)
