"""mpslint's speed benchmark: one run, every tree, every number the targets are about.

    python bench/run.py                 # wheel, fixtures, synthetic 1x/3x/10x (+ /work/realtree if present)
    python bench/run.py --quick         # skip the 10x tree
    python bench/run.py --json out.json --repeat 5
    python bench/run.py --profile synthetic-1x   # cProfile of a cold serial run, top functions

Trees (assembled in a temporary directory; nothing is written into the repository):

- ``wheel``: the torch wheel's real ``native_functions.yaml``, ``c10/metal`` and ``ATen/native/mps``
  headers and ``common_mps.py``, laid out like a PyTorch checkout (as ``real_tree`` in tests/conftest.py);
- ``fixtures``: ``fixtures/aten``;
- ``synthetic-1x``, ``-3x``, ``-10x``: ``bench/gen_tree.py`` at scales 1, 3 and 10;
- ``realtree``: the wheel tree plus the real ``.metal``/``.mm`` sources under ``$MPSLINT_REALTREE``
  (default ``/work/realtree/pytorch``), when that directory has any.

Per tree, with the same files mpslint discovers:

- floor: bare tree-sitter-cpp parse of every C++/Metal file (its raw bytes) plus ``yaml.load`` with the
  C loader of the yaml, in this process, serial;
- cold: ``lint()`` in this process with an empty cache directory (parse, facts, cache writes, graph,
  rules), default ``--jobs`` (automatic), and again with ``--jobs 1``;
- warm: ``lint()`` again on the populated cache;
- one-file: ``mpslint check ONE_FILE`` in a subprocess with the warm cache, wall time including the
  interpreter start (the file is the tree's largest ``.mm``, else its largest file; the yaml is found by
  walking up, as in a pre-commit run);
- the ratios the targets are about: cold/floor <= 1.5, warm/cold <= 0.3, one-file <= 0.5 s,
  cold(10x)/cold(1x) <= 10.5.

Each time is the best of ``--repeat`` runs (noise only ever adds time).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

TARGETS = {"cold/floor": 1.5, "warm/cold": 0.3, "one-file (s)": 0.5, "10x/1x cold": 10.5}


def torch_site() -> Path | None:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]).parent


def assemble_wheel_tree(base: Path, site: Path) -> Path:
    native = base / "aten/src/ATen/native"
    native.mkdir(parents=True)
    shutil.copy(site / "torchgen/packaged/ATen/native/native_functions.yaml", native)
    shutil.copytree(site / "torch/include/ATen/native/mps", native / "mps")
    shutil.copytree(site / "torch/include/c10/metal", base / "c10/metal")
    common = site / "torch/testing/_internal/common_mps.py"
    if common.is_file():
        (base / "torch/testing/_internal").mkdir(parents=True)
        shutil.copy(common, base / "torch/testing/_internal")
    return base


def assemble_realtree(base: Path, site: Path, real: Path) -> Path | None:
    mps = real / "aten/src/ATen/native/mps"
    if not mps.is_dir() or not any(p.suffix in (".metal", ".mm") for p in mps.rglob("*")):
        return None
    assemble_wheel_tree(base, site)
    for p in sorted(mps.rglob("*")):
        if p.is_file() and p.suffix in (".metal", ".mm", ".h", ".cpp"):
            dest = base / "aten/src/ATen/native/mps" / p.relative_to(mps)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(p, dest)
    return base


def best(fn, repeat: int) -> float:
    out = float("inf")
    for _ in range(repeat):
        gc.collect()  # the previous run's garbage is not this run's cost (a CLI run starts clean)
        t = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t)
    return out


class Phases:
    """Wall time spent in engine.load_project (read + facts + graph) and in build_graph during one lint()."""

    def __enter__(self):
        import mpslint.engine as engine

        self.engine = engine
        self.orig = (engine.load_project, engine.build_graph)
        self.load = self.graph = 0.0

        def load_project(*a, **k):
            t = time.perf_counter()
            try:
                return self.orig[0](*a, **k)
            finally:
                self.load += time.perf_counter() - t

        def build_graph(*a, **k):
            t = time.perf_counter()
            try:
                return self.orig[1](*a, **k)
            finally:
                self.graph += time.perf_counter() - t

        engine.load_project, engine.build_graph = load_project, build_graph
        return self

    def __exit__(self, *exc):
        self.engine.load_project, self.engine.build_graph = self.orig


def discovered(tree: Path):
    from mpslint.discovery import discover

    files, _ = discover([str(tree)], tree)
    return files


def floor_time(tree: Path, repeat: int) -> tuple[float, float, float, float, int]:
    """(parse, yaml load, parse + yaml, Python walk, nodes walked) for the files mpslint discovers under ``tree``.

    The walk visits every node of the parse trees once from Python (a TreeCursor, no work per node):
    a lower bound for any analysis written in Python over tree-sitter trees."""
    import tree_sitter_cpp
    import yaml
    from tree_sitter import Language, Parser

    parser = Parser(Language(tree_sitter_cpp.language()))
    blobs, yamls = [], []
    for d in discovered(tree):
        data = Path(d.fs_path).read_bytes()
        if d.kind == "yaml":
            yamls.append(data.decode("utf-8"))
        elif d.kind in ("metal", "host", "header"):
            blobs.append(data)

    def parse_all():
        for b in blobs:
            parser.parse(b)

    def load_all():
        for y in yamls:
            yaml.load(y, Loader=yaml.CSafeLoader)

    def walk_all():
        n = 0
        for t in trees:
            cursor = t.walk()
            down = True
            while True:
                if down and cursor.goto_first_child():
                    n += 1
                    continue
                if cursor.goto_next_sibling():
                    n += 1
                    down = True
                    continue
                if not cursor.goto_parent():
                    break
                down = False
        nodes[0] = n

    p = best(parse_all, repeat)
    y = best(load_all, repeat)
    trees = [parser.parse(b) for b in blobs]
    nodes = [0]
    w = best(walk_all, repeat)
    return p, y, p + y, w, nodes[0]


def lint_once(tree: Path, cache_dir: Path | None, jobs: int | None):
    from mpslint.engine import LintOptions, lint

    return lint(LintOptions(paths=["."], cwd=tree, cache_dir=cache_dir, jobs=jobs))


def in_tree(tree: Path):
    """lint() resolves paths against the process's working directory: run it from the tree."""

    class _Cd:
        def __enter__(self):
            self.old = os.getcwd()
            os.chdir(tree)

        def __exit__(self, *exc):
            os.chdir(self.old)

    return _Cd()


def cold_time(tree: Path, work: Path, jobs: int | None, repeat: int) -> tuple[float, dict]:
    """Best cold time, and the phases of that run (facts = load_project without the graph; rules = the rest)."""
    runs = []
    for k in range(repeat):
        cache = work / f"cold-{jobs}-{k}"
        shutil.rmtree(cache, ignore_errors=True)
        with in_tree(tree), Phases() as ph:
            gc.collect()
            t = time.perf_counter()
            lint_once(tree, cache, jobs)
            total = time.perf_counter() - t
        runs.append((total, {"facts": ph.load - ph.graph, "graph": ph.graph, "rules": total - ph.load}))
        shutil.rmtree(cache, ignore_errors=True)
    return min(runs, key=lambda r: r[0])


def one_file_target(tree: Path) -> Path:
    files = discovered(tree)
    mm = [Path(d.fs_path) for d in files if d.fs_path.endswith(".mm")]
    pool = mm or [Path(d.fs_path) for d in files if d.kind != "yaml"] or [Path(d.fs_path) for d in files]
    return max(pool, key=lambda p: (p.stat().st_size, str(p)))


def one_file_time(tree: Path, cache: Path, repeat: int) -> tuple[float, str]:
    target = one_file_target(tree)
    rel = target.relative_to(tree).as_posix()
    cmd = [sys.executable, "-m", "mpslint.cli", "check", rel, "--cache-dir", str(cache), "--exit-zero", "--isolated"]
    env = dict(os.environ, NO_COLOR="1")
    subprocess.run(cmd, cwd=tree, env=env, capture_output=True, check=False)  # warms entries for this cwd

    def run():
        r = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, check=False)
        if r.returncode not in (0, 1):
            raise SystemExit(f"one-file run failed ({r.returncode}): {r.stderr.decode()[-2000:]}")

    return best(run, repeat), rel


def bench_tree(name: str, tree: Path, work: Path, repeat: int) -> dict:
    files = discovered(tree)
    nbytes = sum(Path(d.fs_path).stat().st_size for d in files)
    row: dict = {"tree": name, "files": len(files), "bytes": nbytes}
    row["parse"], row["yaml"], row["floor"], row["walk"], row["nodes"] = floor_time(tree, repeat)
    row["cold"], phases = cold_time(tree, work, None, repeat)
    row.update({f"cold_{k}": v for k, v in phases.items()})
    row["cold_jobs1"], phases1 = cold_time(tree, work, 1, repeat)
    row.update({f"cold_jobs1_{k}": v for k, v in phases1.items()})
    cache = work / f"warm-{name}"
    shutil.rmtree(cache, ignore_errors=True)
    with in_tree(tree):
        result = lint_once(tree, cache, None)
        row["findings"] = len(result.findings)
        row["warm"] = best(lambda: lint_once(tree, cache, None), repeat)
        with Phases() as ph:
            gc.collect()
            t = time.perf_counter()
            lint_once(tree, cache, None)
            total = time.perf_counter() - t
        row.update({"warm_facts": ph.load - ph.graph, "warm_graph": ph.graph, "warm_rules": total - ph.load})
        warm = lint_once(tree, cache, None)
        row["warm_hits"] = warm.project.cache.hits if warm.project.cache is not None else 0
    row["one_file"], row["one_file_path"] = one_file_time(tree, cache, repeat)
    row["cold/floor"] = row["cold"] / row["floor"] if row["floor"] else None
    row["warm/cold"] = row["warm"] / row["cold"] if row["cold"] else None
    shutil.rmtree(cache, ignore_errors=True)
    return row


def fmt_table(rows: list[dict]) -> str:
    cols = [
        ("tree", "{}"), ("files", "{}"), ("bytes", "{:,}"), ("parse", "{:.3f}"), ("yaml", "{:.3f}"), ("floor", "{:.3f}"),
        ("nodes", "{:,}"), ("walk", "{:.3f}"), ("cold", "{:.3f}"), ("cold_jobs1", "{:.3f}"), ("warm", "{:.3f}"), ("one_file", "{:.3f}"),
        ("cold/floor", "{:.2f}"), ("warm/cold", "{:.2f}"), ("findings", "{}"),
    ]
    head = [c for c, _ in cols]
    body = [[f.format(r[c]) if r.get(c) is not None else "-" for c, f in cols] for r in rows]
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    lines = ["  ".join(h.rjust(w) for h, w in zip(head, widths))]
    lines += ["  ".join(v.rjust(w) for v, w in zip(b, widths)) for b in body]
    lines += ["", "phases (s): facts = read + parse + facts (+ cache), graph = build_graph, rules = rules + filtering"]
    for r in rows:
        lines.append(
            f"  {r['tree']:>14}  cold: facts {r['cold_facts']:.3f} graph {r['cold_graph']:.3f} rules {r['cold_rules']:.3f}"
            f"  | jobs 1: facts {r['cold_jobs1_facts']:.3f}"
            f"  | warm: facts {r['warm_facts']:.3f} graph {r['warm_graph']:.3f} rules {r['warm_rules']:.3f}"
        )
    return "\n".join(lines)


def verdicts(rows: list[dict]) -> list[str]:
    out = []
    by = {r["tree"]: r for r in rows}
    for r in rows:
        t = r["tree"]
        out.append(f"{t}: cold/floor {r['cold/floor']:.2f} (target <= 1.5) {'ok' if r['cold/floor'] <= 1.5 else 'MISSED'}; "
                   f"warm/cold {r['warm/cold']:.2f} (<= 0.3) {'ok' if r['warm/cold'] <= 0.3 else 'MISSED'}; "
                   f"one-file {r['one_file']:.3f} s (<= 0.5) {'ok' if r['one_file'] <= 0.5 else 'MISSED'}")
    if "synthetic-1x" in by and "synthetic-10x" in by:
        a, b = by["synthetic-1x"], by["synthetic-10x"]
        for key in ("cold", "cold_jobs1", "warm"):
            ratio = b[key] / a[key]
            out.append(f"scaling: {key}(10x)/{key}(1x) = {ratio:.2f} (target <= 10.5) {'ok' if ratio <= 10.5 else 'MISSED'}")
    if "synthetic-1x" in by and "synthetic-3x" in by:
        a, b = by["synthetic-1x"], by["synthetic-3x"]
        out.append(f"scaling: cold(3x)/cold(1x) = {b['cold'] / a['cold']:.2f}")
    return out


def profile(tree: Path, top: int = 40) -> None:
    import cProfile
    import pstats

    with in_tree(ROOT / "fixtures"):
        lint_once(ROOT / "fixtures", None, 1)  # imports
    pr = cProfile.Profile()
    with in_tree(tree):
        pr.enable()
        lint_once(tree, None, 1)
        pr.disable()
    pstats.Stats(pr).sort_stats("tottime").print_stats(top)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="mpslint speed benchmark")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best is kept")
    ap.add_argument("--quick", action="store_true", help="skip the 10x synthetic tree")
    ap.add_argument("--trees", help="comma-separated subset: wheel,fixtures,synthetic-1x,synthetic-3x,synthetic-10x,realtree")
    ap.add_argument("--work", type=Path, help="where to build trees and caches (default: a temporary directory)")
    ap.add_argument("--json", type=Path, help="also write the results as JSON")
    ap.add_argument("--profile", metavar="TREE", help="print a cProfile of a cold serial run on TREE and exit")
    a = ap.parse_args(argv)

    tmp = None
    if a.work is None:
        tmp = tempfile.TemporaryDirectory(prefix="mpslint-bench-")
        work = Path(tmp.name)
    else:
        work = a.work.resolve()
        work.mkdir(parents=True, exist_ok=True)
    try:
        from gen_tree import generate

        site = torch_site()
        wanted = a.trees.split(",") if a.trees else ["wheel", "fixtures", "synthetic-1x", "synthetic-3x", "synthetic-10x", "realtree"]
        if a.quick and not a.trees:
            wanted.remove("synthetic-10x")
        trees: list[tuple[str, Path]] = []
        for name in wanted:
            dest = work / "trees" / name
            if name == "fixtures":
                trees.append((name, ROOT / "fixtures/aten"))
            elif name == "wheel":
                if site is None or not (site / "torchgen/packaged/ATen/native/native_functions.yaml").is_file():
                    print("wheel: torch (with torchgen) is not installed; skipped", file=sys.stderr)
                    continue
                shutil.rmtree(dest, ignore_errors=True)
                trees.append((name, assemble_wheel_tree(dest, site)))
            elif name.startswith("synthetic-"):
                scale = int(name.split("-")[1].rstrip("x"))
                generate(dest, scale)
                trees.append((name, dest))
            elif name == "realtree":
                real = Path(os.environ.get("MPSLINT_REALTREE", "/work/realtree/pytorch"))
                if site is None:
                    continue
                shutil.rmtree(dest, ignore_errors=True)
                got = assemble_realtree(dest, site, real)
                if got is None:
                    if a.trees:
                        print(f"realtree: no .metal/.mm sources under {real}; skipped", file=sys.stderr)
                    continue
                trees.append((name, got))
            else:
                ap.error(f"unknown tree {name!r}")
        if a.profile:
            profile(dict(trees)[a.profile])
            return 0
        with in_tree(ROOT / "fixtures"):
            lint_once(ROOT / "fixtures", None, 1)  # imports and parser creation are not part of any measurement
        rows = []
        for name, tree in trees:
            print(f"... {name} ({tree})", file=sys.stderr, flush=True)
            rows.append(bench_tree(name, tree, work, a.repeat))
            print(fmt_table(rows[-1:]).splitlines()[1], file=sys.stderr, flush=True)  # progress
        from mpslint import __version__

        print(f"mpslint {__version__}, Python {platform.python_version()}, {platform.system()} {platform.machine()}, "
              f"{os.cpu_count()} CPUs, best of {a.repeat}; times in seconds")
        print(fmt_table(rows))
        print()
        for line in verdicts(rows):
            print(line)
        if a.json:
            a.json.write_text(json.dumps({"rows": rows, "verdicts": verdicts(rows), "targets": TARGETS}, indent=2))
    finally:
        if tmp is not None:
            tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
