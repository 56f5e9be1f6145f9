"""Offset-preserving pre-pass that makes Metal and Objective-C++ palatable to tree-sitter-cpp.

Every rewrite keeps the text's length and its line breaks, so a byte offset, line or column
in the masked text is the same place in the original file.  The masks are:

Metal
  ``[[buffer(0)]]`` and other ``[[...]]`` attributes  -> spaces (recorded first, see ``metal_attributes``)
  ``kernel`` / ``vertex`` / ``fragment`` function qualifiers -> spaces
  address spaces ``device`` ``constant`` ``threadgroup`` ``thread`` before a type -> spaces

Objective-C++
  ``@autoreleasepool``  -> spaces (its ``{...}`` stays a compound statement)
  ``^() {`` / ``^{`` blocks -> C++ lambdas ``[=] {`` / ``[]{``
  ``[recv sel:a k:b]`` message sends -> `` recv.sel(a, b)``-shaped calls
  ``@"str"`` -> `` "str"``; ``@available(...)`` -> ``1`` padded; ``__block`` -> spaces

Comments and string literals are never rewritten.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WS = " \t"


def _skip_regions(text: str) -> list[tuple[int, int]]:
    """Spans of comments, string and char literals (including C++ raw strings)."""
    regions: list[tuple[int, int]] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            j = text.find("\n", i)
            j = n if j < 0 else j
            regions.append((i, j))
            i = j
        elif c == "/" and i + 1 < n and text[i + 1] == "*":
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            regions.append((i, j))
            i = j
        elif c == "R" and i + 1 < n and text[i + 1] == '"' and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_") or text[i - 1] in "uU8L"):
            m = re.compile(r'R"([^()\\ \t\n]{0,16})\(').match(text, i)
            if m:
                close = ")" + m.group(1) + '"'
                j = text.find(close, m.end())
                j = n if j < 0 else j + len(close)
                regions.append((i, j))
                i = j
            else:
                i += 1
        elif c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            # the second condition keeps C++14 digit separators (1'000) out of char literals
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(n, j + 1)
            regions.append((i, j))
            i = j
        else:
            i += 1
    return regions


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
    import bisect

    k = bisect.bisect_right(starts, pos) - 1
    return k >= 0 and regions[k][0] <= pos < regions[k][1]


class _Skipper:
    def __init__(self, text: str):
        self.regions = _skip_regions(text)
        self.starts = [r[0] for r in self.regions]

    def __call__(self, pos: int) -> bool:
        return _in_regions(pos, self.regions, self.starts)


@dataclass(frozen=True)
class Attribute:
    """A ``[[...]]`` attribute found in Metal code: where it was and what it said."""

    start: int
    end: int
    text: str  # inner text, e.g. ``buffer(0)`` or ``host_name("abs_float")``


_ATTR = re.compile(r"\[\[(.*?)\]\]", re.S)
_METAL_QUALIFIERS = re.compile(r"\b(kernel|vertex|fragment|METAL_FUNC|METAL_CONST_FUNC|METAL_PURE|C10_METAL_FUNC)\b(?=\s+[A-Za-z_])")
_ADDRESS_SPACE = re.compile(r"\b(device|constant|threadgroup|thread|ray_data|object_data)\b(?=\s+[A-Za-z_:])")


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
    for rx in (_METAL_QUALIFIERS, _ADDRESS_SPACE):
        for m in rx.finditer(text):
            if not skip(m.start()):
                buf.blank(m.start(1), m.end(1))
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


def _prev_word(text: str, i: int) -> str:
    j = i - 1
    while j >= 0 and text[j] in " \t\n":
        j -= 1
    k = j
    while k >= 0 and (text[k].isalnum() or text[k] == "_"):
        k -= 1
    return text[k + 1 : j + 1]


def _match_paren(text: str, i: int, skip: "_Skipper") -> int:
    depth = 0
    for j in range(i, len(text)):
        if skip(j):
            continue
        if text[j] == "(":
            depth += 1
        elif text[j] == ")":
            depth -= 1
            if depth == 0:
                return j
    return -1


def _put_before(buf: "_Buf", text: str, pos: int, ch: str) -> None:
    """Write ``ch`` in the whitespace right before ``pos`` (or over ``pos - 1`` if that is a newline-free char)."""
    if pos > 0 and text[pos - 1] != "\n":
        buf.put(pos - 1, ch)


def _match_bracket(text: str, i: int, skip: _Skipper) -> int:
    """Index of the ``]`` closing the ``[`` at ``i`` (or -1)."""
    depth = 0
    n = len(text)
    j = i
    while j < n:
        if skip(j):
            j += 1
            continue
        ch = text[j]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
            if depth == 0:
                return j if ch == "]" else -1
        j += 1
    return -1


def _selector_parts(text: str, start: int, end: int, skip: _Skipper):
    """Split the inside of ``[ ... ]`` (start..end exclusive) into receiver and selector keywords.

    Returns (receiver_end, [(kw_start, colon_pos)], unary_selector_span) or None when this is not
    a message send (a lambda capture, a subscript, an attribute).
    """
    depth = 0
    j = start
    top: list[int] = []  # depth-0 positions of whitespace runs
    while j < end:
        if skip(j):
            j += 1
            continue
        ch = text[j]
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
                if a2 < end and text[a2] == ":" and not (a2 + 1 < end and text[a2 + 1] == ":") and not (a2 > 0 and text[a2 - 1] == ":"):
                    kws.append((ws2, m2.start(), a2))
            return ws, kws, None
        return None
    return None


def mask_objc(text: str) -> str:
    """Mask Objective-C++ constructs so tree-sitter-cpp sees plain C++."""
    skip = _Skipper(text)
    buf = _Buf(text)
    n = len(text)
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
        else:  # @catch, @"str", @[...], @{...}, @1, @YES: drop the '@'
            buf.blank(at, at + 1)
    for m in re.finditer(r"\b__(block|weak|strong|unsafe_unretained|autoreleasing)\b", text):
        if not skip(m.start()):
            buf.blank(m.start(), m.end())
    # blocks: ^() { , ^{ , ^(args) {
    for m in re.finditer(r"\^\s*(\(|\{)", text):
        i = m.start()
        if skip(i):
            continue
        prev = _prev_sig(text, i)
        if prev and (prev.isalnum() or prev in "_)]"):
            continue  # xor operator
        if text[i - 1 : i] in _WS and i >= 1:
            buf.put(i - 1, "[]")
        elif text.startswith("^()", i):
            buf.put(i, "[=]")
        else:
            buf.blank(i, i + 1)
    # message sends, innermost first does not matter: each send is rewritten in place
    i = 0
    while i < n:
        if text[i] != "[" or skip(i):
            i += 1
            continue
        prev = _prev_sig(text, i)
        pw = _prev_word(text, i)
        if not (prev in _PREV_SEND or pw in ("return", "case", "throw", "co_return", "delete")):
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
