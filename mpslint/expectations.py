"""Inline fixture expectations, semgrep-style: ``// expect: MPS101`` flags a line, ``// ok: MPS101`` documents a near-miss."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

EXPECT = re.compile(r"(?://|#)\s*expect:\s*([A-Z]{3}\d{3}(?:\s*,\s*[A-Z]{3}\d{3})*)")
OK = re.compile(r"(?://|#)\s*ok:\s*([A-Z]{3}\d{3}(?:\s*,\s*[A-Z]{3}\d{3})*)")


def _codes(s: str) -> list[str]:
    return [c.strip() for c in s.split(",")]


def annotations(path: Path) -> tuple[Counter, Counter]:
    """(expected (line, code) counts, ok (line, code) counts) of one fixture file."""
    expected: Counter = Counter()
    ok: Counter = Counter()
    for lineno, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
        for m in EXPECT.finditer(line):
            for c in _codes(m.group(1)):
                expected[(lineno, c)] += 1
        for m in OK.finditer(line):
            for c in _codes(m.group(1)):
                ok[(lineno, c)] += 1
    return expected, ok
