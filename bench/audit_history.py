"""Speed of ``mpslint audit --history``: cold (empty facts cache) vs warm (the blob cache populated).

    python bench/audit_history.py                    # the three histories below
    python bench/audit_history.py --commits 100 --scale 1 --json out.json
    python bench/audit_history.py --only synthetic

Histories (built in a temporary directory, or ``--work DIR``; nothing is written into this repository):

- ``fixtures``: the 5-commit repository the tests build from ``fixtures/aten`` (tests/_history_repo.py);
- ``mpslint-repo``: this repository's own history of ``fixtures/aten`` (``git rev-list HEAD``: every commit
  of mpslint so far, most of which leave the fixtures alone), read from the checkout itself;
- ``synthetic``: ``bench/gen_tree.py --scale N`` committed, then ``--commits - 1`` more commits: each moves one
  MPSGraph op onto its shared CPU/CUDA line (the yaml and that op's ``.mm`` change), every 10th also edits a
  ``.metal`` file, every 7th touches only a README (a point that is not audited again).

Per history: ``cold`` = ``run_history`` with an empty cache directory, ``warm`` = again on that cache (the
facts of every blob come from it; git, the graph and the classification still run per point), ``memo-only``
= ``--no-cache`` (facts kept in memory from one point to the next only), and, for scale, one plain
``run_audit`` of the newest tree. Each time is the best of ``--repeat`` runs.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))


def _git(repo: Path, *args: str, date: str | None = None) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}
    if date:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env).stdout.strip()


def synthetic_history(base: Path, commits: int, scale: int) -> Path:
    """gen_tree committed, then ``commits - 1`` commits migrating one MPSGraph op each (deterministic)."""
    from gen_tree import generate

    repo = base / f"synthetic-{scale}x-{commits}"
    if repo.exists():
        shutil.rmtree(repo)
    generate(repo, scale)  # (replaces the directory: before git init)
    _git(repo, "init", "-q", "-b", "main")
    day = [0]

    def commit(msg: str) -> None:
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", msg, date=f"{1767225600 + 86400 * day[0]} +0000")  # 2026-01-01, one commit a day
        day[0] += 1

    commit("synthetic tree (bench/gen_tree.py)")
    yaml = repo / "aten/src/ATen/native/native_functions.yaml"
    ops_dir = repo / "aten/src/ATen/native/mps/operations"
    kernels = sorted((repo / "aten/src/ATen/native/mps/kernels").glob("*.metal"))
    text = yaml.read_text()
    mm_files = sorted(ops_dir.glob("*.mm"))
    graph_ops = []  # (op, its .mm) in file order: style "graph" is every 4th op of gen_tree
    for mm in mm_files:
        body = mm.read_text()
        for line in body.splitlines():
            if line.startswith("TORCH_IMPL_FUNC(") and "_out_mps)" in line:
                graph_ops.append((line[len("TORCH_IMPL_FUNC(") :].split("_out_mps)")[0], mm))
    i = 0
    for c in range(1, commits):
        if c % 7 == 0:
            (repo / "README").write_text(f"revision {c}\n")
            commit(f"README {c}")
            continue
        op, mm = graph_ops[i % len(graph_ops)]
        i += 1
        old = f"    CPU, CUDA: {op}_out\n    MPS: {op}_out_mps\n"
        if old in text:
            text = text.replace(old, f"    CPU, CUDA, MPS: {op}_out\n")
            yaml.write_text(text)
            with open(mm, "a") as fh:
                fh.write(f"\nREGISTER_DISPATCH({op}_stub, &{op}_kernel_mps)\n")
        if c % 10 == 0:
            k = kernels[c % len(kernels)]
            k.write_text(k.read_text() + f"\n// revision {c}\n")
        commit(f"migrate {op} to its shared stub")
    return repo


def cache_dir_for(work: Path, name: str) -> Path:
    return work / ("cache-" + "".join(ch if ch.isalnum() else "-" for ch in name))


CPU = {}  # label -> CPU seconds of this process (time.process_time) of the best run


def timed(fn, repeat: int, label: str | None = None):
    best, out = None, None
    for _ in range(repeat):
        gc.collect()
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        dt = time.perf_counter() - t
        if best is None or dt < best:
            best = dt
            if label:
                CPU[label] = time.process_time() - c
    return best, out


def measure(name: str, paths: list[str], rev_range: str, cwd: Path, work: Path, repeat: int, jobs: int | None, tree_for_audit: Path | None) -> dict:
    from mpslint.audit.history import run_history

    cache = cache_dir_for(work, name)

    def cold():
        if cache.exists():
            shutil.rmtree(cache)
        return run_history(paths, rev_range, cache_dir=cache, cwd=cwd, jobs=jobs)

    t_cold, (report, s_cold) = timed(cold, repeat, "cold")
    t_warm, (warm, s_warm) = timed(lambda: run_history(paths, rev_range, cache_dir=cache, cwd=cwd, jobs=jobs), repeat, "warm")
    assert json.dumps(warm, sort_keys=True) == json.dumps(report, sort_keys=True), "warm report differs from cold"
    t_memo, (_, s_memo) = timed(lambda: run_history(paths, rev_range, cache_dir=None, cwd=cwd, jobs=jobs), repeat)
    row = {
        "history": name,
        "revisions": s_cold.revisions,
        "points": s_cold.points,
        "audited": s_cold.audited,
        "files_newest": report["points"][-1]["files"],
        "changes": len(report["changes"]),
        "cold_s": round(t_cold, 3),
        "warm_s": round(t_warm, 3),
        "memo_only_s": round(t_memo, 3),
        "cold_cpu_s": round(CPU["cold"], 3),
        "warm_cpu_s": round(CPU["warm"], 3),
        "cold_parsed": s_cold.parsed,
        "warm_parsed": s_warm.parsed,
        "warm_cache_hits": s_warm.cache_hits,
        "memo_hits": s_cold.memo_hits,
        "blobs_read": s_cold.blobs_read,
        "mb_read": round(s_cold.bytes_read / 1e6, 2),
        "cold_phases": {k: round(v, 3) for k, v in s_cold.phases.items()},
        "warm_phases": {k: round(v, 3) for k, v in s_warm.phases.items()},
    }
    if tree_for_audit is not None:
        from mpslint.audit.classify import run_audit

        t_one, _ = timed(lambda: run_audit([str(tree_for_audit)], cwd=tree_for_audit), repeat)
        row["one_audit_s"] = round(t_one, 3)
    return row


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, help="where to build the histories (default: a temporary directory)")
    ap.add_argument("--commits", type=int, default=100)
    ap.add_argument("--scale", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=None)
    ap.add_argument("--only", choices=["fixtures", "mpslint-repo", "synthetic"], action="append")
    ap.add_argument("--json", type=Path)
    a = ap.parse_args(argv)
    work = a.work or Path(tempfile.mkdtemp(prefix="mpslint-history-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    only = set(a.only or ["fixtures", "mpslint-repo", "synthetic"])
    rows = []
    if "fixtures" in only:
        from tests._history_repo import build_history_repo

        base = work / "fixtures-history"
        if base.exists():
            shutil.rmtree(base)
        h = build_history_repo(base)
        rows.append(measure("fixtures (5 commits)", [str(h.path)], "main", h.path, work, a.repeat, a.jobs, h.snapshots[-1]))
    if "mpslint-repo" in only:
        n = _git(ROOT, "rev-list", "--count", "--first-parent", "HEAD")
        rows.append(measure(f"mpslint repo fixtures/aten ({n} commits)", [str(ROOT / "fixtures/aten")], "HEAD", ROOT, work, a.repeat, a.jobs, None))
    if "synthetic" in only:
        t = time.perf_counter()
        repo = synthetic_history(work, a.commits, a.scale)
        built = time.perf_counter() - t
        row = measure(f"synthetic {a.scale}x ({a.commits} commits)", [str(repo)], "main", repo, work, a.repeat, a.jobs, repo)
        row["build_s"] = round(built, 1)
        rows.append(row)
        pts = max(2, a.commits // 5)
        from mpslint.audit.history import run_history

        t_s, (_, s) = timed(lambda: run_history([str(repo)], "main", max_points=pts, cache_dir=cache_dir_for(work, row["history"]), cwd=repo, jobs=a.jobs), a.repeat)
        row[f"warm_max_points_{pts}_s"] = round(t_s, 3)
    info = {
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "maxrss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "rows": rows,
    }
    for r in rows:
        print(json.dumps(r))
    print(json.dumps({k: v for k, v in info.items() if k != "rows"}))
    if a.json:
        a.json.write_text(json.dumps(info, indent=2) + "\n")
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
