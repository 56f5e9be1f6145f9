"""Determinism: the same tree gives byte-identical output in every registered format, whatever the order in
which the file system lists it, the order of the paths on the command line, the number of parallel
workers (``--jobs``) and whether the facts came from the cache."""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from mpslint.cli import main
from mpslint.engine import LintOptions, lint
from mpslint.reporters import FORMATS, get_reporter

ROOT = Path(__file__).resolve().parents[1]
ATEN = ROOT / "fixtures" / "aten"


def copy_tree(dest: Path, order: str) -> Path:
    """fixtures/aten copied to ``dest/aten``, its directories and files created in ``order``."""
    files = sorted(p.relative_to(ATEN) for p in ATEN.rglob("*") if p.is_file())
    if order == "reversed":
        files.reverse()
    elif order.startswith("shuffled"):
        random.Random(order).shuffle(files)
    for rel in files:
        target = dest / "aten" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ATEN / rel, target)
    return dest


def render_all(result) -> dict[str, str]:
    out = {}
    for fmt in sorted(FORMATS):
        out[fmt] = get_reporter(fmt)(result, color=False, statistics=True)
    return out


def lint_tree(tree: Path, monkeypatch, paths=("aten",), **kw) -> dict[str, str]:
    monkeypatch.chdir(tree)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    result = lint(LintOptions(paths=list(paths), select=["ALL"], cwd=tree, **kw))
    assert not result.internal_errors, result.internal_errors
    assert result.findings, "the fixture tree has findings on purpose"
    return render_all(result)


def assert_same(a: dict[str, str], b: dict[str, str], what: str) -> None:
    assert a.keys() == b.keys()
    differ = [fmt for fmt in a if a[fmt] != b[fmt]]
    assert not differ, f"{what}: output differs in {differ}"


@pytest.fixture(scope="module")
def trees(tmp_path_factory):
    return {o: copy_tree(tmp_path_factory.mktemp(o), o) for o in ("sorted", "reversed", "shuffled-1", "shuffled-2")}


def test_file_creation_order_does_not_matter(trees, monkeypatch):
    base = lint_tree(trees["sorted"], monkeypatch)
    for order in ("reversed", "shuffled-1", "shuffled-2"):
        assert_same(base, lint_tree(trees[order], monkeypatch), f"tree created in {order} order")


def test_directory_listing_order_does_not_matter(trees, monkeypatch):
    """os.walk / os.listdir / os.scandir return entries in a shuffled order (as another file system would)."""
    base = lint_tree(trees["sorted"], monkeypatch)
    rng = random.Random(9)
    real_walk, real_listdir, real_scandir = os.walk, os.listdir, os.scandir

    def walk(top, *a, **kw):
        for dirpath, dirnames, filenames in real_walk(top, *a, **kw):
            rng.shuffle(dirnames)
            rng.shuffle(filenames)
            yield dirpath, dirnames, filenames

    def listdir(path="."):
        names = real_listdir(path)
        rng.shuffle(names)
        return names

    class _Scandir:
        def __init__(self, *a):
            self._it = real_scandir(*a)
            self._entries = list(self._it)
            rng.shuffle(self._entries)

        def __iter__(self):
            return self

        def __next__(self):
            if not self._entries:
                raise StopIteration
            return self._entries.pop()

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self._it.close()

        def close(self):
            self._it.close()

    monkeypatch.setattr(os, "walk", walk)
    monkeypatch.setattr(os, "listdir", listdir)
    monkeypatch.setattr(os, "scandir", _Scandir)
    for _ in range(3):
        assert_same(base, lint_tree(trees["sorted"], monkeypatch), "shuffled directory listings")


def test_command_line_path_order_does_not_matter(trees, monkeypatch):
    tree = trees["shuffled-1"]
    files = sorted(p.relative_to(tree).as_posix() for p in (tree / "aten").rglob("*") if p.is_file() and p.suffix in (".mm", ".metal", ".yaml", ".py", ".h"))
    base = lint_tree(tree, monkeypatch, paths=files)
    for seed in (1, 2):
        shuffled = list(files)
        random.Random(seed).shuffle(shuffled)
        assert_same(base, lint_tree(tree, monkeypatch, paths=shuffled), f"paths in shuffled order (seed {seed})")
    # the same file named twice, and through a directory and by name
    assert_same(base, lint_tree(tree, monkeypatch, paths=files + files[:3]), "repeated paths")


@pytest.mark.parametrize("jobs", [0, 2, 3])
def test_worker_count_does_not_matter(trees, monkeypatch, jobs):
    base = lint_tree(trees["sorted"], monkeypatch, jobs=1)
    assert_same(base, lint_tree(trees["reversed"], monkeypatch, jobs=jobs), f"--jobs {jobs}")


def test_cold_and_warm_cache_give_the_same_output(trees, monkeypatch, tmp_path):
    base = lint_tree(trees["sorted"], monkeypatch, jobs=1)
    cache = tmp_path / "cache"
    for jobs in (1, 2, 2, 1):  # cold (serial), warm (parallel: every file a hit), ...
        assert_same(base, lint_tree(trees["sorted"], monkeypatch, jobs=jobs, cache_dir=cache), f"cache, --jobs {jobs}")


def test_cli_output_identical_across_formats_jobs_and_trees(trees, monkeypatch):
    """Through the command line (as CI runs it): every format, --jobs 1 and 2, two differently built trees."""
    if "--jobs" not in CliRunner().invoke(main, ["check", "--help"]).output:
        pytest.skip("check has no --jobs option")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    outputs: dict[str, set] = {}
    for order, jobs in (("sorted", "1"), ("shuffled-2", "2")):
        monkeypatch.chdir(trees[order])
        for fmt in sorted(FORMATS):
            r = CliRunner().invoke(main, ["check", "aten", "--isolated", "--no-cache", "--select", "ALL", "--format", fmt, "--jobs", jobs])
            assert r.exit_code in (0, 1), (fmt, r.output[-500:])
            outputs.setdefault(fmt, set()).add(r.stdout)
    differ = [fmt for fmt, outs in outputs.items() if len(outs) != 1]
    assert not differ, f"CLI output differs in {differ}"
