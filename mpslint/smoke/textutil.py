"""Tiny helpers for scanning C++ text (strings, balanced brackets, top-level comma splits)."""
from __future__ import annotations


def skip_string(s: str, i: int) -> int:
    """Index just past the string or char literal starting at s[i]."""
    q = s[i]
    i += 1
    while i < len(s) and s[i] != q:
        i += 2 if s[i] == "\\" else 1
    return i + 1


def match_paren(s: str, i: int, o: str = "(", c: str = ")") -> int:
    """Index of the bracket closing the one at s[i] (which must be `o`), or -1."""
    depth = 0
    n = len(s)
    while i < n:
        ch = s[i]
        if ch in "\"'":
            i = skip_string(s, i)
            continue
        if ch == o:
            depth += 1
        elif ch == c:
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return -1


def split_top(s: str, sep: str = ",") -> list[str]:
    """Split at `sep` outside (), [], {}, <>; drops empty parts and a lone `void`."""
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        if ch == sep and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return [p.strip() for p in out if p.strip() and p.strip() != "void"]
