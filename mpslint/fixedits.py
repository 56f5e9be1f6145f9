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
    # only includes at file scope: not inside `#if ... #endif` (an include under `#ifndef PYTORCH_JIT_COMPILE_SHADERS`
    # may be compiled out) and not after the first `namespace` (a header included there opens a nested `at`)
    top = _file_scope_ends(text, ends, lo, hi)
    if ends and not top:  # every include is conditional or inside a namespace: before the first of them
        at = _line_start(text, min(ends), lo)
        guard = _guard_start(text, lo, hi)
        at = min(at, guard) if guard is not None else at
        return ctx.edit(path, at, at, f"#include <{header}>\n")
    ends = top
    if not ends:  # no include yet: after `#pragma once` when there is one
        ends = [m.end() for m in _PRAGMA_ONCE.finditer(text, lo, hi) if not _commented(text, m.start())][:1]
    if ends:
        at = max(ends)
        return ctx.edit(path, at, at, f"\n#include <{header}>")
    return ctx.edit(path, lo, lo, f"#include <{header}>\n")


_CONDITIONAL = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|endif)\b", re.M)
_NAMESPACE = re.compile(r"^[ \t]*(?:inline[ \t]+)?namespace\b", re.M)


def _line_start(text: str, at: int, lo: int) -> int:
    return max(lo, text.rfind("\n", 0, at) + 1)


def _guard_start(text: str, lo: int, hi: int) -> int | None:
    """Where the first conditional block that holds an include starts (to insert before it), or None."""
    m = _CONDITIONAL.search(text, lo, hi)
    return m.start() if m is not None and m.group(1) != "endif" else None


def _file_scope_ends(text: str, ends: list[int], lo: int, hi: int) -> list[int]:
    """The include ends that sit at file scope: outside every `#if` block (a header's own include guard aside)
    and before the first `namespace`."""
    ns = _NAMESPACE.search(text, lo, hi)
    limit = ns.start() if ns is not None else hi
    directives = [(m.start(), m.group(1)) for m in _CONDITIONAL.finditer(text, lo, hi) if not _commented(text, m.start())]
    # an include guard: the first directive is `#ifndef X` followed by `#define X`, closed by the last `#endif`
    skip_first = False
    if directives and directives[0][1] == "ifndef":
        line = text[directives[0][0] : text.find("\n", directives[0][0])].split()
        name = line[-1] if len(line) >= 2 else ""
        rest = text[directives[0][0] : directives[0][0] + 400]
        skip_first = bool(name) and f"#define {name}" in rest
    out = []
    for e in ends:
        if e > limit:
            continue
        depth = 0
        for k, (pos, kind) in enumerate(directives):
            if pos >= e:
                break
            if k == 0 and skip_first:
                continue
            depth += -1 if kind == "endif" else 1
        if depth <= 0:
            out.append(e)
    return out


def _commented(text: str, at: int) -> bool:
    line_start = text.rfind("\n", 0, at) + 1
    return "//" in text[line_start:at] or text.rfind("/*", 0, at) > text.rfind("*/", 0, at)
