"""Host-shim features that PyTorch's real kernels need (simdgroup matrices, matrix types, frexp(x, &e),
constexpr half/bfloat limits, packed/swizzle conversions, address-space-only specialisations, ...).

Every kernel here is written for these tests in PyTorch's style (tests/smoke/shim_kernels/*.metal, compiled
with the torch wheel's c10/metal headers) and runs on the host backend against a torch reference.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from _smoke_helpers import HAVE_TORCH, needs_toolchain

KERNELS = Path(__file__).resolve().parent / "shim_kernels"


def _refs():
    import torch
    from mpslint.smoke.api import Reference

    def sg_gemm(a, b, bias, c, k):
        n = int(k.item())
        return ((a.double().reshape(16, n) @ b.double().reshape(n, 16)) + bias.double()).reshape(-1),

    def sg_transpose_affine(x, out):
        o = torch.zeros(8, 16, dtype=torch.float64)
        o[:, 8:] = 2 * x.double().reshape(8, 8) + 1
        return o.reshape(-1),

    def matrix_ops(x, w, y, out):
        x, w, y = x.double().reshape(8, 4), w.double().reshape(4, 4), y.double().reshape(8, 2)
        n1 = torch.tensor([-1, 0.5, 0, 2], dtype=torch.float64)
        return (x @ w.T + y[:, 1:2] * n1 + w[:, 1] + 2 * w[0]).reshape(-1),

    def frexp(x, m, e):
        mant, ex = torch.frexp(x)
        return mant, ex

    def row_max(x, out, n):
        return x.reshape(out.numel(), -1).amax(1),

    def packed_conversions(sizes, h, dil, out, fout):
        s, d, hv = sizes.long().reshape(6, 3), dil.long().reshape(6, 4), h.double().reshape(6, 4)
        o = s[:, 0] * 1000000 + s[:, 1] * 1000 + s[:, 2] - d[:, 2] + d[:, 3]
        return o, torch.clamp(hv[:, 0], min=1.0) + hv[:, 2] * hv[:, 3]

    def tile_square(x, out):
        m = x.double().reshape(4, 4)
        return (m @ m).reshape(-1),

    def shuffle_wide(x, out, flags):
        g = x.reshape(-1, 32)
        return g.flip(1).reshape(-1), (g[:, :1] > 0).expand(-1, 32).reshape(-1)

    def affine_ns(x, p):
        return x.double() * float(p[0]) + float(p[1]),

    loose = {"float": (1e-4, 1e-5)}
    fns = dict(affine_ns=affine_ns, sg_gemm=sg_gemm, sg_transpose_affine=sg_transpose_affine, matrix_ops=matrix_ops,
               frexp=frexp,
               row_max=row_max, packed_conversions=packed_conversions, tile_square=tile_square,
               shuffle_wide=shuffle_wide)
    return {k: Reference(f, k, tolerances=loose) for k, f in fns.items()}


REFS = _refs() if HAVE_TORCH else {}


@pytest.fixture(scope="module")
def shim_report(smoke_cache):
    from mpslint.smoke.api import SmokeOptions, run_smoke
    return run_smoke(sorted(KERNELS.glob("*.metal")),
                     SmokeOptions(backend="host", jobs=2, timeout=10, cache_dir=smoke_cache, reference_for=REFS.get))


def _by_kernel(report):
    out = {}
    for o in report.outcomes:
        out.setdefault(o.kernel, []).append(o)
    return out


@needs_toolchain
def test_shim_kernels_compile_and_match(shim_report):
    by = _by_kernel(shim_report)
    assert not [o for o in shim_report.outcomes if o.code == "SMK401"], shim_report.outcomes[:3]
    expected = ["sg_gemm_float", "sg_gemm_half", "sg_gemm_bfloat", "sg_transpose_affine", "matrix_ops",
                "frexp_ptr_float", "frexp_ptr_half", "clamped_row_max_half", "clamped_row_max_bfloat",
                "packed_conversions", "tile_square_float", "shuffle_wide", "affine_ns_float"]
    for k in expected:
        (o,) = by[k]
        assert o.status == "passed", o


@needs_toolchain
def test_simdgroup_matrix_needs_a_full_simdgroup(shim_report):
    (o,) = _by_kernel(shim_report)["sg_partial_simdgroup"]
    assert o.status == "skipped" and o.code is None
    assert "fewer than 32 threads" in o.message and "undefined" in o.message
