"""The language server: LSP messages in, ``Workspace`` calls, diagnostics and code actions out.

Wiring only: the analysis is ``workspace.Workspace``, the conversions ``convert``.  Every handler runs
inside ``_guard``: whatever goes wrong becomes one ``window/logMessage`` and the server keeps answering.
"""

from __future__ import annotations

import asyncio
import traceback
from functools import wraps

from lsprotocol import types as lsp
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from .. import __version__
from . import convert
from .workspace import Settings, Workspace


class MpslintServer(LanguageServer):
    def __init__(self):
        super().__init__("mpslint", __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Incremental)
        self.state: Workspace | None = None
        self.settings = Settings()
        self.root: str | None = None
        self.pending: dict[str, asyncio.TimerHandle] = {}
        self.published: dict[str, list[lsp.Diagnostic]] = {}  # uri -> what the client shows
        self.kinds: dict[str, str] = {}  # uri -> source kind (for the suppression comment)
        self.init_options = None  # the client's initializationOptions (read when the workspace loads)
        self.logged: set[str] = set()  # error messages already sent
        self.refused: dict[str, str | None] = {}  # uri -> why its buffer could not be linted (logged once)

    # ------------------------------------------------------------------ logging
    def log(self, message: str, level: lsp.MessageType = lsp.MessageType.Error) -> None:
        if level == lsp.MessageType.Error:  # the same failure on every keystroke is said once
            if message in self.logged:
                return
            self.logged.add(message)
        try:
            self.window_log_message(lsp.LogMessageParams(type=level, message=f"mpslint: {message}"))
        except Exception:  # no client to tell: nothing else to do
            pass

    def report_server_error(self, error, source):
        """pygls' own failures (a message it cannot parse or answer): one log line, never a pop-up."""
        self.log(f"internal error: {type(error).__name__}: {error}")

    # ------------------------------------------------------------------ analysis
    def start(self) -> None:
        settings, problems = Settings.from_options(self.init_options)
        self.settings = settings
        for p in problems:
            self.log(p, lsp.MessageType.Warning)
        if self.root is None:
            self.log("no workspace folder: the dispatch graph is built from the open files' own tree", lsp.MessageType.Warning)
            return
        self.state = Workspace(self.root, settings)
        if self.state.problems:
            self.log("; ".join(p.splitlines()[0] for p in self.state.problems), lsp.MessageType.Warning)

    def ensure_state(self, fs_path: str) -> Workspace | None:
        if self.state is None and self.root is None:
            # no workspace folder: the file's own checkout (the folder holding aten/, else its directory)
            from pathlib import Path

            from ..discovery import NATIVE_FUNCTIONS_REL

            p = Path(fs_path).resolve().parent
            root = next((a for a in [p, *p.parents] if (a / NATIVE_FUNCTIONS_REL).is_file() or (a / ".git").exists()), p)
            self.root = str(root)
            self.state = Workspace(root, self.settings)
        return self.state

    def lintable(self, uri: str) -> bool:
        doc = self.workspace.get_text_document(uri)
        if doc.path is None:
            return False
        state = self.ensure_state(doc.path)
        d = state.discovered(doc.path) if state is not None else None
        if d is None:
            return False
        if d.kind == "python" and "compile_shader" not in doc.source:
            return False  # Python is linted for the Metal it hands to torch.mps.compile_shader
        self.kinds[uri] = d.kind
        return True

    def refresh(self, uri: str) -> None:
        """Re-analyse one document from its buffer and publish; a yaml change re-lints every open document."""
        self.pending.pop(uri, None)
        if uri not in self.workspace.text_documents:
            return
        if not self.lintable(uri):
            if self.kinds.pop(uri, None) is not None:  # no longer linted (its compile_shader call was deleted)
                self.published.pop(uri, None)
                self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
            return
        doc = self.workspace.get_text_document(uri)
        changed, internal = self.state.update(doc.path, doc.source)
        for msg in internal:
            self.log(msg)
        self.publish(uri)
        if changed and self.kinds.get(uri) == "yaml":
            self.publish_others(uri)

    def publish_others(self, uri: str) -> None:
        for other in list(self.workspace.text_documents):
            if other != uri and other in self.kinds:
                self.publish(other)

    def publish(self, uri: str) -> None:
        doc = self.workspace.get_text_document(uri)
        outcome = self.state.lint(doc.path)
        for msg in outcome.internal:
            self.log(msg)
        lines = convert.Lines(doc.source, self.workspace.position_encoding or lsp.PositionEncodingKind.Utf16)
        diags = [convert.diagnostic(f, lines) for f in outcome.findings]
        fatal = [str(e) for e in outcome.errors if e.fatal]
        if fatal and self.refused.get(uri) != fatal[0]:  # nothing of the buffer could be linted: say so once
            self.log(fatal[0], lsp.MessageType.Warning)
        self.refused[uri] = fatal[0] if fatal else None
        diags += [convert.file_error_diagnostic(e, lines) for e in outcome.errors if not e.fatal]
        self.published[uri] = diags
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diags, version=doc.version))

    def files_changed(self, changes: list[lsp.FileEvent]) -> None:
        """Files changed on disk behind the editor (a git checkout): re-read those not open, re-lint the open ones."""
        if self.state is None:
            return
        any_changed = False
        for ch in changes:
            path = to_fs_path(ch.uri)
            if ch.uri in self.workspace.text_documents or not path:
                continue  # an open buffer is what the user sees: it wins over the disk
            changed, internal = self.state.reread(path)
            for msg in internal:
                self.log(msg)
            any_changed |= changed
        if any_changed:
            for uri in list(self.kinds):
                if uri in self.workspace.text_documents:
                    self.publish(uri)

    def watch(self) -> None:
        """Ask the client to report changes of the files mpslint reads, when it can (dynamic registration)."""
        ws = self.client_capabilities.workspace
        dcw = ws.did_change_watched_files if ws is not None else None
        if dcw is None or not dcw.dynamic_registration:
            return
        globs = ["**/*.mm", "**/*.metal", "**/*.h", "**/*.hpp", "**/*.cpp", "**/native_functions.yaml", "**/common_mps.py"]
        options = lsp.DidChangeWatchedFilesRegistrationOptions(watchers=[lsp.FileSystemWatcher(glob_pattern=g) for g in globs])
        reg = lsp.Registration(id="mpslint-watch", method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=options)
        self.client_register_capability(lsp.RegistrationParams(registrations=[reg]))

    def schedule(self, uri: str) -> None:
        old = self.pending.pop(uri, None)
        if old is not None:
            old.cancel()
        loop = asyncio.get_running_loop()
        self.pending[uri] = loop.call_later(self.settings.debounce_ms / 1000, _guarded_call(self, self.refresh), uri)

    def close(self, uri: str) -> None:
        old = self.pending.pop(uri, None)
        if old is not None:
            old.cancel()
        self.published.pop(uri, None)
        self.refused.pop(uri, None)
        kind = self.kinds.pop(uri, None)
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))
        path = to_fs_path(uri)
        if self.state is not None and path and kind is not None:
            changed, internal = self.state.update(path, None)  # the file on disk is context again
            for msg in internal:
                self.log(msg)
            if changed and kind == "yaml":
                self.publish_others(uri)

    # ------------------------------------------------------------------ requests
    def code_actions(self, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
        uri = params.text_document.uri
        if uri not in self.workspace.text_documents:
            return []
        doc = self.workspace.get_text_document(uri)
        lines = convert.Lines(doc.source, self.workspace.position_encoding or lsp.PositionEncodingKind.Utf16)
        fixes, suppressions = [], []
        for diag in self.published.get(uri, []):
            if not _overlaps(diag.range, params.range):
                continue
            action = convert.fix_action(uri, diag, lines)
            if action is not None:
                fixes.append(action)
            action = convert.suppress_action(uri, diag, lines, self.kinds.get(uri, "host"))
            if action is not None:
                suppressions.append(action)
        only = params.context.only
        out = fixes + suppressions
        if only:  # "quickfix" asks for quick fixes, "" or a parent kind for everything under it
            out = [a for a in out if any(_kind(a.kind) == _kind(k) or _kind(a.kind).startswith(_kind(k) + ".") or not _kind(k) for k in only)]
        return out

    def hover(self, params: lsp.HoverParams) -> lsp.Hover | None:
        uri = params.text_document.uri
        pos = params.position
        codes = []
        for diag in self.published.get(uri, []):
            if _contains(diag.range, pos) and isinstance(diag.code, str) and diag.code not in codes:
                codes.append(diag.code)
        pages = [p for p in (convert.hover_markdown(c) for c in codes) if p]
        if not pages:
            return None
        return lsp.Hover(contents=lsp.MarkupContent(kind=lsp.MarkupKind.Markdown, value="\n\n---\n\n".join(pages)))


def _kind(kind) -> str:
    return getattr(kind, "value", kind) or ""


def _overlaps(a: lsp.Range, b: lsp.Range) -> bool:
    return (a.start.line, a.start.character) <= (b.end.line, b.end.character) and (b.start.line, b.start.character) <= (a.end.line, a.end.character)


def _contains(r: lsp.Range, p: lsp.Position) -> bool:
    return (r.start.line, r.start.character) <= (p.line, p.character) <= (r.end.line, r.end.character)


def _guarded_call(server: MpslintServer, fn):
    @wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # never a crash: one log message with where it happened
            tb = traceback.format_exc(limit=6)
            server.log(f"internal error in {fn.__name__}: {type(e).__name__}: {e}\n{tb}")
            return None

    return call


def build_server() -> MpslintServer:
    server = MpslintServer()
    guard = lambda fn: _guarded_call(server, fn)  # noqa: E731

    @server.feature(lsp.INITIALIZE)
    @guard
    def initialize(params: lsp.InitializeParams):
        folders = params.workspace_folders or []
        uri = folders[0].uri if folders else params.root_uri
        server.root = to_fs_path(uri) if uri else params.root_path
        server.init_options = params.initialization_options

    @server.feature(lsp.INITIALIZED)
    @guard
    def initialized(params: lsp.InitializedParams):
        server.start()
        server.watch()

    @server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
    @guard
    def did_open(params: lsp.DidOpenTextDocumentParams):
        server.refresh(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
    @guard
    def did_change(params: lsp.DidChangeTextDocumentParams):
        server.schedule(params.text_document.uri)

    @server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
    @guard
    def did_save(params: lsp.DidSaveTextDocumentParams):
        uri = params.text_document.uri
        old = server.pending.pop(uri, None)
        if old is not None:
            old.cancel()
        server.refresh(uri)
        if uri in server.kinds and server.kinds[uri] != "yaml":
            server.publish_others(uri)  # a saved file is context for the other open files

    @server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
    @guard
    def did_close(params: lsp.DidCloseTextDocumentParams):
        server.close(params.text_document.uri)

    @server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    @guard
    def did_change_watched_files(params: lsp.DidChangeWatchedFilesParams):
        server.files_changed(params.changes)

    @server.feature(lsp.TEXT_DOCUMENT_CODE_ACTION, lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix]))
    @guard
    def code_action(params: lsp.CodeActionParams):
        return server.code_actions(params)

    @server.feature(lsp.TEXT_DOCUMENT_HOVER)
    @guard
    def hover(params: lsp.HoverParams):
        return server.hover(params)

    return server


def main() -> None:
    build_server().start_io()
