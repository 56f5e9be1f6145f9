"""Shared helpers for the integration tests: temporary git repositories holding a copy of the fixture tree."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .conftest import FIXTURES

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
}

YAML_REL = "aten/src/ATen/native/native_functions.yaml"
MIGRATED = "    CPU, CUDA, MPS: copysign_out\n"
UNMIGRATED = "    CPU, CUDA: copysign_out\n    MPS: copysign_out_mps\n"


def git(repo: Path, *args: str, check: bool = True) -> str:
    out = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, env={**os.environ, **GIT_ENV})
    if check and out.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {out.stderr}")
    return out.stdout


def init_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    return path


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD").strip()


# DSP301 (opt-in) is the cross-file canary of these tests: a yaml change raises it in an unchanged `.mm`
CANARY_CONFIG = '[tool.mpslint]\nextend-select = ["DSP301"]\n'


def fixture_repo(path: Path) -> Path:
    """A git repository whose `aten/` is the fixture tree, committed on `main`, with DSP301 selected."""
    init_repo(path)
    shutil.copytree(FIXTURES / "aten", path / "aten")
    (path / "pyproject.toml").write_text(CANARY_CONFIG)
    (path / "pyproject.toml").write_text(CANARY_CONFIG)
    commit_all(path, "base")
    return path


def copysign_repo(path: Path) -> Path:
    """`main` has copysign entirely on MPSGraph (no DSP301); branch `pr` migrates copysign.out in the yaml only.

    The migration makes DSP301 fire on the unchanged `copysign.Scalar_out` yaml entry and on the unchanged
    `BinaryOps.mm`.
    """
    init_repo(path)
    shutil.copytree(FIXTURES / "aten", path / "aten")
    (path / "pyproject.toml").write_text(CANARY_CONFIG)
    y = path / YAML_REL
    text = y.read_text()
    assert MIGRATED in text
    y.write_text(text.replace(MIGRATED, UNMIGRATED))
    commit_all(path, "base")
    git(path, "checkout", "-q", "-b", "pr")
    y.write_text(text)
    commit_all(path, "migrate copysign.out")
    return path


class chdir:
    def __init__(self, path):
        self.path = path

    def __enter__(self):
        self.old = os.getcwd()
        os.chdir(self.path)

    def __exit__(self, *a):
        os.chdir(self.old)
