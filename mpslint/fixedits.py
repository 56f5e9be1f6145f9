"""Edits that fixes share: adding an ``#include`` a fix's new name needs (see mpslint.names)."""

from __future__ import annotations

import re

_PRAGMA_ONCE = re.compile(r"^[ \t]*#[ \t]*pragma[ \t]+once\b[^\n]*", re.M)
_INCLUDE_LINE = re.compile(r'^[ \t]*#[ \t]*(?:include|import)[ \t]*[<"][^>"\n]+[>"][^\n]*', re.M)


def include_edit(ctx, path: str, includes, header: str, lo: int = 0, hi: int | None = None):
    """An edit adding ``#include <header>`` after the last include line of ``path`` (within ``[lo, hi)``,
    for Metal embedded in a host file), or at ``lo`` when there is none. ``includes``: the file's
    ``Include`` facts (their spans place the edit); without them the include lines are found in the text."""
    text = ctx.text(path)
    hi = len(text) if hi is None else hi
    ends = [inc.span.end for inc in includes or () if hasattr(inc, "span") and lo <= inc.span.start < hi]
    if not ends:
        ends = [m.end() for m in _INCLUDE_LINE.finditer(text, lo, hi) if not _commented(text, m.start())]
    if not ends:  # no include yet: after `#pragma once` when there is one
        ends = [m.end() for m in _PRAGMA_ONCE.finditer(text, lo, hi) if not _commented(text, m.start())][:1]
    if ends:
        at = max(ends)
        return ctx.edit(path, at, at, f"\n#include <{header}>")
    return ctx.edit(path, lo, lo, f"#include <{header}>\n")


def _commented(text: str, at: int) -> bool:
    line_start = text.rfind("\n", 0, at) + 1
    return "//" in text[line_start:at] or text.rfind("/*", 0, at) > text.rfind("*/", 0, at)
