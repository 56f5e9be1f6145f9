"""``--format github``: GitHub Actions workflow commands (``::error file=...::message``).

GitHub shows at most 10 annotations of each level per step, so the most severe come first; when
``$GITHUB_STEP_SUMMARY`` is set the full list is appended to the step summary as a Markdown table.
Paths are relative to the repository root (GitHub resolves them against the checkout).
"""

from __future__ import annotations

import os

from mpslint.model import Severity

from ._common import repo_relative, repo_root

COMMAND = {"error": "error", "warning": "warning", "info": "notice"}
VISIBLE_PER_LEVEL = 10


def escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(s: str) -> str:
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


def command(level: str, message: str, **props) -> str:
    ps = ",".join(f"{k}={escape_property(str(v))}" for k, v in props.items() if v is not None and v != "")
    return f"::{level}{' ' + ps if ps else ''}::{escape_data(message)}"


def _sorted(findings):
    return sorted(findings, key=lambda f: (f.severity.rank, f.sort_key()))


def _md_cell(s: str) -> str:
    return s.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ").replace("<", "&lt;")


def step_summary(result, cwd=None) -> str:
    root = repo_root(cwd)
    fs = _sorted(result.findings)
    counts = {sev: sum(1 for f in fs if f.severity == sev) for sev in Severity}
    lines = ["## mpslint", ""]
    if not fs:
        lines.append(f"No findings in {result.files} file{'s' if result.files != 1 else ''}.")
    else:
        lines.append(
            f"{len(fs)} finding{'s' if len(fs) != 1 else ''}: "
            + ", ".join(f"{n} {sev.value}" for sev, n in counts.items() if n)
            + f" (GitHub shows at most {VISIBLE_PER_LEVEL} annotations per level; all are listed here)."
        )
        lines += ["", "| Severity | Rule | Location | Message |", "|---|---|---|---|"]
        for f in fs:
            loc = f"{repo_relative(f.path, cwd, root)}:{f.span.line}:{f.span.column}"
            lines.append(f"| {f.severity.value} | {f.code} {f.name} | `{_md_cell(loc)}` | {_md_cell(f.message)} |")
    for e in result.errors:
        lines.append(f"\n- could not lint `{_md_cell(str(e))}`")
    return "\n".join(lines) + "\n"


def render(result, cwd=None, **_) -> str:
    root = repo_root(cwd)
    out = []
    for f in _sorted(result.findings):
        s = f.span
        out.append(
            command(
                COMMAND[f.severity.value],
                f.message,
                file=repo_relative(f.path, cwd, root),
                line=s.line,
                endLine=s.end_line,
                col=s.column,
                endColumn=s.end_column if s.end_line == s.line else None,
                title=f"{f.code} {f.name}",
            )
        )
    for e in result.errors:
        out.append(command("warning", e.message, file=repo_relative(e.path, cwd, root), line=e.line or None, title="mpslint: file not linted"))
    for msg in result.internal_errors:
        out.append(command("error", msg.splitlines()[0], title="mpslint internal error"))
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        try:
            with open(summary, "a", encoding="utf-8") as fh:
                fh.write(step_summary(result, cwd))
        except OSError:
            pass
    return "".join(line + "\n" for line in out)
