"""The automatic fixes of the host rules (MPS106-MPS109): the edited text is what we expect and re-lints clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from mpslint.engine import LintOptions, lint

from .conftest import FIXTURES, ROOT


def apply_edits(text: str, edits) -> str:
    """Apply ``Edit``s to ``text`` from the end of the file backwards, so earlier offsets stay valid."""
    out = text
    last = len(text) + 1
    for e in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
        assert e.end <= last, "overlapping edits"
        out = out[: e.start] + e.content + out[e.end :]
        last = e.start
    return out


def _lint(path: Path, code: str, cwd: Path, text: str | None = None):
    opts = LintOptions(paths=[str(path)], select=[code], cwd=cwd)
    if text is not None:
        rel = path.relative_to(cwd).as_posix()
        opts.overrides = {rel: text}
    res = lint(opts)
    assert not res.internal_errors, res.internal_errors
    return [f for f in res.findings if f.code == code]


def _fix_file(tmp_path: Path, name: str, source: str, code: str, applicability: str | None = "safe"):
    p = tmp_path / name
    p.write_text(source, encoding="utf-8")
    found = _lint(p, code, tmp_path)
    assert found, f"{code} did not fire"
    fixes = [f.fix for f in found if f.fix is not None]
    assert fixes, f"{code} offered no fix"
    if applicability is not None:
        assert {f.applicability for f in fixes} == {applicability}
    fixed = apply_edits(source, [e for fx in fixes for e in fx.edits])
    assert _lint(p, code, tmp_path, fixed) == [], f"{code} still fires after its fix:\n{fixed}"
    return fixed


MPS107_SRC = """\
#include <ATen/native/mps/OperationUtils.h>
namespace at::native {
static auto& lib = mps::MetalShaderLibrary::getBundledLibrary();
Tensor& eye_out_mps(int64_t n, Tensor& out) {
  auto stream = mps::getCurrentMPSStream();
  dispatch_sync(stream->queue(), ^() {
    auto pso = lib.getPipelineStateForFunc("eye_float");
    TORCH_CHECK(n >= 0, "eye: negative n");
  });
  return out;
}
}
"""


def test_mps107_rewrites_dispatch_sync(tmp_path):
    fixed = _fix_file(tmp_path, "Eye.mm", MPS107_SRC, "MPS107")
    assert "  dispatch_sync_with_rethrow(stream->queue(), ^() {\n" in fixed
    assert fixed.replace("dispatch_sync_with_rethrow", "dispatch_sync") == MPS107_SRC


MPS108_SRC = """\
#include <ATen/native/mps/OperationUtils.h>
namespace at::native {
void launch(id<MTLComputeCommandEncoder> enc, int64_t n, float alpha, std::array<int64_t, 2> shape) {
  mtl_setBuffer(enc, out, 0);
  mtl_setBytes(enc, n, 1);
  mtl_setBytes(enc, alpha, 2);
  mtl_setBytes(enc, shape, 3);
  mtl_dispatch1DJob(enc, pso, n);
}
}
"""


def test_mps108_merges_consecutive_slots(tmp_path):
    fixed = _fix_file(tmp_path, "Launch.mm", MPS108_SRC, "MPS108")
    assert "  mtl_setBuffer(enc, out, 0);\n  mtl_setArgs<1>(enc, n, alpha, shape);\n  mtl_dispatch1DJob(enc, pso, n);\n" in fixed
    assert "mtl_setBytes" not in fixed


def test_mps108_no_fix_when_slots_skip(tmp_path):
    src = MPS108_SRC.replace("mtl_setBytes(enc, alpha, 2);", "mtl_setBytes(enc, alpha, 5);")
    p = tmp_path / "Launch.mm"
    p.write_text(src, encoding="utf-8")
    found = _lint(p, "MPS108", tmp_path)
    assert len(found) == 1 and found[0].fix is None


def test_mps108_no_fix_across_a_comment_line(tmp_path):
    src = MPS108_SRC.replace("  mtl_setBytes(enc, alpha, 2);\n", "  // the blend factor\n  mtl_setBytes(enc, alpha, 2);\n")
    p = tmp_path / "Launch.mm"
    p.write_text(src, encoding="utf-8")
    found = _lint(p, "MPS108", tmp_path)
    assert len(found) == 1 and found[0].fix is None  # the fix would have to move a comment line


def test_mps108_keeps_trailing_comments(tmp_path):
    src = MPS108_SRC.replace("mtl_setBytes(enc, n, 1);", "mtl_setBytes(enc, n, 1); // numel")
    fixed = _fix_file(tmp_path, "Launch.mm", src, "MPS108")
    assert "  mtl_setArgs<1>(enc, n, alpha, shape); // numel\n" in fixed


MPS109_HOST = """\
#include <ATen/native/mps/OperationUtils.h>
namespace at::native {
void chunks(const Tensor& self, int64_t chunk) {
  const int64_t numel = self.numel();
  const int64_t a = (numel + chunk - 1) / chunk;
  const auto b = (self.numel() + 255) / 256;
  const int64_t c = (numel + (chunk - 1)) / chunk * chunk;
}
}
"""


def test_mps109_host_fix(tmp_path):
    fixed = _fix_file(tmp_path, "Chunks.mm", MPS109_HOST, "MPS109")
    assert "const int64_t a = at::ceil_div(numel, chunk);" in fixed
    assert "const auto b = at::ceil_div<int64_t>(self.numel(), 256);" in fixed
    assert "const int64_t c = at::ceil_div(numel, chunk) * chunk;" in fixed


def test_mps109_mixed_types_name_the_type_the_division_computes_in(tmp_path):
    # `at::ceil_div` deduces one type from both operands: `ceil_div(numel, chunk)` with int64_t and int does not
    # compile, `ceil_div<int64_t>(numel, chunk)` does and computes what `(numel + chunk - 1) / chunk` did
    src = MPS109_HOST.replace("int64_t chunk", "int chunk")
    fixed = _fix_file(tmp_path, "Chunks.mm", src, "MPS109")
    assert "const int64_t a = at::ceil_div<int64_t>(numel, chunk);" in fixed
    assert "const int64_t c = at::ceil_div<int64_t>(numel, chunk) * chunk;" in fixed


def test_mps109_operand_of_unknown_type_gets_advice_and_no_edit(tmp_path):
    src = MPS109_HOST.replace("int64_t chunk)", "Tile tile)").replace("+ chunk - 1) / chunk;", "+ tile.BM - 1) / tile.BM;")
    p = tmp_path / "Chunks.mm"
    p.write_text(src, encoding="utf-8")
    found = {f.span.line: f for f in _lint(p, "MPS109", tmp_path)}
    assert found[5].fix is None  # `tile.BM`'s type is not known: an edit might not compile
    assert "at::ceil_div<T>(numel, tile.BM)" in found[5].message


MPS109_METAL = """\
#include <c10/metal/common.h>
#include <metal_stdlib>
using namespace metal;
{using}
kernel void k(constant uint& n [[buffer(0)]], constant uint& chunk [[buffer(1)]], device uint* out [[buffer(2)]], uint tid [[thread_position_in_grid]]) {
  out[tid] = (n + chunk - 1) / chunk + (n + 255) / 256;
}
"""


@pytest.mark.parametrize("using,func", [("using namespace c10::metal;", "ceil_div"), ("", "c10::metal::ceil_div")])
def test_mps109_metal_fix(tmp_path, using, func):
    fixed = _fix_file(tmp_path, "Chunks.metal", MPS109_METAL.replace("{using}", using), "MPS109")
    assert f"out[tid] = {func}(n, chunk) + {func}<uint>(n, 256);" in fixed


def test_mps109_fix_in_embedded_metal(tmp_path):
    src = (
        '#include <ATen/native/mps/OperationUtils.h>\nstatic auto lib = MetalShaderLibrary(R"M(\n'
        + MPS109_METAL.replace("{using}", "using namespace c10::metal;")
        + ')M");\n'
    )
    fixed = _fix_file(tmp_path, "Embedded.mm", src, "MPS109")
    assert "out[tid] = ceil_div(n, chunk) + ceil_div<uint>(n, 256);" in fixed
    assert "at::ceil_div" not in fixed


MPS106_SRC = """\
#include <ATen/native/mps/OperationUtils.h>
namespace at::native {
static void add_kernel(TensorIteratorBase& iter, const Scalar& other, const Scalar& alpha = 1) {
  if (!iter.can_use_32bit_indexing()) {
    for (auto&& sub_iter : iter.with_32bit_indexing()) {
      add_kernel(sub_iter, other);
    }
    return;
  }
  lib.exec_binary_kernel(iter, "add");
}
REGISTER_DISPATCH(add_stub, &add_kernel)
}
"""


def test_mps106_forwards_dropped_parameters(tmp_path):
    fixed = _fix_file(tmp_path, "Add.mm", MPS106_SRC, "MPS106", applicability="unsafe")
    assert "      add_kernel(sub_iter, other, alpha);\n" in fixed


FIXABLE = ["MPS106", "MPS107", "MPS108", "MPS109"]


@pytest.mark.parametrize("code", FIXABLE)
def test_fixture_fixes_remove_their_findings(code):
    """Applying every fix a rule offers on the fixture tree removes exactly the fixed findings."""
    res = lint(LintOptions(paths=[str(FIXTURES / "aten")], select=[code], cwd=ROOT))
    found = [f for f in res.findings if f.code == code]
    by_path: dict[str, list] = {}
    for f in found:
        if f.fix is not None:
            by_path.setdefault(f.path, []).append(f)
    assert by_path, f"no {code} fix on the fixtures"
    for path, fs in by_path.items():
        text = (ROOT / path).read_text(encoding="utf-8")
        fixed = apply_edits(text, [e for f in fs for e in f.fix.edits])
        after = _lint(ROOT / path, code, ROOT, fixed)
        assert len(after) == len([f for f in found if f.path == path]) - len(fs), f"{path}: {[a.message for a in after]}"


def test_mps108_keeps_the_namespace_qualifier(tmp_path):
    src = MPS108_SRC.replace("  mtl_setBytes(", "  mps::mtl_setBytes(")
    fixed = _fix_file(tmp_path, "Launch.mm", src, "MPS108")
    assert "  mps::mtl_setArgs<1>(enc, n, alpha, shape);\n" in fixed


def test_mps107_sees_throws_through_project_helpers(tmp_path):
    src = MPS107_SRC.replace(
        'auto pso = lib.getPipelineStateForFunc("eye_float");\n    TORCH_CHECK(n >= 0, "eye: negative n");',
        "auto pso = eyePipelineState(n);",
    )
    fixed = _fix_file(tmp_path, "Eye.mm", src, "MPS107")
    assert "dispatch_sync_with_rethrow" in fixed
    quiet = src.replace("auto pso = eyePipelineState(n);", "[encoder setComputePipelineState:pso];\n    mtl_dispatch1DJob(encoder, pso, n);")
    p = tmp_path / "Quiet.mm"
    p.write_text(quiet, encoding="utf-8")
    assert _lint(p, "MPS107", tmp_path) == []


MPS105_WHOLE = """\
#include <ATen/native/mps/OperationUtils.h>
namespace at::native::mps {
static auto& lib = MetalShaderLibrary::getBundledLibrary();
void pivots_kernel(TensorIteratorBase& iter) {
  auto perm = iter.tensor(0);
  auto pivots = iter.tensor(1);
  auto stream = getCurrentMPSStream();
  dispatch_sync_with_rethrow(stream->queue(), ^() {
    auto enc = stream->commandEncoder();
    auto pso = lib.getPipelineStateForFunc("pivots");
    [enc setComputePipelineState:pso];
    mtl_setArgs(enc, {binding});
    mtl_dispatch1DJob(enc, pso, iter.numel());
  });
}
} // namespace at::native::mps
"""


@pytest.mark.parametrize("binding,whole", [("perm, pivots", True), ("iter", False)])
def test_mps105_advice_fits_what_the_launch_binds(tmp_path, binding, whole):
    p = tmp_path / "mps" / "Pivots.mm"
    p.parent.mkdir()
    p.write_text(MPS105_WHOLE.replace("{binding}", binding), encoding="utf-8")
    (f,) = _lint(p, "MPS105", tmp_path)
    if whole:  # a split would relaunch on the whole tensors: a check is the patch that works
        assert "TORCH_CHECK(iter.can_use_32bit_indexing()" in f.message and "redo the first chunk" in f.message
        assert "index math 64-bit" in f.message  # the kernel-side patch, which keeps large inputs working
    else:
        assert "for (auto&& sub_iter : iter.with_32bit_indexing())" in f.message


JIT_LAYOUT = """\
#include <ATen/native/mps/OperationUtils.h>

namespace at::native {
#ifndef PYTORCH_JIT_COMPILE_SHADERS
static auto& lib = mps::MetalShaderLibrary::getBundledLibrary();
#else
#include <ATen/native/mps/Chunks_metallib.h>
#endif

void chunks(const Tensor& self, int64_t chunk) {
  const int64_t numel = self.numel();
  const int64_t a = (numel + chunk - 1) / chunk;
}
} // namespace at::native
"""


def test_an_added_include_lands_at_file_scope_not_in_a_conditional_or_namespace(tmp_path):
    # PyTorch's ops end their includes with `#include <..._metallib.h>` under `#ifndef PYTORCH_JIT_COMPILE_SHADERS`
    # inside the namespace: an include put after it is compiled out, or opens a nested `at` namespace
    fixed = _fix_file(tmp_path, "Chunks.mm", JIT_LAYOUT, "MPS109")
    lines = fixed.splitlines()
    at = lines.index("#include <ATen/ceil_div.h>")
    assert lines[at - 1] == "#include <ATen/native/mps/OperationUtils.h>"
    assert at < lines.index("namespace at::native {")


def test_mps102_checked_convert_include_lands_at_file_scope(tmp_path):
    # the same layout for MPS102's safe fix: `c10/util/TypeCast.h` after the file-scope includes, not after
    # the `*_metallib.h` include inside the namespace
    src = JIT_LAYOUT.replace(
        "  const int64_t a = (numel + chunk - 1) / chunk;\n",
        "  const auto n = static_cast<uint32_t>(self.numel());\n  launch(n);\n",
    )
    fixed = _fix_file(tmp_path, "Chunks.mm", src, "MPS102")
    lines = fixed.splitlines()
    at = lines.index("#include <c10/util/TypeCast.h>")
    assert lines[at - 1] == "#include <ATen/native/mps/OperationUtils.h>"
    assert at < lines.index("namespace at::native {")
    assert 'c10::checked_convert<uint32_t>(self.numel(), "uint32_t")' in fixed


MPS110_RETURNS = """\
#include <ATen/native/mps/OperationUtils.h>
namespace at::native::mps {
{ret} fill_rows({params}) {
  auto pso = lib.getPipelineStateForFunc("fill_rows");
  auto stream = getCurrentMPSStream();
  dispatch_sync_with_rethrow(stream->queue(), ^() {
    auto enc = stream->commandEncoder();
    mtl_setArgs(enc, out, src);
    mtl_dispatch1DJob(enc, pso, src.numel());
  });
  {tail}
}
// a caller in view that does not guard empty input (a helper returning a buffer is judged by its callers)
void fill_all_rows(const Tensor& src, Tensor& out) {
  fill_rows(src, out);
}
} // namespace at::native::mps
"""


@pytest.mark.parametrize(
    "ret,params,tail,advice",
    [
        ("void", "const Tensor& src, const Tensor& out", "", "{ return; }"),
        ("Tensor&", "const Tensor& src, Tensor& out", "return out;", "{ return out; }"),
        ("std::tuple<Tensor, Tensor>", "const Tensor& src, const Tensor& out", "return {out, out};", "return {out, ...};"),
        ("id<MTLBuffer>", "const Tensor& src, const Tensor& out", "return nil;", "have its callers skip it"),
    ],
)
def test_mps110_early_return_compiles_in_the_function_it_lands_in(tmp_path, ret, params, tail, advice):
    # a bare `return;` does not compile in a function that returns a value
    p = tmp_path / "mps" / "Rows.mm"
    p.parent.mkdir()
    p.write_text(MPS110_RETURNS.replace("{ret}", ret).replace("{params}", params).replace("{tail}", tail), encoding="utf-8")
    (f,) = _lint(p, "MPS110", tmp_path)
    assert advice in f.message
    if ret != "void":
        assert "{ return; }" not in f.message


def test_mps110_buffer_helper_with_no_caller_in_view_is_left_to_its_callers(tmp_path):
    # `id<MTLBuffer> fill_rows(...)` nothing in the tree calls: its callers, where the guard goes, are elsewhere
    p = tmp_path / "mps" / "Rows.mm"
    p.parent.mkdir()
    src = MPS110_RETURNS.replace("{ret}", "id<MTLBuffer>").replace("{params}", "const Tensor& src, const Tensor& out")
    src = src.replace("{tail}", "return nil;")
    p.write_text(src.split("// a caller in view")[0] + "} // namespace at::native::mps\n", encoding="utf-8")
    assert _lint(p, "MPS110", tmp_path) == []
    # a tensor-returning function with no caller in view is still judged (an op reached from elsewhere)
    p.write_text(MPS110_RETURNS.replace("{ret}", "Tensor&").replace("{params}", "const Tensor& src, Tensor& out")
                 .replace("{tail}", "return out;").split("// a caller in view")[0] + "} // namespace at::native::mps\n", encoding="utf-8")
    assert len(_lint(p, "MPS110", tmp_path)) == 1


def test_mps119_in_extension_code_names_a_check_the_wheel_exports(tmp_path):
    """MPS119's advice holds in an extension: `canUse32BitIndexMath` is declared in a header the wheel ships."""
    import importlib.util

    ext = tmp_path / "myext" / "csrc"
    ext.mkdir(parents=True)
    (tmp_path / "myext" / "setup.py").write_text("from torch.utils.cpp_extension import CppExtension\n")
    (ext / "join.mm").write_text(
        "#include <torch/extension.h>\n"
        "#include <ATen/native/mps/OperationUtils.h>\n"
        "template <typename index_t> void join_impl(const at::Tensor& out);\n"
        "at::Tensor join(const at::Tensor& out) {\n"
        "  if (at::native::mps::isTooLargeForMPSGraph(out)) {\n"
        "    join_impl<int64_t>(out);\n"
        "  } else {\n"
        "    join_impl<uint32_t>(out);\n"
        "  }\n"
        "  return out;\n"
        "}\n"
    )
    res = lint(LintOptions(paths=[str(ext / "join.mm")], select=["MPS119"], cwd=tmp_path))
    from mpslint.context import file_context

    assert [(file_context(res.project, f.path), f.span.line) for f in res.findings] == [("extension", 5)]
    msg = res.findings[0].message
    assert "`join_impl<uint32_t>` (line 8)" in msg and "more than 2^32 elements" in msg
    assert "<ATen/native/CanUse32BitIndexMath.h>" in msg and "std::numeric_limits<uint32_t>::max()" in msg
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.submodule_search_locations:
        header = next(iter(spec.submodule_search_locations)) + "/include/ATen/native/CanUse32BitIndexMath.h"
        assert "canUse32BitIndexMath" in open(header).read()
