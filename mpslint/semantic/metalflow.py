"""Shared helpers of the MTL2xx (Metal code) rules: where Metal source is, and what its #if guards say.

Rules import it; it decides nothing itself (like ``hostflow`` for host code).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mpslint.facts.macros import Conditions, strip_comments
from mpslint.masking import _Skipper


@dataclass
class MetalSource:
    """One piece of Metal code: a .metal file or header, a raw string in a .mm file, a compile_shader string."""

    facts: object  # MetalFacts
    path: str
    base: int  # offset of ``text`` in the reported file
    text: str  # the Metal source itself
    kind: str  # "file" | "mm" | "python"

    _skip: _Skipper | None = None
    _conds: Conditions | None = None

    def in_comment_or_string(self, offset: int) -> bool:
        """``offset`` is relative to ``text``."""
        if self._skip is None:
            self._skip = _Skipper(self.text)
        return self._skip(offset)

    def conditions(self, offset: int) -> tuple[str, ...]:
        if self._conds is None:
            self._conds = Conditions(strip_comments(self.text))
        return self._conds.at(offset)


def metal_sources(ctx):
    """Every piece of Metal code in the project, in path order."""
    for path in sorted(ctx.project.metals):
        text = ctx.text(path)
        kind = "python" if path in ctx.project.pythons else ("mm" if path in ctx.project.hosts else "file")
        for mf in ctx.project.metals[path]:
            yield MetalSource(mf, path, mf.base, text[mf.base : mf.end], kind)


_VERSION_TEST = re.compile(r"__METAL_VERSION__\s*(>=|>|==)\s*(\d+)")


def _negated_ranges(cond: str) -> list[tuple[int, int]]:
    """Ranges of ``cond`` inside a ``!( ... )`` group (what Conditions writes for #else / #elif)."""
    out = []
    i = 0
    while True:
        j = cond.find("!(", i)
        if j < 0:
            return out
        depth = 0
        for k in range(j + 1, len(cond)):
            if cond[k] == "(":
                depth += 1
            elif cond[k] == ")":
                depth -= 1
                if depth == 0:
                    out.append((j, k + 1))
                    break
        i = j + 2


def metal4_only(conditions: tuple[str, ...]) -> bool:
    """True when one of the ``#if`` conditions in force requires Metal 4 (``__METAL_VERSION__ >= 400``)."""
    for cond in conditions:
        neg = _negated_ranges(cond)
        for m in _VERSION_TEST.finditer(cond):
            if any(a <= m.start() < b for a, b in neg):
                continue
            op, num = m.group(1), int(m.group(2))
            if (op == ">=" and num >= 400) or (op == ">" and num >= 399) or (op == "==" and num >= 400):
                return True
    return False


_METAL_DEFINED = re.compile(r"(!\s*)?defined\s*\(?\s*__METAL(?:_VERSION)?__")


def host_only(conditions: tuple[str, ...]) -> bool:
    """True inside ``#ifndef __METAL__`` (or the ``#else`` of ``#ifdef __METAL__``): C++ for the host, not Metal."""
    for cond in conditions:
        neg = _negated_ranges(cond)
        for m in _METAL_DEFINED.finditer(cond):
            negations = (1 if m.group(1) else 0) + sum(1 for a, b in neg if a <= m.start() < b)
            if negations % 2 == 1:
                return True
    return False


def is_kernel_function(fn) -> bool:
    return bool(re.search(r"\bkernel\b|\[\[\s*kernel\s*\]\]", fn.qualifiers)) and fn.kind != "method"
