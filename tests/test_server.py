"""``mpslint server`` end to end: a real LSP client (pytest-lsp) talking JSON-RPC to ``python -m mpslint server``."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pygls")
pytest_lsp = pytest.importorskip("pytest_lsp")

from lsprotocol import types as lsp  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient  # noqa: E402

from .conftest import FIXTURES, ROOT  # noqa: E402

OPS = "src/ATen/native/mps/operations"
YAML = "src/ATen/native/native_functions.yaml"
TIMEOUT = 30


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "aten"
    shutil.copytree(FIXTURES / "aten", root)
    (root / "pyproject.toml").write_text('[tool.mpslint]\nextend-select = ["DSP301"]\n')  # the cross-file canary (opt-in)
    return root


def make_client() -> LanguageClient:
    """pytest-lsp's test client, whose publishDiagnostics handler also queues every notification per
    document, so that two arriving back to back (a yaml edit re-lints the open .mm) are both seen."""
    from pytest_lsp.client import DEFAULT_CLIENT_FEATURES, register_lsp_features

    client = pytest_lsp.make_test_lsp_client()
    client.published = {}  # uri -> asyncio.Queue of diagnostics lists
    default = DEFAULT_CLIENT_FEATURES[lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def record(client: LanguageClient, params: lsp.PublishDiagnosticsParams):
        default(client, params)
        client.published.setdefault(params.uri, asyncio.Queue()).put_nowait(params.diagnostics)

    client.protocol.fm.features.pop(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS, None)
    register_lsp_features(client, {lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS: record})
    return client


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "mpslint", "server"], client_factory=make_client))
async def client(lsp_client: LanguageClient, tree: Path):
    await lsp_client.initialize_session(
        lsp.InitializeParams(
            capabilities=lsp.ClientCapabilities(general=lsp.GeneralClientCapabilities(position_encodings=[lsp.PositionEncodingKind.Utf16])),
            root_uri=tree.as_uri(),
            workspace_folders=[lsp.WorkspaceFolder(uri=tree.as_uri(), name="aten")],
            initialization_options={"cacheDir": str(tree.parent / "cache"), "debounceMs": 50},
        )
    )
    yield
    await lsp_client.shutdown_session()


def check_json(tree: Path, rel: str) -> list[dict]:
    """What ``mpslint check ROOT --format json`` reports for one file of the tree."""
    out = subprocess.run([sys.executable, "-m", "mpslint", "check", ".", "--format", "json", "--no-cache"], cwd=tree, capture_output=True, text=True, check=False)
    assert out.returncode in (0, 1), out.stderr
    return [f for f in json.loads(out.stdout) if f["path"] == rel]


async def diagnostics_for(client: LanguageClient, uri: str, *, after=None) -> list[lsp.Diagnostic]:
    """The next publishDiagnostics of ``uri`` after what was already taken (``after`` sends the message
    that should cause it)."""
    queue = client.published.setdefault(uri, asyncio.Queue())
    assert queue.empty(), f"unexpected publishDiagnostics for {uri}"
    if after is not None:
        after()
    return await asyncio.wait_for(queue.get(), TIMEOUT)


def open_doc(client: LanguageClient, path: Path, text: str | None = None, language: str = "objective-cpp") -> str:
    uri = path.as_uri()
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(
        text_document=lsp.TextDocumentItem(uri=uri, language_id=language, version=1, text=path.read_text(encoding="utf-8") if text is None else text)))
    return uri


def change_doc(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(lsp.DidChangeTextDocumentParams(
        text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=text)]))


def key(d: lsp.Diagnostic) -> tuple:
    r = d.range
    return (d.code, r.start.line, r.start.character, r.end.line, r.end.character)


def apply_text_edits(text: str, edits: list[lsp.TextEdit]) -> str:
    """Apply LSP edits (ASCII text: UTF-16 units are characters) from the end backwards."""
    lines = text.split("\n")
    starts = [0]
    for line in lines[:-1]:
        starts.append(starts[-1] + len(line) + 1)

    def off(p: lsp.Position) -> int:
        return starts[p.line] + p.character

    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[: off(e.range.start)] + e.new_text + text[off(e.range.end) :]
    return text


@pytest.mark.asyncio
async def test_open_gives_check_diagnostics_with_exact_ranges(client: LanguageClient, tree: Path):
    rel = f"{OPS}/Shape.mm"
    want = check_json(tree, rel)
    assert want, "the fixture has findings"
    diags = await diagnostics_for(client, (tree / rel).as_uri(), after=lambda: open_doc(client, tree / rel))
    got = sorted(key(d) for d in diags)
    assert got == sorted((f["code"], f["line"] - 1, f["column"] - 1, f["end_line"] - 1, f["end_column"] - 1) for f in want)
    assert all(d.source == "mpslint" and d.message for d in diags)
    assert {d.message for d in diags} == {f["message"] for f in want}


@pytest.mark.asyncio
async def test_change_that_fixes_the_line_clears_it_and_columns_are_utf16(client: LanguageClient, tree: Path):
    path = tree / OPS / "Shape.mm"
    text = path.read_text(encoding="utf-8")
    uri = path.as_uri()
    first = await diagnostics_for(client, uri, after=lambda: open_doc(client, path))
    line10 = [d for d in first if d.range.start.line == 9 and d.code == "MPS102"]
    assert len(line10) == 1
    col = line10[0].range.start.character
    lines = text.split("\n")
    # a comment with a two-unit character (U+1F600) and a one-unit one before the finding
    prefix = "/* é😀 */ "
    lines[9] = prefix + lines[9]
    moved = await diagnostics_for(client, uri, after=lambda: change_doc(client, uri, 2, "\n".join(lines)))
    hit = [d for d in moved if d.range.start.line == 9 and d.code == "MPS102"]
    assert len(hit) == 1 and hit[0].range.start.character == col + len(prefix) + 1
    # the line no longer narrows: its diagnostic goes, the others stay
    lines[9] = "  const int64_t numel = in.numel();"
    fixed = await diagnostics_for(client, uri, after=lambda: change_doc(client, uri, 3, "\n".join(lines)))
    assert not [d for d in fixed if d.range.start.line == 9]
    assert {key(d) for d in fixed} == {key(d) for d in first if d.range.start.line != 9}


@pytest.mark.asyncio
async def test_code_action_applies_the_safe_fix(client: LanguageClient, tree: Path):
    path = tree / OPS / "Shape.mm"
    text = path.read_text(encoding="utf-8")
    uri = path.as_uri()
    diags = await diagnostics_for(client, uri, after=lambda: open_doc(client, path))
    target = next(d for d in diags if d.code == "MPS102" and d.range.start.line == 9)
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), range=target.range,
        context=lsp.CodeActionContext(diagnostics=[target], only=[lsp.CodeActionKind.QuickFix])))
    refactors = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), range=target.range,
        context=lsp.CodeActionContext(diagnostics=[target], only=[lsp.CodeActionKind.Refactor])))
    assert not refactors
    fixes = [a for a in actions if a.title.startswith("MPS102") and a.is_preferred]
    assert len(fixes) == 1 and "(unsafe)" not in fixes[0].title
    suppress = [a for a in actions if a.title == "Suppress MPS102 on this line"]
    assert len(suppress) == 1 and not suppress[0].is_preferred
    new = apply_text_edits(text, fixes[0].edit.changes[uri])
    assert new != text
    after = await diagnostics_for(client, uri, after=lambda: change_doc(client, uri, 2, new))
    assert not [d for d in after if d.code == "MPS102" and d.range.start.line == 9]
    # the suppression comment silences the finding too
    suppressed = apply_text_edits(text, suppress[0].edit.changes[uri])
    assert "// mpslint: ignore[MPS102]" in suppressed.split("\n")[9]
    after = await diagnostics_for(client, uri, after=lambda: change_doc(client, uri, 3, suppressed))
    assert not [d for d in after if d.code == "MPS102" and d.range.start.line == 9]


@pytest.mark.asyncio
async def test_unsafe_fix_is_labelled(client: LanguageClient, tree: Path):
    path = tree / OPS / "LargeTensor.mm"
    uri = path.as_uri()
    diags = await diagnostics_for(client, uri, after=lambda: open_doc(client, path))
    target = next(d for d in diags if d.code == "MPS106")
    actions = await client.text_document_code_action_async(lsp.CodeActionParams(
        text_document=lsp.TextDocumentIdentifier(uri=uri), range=target.range, context=lsp.CodeActionContext(diagnostics=[target])))
    unsafe = [a for a in actions if a.title.startswith("MPS106")]
    assert unsafe and all(a.title.endswith("(unsafe)") and not a.is_preferred for a in unsafe)


@pytest.mark.asyncio
async def test_yaml_change_updates_an_mm_diagnostic(client: LanguageClient, tree: Path):
    mm = tree / OPS / "BinaryOps.mm"
    mm_uri = mm.as_uri()
    before = await diagnostics_for(client, mm_uri, after=lambda: open_doc(client, mm))
    assert [d for d in before if d.code == "DSP301" and d.range.start.line == 33]  # copysign.Scalar_out still on MPSGraph
    yaml_path = tree / YAML
    text = yaml_path.read_text(encoding="utf-8")
    yaml_uri = yaml_path.as_uri()
    await diagnostics_for(client, yaml_uri, after=lambda: open_doc(client, yaml_path, language="yaml"))
    # migrate copysign.Scalar_out in the (unsaved) yaml: MPS shares the CPU/CUDA kernel
    migrated = text.replace("    CPU, CUDA: copysign_Scalar_out\n    MPS: copysign_Scalar_out_mps  # expect: DSP301\n", "    CPU, CUDA, MPS: copysign_Scalar_out\n")
    assert migrated != text
    after = await diagnostics_for(client, mm_uri, after=lambda: change_doc(client, yaml_uri, 2, migrated))
    assert not [d for d in after if d.code == "DSP301" and d.range.start.line == 33]
    assert yaml_path.read_text(encoding="utf-8") == text  # nothing written


@pytest.mark.asyncio
async def test_hover_on_a_diagnostic_shows_the_rule_page(client: LanguageClient, tree: Path):
    from mpslint.rule import rule_by_code

    path = tree / OPS / "Shape.mm"
    uri = path.as_uri()
    diags = await diagnostics_for(client, uri, after=lambda: open_doc(client, path))
    d = next(d for d in diags if d.code == "MPS102")
    hover = await client.text_document_hover_async(lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=d.range.start))
    assert hover is not None and rule_by_code("MPS102").doc() in hover.contents.value
    nothing = await client.text_document_hover_async(lsp.HoverParams(text_document=lsp.TextDocumentIdentifier(uri=uri), position=lsp.Position(line=0, character=0)))
    assert nothing is None


@pytest.mark.asyncio
async def test_binary_buffer_is_one_log_message_and_the_server_keeps_answering(client: LanguageClient, tree: Path):
    path = tree / OPS / "Shape.mm"
    uri = path.as_uri()
    diags = await diagnostics_for(client, uri, after=lambda: open_doc(client, path, text="\x00\x01garbage\x00" * 50))
    assert list(diags) == []
    assert [m.type for m in client.log_messages if "binary" in m.message] == [lsp.MessageType.Warning]
    again = await diagnostics_for(client, uri, after=lambda: change_doc(client, uri, 2, "\x00still binary"))
    assert list(again) == [] and len([m for m in client.log_messages if "binary" in m.message]) == 1  # said once
    # a file that breaks the parsers, then a good one: answers keep coming
    other = tree / OPS / "Broken.mm"
    await diagnostics_for(client, other.as_uri(), after=lambda: open_doc(client, other, text="@interface {{{ [[[ ^(){ @\"" * 200))
    good = tree / OPS / "CeilDiv.mm"
    diags = await diagnostics_for(client, good.as_uri(), after=lambda: open_doc(client, good))
    assert any(d.code == "MPS109" for d in diags)


def test_an_internal_error_is_one_log_message_not_a_crash(tmp_path: Path):
    """In process: a handler whose analysis raises logs one message and returns nothing."""
    from mpslint.server.server import _guarded_call, build_server

    server = build_server()
    logged: list[lsp.LogMessageParams] = []
    server.window_log_message = logged.append

    def broken(uri):
        raise RuntimeError("boom")

    assert _guarded_call(server, broken)("file:///x.mm") is None
    assert len(logged) == 1 and logged[0].type == lsp.MessageType.Error
    assert "internal error in broken: RuntimeError: boom" in logged[0].message


def test_settings_from_client_options():
    from mpslint.server.workspace import Settings

    s, problems = Settings.from_options({"select": ["MPS1"], "debounceMs": 80, "scope": "tree", "bogus": 1, "noCache": "yes"})
    assert s.select == ["MPS1"] and s.debounce_ms == 80 and s.scope == "tree" and s.no_cache is False
    assert len(problems) == 2 and any("bogus" in p for p in problems) and any("noCache" in p for p in problems)
    assert Settings.from_options(None) == (Settings(), [])


@pytest.mark.asyncio
async def test_a_file_changed_on_disk_updates_the_open_files(client: LanguageClient, tree: Path):
    mm = tree / OPS / "BinaryOps.mm"
    mm_uri = mm.as_uri()
    before = await diagnostics_for(client, mm_uri, after=lambda: open_doc(client, mm))
    assert [d for d in before if d.code == "DSP301" and d.range.start.line == 33]
    yaml_path = tree / YAML  # not open: a git checkout rewrites it
    text = yaml_path.read_text(encoding="utf-8")
    yaml_path.write_text(text.replace("    CPU, CUDA: copysign_Scalar_out\n    MPS: copysign_Scalar_out_mps  # expect: DSP301\n", "    CPU, CUDA, MPS: copysign_Scalar_out\n"), encoding="utf-8")
    after = await diagnostics_for(client, mm_uri, after=lambda: client.workspace_did_change_watched_files(lsp.DidChangeWatchedFilesParams(
        changes=[lsp.FileEvent(uri=yaml_path.as_uri(), type=lsp.FileChangeType.Changed)])))
    assert not [d for d in after if d.code == "DSP301" and d.range.start.line == 33]
