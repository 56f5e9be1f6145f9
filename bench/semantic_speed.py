"""Speed of the semantic model (issue 14): one .mm in a checkout with a warm cache, and a whole tree cold.

Runs the same measurement with two interpreters in one session, each importing its own mpslint: ``--baseline``
(e.g. a venv with the code before the model) and this checkout's. Prints the best of ``--repeat`` runs of the
in-process lint time (imports excluded, as a long-lived pre-commit or editor process sees it), in CPU seconds,
which a loaded machine distorts less than wall time, and the wall time of the whole one-file command (interpreter
start, imports, warm cache: what a pre-commit hook waits for), the two interpreters alternating run by run so a
change in the machine's load hits both alike.

Give each interpreter an environment of its own with a regular (not editable) install, e.g.
``python -m venv /tmp/v && /tmp/v/bin/pip install .``: an editable install in an environment with hundreds of
distributions pays for its import hook and for networkx's scan of every distribution's entry points (about
0.07 s here), and ``PYTHONDONTWRITEBYTECODE=1`` in the environment would recompile every module on every run
(it is removed for the measured processes).

    python bench/semantic_speed.py --tree /path/to/pytorch --file aten/src/ATen/native/mps/operations/GemmMetal.mm \
        --baseline /tmp/oldvenv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

_PROBE = r"""
import json, os, sys, time, resource
t0 = time.process_time()
from mpslint.engine import LintOptions, lint
import mpslint
t1 = time.process_time()
tree, file, cache, mode, repeat = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
os.chdir(tree)
best = None
for _ in range(repeat):
    if mode == "cold":
        import shutil; shutil.rmtree(cache, ignore_errors=True)
    a = time.process_time()
    r = lint(LintOptions(paths=[file], cache_dir=cache, jobs=1))
    b = time.process_time()
    best = b - a if best is None else min(best, b - a)
print(json.dumps({"module": mpslint.__file__, "import": t1 - t0, "lint": best, "findings": len(r.findings), "files": len(r.project.sources)}))
"""


def measure(python: str, tree: str, target: str, mode: str, repeat: int) -> dict:
    cache = tempfile.mkdtemp(prefix="mpslint-bench-")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    if mode == "warm":  # fill the cache (and the .pyc files) once
        subprocess.run([python, "-c", _PROBE, tree, target, cache, "warm", "1"], env=env, check=True, capture_output=True, cwd=tempfile.gettempdir())
    out = subprocess.run([python, "-c", _PROBE, tree, target, cache, mode, str(repeat)], env=env, check=True, capture_output=True, text=True, cwd=tempfile.gettempdir())
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", required=True)
    ap.add_argument("--file", required=True, help="the .mm to lint alone (relative to --tree)")
    ap.add_argument("--baseline", required=True, help="python of an environment with the baseline mpslint")
    ap.add_argument("--python", help="python of the environment with this checkout installed (default: this one)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rows = []
    for label, py in (("baseline", args.baseline), ("this checkout", args.python or sys.executable)):
        warm = measure(py, args.tree, args.file, "warm", args.repeat)
        cold = measure(py, args.tree, ".", "cold", max(2, args.repeat // 2))
        rows.append((label, warm, cold))
    print(f"| code | import (CPU s) | one .mm, warm cache (CPU s) | whole tree, cold (CPU s) | findings (tree) |")
    print("|---|---|---|---|---|")
    for label, warm, cold in rows:
        print(f"| {label} (`{os.path.dirname(warm['module'])}`) | {warm['import']:.2f} | {warm['lint']:.3f} | {cold['lint']:.2f} | {cold['findings']} |")
    (b, bw, bc), (n, nw, nc) = rows
    print(f"\none .mm warm: {nw['lint'] / bw['lint']:.2f}x the baseline; whole tree cold: {nc['lint'] / bc['lint']:.2f}x")
    walls = command_walls({"baseline": args.baseline, "this checkout": args.python or sys.executable}, args.tree, args.file, args.repeat * 2)
    print("\nwhole command, one .mm, warm cache (wall s, alternating runs):")
    for label, ts in walls.items():
        ts = sorted(ts)
        print(f"  {label}: min {ts[0]:.3f}  median {statistics.median(ts):.3f}  max {ts[-1]:.3f}  ({len(ts)} runs)")
    return 0


def command_walls(pythons: dict[str, str], tree: str, target: str, runs: int) -> dict[str, list[float]]:
    """Wall time of ``python -m mpslint.cli check TARGET`` run in ``tree`` with a warm cache of its own per
    interpreter; the interpreters alternate run by run."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    caches = {label: tempfile.mkdtemp(prefix="mpslint-bench-cmd-") for label in pythons}
    cmd = lambda py, label: [py, "-m", "mpslint.cli", "check", target, "--cache-dir", caches[label]]  # noqa: E731
    for label, py in pythons.items():
        subprocess.run(cmd(py, label), env=env, cwd=tree, capture_output=True)  # fill the cache and the .pyc files
    out: dict[str, list[float]] = {label: [] for label in pythons}
    for _ in range(runs):
        for label, py in pythons.items():
            a = time.perf_counter()
            subprocess.run(cmd(py, label), env=env, cwd=tree, capture_output=True)
            out[label].append(time.perf_counter() - a)
    return out


if __name__ == "__main__":
    sys.exit(main())
