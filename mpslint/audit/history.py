"""``mpslint audit --history REV_RANGE``: the migration state at each revision of a git checkout.

For each sampled revision the files mpslint would discover are listed with ``git ls-tree`` and read with
``git cat-file`` (gitread.py): no checkout, no worktree, nothing written to the repository. A file's facts are
kept in memory by (reported path, blob id) from one revision to the next, so a file the commit did not touch is
neither re-read nor re-parsed; a blob not seen in this run is looked up in the facts cache (the same entries as
``mpslint check``: keyed by the content's hash, which a blob id names one to one) and parsed only on a miss.
A revision whose discovered files are the same blobs as the previous point's is not audited again.

Each point holds the class counts of the audit (classify.py) at that revision; the moves between consecutive
points come from compare.py. Findings are not computed: the classes do not depend on them.
"""

from __future__ import annotations

import gc
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .. import __version__
from ..config import Config
from ..discovery import NATIVE_FUNCTIONS_REL, SKIP_DIRS, _is_build_dir, display_path, kind_of
from ..engine import LintResult
from ..model import FileError
from ..project import Project, add_facts, build_graph, decode_source
from .classify import build_audit
from .compare import compare
from .gitread import BlobReader, GitError, Revision, revisions, sample, toplevel, tree_files
from .model import CLASSES, FAMILY_CLASSES

SCHEMA = "mpslint-audit-history"
SCHEMA_VERSION = 1


class HistoryError(Exception):
    """The history cannot be read (not a git repository, bad range, path outside the repository)."""


@dataclass
class HistoryStats:
    revisions: int = 0  # in the range
    points: int = 0
    audited: int = 0  # points whose files differed from the previous point's (audited again)
    blobs_read: int = 0
    bytes_read: int = 0
    parsed: int = 0  # facts computed
    cache_hits: int = 0  # facts from the on-disk cache
    memo_hits: int = 0  # files unchanged since the previous point (neither read nor parsed)
    seconds: float = 0.0
    internal_errors: list = field(default_factory=list)
    phases: dict = field(default_factory=lambda: {"git": 0.0, "facts": 0.0, "graph": 0.0, "audit": 0.0, "collect": 0.0})


def _kind(rel: str, explicit: bool) -> str | None:
    """As discovery decides: a file named among the paths (``explicit``) is always read when mpslint reads its kind."""
    p = Path(rel)
    if not explicit and any(part in SKIP_DIRS or _is_build_dir(part) for part in p.parts[:-1]):
        return None
    return kind_of(p, explicit=explicit)


def run_history(
    paths: list[str],
    rev_range: str,
    *,
    every: int | None = None,
    max_points: int | None = None,
    native_functions: str | None = None,
    config: Config | None = None,
    cache_dir=None,
    jobs: int | None = None,
    cwd: Path | None = None,
    first_parent: bool = True,
) -> tuple[dict, HistoryStats]:
    """The history report (a plain dict, see ``SCHEMA``) and how it was computed."""
    t0 = time.perf_counter()
    cfg = config or Config()
    cwd = (cwd or Path.cwd()).resolve()
    paths = list(paths) or ["."]
    try:
        top = toplevel(paths[0] if Path(paths[0]).is_absolute() else cwd / paths[0])
        specs = [_rel(top, cwd, p) for p in paths]
        nf_spec = _rel(top, cwd, native_functions) if native_functions else NATIVE_FUNCTIONS_REL.as_posix()
        revs = revisions(top, rev_range, first_parent=first_parent)
    except GitError as e:
        raise HistoryError(str(e)) from None
    if not revs:
        raise HistoryError(f"`{rev_range}` has no revisions")
    stats = HistoryStats(revisions=len(revs))
    picked = sample(revs, every, max_points)
    stats.points = len(picked)
    pathspecs = [] if "" in specs else sorted(set(specs) | {nf_spec})
    named = set(specs)  # a path that is a file at some revision is linted as an explicit file
    cache = None
    if cache_dir is not None:
        from ..cache import FactsCache

        cache = FactsCache(cache_dir)
    points: list[dict] = []
    changes: list[dict] = []
    memo: dict[tuple[str, str], list] = {}
    prev_key = prev_report = prev_point = yaml_used = None
    known = None  # the latest point with counts: a change happened after it
    with BlobReader(top) as reader, _collector_per_point():
        for rev in picked:
            tg = time.perf_counter()
            try:
                entries = tree_files(top, rev.commit, pathspecs)
            except GitError as e:
                raise HistoryError(str(e)) from None
            files = []
            for e in entries:
                kind = _kind(e.path, e.path in named)
                if kind is None:
                    continue
                disp = display_path(top / e.path, cwd)
                if cfg.exclude and cfg.excluded(disp):
                    continue
                if kind == "yaml" and native_functions and e.path != nf_spec:
                    continue
                files.append((disp, kind, e.oid, e.path))
            files = _one_yaml(files, nf_spec)
            stats.phases["git"] += time.perf_counter() - tg
            key = tuple(files)
            if key == prev_key and prev_point is not None:
                prev_point = dict(prev_point, **_rev(rev), same_as=prev_point["same_as"] or prev_point["commit"])
                points.append(prev_point)
                known = prev_point if prev_point["families"] is not None else known
                continue
            report, error = _audit_revision(files, memo, reader, cache, jobs, stats)
            stats.audited += 1
            prev_key = key
            point = {**_rev(rev), "files": len(files), "same_as": None}
            if report is None:
                point.update(error=error, families=None, overloads=None, families_total=None, overloads_total=None, percent_migrated=None)
            else:
                t = report["totals"]
                point.update(
                    families=t["ops"], overloads=t["overloads"], families_total=t["ops_total"], overloads_total=t["overloads_total"],
                    percent_migrated=t["percent_migrated"],
                )
                yaml_used = report["source"]["native_functions"]
                if prev_report is not None:
                    changes += _moves(prev_report, report, known, rev)
                prev_report, known = report, point
            points.append(point)
            prev_point = point
    if points and not any(p["families"] is not None for p in points):
        raise HistoryError(f"no revision of `{rev_range}` has {nf_spec} (pass the yaml among the paths or with --native-functions)")
    stats.blobs_read, stats.bytes_read = reader.read_count, reader.read_bytes
    stats.seconds = time.perf_counter() - t0
    source = {
        "repository": str(top),
        "range": rev_range,
        "paths": list(paths),
        "native_functions": yaml_used,  # as reported, at the newest revision that has one
        "first_parent": first_parent,
        "every": every,
        "max_points": max_points,
        "revisions_in_range": len(revs),
    }
    return {"schema": SCHEMA, "schema_version": SCHEMA_VERSION, "tool": f"mpslint {__version__}", "source": source, "points": points, "changes": changes}, stats


def _one_yaml(files: list[tuple], nf_spec: str) -> list[tuple[str, str, str]]:
    """Sorted (reported path, kind, blob id), with one native_functions.yaml: the one at ``nf_spec`` when the
    revision has it, else the shallowest (a tree holding several, such as test fixtures, is audited by one)."""
    yamls = sorted((f for f in files if f[1] == "yaml"), key=lambda f: (f[3] != nf_spec, f[3].count("/"), f[3]))
    keep = [f for f in files if f[1] != "yaml"] + yamls[:1]
    return sorted((d, k, o) for d, k, o, _ in keep)


def _rel(top: Path, cwd: Path, p: str) -> str:
    full = (Path(p) if Path(p).is_absolute() else cwd / p).resolve()
    try:
        rel = full.relative_to(top.resolve()).as_posix()
    except ValueError:
        raise HistoryError(f"{p}: not inside the git repository {top}") from None
    return "" if rel == "." else rel


def _rev(rev: Revision) -> dict:
    return {"commit": rev.commit, "date": rev.date, "subject": rev.subject}


def _audit_revision(files, memo: dict, reader: BlobReader, cache, jobs, stats: HistoryStats) -> tuple[dict | None, str | None]:
    """The audit report of one revision's files, facts from ``memo`` / the cache / parsing (``memo`` is updated)."""
    from ..parallel import compute

    tf = time.perf_counter()
    current: dict[tuple[str, str], list] = {}
    pending: list[list] = []
    for disp, kind, oid in files:
        got = memo.get((disp, oid))
        if got is not None:
            stats.memo_hits += 1
        else:
            try:
                data = reader.read(oid)
            except GitError as e:
                raise HistoryError(str(e)) from None
            src = decode_source(disp, kind, data)
            facts = None
            if not isinstance(src, FileError) and cache is not None:
                facts = cache.get(src)
                stats.cache_hits += facts is not None
            got = [src, facts]
            if facts is None and not isinstance(src, FileError):
                pending.append(got)
        current[(disp, oid)] = got
    for got, (status, value) in zip(pending, compute([g[0] for g in pending], jobs, cache)):
        stats.parsed += 1
        got[1] = value if status == "ok" else None
        if status == "recursion":
            got[0] = FileError(got[0].path, 0, "file too deeply nested to analyse; skipped")
        elif status != "ok":  # a bug in mpslint: said once per blob, the other files go on
            stats.internal_errors.append(f"{got[0].path}: internal error while reading facts: {value}")
    memo.clear()  # only the files of the latest revision are kept: history rarely returns to an older blob
    memo.update(current)
    gc.freeze()  # the facts live on to the next points: out of the collector's sight (see _collector_per_point)
    project = Project()
    project.cache = cache
    for disp, _kind, oid in files:
        src, facts = current[(disp, oid)]
        if isinstance(src, FileError):
            project.errors.append(src)
        elif facts is not None:
            add_facts(project, src, facts, linted=False)
    tg = time.perf_counter()
    stats.phases["facts"] += tg - tf
    if project.natives is None:
        return None, "no native_functions.yaml at this revision"
    project.graph = build_graph(project)
    ta = time.perf_counter()
    stats.phases["graph"] += ta - tg
    result = LintResult([], project.errors, [], [], project.stats, project, [], len(files))
    report = build_audit(result, []).to_dict()
    del result, project
    tc = time.perf_counter()
    stats.phases["audit"] += tc - ta
    gc.collect()  # this point's graph (networkx graphs hold reference cycles): only what was made since the freeze
    stats.phases["collect"] += time.perf_counter() - tc
    return report, None


@contextmanager
def _collector_per_point():
    """No automatic cycle collection during the run (a full one walks every fact of the tree, as in
    engine.gc_paused); instead the facts are frozen when loaded and each point's garbage is collected after
    the point, so memory stays that of one tree, not one graph per point. Frozen objects are handed back
    to the collector at the end."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()


_KINDS = (("newly_migrated", "migrated"), ("regressed", "regressed"), ("changed", "changed"), ("new_mixed", "new mixed"))


def _moves(old: dict, new: dict, prev_point: dict, rev: Revision) -> list[dict]:
    """The families whose class differs between two consecutive points with counts, with the commit that
    shows it first (``rev``) and the latest point before it (``prev_point``)."""
    diff = compare(old, new)
    seen: dict[str, dict] = {}
    for list_name, kind in _KINDS:
        for m in diff[list_name]:
            if m["old"] is None:
                continue  # an added family that is mixed: listed under "added" below
            seen.setdefault(m["family"], {"family": m["family"], "old": m["old"], "new": m["new"], "kind": kind})
    new_cls = {op["family"]: op["class"] for op in new["ops"]}
    old_cls = {op["family"]: op["class"] for op in old["ops"]}
    for fam in diff["added"]:
        seen[fam] = {"family": fam, "old": None, "new": new_cls[fam], "kind": "added"}
    for fam in diff["removed"]:
        seen[fam] = {"family": fam, "old": old_cls[fam], "new": None, "kind": "removed"}
    return [dict(seen[f], **_rev(rev), previous=prev_point["commit"]) for f in sorted(seen)]


# JSON Schema (draft 2020-12) of the history report; the tests validate every report against it.
_COUNTS = {"type": ["object", "null"], "additionalProperties": {"type": "integer", "minimum": 0}}
_CLASS_OR_NULL = {"enum": [*FAMILY_CLASSES, None]}
_REV = {"commit": {"type": "string", "pattern": "^[0-9a-f]{40,64}$"}, "date": {"type": "string"}, "subject": {"type": "string"}}
JSON_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "mpslint audit history",
    "type": "object",
    "required": ["schema", "schema_version", "tool", "source", "points", "changes"],
    "properties": {
        "schema": {"const": SCHEMA},
        "schema_version": {"const": SCHEMA_VERSION},
        "tool": {"type": "string"},
        "source": {"type": "object", "required": ["repository", "range", "paths", "native_functions", "revisions_in_range"]},
        "points": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["commit", "date", "subject", "files", "same_as", "families", "overloads", "percent_migrated"],
                "properties": {
                    **_REV,
                    "files": {"type": "integer", "minimum": 0},
                    "same_as": {"type": ["string", "null"]},
                    "families": {**_COUNTS, "propertyNames": {"enum": list(FAMILY_CLASSES)}},
                    "overloads": {**_COUNTS, "propertyNames": {"enum": list(CLASSES)}},
                    "error": {"type": "string"},
                },
            },
        },
        "changes": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["family", "old", "new", "kind", "commit", "date", "subject", "previous"],
                "properties": {
                    **_REV,
                    "family": {"type": "string"},
                    "old": _CLASS_OR_NULL,
                    "new": _CLASS_OR_NULL,
                    "kind": {"enum": ["migrated", "regressed", "changed", "new mixed", "added", "removed"]},
                    "previous": {"type": "string"},
                },
            },
        },
    },
}
