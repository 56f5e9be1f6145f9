"""
## What it does
Flags a Metal kernel that is handed its element count but never reads it, while it writes a device buffer at
an index taken from its grid position (`out[tid] = ...` with `uint tid [[thread_position_in_grid]]`). The count
is a scalar parameter that a launching host binds an element count to (`out.numel()`, a byte count, also
through `c10::checked_convert` or a cast: the semantic model's linear extents), or, for a kernel no visible
launch binds, one named as counts are (`numel`, `n`, `N`, `size`, `length`, `count`, `num_elements`, ...).

## Why is this bad?
The host passes the count because the launch can cover more threads than there are elements: a grid
rounded up to whole threadgroups (`dispatchThreadgroups`, a fixed `group_size` in `compile_shader`
launches, a vectorized kernel handling several elements per thread). Without the `tid < numel`
check the extra threads write past the end of the output: corrupted neighbouring tensors, or a GPU
fault, only for sizes that are not a multiple of the threadgroup.

## Example
```metal
kernel void relu_inplace(device float* data [[buffer(0)]],
                         constant uint& numel [[buffer(1)]],
                         uint tid [[thread_position_in_grid]]) {
  data[tid] = max(data[tid], 0.0f);
}
```

## Use instead
```metal
kernel void relu_inplace(device float* data [[buffer(0)]],
                         constant uint& numel [[buffer(1)]],
                         uint tid [[thread_position_in_grid]]) {
  if (tid >= numel) {
    return;
  }
  data[tid] = max(data[tid], 0.0f);
}
```

## How to fix
Return early when the grid position is past the count (`if (tid >= numel) return;`). If the host
really dispatches exactly `numel` threads (`mtl_dispatch1DJob` does), drop the unused parameter and
its binding instead, so the next reader does not assume a check exists.

Guide: *Debugging Metal Kernels with `torch.mps.compile_shader`* — "Dispatch Semantics" (threads vs
threadgroups), and the checklist item "Handles empty tensors".
"""

from __future__ import annotations

import re

from mpslint.model import Severity
from mpslint.rule import Rule
from mpslint.semantic.expressions import identifiers, strip_parens
from mpslint.semantic.launch_bindings import launch_count_params
from mpslint.semantic.model import semantic_model
from mpslint.semantic.metalflow import is_kernel_function, metal_sources

_COUNT_NAME = re.compile(r"(?i)^(?:n|numel|num_?el(?:em(?:ent)?)?s?|n_?el(?:em(?:ent)?)?s?|size|total(?:_size)?|len|length|count|n_?elements|num_?threads)$")


def _scalar_int(fm, p) -> bool:
    """An integer scalar parameter (by value or `constant uint&`), by the model's type."""
    if "*" in p.type or "[" in p.type:
        return False
    sym = fm.scope.lookup(p.name, -1)
    return sym is not None and sym.type.kind == "int"
_GRID = {"thread_position_in_grid", "thread_index_in_grid"}


class UncheckedGridBound(Rule):
    code = "MTL208"
    name = "unchecked-grid-bound"
    severity = Severity.WARNING
    scope = "metal"
    summary = "kernel is given its element count but never compares the grid position with it before writing"
    guide = "Debugging Metal Kernels with torch.mps.compile_shader: Dispatch Semantics"

    def check(self, ctx):
        model = semantic_model(ctx.project)
        counts = launch_count_params(ctx.graph, model, ctx.project.hosts)
        for src in metal_sources(ctx):
            text = ctx.text(src.path)
            for fn in src.facts.functions:
                if not is_kernel_function(fn) or fn.body_span is None:
                    continue
                kernel = next((k for k in src.facts.kernels if k.function is fn), None)
                grid = [name for name, attr in (kernel.attributes if kernel is not None else {}).items() if attr in _GRID]
                if not grid:
                    continue
                read = _names_read(fn)
                for p in fn.params:
                    named = bool(p.name) and _COUNT_NAME.match(p.name) is not None
                    if not p.name or not (named or p.name in counts.get(id(fn), ())) or not _scalar_int(model.function(fn, src.facts), p):
                        continue
                    if p.name in read:
                        continue
                    write = _grid_write(fn, set(grid), text)
                    if write is None:
                        continue
                    yield ctx.finding(
                        self,
                        src.path,
                        p.span,
                        f"kernel `{fn.name}` is given `{p.name}` but never reads it, and writes `{write}` at its grid "
                        f"position; threads past the end of a rounded-up grid write out of bounds. Return early with "
                        f"`if ({grid[0]} >= {p.name}) return;` (or drop the parameter if the launch is exact).",
                    )


def _names_read(fn) -> set[str]:
    """Every identifier the function's statements, declarations and calls read (from the expression trees)."""
    out: set[str] = set()
    for s in fn.stmts:
        if s.tree is not None:
            out |= identifiers(s.tree)
    for d in fn.decls:
        if d.init is not None and d.init.tree is not None:
            out |= identifiers(d.init.tree)
    for c in fn.calls:
        if c.tree is not None:
            out |= identifiers(c.tree)
    for a in fn.assigns:
        if a.rhs.tree is not None:
            out |= identifiers(a.rhs.tree)
    for sub in fn.subscripts:
        if sub.tree is not None:
            out |= identifiers(sub.tree)
    return out


def _grid_write(fn, grid: set[str], text):
    """The first ``buffer[... tid ...] = ...`` of a device buffer indexed by the grid position, or None."""
    buffers = set()
    for p in fn.params:
        if "*" in p.type and p.space == "device":
            buffers.add(p.name)
    by_start = {sub.span.start: sub for sub in fn.subscripts if sub.tree is not None}
    for a in fn.assigns:
        sub = by_start.get(a.span.start)
        if sub is None:
            continue
        base = strip_parens(sub.tree.kids[0])
        if base.kind == "id" and base.op in buffers and grid & identifiers(sub.tree.kids[1]):
            return a.lhs
    return None
