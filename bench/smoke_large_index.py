"""Peak memory of a large-index smoke run (`mpslint smoke --large-index`), written to bench/smoke_large_index.md.

The run maps buffers of 2^32 + 2^16 floats (16 GiB each, plus 8 GiB of guard address space below each) sparse
and runs only the threadgroups near 2^31 and 2^32 elements.  The build is warmed first; each kernel process
reports its own peak RSS (VmHWM from /proc/self/status, after the launch).  RUSAGE_CHILDREN is not used: on
Linux a child's ru_maxrss keeps the high-water mark of the parent's address space it was forked from (torch is
loaded there), which says nothing about the kernel process.

    python bench/smoke_large_index.py [--cache-dir DIR]
"""
from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from mpslint.smoke import build, large, specfile
from mpslint.smoke.api import SmokeOptions, run_smoke
from mpslint.smoke.host_backend import HostBackend

ROOT = Path(__file__).resolve().parents[1]
LARGE = ROOT / "fixtures" / "smoke" / "large"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cache-dir", default=None)
    args = ap.parse_args()
    cache = args.cache_dir or tempfile.mkdtemp(prefix="mpslint-large-bench-")
    run_smoke([LARGE / "large_index.metal"], SmokeOptions(backend="host", cache_dir=Path(cache), specs=[LARGE],
                                                           builtin_specs=False))       # warm the build
    b = build.build(LARGE / "large_index.metal", cache_dir=Path(cache))
    lib = specfile.SpecLibrary.load([LARGE], builtin=False)
    rows = []
    t0 = time.perf_counter()
    for e in b.entries:
        d, bind = lib.lookup(e["host_name"])[0]
        v = specfile.plan(e, d, bind, large=True)
        v.launch.select, first = large.select(v.launch, v.large["windows"], v.large["elements_per_thread"])
        [res] = HostBackend().execute(b, [v.launch], SmokeOptions())
        code, status, _msg = large.judge(v, res, v.launch, first)
        rows.append((e["host_name"], code or status, res.peak_rss_kb, len(res.touches), len(v.launch.select)))
    secs = time.perf_counter() - t0
    d = {"seconds": secs, "self_maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}
    n = 65537 * 65536
    mapped = 2 * (n * 4 + 2 ** 31 * 4)
    lines = ["# Large-index smoke run: memory", "",
             f"Measured {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on this machine (2 cores, 24 GiB) with "
             "`python bench/smoke_large_index.py`.", "",
             f"- kernels: the three of `fixtures/smoke/large/large_index.metal` at 65537 x 65536 = {n} elements",
             f"- address space mapped per launch: {mapped / 2**30:.1f} GiB (two 16 GiB buffers, 8 GiB guard below each)",
             "", "| kernel | outcome | threadgroups run | pages touched | kernel process peak RSS |",
             "|---|---|---|---|---|",
             *[f"| `{k}` | {c} | {g} | {t} | {r / 1024:.1f} MiB |" for k, c, r, t, g in rows], "",
             f"- peak RSS of mpslint's own process: {d['self_maxrss_kb'] / 1024:.1f} MiB",
             f"- wall time of the three large-index launches (build cached): {d['seconds']:.2f} s",
             "- a crashing launch (the int offset faults in the guard space below `input`) reports its peak RSS "
             "as 0: the process ends in the fault handler", ""]
    text = "\n".join(lines)
    (ROOT / "bench" / "smoke_large_index.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
