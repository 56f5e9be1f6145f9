"""Shared constants, skip markers and references for the smoke-runner tests.

Builds are shared through one session-scoped cache directory; the fixture reports are computed once per
session.  Tests that need the toolchain skip with a reason when `ziglang` (clang) or `torch` is missing.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "smoke"
HAVE_TORCH = importlib.util.find_spec("torch") is not None
HAVE_ZIG = importlib.util.find_spec("ziglang") is not None

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch is not installed (pip install torch)")
needs_zig = pytest.mark.skipif(not HAVE_ZIG, reason="ziglang is not installed (pip install ziglang)")
needs_toolchain = pytest.mark.skipif(not (HAVE_TORCH and HAVE_ZIG),
                                     reason="the host backend needs torch and ziglang (pip install torch ziglang)")


def custom_references():
    """References for the custom fixture kernels (tests feed them through the reference_for hook)."""
    import torch
    from mpslint.smoke.api import Reference

    def block_sum(x, partial, n):
        xp = torch.zeros(1024, dtype=torch.float64)
        xp[:1000] = x.double()
        return (xp.reshape(4, 256).sum(1).float(),)

    def simd_scan(x, prefix, sums, votes):
        g = x.reshape(-1, 32).long()
        bits = ((g > 0).long() * (2 ** torch.arange(32))).sum(1)
        return (g.cumsum(1) - g).reshape(-1).int(), g.sum(1).int(), bits.to(torch.uint32)

    def row_sum(x, out, n):
        return (x.reshape(8, 100).double().sum(1).float(),)

    def histogram(x, bins, total, n):
        return torch.bincount(x.long(), minlength=16).int(), x.double().sum().float().reshape(1)

    loose = {"float": (1e-4, 1e-5)}
    return {
        "block_sum": Reference(block_sum, "block_sum", tolerances=loose),
        "simd_scan": Reference(simd_scan, "simd_scan"),
        "row_sum": Reference(row_sum, "row_sum", tolerances=loose),
        "histogram": Reference(histogram, "histogram", tolerances={"float": (1e-2, 1e-5)}),
    }


