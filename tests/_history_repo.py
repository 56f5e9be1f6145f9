"""A git repository built from fixtures/aten over several commits, for ``audit --history`` (tests and browser tests).

Each commit's tree is also kept as a plain directory (``snapshots``), so a test can audit the same state from
the file system and compare.  Commit dates are fixed: the history (and its report) is the same on every run.

1. import fixtures/aten as ``aten/``
2. a README change only (no file mpslint reads)
3. migrate ``copysign.Scalar_out`` onto the shared line (copysign: mixed -> native)
4. delete ``UnaryKernel.mm`` (sinc's stub registration: sinc native -> unknown)
5. revert 3 and add a new family ``frobnicate`` (copysign native -> mixed; frobnicate added)
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from .conftest import FIXTURES

YAML_REL = "aten/src/ATen/native/native_functions.yaml"
UNARY_REL = "aten/src/ATen/native/mps/operations/UnaryKernel.mm"
OLD_SCALAR = "    CPU, CUDA: copysign_Scalar_out\n    MPS: copysign_Scalar_out_mps  # expect: DSP301\n"
NEW_SCALAR = "    CPU, CUDA, MPS: copysign_Scalar_out\n"
NEW_FAMILY = "\n- func: frobnicate(Tensor self) -> Tensor\n  dispatch:\n    MPS: frobnicate_mps\n"


@dataclass
class HistoryRepo:
    path: Path
    commits: list[str] = field(default_factory=list)  # oldest first
    subjects: list[str] = field(default_factory=list)
    snapshots: list[Path] = field(default_factory=list)  # the tree of each commit, as a directory


def git(repo: Path, *args: str, date: str | None = None) -> str:
    env = {
        **os.environ,
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "mpslint tests",
        "GIT_AUTHOR_EMAIL": "tests@example.invalid",
        "GIT_COMMITTER_NAME": "mpslint tests",
        "GIT_COMMITTER_EMAIL": "tests@example.invalid",
    }
    if date:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    r = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def build_history_repo(base: Path) -> HistoryRepo:
    repo = base / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    h = HistoryRepo(repo)

    def commit(subject: str, day: int) -> None:
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", subject, date=f"2026-0{1 + day // 28}-{1 + day % 28:02d}T12:00:00+00:00")
        h.commits.append(git(repo, "rev-parse", "HEAD"))
        h.subjects.append(subject)
        snap = base / f"snap{len(h.commits)}"
        shutil.copytree(repo, snap, ignore=shutil.ignore_patterns(".git"))
        h.snapshots.append(snap)

    yaml = repo / YAML_REL
    shutil.copytree(FIXTURES / "aten", repo / "aten")
    commit("import fixtures/aten", 0)
    (repo / "README").write_text("mpslint history test repository\n")
    commit("README only", 3)
    text = yaml.read_text(encoding="utf-8")
    assert OLD_SCALAR in text
    yaml.write_text(text.replace(OLD_SCALAR, NEW_SCALAR), encoding="utf-8")
    commit("copysign.Scalar_out joins the shared line", 10)
    (repo / UNARY_REL).unlink()
    commit("drop UnaryKernel.mm", 20)
    yaml.write_text(text + NEW_FAMILY, encoding="utf-8")
    commit("revert the copysign migration; add frobnicate", 40)
    return h
