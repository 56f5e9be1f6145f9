"""The server's analysis state: every file's facts loaded once, open buffers overlaid, one file re-linted.

``Workspace(root, settings)`` discovers the tree under ``root`` as ``mpslint check ROOT`` does (the
``[tool.mpslint]`` configuration, its exclusions and selection, the yaml found by walking up), reads
every file's facts through the facts cache and keeps them in memory.  ``update(path, text)`` replaces
one file's facts with those of an unsaved buffer (only that file is re-analysed); ``lint(path)``
assembles a project from the kept facts and runs the selected rules with only that file linted
(``engine.check_project``: the same rules, suppressions and per-file ignores as ``check``).

Scope: ``"tree"`` assembles every file of the tree; ``"neighbourhood"`` (the default) only the file,
the yaml and the files it is connected to in the dispatch graph (``scope.Neighbourhood``), which is what
keeps a large tree's latency down.  The yaml and ``common_mps.py`` are always linted against the whole tree;
a file ``check ROOT`` would not read (a Python file calling ``compile_shader``) is linted as ``check FILE``
lints it, with the yaml as context.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..cache import FactsCache, resolve_cache_dir
from ..config import Config, ConfigError, find_pyproject, load_config
from ..discovery import Discovered, discover, display_path, kind_of
from ..engine import Entry, LintOptions, check_project, context_files, gc_paused, read_entries, selected_rules
from ..model import FileError, Finding
from ..parallel import analyse
from ..project import Project, add_facts, build_graph, read_source
from .scope import Neighbourhood

SCOPES = ("neighbourhood", "tree")


@dataclass
class Settings:
    """What a client may set (``initializationOptions``, camelCase keys); the configuration file is read too."""

    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    native_functions: str | None = None
    cache_dir: str | None = None
    no_cache: bool = False
    scope: str = "neighbourhood"
    debounce_ms: int = 200

    @classmethod
    def from_options(cls, raw) -> tuple["Settings", list[str]]:
        """Settings from a client's options; unknown keys and bad values are problems, never fatal."""
        s, problems = cls(), []
        if not isinstance(raw, dict):
            return s, ([] if raw is None else ["initializationOptions must be an object; ignored"])
        keys = {"select": "select", "extendSelect": "extend_select", "ignore": "ignore", "nativeFunctions": "native_functions",
                "cacheDir": "cache_dir", "noCache": "no_cache", "scope": "scope", "debounceMs": "debounce_ms"}
        for k, v in raw.items():
            attr = keys.get(k)
            if attr is None:
                problems.append(f"unknown option {k!r}; ignored")
                continue
            default = getattr(cls(), attr)
            if attr in ("select", "extend_select", "ignore"):
                ok = isinstance(v, list) and all(isinstance(x, str) for x in v)
            elif attr == "no_cache":
                ok = isinstance(v, bool)
            elif attr == "debounce_ms":
                ok = isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= 10_000
            elif attr == "scope":
                ok = v in SCOPES
            else:
                ok = isinstance(v, str) or (v is None and default is None)
            if ok:
                setattr(s, attr, v)
            else:
                problems.append(f"option {k!r}: bad value {v!r}; using {default!r}")
        return s, problems


@dataclass
class Outcome:
    """One file's lint: findings, the file's own input errors, and mpslint's failures (for the log)."""

    findings: list[Finding]
    errors: list[FileError]
    internal: list[str]


class Workspace:
    def __init__(self, root: str | Path, settings: Settings | None = None):
        self.root = Path(root).resolve()
        self.settings = settings or Settings()
        self.problems: list[str] = []  # for the log: configuration and reading problems
        self.config = self._config()
        self.opts = LintOptions(
            paths=[str(self.root)], config=self.config, native_functions=self.settings.native_functions,
            select=self.settings.select, extend_select=list(self.settings.extend_select), ignore=list(self.settings.ignore), cwd=self.root,
        )
        self.rules = selected_rules(self.opts)
        cdir = resolve_cache_dir(self.settings.cache_dir, self.settings.no_cache, self.config.path.parent if self.config.path else self.root)
        self.cache = FactsCache(cdir) if cdir is not None else None
        self.entries: dict[str, Entry] = {}  # reported path -> what the project is assembled from
        self.disk_errors: dict[str, FileError] = {}
        self._neighbourhood: Neighbourhood | None = None
        self.load()

    # ------------------------------------------------------------------ loading
    def _config(self) -> Config:
        try:
            return load_config(find_pyproject(self.root))
        except ConfigError as e:
            self.problems.append(f"{e}; using the defaults")
            return Config()

    def load(self) -> None:
        """Read the whole tree (facts from the cache where it has them)."""
        cfg = self.config
        files, problems = discover([str(self.root)], self.root, exclude=cfg.excluded if cfg.exclude else None)
        context = context_files(files, self.opts, self.root, problems)
        internal: list[str] = []
        with gc_paused():
            # serial: the server has threads (pygls reads stdin in one), and forking a threaded process for
            # a worker pool can deadlock the children; a cold start costs ~1.4x, a warm one is all cache hits
            entries, errors = read_entries(files, context, None, self.cache, 1, internal)
        self.problems += problems + internal
        self.entries = {e.discovered.path: e for e in entries}
        self.disk_errors = {e.path: e for e in errors}
        self.tree = set(self.entries) | set(self.disk_errors)  # what `check ROOT` reads
        self._neighbourhood = None

    def path_of(self, fs_path: str) -> str:
        """The reported path of a file (relative to the root, as ``check`` run in the root prints it)."""
        return display_path(Path(fs_path), self.root)

    def discovered(self, fs_path: str) -> Discovered | None:
        """The file as discovery sees it; None for a file mpslint does not lint."""
        path = self.path_of(fs_path)
        if path in self.entries:
            return self.entries[path].discovered
        p = Path(fs_path)
        try:
            rel = p.resolve().relative_to(self.root)
        except (ValueError, OSError):
            rel = p
        kind = kind_of(rel, explicit=False) or (kind_of(p, explicit=True) if p.suffix == ".py" else None)
        return Discovered(path, fs_path, kind, True) if kind else None

    @property
    def yaml_paths(self) -> list[str]:
        return [p for p, e in self.entries.items() if e.source.kind == "yaml"]

    # ------------------------------------------------------------------ buffers
    def update(self, fs_path: str, text: str | None) -> tuple[bool, list[str]]:
        """Replace a file's facts by those of ``text`` (None: the file on disk again). Returns whether the
        text differs from what was analysed before, and mpslint's failures; the file's own input errors
        are kept for ``lint``."""
        d = self.discovered(fs_path)
        if d is None:
            return False, []
        internal: list[str] = []
        if text is None and d.path not in self.tree:  # a closed file `check ROOT` would not read: no context
            known = d.path in self.entries or d.path in self.disk_errors
            self.entries.pop(d.path, None)
            self.disk_errors.pop(d.path, None)
            self._neighbourhood = None if known else self._neighbourhood
            return known, []
        src = read_source(d) if text is None else _buffer_source(d, text)
        old = self.entries.get(d.path)
        if old is not None and not isinstance(src, FileError) and old.source.sha == src.sha and d.path not in self.disk_errors:
            return False, []  # the same text: the facts in memory are its facts
        self.disk_errors.pop(d.path, None)
        entry = None
        if isinstance(src, FileError):
            self.disk_errors[d.path] = src
        else:
            facts = self.cache.get(src) if self.cache is not None else None
            if facts is None:
                status, value = analyse(src)
                if status == "ok":
                    facts = value
                elif status == "recursion":
                    self.disk_errors[d.path] = FileError(d.path, 0, "file too deeply nested to analyse; skipped")
                else:
                    internal.append(f"{d.path}: internal error while reading facts: {value}")
            if facts is not None:
                entry = Entry(d, True, src, facts)
        if entry is None:
            self.entries.pop(d.path, None)
        else:
            self.entries[d.path] = entry
        if entry is None or entry.source.kind == "yaml" or not self._knows(d.path):
            self._neighbourhood = None  # the graph's shape changed: rebuilt on next use
        return True, internal

    def _knows(self, path: str) -> bool:
        return self._neighbourhood is not None and path in self._neighbourhood.nodes_of

    def reread(self, fs_path: str) -> tuple[bool, list[str]]:
        """A file changed, appeared or went away on disk (not open in the editor): read it again. A new
        file under the root that discovery would find becomes part of the tree."""
        d = self.discovered(fs_path)
        if d is None:
            return False, []
        p = Path(fs_path)
        if p.is_file() and not (self.config.exclude and self.config.excluded(d.path)):
            try:
                p.resolve().relative_to(self.root)
                inside = kind_of(p.resolve().relative_to(self.root), explicit=False) is not None
            except (ValueError, OSError):
                inside = False
            if inside:
                self.tree.add(d.path)
        if d.path not in self.tree:
            return False, []
        return self.update(fs_path, None)

    # ------------------------------------------------------------------ linting
    def lint(self, fs_path: str) -> Outcome:
        d = self.discovered(fs_path)
        if d is None:
            return Outcome([], [], [])
        path = d.path
        if path not in self.entries:
            err = self.disk_errors.get(path)
            return Outcome([], [err] if err else [], [])
        internal: list[str] = []
        project = self._assemble(path, self._scope(path))
        findings = check_project(project, self.rules, self.config, {}, internal)
        errors = [e for e in project.errors if e.path == path]
        return Outcome(findings, errors, internal)

    def _scope(self, path: str) -> list[str]:
        entry = self.entries[path]
        if path not in self.tree:  # a file `check ROOT` does not read (a compile_shader .py): as `check FILE`
            return [path, *(p for p in self.yaml_paths if p != path)]
        if self.settings.scope == "tree" or entry.source.kind in ("yaml", "common_mps"):  # they speak of the whole tree
            return list(self.entries)
        related = self.neighbourhood().related(path, entry.facts)
        keep = related | {path} | set(self.yaml_paths)
        return [p for p in self.entries if p in keep]

    def neighbourhood(self) -> Neighbourhood:
        if self._neighbourhood is None:
            whole = self._assemble(None, list(self.entries))
            self._neighbourhood = Neighbourhood(whole)
        return self._neighbourhood

    def _assemble(self, linted: str | None, paths: list[str]) -> Project:
        project = Project()
        project.cache = self.cache
        with gc_paused(freeze=False):  # a per-edit project: garbage after the lint
            # the yaml first: the first one added is the project's native functions, as in a run from the root
            for p in sorted(paths, key=lambda p: self.entries[p].source.kind != "yaml"):
                e = self.entries[p]
                add_facts(project, e.source, e.facts, p == linted)
                project.fs_paths[p] = e.discovered.fs_path
            project.graph = build_graph(project)
        return project


def _buffer_source(d: Discovered, text: str):
    """An editor buffer as a source: the same refusals as a file read from disk (binary, too large)."""
    from ..project import MAX_BYTES

    if "\x00" in text[:8192]:
        return FileError(d.path, 0, "binary file (NUL bytes); skipped", fatal=True)
    if len(text) > MAX_BYTES:
        return FileError(d.path, 0, f"file larger than {MAX_BYTES // (1024 * 1024)} MB; skipped", fatal=True)
    return read_source(d, text.replace("\r\n", "\n") if "\r\n" in text else text)
