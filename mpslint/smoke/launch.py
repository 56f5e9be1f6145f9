"""Launch plans: for each entry point that a registration macro produced, the buffers, grid and threadgroup
that PyTorch's host code would use, filled with small random inputs, plus what the result must equal.

The family comes from the template the instantiation names (c10/metal/indexing.h: unary_dense,
binary_strided_cast, ternary_dense, ...), the op from the functor argument (`exp_functor` -> "exp"), the
input dtype from the first template argument, the natural output dtype from the typed output parameter (or
the host name).  Each family lists its [[buffer(n)]] slots in parameter order; a kernel whose parameters do
not match the family's slots is skipped with a reason rather than launched with a wrong layout.

This module is backend-neutral: the host backend and the Metal backend run the same plans.
"""
from __future__ import annotations

import hashlib
import math
import struct
from dataclasses import dataclass, field
from typing import Any

from . import dtypes
from .reference import Reference
from .runner import BufferSpec, LaunchSpec

N_DENSE = 1003          # not a multiple of the ILP width (4) nor of the threadgroup size: exercises the tails
GROUP_1D = 256
OUT_FILL = 0xFF         # output buffers start as 0xFF bytes (NaN for floats): unwritten elements show up


@dataclass(frozen=True)
class Family:
    arity: int
    layout: str            # dense | ilp | strided2d | strided1d | bcast0 | bcast1 | scalar0 | scalar1
    cast: str | None       # None | "in" (runtime input types) | "out" (runtime output type) | "inout"
    slots: tuple           # buffer slots in parameter order
    alpha: bool = False


def _F(arity, layout, cast, *slots):
    return Family(arity, layout, cast, tuple(slots), "alpha" in slots)


_S2 = ("sizes", "in0_strides", "out_strides")
_SB = ("sizes", "out_strides", "in0_strides", "in1_strides")
_ST = ("sizes", "out_strides", "in0_strides", "in1_strides", "in2_strides")
FAMILIES: dict[str, Family] = {
    "unary_dense_scalar": _F(1, "dense", None, "out", "in0"),
    "unary_dense": _F(1, "ilp", None, "out", "in0", "numel"),
    "unary_strided": _F(1, "strided2d", None, "out", "in0", *_S2, "ndim"),
    "unary_dense_castout": _F(1, "dense", "out", "out", "in0", "size_outtype2"),
    "unary_dense_castout_ilp": _F(1, "ilp", "out", "out", "in0", "size_outtype_numel3"),
    "unary_strided_castout": _F(1, "strided2d", "out", "out", "in0", *_S2, "ndim_outtype2"),
    "unary_alpha_dense": _F(1, "dense", None, "out", "in0", "alpha"),
    "unary_alpha_strided": _F(1, "strided2d", None, "out", "in0", *_S2, "ndim", "alpha"),
    "binary_strided": _F(2, "strided1d", None, "out", "in0", "in1", *_SB, "ndim3"),
    "binary_strided_cast": _F(2, "strided1d", "in", "out", "in0", "in1", *_SB, "ndim_types4"),
    "binary_strided_castout": _F(2, "strided1d", "inout", "out", "in0", "in1", *_SB, "ndim_types4"),
    "binary_dense": _F(2, "dense", None, "out", "in0", "in1"),
    "binary_dense_ilp": _F(2, "ilp", None, "out", "in0", "in1", "numel"),
    "binary_dense_cast": _F(2, "dense", "in", "out", "in0", "in1", "sizes_types4"),
    "binary_dense_broadcast": _F(2, "bcast1", None, "out", "in0", "in1", "bnumel"),
    "binary_dense_broadcast_rhs": _F(2, "bcast0", None, "out", "in0", "in1", "bnumel"),
    "binary_dense_broadcast_cast": _F(2, "bcast1", "in", "out", "in0", "in1", "bnumel", "sizes_types4"),
    "binary_dense_broadcast_rhs_cast": _F(2, "bcast0", "in", "out", "in0", "in1", "bnumel", "sizes_types4"),
    "binary_dense_scalar": _F(2, "scalar1", None, "out", "in0", "in1"),
    "binary_dense_scalar_lhs": _F(2, "scalar0", None, "out", "in0", "in1"),
    "binary_dense_scalar_cast": _F(2, "scalar1", "in", "out", "in0", "in1", "sizes_types4"),
    "binary_dense_scalar_lhs_cast": _F(2, "scalar0", "in", "out", "in0", "in1", "sizes_types4"),
    "binary_alpha_strided": _F(2, "strided1d", None, "out", "in0", "in1", "alpha", *_SB, "ndim3"),
    "binary_alpha_strided_cast": _F(2, "strided1d", "in", "out", "in0", "in1", "alpha", *_SB, "ndim_types4"),
    "binary_alpha_dense": _F(2, "dense", None, "out", "in0", "in1", "alpha"),
    "binary_alpha_dense_cast": _F(2, "dense", "in", "out", "in0", "in1", "alpha", "sizes_types4"),
    "binary_alpha_dense_broadcast": _F(2, "bcast1", None, "out", "in0", "in1", "bnumel", "alpha"),
    "binary_alpha_dense_broadcast_rhs": _F(2, "bcast0", None, "out", "in0", "in1", "bnumel", "alpha"),
    "binary_alpha_dense_broadcast_cast": _F(2, "bcast1", "in", "out", "in0", "in1", "bnumel", "alpha",
                                            "sizes_types4"),
    "binary_alpha_dense_broadcast_rhs_cast": _F(2, "bcast0", "in", "out", "in0", "in1", "bnumel", "alpha",
                                                "sizes_types4"),
    "binary_alpha_dense_scalar": _F(2, "scalar1", None, "out", "in0", "in1", "alpha"),
    "binary_alpha_dense_scalar_lhs": _F(2, "scalar0", None, "out", "in0", "in1", "alpha"),
    "binary_alpha_dense_scalar_cast": _F(2, "scalar1", "in", "out", "in0", "in1", "alpha", "sizes_types4"),
    "binary_alpha_dense_scalar_lhs_cast": _F(2, "scalar0", "in", "out", "in0", "in1", "alpha", "sizes_types4"),
    "ternary_strided": _F(3, "strided1d", None, "out", "in0", "in1", "in2", *_ST, "ndim"),
    "ternary_strided_cast": _F(3, "strided1d", "in", "out", "in0", "in1", "in2", *_ST, "ndim", "types4"),
    "ternary_dense": _F(3, "dense", None, "out", "in0", "in1", "in2"),
    "ternary_dense_cast": _F(3, "dense", "in", "out", "in0", "in1", "in2", "sizes3", "types3"),
}

# an input dtype whose values convert exactly into the kernel's compute dtype (for the *_cast variants)
CAST_PARTNER = {"float": "half", "half": "uchar", "bfloat": "char", "long": "int", "int": "short",
                "short": "char", "char": "bool", "uchar": "bool", "bool": "bool", "float2": "float",
                "half2": "half", "ushort": "uchar", "uint": "ushort", "ulong": "uint"}


def castout_target(out: str) -> str:
    if out == "float2":
        return "half2"
    if out == "half2":
        return "float2"
    return "half" if out == "float" else "float"


@dataclass
class Variant:
    """One launch of one entry point, with what its output must equal."""
    kernel: str
    op: str
    dtype: str                 # compute (input) dtype name
    variant: str               # family variant + case, e.g. "strided/transposed"
    path: str
    line: int
    launch: LaunchSpec | None = None
    inputs: list = field(default_factory=list)       # torch tensors, logical values, in their buffer dtypes
    alpha: Any = None
    out_index: int = 0
    out_dtype: str = ""        # dtype the output buffer holds
    natural_out: str = ""      # dtype the functor returns
    out_shape: tuple = ()
    out_strides: tuple = ()    # in elements
    reference: Reference | None = None
    skip: str | None = None    # reason, when the variant cannot be launched
    spec_outputs: list = field(default_factory=list)   # custom kernels: [specfile.SpecOutput] to check
    large: dict | None = None  # large-index runs: sparse buffers, element sizes, windows (large.py)


def op_name(entry: dict) -> str:
    for t in entry.get("targs", []):
        name = t.split("::")[-1].strip()
        if name.endswith("_functor"):
            return name[: -len("_functor")]
    return ""


def family_of(entry: dict) -> Family | None:
    return FAMILIES.get(entry.get("base", ""))


def _seed(*parts: str) -> int:
    return int.from_bytes(hashlib.sha256("|".join(parts).encode()).digest()[:8], "little") & 0x7FFFFFFFFFFFFFFF


def _variant_label(base: str) -> str:
    for p in ("unary_alpha_", "binary_alpha_", "unary_", "binary_", "ternary_"):
        if base.startswith(p):
            return base[len(p):]
    return base


def natural_out_dtype(entry: dict, siblings: dict[tuple[str, str], str]) -> str | None:
    params = entry.get("params", [])
    if params and params[0]["kind"] == 1 and params[0]["type"] in dtypes.BY_NAME:
        return params[0]["type"]
    op = op_name(entry)
    t = entry["targs"][0] if entry.get("targs") else ""
    if (op, t) in siblings:
        return siblings[(op, t)]
    # host name "<op>_<variant>_<out>_<in>[_<alpha>]"
    fam = family_of(entry)
    n = 3 if fam is not None and fam.alpha else 2
    parts = dtypes.split_dtype_suffix(entry["host_name"], n)
    return parts[0] if parts else None


def sibling_outputs(entries: list[dict]) -> dict[tuple[str, str], str]:
    out = {}
    for e in entries:
        ps = e.get("params", [])
        if e.get("targs") and ps and ps[0]["kind"] == 1 and ps[0]["type"] in dtypes.BY_NAME:
            out.setdefault((op_name(e), e["targs"][0].strip()), ps[0]["type"])
    return out


# ---------------------------------------------------------------- input generation
def make_values(dt: dtypes.MetalDType, shape, ref: Reference | None, pos: int, gen):
    import torch
    domain = ref.domain if ref is not None else None
    if isinstance(domain, list):
        domain = domain[pos] if pos < len(domain) else None
    nonzero = ref is not None and pos in ref.nonzero
    tdt = dtypes.to_torch(dt)
    if dt.kind in ("float", "complex"):
        lo, hi = domain or (-4.0, 4.0)
        if dt.kind == "float":
            x = torch.rand(shape, generator=gen, dtype=torch.float64) * (hi - lo) + lo
            if nonzero:
                x = torch.where(x.abs() < 0.05, torch.full_like(x, 0.5), x)
            return x.to(tdt)
        re_ = torch.rand(shape, generator=gen, dtype=torch.float64) * (hi - lo) + lo
        im = torch.rand(shape, generator=gen, dtype=torch.float64) * (hi - lo) + lo
        return torch.complex(re_, im).to(torch.complex64).to(tdt)
    if dt.kind == "bool":
        x = torch.randint(0, 2, shape, generator=gen).bool()
        return torch.ones(shape, dtype=torch.bool) if nonzero else x
    idom = ref.integer_domain if ref is not None else None
    if isinstance(idom, list):
        idom = idom[pos] if pos < len(idom) else None
    if idom is None and domain is not None:
        lo, hi = math.ceil(domain[0]), math.floor(domain[1])
        idom = (lo, hi) if hi >= lo else (1, 4)
    lo, hi = idom or (-10, 10)
    if dt.kind == "uint":
        lo, hi = max(lo, 0), max(hi, 1)
    x = torch.randint(int(lo), int(hi) + 1, shape, generator=gen, dtype=torch.int64)
    if nonzero:
        x = torch.where(x == 0, torch.ones_like(x), x)
    return x.to(tdt)


def tensor_bytes(t) -> bytes:
    """Raw bytes of a contiguous tensor (any dtype, bfloat16 and complex32 included)."""
    import torch
    t = t.contiguous()
    return t.view(torch.uint8).numpy().tobytes() if t.numel() else b""


def _alpha_value(dt: dtypes.MetalDType):
    if dt.kind == "bool":
        return True
    if dt.kind in ("int", "uint"):
        return 2
    return 0.5


def _scalar_bytes(dt: dtypes.MetalDType, value) -> bytes:
    import torch
    return tensor_bytes(torch.tensor([value], dtype=dtypes.to_torch(dt)))


def _u32(*vals) -> bytes:
    return struct.pack(f"<{len(vals)}I", *[int(v) & 0xFFFFFFFF for v in vals])


def _i64(vals) -> bytes:
    return struct.pack(f"<{len(vals)}q", *[int(v) for v in vals])


# ---------------------------------------------------------------- plans
@dataclass
class _Operand:
    storage: Any            # contiguous tensor holding the buffer's bytes
    view: Any               # logical tensor (a view of storage)


def plan_entry(entry: dict, siblings: dict, ref: Reference | None, *, n_dense: int = N_DENSE) -> list[Variant]:
    """All variants (cases) to launch for one entry point; an unlaunchable entry gets one skipped Variant."""
    fam = family_of(entry)
    op = op_name(entry)
    host = entry["host_name"]
    base = Variant(host, op, "", _variant_label(entry.get("base", "")), entry.get("path", ""),
                   int(entry.get("line", 1)), reference=ref)
    if fam is None:
        base.skip = (f"no launch plan for `{entry.get('base')}` (not a c10/metal registration template); "
                     "add a TOML launch spec (`--specs`; `mpslint smoke --suggest-spec FILE` "
                     "prints a skeleton) or an `mpslint-smoke:` comment to run it")
        return [base]
    targs = entry.get("targs", [])
    t_name = targs[0].strip() if targs else ""
    T = dtypes.lookup(t_name)
    if T is None:
        base.skip = f"unsupported compute dtype `{t_name}`"
        return [base]
    base.dtype = T.name
    buf_params = [p for p in entry.get("params", []) if 0 <= p["role"] < 1000]
    if len(buf_params) != len(fam.slots):
        base.skip = (f"`{entry.get('base')}` has {len(buf_params)} buffers, the launch plan expects "
                     f"{len(fam.slots)} (c10/metal header version skew?)")
        return [base]
    nat = natural_out_dtype(entry, siblings)
    O = dtypes.lookup(nat or "")
    if O is None:
        base.skip = "cannot tell the kernel's output dtype"
        return [base]
    A = None
    if fam.alpha:
        a_name = targs[1].strip() if len(targs) > 1 else t_name
        A = dtypes.lookup(a_name)
        if A is None:
            base.skip = f"unsupported alpha dtype `{a_name}`"
            return [base]
    in_dts = [T] * fam.arity
    if fam.cast in ("in", "inout"):
        partner = dtypes.lookup(CAST_PARTNER.get(T.name, T.name))
        in_dts = [partner if i % 2 == 0 else T for i in range(fam.arity)]
    out_dt = O
    if fam.cast in ("out", "inout"):
        out_dt = dtypes.lookup(castout_target(O.name))
    variants = []
    for case, views, out in _cases(fam, in_dts, out_dt, host, ref, n_dense):
        v = Variant(host, op, T.name, base.variant + (f"/{case}" if case else ""), base.path, base.line,
                    reference=ref, natural_out=O.name, out_dtype=out_dt.name)
        v.inputs = [op_.view for op_ in views]
        out_storage_numel, out_shape, out_strides = out
        v.out_shape, v.out_strides = out_shape, out_strides
        v.alpha = _alpha_value(A) if A is not None else None
        bufs = []
        grid, group = _grid(fam.layout, views, out_shape, n_dense)
        numel = math.prod(out_shape)
        ndim = len(out_shape)
        for slot, p in zip(fam.slots, buf_params):
            idx = p["role"]
            if slot == "out":
                nbytes = out_storage_numel * out_dt.size
                bufs.append(BufferSpec(idx, bytes([OUT_FILL]) * nbytes, nbytes, read_back=True))
                v.out_index = idx
            elif slot.startswith("in") and not slot.endswith("strides"):
                k = int(slot[2])
                data = tensor_bytes(views[k].storage)
                bufs.append(BufferSpec(idx, data, len(data)))
            elif slot == "numel":
                bufs.append(BufferSpec(idx, _u32(numel), 4))
            elif slot == "ndim":
                bufs.append(BufferSpec(idx, _u32(ndim), 4))
            elif slot == "ndim3":
                bufs.append(BufferSpec(idx, _u32(ndim, 0, 0, 0), 16))
            elif slot == "ndim_types4":
                tout = out_dt.code if fam.cast == "inout" else 0
                bufs.append(BufferSpec(idx, _u32(ndim, in_dts[0].code, in_dts[1].code, tout), 16))
            elif slot == "sizes":
                data = _i64(list(reversed(out_shape)))
                bufs.append(BufferSpec(idx, data, len(data)))
            elif slot.endswith("_strides"):
                if slot == "out_strides":
                    st, es = out_strides, out_dt.size
                else:
                    t = views[int(slot[2])].view
                    st, es = t.stride(), t.element_size()
                data = _i64([s * es for s in reversed(st)])
                bufs.append(BufferSpec(idx, data, len(data)))
            elif slot == "size_outtype2":
                bufs.append(BufferSpec(idx, _u32(out_dt.size, out_dt.code), 8))
            elif slot == "size_outtype_numel3":
                bufs.append(BufferSpec(idx, _u32(out_dt.size, out_dt.code, numel, 0), 16))
            elif slot == "ndim_outtype2":
                bufs.append(BufferSpec(idx, _u32(ndim, out_dt.code), 8))
            elif slot == "sizes_types4":
                bufs.append(BufferSpec(idx, _u32(in_dts[0].size, in_dts[1].size, in_dts[0].code,
                                                 in_dts[1].code), 16))
            elif slot == "types4":
                bufs.append(BufferSpec(idx, _u32(*[d.code for d in in_dts], 0), 16))
            elif slot == "sizes3":
                bufs.append(BufferSpec(idx, _u32(*[d.size for d in in_dts], 0), 16))
            elif slot == "types3":
                bufs.append(BufferSpec(idx, _u32(*[d.code for d in in_dts], 0), 16))
            elif slot == "bnumel":
                k = 0 if fam.layout == "bcast0" else 1
                bufs.append(BufferSpec(idx, _i64([views[k].storage.numel()]), 8))
            elif slot == "alpha":
                data = _scalar_bytes(A, v.alpha)
                bufs.append(BufferSpec(idx, data, len(data)))
            else:  # pragma: no cover - table error
                raise AssertionError(slot)
        v.launch = LaunchSpec(host, bufs, grid, group, 0, [])
        variants.append(v)
    return variants


def _cases(fam: Family, in_dts, out_dt, host: str, ref, n_dense: int):
    """Yield (case name, operands, (out storage numel, out shape, out strides))."""
    import torch
    k = fam.arity

    def vals(i, shape, case):
        g = torch.Generator().manual_seed(_seed(host, case, str(i)))
        return make_values(in_dts[i], shape, ref, i, g)

    def contig(shape):
        n = math.prod(shape)
        return (n, tuple(shape), tuple(torch.empty(shape).stride()))

    lay = fam.layout
    if lay in ("dense", "ilp"):
        ops = [_Operand(s, s) for s in (vals(i, (n_dense,), "") for i in range(k))]
        yield "", ops, contig((n_dense,))
    elif lay == "strided2d":
        base = vals(0, (29, 37), "transposed")
        yield "transposed", [_Operand(base, base.t())], contig((37, 29))
        x = vals(0, (23, 19), "strided-out")
        yield "strided-out", [_Operand(x, x)], (23 * 19, (23, 19), (1, 23))
    elif lay == "strided1d":
        shapes = [(7, 1, 5), (1, 6, 5), (7, 6, 1)]
        ops = []
        for i in range(k):
            s = vals(i, shapes[i], "broadcast")
            ops.append(_Operand(s, s.expand(7, 6, 5)))
        yield "broadcast", ops, contig((7, 6, 5))
        ops = []
        for i in range(k):
            if i == 0:
                s = vals(i, (11, 13), "transposed")
                ops.append(_Operand(s, s.t()))
            else:
                s = vals(i, (13, 11), "transposed")
                ops.append(_Operand(s, s))
        yield "transposed", ops, (13 * 11, (13, 11), (1, 13))
    elif lay in ("bcast0", "bcast1"):
        R, M = 23, 17
        b = 0 if lay == "bcast0" else 1
        ops = []
        for i in range(k):
            if i == b:
                s = vals(i, (M,), "bcast")
                ops.append(_Operand(s, s.expand(R, M)))
            else:
                s = vals(i, (R, M), "bcast")
                ops.append(_Operand(s, s))
        yield "", ops, contig((R, M))
    elif lay in ("scalar0", "scalar1"):
        b = 0 if lay == "scalar0" else 1
        ops = []
        for i in range(k):
            if i == b:
                s = vals(i, (1,), "scalar")
                ops.append(_Operand(s, s.reshape(()).expand(n_dense)))
            else:
                s = vals(i, (n_dense,), "scalar")
                ops.append(_Operand(s, s))
        yield "", ops, contig((n_dense,))
    else:  # pragma: no cover
        raise AssertionError(lay)


def _grid(layout: str, views, out_shape, n_dense: int):
    numel = math.prod(out_shape)
    if layout == "ilp":
        threads = (numel + 3) // 4
        return (threads, 1, 1), (min(GROUP_1D, threads), 1, 1)
    if layout == "strided2d":
        sizes = list(reversed(out_shape))
        gx, gy = sizes[0], math.prod(sizes[1:])
        return (gx, gy, 1), (min(gx, 16), min(gy, 8), 1)
    return (numel, 1, 1), (min(GROUP_1D, numel), 1, 1)
