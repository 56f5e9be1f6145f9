"""``--format rdjson``: reviewdog's Diagnostic Format (one DiagnosticResult), for ``reviewdog -f=rdjson``.

Positions are 1-based; columns count UTF-8 bytes as reviewdog's format specifies. Safe fixes become
``suggestions`` (reviewdog turns them into suggested changes).
"""

from __future__ import annotations

import json

from ._common import line_of, utf8_col

SEVERITY = {"error": "ERROR", "warning": "WARNING", "info": "INFO"}
SOURCE = {"name": "mpslint"}


def _pos(result, path, line, column) -> dict:
    return {"line": line, "column": utf8_col(line_of(result, path, line), column)}


def diagnostic(result, f) -> dict:
    s = f.span
    d = {
        "message": f.message,
        "location": {
            "path": f.path,
            "range": {"start": _pos(result, f.path, s.line, s.column), "end": _pos(result, f.path, s.end_line, s.end_column)},
        },
        "severity": SEVERITY[f.severity.value],
        "source": SOURCE,
        "code": {"value": f.code},
    }
    if f.fix is not None and f.fix.applicability == "safe" and f.fix.edits and all(e.path == f.path and e.line for e in f.fix.edits):
        d["suggestions"] = [
            {
                "range": {"start": _pos(result, e.path, e.line, e.column), "end": _pos(result, e.path, e.end_line, e.end_column)},
                "text": e.content,
            }
            for e in f.fix.edits
        ]
    return d


def render(result, **_) -> str:
    doc = {"source": SOURCE, "diagnostics": [diagnostic(result, f) for f in result.findings]}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
