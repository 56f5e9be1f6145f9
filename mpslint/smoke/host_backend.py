"""Host backend: compile .metal files as C++ against mpslint's <metal_stdlib> shim with clang from the
`ziglang` package and run kernels on the CPU (threadgroups as fibers).  Every result is "host-emulated": it
shows that templates, functors, index math, casts and the barrier/simd protocol give the right values; it does
not show that Apple's compiler accepts the file, nor fast-math, subnormal flushing or simdgroup lockstep."""
from __future__ import annotations

from pathlib import Path

from . import build, runner, toolchain
from .api import HOST_LABEL

# Metal features the shim does not provide: a compile error naming one is a gap of the emulation, not a
# finding about the kernel.
UNSUPPORTED_NAMES = ("simdgroup_matrix", "simdgroup_load", "simdgroup_store", "simdgroup_multiply",
                     "float4x4", "float3x3", "float2x2", "half4x4", "texture", "sampler", "imageblock",
                     "function_constant", "visible_function_table", "intersection", "raytracing", "mesh_grid",
                     "tensor<", "mpp::", "metal::tensor", "execution_simdgroup")


class HostBackend:
    name = "host"
    label = HOST_LABEL
    compile_verb = "host-emulated compile"

    @staticmethod
    def usable() -> str | None:
        if not toolchain.have_ziglang():
            return "the host backend needs clang from the `ziglang` package (pip install ziglang)"
        return None

    def unavailable(self) -> str | None:
        return self.usable()

    def compile(self, path: Path, options) -> build.BuildResult:
        return build.build(path, cache_dir=options.cache_dir, headers_root=options.headers_root,
                           timeout=options.build_timeout)

    def execute(self, compiled: build.BuildResult, launches: list, options) -> list:
        return runner.run_launches(compiled.so, launches, timeout=options.timeout, memory_mb=options.memory_mb)

    def unsupported_reason(self, d) -> str | None:
        if str(toolchain.SHIM_DIR) in d.path:
            return "the host shim lacks a Metal feature"
        text = d.message
        for name in UNSUPPORTED_NAMES:
            if name in text:
                return f"the host shim does not emulate `{name.rstrip('<')}`"
        return None
