"""Messages that fit the file they land in: MPS107 names what the file can reach, MPS109 never suggests a
mixed-type `ceil_div` call, MTL202 says what Metal 3.x really does (mpslint.context, mpslint.names)."""

from __future__ import annotations

import shutil

from mpslint.engine import LintOptions, lint

from .conftest import FIXTURES


def _lint(tmp_path, rel, text, select):
    p = tmp_path / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return lint(LintOptions(paths=[str(p)], select=select, cwd=tmp_path)).findings


def test_mps107_in_an_extension_names_the_qualified_call_and_its_header(tmp_path):
    shutil.copy(FIXTURES / "fixes/ext_rethrow.before.mm", tmp_path / "op.mm")
    (f,) = lint(LintOptions(paths=[str(tmp_path / "op.mm")], select=["MPS107"], cwd=tmp_path)).findings
    assert "Use `at::mps::dispatch_sync_with_rethrow` (declared in <ATen/mps/MPSStream.h>" in f.message
    assert f.fix is not None and f.fix.applicability == "safe"


def test_mps107_inside_pytorch_keeps_the_plain_name():
    path = FIXTURES / "fixes/rethrow.before.mm"  # includes OperationUtils.h (`using namespace at::mps;`)
    (f,) = lint(LintOptions(paths=[str(path)], select=["MPS107"], cwd=FIXTURES)).findings
    assert "Use `dispatch_sync_with_rethrow`, which rethrows" in f.message
    assert [e.content for e in f.fix.edits] == ["dispatch_sync_with_rethrow"]


MIXED = """\
#include <ATen/native/mps/OperationUtils.h>
namespace at::native::mps {
void f(int64_t total, uint32_t chunk) {
  const auto n = (total + chunk - 1) / chunk;
  (void)n;
}
} // namespace at::native::mps
"""


def test_mps109_mixed_operands_are_not_advised_as_a_plain_call(tmp_path):
    (f,) = _lint(tmp_path, "aten/src/ATen/native/mps/operations/Mixed.mm", MIXED, ["MPS109"])
    # `at::ceil_div(total, chunk)` would not compile (int64_t and uint32_t): the fix names the type
    assert "use `at::ceil_div<int64_t>(total, chunk)`" in f.message
    assert f.fix is not None and f.fix.applicability == "safe"
    assert any(e.content == "at::ceil_div<int64_t>(total, chunk)" for e in f.fix.edits)
    # the fix brings the header OperationUtils.h does not include
    assert any(e.content == "\n#include <ATen/ceil_div.h>" for e in f.fix.edits)


def test_mps109_is_not_applied_in_extension_code(tmp_path):
    text = MIXED.replace("#include <ATen/native/mps/OperationUtils.h>", "#include <torch/extension.h>")
    assert _lint(tmp_path, "csrc/mixed.mm", text, ["MPS109"]) == []


KERNEL = """\
#include <c10/metal/utils.h>
template <typename T>
inline T twice(T x) {
  if constexpr (sizeof(T) == 2) {
    return x + x;
  }
  return 2 * x;
}
"""


def test_mtl202_message_and_unsafe_fix(tmp_path):
    (f,) = _lint(tmp_path, "aten/src/ATen/native/mps/kernels/Twice.metal", KERNEL, ["MTL202"])
    assert "Metal 3.x accepts it only with a warning" in f.message and "does not compile" not in f.message
    assert f.fix is not None and f.fix.applicability == "unsafe"


def test_mtl202_is_not_applied_in_extension_kernels(tmp_path):
    text = KERNEL.replace("#include <c10/metal/utils.h>", "#include <metal_stdlib>")
    assert _lint(tmp_path, "kernels/twice.metal", text, ["MTL202"]) == []
