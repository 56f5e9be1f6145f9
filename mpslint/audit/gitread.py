"""Read a repository's history with git's own plumbing, without a checkout: the revisions of a range
(``git rev-list``), the files of a revision (``git ls-tree -r``) and their bytes (one ``git cat-file --batch``
process for the whole run). Nothing is written to the repository or its working tree."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


class GitError(Exception):
    """git is missing, the path is not in a repository, or a revision does not exist."""


@dataclass(frozen=True)
class Revision:
    commit: str
    date: str  # committer date, strict ISO 8601
    subject: str


@dataclass(frozen=True)
class TreeEntry:
    path: str  # relative to the repository's top
    oid: str  # the blob's object id (its hash)


def _run(repo: Path, args: list[str]) -> bytes:
    try:
        r = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, timeout=600)
    except FileNotFoundError:
        raise GitError("git is not installed") from None
    except subprocess.TimeoutExpired:
        raise GitError(f"git {args[0]} timed out") from None
    if r.returncode != 0:
        msg = r.stderr.decode("utf-8", "replace").strip().splitlines()
        raise GitError(f"git {args[0]}: {msg[-1] if msg else f'exit {r.returncode}'}")
    return r.stdout


def toplevel(path: str | Path) -> Path:
    """The top of the work tree holding ``path`` (a file or a directory)."""
    p = Path(path)
    start = p if p.is_dir() else p.parent
    if not start.exists():
        raise GitError(f"{path}: no such file or directory")
    return Path(_run(start, ["rev-parse", "--show-toplevel"]).decode().strip())


def revisions(repo: Path, rev_range: str, first_parent: bool = True) -> list[Revision]:
    """The commits of ``rev_range`` (``A..B``, or one revision and its ancestors), oldest first.

    ``first_parent`` follows the mainline only: each point is a state the branch was in, not a commit of a
    side branch before its merge."""
    if not rev_range or rev_range.startswith("-"):
        raise GitError(f"not a revision range: {rev_range!r}")
    args = ["rev-list", "--reverse", "--format=%H%x00%cI%x00%s"]
    if first_parent:
        args.append("--first-parent")
    out = _run(repo, [*args, "--end-of-options", rev_range, "--"]).decode("utf-8", "replace")
    revs = []
    for line in out.split("\n"):
        if not line or line.startswith("commit "):
            continue
        commit, date, subject = (line.split("\0") + ["", ""])[:3]
        revs.append(Revision(commit, date, subject))
    return revs


def tree_files(repo: Path, commit: str, pathspecs: list[str]) -> list[TreeEntry]:
    """Regular files (blobs; no symlinks, no submodules) of ``commit`` under ``pathspecs`` (top-relative)."""
    out = _run(repo, ["ls-tree", "-r", "-z", "--full-tree", commit, "--", *pathspecs])
    entries = []
    for rec in out.split(b"\0"):
        if not rec:
            continue
        meta, _, path = rec.partition(b"\t")
        mode, typ, oid = meta.split(b" ")
        if typ != b"blob" or mode == b"120000":
            continue
        entries.append(TreeEntry(path.decode("utf-8", "surrogateescape"), oid.decode()))
    return entries


def sample(revs: list, every: int | None = None, max_points: int | None = None) -> list:
    """Every ``every``-th revision counted from the oldest, then at most ``max_points`` of those evenly
    spaced; the newest revision is always kept (and the oldest, with ``max_points``)."""
    if not revs:
        return []
    picked = list(revs)
    if every and every > 1:
        idx = list(range(0, len(picked), every))
        if idx[-1] != len(picked) - 1:
            idx.append(len(picked) - 1)
        picked = [picked[i] for i in idx]
    if max_points and 0 < max_points < len(picked):
        if max_points == 1:
            return [picked[-1]]
        n = len(picked) - 1
        idx = sorted({round(i * n / (max_points - 1)) for i in range(max_points)})
        picked = [picked[i] for i in idx]
    return picked


class BlobReader:
    """``git cat-file --batch`` kept open: one process, any number of blobs by object id."""

    def __init__(self, repo: Path):
        try:
            self.proc = subprocess.Popen(
                ["git", "-C", str(repo), "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
            )
        except FileNotFoundError:
            raise GitError("git is not installed") from None
        self.read_count = 0
        self.read_bytes = 0

    def read(self, oid: str) -> bytes:
        p = self.proc
        try:
            p.stdin.write(oid.encode() + b"\n")
            p.stdin.flush()
            header = p.stdout.readline()
        except (BrokenPipeError, OSError) as e:
            raise GitError(f"git cat-file: {e}") from None
        parts = header.split()
        if len(parts) != 3 or parts[1] != b"blob":
            raise GitError(f"git cat-file: {oid}: {header.decode('utf-8', 'replace').strip() or 'no answer'}")
        size = int(parts[2])
        data = p.stdout.read(size)
        p.stdout.read(1)  # the newline after the contents
        if len(data) != size:
            raise GitError(f"git cat-file: {oid}: short read")
        self.read_count += 1
        self.read_bytes += size
        return data

    def close(self) -> None:
        p = self.proc
        try:
            p.stdin.close()
        except OSError:
            pass
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        if p.stdout is not None:
            p.stdout.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
