"""Orchestration: discover -> read -> facts -> graph -> rules -> filtered, sorted findings."""

from __future__ import annotations

import gc
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .config import Config
from .discovery import Discovered, binding_siblings, discover, display_path, find_native_functions
from .model import FileError, Finding, ParseStats
from .project import Project, add_facts, build_graph, read_source
from .rule import Rule, RuleContext, select_rules
from .source import SourceFile


@dataclass
class LintOptions:
    paths: list[str]
    config: Config = field(default_factory=Config)
    native_functions: str | None = None
    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    cwd: Path | None = None
    rule_options: dict = field(default_factory=dict)
    overrides: dict[str, str] = field(default_factory=dict)  # reported path -> text to lint instead of the file's
    cache_dir: str | Path | None = None  # facts cache directory (None: no cache; the CLI picks its default)
    jobs: int | None = None  # worker processes for parsing (None: automatic, serial for small runs)


@dataclass
class LintResult:
    findings: list[Finding]
    errors: list[FileError]
    internal_errors: list[str]
    problems: list[str]  # usage problems (missing paths)
    stats: ParseStats
    project: Project
    rules: list[type[Rule]]
    files: int


def load_project(
    files: list[Discovered], context: list[Discovered] = (), overrides: dict[str, str] | None = None, *, cache_dir=None, jobs: int | None = None
) -> tuple[Project, list[str]]:
    """Read every file and get its facts: from the cache (``cache_dir``, keyed by content) or computed,
    across ``jobs`` processes for large trees (None: automatic); merged in the order of the files."""
    project = Project()
    internal: list[str] = []
    cache = None
    if cache_dir is not None:
        from .cache import FactsCache

        cache = FactsCache(cache_dir)
    project.cache = cache
    with gc_paused():
        _load(project, internal, files, context, overrides, cache, jobs)
    return project, internal


@contextmanager
def gc_paused(freeze: bool = True):
    """No cycle collection inside: facts and graph are many objects and no garbage, and a full collection
    walks all of them (most of the graph's build time on a large tree went to the collector).
    ``freeze=False`` where what was built is short-lived (a rules run, the language server's per-edit
    projects): frozen objects are never collected, so freezing them would keep every one alive."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        # what was built stays alive for the whole run: move it out of the collector's sight (gc.freeze),
        # so re-enabling collection does not pay for one full walk over every fact
        if freeze:
            gc.freeze()
        if was_enabled:
            gc.enable()


def _load(project: Project, internal: list[str], files, context, overrides, cache, jobs) -> None:
    entries, errors = read_entries(files, context, overrides, cache, jobs, internal)
    project.errors.extend(errors)
    for e in entries:
        add_facts(project, e.source, e.facts, e.linted)
        project.fs_paths[e.source.path] = e.discovered.fs_path
    project.graph = build_graph(project)


@dataclass
class Entry:
    """One file read and analysed: what a project is assembled from (the language server keeps these)."""

    discovered: Discovered
    linted: bool
    source: SourceFile
    facts: object


def read_entries(files, context, overrides, cache, jobs, internal: list[str]) -> tuple[list[Entry], list[FileError]]:
    """Read every file and get its facts (cache or computed, in the order of the files); unusable files
    are FileErrors, mpslint's own failures go to ``internal``."""
    from .parallel import compute

    items = []
    for d, linted in [(f, True) for f in files] + [(f, False) for f in context]:
        src = read_source(d, (overrides or {}).get(d.path))
        items.append((d, linted, src, cache.get(src) if cache is not None and not isinstance(src, FileError) else None))
    misses = [src for _d, _l, src, facts in items if facts is None and not isinstance(src, FileError)]
    computed = iter(compute(misses, jobs, cache))
    entries: list[Entry] = []
    errors: list[FileError] = []
    for d, linted, src, facts in items:
        if isinstance(src, FileError):
            errors.append(src)
            continue
        if facts is None:
            status, value = next(computed)
            if status == "recursion":
                errors.append(FileError(d.path, 0, "file too deeply nested to analyse; skipped"))
                continue
            if status != "ok":  # a bug in mpslint: say so, keep going with the other files
                internal.append(f"{d.path}: internal error while reading facts: {value}")
                continue
            facts = value
        entries.append(Entry(d, linted, src, facts))
    return entries, errors


def lint(opts: LintOptions) -> LintResult:
    cfg = opts.config
    cwd = (opts.cwd or Path.cwd()).resolve()
    files, problems = discover(opts.paths, cwd, exclude=cfg.excluded if cfg.exclude else None)
    context = context_files(files, opts, cwd, problems) + binding_siblings(files, cwd)
    project, internal = load_project(files, context, opts.overrides, cache_dir=opts.cache_dir, jobs=opts.jobs)
    rules = selected_rules(opts)
    out = check_project(project, rules, cfg, opts.rule_options, internal)
    return LintResult(out, sorted(project.errors, key=lambda e: (e.path, e.line)), internal, problems, project.stats, project, rules, len(files))


def context_files(files: list[Discovered], opts: LintOptions, cwd: Path, problems: list[str]) -> list[Discovered]:
    """The yaml to read as context when it is not among the linted files (``--native-functions``, the
    configuration's, or found by walking up from the paths)."""
    if any(f.kind == "yaml" for f in files):
        return []
    nf = opts.native_functions or opts.config.native_functions
    nf_path = Path(nf) if nf else find_native_functions(opts.paths)
    if nf and not Path(nf).is_file():
        problems.append(f"{nf}: native_functions.yaml not found")
    elif nf_path is not None:
        return [Discovered(display_path(nf_path, cwd), str(nf_path), "yaml", False)]
    return []


def selected_rules(opts: LintOptions) -> list[type[Rule]]:
    """The rules a run uses: the command line's selection, else the configuration's (ruff's precedence)."""
    cfg = opts.config
    # ruff's precedence: a --select on the command line replaces the file's select and ignore
    if opts.select is not None:
        return select_rules(opts.select, opts.extend_select, opts.ignore)
    rules = select_rules(cfg.select, list(cfg.extend_select), list(cfg.ignore))
    extra = select_rules(["ALL"], (), ()) if opts.extend_select else []
    rules += [r for r in extra if any(r.code.startswith(s.upper()) for s in opts.extend_select) and r not in rules]
    rules = [r for r in rules if not any(r.code.startswith(s.upper()) or s.upper() == "ALL" for s in opts.ignore)]
    rules.sort(key=lambda r: r.code)
    return rules


def _dead_code(project: Project, min_macos: str = "14.0") -> dict[str, list[tuple[int, int]]]:
    """Per host file, the spans of its ``static`` functions nothing calls, registers or hands out, and of the code
    that runs only on macOS releases older than ``min_macos`` (``semantic.platform``); once per project."""
    cached = getattr(project, "_dead_code", None)
    got = cached[1] if cached is not None and cached[0] == min_macos else None
    if got is None:
        from .semantic import hostflow as hf
        from .semantic import platform

        hosts = project.hosts
        sites, registered, escaping = hf.call_sites(hosts), hf.registered_functions(hosts), hf.escaping_functions(hosts)
        got = {}
        for path in sorted(hosts):
            for fn in hosts[path].functions:
                if hf.is_dead(fn, path, sites, registered, escaping):
                    got.setdefault(path, []).append((fn.span.start, fn.span.end))
        floor = platform.parse_version(min_macos) or platform.parse_version(platform.DEFAULT_MIN_MACOS)
        for path, spans in platform.unsupported_code(hosts, floor, sites, registered, escaping).items():
            got.setdefault(path, []).extend(spans)
        project._dead_code = (min_macos, got)
    return got


def check_project(project: Project, rules: list[type[Rule]], cfg: Config, rule_options: dict, internal: list[str]) -> list[Finding]:
    """Run ``rules`` on a loaded project: the findings on its linted files, minus suppressions and
    per-file ignores, deduplicated and sorted; a crashing rule is reported in ``internal``."""
    project.context_override = cfg.context
    ctx = RuleContext(project, project.graph, rule_options, cfg.rule_settings)
    if cfg.min_torch:
        from .semantic.platform import parse_version

        ctx.min_torch = parse_version(cfg.min_torch)
    findings: list[Finding] = []
    with gc_paused(freeze=False):  # rules allocate on top of a heap of facts: a full collection would walk them all
        for cls in rules:
            try:
                # a rule's findings count only in files of the contexts it declares (Rule.contexts)
                got = [f for f in cls().check(ctx) if cls.applies_in(ctx.file_context(f.path))]
                if cls.scope == "host" and not cls.reports_dead_code and got:
                    # a finding in a `static` function nothing calls asks for a patch to code that never runs
                    dead = _dead_code(project, cfg.min_macos)
                    got = [f for f in got if not any(a <= f.span.start < b for a, b in dead.get(f.path, ()))]
                findings.extend(got)
            except Exception as e:
                internal.append(f"rule {cls.code} crashed: {type(e).__name__}: {e}\n{traceback.format_exc(limit=4)}")
    kept: dict[tuple, Finding] = {}
    for f in findings:
        if f.path not in project.linted:
            continue
        sup = project.suppressions.get(f.path)
        if sup is not None and sup.suppressed(f.code, f.span.line):
            continue
        ign = cfg.ignored_for(f.path)
        if any(f.code.startswith(c) or c == "ALL" for c in ign):
            continue
        kept.setdefault((f.code, f.path, f.span.start, f.span.end, f.message), f)
    return sorted(kept.values(), key=Finding.sort_key)
