"""Messages that fit the file they land in: MPS107 names what the file can reach, MPS109 never suggests a
mixed-type `ceil_div` call, MTL202 says what Metal 3.x really does (mpslint.context, mpslint.names)."""

from __future__ import annotations

import shutil

import pytest

from mpslint.engine import LintOptions, lint

from .conftest import FIXTURES


def _lint(tmp_path, rel, text, select):
    p = tmp_path / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return lint(LintOptions(paths=[str(p)], select=select, cwd=tmp_path)).findings


def test_mps107_in_an_extension_names_the_qualified_call_and_its_header(tmp_path):
    from mpslint.config import Config

    shutil.copy(FIXTURES / "fixes/unsafe_ext_rethrow.before.mm", tmp_path / "op.mm")
    opts = dict(paths=[str(tmp_path / "op.mm")], select=["MPS107"], cwd=tmp_path)
    (f,) = lint(LintOptions(**opts, config=Config(min_torch="2.10"))).findings
    assert "Use `at::mps::dispatch_sync_with_rethrow`, which rethrows on the caller (declared in <ATen/mps/MPSStream.h>" in f.message
    assert "before it the function is" not in f.message
    assert f.fix is not None and f.fix.applicability == "safe"
    # no torch floor known: the call exists only from 2.10 on (pytorch/pytorch#167445), so the fix is unsafe
    (f,) = lint(LintOptions(**opts)).findings
    assert "from PyTorch 2.10 on" in f.message and "`at::native::mps::dispatch_sync_with_rethrow`" in f.message
    assert f.fix is not None and f.fix.applicability == "unsafe"


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


def test_mps102_inside_a_plain_dispatch_sync_advises_converting_before_the_block(tmp_path):
    """A `checked_convert` inside `dispatch_sync(queue, ^{...})` would terminate the process instead of throwing:
    the message says to convert before the block and no automatic fix is offered; outside a block the fix stays."""
    body = "const uint32_t n = static_cast<uint32_t>(x.numel());\n    [enc setBytes:&n length:sizeof(n) atIndex:0];\n"
    src = ("#include <torch/extension.h>\n"
           "void a(const torch::Tensor& x, id<MTLComputeCommandEncoder> enc) {\n"
           "  dispatch_sync(torch::mps::get_dispatch_queue(), ^() {\n    " + body + "  });\n}\n"
           "void b(const torch::Tensor& x, id<MTLComputeCommandEncoder> enc) {\n"
           "  at::mps::dispatch_sync_with_rethrow(torch::mps::get_dispatch_queue(), ^() {\n    " + body + "  });\n}\n")
    inside, rethrow = sorted(_lint(tmp_path, "op.mm", src, ["MPS102"]), key=lambda f: f.span.line)
    assert "convert or check before the block" in inside.message and inside.fix is None
    assert "before the block" not in rethrow.message and rethrow.fix is not None


_CB = """#include <torch/extension.h>
void op(torch::Tensor& out, const torch::Tensor& x, id<MTLComputePipelineState> pso) {{
  id<MTLCommandBuffer> cb = torch::mps::get_command_buffer();
  {between}
  dispatch_sync(torch::mps::get_dispatch_queue(), ^() {{
    id<MTLComputeCommandEncoder> enc = [cb computeCommandEncoder];
    [enc setComputePipelineState:pso];
    [enc setBuffer:getMTLBufferStorage(out) offset:out.storage_offset() * out.element_size() atIndex:0];
    [enc dispatchThreads:MTLSizeMake(out.numel(), 1, 1) threadsPerThreadgroup:MTLSizeMake(64, 1, 1)];
    [enc endEncoding];
  }});
}}
"""


def _mps113(tmp_path, between: str, min_torch: str | None):
    from mpslint.config import Config

    p = tmp_path / "op.mm"
    p.write_text(_CB.format(between=between), encoding="utf-8")
    res = lint(LintOptions(paths=[str(p)], select=["MPS113"], cwd=tmp_path, config=Config(min_torch=min_torch)))
    return [f for f in res.findings if "new compute encoder" in f.message]


def test_mps113_get_command_buffer_fetched_right_before_is_safe_from_torch_2_10(tmp_path):
    """pytorch/pytorch#164093 (2.10): `torch::mps::get_command_buffer()` ends PyTorch's coalesced encoder."""
    quiet = "TORCH_CHECK(x.numel() == out.numel(), \"sizes\");"
    assert _mps113(tmp_path, quiet, "2.10") == []
    (old,) = _mps113(tmp_path, quiet, "2.4")
    assert "only from PyTorch 2.10 on" in old.message and "min-torch" in old.message
    (unknown,) = _mps113(tmp_path, quiet, None)
    assert "only from PyTorch 2.10 on" in unknown.message
    # a PyTorch op between the fetch and the encoder opens a new coalesced encoder: flagged on any release
    (op,) = _mps113(tmp_path, "auto y = x.contiguous();", "2.10")
    assert "`x.contiguous` runs between fetching the buffer and opening the encoder" in op.message
    (op,) = _mps113(tmp_path, "auto y = torch::empty_like(x);", "2.12")
    assert "`torch::empty_like` runs between" in op.message


@pytest.mark.parametrize(
    "deps,floor",
    [(["torch>=2.10"], "2.10"), (["numpy", "torch >=2.10.1,<3"], "2.10"), (["torch==2.12.0"], "2.12"), (["torch"], None), ([], None), (["torch>=2.4; sys_platform == 'darwin'"], "2.4")],
)
def test_torch_floor_from_project_dependencies(deps, floor):
    from mpslint.config import torch_floor

    assert torch_floor(deps) == floor


def test_min_torch_config(tmp_path):
    from mpslint.config import ConfigError, load_config

    p = tmp_path / "pyproject.toml"
    p.write_text('[project]\nname = "x"\ndependencies = ["torch>=2.4"]\n[tool.mpslint]\nmin-torch = "2.10"\n')
    assert load_config(p).min_torch == "2.10"  # the setting wins over the dependency
    p.write_text('[project]\nname = "x"\ndependencies = ["torch>=2.11"]\n[tool.mpslint]\n')
    assert load_config(p).min_torch == "2.11"
    p.write_text("[tool.mpslint]\nmin-torch = 2.10\n")
    with pytest.raises(ConfigError, match="in quotes"):
        load_config(p)
