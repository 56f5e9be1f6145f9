"""Shared check for the SMK4xx rules: turn smoke-run outcomes (``ctx.smoke_outcomes``) into findings."""

from __future__ import annotations

from ..model import Span


def smoke_findings(rule, ctx):
    for o in ctx.smoke_outcomes:
        if o.code != rule.code:
            continue
        src = ctx.project.sources.get(o.path)
        if src is not None:
            start = src.index.offset(o.line, o.column)
            end = src.index.offset(o.end_line, o.end_column)
            span = src.index.span(start, max(start, end))
        else:
            span = Span(0, 0, o.line, o.column, o.end_line, o.end_column)
        label = f"[{o.backend_label}] " if o.backend_label and o.backend_label not in o.message else ""
        where = f"`{o.kernel}`" + (f" ({o.variant}, {o.dtype})" if o.variant and o.dtype else "") + ": " if o.kernel else ""
        yield ctx.finding(rule, o.path, span, label + where + o.message, kernel=o.kernel, dtype=o.dtype, variant=o.variant, backend=o.backend_label)
