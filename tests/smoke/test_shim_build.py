"""Build-side fixes for real kernels: the textual rewrites (address-space-only specialisations, threadgroup array
parameters, function attributes before [[kernel]]), rewritten headers found through nested include roots, and
generated trampolines that keep a failing instantiation to one diagnostic at its registration line."""
from __future__ import annotations

import shutil
from pathlib import Path

from mpslint.smoke import build, diagnostics, rewrite, toolchain

from _smoke_helpers import needs_toolchain, needs_zig

SPECS = """template <typename T>
struct elem {};
template <typename T>
struct elem<thread T*> { using type = T; };
template <typename T>
struct elem<device T*> {
  using type = T;
};
template <typename T>
struct elem<constant T*> { using type = T; };
template <typename T>
struct elem<threadgroup T*> { using type = T; };
template <typename T>
struct other<device T*> { using type = T; };
"""


def test_rewrite_collapses_address_space_only_specialisations():
    out = rewrite.rewrite_source(SPECS)
    assert out.count("\n") == SPECS.count("\n")                     # line structure kept
    assert "elem<thread T*>" in out and "elem<constant T*>" in out   # `constant` is `const` on the host: distinct
    assert "elem<device T*>" not in out and "elem<threadgroup T*>" not in out
    assert "other<device T*>" in out                                 # another template keeps its own


def test_rewrite_threadgroup_array_parameter_and_function_attribute():
    src = ("template <typename T>\ninline T f(\n    threadgroup T tile[8][8],\n    uint i) {\n"
           "  threadgroup T scratch[8][8];\n  threadgroup float one;\n  return tile[i][i];\n}\n"
           "template <typename T>\n[[max_total_threads_per_threadgroup(N * \\\n 2)]] [[kernel]] void k() {}\n")
    out = rewrite.rewrite_source(src)
    assert out.count("\n") == src.count("\n")
    assert "    threadgroup T tile[8][8]," in out                        # a parameter is not made static
    assert "static T scratch[8][8];" in out and "static float one;" in out
    assert "max_total_threads_per_threadgroup" not in out and "\\\n" in out   # continuation kept
    assert "template <typename T>\n" in out and "kernel void k()" in out


@needs_toolchain
def test_headers_under_nested_include_roots_are_the_rewritten_copies(tmp_path: Path, smoke_cache):
    """A PyTorch-shaped tree has include roots <tree> and <tree>/aten/src; `<ATen/...>` and "sibling.h" must
    resolve to the rewritten headers (here a function-local threadgroup array, shared by the group only after
    the rewrite), not to the originals reachable through -idirafter."""
    inc = toolchain.torch_include_dir()
    shutil.copytree(inc / "c10" / "metal", tmp_path / "c10" / "metal")
    kdir = tmp_path / "aten" / "src" / "ATen" / "native" / "mps" / "kernels"
    kdir.mkdir(parents=True)
    shared = ("#pragma once\ninline float group_total(float v, uint lid, uint n) {\n"
              "  threadgroup float vals[64];\n  vals[lid] = v;\n  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
              "  float s = 0;\n  for (uint k = 0; k < n; ++k) {\n    s += vals[k];\n  }\n  return s;\n}\n")
    (kdir / "GroupTotal.h").write_text(shared)
    (kdir / "sibling.h").write_text(shared.replace("group_total", "group_total2"))
    k = kdir / "Totals.metal"
    k.write_text("#include <metal_stdlib>\nusing namespace metal;\n#include <ATen/native/mps/kernels/GroupTotal.h>\n"
                 '#include "sibling.h"\n'
                 "kernel void totals(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],\n"
                 "    uint lid [[thread_position_in_threadgroup]], uint n [[threads_per_threadgroup]]) {\n"
                 "  out[lid] = group_total(x[lid], lid, n) + group_total2(x[lid], lid, n);\n}\n"
                 "// mpslint-smoke: totals grid=16 group=16 op=totals args=0:float[16]=range 1:float[16]=zeros!out\n")
    assert toolchain.include_roots(k) == [tmp_path.resolve(), (tmp_path / "aten" / "src").resolve()]
    plan = build.mirror_plan(k, toolchain.include_roots(k), build.scan_includes(k, toolchain.include_roots(k)))
    targets = build.mirror_targets((kdir / "GroupTotal.h").resolve(), k, toolchain.include_roots(k))
    assert {str(t.parts[0]) for t in targets} == {"inc0", "inc1", "src"} and len(plan) == 3

    import torch
    from mpslint.smoke.api import Reference, SmokeOptions, run_smoke
    ref = Reference(lambda x, out: (torch.full((16,), 2 * float(x.sum())),), "totals")
    rep = run_smoke([k], SmokeOptions(backend="host", timeout=10, cache_dir=smoke_cache,
                                      reference_for={"totals": ref}.get))
    (o,) = rep.outcomes
    assert o.status == "passed", o


@needs_zig
def test_failing_instantiation_is_one_error_at_its_registration(tmp_path: Path, smoke_cache):
    k = tmp_path / "k.metal"
    k.write_text("#include <metal_stdlib>\nusing namespace metal;\n"
                 "template <typename T>\n"
                 "kernel void fill(device T* o [[buffer(0)]], uint i [[thread_position_in_grid]]) "
                 "{ o[i] = T(1); }\n"
                 'template [[host_name("fill_float")]] kernel void fill<float>(device float* o, uint i);\n'
                 'template [[host_name("fill_int")]] kernel void fill<int>(device float* o, uint i);\n'
                 'template [[host_name("fill_half")]] kernel void fill<half>(device half* o, uint i);\n')
    res = build.build(k, cache_dir=smoke_cache)
    assert res.status == "compile-error"
    where = [(diagnostics.locate(d, str(k))[0], d.message) for d in res.diagnostics]
    assert all("__msl_" not in m and "mpslint-smoke" not in d.path for (_, m), d in zip(where, res.diagnostics))
    assert {ln for ln, _ in where} == {6}, where


def test_cache_key_covers_the_generators():
    assert {"rewrite.py", "trampoline.py", "analyze.py"} <= set(build._GENERATORS)
    assert len(build.generator_digest()) == 64


@needs_toolchain
def test_bfloat_integer_conditional_is_a_reported_shim_limit(tmp_path: Path, smoke_cache):
    """Valid MSL the class-type bfloat cannot express: skipped with the reason, never an SMK401 finding."""
    from mpslint.smoke.api import SmokeOptions, run_smoke
    k = tmp_path / "clip.metal"
    k.write_text("#include <metal_stdlib>\nusing namespace metal;\n"
                 "template <typename T>\nkernel void clip(device T* x [[buffer(0)]], constant long& hi [[buffer(1)]],\n"
                 "    uint i [[thread_position_in_grid]]) {\n  x[i] = x[i] > hi ? hi : x[i];\n}\n"
                 'template [[host_name("clip_bfloat")]] kernel void clip<bfloat>(\n'
                 "    device bfloat*, constant long&, uint);\n")
    rep = run_smoke([k], SmokeOptions(backend="host", timeout=5, cache_dir=smoke_cache))
    assert rep.outcomes and all(o.status == "skipped" and o.code is None for o in rep.outcomes), rep.outcomes
    assert "bfloat is a class type" in rep.outcomes[0].message
