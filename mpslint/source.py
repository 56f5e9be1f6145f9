"""A file's text and the mapping between offsets and line/column positions."""

from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass

from .model import Span

_NON_ASCII = re.compile(r"[^\x00-\x7f]")


class LineIndex:
    """Character offsets <-> 1-based (line, column)."""

    __slots__ = ("starts", "length")

    def __init__(self, text: str):
        # the offset after each "\n": running sums of (line length + 1), computed in C
        self.starts = list(itertools.accumulate(map((1).__add__, map(len, text.split("\n")[:-1])), initial=0))
        self.length = len(text)

    def position(self, offset: int) -> tuple[int, int]:
        if offset < 0:
            offset = 0
        elif offset > self.length:
            offset = self.length
        starts = self.starts
        k = bisect.bisect_right(starts, offset) - 1
        return k + 1, offset - starts[k] + 1

    def offset(self, line: int, column: int) -> int:
        line = max(1, min(line, len(self.starts)))
        return min(self.starts[line - 1] + column - 1, self.length)

    def span(self, start: int, end: int) -> Span:
        if end < start:
            end = start
        # position() twice, inlined (this is called for every node the facts keep)
        starts, length = self.starts, self.length
        a = 0 if start < 0 else (length if start > length else start)
        b = 0 if end < 0 else (length if end > length else end)
        k = bisect.bisect_right(starts, a) - 1
        k2 = bisect.bisect_right(starts, b, k) - 1 if k >= 0 else bisect.bisect_right(starts, b) - 1
        return Span(start, end, k + 1, a - starts[k] + 1, k2 + 1, b - starts[k2] + 1)

    def line_text(self, text: str, line: int) -> str:
        if line < 1 or line > len(self.starts):
            return ""
        start = self.starts[line - 1]
        end = self.starts[line] - 1 if line < len(self.starts) else self.length
        return text[start:end]


@dataclass
class SourceFile:
    path: str  # as reported (relative to the project root when possible)
    text: str
    kind: str  # "metal" | "host" | "yaml" | "python" | "common_mps"
    sha: str = ""

    def __post_init__(self):
        self._index: LineIndex | None = None

    @property
    def index(self) -> LineIndex:
        if self._index is None:
            self._index = LineIndex(self.text)
        return self._index


class ByteToChar:
    """Map tree-sitter byte offsets to character offsets (identity for ASCII text). Only the non-ASCII characters
    are recorded (a copyright sign in a header makes a whole file non-ASCII): a byte offset is shifted back by
    the extra bytes of the multi-byte characters before it, found by bisection."""

    __slots__ = ("table", "_ends", "_shift", "_starts", "_chars", "_length")

    def __init__(self, text: str):
        self.table = None if text.isascii() else True
        if self.table is None:
            return
        ends, shift, starts, chars = [], [], [], []
        extra = 0
        for m in _NON_ASCII.finditer(text):
            i = m.start()
            width = len(m.group().encode("utf-8"))
            starts.append(i + extra)  # the character's first byte
            chars.append(i)
            extra += width - 1
            ends.append(i + extra + 1)  # the byte after it
            shift.append(extra)
        self._ends, self._shift, self._starts, self._chars, self._length = ends, shift, starts, chars, len(text)

    def __call__(self, b: int) -> int:
        if self.table is None:
            return b
        k = bisect.bisect_right(self._ends, b)
        if k < len(self._starts) and self._starts[k] <= b:
            return self._chars[k]  # inside a multi-byte character: that character
        return min(b - (self._shift[k - 1] if k else 0), self._length)
