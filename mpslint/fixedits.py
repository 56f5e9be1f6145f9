"""Edits that fixes share: adding an ``#include`` a fix's new name needs (see mpslint.names)."""

from __future__ import annotations

import bisect
import re

from .facts.macros import Conditions, strip_comments

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
    clean, conds = _analysed(text)
    top = _file_scope_ends(clean, conds, ends, lo, hi)
    if ends and not top:  # every include is conditional or inside a namespace: before the first of them
        at = _block_start(text, conds, min(ends), lo)
        return ctx.edit(path, at, at, f"#include <{header}>\n")
    ends = top
    if not ends:  # no include yet: after `#pragma once` when there is one
        ends = [m.end() for m in _PRAGMA_ONCE.finditer(text, lo, hi) if not _commented(text, m.start())][:1]
    if ends:
        at = max(ends)
        return ctx.edit(path, at, at, f"\n#include <{header}>")
    return ctx.edit(path, lo, lo, f"#include <{header}>\n")


_LAST: tuple = (None, "", None)  # text, its comment-free copy, its conditions: one file's fixes come together


def _analysed(text: str):
    global _LAST
    last = _LAST  # one read: a tuple replaced whole, never mutated
    if last[0] is not text and last[0] != text:
        clean = strip_comments(text)
        last = _LAST = (text, clean, Conditions(clean))
    return last[1], last[2]


_NAMESPACE = re.compile(r"^[ \t]*(?:inline[ \t]+)?namespace\b", re.M)
_GUARD = re.compile(r"\A\s*#[ \t]*ifndef[ \t]+(\w+)[ \t]*\n[ \t]*#[ \t]*define[ \t]+\1\b")


def _line_start(text: str, at: int, lo: int) -> int:
    return max(lo, text.rfind("\n", 0, at) + 1)


def _file_scope_ends(clean: str, conds: Conditions, ends: list[int], lo: int, hi: int) -> list[int]:
    """The include ends that sit at file scope: under no `#if` (a header's own include guard aside) and before
    the first `namespace`."""
    ns = _NAMESPACE.search(clean, lo, hi)
    limit = ns.start() if ns is not None else hi
    guard = _GUARD.match(clean[lo:hi])
    allowed = {(), (f"!defined({guard.group(1)})",)} if guard else {()}
    return [e for e in ends if e <= limit and conds.at(e) in allowed]


def _block_start(text: str, conds: Conditions, at: int, lo: int) -> int:
    """The start of the line that opens the outermost `#if` block holding offset ``at`` (or of ``at``'s line)."""
    k = bisect.bisect_right(conds.points, at) - 1
    while k > 0 and conds.stacks[k - 1]:
        k -= 1
    return _line_start(text, conds.points[k] - 1 if k > 0 else at, lo)


def _commented(text: str, at: int) -> bool:
    line_start = text.rfind("\n", 0, at) + 1
    return "//" in text[line_start:at] or text.rfind("/*", 0, at) > text.rfind("*/", 0, at)
