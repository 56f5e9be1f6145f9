"""``--format rdjsonl``: reviewdog's Diagnostic Format, one Diagnostic JSON object per line."""

from __future__ import annotations

import json

from .rdjson import diagnostic


def render(result, **_) -> str:
    return "".join(json.dumps(diagnostic(result, f), ensure_ascii=False) + "\n" for f in result.findings)
