"""The facts cache (mpslint/cache.py), parallel parsing (mpslint/parallel.py) and lazy imports.

No timing assertions here: speed is measured by bench/run.py.
"""

from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from mpslint import cache as cache_mod
from mpslint import parallel
from mpslint.cli import main
from mpslint.engine import LintOptions, lint

from .conftest import FIXTURES, ROOT

sys.path.insert(0, str(ROOT / "bench"))
from gen_tree import generate  # noqa: E402


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    """A private copy of fixtures/aten (tests edit it)."""
    dest = tmp_path / "aten"
    shutil.copytree(FIXTURES / "aten", dest)
    return dest


def run_lint(tree: Path, cache_dir: Path | None, jobs: int | None = 1, monkeypatch=None):
    old = os.getcwd()
    os.chdir(tree)
    try:
        return lint(LintOptions(paths=["."], select=["ALL"], cache_dir=cache_dir, jobs=jobs))
    finally:
        os.chdir(old)


def summary(result) -> list[tuple]:
    return [(f.code, f.path, f.span.line, f.span.column, f.message) for f in result.findings]


def entries(cache_dir: Path) -> list[Path]:
    return sorted((cache_dir / "facts").glob("*/*.pkl"))


def test_hit_and_miss_by_content(tree: Path, tmp_path: Path):
    cdir = tmp_path / "cache"
    reference = run_lint(tree, None)
    first = run_lint(tree, cdir)
    n = len(first.project.sources)
    assert n > 5
    assert (first.project.cache.hits, first.project.cache.misses, first.project.cache.writes) == (0, n, n)
    assert len(entries(cdir)) == n
    second = run_lint(tree, cdir)
    assert (second.project.cache.hits, second.project.cache.misses, second.project.cache.writes) == (0 + n, 0, 0)
    assert summary(first) == summary(second) == summary(reference)
    # editing one file misses that file only, and its new findings come through
    mm = tree / "src/ATen/native/mps/operations/Shape.mm"
    mm.write_text(mm.read_text() + "\nvoid added_by_test(const Tensor& in) {\n  const uint32_t k = static_cast<uint32_t>(in.numel());\n}\n")
    third = run_lint(tree, cdir)
    assert (third.project.cache.hits, third.project.cache.misses) == (n - 1, 1)
    assert summary(third) == summary(run_lint(tree, None))
    assert summary(third) != summary(second)
    # touching a file without changing its bytes is still a hit
    os.utime(mm, None)
    assert run_lint(tree, cdir).project.cache.misses == 0


def test_key_covers_path_kind_and_code(tree: Path, tmp_path: Path):
    cdir = tmp_path / "cache"
    run_lint(tree, cdir)
    # the same bytes under another name are another entry (facts carry their path)
    src = tree / "src/ATen/native/mps/operations/Shape.mm"
    shutil.copy(src, src.with_name("ShapeCopy.mm"))
    res = run_lint(tree, cdir)
    assert res.project.cache.misses == 1
    assert "src/ATen/native/mps/operations/ShapeCopy.mm" in res.project.hosts
    # another analysis version (fingerprint) never reads these entries
    c = cache_mod.FactsCache(cdir)
    s = res.project.sources["src/ATen/native/mps/operations/Shape.mm"]
    assert c.get(s) is not None
    c.fingerprint = "0" * 64
    assert c.get(s) is None


def corrupt_all(cdir: Path, how: str) -> None:
    for p in entries(cdir):
        data = p.read_bytes()
        if how == "garbage":
            p.write_bytes(b"\x80\x05not a pickle at all")
        elif how == "truncated":
            p.write_bytes(data[: len(data) // 2])
        elif how == "empty":
            p.write_bytes(b"")
        elif how == "wrong-type":
            key = p.stem
            p.write_bytes(pickle.dumps((cache_mod.MAGIC, cache_mod.FACTS_SCHEMA, key, {"not": "facts"})))
        elif how == "wrong-key":
            magic, schema, _key, facts = pickle.loads(data)
            p.write_bytes(pickle.dumps((magic, schema, "f" * 64, facts)))
        elif how == "old-schema":
            magic, schema, key, facts = pickle.loads(data)
            p.write_bytes(pickle.dumps((magic, schema - 1, key, facts)))
        elif how == "directory":
            p.unlink()
            p.mkdir()


@pytest.mark.parametrize("how", ["garbage", "truncated", "empty", "wrong-type", "wrong-key", "old-schema", "directory"])
def test_corrupt_entries_are_misses(tree: Path, tmp_path: Path, how: str):
    cdir = tmp_path / "cache"
    reference = run_lint(tree, cdir)
    n = len(reference.project.sources)
    corrupt_all(cdir, how)
    again = run_lint(tree, cdir)
    assert again.internal_errors == []
    assert again.project.cache.hits == 0 and again.project.cache.misses == n
    assert summary(again) == summary(reference)
    if how != "directory":  # rewritten: the next run hits again
        assert run_lint(tree, cdir).project.cache.hits == n


def test_unwritable_cache_dir_is_not_an_error(tree: Path, tmp_path: Path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    res = run_lint(tree, blocker / "cache")
    assert res.internal_errors == []
    assert res.project.cache.writes == 0 and res.project.cache.write_failures > 0
    assert summary(res) == summary(run_lint(tree, None))


def test_cache_dir_is_tagged_and_ignored(tree: Path, tmp_path: Path):
    cdir = tmp_path / "cache"
    run_lint(tree, cdir)
    assert (cdir / ".gitignore").read_text().strip().endswith("*")
    assert (cdir / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert not list(cdir.rglob("*.part")), "no temporary files are left behind"


_CLI = [sys.executable, "-m", "mpslint.cli"]


def test_concurrent_runs_share_a_cache_dir(tree: Path, tmp_path: Path):
    """Runs started together on one (empty, then warm) cache dir all report the same, and leave whole entries."""
    cdir = tmp_path / "shared"
    args = [*_CLI, "check", ".", "--select", "ALL", "--format", "json", "--cache-dir", str(cdir), "--isolated", "--exit-zero"]
    env = dict(os.environ, NO_COLOR="1")
    expected = subprocess.run([*args[:-4], "--no-cache", "--isolated", "--exit-zero"], cwd=tree, env=env, capture_output=True, text=True)
    assert expected.returncode == 0, expected.stderr
    for _round in range(2):
        procs = [subprocess.Popen(args + ["--jobs", str(j % 2 + 1)], cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for j in range(4)]
        for p in procs:
            out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
            assert out == expected.stdout
    es = entries(cdir)
    assert len(es) == len(list(tree.rglob("*.m*")) + list(tree.rglob("*.yaml")) + list(tree.rglob("*.py")))
    for p in es:  # every entry is a whole pickle of our format
        magic, schema, key, _facts = pickle.loads(p.read_bytes())
        assert (magic, schema, key) == (cache_mod.MAGIC, cache_mod.FACTS_SCHEMA, p.stem)
    assert not list(cdir.rglob("*.part"))


def _writer(args):
    directory, key, payload, rounds = args
    for _ in range(rounds):
        cache_mod.atomic_write(Path(directory) / "entry.pkl", cache_mod.dumps_entry(key, payload))
    return True


def test_atomic_writes_never_expose_partial_entries(tmp_path: Path):
    """Writers racing on one entry while a reader polls it: the reader sees nothing or a whole entry."""
    import multiprocessing

    key = "k" * 64
    big = "x" * 200_000
    target = tmp_path / "entry.pkl"
    ctx = multiprocessing.get_context("fork" if sys.platform.startswith("linux") else "spawn")
    with ctx.Pool(2) as pool:
        pending = pool.map_async(_writer, [(str(tmp_path), key, big, 200)] * 2)
        seen = 0
        while not pending.ready():
            try:
                data = target.read_bytes()
            except FileNotFoundError:
                continue
            magic, schema, k, payload = pickle.loads(data)  # raises on a partial file
            assert (magic, k, payload) == (cache_mod.MAGIC, key, big)
            seen += 1
        assert pending.get() == [True, True]
    assert pickle.loads(target.read_bytes())[3] == big
    assert not list(tmp_path.glob("*.part"))


# ---------------------------------------------------------------- parallel parsing


def cli(args: list[str], cwd: Path) -> tuple[int, str]:
    r = subprocess.run([*_CLI, *args], cwd=cwd, env=dict(os.environ, NO_COLOR="1"), capture_output=True, text=True)
    return r.returncode, r.stdout


def test_output_identical_across_jobs(tmp_path: Path):
    tree = tmp_path / "syn"
    generate(tree, 1)
    # a smaller tree keeps the test quick: drop most operation and kernel files
    for sub, keep in (("operations", 6), ("kernels", 6)):
        for p in sorted((tree / "aten/src/ATen/native/mps" / sub).iterdir())[keep:]:
            p.unlink()
    yaml = tree / "aten/src/ATen/native/native_functions.yaml"
    yaml.write_text("\n- func:".join(yaml.read_text().split("\n- func:")[:300]) + "\n")
    for fmt in ("text", "json"):
        base = ["check", ".", "--select", "ALL", "--format", fmt, "--isolated", "--no-cache", "--statistics"]
        rc1, one = cli(base + ["--jobs", "1"], tree)
        rc2, two = cli(base + ["--jobs", "2"], tree)
        assert rc1 == rc2 == 1
        assert one and one == two
    # a parallel cold run writes the cache; a serial warm run reads it: same bytes again
    cdir = tmp_path / "cache"
    cached = [a for a in base if a != "--no-cache"] + ["--cache-dir", str(cdir)]
    assert cli(cached + ["--jobs", "2"], tree)[1] == one
    assert len(entries(cdir)) > 10
    assert cli(cached + ["--jobs", "1"], tree)[1] == one


def test_parallel_matches_serial_in_process(tree: Path, tmp_path: Path):
    serial = run_lint(tree, None, jobs=1)
    par = run_lint(tree, tmp_path / "c", jobs=2)
    assert summary(serial) == summary(par)
    assert par.project.cache.writes == len(par.project.sources)
    assert sorted(serial.project.hosts) == sorted(par.project.hosts)
    assert serial.stats == par.stats


def test_plan_jobs_keeps_small_runs_serial():
    from mpslint.source import SourceFile

    small = [SourceFile(f"f{i}.mm", "int x;\n", "host", "s") for i in range(10)]
    big = [SourceFile(f"f{i}.mm", "x" * (parallel.MIN_BYTES // 4 + 1), "host", "s") for i in range(10)]
    assert parallel.plan_jobs(small, None) == 1  # auto: not worth a pool
    assert parallel.plan_jobs(small, 1) == 1
    assert parallel.plan_jobs(small, 0) == 1
    assert parallel.plan_jobs(small, 2) == 2  # asked for explicitly
    assert parallel.plan_jobs(small[:1], 4) == 1  # never more workers than files
    assert parallel.plan_jobs(big, None) == min(parallel.available_cpus(), 10)


def test_pool_failure_falls_back_to_serial(tree: Path, monkeypatch):
    monkeypatch.setattr(parallel, "_start_method", lambda: "no-such-start-method")
    res = run_lint(tree, None, jobs=2)
    assert res.internal_errors == []
    assert summary(res) == summary(run_lint(tree, None, jobs=1))


def test_internal_errors_reported_the_same_in_workers(tree: Path, monkeypatch):
    import mpslint.project as project

    real = project.file_facts

    def broken(src):
        if src.path.endswith("Shape.mm"):
            raise ValueError("boom")
        if src.path.endswith("Indexing.mm"):
            raise RecursionError("deep")
        return real(src)

    monkeypatch.setattr(project, "file_facts", broken)  # inherited by forked workers
    one = run_lint(tree, None, jobs=1)
    if sys.platform.startswith("linux"):
        two = run_lint(tree, None, jobs=2)
        assert [e.splitlines()[0] for e in one.internal_errors] == [e.splitlines()[0] for e in two.internal_errors]
        assert [str(e) for e in one.errors] == [str(e) for e in two.errors]
    assert [e.splitlines()[0] for e in one.internal_errors] == ["src/ATen/native/mps/operations/Shape.mm: internal error while reading facts: ValueError: boom"]
    assert any("Indexing.mm" in str(e) and "too deeply nested" in str(e) for e in one.errors)


# ---------------------------------------------------------------- CLI options


def test_no_cache_writes_nothing(tree: Path, tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tree)
    monkeypatch.delenv("MPSLINT_CACHE_DIR", raising=False)
    r = CliRunner().invoke(main, ["check", ".", "--isolated", "--no-cache"])
    assert r.exit_code == 1, r.output
    assert not (tree / ".mpslint_cache").exists()
    r = CliRunner().invoke(main, ["check", ".", "--isolated"])  # default: .mpslint_cache in the project root
    assert r.exit_code == 1, r.output
    assert entries(tree / ".mpslint_cache")
    # the cache directory itself is never linted
    r2 = CliRunner().invoke(main, ["check", ".", "--isolated", "--format", "json"])
    assert ".mpslint_cache" not in r2.output


def test_cache_dir_option_and_env(tree: Path, tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tree)
    monkeypatch.setenv("MPSLINT_CACHE_DIR", str(tmp_path / "from-env"))
    CliRunner().invoke(main, ["check", ".", "--isolated"])
    assert entries(tmp_path / "from-env")
    CliRunner().invoke(main, ["check", ".", "--isolated", "--cache-dir", str(tmp_path / "from-option")])
    assert entries(tmp_path / "from-option")
    assert not (tree / ".mpslint_cache").exists()
    assert cache_mod.resolve_cache_dir(None, True, tree) is None
    monkeypatch.delenv("MPSLINT_CACHE_DIR")
    assert cache_mod.resolve_cache_dir(None, False, tree) == tree / ".mpslint_cache"


# ---------------------------------------------------------------- import laziness

HEAVY = ["networkx", "yaml", "tree_sitter", "tree_sitter_cpp", "sarif_om", "jsonschema", "unidiff", "torch", "concurrent.futures.process", "multiprocessing"]


def _modules_after(code: str, cwd: Path = ROOT) -> set[str]:
    probe = textwrap.dedent(code) + "\nimport sys, json\nprint('@@' + json.dumps(sorted(sys.modules)))\n"
    r = subprocess.run([sys.executable, "-c", probe], cwd=cwd, capture_output=True, text=True, env=dict(os.environ, NO_COLOR="1"))
    line = [x for x in r.stdout.splitlines() if x.startswith("@@")]
    assert line, r.stdout + r.stderr
    return set(json.loads(line[-1][2:]))


def test_import_cli_is_light():
    mods = _modules_after("import mpslint.cli")
    assert not [m for m in HEAVY if m in mods]


def test_version_is_light():
    mods = _modules_after(
        """
        from mpslint.cli import main
        try:
            main(["--version"])
        except SystemExit:
            pass
        """
    )
    assert not [m for m in HEAVY if m in mods]


def test_one_file_warm_run_does_not_load_parsers(tree: Path, tmp_path: Path):
    cdir = tmp_path / "cache"
    cache_mod._FINGERPRINT = None  # the code as it is now (the probe process hashes it afresh)
    run_lint(tree, cdir)  # warm
    code = f"""
        from mpslint.cli import main
        try:
            main(["check", "src/ATen/native/mps/operations/Shape.mm", "--isolated", "--cache-dir", {str(cdir)!r}])
        except SystemExit:
            pass
        """
    mods = _modules_after(code, cwd=tree)
    # the file's and the yaml's facts come from the cache: no parser, no yaml loader, no pool
    assert not [m for m in ["yaml", "tree_sitter", "tree_sitter_cpp", "sarif_om", "concurrent.futures.process", "multiprocessing"] if m in mods]
    cold = _modules_after(code.replace(str(cdir), str(tmp_path / "empty")), cwd=tree)
    assert "tree_sitter" in cold and "yaml" in cold  # the probe can see a parser being loaded
