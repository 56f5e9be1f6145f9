"""The pre-commit hook, run by the real ``pre-commit try-repo`` against temporary git repositories.

try-repo only sees committed and tracked files of the hook repository, so the test copies the
package sources as they are now into a fresh repository first. pre-commit builds its own virtualenv
for the hook on every call, so the test makes two calls only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ._integration_helpers import GIT_ENV, commit_all, fixture_repo, init_repo
from .conftest import ROOT

BAD_MM = """\
void k(const Tensor& in) {
  const uint32_t n = static_cast<uint32_t>(in.numel());
}
"""


def _pre_commit() -> str | None:
    cand = Path(sys.executable).parent / "pre-commit"
    return str(cand) if cand.exists() else shutil.which("pre-commit")


PRE_COMMIT = _pre_commit()
pytestmark = pytest.mark.skipif(PRE_COMMIT is None, reason="pre-commit is not installed")


def test_hook_definition():
    (hook,) = yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "mpslint" and hook["language"] == "python"
    assert hook["require_serial"] is True  # the dispatch graph spans files: one process sees them all
    import re

    rx = re.compile(hook["files"])
    for name in ("a/mps/Op.mm", "k/Fill.metal", "mps/x.h", "aten/src/ATen/native/native_functions.yaml", "torch/testing/_internal/common_mps.py"):
        assert rx.search(name), name
    for name in ("README.md", "setup.py", "a/Op.mm.orig", "other.yaml"):
        assert not rx.search(name), name


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory):
    """The hook repository as it is in the working tree now, committed in a fresh repository."""
    base = tmp_path_factory.mktemp("precommit")
    src = base / "mpslint-src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml"):
        shutil.copy(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in ("mpslint", "rules"):
        shutil.copytree(ROOT / name, src / name, ignore=ignore)
    init_repo(src)
    commit_all(src, "hook")
    return src


def try_repo(hook_repo, target: Path, *args: str):
    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_COLOR": "never"}
    env.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run(
        [PRE_COMMIT, "try-repo", str(hook_repo), "mpslint", "--color", "never", *args],
        cwd=target, env=env, capture_output=True, text=True, timeout=600,
    )


def test_try_repo(hook_repo, tmp_path):
    # pre-commit try-repo builds a fresh hook environment on every call (~20 s): two calls cover it all
    target = fixture_repo(tmp_path / "tree")
    (target / "extra/mps").mkdir(parents=True)
    (target / "extra/mps/Op.mm").write_text(BAD_MM)
    (target / "extra/mps/Ok.mm").write_text("static void f() {}\n")
    (target / "notes.txt").write_text("not linted\n")
    commit_all(target, "t")
    binary_ops = "aten/src/ATen/native/mps/operations/BinaryOps.mm"
    r = try_repo(hook_repo, target, "--files", binary_ops, "extra/mps/Op.mm", "notes.txt")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "extra/mps/Op.mm:2:22: MPS102" in r.stdout
    # one .mm of a commit: the hook still finds the checkout's yaml (as context, not linted): DSP301
    assert f"{binary_ops}:34:1: DSP301" in r.stdout
    assert "native_functions.yaml:" not in r.stdout
    assert "notes.txt" not in r.stdout  # the files regex kept it away from mpslint
    r = try_repo(hook_repo, target, "--files", "extra/mps/Ok.mm", "notes.txt")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Passed" in r.stdout
