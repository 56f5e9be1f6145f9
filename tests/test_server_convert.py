"""``mpslint.server.convert``: 1-based character spans to LSP positions in each encoding, and the
suppression edit."""

from __future__ import annotations

import pytest

lsp = pytest.importorskip("lsprotocol.types")

from mpslint.server.convert import Lines, suppress_action  # noqa: E402

TEXT = "a\u00e9\U0001f600b = x;\nnext"  # é: 1 UTF-16 unit, 2 UTF-8 bytes; U+1F600: 2 units, 4 bytes


@pytest.mark.parametrize("encoding,column", [(lsp.PositionEncodingKind.Utf16, 4), (lsp.PositionEncodingKind.Utf8, 7), (lsp.PositionEncodingKind.Utf32, 3)])
def test_columns_after_non_ascii_text(encoding, column):
    lines = Lines(TEXT, encoding)
    pos = lines.position(1, 4)  # the `b`
    assert (pos.line, pos.character) == (0, column)
    assert lines.char_column(pos) == (1, 4)
    assert lines.position(2, 1) == lsp.Position(line=1, character=0)


def _diag(line: int, code: str) -> lsp.Diagnostic:
    r = lsp.Range(start=lsp.Position(line=line, character=2), end=lsp.Position(line=line, character=3))
    return lsp.Diagnostic(range=r, message="m", code=code, source="mpslint")


def _apply(text: str, action) -> str:
    (edit,) = next(iter(action.edit.changes.values()))
    lines = text.split("\n")
    k = edit.range.start.line
    s, e = edit.range.start.character, edit.range.end.character
    lines[k] = lines[k][:s] + edit.new_text + lines[k][e:]
    return "\n".join(lines)


def test_suppress_appends_or_extends_the_ignore_comment():
    text = "int a = 1;   \nint b = 2; // mpslint: ignore[MPS101]\n"
    lines = Lines(text)
    first = _apply(text, suppress_action("file:///x.mm", _diag(0, "MPS102"), lines, "host"))
    assert first.split("\n")[0] == "int a = 1;  // mpslint: ignore[MPS102]"
    second = _apply(text, suppress_action("file:///x.mm", _diag(1, "MPS102"), lines, "host"))
    assert second.split("\n")[1] == "int b = 2; // mpslint: ignore[MPS101, MPS102]"
    from mpslint.suppressions import Suppressions

    assert Suppressions(second).suppressed("MPS102", 2) and Suppressions(second).suppressed("MPS101", 2)
    yaml = "  MPS: foo_mps\n"
    got = _apply(yaml, suppress_action("file:///n.yaml", _diag(0, "DSP301"), Lines(yaml), "yaml"))
    assert got.split("\n")[0] == "  MPS: foo_mps  # mpslint: ignore[DSP301]"
