"""Preprocessor-level facts: macro invocations, ``#define``s and their expansion, ``#if`` conditions.

tree-sitter does not expand macros, and PyTorch registers its kernels through them, so these
helpers work on the comment-free text directly, with offsets into the original file.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from ..masking import _skip_regions


def strip_comments(text: str) -> str:
    """Replace comments by spaces (line breaks kept); strings stay."""
    out = list(text)
    for a, b in _skip_regions(text):
        if text.startswith("//", a) or text.startswith("/*", a):
            for k in range(a, b):
                if out[k] != "\n":
                    out[k] = " "
    return "".join(out)


def _string_starts(text: str) -> tuple[list[tuple[int, int]], list[int]]:
    regs = [(a, b) for a, b in _skip_regions(text)]
    return regs, [a for a, _ in regs]


@dataclass(frozen=True)
class Invocation:
    name: str
    args: tuple[str, ...]  # compact argument texts
    arg_spans: tuple[tuple[int, int], ...]
    start: int
    end: int  # after the closing parenthesis


def split_args(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Depth-0 comma-separated pieces of ``text[start:end]`` (inside parentheses), skipping strings."""
    pieces = []
    depth = 0
    i = start
    piece_start = start
    in_str = None
    while i < end:
        ch = text[i]
        if in_str:
            if ch == "\\":
                i += 2
                continue
            if ch == in_str:
                in_str = None
        elif ch in "\"'":
            in_str = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "<" and depth >= 0:
            pass
        elif ch == "," and depth == 0:
            pieces.append((piece_start, i))
            piece_start = i + 1
        i += 1
    if text[piece_start:end].strip() or pieces:
        pieces.append((piece_start, end))
    return pieces


def match_paren(text: str, i: int) -> int:
    """Index of the ``)`` matching the ``(`` at ``i``, skipping strings; -1 if unbalanced."""
    depth = 0
    n = len(text)
    in_str = None
    while i < n:
        ch = text[i]
        if in_str:
            if ch == "\\":
                i += 2
                continue
            if ch == in_str:
                in_str = None
        elif ch == '"':
            in_str = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_DIRECTIVE_BEFORE = re.compile(r"\s*#\s*(define|undef|ifdef|ifndef)\b")
_NAMED_CALL: dict[re.Pattern, re.Pattern | None] = {}


def _named_call(name_rx: re.Pattern) -> re.Pattern | None:
    """``_CALL`` restricted to names that fullmatch ``name_rx``, as one regex (None if it cannot be built).

    ``\\b(?=[A-Za-z_])(NAME)(?!\\w)\\s*\\(`` finds exactly the ``_CALL`` matches whose whole identifier
    matches NAME: it starts where an identifier starts and must end where it ends.
    """
    if name_rx not in _NAMED_CALL:
        if len(_NAMED_CALL) > 512:  # patterns built per file (macro names): keep the memo bounded
            _NAMED_CALL.clear()
        try:
            _NAMED_CALL[name_rx] = re.compile(r"\b(?=[A-Za-z_])(" + name_rx.pattern + r")(?!\w)\s*\(", name_rx.flags)
        except (re.error, TypeError):
            _NAMED_CALL[name_rx] = None
    return _NAMED_CALL[name_rx]


def invocations(clean: str, name_rx: re.Pattern, start: int = 0, end: int | None = None) -> list[Invocation]:
    """Every ``NAME(args)`` with NAME matching ``name_rx`` in comment-free text (not inside strings)."""
    end = len(clean) if end is None else end
    regs, starts = _string_starts(clean)
    out = []
    named = _named_call(name_rx)
    for m in (named or _CALL).finditer(clean, start, end):
        if named is None and not name_rx.fullmatch(m.group(1)):
            continue
        k = bisect.bisect_right(starts, m.start()) - 1
        if k >= 0 and regs[k][0] <= m.start() < regs[k][1]:
            continue
        # not a #define of that name
        line_start = clean.rfind("\n", 0, m.start()) + 1
        if _DIRECTIVE_BEFORE.match(clean[line_start : m.start()]):
            continue
        open_ = m.end() - 1
        close = match_paren(clean, open_)
        if close < 0:
            continue
        pieces = split_args(clean, open_ + 1, close)
        out.append(
            Invocation(
                name=m.group(1),
                args=tuple(_WS.sub(" ", clean[a:b]).strip() for a, b in pieces),
                arg_spans=tuple(pieces),
                start=m.start(),
                end=close + 1,
            )
        )
    return out


@dataclass(frozen=True)
class Define:
    name: str
    params: tuple[str, ...] | None  # None for object-like macros
    body: str
    start: int
    end: int


_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)(\(([^)]*)\))?", re.M)


def defines(clean: str) -> dict[str, Define]:
    out: dict[str, Define] = {}
    for m in _DEFINE.finditer(clean):
        i = m.end()
        n = len(clean)
        j = i
        while j < n:
            nl = clean.find("\n", j)
            if nl < 0:
                j = n
                break
            if clean[nl - 1] == "\\" or clean[nl - 2 : nl] == "\\\r":
                j = nl + 1
                continue
            j = nl
            break
        body = clean[i:j].replace("\\\n", " ")
        params = None
        if m.group(2) is not None:
            params = tuple(p.strip() for p in m.group(3).split(",") if p.strip())
        out[m.group(1)] = Define(m.group(1), params, body, m.start(), j)
    return out


_WS = re.compile(r"\s+")
_STRINGIFY = re.compile(r"(?<!#)#\s*([A-Za-z_]\w*)")
_IDENT = re.compile(r"[A-Za-z_]\w*")
_PASTE = re.compile(r"\s*##\s*")


def expand(define: Define, args: tuple[str, ...]) -> str:
    """One level of function-like macro expansion with ``#`` and ``##``."""
    body = define.body
    params = define.params or ()
    values = dict(zip(params, args))
    if "__VA_ARGS__" in body and len(args) > len(params):
        values["__VA_ARGS__"] = ", ".join(args[len(params) - (1 if "..." in params else 0):])

    def stringify(m):
        return '"' + values.get(m.group(1), m.group(1)).replace('"', '\\"') + '"'

    if "#" in body:
        body = _STRINGIFY.sub(lambda m: stringify(m) if m.group(1) in values else m.group(0), body)

    def subst(m):
        return values.get(m.group(0), m.group(0))

    if values:
        body = _IDENT.sub(subst, body)
    if "##" in body:
        body = _PASTE.sub("", body)
    return body


def concat_strings(expr: str) -> str | None:
    """``"a" "b_" "c"`` -> ``a_bc``; None when anything but string literals is present."""
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', expr)
    rest = re.sub(r'"((?:[^"\\]|\\.)*)"', "", expr).strip()
    if rest or not parts:
        return None
    return "".join(parts)


class Conditions:
    """The ``#if``/``#ifdef`` conditions in force at each offset."""

    _DIRECTIVE = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b(.*)$", re.M)

    def __init__(self, clean: str):
        self.points: list[int] = [0]
        self.stacks: list[tuple[str, ...]] = [()]
        stack: list[str] = []
        for m in self._DIRECTIVE.finditer(clean):
            kind, cond = m.group(1), re.sub(r"\s+", " ", m.group(2)).strip()
            if kind == "if":
                stack.append(cond)
            elif kind == "ifdef":
                stack.append(f"defined({cond})")
            elif kind == "ifndef":
                stack.append(f"!defined({cond})")
            elif kind == "elif" and stack:
                stack[-1] = f"!({stack[-1]}) && ({cond})"
            elif kind == "else" and stack:
                stack[-1] = f"!({stack[-1]})"
            elif kind == "endif" and stack:
                stack.pop()
            self.points.append(m.end())
            self.stacks.append(tuple(stack))

    def at(self, offset: int) -> tuple[str, ...]:
        k = bisect.bisect_right(self.points, offset) - 1
        return self.stacks[max(k, 0)]
