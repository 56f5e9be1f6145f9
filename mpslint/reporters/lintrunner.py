"""``--format lintrunner``: one LintMessage JSON object per line, for PyTorch's lintrunner.

Fields: ``path``, ``line``, ``char`` (1-based, like flake8's column in PyTorch's adapters), ``code``
(the linter's code, ``MPSLINT``: it must match ``code`` in ``.lintrunner.toml``), ``severity`` (error/warning/advice), ``name`` (the rule code and
name), ``description``, and ``original``/``replacement`` (whole-file text) where a safe fix exists.

lintrunner refuses two patches for the same file, so each file's safe fixes are combined into one
patch carried by that file's first fixable finding; the file's other fixable findings say so.
As an adapter mpslint exits 0 in this mode and reports its own failures (unreadable files,
internal errors) as messages without a path, which lintrunner shows as linter failures.
"""

from __future__ import annotations

import json

from ._common import LINTRUNNER_SEVERITY, apply_fixes, safe_fixes_for

LINTER_CODE = "MPSLINT"


def message(path, line, char, severity, name, description, original=None, replacement=None, code=LINTER_CODE) -> dict:
    return {
        "path": path,
        "line": line,
        "char": char,
        "code": code,
        "severity": severity,
        "name": name,
        "original": original,
        "replacement": replacement,
        "description": description,
    }


def failure(text: str, code: str = LINTER_CODE) -> str:
    """A linter failure as lintrunner expects it: no path, severity error."""
    return json.dumps(message(None, None, None, "error", "internal-error", text, code=code)) + "\n"


def render(result, linter_code: str = LINTER_CODE, **_) -> str:
    lines: list[str] = []
    patched: dict[str, tuple[int, int]] = {}  # path -> (line of the finding carrying the patch, fixes)
    for f in result.findings:
        s = f.span
        original = replacement = None
        desc = f.message
        if f.fix is not None and f.fix.applicability == "safe":
            if f.path not in patched:
                src = result.project.sources.get(f.path)
                fixes = safe_fixes_for(result, f.path)
                if src is not None and fixes:
                    new, n = apply_fixes(src.text, fixes)
                    if n and new != src.text:
                        original, replacement = src.text, new
                        patched[f.path] = (s.line, n)
                        desc += f"\n\n`lintrunner -a` applies {n} safe fix{'es' if n != 1 else ''} in this file."
            elif f.path in patched:
                desc += f"\n\nFixed by the patch attached to line {patched[f.path][0]} (`lintrunner -a`)."
        lines.append(
            json.dumps(
                message(
                    f.path,
                    s.line,
                    s.column,
                    LINTRUNNER_SEVERITY[f.severity.value],
                    f"{f.code} {f.name}",
                    desc,
                    original,
                    replacement,
                    code=linter_code,
                )
            )
        )
    for e in result.errors:
        lines.append(json.dumps(message(e.path, e.line or None, None, "warning", "unreadable-file", e.message, code=linter_code)))
    for msg in getattr(result, "problems", []):
        lines.append(failure(msg, linter_code).rstrip("\n"))
    for msg in result.internal_errors:
        lines.append(failure(msg, linter_code).rstrip("\n"))
    return "".join(line + "\n" for line in lines)
