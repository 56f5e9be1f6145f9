#!/usr/bin/env python3
"""Measure the host-emulated smoke runner on PyTorch's real MPS kernels (not part of the test suite).

    python bench/smoke_real.py [--tree /work/realtree/pytorch] [--jobs 2] [--out bench/smoke_real.md]
                               [--targets-only] [--binary PATH] [--shim DIR]

1. compile rate: every .metal file under aten/src/ATen/native/mps/kernels is built on the host backend;
2. match rate: UnaryKernel.metal, BinaryKernel.metal and ActivationKernel.metal are smoke-run and every
   registered op x dtype variant (one host_name = one entry point) is compared with torch CPU.
The kernel files are read in place and never copied into this repository.

--targets-only skips step 1.  --binary PATH smoke-runs PATH as BinaryKernel.metal instead of the tree's copy
(e.g. a version consistent with the torch wheel's c10/metal headers).  --shim DIR builds against another copy of
mpslint's host shim (a measurement of a proposed shim fix; the report says so).

bench/smoke_real.md and bench/smoke_targets.md were made with a tree of the mirror + the wheel's headers
(/tmp/rt11, see docs/real-world.md) and, for the match rate, BinaryKernel.metal from importstring/pytorch@fd3b45a2
(consistent with the torch 2.13 c10/metal headers; the mirror's copy needs the newer c10::metal::div_floor), see
/work/realtree/alt/MANIFEST.tsv:
    python bench/smoke_real.py --tree /tmp/rt11 --jobs 2 \\
        --binary /work/realtree/alt/importstring__pytorch/BinaryKernel.metal
    python bench/smoke_real.py --tree /tmp/rt11 --targets-only \\
        --binary /work/realtree/alt/importstring__pytorch/BinaryKernel.metal
"""
from __future__ import annotations

import argparse
import collections
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mpslint.smoke import build  # noqa: E402
from mpslint.smoke.api import SmokeOptions, run_smoke  # noqa: E402

TARGETS = ("UnaryKernel.metal", "BinaryKernel.metal", "ActivationKernel.metal")
# Mismatches that were inspected and are real kernel-vs-CPU differences, not emulation artefacts.
KNOWN = {
    "hardsigmoid_backward": "the kernel keeps grad/6 at |x| == 3 (`x < -3 || x > 3` -> 0), torch CPU returns 0 "
                            "there (open interval); half/bfloat16 inputs hit exactly +-3 often",
    "hardswish_backward": "at x == 3 the kernel returns grad (`x >= 3`), torch CPU returns grad * (x/3 + 0.5) "
                          "(`x <= 3`); the cast variant's integer inputs hit 3 exactly",
    # BinaryKernel.metal (importstring/pytorch@fd3b45a2, the version consistent with the torch 2.13 headers)
    "lerp_alpha": "real (precision): half lerp_alpha is registered (half, half, half) and the functor computes "
                  "`a + alpha * (b - a)` in half, so `b - a` is rounded to half (cancellation when b ~ -a or "
                  "|b - a| >= 8); torch CPU lerp computes half in float (opmath); only the *_cast variants, whose "
                  "uchar operands reach 10, show it",
    "logaddexp": "real (kernel bug): complex logaddexp picks `maxval = a.x > b.x ? a : b` and "
                 "`minval = a.x < b.x ? a : b`, so when Re(a) == Re(b) both are b and the result is b + log 2; "
                 "half2 inputs tie often (1 element in ~1000), float2 rarely",
    # UnaryKernel.metal: complex inputs only
    "abs": "harness gap (complex only): the functor returns `T(hypot(|re|, |im|))`, which writes |z| into both "
           "lanes of its complex output; torch.abs returns a real tensor, cast to complex with imag 0 by the "
           "runner; the real lanes match.  The runner should compare the real lane only",
    "acos": "real (precision, complex only): half2 computes w = 1 - z*z and |w|^2 in half, rounding makes "
            "(m - w.x) negative -> sqrt -> NaN for a few % of inputs; float2: the atan-via-log formula loses "
            "up to 5e-5 absolute near the axes (Re z ~ 0 or Im z ~ 0; emulated in numpy float32: 26 of 20000 "
            "points beyond 1e-5, torch CPU within 2e-7 of float64)",
    "asin": "real (precision, complex only): same formula as acos: half2 NaN where (m - w.x) < 0 after half "
            "rounding; float2 off by up to 5e-5 absolute near the axes",
    "rsqrt": "real (precision, half2 only): |z|^2 = x.x*x.x + x.y*x.y is computed in half, then "
             "sqrt((m - x.x)/2) cancels: the imaginary part of inputs with small Im is off by up to ~30 %, "
             "sometimes NaN; torch computes complex32 in complex64",
    "sqrt": "real (precision, half2 only): same |z|^2-in-half cancellation as rsqrt (imag part off, sometimes NaN)",
    "sqr": "real (precision, half2 only): c10::metal::mul(x, x) forms x.x*x.x - x.y*x.y from two squares rounded "
           "to half, so the real part cancels: 0.0078 is half an ulp of the ~20-30 magnitude squares but 2 "
           "ulps of a result near 4.8; torch computes complex32 products in complex64.  On an Apple GPU, FMA "
           "contraction may halve the error",
    "sigmoid": "real (precision, half2 only): e^-z is rounded to half2 before 1 + e^-z, and near the poles of "
               "1/(1+e^-z) that cancellation turns one half rounding into 2-6 ulps (0.0078-0.047 on values 4-14)",
    "tan": "real (precision, half2 only): one element 2 half ulps off (0.0039 at 2.56): the kernel forms "
           "tan(z) from half intermediates, torch computes complex32 in complex64 and rounds once",
    "tanh": "real (half2 only): tan(Im z) near +-pi/2 exceeds the half range, `div(T(tanh_x, tan_y), "
            "T(1, tanh_x * tan_y))` becomes inf/inf = NaN; plus one 2-ulp difference",
    "sinc": "real (half2 only): c10::metal::sinc(complex) converts the numerator `T(re, im)` to half2 before "
            "dividing by |pi z|^2; re/im grow like cosh(pi Im z) * |pi z| and overflow half (inf) although "
            "the quotient is finite",
}
# Entry points with no torch CPU counterpart to compare with (they still ran without a crash).
NO_REFERENCE = {
    "bool": "torch CPU has no bool kernel for this op (sub, fmod, remainder, div_floor, div_trunc, gcd, lcm, "
            "bitwise shifts reject torch.bool)",
    "lerp_alpha": "integer lerp_alpha: torch CPU lerp is floating-point only",
}


# Why each real kernel file that does not build fails, established by reading the kernel, its header and the
# torch 2.13 c10/metal headers (files from the mirror, one commit each; see docs/real-world.md).
C10_SKEW = "mirror: kernel newer than the torch 2.13 c10/metal headers"
HEADER_SKEW = "mirror: kernel and its params header from different commits"
SHIM = "host shim limit: `cond ? long : bfloat` is ambiguous when bfloat is a class"
INSPECTED = {
    "BinaryKernel.metal": (C10_SKEW, "calls c10::metal::div_floor (2.13 has floor_divide)"),
    "Copy.metal": (C10_SKEW, "REGISTER_UNARY_OP_CAST is not in 2.13's indexing.h"),
    "PointwiseOps.metal": (C10_SKEW, "REGISTER_OPMATH_TERNARY_ALPHA_OP is not in 2.13's indexing.h"),
    "Eig.metal": (C10_SKEW, "calls c10::metal::fma"),
    "ReduceOps.metal": (C10_SKEW, "uses c10::metal::SumOp/ProdOp"),
    "Put.metal": (C10_SKEW, "two-argument AtomicType<T>::atomic_add"),
    "ScatterGather.metal": (C10_SKEW, "AtomicType<long>::atomic_binary_op"),
    "Convolution.metal": (HEADER_SKEW, "Conv1dDwParams missing from the mirrored Convolution.h"),
    "CrossEntropyKernel.metal": (HEADER_SKEW, "CrossEntropyParams::has_weight missing"),
    "Gemm.metal": (HEADER_SKEW, "GemvBtDims missing from the mirrored gemm_common.h"),
    "GridSampler.metal": (HEADER_SKEW, "GridSamplerParams has other members"),
    "GridSamplerBackward.metal": (HEADER_SKEW, "GridSamplerBackwardParams defined in both kernel and header"),
    "GroupNorm.metal": (HEADER_SKEW, "kernel uses GroupNormParams<idx_T>, header has a plain struct"),
    "GroupedMM.metal": (HEADER_SKEW, "GroupedMMParams is a template in one, not the other"),
    "Pooling.metal": (HEADER_SKEW, "PoolingParams has other members"),
    "ReplicationPad.metal": (HEADER_SKEW, "PadParams missing from the mirrored Pad.h"),
    "ScaledMM.metal": (HEADER_SKEW, "ScaledMMParams::has_scale_result missing"),
    "TensorCompare.metal": (HEADER_SKEW, "IsinParams missing from the mirrored headers"),
    "GridSampler3D.metal": (SHIM, "long/bfloat conditional"),
    "HistogramKernel.metal": (SHIM, "bfloat/int conditional"),
}


def blocker(name: str, msg: str) -> str:
    if name in INSPECTED:
        return INSPECTED[name][0]
    return "NOT YET INSPECTED: " + msg[:80]


def first_error(res) -> str:
    if res.diagnostics:
        d = res.diagnostics[0]
        return f"{Path(d.path).name}:{d.line}: {d.message}"
    return (res.message.strip().splitlines() or ["?"])[-1][:160]


def use_shim(shim_dir: Path) -> None:
    """Point the host backend at another shim directory (same layout as mpslint/smoke/shim)."""
    from mpslint.smoke import toolchain
    toolchain.SHIM_DIR = shim_dir
    toolchain.SHIM_INCLUDE = shim_dir / "include"
    toolchain.RT_SOURCE = shim_dir / "rt" / "msl_rt.cpp"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tree", default="/work/realtree/pytorch")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--cache", default=None)
    ap.add_argument("--out", default=None,
                    help="report file (default bench/smoke_real.md, with --targets-only bench/smoke_targets.md)")
    ap.add_argument("--targets-only", action="store_true",
                    help="skip the compile survey; only smoke-run Unary/Binary/ActivationKernel.metal")
    ap.add_argument("--binary", default=None, help="BinaryKernel.metal to run instead of the tree's")
    ap.add_argument("--shim", default=None, help="host shim directory to build against (measurement only)")
    a = ap.parse_args()
    if a.out is None:
        a.out = str(Path(__file__).with_name("smoke_targets.md" if a.targets_only else "smoke_real.md"))
    kdir = Path(a.tree) / "aten/src/ATen/native/mps/kernels"
    files = sorted(kdir.glob("*.metal"))
    if not files:
        print(f"no .metal files under {kdir}")
        return 1
    cache = Path(a.cache) if a.cache else None
    if a.shim:
        use_shim(Path(a.shim).resolve())
    hdr = "c10/metal from the tree" if (Path(a.tree) / "c10/metal").is_dir() else \
        "c10/metal from the torch 2.13 wheel (the tree has none)"
    lines = ["# Host-emulated smoke run on PyTorch's MPS kernels", "",
             f"Tree: `{a.tree}` ({len(files)} .metal files, {len(list(kdir.glob('*.h')))} kernel headers); "
             f"reproduce with `python bench/smoke_real.py`.  Headers: {hdr}.  Results are host-emulated.", ""]
    if a.binary:
        lines += [f"BinaryKernel.metal: `{a.binary}` (instead of the tree's copy).", ""]
    if a.shim:
        lines += [f"Host shim: `{a.shim}` (NOT mpslint's shim: a measurement of a proposed shim fix).", ""]
    if a.targets_only:
        return match_targets(a, kdir, cache, lines)
    # ---- compile rate
    t0 = time.monotonic()
    from concurrent.futures import ThreadPoolExecutor
    with ThreadPoolExecutor(a.jobs) as ex:
        results = list(ex.map(lambda f: (f, build.build(f, cache_dir=cache)), files))
    ok = [f for f, r in results if r.status == "ok"]
    lines += ["## Compile rate (host backend)", "",
              f"{len(ok)}/{len(files)} files compile ({100 * len(ok) / len(files):.0f} %), "
              f"{time.monotonic() - t0:.0f} s with {a.jobs} jobs.", "", "| file | status | first error | why (inspected) |",
              "| --- | --- | --- | --- |"]
    blockers = collections.Counter()
    for f, r in results:
        err = '' if r.status == 'ok' else first_error(r).replace('|', '/')
        if err:
            blockers[blocker(f.name, err)] += 1
        why = " -- ".join(INSPECTED[f.name]) if err and f.name in INSPECTED else ""
        lines.append(f"| {f.name} | {r.status} | {err} | {why} |")
    lines += ["", "What blocks the rest:", ""] + [f"- {n} x {b}" for b, n in blockers.most_common()]
    return match_targets(a, kdir, cache, lines)


def match_targets(a, kdir: Path, cache, lines: list) -> int:
    # ---- match rate
    lines += ["", "## Registered op x dtype variants of Unary/Binary/ActivationKernel.metal", ""]
    paths = {t: kdir / t for t in TARGETS}
    if a.binary:
        paths["BinaryKernel.metal"] = Path(a.binary)
    targets = [paths[t] for t in TARGETS if paths[t].exists()]
    t0 = time.monotonic()
    rep = run_smoke(targets, SmokeOptions(backend="host", jobs=a.jobs, cache_dir=cache, timeout=10))
    per_kernel: dict = collections.defaultdict(list)
    for o in rep.outcomes:
        if o.kernel:
            per_kernel[(Path(o.path).name, o.kernel)].append(o)
    present = [t for t in TARGETS if paths[t].exists()]
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
              f"- skipped: {status['skipped']}", ""]
    # per file: entry points and what became of them; "ran and matched" counts an entry point whose every launch
    # case matched torch CPU, out of all entry points the registrations produce (compile failures included).
    lines += ["| file | entry points | passed | failed | no reference | skipped | ran and matched |",
              "| --- | --- | --- | --- | --- | --- | --- |"]
    for t in present:
        per = collections.Counter()
        for (f, _k), outs in per_kernel.items():
            if f != paths[t].name:
                continue
            sts = {o.status for o in outs}
            per["failed" if "failed" in sts else "skipped" if sts == {"skipped"} else
                "no-reference" if "no-reference" in sts else "passed"] += 1
        n = sum(per.values())
        built = [o for o in rep.outcomes if Path(o.path).name == paths[t].name and o.code == "SMK401"]
        note = " (does not compile)" if built and not n else ""
        lines.append(f"| {t} | {n}{note} | {per['passed']} | {per['failed']} | {per['no-reference']} | "
                     f"{per['skipped']} | {100 * per['passed'] / max(n, 1):.1f} % |")
    # per op x input dtype (what the issue counts): passed only when every entry point of that op and dtype
    # (dense, strided, cast, castout, scalar, broadcast, ILP) matched torch CPU
    by_op: dict = collections.defaultdict(set)
    for o in rep.outcomes:
        if o.kernel:
            by_op[(Path(o.path).name, o.op, o.dtype)].add(o.status)
    lines += ["", "Per op x input dtype (passed = every entry point of that op and dtype matched; 'with a reference' "
              "leaves out the dtypes torch CPU has no kernel for):", "",
              "| file | op x dtype | passed | failed | no reference | skipped | ran and matched | with a reference |",
              "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    grand = collections.Counter()
    for t in present:
        per = collections.Counter()
        for (f, _op, _dt), sts in by_op.items():
            if f == paths[t].name:
                per["failed" if "failed" in sts else "skipped" if "skipped" in sts else
                    "no-reference" if "no-reference" in sts else "passed"] += 1
        grand.update(per)
        n = sum(per.values())
        lines.append(f"| {t} | {n} | {per['passed']} | {per['failed']} | {per['no-reference']} | {per['skipped']} | "
                     f"{100 * per['passed'] / max(n, 1):.1f} % | "
                     f"{100 * per['passed'] / max(n - per['no-reference'], 1):.1f} % |")
    n = sum(grand.values())
    lines.append(f"| all three | {n} | {grand['passed']} | {grand['failed']} | {grand['no-reference']} | "
                 f"{grand['skipped']} | {100 * grand['passed'] / max(n, 1):.1f} % | "
                 f"{100 * grand['passed'] / max(n - grand['no-reference'], 1):.1f} % |")
    lines += ["", "Summary table:", "", "```", rep.format_summary(), "```", ""]
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
        why = collections.Counter()
        for o in rep.outcomes:
            if o.status == "no-reference":
                why[(o.op, o.dtype, o.message.split("; ", 1)[-1][:110])] += 1
        lines += ["", "No-reference launches by op and compute dtype:", ""]
        for (op, dt, msg), n in sorted(why.items()):
            hint = NO_REFERENCE["bool"] if dt == "bool" else NO_REFERENCE.get(op, "")
            lines.append(f"- {op} [{dt}] x {n}: {msg}" + (f" -- {hint}" if hint else ""))
    Path(a.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
