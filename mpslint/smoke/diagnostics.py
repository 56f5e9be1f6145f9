"""Parse clang diagnostics and map each error to a line of the .metal file being checked.

The rewritten sources carry `#line` directives, so clang already names the original files.  An error inside
a header (c10/metal/indexing.h, say) is placed at the line of the linted file that caused it: the first
"in instantiation of ... requested here" note in that file, else the outermost "In file included from" line.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_DIAG = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<sev>fatal error|error|warning|note): (?P<msg>.*)$")
_INCL = re.compile(r"^(?:In file included from|\s+from) (?P<path>.+?):(?P<line>\d+):")


@dataclass
class Diagnostic:
    path: str
    line: int
    column: int
    severity: str                 # "error" | "fatal error" | "warning" | "note"
    message: str
    notes: list = field(default_factory=list)
    included_from: list = field(default_factory=list)   # [(path, line)] innermost first

    @property
    def is_error(self) -> bool:
        return self.severity in ("error", "fatal error")


def parse(text: str) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    pending_incl: list[tuple[str, int]] = []
    for raw in text.splitlines():
        m = _INCL.match(raw)
        if m:
            pending_incl.append((m.group("path"), int(m.group("line"))))
            continue
        m = _DIAG.match(raw)
        if not m:
            continue
        d = Diagnostic(m.group("path"), int(m.group("line")), int(m.group("col")), m.group("sev"), m.group("msg"),
                       included_from=pending_incl)
        pending_incl = []
        if d.severity == "note" and out:
            out[-1].notes.append(d)
        else:
            out.append(d)
    return out


def _same(a: str, b: str) -> bool:
    return a == b or a.endswith("/" + b.lstrip("/")) or b.endswith("/" + a.lstrip("/"))


def locate(d: Diagnostic, main_path: str) -> tuple[int, int, str]:
    """(line, column, where) of `d` in `main_path`; `where` names the original location when it moved."""
    if _same(d.path, main_path):
        return d.line, d.column, ""
    for n in d.notes:
        if _same(n.path, main_path):
            return n.line, n.column, f" (in {d.path}:{d.line})"
    for p, ln in reversed(d.included_from):
        if _same(p, main_path):
            return ln, 1, f" (in {d.path}:{d.line})"
    return 1, 1, f" (in {d.path}:{d.line})"


def errors(text: str) -> list[Diagnostic]:
    return [d for d in parse(text) if d.is_error]
