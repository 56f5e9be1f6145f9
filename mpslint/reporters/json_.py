"""``--format json``: a list of finding objects, stable keys, 1-based positions."""

from __future__ import annotations

import json


def render(result, **_) -> str:
    return json.dumps([f.to_dict() for f in result.findings], indent=2, sort_keys=False) + "\n"
