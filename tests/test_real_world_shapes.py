"""Shapes met when running mpslint on the real MPS tree (docs/real-world.md) that a fixture file cannot hold.

The lint-rule shapes live in fixtures/.../RealWorldShapes.{metal,mm} (checked by test_fixtures.py); this file
covers the dispatch graph's call resolution, which shows in `mpslint audit`: PyTorch has two singletons with a
`getInstance()` method, the MPS device and the MPSGraph cache. A call written `MPSDevice::getInstance()` used to
resolve to the graph cache's method, so every Metal-only op that asked for the device was audited `mixed`.
"""

from __future__ import annotations

from pathlib import Path

from mpslint.audit.classify import run_audit

YAML = """\
- func: ramp_fill_(Tensor(a!) self) -> Tensor(a!)
  dispatch:
    MPS: ramp_fill_mps_

- func: cached_blend(Tensor self, Tensor other) -> Tensor
  dispatch:
    MPS: cached_blend_mps
"""

HEADER = """\
#pragma once
#include <ATen/Tensor.h>
namespace at::native::mps {
class MPSGraphCache {
 public:
  static MPSGraphCache* getInstance() {
    if (_instance_cache == nullptr) {
      _instance_cache = new MPSGraphCache();
    }
    return _instance_cache;
  }
  MPSGraph* lookup(const std::string& key);
 private:
  static MPSGraphCache* _instance_cache;
};
} // namespace at::native::mps
"""

OPS = """\
#include <ATen/native/mps/GraphCacheShape.h>
namespace at::native {
static auto& lib = mps::MetalShaderLibrary::getBundledLibrary();

Tensor& ramp_fill_mps_(Tensor& self) {
  if (self.numel() == 0) {
    return self;
  }
  id<MTLDevice> device = MPSDevice::getInstance()->device();
  auto pso = lib.getPipelineStateForFunc("ramp_fill_float");
  auto stream = mps::getCurrentMPSStream();
  dispatch_sync_with_rethrow(stream->queue(), ^() {
    auto enc = stream->commandEncoder();
    [enc setComputePipelineState:pso];
    mps::mtl_setArgs(enc, self);
    mps::mtl_dispatch1DJob(enc, pso, self.numel());
  });
  return self;
}

Tensor cached_blend_mps(const Tensor& self, const Tensor& other) {
  auto cache = mps::MPSGraphCache::getInstance();
  auto graph = cache->lookup("blend");
  auto pso = lib.getPipelineStateForFunc("blend_float");
  auto out = at::empty_like(self);
  auto stream = mps::getCurrentMPSStream();
  dispatch_sync_with_rethrow(stream->queue(), ^() {
    auto enc = stream->commandEncoder();
    [enc setComputePipelineState:pso];
    mps::mtl_setArgs(enc, self, other, out);
    mps::mtl_dispatch1DJob(enc, pso, out.numel());
  });
  return out;
}
} // namespace at::native
"""


def _tree(tmp_path: Path) -> Path:
    native = tmp_path / "aten/src/ATen/native"
    (native / "mps/operations").mkdir(parents=True)
    (native / "native_functions.yaml").write_text(YAML, encoding="utf-8")
    (native / "mps/GraphCacheShape.h").write_text(HEADER, encoding="utf-8")
    (native / "mps/operations/RampFill.mm").write_text(OPS, encoding="utf-8")
    return tmp_path


def _classes(root: Path) -> dict[str, str]:
    audit, result = run_audit([str(root / "aten")], cwd=root)
    assert not result.internal_errors
    return {o["name"]: o["class"] for op in audit.to_dict()["ops"] for o in op["overloads"]}


def test_qualified_call_does_not_reach_another_class_method(tmp_path):
    classes = _classes(_tree(tmp_path))
    # MPSDevice::getInstance is not MPSGraphCache::getInstance: a Metal-only op
    assert classes["ramp_fill_"] == "native-mps"
    # the graph cache's own getInstance still counts: Metal launch plus graph cache -> mixed
    assert classes["cached_blend"] == "mixed"


def test_graph_cache_method_itself_is_seen_as_graph_code(tmp_path):
    root = _tree(tmp_path)
    ops = root / "aten/src/ATen/native/mps/operations/RampFill.mm"
    # without the class qualifier nothing tells the two apart: the call still resolves (no precision loss)
    ops.write_text(OPS.replace("MPSDevice::getInstance()->device()", "getInstance()->device()"), encoding="utf-8")
    assert _classes(root)["ramp_fill_"] == "mixed"


STREAM_FILE = """\
#include <ATen/native/mps/OperationUtils.h>
namespace at::mps {
void LaunchRecorder::replay(id<MTLComputeCommandEncoder> encoder) {
  for (const auto& launch : recorded_) {
    [encoder setComputePipelineState:launch.pso];
    [encoder dispatchThreads:MTLSizeMake(launch.grid_x, launch.grid_y, launch.grid_z)
        threadsPerThreadgroup:MTLSizeMake(launch.group_x, launch.group_y, launch.group_z)];
  }
}

void stamp_marker(const at::Tensor& marks, id<MTLComputeCommandEncoder> encoder, id<MTLComputePipelineState> pso) {
  TORCH_CHECK(marks.is_contiguous(), "stamp_marker: expected contiguous marks");
  [encoder setComputePipelineState:pso];
  at::native::mps::mtl_setArgs(encoder, marks);
  at::native::mps::mtl_dispatch1DJob(encoder, pso, marks.numel());
}
} // namespace at::mps
"""


def test_empty_guard_outside_ops_needs_a_tensor(tmp_path):
    """MPS110 outside native/mps: replaying recorded launches (no tensor in scope) is not an op; a function that
    sizes its launch from a tensor still is (this half cannot live in a fixture: lintrunner's include patterns
    stop at native/mps, see tests/test_lintrunner.py)."""
    from mpslint.engine import LintOptions, lint

    stream = tmp_path / "aten/src/ATen/mps/StreamReplay.mm"
    stream.parent.mkdir(parents=True)
    stream.write_text(STREAM_FILE, encoding="utf-8")
    result = lint(LintOptions(paths=[str(stream)], select=["MPS110"], cwd=tmp_path))
    lines = sorted(f.span.line for f in result.findings if f.code == "MPS110")
    assert lines == [15], [(f.code, f.span.line, f.message) for f in result.findings]
