"""A file's text and the mapping between offsets and line/column positions."""

from __future__ import annotations

import bisect
import itertools
from dataclasses import dataclass

from .model import Span


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
    """Map tree-sitter byte offsets to character offsets (identity for ASCII text)."""

    __slots__ = ("table",)

    def __init__(self, text: str):
        if text.isascii():
            self.table = None
        else:
            table = []
            for i, ch in enumerate(text):
                table.extend([i] * len(ch.encode("utf-8")))
            table.append(len(text))
            self.table = table

    def __call__(self, b: int) -> int:
        if self.table is None:
            return b
        return self.table[min(b, len(self.table) - 1)]
