"""Decode a kernel's output buffer and compare it with the torch CPU reference (tolerances per dtype)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from . import dtypes
from .reference import Reference

_ULP_DTYPES = {"half", "bfloat"}
_ULP_LANES = {"half2"}  # complex half: the +1 ulp allowance applies to each lane


@dataclass
class Verdict:
    ok: bool
    message: str
    expected: Any = None


def decode(raw: bytes, dtype_name: str, shape, strides):
    """The output tensor as a view of the raw output buffer."""
    import torch
    dt = dtypes.lookup(dtype_name)
    flat = torch.frombuffer(bytearray(raw), dtype=torch.uint8) if raw else torch.empty(0, dtype=torch.uint8)
    typed = flat.view(dtypes.to_torch(dt))
    return torch.as_strided(typed, tuple(shape), tuple(strides))


def unwritten(raw: bytes, dtype_name: str, shape, strides, fill: int) -> int:
    """How many output elements still hold the fill pattern."""
    import torch
    dt = dtypes.lookup(dtype_name)
    flat = torch.frombuffer(bytearray(raw), dtype=torch.uint8) if raw else torch.empty(0, dtype=torch.uint8)
    per = flat.view(-1, dt.size).eq(fill).all(dim=1)
    idx = torch.as_strided(torch.arange(len(raw) // dt.size), tuple(shape), tuple(strides)).reshape(-1)
    return int(per[idx].sum())


def expected_output(ref: Reference, inputs: list, compute: str, alpha, out_dtype: str, info: dict | None = None):
    """ref.fn on the inputs converted to the compute dtype; upcast when torch CPU lacks the dtype.

    ``info["real_only"]`` is set when torch's result is real but the kernel's output is complex (``abs`` of a
    complex tensor): torch exposes only the real lane, so only that lane is compared."""
    import torch
    ct = dtypes.to_torch(dtypes.lookup(compute))
    xs = [x.to(ct) for x in inputs]
    kw = {"alpha": alpha} if (alpha is not None and ref.uses_alpha) else {}
    try:
        r = ref.fn(*xs, **kw)
    except (RuntimeError, NotImplementedError, TypeError):
        up = {torch.float16: torch.float32, torch.bfloat16: torch.float32, torch.complex32: torch.complex64,
              torch.uint16: torch.int64, torch.uint32: torch.int64, torch.uint64: torch.int64}
        r = ref.fn(*[x.to(up.get(x.dtype, x.dtype)) for x in xs], **kw)
    if not isinstance(r, torch.Tensor):
        r = torch.tensor(r)
    if info is not None:
        info["real_only"] = not r.is_complex() and dtypes.lookup(out_dtype).kind == "complex"
    return r.to(dtypes.to_torch(dtypes.lookup(out_dtype)))


def _fmt_index(flat_i: int, shape) -> str:
    idx = []
    for s in reversed(shape):
        idx.append(flat_i % s if s else 0)
        flat_i //= s if s else 1
    return "(" + ", ".join(str(i) for i in reversed(idx)) + ")" if len(shape) > 1 else f"[{idx[0] if idx else 0}]"


def _ordered_bits(t):
    """Map half/bfloat bit patterns to integers that are monotone in the float value."""
    import torch
    b = t.contiguous().view(torch.int16).to(torch.int32)
    return torch.where(b < 0, -(b & 0x7FFF), b)


def compare(got, exp, out_dtype: str, tol: tuple[float, float], real_only: bool = False) -> Verdict:
    import torch
    dt = dtypes.lookup(out_dtype)
    shape = tuple(got.shape)
    if tuple(exp.shape) != shape:
        exp = exp.expand(shape) if exp.dim() <= len(shape) else exp.reshape(shape)
    n = got.numel()
    if dt.kind in ("int", "uint", "bool"):
        g, e = got.to(torch.int64).reshape(-1), exp.to(torch.int64).reshape(-1)
        slack = int(tol[0]) if tol and tol[0] >= 1 else 0   # a spec may allow +-1 (torch's own uint8 rounding)
        bad = (g - e).abs() > slack
        if not bool(bad.any()):
            return Verdict(True, "")
        i = int(bad.nonzero()[0])
        need = f"within {slack}" if slack else "exact match required"
        return Verdict(False, f"{int(bad.sum())}/{n} elements differ ({need} for {out_dtype}); first "
                              f"at index {_fmt_index(i, shape)}: got {int(g[i])}, expected {int(e[i])}")
    if dt.kind == "complex":
        g = torch.view_as_real(got.to(torch.complex64).contiguous()).reshape(n, 2).double()
        e = torch.view_as_real(exp.to(torch.complex64).contiguous()).reshape(n, 2).double()
        if real_only:
            g, e = g[:, :1], e[:, :1]
    else:
        g = got.double().reshape(n, 1)
        e = exp.double().reshape(n, 1)
    atol, rtol = tol
    both_nan = g.isnan() & e.isnan()
    same_inf = g.isinf() & e.isinf() & (g == e)
    close = (g - e).abs() <= atol + rtol * e.abs()
    ok = both_nan | same_inf | close
    if out_dtype in _ULP_DTYPES:
        gb = _ordered_bits(got.reshape(-1)).reshape(n, 1)
        eb = _ordered_bits(exp.to(got.dtype).reshape(-1)).reshape(n, 1)
        ok = ok | (((gb - eb).abs() <= 1) & g.isfinite() & e.isfinite())
    elif out_dtype in _ULP_LANES:
        lanes = g.shape[1]
        gb = _ordered_bits(torch.view_as_real(got.contiguous()).reshape(-1)).reshape(n, 2)[:, :lanes]
        eb = _ordered_bits(torch.view_as_real(exp.to(got.dtype).contiguous()).reshape(-1)).reshape(n, 2)[:, :lanes]
        ok = ok | (((gb - eb).abs() <= 1) & g.isfinite() & e.isfinite())
    bad = ~ok.all(dim=1)
    if not bool(bad.any()):
        return Verdict(True, "")
    err = (g - e).abs().max(dim=1).values
    err = torch.where(bad, torch.nan_to_num(err, nan=float("inf")), torch.zeros_like(err))
    i = int(err.argmax())
    nbad = int(bad.sum())
    gi = got.reshape(-1)[i].item()
    ei = exp.reshape(-1)[i].item()
    nonfinite = int((~g.isfinite() & e.isfinite()).any(dim=1).sum())
    extra = f"; {nonfinite} non-finite where the reference is finite" if nonfinite else ""
    return Verdict(False, f"{nbad}/{n} elements differ; max abs error {float(err[i]):.4g} at index "
                          f"{_fmt_index(i, shape)}: got {gi!r}, expected {ei!r} (atol={atol:g}, rtol={rtol:g}"
                          f"{', +1 ulp' if out_dtype in _ULP_DTYPES | _ULP_LANES else ''}{', real lane only' if real_only else ''}){extra}")


def nonfinite_garbage(got, inputs: list) -> int:
    """Non-finite outputs although every input is finite (used when there is no reference)."""
    import torch
    if not (got.is_floating_point() or got.is_complex()):
        return 0
    for x in inputs:
        if (x.is_floating_point() or x.is_complex()) and not bool(torch.isfinite(x).all()):
            return 0
    return int((~torch.isfinite(got)).sum())
