"""A file's text and the mapping between offsets and line/column positions."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

from .model import Span


class LineIndex:
    """Character offsets <-> 1-based (line, column)."""

    __slots__ = ("starts", "length")

    def __init__(self, text: str):
        self.starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self.length = len(text)

    def position(self, offset: int) -> tuple[int, int]:
        offset = max(0, min(offset, self.length))
        k = bisect.bisect_right(self.starts, offset) - 1
        return k + 1, offset - self.starts[k] + 1

    def offset(self, line: int, column: int) -> int:
        line = max(1, min(line, len(self.starts)))
        return min(self.starts[line - 1] + column - 1, self.length)

    def span(self, start: int, end: int) -> Span:
        line, col = self.position(start)
        end_line, end_col = self.position(max(start, end))
        return Span(start, max(start, end), line, col, end_line, end_col)

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
