"""``--format json``: the stable report for tools and ``--compare`` (sorted keys, schema version, no timestamps)."""

from __future__ import annotations

import json


def render(report: dict) -> str:
    return json.dumps(report, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
