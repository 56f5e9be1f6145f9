"""``mpslint: ignore[CODE]`` comments: on the line, or ``ignore-next-line`` on the line above."""

from __future__ import annotations

import re

_RX = re.compile(r"(?://|#)\s*mpslint:\s*(ignore-next-line|ignore-file|ignore)\[([A-Z0-9_,\s]+)\]")


class Suppressions:
    def __init__(self, text: str):
        self.lines: dict[int, set[str]] = {}
        self.file: set[str] = set()
        if "mpslint:" not in text:
            return
        for lineno, line in enumerate(text.split("\n"), start=1):
            if "mpslint:" not in line:
                continue
            for m in _RX.finditer(line):
                codes = {c.strip() for c in m.group(2).split(",") if c.strip()}
                if m.group(1) == "ignore":
                    self.lines.setdefault(lineno, set()).update(codes)
                elif m.group(1) == "ignore-next-line":
                    self.lines.setdefault(lineno + 1, set()).update(codes)
                else:
                    self.file.update(codes)

    def suppressed(self, code: str, line: int) -> bool:
        return _match(code, self.file) or _match(code, self.lines.get(line, ()))


def _match(code: str, codes) -> bool:
    return any(code == c or (c and code.startswith(c)) or c == "ALL" for c in codes)
