"""The values that flow between stages: spans, findings, fixes, file errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        return {"error": 0, "warning": 1, "info": 2}[self.value]


@dataclass(frozen=True)
class Span:
    """A region of one file. Offsets are character offsets; lines and columns are 1-based, end exclusive."""

    start: int
    end: int
    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True)
class Edit:
    """Replace ``[start, end)`` (character offsets) of ``path`` with ``content``."""

    path: str
    start: int
    end: int
    content: str
    line: int = 0
    column: int = 0
    end_line: int = 0
    end_column: int = 0


@dataclass(frozen=True)
class Fix:
    message: str
    edits: tuple[Edit, ...]
    applicability: str = "safe"  # "safe" | "unsafe"


@dataclass(frozen=True)
class Finding:
    code: str
    name: str
    severity: Severity
    message: str
    path: str
    span: Span
    fix: Fix | None = None
    source_line: str = ""  # the text of the first line, for baselines and review comments
    extra: tuple[tuple[str, str], ...] = ()

    def sort_key(self):
        s = self.span
        return (self.path, s.line, s.column, self.code, s.end_line, s.end_column, self.message)

    def to_dict(self) -> dict:
        s = self.span
        fix = None
        if self.fix is not None:
            fix = {
                "message": self.fix.message,
                "applicability": self.fix.applicability,
                "edits": [
                    {
                        "path": e.path,
                        "content": e.content,
                        "location": {"line": e.line, "column": e.column},
                        "end_location": {"line": e.end_line, "column": e.end_column},
                    }
                    for e in self.fix.edits
                ],
            }
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "message": self.message,
            "path": self.path,
            "line": s.line,
            "column": s.column,
            "end_line": s.end_line,
            "end_column": s.end_column,
            "fix": fix,
            **({"extra": dict(self.extra)} if self.extra else {}),
        }


@dataclass(frozen=True)
class FileError:
    """Input mpslint could not use fully (unreadable, undecodable, malformed). Never fatal for other files."""

    path: str
    line: int
    message: str
    fatal: bool = False  # nothing of this file could be linted

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}" if self.line else f"{self.path}: {self.message}"


@dataclass
class ParseStats:
    files: int = 0
    bytes: int = 0
    error_nodes: int = 0
    missing_nodes: int = 0
    per_file: dict[str, tuple[int, int]] = field(default_factory=dict)  # path -> (bytes, error nodes)
