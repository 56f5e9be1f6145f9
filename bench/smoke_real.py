#!/usr/bin/env python3
"""Measure the host-emulated smoke runner on PyTorch's real MPS kernels (not part of the test suite).

    python bench/smoke_real.py [--tree /work/realtree/pytorch] [--jobs 2] [--out bench/smoke_real.md]

1. compile rate: every .metal file under aten/src/ATen/native/mps/kernels is built on the host backend;
2. match rate: UnaryKernel.metal, BinaryKernel.metal and ActivationKernel.metal are smoke-run and every
   registered op x dtype variant (one host_name = one entry point) is compared with torch CPU.
The kernel files are read in place and never copied into this repository.
"""
from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mpslint.smoke import build, diagnostics  # noqa: E402
from mpslint.smoke.api import SmokeOptions, run_smoke  # noqa: E402

TARGETS = ("UnaryKernel.metal", "BinaryKernel.metal", "ActivationKernel.metal")
# Mismatches that were inspected and are real kernel-vs-CPU differences, not emulation artefacts.
KNOWN = {
    "hardsigmoid_backward": "the kernel keeps grad/6 at |x| == 3 (`x < -3 || x > 3` -> 0), torch CPU returns 0 "
                            "there (open interval); half/bfloat16 inputs hit exactly +-3 often",
    "hardswish_backward": "at x == 3 the kernel returns grad (`x >= 3`), torch CPU returns grad * (x/3 + 0.5) "
                          "(`x <= 3`); the cast variant's integer inputs hit 3 exactly",
}


def blocker(msg: str) -> str:
    if "file not found" in msg:
        return "header missing from the mirrored tree (ATen/native/mps/kernels/*.h)"
    if "no member named" in msg and "c10::metal" in msg:
        return "version skew: main-branch kernel needs newer c10/metal headers than the torch 2.13 wheel"
    if "ambiguous" in msg:
        return "host shim: ambiguous overload / conversion (bfloat/long mixes)"
    if "no matching" in msg or "cast from" in msg:
        return "host shim: missing builtin overload or vector conversion"
    if "redefinition" in msg:
        return "host shim: address-space-only template specialisations collapse on the host"
    return "other"


def first_error(res) -> str:
    if res.diagnostics:
        d = res.diagnostics[0]
        return f"{Path(d.path).name}:{d.line}: {d.message}"
    return (res.message.strip().splitlines() or ["?"])[-1][:160]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", default="/work/realtree/pytorch")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cache", default=None)
    ap.add_argument("--out", default=str(Path(__file__).with_name("smoke_real.md")))
    a = ap.parse_args()
    kdir = Path(a.tree) / "aten/src/ATen/native/mps/kernels"
    files = sorted(kdir.glob("*.metal"))
    if not files:
        print(f"no .metal files under {kdir}")
        return 1
    cache = Path(a.cache) if a.cache else None
    lines = ["# Host-emulated smoke run on PyTorch's MPS kernels", "",
             f"Tree: `{a.tree}` ({len(files)} .metal files, {len(list(kdir.glob('*.h')))} kernel headers); "
             "reproduce with `python bench/smoke_real.py`.  Headers: c10/metal from the torch 2.13 wheel "
             "(the tree has none).  Results are host-emulated.", ""]
    # ---- compile rate
    t0 = time.monotonic()
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(a.jobs) as ex:
        results = list(ex.map(lambda f: (f, build.build(f, cache_dir=cache)), files))
    ok = [f for f, r in results if r.status == "ok"]
    lines += ["## Compile rate (host backend)", "",
              f"{len(ok)}/{len(files)} files compile ({100 * len(ok) / len(files):.0f} %), "
              f"{time.monotonic() - t0:.0f} s with {a.jobs} jobs.", "", "| file | status | first error |",
              "| --- | --- | --- |"]
    blockers = collections.Counter()
    for f, r in results:
        err = '' if r.status == 'ok' else first_error(r).replace('|', '/')
        if err:
            blockers[blocker(err)] += 1
        lines.append(f"| {f.name} | {r.status} | {err} |")
    lines += ["", "What blocks the rest:", ""] + [f"- {n} x {b}" for b, n in blockers.most_common()]
    # ---- match rate
    lines += ["", "## Registered op x dtype variants of Unary/Binary/ActivationKernel.metal", ""]
    targets = [kdir / t for t in TARGETS if (kdir / t).exists()]
    t0 = time.monotonic()
    rep = run_smoke(targets, SmokeOptions(backend="host", jobs=a.jobs, cache_dir=cache, timeout=10))
    per_kernel: dict = collections.defaultdict(list)
    for o in rep.outcomes:
        if o.kernel:
            per_kernel[(Path(o.path).name, o.kernel)].append(o)
    present = [t for t in TARGETS if (kdir / t).exists()]
    lines += [f"Target files present: {', '.join(present) or 'none'}; missing: "
              f"{', '.join(t for t in TARGETS if t not in present) or 'none'}.", ""]
    status = collections.Counter()
    failures = []
    for key, outs in sorted(per_kernel.items()):
        sts = {o.status for o in outs}
        st = "failed" if "failed" in sts else "skipped" if sts == {"skipped"} else \
            "no-reference" if "no-reference" in sts else "passed"
        status[st] += 1
        if st == "failed":
            failures.append((key, [o for o in outs if o.status == "failed"][0]))
    total = sum(status.values())
    lines += [f"{total} entry points (host names) in {len(targets)} files, {time.monotonic() - t0:.0f} s.", "",
              f"- passed (every launch case matches torch CPU): {status['passed']} "
              f"({100 * status['passed'] / max(total, 1):.1f} %)",
              f"- failed: {status['failed']}", f"- no reference (ran, no crash): {status['no-reference']}",
              f"- skipped: {status['skipped']}", "", "Summary table:", "", "```", rep.format_summary(), "```", ""]
    if failures:
        lines += ["Failures:", "", "| file | kernel | code | message |", "| --- | --- | --- | --- |"]
        for (f, k), o in failures:
            lines.append(f"| {f} | {k} | {o.code} | {o.message[:220].replace('|', '/')} |")
        lines += ["", "Explanations:", ""]
        for op in sorted({o.op for _, o in failures}):
            lines.append(f"- `{op}`: {KNOWN.get(op, 'NOT YET EXPLAINED')}")
    skipped = collections.Counter(o.message.split(";")[0][:120] for o in rep.outcomes if o.status == "skipped")
    if skipped:
        lines += ["", "Skip reasons:", ""] + [f"- {n} x {r}" for r, n in skipped.most_common(15)]
    noref = sorted({o.op for o in rep.outcomes if o.status == "no-reference"})
    if noref:
        lines += ["", "Ops without a reference: " + ", ".join(f"`{x}`" for x in noref)]
    Path(a.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
