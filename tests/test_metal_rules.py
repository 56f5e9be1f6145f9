"""Edge cases of the MTL2xx rules that fixtures cannot hold (one-off trees, .mm files compiled by compile_shader)."""

from __future__ import annotations

import textwrap

import pytest

from mpslint.engine import LintOptions, lint


def _run(tmp_path, files: dict[str, str], select):
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text), encoding="utf-8")
    paths = [str(tmp_path / rel) for rel in files]
    result = lint(LintOptions(paths=paths, select=select, cwd=tmp_path))
    assert not result.internal_errors, result.internal_errors
    return sorted((f.path, f.span.line, f.code) for f in result.findings)


MM_SHADER = '''
    #include <ATen/native/mps/OperationUtils.h>
    static const char* SHADER = R"METAL(
    #include <metal_stdlib>
    using namespace metal;
    kernel void scan(device float* x [[buffer(0)]],
                     threadgroup float* tmp [[threadgroup(0)]],
                     uint tid [[thread_position_in_threadgroup]]) {
      tmp[tid] = x[tid];
    }
    )METAL";
    void run_scan() {
      auto lib = %s(SHADER);
    }
'''


@pytest.mark.parametrize("call,flagged", [("compile_shader", True), ("mps::MetalShaderLibrary", False)])
def test_mtl205_in_mm_only_when_compiled_by_compile_shader(tmp_path, call, flagged):
    got = _run(tmp_path, {"aten/src/ATen/native/mps/operations/Scan.mm": MM_SHADER % call}, ["MTL205"])
    assert bool(got) is flagged
    if flagged:
        assert got[0][1] == 7  # the parameter's line in the host file


def test_mtl205_py_file_only_when_named(tmp_path):
    src = 'import torch\nlib = torch.mps.compile_shader("kernel void k(threadgroup float* t [[threadgroup(0)]]) {}")\n'
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg/dbg.py").write_text(src, encoding="utf-8")
    assert lint(LintOptions(paths=[str(tmp_path)], select=["MTL205"], cwd=tmp_path)).findings == []
    named = lint(LintOptions(paths=[str(tmp_path / "pkg/dbg.py")], select=["MTL205"], cwd=tmp_path)).findings
    assert [(f.span.line, f.code) for f in named] == [(2, "MTL205")]


def test_mtl202_host_only_part_of_a_shared_header(tmp_path):
    hdr = """
        #pragma once
        #include <metal_stdlib>
        #ifndef __METAL__
        template <typename T> inline T host_side(T x) { if constexpr (sizeof(T) == 8) { return x; } return x; }
        #else
        template <typename T> inline T dev_side(device T* x) { if constexpr (sizeof(T) == 8) { return x[0]; } return x[0]; }
        #endif
    """
    got = _run(tmp_path, {"aten/src/ATen/native/mps/kernels/Shared.h": hdr}, ["MTL202"])
    assert [line for _, line, _ in got] == [7]


@pytest.mark.parametrize(
    "body,flagged",
    [
        ("if (i >= n) { TORCH_REPORT_ERROR(err, \"bad\"); }\n  out[i] = 1;", True),
        ("if (i >= n) { TORCH_REPORT_ERROR(err, \"bad\"); return; }\n  out[i] = 1;", False),
        ("if (i >= n) { TORCH_REPORT_ERROR(err, \"bad\"); out[0] = 0; return; }\n  out[i] = 1;", False),
        ("if (i >= n) { if (tid == 0) { TORCH_REPORT_ERROR(err, \"bad\"); } return; }\n  out[i] = 1;", False),
        ("if (i >= n) { if (tid == 0) { TORCH_REPORT_ERROR(err, \"bad\"); } }\n  out[i] = 1;", True),
        ("for (long j = 0; j < 4; ++j) { if (i >= n) { TORCH_REPORT_ERROR(err, \"bad\"); } }", False),
        ("if (i < n) { out[i] = 1; } else { TORCH_REPORT_ERROR(err, \"bad\"); }", False),
        ("if (i >= n) { TORCH_REPORT_ERROR(err, \"bad\"); i = n - 1; }\n  out[i] = 1;", False),
        ("if (i >= n) { TORCH_REPORT_ERROR(err, \"bad\"); }\n  threadgroup_barrier(mem_flags::mem_none);", False),
        ("if (i >= n) { TORCH_REPORT_ERROR(err, \"bad\"); }\n  threadgroup_barrier(mem_flags::mem_none);\n  out[i] = 1;", True),
    ],
)
def test_mtl203_paths(tmp_path, body, flagged):
    src = f"""
        #include <c10/metal/error.h>
        kernel void k(device float* out [[buffer(0)]], constant long* idx [[buffer(1)]], constant long& n [[buffer(2)]],
                      device c10::metal::ErrorMessages* err [[buffer(3)]], uint tid [[thread_position_in_grid]]) {{
          long i = idx[tid];
          {body}
        }}
    """
    got = _run(tmp_path, {"k.metal": src}, ["MTL203"])
    assert bool(got) is flagged, got


@pytest.mark.parametrize(
    "decl,index,flagged",
    [
        ("constant uint& s", "tid * s", True),
        ("constant int& s", "int(tid) * s + 1", True),
        ("constant long& s", "tid * s", False),
        ("constant uint& s", "long(tid) * s", False),
        ("constant uint& s", "static_cast<ulong>(tid) * s", False),
        ("constant uint& s", "(long)tid * s", False),
        ("constant uint& s", "tid * 8u", False),
        ("constant uint& s", "tid + s", False),
        ("constant uint3& s", "tid * s.x", True),
        ("constant float& s", "tid", False),
    ],
)
def test_mtl204_widths(tmp_path, decl, index, flagged):
    src = f"kernel void k(device float* out [[buffer(0)]], {decl} [[buffer(1)]], uint tid [[thread_position_in_grid]]) {{\n  out[{index}] = 0;\n}}\n"
    got = _run(tmp_path, {"k.metal": src}, ["MTL204"])
    assert bool(got) is flagged, got


def test_mtl206_using_namespace_and_opt_in(tmp_path):
    src = "using namespace metal::fast;\ninline float f(float x) { return metal::fast::sin(x) + precise::cos(x); }\n"
    files = {"aten/src/ATen/native/mps/kernels/F.metal": src}
    assert _run(tmp_path, files, None) == []  # not on by default
    got = _run(tmp_path, files, ["MTL206"])
    assert [line for _, line, _ in got] == [1, 2]


def test_mtl202_not_in_c10_metal_common_h(torch_site, tmp_path):
    """The wheel's own IF_CONSTEXPR definition (and the rest of c10/metal) is clean."""
    import shutil

    dst = tmp_path / "c10/metal"
    shutil.copytree(torch_site / "torch/include/c10/metal", dst)
    assert "IF_CONSTEXPR" in (dst / "common.h").read_text(encoding="utf-8")
    result = lint(LintOptions(paths=[str(tmp_path)], select=["MTL202"], cwd=tmp_path))
    assert not result.internal_errors
    assert result.findings == []


def test_gathered_index_metal_alone(tmp_path):
    """MTL209 with no operation source in the run judges every kernel: the fixture's positives, and the two kernels
    whose host (not in view here) makes or validates the index tensor; every other near-miss stays clean."""
    from pathlib import Path

    fixture = Path(__file__).resolve().parent.parent / "fixtures/aten/src/ATen/native/mps/kernels/GatheredIndex.metal"
    text = fixture.read_text(encoding="utf-8")
    lines = text.splitlines()
    expect = {i + 1 for i, ln in enumerate(lines) if "expect: MTL209" in ln}
    hosted = {i + 1 for i, ln in enumerate(lines) if "ok: MTL209 (the op's own permutation)" in ln or "ok: MTL209 (the host checks)" in ln}
    assert len(expect) >= 3 and len(hosted) == 2
    (tmp_path / "k.metal").write_text(text, encoding="utf-8")
    result = lint(LintOptions(paths=[str(tmp_path / "k.metal")], select=["MTL209"], cwd=tmp_path))
    assert not result.internal_errors, result.internal_errors
    assert {f.span.line for f in result.findings} == expect | hosted
