"""Launch plans per registration family and the comparison logic (needs torch, not the compiler)."""
from __future__ import annotations

import struct


from _smoke_helpers import needs_torch

pytestmark = needs_torch


def _entry(base, targs, params, host="op_x"):
    return {"host_name": host, "base": base, "targs": targs, "line": 3, "path": "/k.metal",
            "params": [{"role": i, "kind": k, "type": t, "size": 4, "text": f"p{i}"} for i, (k, t) in
                       enumerate(params)] + [{"role": -1, "kind": 0, "type": "uint", "size": 4, "text": "uint i"}]}


def test_unary_dense_ilp_plan():
    from mpslint.smoke import launch
    e = _entry("unary_dense", ["float", "exp_functor"], [(1, "float"), (1, "float"), (2, "uint")])
    (v,) = launch.plan_entry(e, {}, None)
    assert v.op == "exp" and v.dtype == "float" and v.out_dtype == "float"
    L = v.launch
    assert L.grid == ((launch.N_DENSE + 3) // 4, 1, 1)
    assert struct.unpack("<I", L.buffers[2].data) == (launch.N_DENSE,)
    assert L.buffers[0].read_back and L.buffers[0].nbytes == 4 * launch.N_DENSE


def test_unary_strided_plan_has_two_cases_and_byte_strides():
    from mpslint.smoke import launch
    e = _entry("unary_strided", ["half", "silu_functor"],
               [(1, "void"), (1, "void"), (1, "long"), (1, "long"), (1, "long"), (2, "uint")],
               host="silu_strided_half_half")
    vs = launch.plan_entry(e, {}, None)
    assert [v.variant for v in vs] == ["strided/transposed", "strided/strided-out"]
    t = vs[0].launch
    sizes = struct.unpack("<2q", t.buffers[2].data)
    in_strides = struct.unpack("<2q", t.buffers[3].data)
    assert sizes == (29, 37) and in_strides == (2 * 37, 2)   # transposed (37, 29) view of a (29, 37) base
    assert t.grid == (29, 37, 1)
    out_strides = struct.unpack("<2q", vs[1].launch.buffers[4].data)
    assert out_strides == (2 * 23, 2)


def test_binary_cast_plan_uses_runtime_types():
    from mpslint.smoke import dtypes, launch
    e = _entry("binary_dense_cast", ["float", "hypot_functor", "float"],
               [(1, "float"), (1, "void"), (1, "void"), (2, "uint4")], host="hypot_dense_cast_float_float")
    (v,) = launch.plan_entry(e, {}, None)
    sizes_types = struct.unpack("<4I", v.launch.buffers[3].data)
    half, flt = dtypes.lookup("half"), dtypes.lookup("float")
    assert sizes_types == (half.size, flt.size, half.code, flt.code)
    assert str(v.inputs[0].dtype) == "torch.float16" and str(v.inputs[1].dtype) == "torch.float32"


def test_binary_alpha_broadcast_plan():
    from mpslint.smoke import launch
    e = _entry("binary_alpha_dense_broadcast_rhs", ["long", "long", "add_functor"],
               [(1, "long"), (1, "long"), (1, "long"), (2, "long"), (2, "long")], host="add_dense_broadcast_rhs_long_long_long")
    (v,) = launch.plan_entry(e, {}, None)
    assert v.alpha == 2
    assert struct.unpack("<q", v.launch.buffers[3].data) == (17,)
    assert tuple(v.inputs[0].shape) == (23, 17) and v.inputs[0].stride() == (0, 1)


def test_signature_mismatch_is_skipped_not_launched():
    from mpslint.smoke import launch
    e = _entry("unary_dense", ["float", "exp_functor"], [(1, "float"), (1, "float")])
    (v,) = launch.plan_entry(e, {}, None)
    assert v.skip and "expects 3" in v.skip


def test_unknown_family_is_skipped():
    from mpslint.smoke import launch
    (v,) = launch.plan_entry(_entry("my_kernel", [], [(1, "float")]), {}, None)
    assert v.skip and "mpslint-smoke" in v.skip


def test_domains_and_nonzero():
    import torch
    from mpslint.smoke import dtypes, launch, reference
    g = torch.Generator().manual_seed(0)
    x = launch.make_values(dtypes.lookup("float"), (500,), reference.builtin_reference("log"), 0, g)
    assert bool((x > 0).all())
    d = launch.make_values(dtypes.lookup("int"), (500,), reference.builtin_reference("remainder"), 1, g)
    assert bool((d != 0).all())


def test_compare_tolerances_and_ulp():
    import torch
    from mpslint.smoke import compare
    e = torch.tensor([1.0, 2.0, float("nan"), float("inf")])
    assert compare.compare(e.clone(), e, "float", (1e-5, 1e-5)).ok
    bad = compare.compare(torch.tensor([1.0, 2.5, float("nan"), float("inf")]), e, "float", (1e-5, 1e-5))
    assert not bad.ok and "index [1]" in bad.message and "1/4" in bad.message
    h = torch.tensor([1.0], dtype=torch.float16)
    one_ulp = torch.tensor([1.0009765625], dtype=torch.float16)
    assert compare.compare(one_ulp, h, "half", (0.0, 0.0)).ok
    assert not compare.compare(torch.tensor([1.00390625], dtype=torch.float16), h, "half", (0.0, 0.0)).ok
    assert not compare.compare(torch.tensor([1, 2]), torch.tensor([1, 3]), "int", (0, 0)).ok


def test_unwritten_counts_fill_pattern():
    from mpslint.smoke import compare
    raw = struct.pack("<3f", 1.0, 2.0, 3.0) + b"\xff" * 4
    assert compare.unwritten(raw, "float", (4,), (1,), 0xFF) == 1


def test_reference_hook_wins_and_survives_errors():
    from mpslint.smoke import reference
    mine = reference.Reference(lambda x, **_: x, "identity")
    assert reference.resolve("exp", lambda op: mine) is mine
    assert reference.resolve("exp", lambda op: None).name == "torch.exp"

    def broken(op):
        raise RuntimeError("boom")
    assert reference.resolve("exp", broken).name == "torch.exp"
    assert reference.resolve("definitely_not_an_op") is None


def test_compare_complex_half_lanes_and_real_only():
    import torch

    from mpslint.smoke import compare

    exp = torch.tensor([1.0 + 2.0j, -3.0 + 0.5j], dtype=torch.complex64).to(torch.complex32)
    lanes = torch.view_as_real(exp).clone()
    lanes[0, 1] = torch.nextafter(lanes[0, 1].float(), torch.tensor(9.0)).half()  # +1 ulp in the imaginary lane
    one_ulp = torch.view_as_complex(lanes.float()).to(torch.complex32)
    assert compare.compare(one_ulp, exp, "half2", (0.0, 0.0)).ok
    lanes[0, 1] = 2.00390625 * 2  # far off
    far = torch.view_as_complex(lanes.float()).to(torch.complex32)
    assert not compare.compare(far, exp, "half2", (0.0, 0.0)).ok
    # |z| written to both lanes of a complex output: torch's abs is real, only the real lane counts
    z = torch.tensor([3.0 + 4.0j], dtype=torch.complex64)
    info: dict = {}
    from mpslint.smoke.reference import Reference

    e = compare.expected_output(Reference(torch.abs, "abs"), [z], "float2", None, "float2", info)
    assert info["real_only"] is True
    got = torch.tensor([5.0 + 5.0j], dtype=torch.complex64)
    assert compare.compare(got, e, "float2", (1e-6, 1e-6), real_only=True).ok
    assert not compare.compare(got, e, "float2", (1e-6, 1e-6)).ok
