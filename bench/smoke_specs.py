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
import re
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mpslint.smoke.api import SmokeOptions, run_smoke  # noqa: E402

KERNELS = Path("aten/src/ATen/native/mps/kernels")

NOTES = """## Every mismatch, explained

- `max_reduction_long_long` and `min_reduction_long_long` (the generic NormParams kernel, a middle dim of 70
  elements, 96 threads per group): **a real difference in the kernel**, on all-negative (max) / all-positive
  (min) input the result is 0.  Metal has no 64-bit simd max/min; c10/metal emulates them with
  `simd_shuffle_and_fill_down`, whose fill only covers lanes past the end of the simdgroup.  The second stage
  of `threadgroup_max/min` runs that emulation with only `ceil(96 / 32) = 3` lanes active, and the 29 idle
  lanes it reads are undefined in Metal, 0 on Apple GPUs in practice (PyTorch's reduction_utils.h says so
  itself) -- and so is the host emulation since this run (an idle lane reads as 0).  The host code's padding to
  whole simdgroups (ReduceOps.mm) covers the first stage only.  The `_outer` (shared-memory tree) and `_inner`
  (a full simdgroup per row) kernels of the same ops pass, as do int32 and the floating types (native simd
  max/min).  To confirm on a Mac (not run here): `torch.full((3, 70, 5), -5, dtype=torch.long,
  device="mps").amax(1)` takes this kernel (a middle dim: neither the outer nor the inner path) and should give 0.

Nothing else differs.  Tolerances beyond the per-dtype defaults, each in its spec: uint8 bilinear 2-D within 1
and uint8 trilinear 3-D within 2 (linear_interp<uchar> rounds after each of its 2 / 3 fixed-point stages, by
design; torch CPU has no uint8 trilinear), the half / bfloat upsample backward kernels atol 0.05 / rtol 0.02
(every atomic add into grad_input rounds to half / bfloat).

## Large-index findings (SMK405), explained

- `{sum,nansum,count_nonzero,max,min,argmax,argmin}_reduction_inner_float_*`: the row base `input + row * N` is
  computed in 32-bit `uint`; for a [65537, 65536] input (2^32 + 2^16 elements) row 65536 reads element 0
  instead of 2^32.  `{sum,nansum,count_nonzero,max,argmax,argmin}_reduction_outer_float_*`: `(row + j) * N + col`
  in `uint` wraps the same way for a [2, 2^31 + 2^20] input.  The host passes these sizes: reduction_dispatch_mps
  and argmax_argmin_out_mps check no element count (M and N fit 32 bits; only their product does not), unlike
  prod and var/std, which refuse more than 2^32 elements (TORCH_CHECK) -- and their kernels with a 64-bit row
  base (`prod_reduction_inner_wide`, `welford_inner` at 2^32 - 2^16 elements) are clean.  PyTorch's own
  inner_wide/inner_thin/outer_thin kernels already carry the fix (`static_cast<ulong>(row) * N`, "row * N can
  exceed 2^32").  Each finding links the MTL204 findings on the same kernel's 32-bit arithmetic.
- `mb_sort_block_float_tptg512_u16` (the multi-block sort, stage 1): `int row = tid.y * size` keeps the row base
  in an `int`; sorting a [349600, 6144] float tensor along its last dim (2^31 + 458752 elements, exactly the
  kernel the host picks: select_tptg -> 512, should_use_radix -> merge, u16 indices) makes row 349526's base
  2147487744 wrap to -2147479552, and its threadgroups write 8 GiB before the output buffer.  The host checks no
  element count; the single-block sort computes its row base as `long(tid.y) * long(size)`.  (mb_merge's
  `vi += tid.y * size` is a `uint` product, which wraps at 2^32; a merge reads its partner run below its own
  tile, which the large-index check cannot tell from a wrap, so it is not run large.)
- Launched only where the host would: the [kernel.large] tables are limited to the float variants (`when`);
  every other dtype instantiates the same index code.

## What the library covers, and what it does not

Every kernel registered in the 12 files has a launch plan and a torch CPU reference.  Families with specs
(mpslint/smoke/specs/*.toml): im2col/col2im, cat, softmax/log_softmax (row, 2-D, split-row partial/finalize,
strided split partial/finalize, backward row/row8/looped), norms (rms_norm; vector norms in ReduceOps),
index/gather/scatter (gather, scatter_add, scatter_reduce prod/amax/amin, scatter_set with unique indices),
pooling (adaptive_avg_pool2d forward/backward), upsampling (bilinear/bicubic 2-D, anti-aliased, linear 1-D,
uint8 bilinear, 3-D nearest/nearest-exact/trilinear, backward of bicubic 2-D and of the 3-D modes), sort
(single-block, multi-block: mb_sort_block, mb_merge, mb_merge_final; plain and stable, uint and u16 indices),
reductions (bincount; ReduceOps: sum, nansum, count_nonzero, mean, prod, max/min, any/all, argmax/argmin, norm,
var/std/var_mean in every outer / inner / thin / wide / bucketed / generic / strided / two-pass shape the host
dispatches), scans (logcumsumexp, cummin, cummax; innermost and outer dim).  Each kernel is launched on its own:
multi-pass pipelines (sort's merge rounds, softmax's and Welford's two passes) get inputs of the shape the
previous pass leaves (sorted runs, random partials) rather than running end to end.  Not assembled here: layer /
group norm, max pooling, index_put and the rest of PyTorch's ~100 kernel files.

Large-index notes (earlier files): the [kernel.large] sizes are those of a tensor past 2^31 elements (past 2^32
where a kernel's grid allows it).  im2col's _u32 and cat's int32_t variants are not run large (`when`): the host
picks them only when every offset fits 32 bits (canUse32BitIndexMath).  Launched large anyway, im2col_*_u32 is
SMK405 at 2^32 elements (thread (2147479015, 1, 0) writes output element 0 instead of 4294967296) -- the host's
guard is what keeps that from happening.  col2im computes every offset in uint: clean up to 2^32 elements, and
its 1-D uint grid cannot address more.  The gather/scatter kernels multiply uint32 sizes by uint32 strides
(ScatterGather.h), which wraps when one dimension's offset passes 2^32 even though the thread count does not;
the window of threads near 2^31/2^32 does not reach that case (few threads, large strides), so it needs a window
on element offsets instead (not built).

## Host emulation fixes this run needed

- ziglang 0.17 links no compiler-rt into shared libraries: every kernel file converting to bfloat failed to load
  (`undefined symbol: __truncsfbf2`, reported as a skip).  The host runtime now defines the two conversions.
- c10's `simd_sum(float2)` was ambiguous with the shim's vector `simd_sum` (now templates, as in Metal).
- A lane that did not reach a simd shuffle read a stale value; it now reads 0 (see the mismatch above).
"""


def versions(tree: Path) -> list[str]:
    """The tree's files and the PyTorch commit (or wheel) each comes from, from its MANIFEST-smoke.tsv."""
    man = tree / "MANIFEST-smoke.tsv"
    if not man.exists():
        return ["(no MANIFEST-smoke.tsv in the tree: versions unknown)", ""]
    out = ["| file | from | characters |", "|---|---|---|"]
    for line in man.read_text().splitlines()[1:]:
        path, commit, chars = line.split("\t")
        src = commit if commit.startswith("torch-") else f"pytorch/pytorch@{commit[:10]}"
        out.append(f"| `{path}` | {src} | {chars} |")
    return out + [""]


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
    # the clean large launches report their kernel process's peak RSS (runtime's VmHWM) and what was mapped
    rss = [float(m.group(1)) for o in big.outcomes for m in [re.search(r"peak RSS ([\d.]+) MiB", o.message)] if m]
    mapped = [float(m.group(1)) for o in big.outcomes for m in [re.search(r"([\d.]+) GiB mapped sparse", o.message)] if m]
    rows, lrows = per_file(normal), per_file(big)
    normal_table, tot = table(rows, False)
    large_table, _ = table(lrows, True)
    lines = ["# The spec library on PyTorch's MPS kernels", "",
             f"Tree: `{args.tree}` ({len(files)} .metal files, assembled with the search tool's read_file: a subset "
             "of PyTorch's ~100 kernel files, chosen one or two per family; each file is the one stored version "
             "read_file returns, so each has its own commit), c10/metal in the tree.  Results are host-emulated.  "
             f"Reproduce with `python bench/smoke_specs.py --tree {args.tree}`.", ""]
    lines += versions(Path(args.tree))
    lines += [f"Run time on 2 cores with a warm build cache: {t1 - t0:.0f} s (normal run), {t2 - t1:.0f} s "
             f"(--large-index).  Memory of the large-index launches: up to {max(mapped, default=0):.1f} GiB mapped "
             f"sparse per launch, kernel-process peak RSS at most {max(rss, default=0):.1f} MiB over the "
             f"{len(rss)} clean launches (only touched pages become memory).", "",
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
