"""``--format lintrunner`` and the documented ``[[linter]]`` block, run by the real lintrunner."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from mpslint.cli import main
from mpslint.engine import LintOptions, lint
from mpslint.reporters import lintrunner as lr

from ._integration_helpers import GIT_ENV, chdir, commit_all, fixture_repo
from .conftest import ROOT

KEYS = {"path", "line", "char", "code", "severity", "name", "original", "replacement", "description"}


def _lintrunner() -> str | None:
    cand = Path(sys.executable).parent / "lintrunner"
    return str(cand) if cand.exists() else shutil.which("lintrunner")


LINTRUNNER = _lintrunner()


def documented_block() -> str:
    text = (ROOT / "docs/integrations.md").read_text()
    blocks = re.findall(r"```toml\n(.*?)```", text, re.S)
    (block,) = [b for b in blocks if "[[linter]]" in b]
    return block


def messages(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    return fixture_repo(tmp_path_factory.mktemp("lr") / "repo")


def test_messages_follow_the_protocol(tree):
    with chdir(tree):
        result = lint(LintOptions(paths=["aten"], select=["ALL"]))
        out = messages(lr.render(result))
    assert len(out) == len(result.findings) > 0
    for m, f in zip(out, result.findings):
        assert set(m) == KEYS
        assert m["path"] == f.path and m["line"] == f.span.line and m["char"] == f.span.column
        assert m["code"] == "MPSLINT" and m["name"].startswith(f.code + " ")
        assert m["severity"] in ("error", "warning", "advice")
    patched = [m for m in out if m["replacement"] is not None]
    assert patched, "the fixture tree has safe fixes"
    assert len({m["path"] for m in patched}) == len(patched)  # one patch per file: lintrunner rejects two
    for m in patched:
        src = (tree / m["path"]).read_text()
        assert m["original"] == src and m["replacement"] != src


def test_adapter_exits_zero_and_reports_its_failures_without_a_path(tree, tmp_path):
    bad_cfg = tmp_path / "pyproject.toml"
    bad_cfg.write_text("[tool.mpslint]\nbogus = 1\n")
    with chdir(tree):
        r = CliRunner().invoke(main, ["check", "--format", "lintrunner", "--config", str(bad_cfg), "aten"])
        assert r.exit_code == 0
        (m,) = messages(r.stdout)
        assert m["path"] is None and m["severity"] == "error" and "bogus" in m["description"]
        r = CliRunner().invoke(main, ["check", "--format", "lintrunner", "--isolated", "no/such/file.mm"])
        assert r.exit_code == 0
        (m,) = messages(r.stdout)
        assert m["path"] is None and "no such file" in m["description"]
        r = CliRunner().invoke(main, ["check", "--format", "lintrunner", "--isolated", "aten"])
        assert r.exit_code == 0 and messages(r.stdout)  # findings, still exit 0


def test_internal_errors_are_path_less_messages(tree):
    with chdir(tree):
        result = lint(LintOptions(paths=["aten/src/ATen/native/mps/operations/Shape.mm"]))
    result.internal_errors.append("rule X crashed: boom\ntraceback")
    out = messages(lr.render(result))
    failures = [m for m in out if m["path"] is None]
    assert [m["description"] for m in failures] == ["rule X crashed: boom\ntraceback"]
    assert failures[0]["severity"] == "error" and failures[0]["code"] == "MPSLINT"


def test_paths_file_argument(tree, tmp_path):
    listing = tmp_path / "paths.txt"
    listing.write_text("aten/src/ATen/native/mps/operations/Shape.mm\n\naten/src/ATen/native/mps/operations/BinaryOps.mm\n")
    with chdir(tree):
        r = CliRunner().invoke(main, ["check", "--format", "lintrunner", "--isolated", "--extend-select", "DSP301", f"@{listing}"])
    paths = {m["path"] for m in messages(r.stdout)}
    assert paths == {"aten/src/ATen/native/mps/operations/Shape.mm", "aten/src/ATen/native/mps/operations/BinaryOps.mm"}


@pytest.mark.skipif(LINTRUNNER is None, reason="lintrunner is not installed")
def test_documented_block_with_real_lintrunner(tmp_path):
    repo = fixture_repo(tmp_path / "repo")
    block = documented_block()
    # run the interpreter of this test session; drop init_command (pip_init.py is PyTorch's script)
    block = block.replace("'python3',\n    '-m',", f"{json.dumps(sys.executable)},\n    '-m',", 1)
    block = re.sub(r"init_command = \[.*?\]\n", "", block, flags=re.S)
    (repo / ".lintrunner.toml").write_text(block)
    commit_all(repo, "lintrunner config")
    env = {**os.environ, **GIT_ENV}
    env.pop("GITHUB_STEP_SUMMARY", None)

    def run(*args):
        return subprocess.run([LINTRUNNER, "--data-path", str(tmp_path / "lrdata"), *args], cwd=repo, env=env, capture_output=True, text=True, timeout=300)

    # what lintrunner passes: the tracked files the include patterns match (here all under aten/src)
    from mpslint.discovery import kind_of

    tracked = subprocess.run(["git", "ls-files", "aten/src"], cwd=repo, capture_output=True, text=True).stdout.split()
    files = [p for p in tracked if kind_of(Path(p), explicit=False) is not None]
    from mpslint.config import find_pyproject, load_config

    with chdir(repo):  # the repository's pyproject.toml selects DSP301 too, as the lintrunner run reads it
        expected = lint(LintOptions(paths=files, config=load_config(find_pyproject(repo))))
    r = run("--all-files", "--output", "json")
    assert r.returncode == 1, r.stdout + r.stderr  # lint errors found
    got = messages(r.stdout)
    assert got and all(m["code"] == "MPSLINT" and m["path"] for m in got), got[:3]
    want = {(f.path, f.span.line, f.code) for f in expected.findings}
    assert {(m["path"], m["line"], m["name"].split()[0]) for m in got} == want
    # the yaml is linted too, so DSP301 appears in both places
    assert any(m["path"].endswith("native_functions.yaml") and m["name"].startswith("DSP301") for m in got)
    # -a applies the safe fixes lintrunner was given
    shape = repo / "aten/src/ATen/native/mps/operations/Shape.mm"
    before = shape.read_text()
    r = run("--all-files", "-a")
    after = shape.read_text()
    assert after != before and after.count("c10::checked_convert<uint32_t>(") > before.count("c10::checked_convert<uint32_t>(")
    with chdir(repo):
        again = lint(LintOptions(paths=files))

    def fixable(res):
        return [f for f in res.findings if f.fix is not None and f.fix.applicability == "safe"]

    assert len(fixable(again)) < len(fixable(expected))
    assert not [f for f in fixable(again) if f.path.endswith("Shape.mm")]


def test_apply_fixes_shares_identical_edits_and_skips_conflicts():
    from mpslint.model import Edit
    from mpslint.reporters._common import apply_fixes

    text = "abcdef"
    inc = Edit("f", 0, 0, "#")
    a = (inc, Edit("f", 1, 2, "B"))
    b = (inc, Edit("f", 3, 4, "D"))  # shares the insertion with a
    c = (Edit("f", 1, 3, "xx"),)  # overlaps a
    new, n = apply_fixes(text, [a, b, c])
    assert (new, n) == ("#aBcDef", 2)
    assert apply_fixes(text, [(Edit("f", 2, 9, "x"),)]) == (text, 0)  # out of range: not applied
