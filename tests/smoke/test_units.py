"""Unit tests of the toolchain-free pieces: rewrite, analysis, diagnostics, specs, dtypes, report."""
from __future__ import annotations

from pathlib import Path

from mpslint.smoke import analyze, diagnostics, dtypes, rewrite, spec, textutil
from mpslint.smoke.api import SMK401, SMK402, SmokeOutcome, SmokeReport


def test_rewrite_keeps_lines_and_maps_origin():
    src = ('template [[host_name("a_"\n "float")]]\nkernel void f<float>(device float*);\n'
           "kernel void g(device half* x [[buffer(0)]], threadgroup float* s [[threadgroup(0)]]) {\n"
           "  threadgroup float tile[64];\n  x[0] = 1.5h + 2bf;\n}\n")
    out = rewrite.rewrite_source(src, "/orig/k.metal")
    lines = out.splitlines()
    assert lines[0] == '#line 1 "/orig/k.metal"'
    assert len(lines) - 1 == len(src.splitlines())
    assert "MSL_HOST_NAME(" in out and "[[host_name" not in out
    assert "static float tile[64]" in out
    assert "[[msl_threadgroup(0)]]" in out and "threadgroup float* s" in out   # parameters keep the qualifier
    assert "((half)1.5f)" in out and "((bfloat)2f)" in out


def test_rewrite_kernel_attribute_and_function_constant():
    out = rewrite.rewrite_source("constant bool has_bias [[function_constant(0)]];\n[[kernel]] void k() {}\n")
    assert "bool has_bias = bool();" in out
    assert "kernel void k()" in out


PRE = '''# 1 "/t/k.metal"
namespace c10 { namespace metal {
template <typename T, typename F>
__msl_kernel__ void unary_dense(device T* out [[buffer(0)]], constant T* in [[buffer(1)]],
    constant uint& numel [[buffer(2)]], uint index [[thread_position_in_grid]]) { }
}}
# 40 "/t/k.metal"
template [[host_name("exp_dense_float_float")]] __msl_kernel__ void ::c10::metal::unary_dense<float, exp_functor>(device float* out, constant float* in, constant uint& numel, uint index);
__msl_kernel__ void plain(device float* a, device int* b [[buffer(3)]], threadgroup float* t [[msl_threadgroup(1)]], uint2 p [[thread_position_in_grid]]) { }
'''


def test_analyze_finds_instantiations_roles_and_lines():
    ana = analyze.entry_points(PRE)
    by = {e.host_name: e for e in ana.entries}
    e = by["exp_dense_float_float"]
    assert e.base == "unary_dense" and e.targs == ["float", "exp_functor"]
    assert e.roles == [0, 1, 2, -1]
    assert e.origin.path == "/t/k.metal" and e.origin.line == 40
    p = by["plain"]
    assert p.roles == [0, 3, 1001, -1]       # unannotated buffer takes the first free index
    assert p.origin.line == 41
    assert ana.problems == []


def test_analyze_reports_unknown_attribute():
    ana = analyze.entry_points('# 1 "/x.metal"\n__msl_kernel__ void k(uint x [[stage_in]]) { }\n')
    assert ana.entries == [] and "stage_in" in ana.problems[0][1]


def test_split_template_and_split_top():
    assert analyze.split_template("::a::b<float, F<int, 2>>") == ("b", ["float", "F<int, 2>"])
    assert textutil.split_top("a, b<c, d>, (e, f)") == ["a", "b<c, d>", "(e, f)"]


def test_diagnostics_locate_through_notes_and_includes():
    text = ("In file included from /t/k.metal:3:\n"
            "/h/indexing.h:10:5: error: no matching function for call to 'f'\n"
            "/t/k.metal:20:1: note: in instantiation of function template specialization requested here\n"
            "/t/k.metal:7:3: error: use of undeclared identifier 'x'\n"
            "In file included from /t/k.metal:4:\n/h/other.h:2:1: error: boom\n")
    errs = diagnostics.errors(text)
    assert len(errs) == 3
    assert diagnostics.locate(errs[0], "/t/k.metal")[:2] == (20, 1)
    assert diagnostics.locate(errs[1], "/t/k.metal") == (7, 3, "")
    assert diagnostics.locate(errs[2], "/t/k.metal")[:2] == (4, 1)


def test_spec_parse():
    s = spec.parse("x\n// mpslint-smoke: k grid=10,2 group=5 groups tgmem=128 op=o "
                   "args=0:float[10]=rand(0,1) 1:int[4]=zeros!out 2:uint=7\n")["k"]
    assert s.line == 2 and s.grid == (10, 2, 1) and s.group == (5, 1, 1) and s.mode == 1 and s.tgmem == [128]
    assert [(a.index, a.dtype, a.count, a.out) for a in s.args] == [(0, "float", 10, False), (1, "int", 4, True),
                                                                     (2, "uint", None, False)]
    assert spec.parse("// mpslint-smoke: k args=0:nonsense[3]=zeros\n")["k"].error


def test_dtypes_table():
    assert dtypes.lookup("bfloat").code == 15 and dtypes.lookup("int64_t").name == "long"
    assert dtypes.split_dtype_suffix("add_dense_float_half", 2) == ["float", "half"]
    assert dtypes.split_dtype_suffix("add_dense_foo", 2) is None


def _o(code, status, msg="m"):
    return SmokeOutcome(code, status, "k.metal", 1, 1, 1, 2, "k", "op", "float", "dense", msg, "host-emulated")


def test_report_summary_counts():
    r = SmokeReport([_o(None, "passed"), _o(SMK402, "failed"), _o(None, "skipped", "no launch plan for `x`"),
                     _o(None, "skipped", "no launch plan for `y`"), _o(None, "no-reference"),
                     _o(SMK401, "failed")], "host-emulated", [{"path": "k.metal"}])
    s = r.summary()
    assert (s.variants_run, s.passed, s.failed, s.no_reference, s.skipped) == (3, 1, 2, 1, 2)
    assert s.skipped_reasons == {"no launch plan for `…`": 2}
    assert s.by_code == {SMK402: 1, SMK401: 1}
    assert "host-emulated" in r.format_summary()
    assert len(r.findings) == 2


def test_metal_backend_shared_pieces(tmp_path: Path):
    from mpslint.smoke.metal_backend import MetalBackend, embed_includes, param_info_from_text
    (tmp_path / "c10" / "metal").mkdir(parents=True)
    (tmp_path / "c10" / "metal" / "a.h").write_text("#pragma once\n#include <c10/metal/b.h>\nint a;\n")
    (tmp_path / "c10" / "metal" / "b.h").write_text("#pragma once\nint b;\n")
    k = tmp_path / "k.metal"
    k.write_text("#include <c10/metal/a.h>\n#include <c10/metal/b.h>\n#include <metal_stdlib>\nkernel void f();\n")
    out = embed_includes(k, [tmp_path])
    assert out.count("int b;") == 1 and "int a;" in out and "#include <metal_stdlib>" in out
    assert "#include <c10/metal" not in out
    assert param_info_from_text("device float* out", 0)["kind"] == 1
    assert param_info_from_text("constant uint& n", 2) == {"role": 2, "kind": 2, "type": "uint", "size": 4,
                                                           "text": "constant uint& n"}
    import sys
    if sys.platform != "darwin":
        assert "macOS" in MetalBackend.usable()
