"""Host<->kernel links in extension style: newFunctionWithName: names, wrappers shared through headers,
names built from std::string concatenations, tuples and static constexpr prefixes, compile_shader in Python."""

from __future__ import annotations

import json

import pytest

from click.testing import CliRunner

from mpslint.cli import main
from mpslint.engine import LintOptions, lint
from mpslint.graph_view import describe_links

METAL = """#include <metal_stdlib>
using namespace metal;
kernel void add_rows(device float* out [[buffer(0)]], constant float* a [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  out[i] = a[i];
}
template <typename T>
kernel void scale(device T* out [[buffer(0)]], constant T* a [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  out[i] = a[i];
}
#define INSTANTIATE_SCALE(DTYPE, BITS) \\
  template [[host_name("scale_" #BITS "bit_" #DTYPE)]] kernel void scale<DTYPE>( \\
    device DTYPE* out [[buffer(0)]], constant DTYPE* a [[buffer(1)]], uint i [[thread_position_in_grid]])
INSTANTIATE_SCALE(float, 4);
INSTANTIATE_SCALE(half, 4);
"""

HEADER = """#pragma once
#include <torch/extension.h>
#include <Metal/Metal.h>
struct Env {
  id<MTLComputePipelineState> pso;
  static Env Create(NSString* shaderName) {
    Env e{};
    id<MTLLibrary> lib = [MTLCreateSystemDefaultDevice() newDefaultLibrary];
    id<MTLFunction> f = [lib newFunctionWithName:shaderName];
    e.pso = [MTLCreateSystemDefaultDevice() newComputePipelineStateWithFunction:f error:nil];
    return e;
  }
};
"""

HOST = """#include <torch/extension.h>
#include "Env.h"
template <int bits> struct Config {};
template <> struct Config<4> { static constexpr std::string_view prefix = "scale_"; };

void literal_name(id<MTLLibrary> lib) {
  id<MTLFunction> f = [lib newFunctionWithName:@"add_rows"];
}
void utf8_name(id<MTLLibrary> lib, const at::Tensor& t) {
  const std::string name = "scale_4bit_" + std::string(t.scalar_type() == at::kHalf ? "half" : "float");
  id<MTLFunction> f = [lib newFunctionWithName:[NSString stringWithUTF8String:name.c_str()]];
}
void through_header() {
  Env env = Env::Create(@"add_rows");
}
std::tuple<std::string, int> pick(int bits, const std::string& type_str) {
  return std::make_tuple(std::string(Config<4>::prefix) + std::to_string(bits) + "bit_" + type_str, 1);
}
void through_tuple(id<MTLLibrary> lib, const std::string& type_str) {
  auto picked = pick(4, type_str);
  const std::string name = std::get<0>(picked);
  id<MTLFunction> f = [lib newFunctionWithName:@(name.c_str())];
}
void unknown(id<MTLLibrary> lib) {
  id<MTLFunction> f = [lib newFunctionWithName:@"no_such_kernel"];
}
"""


def _tree(tmp_path):
    mps = tmp_path / "ext" / "mps"
    mps.mkdir(parents=True)
    (mps / "kernels.metal").write_text(METAL)
    (mps / "Env.h").write_text(HEADER)
    (mps / "ops.mm").write_text(HOST)
    return mps


def _links(mps):
    graph = lint(LintOptions(paths=[str(mps.parent)], select=["DSP"])).project.graph
    return {e["function"]: e for e in describe_links(graph)}


def test_extension_kernel_names_resolve(tmp_path):
    links = _links(_tree(tmp_path))
    kernels = {fn: [k["name"] for k in e["kernels"]] for fn, e in links.items()}
    assert kernels["literal_name"] == ["add_rows"]
    assert kernels["utf8_name"] == ["scale"]
    assert kernels["through_header"] == ["add_rows"]  # Env::Create is a wrapper defined in another file
    assert kernels["through_tuple"] == ["scale"]  # std::get<0> of a helper's make_tuple, static constexpr prefix
    assert kernels["unknown"] == []
    assert "Create" not in links  # the wrapper itself names no kernel: its callers do
    assert links["utf8_name"]["call"] == "newFunctionWithName"


def test_graph_command_lists_links(tmp_path):
    mps = _tree(tmp_path)
    r = CliRunner().invoke(main, ["graph", str(mps.parent)])
    assert r.exit_code == 0, r.output
    assert "literal_name -> newFunctionWithName('add_rows')" in r.output
    assert "-> Metal add_rows in" in r.output
    assert "(no kernel of these paths matches /no_such_kernel/)" in r.output
    r = CliRunner().invoke(main, ["graph", str(mps.parent), "--links", "--format", "json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.output)
    assert {e["function"] for e in data} >= {"literal_name", "through_header", "through_tuple"}


def test_raw_string_metal_header_is_host(tmp_path):
    mps = tmp_path / "mps"
    mps.mkdir()
    (mps / "Kernels.h").write_text('#pragma once\nstatic const char* SRC = R"MTL(\n#include <metal_stdlib>\nusing namespace metal;\n'
                                   'kernel void k1(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = 0; }\n)MTL";\n')
    (mps / "op.mm").write_text('#include "Kernels.h"\nvoid f(id<MTLLibrary> lib) { auto fn = [lib newFunctionWithName:@"k1"]; }\n')
    links = _links(mps)
    assert [k["name"] for k in links["f"]["kernels"]] == ["k1"]


def test_send_after_pointer_cast_is_masked():
    from mpslint.masking import mask_objc

    src = "float* q = (float*)[buf contents]; auto z = (x)[3]; auto w = (const T*)[b contents] + 1;"
    out = mask_objc(src)
    assert len(out) == len(src)
    assert "(float*)(buf.contents)" in out and "(x)[3]" in out and "(const T*)(b.contents)" in out


def test_compile_shader_calls_link_to_their_kernels(tmp_path):
    src = tmp_path / "shader_ext.py"
    src.write_text(
        "import torch\n"
        'SRC = """\n#include <metal_stdlib>\nusing namespace metal;\n'
        'kernel void add_one(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] += 1; }\n"""\n'
        "lib = torch.mps.compile_shader(SRC)\n"
        "def run(x):\n"
        "    lib.add_one(x)\n"
        '    getattr(lib, "add_one")(x)\n'
        "    lib.missing(x)\n"
        "    x.add_(1)  # not a shader library\n"
    )
    graph = lint(LintOptions(paths=[str(src)], select=["DSP"])).project.graph
    links = describe_links(graph)
    assert [(e["function"], e["line"], [k["name"] for k in e["kernels"]]) for e in links] == [
        ("run", 9, ["add_one"]), ("run", 10, ["add_one"]), ("run", 11, [])]


def test_compile_shader_library_getter_prefixes_and_imported_sources(tmp_path):
    shaders = tmp_path / "shaders_src.py"
    shaders.write_text(
        'ROW_SOURCE = r"""\n#include <metal_stdlib>\nusing namespace metal;\n'
        'kernel void rows_f32(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = 0; }\n'
        'kernel void rows_f16(device half* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = 0; }\n"""\n'
        'NOT_METAL = "kernel void is just words here"\n'
    )
    ops = tmp_path / "ops.py"
    ops.write_text(
        "import torch\n"
        "_LIB = None\n"
        "def _library():\n"
        "    global _LIB\n"
        "    if _LIB is None:\n"
        "        from shaders_src import ROW_SOURCE\n"
        "        _LIB = torch.mps.compile_shader(ROW_SOURCE)\n"
        "    return _LIB\n"
        "def suffix(t):\n"
        '    return "_f16" if t == torch.float16 else "_f32"\n'
        "def rows(x):\n"
        "    lib = _library()\n"
        '    getattr(lib, "rows" + suffix(x.dtype))(x, threads=x.numel())\n'
        '    getattr(lib, f"rows_{x.dtype}")(x)\n'
        "    _library().rows_f32(x)\n"
    )
    project = lint(LintOptions(paths=[str(ops), str(shaders)], select=["DSP"])).project
    assert len(project.metals[str(shaders)]) == 1  # ROW_SOURCE reads like Metal, NOT_METAL does not
    links = describe_links(project.graph)
    got = [(e["line"], e["name"], [k["name"] for k in e["kernels"]]) for e in links]
    assert got == [(13, "rows…", ["rows_f16", "rows_f32"]), (14, "rows_…", ["rows_f16", "rows_f32"]), (15, "rows_f32", ["rows_f32"])]


def test_mtl204_judges_extension_kernels_by_their_newFunctionWithName_launchers(tmp_path):
    ext = tmp_path / "ext"
    ext.mkdir()
    (ext / "k.metal").write_text(
        "#include <metal_stdlib>\nusing namespace metal;\n"
        "kernel void wide_rows(device float* out [[buffer(0)]], constant uint& cols [[buffer(1)]],\n"
        "                      uint2 tid [[thread_position_in_grid]]) {\n"
        "  out[tid.y * cols + tid.x] = 0;\n}\n"
        "kernel void safe_rows(device float* out [[buffer(0)]], constant uint& cols [[buffer(1)]],\n"
        "                      uint2 tid [[thread_position_in_grid]]) {\n"
        "  out[tid.y * cols + tid.x] = 0;\n}\n"
    )
    (ext / "ops.mm").write_text(
        "#include <torch/extension.h>\n"
        "void wide(id<MTLLibrary> lib, const torch::Tensor& t) {\n"
        '  id<MTLFunction> f = [lib newFunctionWithName:@"wide_rows"];\n}\n'
        "void safe(id<MTLLibrary> lib, const torch::Tensor& t) {\n"
        '  TORCH_CHECK(t.numel() <= std::numeric_limits<int32_t>::max(), "too large");\n'
        '  id<MTLFunction> f = [lib newFunctionWithName:@"safe_rows"];\n}\n'
    )
    found = lint(LintOptions(paths=[str(ext)], select=["MTL204"])).findings
    assert [(f.span.line, "launched from `wide`" in f.message) for f in found] == [(5, True)]


OPS_MM = """#include <torch/extension.h>
#include <Metal/Metal.h>
torch::Tensor pack_rows(const torch::Tensor& t, bool wide) {
  TORCH_CHECK(wide || t.numel() < INT32_MAX, "pack_rows: too large");
  uint32_t n = t.numel();
  return t.new_empty({static_cast<int64_t>(n)});
}
"""
BINDINGS_CPP = """#include <torch/extension.h>
torch::Tensor pack_rows(const torch::Tensor& t, bool wide);
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("pack_rows", &pack_rows);
}
"""
CPU_CPP = """torch::Tensor cpu_only(const torch::Tensor& t) { uint32_t n = t.numel(); return t; }
"""


@pytest.mark.parametrize("mm_dir,binding_dir", [("csrc", "csrc"), ("relu/relu_metal", "relu/torch-ext")])
def test_binding_file_beside_the_host_code_is_read_as_context(tmp_path, mm_dir, binding_dir):
    """`csrc/bindings.cpp` or `torch-ext/torch_binding.cpp` (not under an `mps` folder) binds the `.mm`
    functions: read as context, its bound functions are entry points (any `wide` from Python), and nothing in it
    is reported; a C++ file that binds nothing is not read."""
    (tmp_path / mm_dir).mkdir(parents=True)
    (tmp_path / binding_dir).mkdir(parents=True, exist_ok=True)
    (tmp_path / mm_dir / "ops.mm").write_text(OPS_MM)
    (tmp_path / binding_dir / "cpu.cpp").write_text(CPU_CPP)
    without = lint(LintOptions(paths=[str(tmp_path)], select=["MPS102"], cwd=tmp_path))
    assert [f.span.line for f in without.findings] == []  # no call in view: `wide` taken as false, the check bounds n
    (tmp_path / binding_dir / "bindings.cpp").write_text(BINDINGS_CPP)
    got = lint(LintOptions(paths=[str(tmp_path)], select=["ALL"], cwd=tmp_path))
    assert f"{binding_dir}/bindings.cpp" in got.project.hosts and f"{binding_dir}/cpu.cpp" not in got.project.hosts
    assert f"{binding_dir}/bindings.cpp" not in got.project.linted
    assert [(f.path, f.span.line, f.code) for f in got.findings if f.code == "MPS102"] == [(f"{mm_dir}/ops.mm", 5, "MPS102")]
    assert all(not f.path.endswith(".cpp") for f in got.findings)


def test_binding_files_are_not_searched_for_inside_pytorch(tmp_path):
    """Beside `aten/src/ATen/mps` lies `aten/src/ATen/native` and its hundreds of C++ files: PyTorch binds through
    the yaml and REGISTER_DISPATCH, so no folder of its tree is searched for binding files."""
    mps = tmp_path / "aten/src/ATen/mps"
    native = tmp_path / "aten/src/ATen/native"
    mps.mkdir(parents=True)
    native.mkdir(parents=True)
    (mps / "Stream.mm").write_text("void f() {}\n")
    (native / "library.cpp").write_text(BINDINGS_CPP)
    got = lint(LintOptions(paths=[str(mps)], select=["ALL"], cwd=tmp_path))
    assert not any(p.endswith(".cpp") for p in got.project.hosts)
