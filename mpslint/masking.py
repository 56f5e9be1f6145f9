"""Offset-preserving pre-pass that makes Metal and Objective-C++ palatable to tree-sitter-cpp.

Every rewrite keeps the text's length and its line breaks, so a byte offset, line or column
in the masked text is the same place in the original file.  The masks are:

Metal
  ``[[buffer(0)]]`` and other ``[[...]]`` attributes  -> spaces (recorded first, see ``metal_attributes``)
  ``kernel`` / ``vertex`` / ``fragment`` function qualifiers -> spaces
  address spaces ``device`` ``constant`` ``threadgroup`` ``thread`` before a type -> spaces
  the same after a member function's parameter list (``T get() const thread {``) -> spaces
  ``if IF_CONSTEXPR (`` (c10/metal's Metal 3/4 portability macro) -> ``if constexpr    (``
  file-scope macro invocations ``REGISTER_UNARY_OP(erfinv, float, float);`` (outside function, struct
  and class bodies; namespaces count as file scope) -> spaces; registrations are read from the
  original text (facts/metal.py), and C++ has no statement at file scope, so tree-sitter would
  otherwise turn them (and often what follows) into ERROR nodes
  (also file-scope invocations of lower-case function-like macros the file defines itself, several
  on one line: ``instantiate_layer_norm(float) instantiate_layer_norm(half)``, and statement-position
  invocations of the file's own macros written without a ``;``, such as ``IMPL_CASE(0, a, b)`` lines
  in a switch)
  uses of object-like macros defined as ``_Pragma(...)`` (``#define UNROLL _Pragma("unroll")``) and
  ``_Pragma("...")`` itself -> spaces
  uses of object-like macros defined as qualifiers only (``#define PREFILL_CONST static constant
  constexpr const``; ``C10_METAL_CONSTEXPR`` from c10/metal/common.h) -> spaces
  ``__has_include(<header>)`` in ``#if`` lines -> ``__has_include(1       )`` (tree-sitter's
  preprocessor expressions take neither ``<header>`` nor string literals)

Objective-C++
  ``@autoreleasepool``  -> spaces (its ``{...}`` stays a compound statement)
  ``^() {`` / ``^{`` blocks -> C++ lambdas ``[=] {`` / ``[]{``
  ``[recv sel:a k:b]`` message sends -> `` recv.sel(a, b)``-shaped calls
  ``@"str"`` -> `` "str"``; ``@available(...)`` -> ``1`` padded; ``__block`` -> spaces

Comments and string literals are never rewritten.
"""

from __future__ import annotations

import bisect
import re
from bisect import bisect_right as _bisect_right
from dataclasses import dataclass
from functools import lru_cache

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WS = " \t"


_NL_OR_BRACE = re.compile(r"[\n{}]")
_PARENS = re.compile(r"[()]")
_BRACKETS = re.compile(r"[()\[\]{}]")
_SKIP_START = re.compile(r"""//|/\*|R"|["']""")
_RAW_OPEN = re.compile(r'R"([^()\\ \t\n]{0,16})\(')
_STRING_BODY = {
    '"': re.compile(r'[^"\\\n]*(?:\\[\s\S][^"\\\n]*)*'),
    "'": re.compile(r"[^'\\\n]*(?:\\[\s\S][^'\\\n]*)*"),
}


def _skip_regions(text: str) -> list[tuple[int, int]]:
    """Spans of comments, string and char literals (including C++ raw strings)."""
    return list(_skip_regions_cached(text))


@lru_cache(maxsize=32)
def _skip_regions_cached(text: str) -> tuple[tuple[int, int], ...]:
    # the same scan as a character loop would do, jumping from one candidate start to the next
    regions: list[tuple[int, int]] = []
    n = len(text)
    search = _SKIP_START.search
    pos = 0
    while True:
        m = search(text, pos)
        if m is None:
            break
        i = m.start()
        tok = m.group()
        if tok == "//":
            j = text.find("\n", i)
            j = n if j < 0 else j
        elif tok == "/*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
        elif tok == 'R"':
            rm = None
            if i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_") or text[i - 1] in "uU8L":
                rm = _RAW_OPEN.match(text, i)
            if rm is None:
                pos = i + 1  # the quote after R starts an ordinary string
                continue
            close = ")" + rm.group(1) + '"'
            j = text.find(close, rm.end())
            j = n if j < 0 else j + len(close)
        elif tok == "'" and i > 0 and text[i - 1].isalnum():
            pos = i + 1  # a C++14 digit separator (1'000), not a char literal
            continue
        else:
            j = min(n, _STRING_BODY[tok].match(text, i + 1).end() + 1)
        regions.append((i, j))
        pos = j
    return tuple(regions)


class _Buf:
    """A mutable copy of the text, with helpers that refuse to change length or newlines."""

    def __init__(self, text: str):
        self.chars = list(text)
        self.text = text

    def blank(self, start: int, end: int) -> None:
        text = self.text
        for k in range(start, end):
            ch = text[k]
            if ch == "\n" or (ch == "\\" and k + 1 < len(text) and text[k + 1] == "\n"):
                continue  # keep line breaks and macro line continuations
            self.chars[k] = " "

    def put(self, start: int, s: str) -> None:
        for k, ch in enumerate(s):
            assert self.chars[start + k] != "\n"
            self.chars[start + k] = ch

    def result(self) -> str:
        out = "".join(self.chars)
        assert len(out) == len(self.text)
        return out


def _in_regions(pos: int, regions: list[tuple[int, int]], starts: list[int]) -> bool:
    k = _bisect_right(starts, pos) - 1
    return k >= 0 and regions[k][0] <= pos < regions[k][1]


class _Skipper:
    def __init__(self, text: str):
        self.regions = _skip_regions(text)
        self.starts = [r[0] for r in self.regions]
        self._closers: dict[str, dict[int, int]] = {}

    def closers(self, text: str, pairs: str) -> dict[int, int]:
        """Opener position -> the position of the closer that brings the depth back to the opener's level,
        for the brackets of ``pairs`` ("()" or "()[]{}": any of them count) outside comments and strings.
        Computed once per text in one pass, so matching every bracket of a deeply nested or unbalanced
        file stays linear (a scan per opener was quadratic)."""
        table = self._closers.get(pairs)
        if table is None:
            table = {}
            stack: list[int] = []
            rx = _PARENS if pairs == "()" else _BRACKETS
            for m in rx.finditer(text):
                j = m.start()
                if self(j):
                    continue
                if m.group() in "([{":
                    stack.append(j)
                elif stack:
                    table[stack.pop()] = j
            self._closers[pairs] = table
        return table

    def __call__(self, pos: int) -> bool:
        k = _bisect_right(self.starts, pos) - 1  # _in_regions, inlined: called for many positions
        return k >= 0 and self.regions[k][0] <= pos < self.regions[k][1]


@dataclass(frozen=True)
class Attribute:
    """A ``[[...]]`` attribute found in Metal code: where it was and what it said."""

    start: int
    end: int
    text: str  # inner text, e.g. ``buffer(0)`` or ``host_name("abs_float")``


# ``[[`` ... the next ``]]``, not across another ``[[`` (an attribute never holds one): linear even when a
# file has thousands of ``[[`` and no ``]]`` (``.*?`` scanned to the end of the file from each of them)
_ATTR = re.compile(r"\[\[([^\[\]]*(?:(?:\[(?!\[)|\](?!\]))[^\[\]]*)*)\]\]")
_METAL_QUALIFIERS = re.compile(r"\b(kernel|vertex|fragment|METAL_FUNC|METAL_CONST_FUNC|METAL_PURE|C10_METAL_FUNC)\b(?=\s+[A-Za-z_])")
_METHOD_SPACE = re.compile(r"\)\s*\b(device|constant|threadgroup|thread)\b(?=\s*(?:const\b|\{|;|->|=|noexcept\b))")
_IF_CONSTEXPR = re.compile(r"\bIF_CONSTEXPR\b(?=\s*\()")
_ADDRESS_SPACE = re.compile(r"\b(device|constant|threadgroup|thread|ray_data|object_data)\b(?=\s+[A-Za-z_:])")


_MACRO_CALL_LINE = re.compile(r"^[ \t]*([A-Z][A-Z0-9]*_[A-Z0-9_]*)[ \t]*\(", re.M)
_PRAGMA_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)[ \t]+_Pragma\b", re.M)
_QUALIFIER_DEFINE = re.compile(
    r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)((?:[ \t]+(?:static|constant|constexpr|const|inline|device|thread|threadgroup|METAL_FUNC))+)[ \t]*$", re.M
)
_KNOWN_QUALIFIER_MACROS = {"C10_METAL_CONSTEXPR"}
_FN_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)\(", re.M)
_HAS_INCLUDE = re.compile(r"\b__has_include(?:_next)?[ \t]*\(([ \t]*(?:<[^>\n]*>|\"[^\"\n]*\")[ \t]*)\)")
_PRAGMA_OP = re.compile(r"\b_Pragma[ \t]*\(")
_NAMESPACE_OPEN = re.compile(r"(?:\bnamespace(?:[ \t\n]+[\w:]+)?|\bextern[ \t]+\"C(?:\+\+)?\")[ \t\n]*$")


def _preproc_regions(text: str) -> list[tuple[int, int]]:
    """Spans of preprocessor lines, including their backslash continuations."""
    out = []
    for m in re.finditer(r"^[ \t]*#", text, re.M):
        end = m.start()
        while True:
            nl = text.find("\n", end)
            if nl < 0:
                end = len(text)
                break
            if nl > 0 and text[nl - 1] == "\\":
                end = nl + 1
                continue
            end = nl
            break
        out.append((m.start(), end))
    return out


def _file_scope_depths(text: str, skip: "_Skipper", pre: "_Skipper") -> list[int]:
    """Positions of ``{`` ``}`` with, for each line start, the number of open non-namespace braces."""
    depth_at_line: list[int] = []
    stack: list[bool] = []  # True for a namespace / extern "C" brace
    depth = 0
    depth_at_line.append(0)
    for m in _NL_OR_BRACE.finditer(text):  # the only characters that matter here
        i, ch = m.start(), m.group()
        if ch == "\n":
            depth_at_line.append(depth)
            continue
        if skip(i) or pre(i):
            continue
        if ch == "{":
            transparent = bool(_NAMESPACE_OPEN.search(text[max(0, i - 120) : i]))
            stack.append(transparent)
            if not transparent:
                depth += 1
        elif stack:
            if not stack.pop():
                depth -= 1
    return depth_at_line


def _mask_statement_macro(text: str, buf: "_Buf", skip: "_Skipper", name_at: int, open_at: int) -> None:
    """Blank a statement-position invocation of one of the file's own macros written without a ``;``
    (``IMPL_CASE(0, a, b)`` lines in a switch), which tree-sitter would patch with MISSING nodes."""
    p = name_at - 1
    chars = buf.chars  # earlier invocations on the lines above are already blanked there
    while p >= 0 and (chars[p] in " \t\n" or skip(p)):
        p -= 1
    if p >= 0 and chars[p] not in ";{}":
        return  # part of an expression or a declaration
    close = _match_paren(text, open_at, skip)
    if close < 0:
        return
    j = close + 1
    while j < len(text) and (text[j] in " \t\n" or skip(j)):
        j += 1
    if j < len(text) and not (text[j].isalpha() or text[j] in "_}"):
        return  # `;`, an operator or `.`: an ordinary expression statement
    buf.blank(name_at, close + 1)


def _mask_file_scope_macros(text: str, buf: "_Buf", skip: "_Skipper") -> None:
    pre_regions = _preproc_regions(text)
    pre = _Skipper.__new__(_Skipper)
    pre.regions, pre.starts = pre_regions, [r[0] for r in pre_regions]
    depths = None
    own_fn_macros = {m.group(1) for m in _FN_DEFINE.finditer(text)}
    rx_line = _MACRO_CALL_LINE
    if own_fn_macros:
        names = "|".join(sorted(map(re.escape, own_fn_macros)))
        rx_line = re.compile(r"^[ \t]*([A-Z][A-Z0-9]*_[A-Z0-9_]*|" + names + r")[ \t]*\(", re.M)
    chain = re.compile(r"(" + "|".join(sorted(map(re.escape, own_fn_macros))) + r")[ \t]*\(") if own_fn_macros else None
    line_starts = None
    for m in rx_line.finditer(text):
        name_at = m.start(1)
        if skip(name_at) or pre(name_at):
            continue
        if depths is None:
            depths = _file_scope_depths(text, skip, pre)
            line_starts = [0] + [k + 1 for k, ch in enumerate(text) if ch == "\n"]
        line = bisect.bisect_right(line_starts, name_at) - 1
        if depths[line] != 0:
            if m.group(1) in own_fn_macros:
                _mask_statement_macro(text, buf, skip, name_at, m.end() - 1)
            continue
        open_at = m.end() - 1
        spans = []
        while True:
            close = _match_paren(text, open_at, skip)
            if close < 0:
                break
            j = close + 1
            while j < len(text) and text[j] in _WS:
                j += 1
            if j < len(text) and text[j] == ";":
                spans.append((name_at, j + 1))
                break
            if j < len(text) and text[j] == "/" and skip(j):  # a trailing comment ends the line too
                j = text.find("\n", j)
                j = len(text) if j < 0 else j
            if j >= len(text) or text[j] == "\n":
                k = j
                while k < len(text) and text[k] in " \t\n":
                    k += 1
                if not (k < len(text) and text[k] in "{:(-="):  # not a macro opening a definition
                    spans.append((name_at, close + 1))
                break
            nxt = chain.match(text, j) if chain is not None else None
            if nxt is None:
                break
            spans.append((name_at, close + 1))
            name_at, open_at = j, nxt.end() - 1
        for a, b in spans:
            buf.blank(a, b)
    pragma_macros = {m.group(1) for m in _PRAGMA_DEFINE.finditer(text)}
    if pragma_macros:
        rx = re.compile(r"\b(" + "|".join(sorted(map(re.escape, pragma_macros))) + r")\b")
        for m in rx.finditer(text):
            if not skip(m.start()) and not pre(m.start()):
                buf.blank(m.start(), m.end())
    qualifier_macros = {m.group(1) for m in _QUALIFIER_DEFINE.finditer(text)} | _KNOWN_QUALIFIER_MACROS
    rx = re.compile(r"\b(" + "|".join(sorted(map(re.escape, qualifier_macros))) + r")\b")
    for m in rx.finditer(text):
        if not skip(m.start()) and not pre(m.start()):
            buf.blank(m.start(), m.end())
    for m in _HAS_INCLUDE.finditer(text):
        if pre(m.start()) and not skip(m.start()):
            buf.blank(m.start(1), m.end(1))
            buf.put(m.start(1), "1")
    for m in _PRAGMA_OP.finditer(text):
        if skip(m.start()) or pre(m.start()):
            continue
        close = _match_paren(text, m.end() - 1, skip)
        if close > 0 and "\n" not in text[m.start() : close]:
            buf.blank(m.start(), close + 1)


def metal_attributes(text: str) -> list[Attribute]:
    skip = _Skipper(text)
    return [Attribute(m.start(), m.end(), m.group(1).strip()) for m in _ATTR.finditer(text) if not skip(m.start())]


def mask_metal(text: str) -> str:
    """Mask Metal-only syntax so tree-sitter-cpp sees plain C++."""
    buf = _Buf(text)
    skip = _Skipper(text)
    for m in _ATTR.finditer(text):
        if not skip(m.start()):
            buf.blank(m.start(), m.end())
    for rx in (_METAL_QUALIFIERS, _ADDRESS_SPACE, _METHOD_SPACE):
        for m in rx.finditer(text):
            if not skip(m.start()):
                buf.blank(m.start(1), m.end(1))
    for m in _IF_CONSTEXPR.finditer(text):
        if not skip(m.start()):
            buf.blank(m.start(), m.end())
            buf.put(m.start(), "constexpr")
    _mask_file_scope_macros(text, buf, skip)
    return buf.result()


# ---------------------------------------------------------------- Objective-C++

_PREV_SEND = set("(,={;:[!&|?+-*/<>%^~\n") | {""}


def _prev_sig(text: str, i: int) -> str:
    j = i - 1
    while j >= 0 and text[j] in _WS:
        j -= 1
    if j < 0:
        return ""
    return text[j]


def _after_control_header(text: str, i: int, skip: "_Skipper") -> bool:
    """The ``[`` at ``i`` opens the body of a brace-less ``if (...)``, ``for (...)`` or ``while (...)``: the
    significant character before it is the ``)`` that closes such a header (`for (...) [enc setBytes:...];`)."""
    j = i - 1
    while j >= 0 and text[j] in _WS:
        j -= 1
    if j < 0 or text[j] != ")":
        return False
    depth = 0
    stop = max(-1, j - 2000)  # a control header is short: bounded, so unbalanced input stays linear
    while j > stop:
        c = text[j]
        if not skip(j):
            if c == ")":
                depth += 1
            elif c == "(":
                depth -= 1
                if depth == 0:
                    return _prev_word(text, j) in ("if", "for", "while")
        j -= 1
    return False


def _is_xor(text: str, i: int) -> bool:
    """A ``^`` after an operand is the xor operator, not a block."""
    prev = _prev_sig(text, i)
    return bool(prev) and (prev.isalnum() or prev in "_)]")


def _prev_word(text: str, i: int) -> str:
    j = i - 1
    while j >= 0 and text[j] in " \t\n":
        j -= 1
    k = j
    while k >= 0 and (text[k].isalnum() or text[k] == "_"):
        k -= 1
    return text[k + 1 : j + 1]


def _match_paren(text: str, i: int, skip: "_Skipper") -> int:
    if text[i : i + 1] == "(" and not skip(i):
        return skip.closers(text, "()").get(i, -1)
    depth = 0
    for m in _PARENS.finditer(text, i):  # only parentheses change the depth
        j = m.start()
        if skip(j):
            continue
        if text[j] == "(":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return j
    return -1


def _match_brace(text: str, i: int, skip: "_Skipper") -> int:
    depth = 0
    for j in range(i, len(text)):
        if skip(j):
            continue
        if text[j] in "([{":
            depth += 1
        elif text[j] in ")]}":
            depth -= 1
            if depth == 0:
                return j if text[j] == "}" else -1
    return -1


def _colons_to_commas(text: str, start: int, end: int, skip: "_Skipper", buf: "_Buf") -> None:
    """Inside a dictionary literal, the depth-0 ``key : value`` colons become commas."""
    depth = 0
    for j in range(start, end):
        if skip(j):
            continue
        ch = text[j]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == ":" and depth == 0 and text[j - 1 : j] != ":" and text[j + 1 : j + 2] != ":":
            buf.put(j, ",")


def _put_before(buf: "_Buf", text: str, pos: int, ch: str) -> None:
    """Write ``ch`` in the whitespace right before ``pos`` (or over ``pos - 1`` if that is a newline-free char)."""
    if pos > 0 and text[pos - 1] != "\n":
        buf.put(pos - 1, ch)


def _match_bracket(text: str, i: int, skip: _Skipper) -> int:
    """Index of the ``]`` closing the ``[`` at ``i`` (or -1)."""
    if text[i : i + 1] == "[" and not skip(i):
        j = skip.closers(text, "()[]{}").get(i, -1)
        return j if j >= 0 and text[j] == "]" else -1
    depth = 0
    for m in _BRACKETS.finditer(text, i):  # only brackets change the depth
        j = m.start()
        if skip(j):
            continue
        ch = m.group()
        if ch in "([{":
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                return j if ch == "]" else -1
    return -1


def _ternary_colons(text: str, start: int, end: int, skip: "_Skipper") -> set[int]:
    """Positions of depth-0 ``:`` that close a ``?`` (ternaries inside message-send arguments)."""
    out: set[int] = set()
    depth = pending = 0
    closers = skip.closers(text, "()[]{}")
    j = start - 1
    while j + 1 < end:
        j += 1
        if skip(j):
            continue
        ch = text[j]
        if ch in "([{" and depth == 0:  # jump over the nested group (linear for nested sends)
            c = closers.get(j, end)
            if c >= end:
                break  # never back at depth 0 before ``end``
            j = c
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and ch == "?":
            pending += 1
        elif depth == 0 and ch == ":" and pending and text[j - 1 : j] != ":" and text[j + 1 : j + 2] != ":":
            out.add(j)
            pending -= 1
    return out


# `(float*)[buffer contents]`: a send right after a C-style pointer cast (not a subscript of a parenthesised value)
_POINTER_CAST = re.compile(r"\(\s*(?:const\s+)?[A-Za-z_][\w:]*(?:\s*<[^<>()]*>)?\s*\*+\s*(?:const\s*)?\)\s*\Z")


def _selector_parts(text: str, start: int, end: int, skip: _Skipper):
    """Split the inside of ``[ ... ]`` (start..end exclusive) into receiver and selector keywords.

    Returns (receiver_end, [(kw_start, colon_pos)], unary_selector_span) or None when this is not
    a message send (a lambda capture, a subscript, an attribute).
    """
    depth = 0
    j = start
    top: list[int] = []  # depth-0 positions of whitespace runs
    closers = skip.closers(text, "()[]{}")
    while j < end:
        if skip(j):
            j += 1
            continue
        ch = text[j]
        if ch in "([{" and depth == 0:  # jump over the nested group (linear for nested sends)
            c = closers.get(j, end)
            if c >= end:
                break  # never back at depth 0 before ``end``
            j = c + 1
            continue
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and ch in " \t\n" and (j == start or text[j - 1] not in " \t\n"):
            top.append(j)
        j += 1
    # receiver: from start to the first top-level whitespace that is followed by ident then ':' or end
    for ws in top:
        k = ws
        while k < end and text[k] in " \t\n":
            k += 1
        m = _IDENT.match(text, k)
        if not m or m.end() > end:
            continue
        receiver = text[start:ws].strip()
        if not receiver or receiver in ("&", "=", "this") or receiver.endswith(","):
            return None
        if not (receiver[-1].isalnum() or receiver[-1] in "_)]>\""):
            continue
        after = m.end()
        while after < end and text[after] in " \t\n":
            after += 1
        if after >= end:
            return ws, [], (m.start(), m.end())
        if text[after] == ":":
            ternary = _ternary_colons(text, start, end, skip)
            if after in ternary:
                return None
            kws = []
            # collect all top-level keyword parts `ident:` following whitespace
            for ws2 in [ws] + [t for t in top if t > ws]:
                k2 = ws2
                while k2 < end and text[k2] in " \t\n":
                    k2 += 1
                m2 = _IDENT.match(text, k2)
                if not m2:
                    continue
                a2 = m2.end()
                while a2 < end and text[a2] in " \t":
                    a2 += 1
                if a2 < end and text[a2] == ":" and not (a2 + 1 < end and text[a2 + 1] == ":") and not (a2 > 0 and text[a2 - 1] == ":") and a2 not in ternary:
                    kws.append((ws2, m2.start(), a2))
            return ws, kws, None
        return None
    return None


def mask_objc(text: str) -> str:
    """Mask Objective-C++ constructs so tree-sitter-cpp sees plain C++."""
    skip = _Skipper(text)
    buf = _Buf(text)
    n = len(text)
    # @interface / @protocol declarations hold no C++: blank them up to their @end
    for m in re.finditer(r"^[ \t]*@(interface|protocol)\b(?![^\n]*;)", text, re.M):
        if skip(m.start()):
            continue
        end = re.compile(r"^[ \t]*@end\b", re.M).search(text, m.end())
        if end is not None:
            buf.blank(m.start(), end.end())
    # @-keywords and literals
    for m in re.finditer(r"@(autoreleasepool|available|selector|protocol|encode|try|catch|finally|synchronized|\"|\[|\{|[0-9]|YES|NO)", text):
        at = m.start()
        if skip(at):
            continue
        word = m.group(1)
        if word in ("available", "selector", "protocol", "encode"):
            p = m.end()
            while p < n and text[p] in _WS:
                p += 1
            if p < n and text[p] == "(":
                q = _match_paren(text, p, skip)
                if q > 0 and "\n" not in text[at:q]:
                    buf.blank(at, q + 1)
                    buf.put(at, "1")
                    continue
            buf.blank(at, m.end())
        elif word in ("autoreleasepool", "try", "finally", "synchronized"):
            buf.blank(at, m.end())
        elif word == "[":  # @[a, b] array literal -> {a, b} braced list
            close = _match_bracket(text, at + 1, skip)
            buf.blank(at, at + 1)
            if close > 0:
                buf.put(at + 1, "{")
                buf.put(close, "}")
        elif word == "{":  # @{k : v, ...} dictionary literal -> {k , v, ...}
            close = _match_brace(text, at + 1, skip)
            buf.blank(at, at + 1)
            if close > 0:
                _colons_to_commas(text, at + 2, close, skip, buf)
        else:  # @catch, @"str", @1, @YES: drop the '@'
            buf.blank(at, at + 1)
    for m in re.finditer(r"@(?=[(\-+])", text):  # boxed expressions @(x), @-1
        if not skip(m.start()):
            buf.blank(m.start(), m.start() + 1)
    for m in re.finditer(r"\(\s*(\^)\s*[A-Za-z_]\w*\s*\)\s*\(", text):  # block types: (^Name)(args) -> (*Name)(args)
        if not skip(m.start()):
            buf.put(m.start(1), "*")
    for m in re.finditer(r"\b__(block|weak|strong|unsafe_unretained|autoreleasing)\b", text):
        if not skip(m.start()):
            buf.blank(m.start(), m.end())
    # blocks with a return type: ^RetType*(args) { -> [](args) { (the type is blanked)
    for m in re.finditer(r"\^(\s*[A-Za-z_][\w:]*(?:\s*<[^<>;{}()]*>)?[\s*&]*)\(", text):
        i = m.start()
        if skip(i):
            continue
        if _is_xor(text, i):
            continue
        close = _match_paren(text, m.end() - 1, skip)
        if close < 0 or not re.match(r"\s*\{", text[close + 1 : close + 40]) or "\n" in m.group(1):
            continue
        buf.blank(i, m.end() - 1)
        buf.put(i, "[]")
    # blocks: ^() { , ^{ , ^(args) {
    for m in re.finditer(r"\^\s*(\(|\{)", text):
        i = m.start()
        if skip(i):
            continue
        if _is_xor(text, i):
            continue
        if text[i - 1 : i] in _WS and i >= 1:
            buf.put(i - 1, "[]")
        elif text.startswith("^()", i):
            buf.put(i, "[=]")
        else:
            buf.blank(i, i + 1)
    # message sends, innermost first does not matter: each send is rewritten in place
    i = 0
    while i < n:
        if text[i] != "[":
            i = text.find("[", i)  # jump to the next candidate
            if i < 0:
                break
            continue
        if skip(i):
            i += 1
            continue
        prev = _prev_sig(text, i)
        pw = _prev_word(text, i)
        if not (prev in _PREV_SEND or pw in ("return", "case", "throw", "co_return", "delete", "else", "do")
                or _POINTER_CAST.search(text, max(0, i - 80), i) or (prev == ")" and _after_control_header(text, i, skip))):
            i += 1
            continue
        if text.startswith("[[", i) and re.match(r"\[\[\s*[A-Za-z_:]+\s*(\(.*?\))?\s*(,\s*[A-Za-z_:]+\s*(\(.*?\))?\s*)*\]\]", text[i : i + 200]):
            i += 2
            continue  # C++ attribute
        close = _match_bracket(text, i, skip)
        if close < 0:
            i += 1
            continue
        parts = _selector_parts(text, i + 1, close, skip)
        if parts is None:
            i += 1
            continue
        ws, kws, unary = parts
        if unary is not None:
            _put_before(buf, text, unary[0], ".")
            buf.put(i, "(")
        else:
            buf.put(i, " ")
            for k, (_ws2, kstart, colon) in enumerate(kws):
                if k == 0:
                    _put_before(buf, text, kstart, ".")
                    buf.put(colon, "(")
                else:
                    buf.blank(kstart, colon + 1)
                    if text[kstart - 1] in _WS:
                        buf.put(kstart - 1, ",")
                    else:
                        buf.put(kstart, ",")
        buf.put(close, ")")
        i += 1
    return buf.result()
