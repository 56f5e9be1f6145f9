"""mpslint values -> LSP values: spans to ranges (0-based, in the client's code units), findings to
diagnostics, fixes and suppressions to code actions.  No decisions: what to report was decided by the rules."""

from __future__ import annotations

import re

from lsprotocol import types as lsp

from ..model import FileError, Finding, Severity
from ..rule import rule_by_code

SOURCE = "mpslint"
_IGNORE = re.compile(r"(?://|#)\s*mpslint:\s*ignore\[([A-Z0-9_,\s]*?)\s*\]")
_SEVERITY = {
    Severity.ERROR: lsp.DiagnosticSeverity.Error,
    Severity.WARNING: lsp.DiagnosticSeverity.Warning,
    Severity.INFO: lsp.DiagnosticSeverity.Information,
}


class Lines:
    """A text's lines, for converting 1-based character columns to the client's 0-based code units."""

    def __init__(self, text: str, encoding: str = lsp.PositionEncodingKind.Utf16):
        self.lines = text.split("\n")
        self.encoding = getattr(encoding, "value", encoding)  # "utf-8" | "utf-16" | "utf-32"

    def units(self, s: str) -> int:
        if s.isascii():
            return len(s)
        if self.encoding == "utf-8":
            return len(s.encode("utf-8"))
        if self.encoding == "utf-32":
            return len(s)
        return len(s.encode("utf-16-le")) // 2

    def position(self, line: int, column: int) -> lsp.Position:
        """``line``/``column`` 1-based in characters (a ``Span``'s) -> an LSP position."""
        k = min(max(line, 1), len(self.lines)) - 1
        text = self.lines[k]
        return lsp.Position(line=k, character=self.units(text[: max(column, 1) - 1]))

    def char_column(self, pos: lsp.Position) -> tuple[int, int]:
        """An LSP position -> 1-based (line, character column)."""
        k = min(max(pos.line, 0), len(self.lines) - 1)
        text, units, col = self.lines[k], 0, 0
        while col < len(text) and units < pos.character:
            units += self.units(text[col])
            col += 1
        return k + 1, col + 1

    def range(self, line: int, column: int, end_line: int, end_column: int) -> lsp.Range:
        return lsp.Range(start=self.position(line, column), end=self.position(end_line, end_column))


def diagnostic(f: Finding, lines: Lines) -> lsp.Diagnostic:
    s = f.span
    # a fix that edits other files too is not offered (the command line's --fix does not apply those either)
    whole = f.fix is not None and all(e.path == f.path for e in f.fix.edits)
    data = {"code": f.code, "fix": _fix_data(f) if whole else None}
    return lsp.Diagnostic(
        range=lines.range(s.line, s.column, s.end_line, s.end_column),
        message=f.message,
        severity=_SEVERITY.get(f.severity, lsp.DiagnosticSeverity.Warning),
        code=f.code,
        source=SOURCE,
        data=data,
    )


def file_error_diagnostic(e: FileError, lines: Lines) -> lsp.Diagnostic:
    """A problem with the input itself (a yaml that does not load, a file skipped): one diagnostic on its line."""
    line = max(e.line, 1)
    return lsp.Diagnostic(range=lines.range(line, 1, line, 1), message=e.message, severity=lsp.DiagnosticSeverity.Error, source=SOURCE)


def _fix_data(f: Finding) -> dict:
    return {
        "message": f.fix.message,
        "applicability": f.fix.applicability,
        "edits": [[e.line, e.column, e.end_line, e.end_column, e.content] for e in f.fix.edits],
    }


def _text_edit(lines: Lines, line: int, column: int, end_line: int, end_column: int, content: str) -> lsp.TextEdit:
    return lsp.TextEdit(range=lines.range(line, column, end_line, end_column), new_text=content)


def fix_action(uri: str, diag: lsp.Diagnostic, lines: Lines) -> lsp.CodeAction | None:
    """The finding's fix as a quick fix: safe ones preferred, unsafe ones labelled."""
    data = diag.data if isinstance(diag.data, dict) else {}
    fix = data.get("fix")
    if not isinstance(fix, dict) or not fix.get("edits"):
        return None
    unsafe = fix.get("applicability") != "safe"
    edits = [_text_edit(lines, *e) for e in fix["edits"]]
    title = f"{data.get('code', '')}: {fix.get('message', 'Apply fix')}" + (" (unsafe)" if unsafe else "")
    return lsp.CodeAction(
        title=title,
        kind=lsp.CodeActionKind.QuickFix,
        diagnostics=[diag],
        is_preferred=not unsafe,
        edit=lsp.WorkspaceEdit(changes={uri: edits}),
    )


def comment_prefix(kind: str) -> str:
    """``#`` in yaml and Python, ``//`` elsewhere (as ``mpslint.suppressions`` reads them)."""
    return "#" if kind in ("yaml", "python", "common_mps") else "//"


def suppress_action(uri: str, diag: lsp.Diagnostic, lines: Lines, kind: str) -> lsp.CodeAction | None:
    """"Suppress CODE on this line": ``// mpslint: ignore[CODE]`` at the end of the finding's first line
    (the code added to an ignore comment already there)."""
    code = diag.code if isinstance(diag.code, str) else None
    if not code:
        return None
    k = diag.range.start.line
    if k >= len(lines.lines):
        return None
    text = lines.lines[k]
    m = _IGNORE.search(text)
    if m is not None:  # add the code to the line's ignore comment
        col = m.end(1) + 1
        edit = _text_edit(lines, k + 1, col, k + 1, col, f", {code}")
    else:
        end = len(text.rstrip())
        sep = "  " if end else ""
        edit = _text_edit(lines, k + 1, end + 1, k + 1, len(text) + 1, f"{sep}{comment_prefix(kind)} mpslint: ignore[{code}]")
    return lsp.CodeAction(
        title=f"Suppress {code} on this line",
        kind=lsp.CodeActionKind.QuickFix,
        diagnostics=[diag],
        is_preferred=False,
        edit=lsp.WorkspaceEdit(changes={uri: [edit]}),
    )


def hover_markdown(code: str) -> str | None:
    """The rule's documentation page (what ``mpslint rule CODE`` prints)."""
    rule = rule_by_code(code)
    if rule is None:
        return None
    status = "enabled by default" if rule.default_enabled else f"opt-in: enable with `--select {rule.code}`"
    head = f"# {rule.code} {rule.name}\n\nSeverity: {rule.severity.value}; {status}" + (f"; fix: {rule.fixable}" if rule.fixable else "")
    return f"{head}\n\n{rule.summary}\n\n{rule.doc()}"
