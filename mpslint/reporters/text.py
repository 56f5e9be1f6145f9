"""``--format text``: ruff-style ``path:line:col: CODE message`` lines and a summary."""

from __future__ import annotations

from collections import Counter

import click


def render(result, color: bool = False, statistics: bool = False, **_) -> str:
    def style(s, **kw):
        return click.style(s, **kw) if color else s

    lines = []
    for f in result.findings:
        s = f.span
        fix = " [*]" if f.fix is not None and f.fix.applicability == "safe" else ""
        sev = {"error": "red", "warning": "yellow", "info": "cyan"}[f.severity.value]
        lines.append(
            f"{style(f.path, bold=True)}:{s.line}:{s.column}: {style(f.code, fg=sev, bold=True)}{fix} {f.message}"
        )
    if statistics:
        counts = Counter((f.code, f.name) for f in result.findings)
        if lines:
            lines.append("")
        for (code, name), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][0])):
            lines.append(f"{n:5d}\t{code}\t{name}")
    n = len(result.findings)
    if n:
        fixable = sum(1 for f in result.findings if f.fix is not None and f.fix.applicability == "safe")
        lines.append(f"Found {n} finding{'s' if n != 1 else ''} in {result.files} file{'s' if result.files != 1 else ''}.")
        if fixable:
            lines.append(f"[*] {fixable} with a safe automatic fix.")
    elif result.files == 0:
        lines.append("No files to lint.")
    elif any(e.fatal for e in result.errors):
        bad = len({e.path for e in result.errors if e.fatal})
        lines.append(f"No findings, but {bad} of {result.files} file{'s' if result.files != 1 else ''} could not be linted (see the errors above).")
    else:
        lines.append(style(f"All checks passed ({result.files} file{'s' if result.files != 1 else ''}).", fg="green"))
    return "\n".join(lines) + "\n"


def statistics_text(result) -> str:
    """``--statistics`` for the machine formats (printed to stderr): counts per rule, most frequent first."""
    counts = Counter((f.code, f.name) for f in result.findings)
    lines = [f"{n:5d}\t{code}\t{name}" for (code, name), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][0]))]
    lines.append(f"Found {len(result.findings)} finding{'s' if len(result.findings) != 1 else ''} in {result.files} file{'s' if result.files != 1 else ''}.")
    return "\n".join(lines) + "\n"
