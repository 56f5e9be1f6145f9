"""
## What it does
Flags a launch whose grid has a dimension of literally 1 (`dispatchThreads:MTLSizeMake(n, 1, 1)`,
also through a local `MTLSize grid = ...`) while the launched kernel computes indices from that
dimension of its position (`tid.y`, `tid.z` of `[[thread_position_in_grid]]` for `dispatchThreads:`,
of `[[threadgroup_position_in_grid]]` for `dispatchThreadgroups:`), in a local's initialiser or a
buffer subscript. The kernel is the one the function's `newFunctionWithName:` / pipeline-state name
resolves to; every kernel the name selects must use the dimension. A launch inside a loop (one launch
per row) and a grid of constants only (`MTLSizeMake(1, 1, 1)`) are not flagged.

## Why is this bad?
With a grid dimension of 1 that coordinate is always 0: the kernel was written to spread rows (or
batches) over it, and every row but the first is never computed — the output keeps whatever the
allocation held (zeros from `torch::zeros`, garbage from `torch::empty`). Tests with one row, or a batch
of one, pass.

## Example
```objc
// kernel void rownorm(..., uint2 tid [[thread_position_in_grid]]) { out[tid.y * cols + tid.x] = ...; }
[enc dispatchThreads:MTLSizeMake(cols, 1, 1) threadsPerThreadgroup:MTLSizeMake(tg, 1, 1)];
```

## Use instead
```objc
[enc dispatchThreads:MTLSizeMake(cols, rows, 1) threadsPerThreadgroup:MTLSizeMake(tg, 1, 1)];
```

## How to fix
Dispatch the dimension with the number of rows (batches) the kernel indexes, or drop it from the kernel.

Guide: *Writing a Metal kernel* (grids and thread positions).
"""

from __future__ import annotations

import re

from mpslint.semantic import extflow
from mpslint.model import Severity
from mpslint.rule import Rule

_AXES = {1: "y", 2: "z"}
_LOOPS = {"for_statement", "for_range_loop", "while_statement", "do_statement"}


def _grid(fn, text: str, at: int) -> list[str] | None:
    t = text.strip()
    for _ in range(3):
        m = re.fullmatch(r"MTLSizeMake\s*\((.*)\)", t, re.S)
        if m:
            parts = [p.strip() for p in m.group(1).split(",")]
            return parts if len(parts) == 3 else None
        if not re.fullmatch(r"[A-Za-z_]\w*", t):
            return None
        init = extflow.local_init(fn, t, at)
        if init is None:
            return None
        t = init.strip()
    return None


def _uses_axis(kernel, attribute: str, axis: str) -> str | None:
    """The expression of ``kernel`` that computes with ``pos.axis`` (``pos`` the parameter with ``attribute``)."""
    pos = [p for p, a in kernel.attributes.items() if a == attribute]
    if not pos:
        return None
    rx = re.compile(r"(?<![\w.])(" + "|".join(re.escape(p) for p in pos) + r")\s*\.\s*" + axis + r"\b|(?<![\w.])(" + "|".join(re.escape(p) for p in pos) + r")\s*\[\s*" + str("xyz".index(axis)) + r"\s*\]")
    fn = kernel.function
    for s in fn.subscripts:
        if rx.search(s.index.text):
            return s.index.text
    for d in fn.decls:
        if d.init is not None and rx.search(d.init.text):
            return d.init.text
    return None


class CollapsedGridDimension(Rule):
    code = "DSP311"
    name = "collapsed-grid-dimension"
    severity = Severity.ERROR
    scope = "dispatch"
    contexts = ("pytorch", "extension")
    summary = "Grid dimension dispatched as 1 although the launched kernel indexes data with it"
    guide = "Writing a Metal kernel"

    def check(self, ctx):
        graph = ctx.graph
        for impl, a, fn, kernels in extflow.host_launches(graph):
            for call in fn.calls:
                if not call.message_send or call.name not in ("dispatchThreads", "dispatchThreadgroups") or not call.args:
                    continue
                if call.stmt >= 0 and any(fn.stmts[p].kind in _LOOPS for p in fn.stmts[call.stmt].parents):
                    continue
                grid = _grid(fn, call.args[0].text, call.span.start)
                if grid is None or all(re.fullmatch(r"\d+[uUlL]*", g) for g in grid):
                    continue  # a constant grid (one threadgroup): its shape is deliberate
                attribute = "thread_position_in_grid" if call.name == "dispatchThreads" else "threadgroup_position_in_grid"
                for d, axis in _AXES.items():
                    if not re.fullmatch(r"1[uUlL]*", grid[d]):
                        continue
                    uses = [_uses_axis(k, attribute, axis) for k in kernels]
                    if not all(uses):
                        continue
                    yield ctx.finding(
                        self,
                        a["path"],
                        call.args[0].span,
                        f"the grid's {axis} dimension is 1, but kernel `{kernels[0].name}` indexes with its {axis} position "
                        f"(`{uses[0]}`): every {axis} but 0 is never computed; dispatch the number of rows the kernel "
                        f"spreads over {axis}.",
                        kernel=kernels[0].name,
                    )
                    break
