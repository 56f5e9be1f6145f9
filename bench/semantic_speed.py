"""Speed of the semantic model (issue 14): one .mm in a checkout with a warm cache, and a whole tree cold.

Runs the same measurement with two interpreters in one session, each importing its own mpslint: ``--baseline``
(e.g. a venv with the code before the model) and this checkout's. Prints the best of ``--repeat`` runs of the
in-process lint time (imports excluded, as a long-lived pre-commit or editor process sees it) and of the whole
command (imports included), in CPU seconds, which a loaded machine distorts less than wall time.

    python bench/semantic_speed.py --tree /path/to/pytorch --file aten/src/ATen/native/mps/operations/GemmMetal.mm \
        --baseline /tmp/oldvenv/bin/python
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

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
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    rows = []
    for label, py in (("baseline", args.baseline), ("this checkout", sys.executable)):
        warm = measure(py, args.tree, args.file, "warm", args.repeat)
        cold = measure(py, args.tree, ".", "cold", max(2, args.repeat // 2))
        rows.append((label, warm, cold))
    print(f"| code | import (CPU s) | one .mm, warm cache (CPU s) | whole tree, cold (CPU s) | findings (tree) |")
    print("|---|---|---|---|---|")
    for label, warm, cold in rows:
        print(f"| {label} (`{os.path.dirname(warm['module'])}`) | {warm['import']:.2f} | {warm['lint']:.3f} | {cold['lint']:.2f} | {cold['findings']} |")
    (b, bw, bc), (n, nw, nc) = rows
    print(f"\none .mm warm: {nw['lint'] / bw['lint']:.2f}x the baseline; whole tree cold: {nc['lint'] / bc['lint']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
