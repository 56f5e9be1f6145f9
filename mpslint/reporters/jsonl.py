"""``--format jsonl``: the ``--format json`` objects, one per line (streams and greps well)."""

from __future__ import annotations

import json


def render(result, **_) -> str:
    return "".join(json.dumps(f.to_dict(), ensure_ascii=False) + "\n" for f in result.findings)
