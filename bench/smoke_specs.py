#!/usr/bin/env python3
"""Coverage of the spec library shipped in mpslint/smoke/specs on PyTorch's real MPS kernels (not part of the
test suite).

    python bench/smoke_specs.py --tree /work/corpus/pt [--files A.metal B.metal ...] [--jobs 2]
                                [--out bench/smoke_specs.md]

1. a normal smoke run of every .metal file under TREE/aten/src/ATen/native/mps/kernels (or the --files named
   there): per file, the kernels registered, how many ran against a reference, passed, failed, no reference,
   skipped (no launch plan vs spec error), and every mismatch with its message;
2. a --large-index run of the same files: per file, what the [kernel.large] launches found (SMK405 or clean).
The kernel files are read in place and never copied into this repository.
"""
from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mpslint.smoke.api import SmokeOptions, run_smoke  # noqa: E402

KERNELS = Path("aten/src/ATen/native/mps/kernels")

NOTES = """## What the library covers, and what it does not

Families with specs (mpslint/smoke/specs/*.toml): im2col/col2im, cat, softmax/log_softmax, norms (rms_norm),
index/gather/scatter (gather, scatter_add, scatter_reduce prod/amax/amin), pooling (adaptive_avg_pool2d
forward/backward), upsampling (bilinear/bicubic 2-D, anti-aliased, linear 1-D, uint8 bilinear), sort (single-block,
plain and stable), reductions (bincount), scans (logcumsumexp, cummin, cummax; innermost and outer dim).  Not
covered: the generic reductions (ReduceOps.metal, 92 k characters) were not assembled here; layer/group norm, max
pooling, index_put and the rest of PyTorch's kernel files neither.

Registered kernels without a launch (the "no launch plan" column), by file: SoftMax -- the split-row
(partial/finalize), strided-split and backward kernels; Sort -- the multi-block merge path (mb_sort_block,
mb_merge, mb_merge_final); UpSample -- the 3-D and backward kernels; ScatterGather -- scatter_set (its result
with duplicate indices is order-dependent, so a reference needs unique indices, which spec inits cannot draw yet).

Large-index notes: the [kernel.large] sizes are those of a tensor past 2^31 elements (past 2^32 where a kernel's
grid allows it).  im2col's _u32 and cat's int32_t variants are not run large (`when`): the host picks them only
when every offset fits 32 bits (canUse32BitIndexMath).  Launched large anyway, im2col_*_u32 is SMK405 at 2^32
elements (thread (2147479015, 1, 0) writes output element 0 instead of 4294967296) -- the host's guard is what
keeps that from happening.  col2im computes every offset in uint: clean up to 2^32 elements, and its 1-D uint grid
cannot address more.  The gather/scatter kernels multiply uint32 sizes by uint32 strides (ScatterGather.h), which
wraps when one dimension's offset passes 2^32 even though the thread count does not; the window of threads near
2^31/2^32 does not reach that case (few threads, large strides), so it needs a window on element offsets instead
(not built).
"""


def per_file(report) -> dict:
    rows: dict = collections.OrderedDict()
    for o in report.outcomes:
        r = rows.setdefault(Path(o.path).name, {"kernels": set(), "ref": set(), "passed": 0, "failed": 0,
                                                "noref": 0, "noplan": 0, "specerr": 0, "other": 0, "bad": []})
        if o.kernel:
            r["kernels"].add(o.kernel)
        if o.status == "passed":
            r["passed"] += 1
            r["ref"].add(o.kernel)
        elif o.status == "failed":
            r["failed"] += 1
            if o.code in ("SMK402", "SMK405"):
                r["ref"].add(o.kernel)
            r["bad"].append(o)
        elif o.status == "no-reference":
            r["noref"] += 1
        elif "no launch plan" in o.message or o.message.startswith("large-index run:"):
            r["noplan"] += 1
        elif o.message.startswith("spec error"):
            r["specerr"] += 1
            r["bad"].append(o)
        else:
            r["other"] += 1
    return rows


def table(rows: dict, large: bool) -> list[str]:
    head = ("| file | kernels | ran vs. reference | passed | failed | no reference | no launch plan | spec error |"
            " other skip |") if not large else \
        "| file | kernels | large launches | clean | SMK405 | not for this variant / no [kernel.large] | other |"
    out = [head, "|" + "---|" * (head.count("|") - 1)]
    tot = collections.Counter()
    for name, r in rows.items():
        k = len(r["kernels"])
        if large:
            n405 = sum(1 for o in r["bad"] if o.code == "SMK405")
            out.append(f"| {name} | {k} | {r['passed'] + r['failed']} | {r['passed']} | {n405} | {r['noplan']} | "
                       f"{r['other'] + r['specerr'] + r['failed'] - n405} |")
            tot.update(kernels=k, launches=r["passed"] + r["failed"], clean=r["passed"], smk405=n405)
        else:
            out.append(f"| {name} | {k} | {len(r['ref'])} | {r['passed']} | {r['failed']} | {r['noref']} | "
                       f"{r['noplan']} | {r['specerr']} | {r['other']} |")
            tot.update(kernels=k, ref=len(r["ref"]), passed=r["passed"], failed=r["failed"], noref=r["noref"],
                       noplan=r["noplan"], specerr=r["specerr"], other=r["other"])
    if large:
        out.append(f"| **total** | {tot['kernels']} | {tot['launches']} | {tot['clean']} | {tot['smk405']} | | |")
    else:
        out.append(f"| **total** | {tot['kernels']} | {tot['ref']} | {tot['passed']} | {tot['failed']} | "
                   f"{tot['noref']} | {tot['noplan']} | {tot['specerr']} | {tot['other']} |")
    return out, tot


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", required=True)
    ap.add_argument("--files", nargs="*", default=None)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=str(Path(__file__).with_name("smoke_specs.md")))
    args = ap.parse_args()
    kdir = Path(args.tree) / KERNELS
    files = [kdir / f for f in args.files] if args.files else sorted(kdir.glob("*.metal"))
    t0 = time.monotonic()
    normal = run_smoke(files, SmokeOptions(backend="host", jobs=args.jobs, timeout=30))
    t1 = time.monotonic()
    big = run_smoke(files, SmokeOptions(backend="host", jobs=args.jobs, timeout=30, large_index=True))
    t2 = time.monotonic()
    rows, lrows = per_file(normal), per_file(big)
    normal_table, tot = table(rows, False)
    large_table, _ = table(lrows, True)
    lines = ["# The spec library on PyTorch's MPS kernels", "",
             f"Tree: `{args.tree}` ({len(files)} .metal files, assembled with the search tool's read_file: a subset "
             "of PyTorch's ~100 kernel files, chosen one or two per family; which PyTorch commit each file comes from is in "
             "the tree's `MANIFEST-smoke.tsv`), c10/metal from the tree.  Results are host-emulated.  Reproduce "
             f"with `python bench/smoke_specs.py --tree {args.tree}`.", "",
             f"Run time on 2 cores with a warm build cache: {t1 - t0:.0f} s (normal run), {t2 - t1:.0f} s "
             "(--large-index).", "",
             f"**Coverage: {tot['ref']} of {tot['kernels']} registered kernels ran against a torch CPU reference; "
             f"{tot['passed']} variants passed, {tot['failed']} failed.**", "", "## Normal run", ""]
    lines += normal_table
    lines += ["", "### Every mismatch and spec error", ""]
    bad = [o for r in rows.values() for o in r["bad"]]
    lines += [f"- `{o.kernel}` [{o.variant}] {o.code or o.status}: {o.message[:300]}" for o in bad] or ["- none"]
    lines += ["", "## Large-index run (`--large-index`)", ""]
    lines += large_table
    lines += ["", "### Findings", ""]
    found = [o for r in lrows.values() for o in r["bad"]]
    lines += [f"- `{o.kernel}` {o.code}: {o.message[:300]}" for o in found] or ["- none: every large launch is clean"]
    lines += ["", NOTES]
    text = "\n".join(lines) + "\n"
    Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
