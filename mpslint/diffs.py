"""Changed lines only: ``--diff-base REF`` with ``--filter added|context|file|none`` (reviewdog's modes).

mpslint always lints the whole tree it was given (the dispatch graph needs every file), then keeps
the findings the diff between the merge base with REF and the working tree touches:

- ``added``: the finding's first line is an added or modified line;
- ``context``: the first line is inside a diff hunk (added or context lines);
- ``file``: the finding is in a changed file, or it is in an unchanged file but did not exist at the
  merge base (a yaml change can raise a finding in an unchanged ``.mm``; the merge base is linted
  from ``git archive`` into a temporary directory to tell);
- ``none``: every finding.
"""

from __future__ import annotations

import copy
import io
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path

from .reporters._common import finding_keys, repo_relative, repo_root

FILTERS = ("added", "context", "file", "none")


class DiffError(Exception):
    pass


def _git(args: list[str], cwd: Path, binary: bool = False):
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as e:
        raise DiffError(f"git {' '.join(args)}: {e}") from e
    if out.returncode != 0:
        msg = out.stderr.decode("utf-8", "replace").strip().splitlines()
        raise DiffError(f"git {' '.join(args)} failed: {msg[-1] if msg else out.returncode}")
    return out.stdout if binary else out.stdout.decode("utf-8", "replace")


def merge_base(ref: str, cwd: Path | None = None) -> str:
    cwd = repo_root(cwd)
    return _git(["merge-base", ref, "HEAD"], cwd).strip()


@dataclass
class FileDiff:
    path: str  # repo-relative, after the change
    added: set[int] = field(default_factory=set)
    context: set[int] = field(default_factory=set)  # added and context lines of every hunk (new side)
    hunks: list[tuple[int, int]] = field(default_factory=list)  # (first, last) new-side line of each hunk
    is_removed: bool = False


@dataclass
class Diff:
    base: str
    files: dict[str, FileDiff]

    def changed(self, rel: str) -> bool:
        f = self.files.get(rel)
        return f is not None and not f.is_removed


def parse_diff(text: str, base: str = "") -> Diff:
    from unidiff import PatchSet

    files: dict[str, FileDiff] = {}
    for pf in PatchSet(io.StringIO(text)):
        path = pf.path if not pf.is_removed_file else pf.source_file.removeprefix("a/")
        tgt = pf.target_file
        if tgt and tgt != "/dev/null":
            path = tgt[2:] if tgt.startswith("b/") else tgt
        fd = FileDiff(path, is_removed=pf.is_removed_file)
        for h in pf:
            fd.hunks.append((h.target_start, h.target_start + max(h.target_length, 1) - 1))
            for line in h:
                if line.target_line_no is None:
                    continue
                fd.context.add(line.target_line_no)
                if line.is_added:
                    fd.added.add(line.target_line_no)
        files[path] = fd
    return Diff(base, files)


def load_diff(ref: str, cwd: Path | None = None, context_lines: int = 3) -> Diff:
    """The diff from the merge base of REF and HEAD to the working tree."""
    root = repo_root(cwd)
    base = merge_base(ref, root)
    text = _git(["diff", "--no-color", "--no-ext-diff", "-M", f"-U{context_lines}", base, "--"], root)
    return parse_diff(text, base)


def in_diff(finding, rel: str, diff: Diff, mode: str) -> bool:
    if mode == "none":
        return True
    fd = diff.files.get(rel)
    if fd is None or fd.is_removed:
        return False
    if mode == "file":
        return True
    line = finding.span.line
    return line in (fd.added if mode == "added" else fd.context)


def base_keys(opts, diff: Diff, cwd: Path | None = None, root: Path | None = None) -> set:
    """Lint the merge base (the same paths and options) and return its findings' line-free keys."""
    from .discovery import kind_of
    from .engine import lint

    cwd = Path(cwd or Path.cwd()).resolve()
    root = root or repo_root(cwd)

    rels = []
    for raw in opts.paths:
        p = Path(raw)
        a = (p if p.is_absolute() else cwd / p).resolve()
        try:
            rels.append(a.relative_to(root).as_posix())
        except ValueError:
            raise DiffError(f"{raw}: outside the repository; --filter file needs every path inside it")
    listed = _git(["ls-tree", "-r", "-z", "--name-only", diff.base, "--", *[r or "." for r in rels]], root).split("\0")
    wanted = [n for n in listed if n and kind_of(Path(n), explicit=True) is not None]
    nf = opts.native_functions or opts.config.native_functions
    with tempfile.TemporaryDirectory(prefix="mpslint-base-") as tmp:
        t = Path(tmp)
        if wanted:
            data = _git(["archive", "--format=tar", diff.base, "--", *wanted], root, binary=True)
            with tarfile.open(fileobj=io.BytesIO(data)) as tf:
                try:
                    tf.extractall(t, filter="data")
                except TypeError:  # Python without extraction filters: git archive output is trusted
                    tf.extractall(t)
        # the yaml found by walking up stops at a `.git`: give the copy one
        (t / ".git").mkdir(exist_ok=True)
        base_cwd = t / cwd.relative_to(root) if cwd.is_relative_to(root) else t
        base_cwd.mkdir(parents=True, exist_ok=True)
        o = copy.copy(opts)
        o.paths = [str(t / r) for r in rels if (t / r).exists()]
        o.cwd = base_cwd
        if nf:
            a = (Path(nf) if Path(nf).is_absolute() else cwd / nf).resolve()
            o.native_functions = str(t / a.relative_to(root)) if a.is_relative_to(root) else str(a)
        if not o.paths:
            return set()
        base_result = lint(o)
        return set(finding_keys(base_result.findings, base_cwd, t))


def filter_result(result, opts, diff: Diff, mode: str, cwd: Path | None = None):
    """The result with only the findings the diff touches (see the module docstring)."""
    if mode not in FILTERS:
        raise DiffError(f"unknown filter mode {mode!r}")
    if mode == "none":
        return result
    cwd = Path(cwd or opts.cwd or Path.cwd()).resolve()
    root = repo_root(cwd)
    rels = [repo_relative(f.path, cwd, root) for f in result.findings]
    keep = [in_diff(f, r, diff, mode) for f, r in zip(result.findings, rels)]
    if mode == "file" and not all(keep):
        base = base_keys(opts, diff, cwd, root)
        keys = finding_keys(result.findings, cwd, root)
        keep = [k or key not in base for k, key in zip(keep, keys)]
    return replace(result, findings=[f for f, k in zip(result.findings, keep) if k])
