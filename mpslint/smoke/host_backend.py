"""Host backend: compile .metal files as C++ against mpslint's <metal_stdlib> shim with clang from the
`ziglang` package and run kernels on the CPU (threadgroups as fibers).  Every result is "host-emulated": it
shows that templates, functors, index math, casts and the barrier/simd protocol give the right values; it does
not show that Apple's compiler accepts the file, nor fast-math, subnormal flushing or simdgroup lockstep."""
from __future__ import annotations

from pathlib import Path

from . import build, runner, toolchain
from .api import HOST_LABEL

# Metal features the shim does not provide: a compile error naming one is a gap of the emulation, not a
# finding about the kernel.  (simdgroup_matrix and the floatNxM matrix types are emulated now.)
UNSUPPORTED_NAMES = ("texture", "sampler", "imageblock",
                     "function_constant", "visible_function_table", "intersection", "raytracing", "mesh_grid",
                     "tensor<", "mpp::", "metal::tensor", "execution_simdgroup")
# bfloat is a class on the host (clang has no conversions between _Float16 and __bf16): `c ? int_value : bf`
# is ambiguous in C++ where MSL's usual arithmetic conversions give bfloat (see the shim's bfloat comment)
BFLOAT_TERNARY = ("the host shim's bfloat is a class type, so a conditional mixing bfloat and an integer is "
                  "ambiguous in host C++ (MSL converts the integer to bfloat)")


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
        # a large-index launch maps its big buffers sparse: address space, not memory, but RLIMIT_AS counts it
        sparse = max((sum(b.nbytes + b.sparse_below + 8192 for b in L.buffers if b.sparse_below >= 0)
                      for L in launches), default=0)
        return runner.run_launches(compiled.so, launches, timeout=options.timeout,
                                   memory_mb=options.memory_mb + (sparse >> 20) + (1 if sparse else 0))

    def unsupported_reason(self, d) -> str | None:
        if str(toolchain.SHIM_DIR) in d.path:
            return "the host shim lacks a Metal feature"
        text = d.message
        if "conditional expression is ambiguous" in text and "bfloat" in text:
            return BFLOAT_TERNARY
        for name in UNSUPPORTED_NAMES:
            if name in text:
                return f"the host shim does not emulate `{name.rstrip('<')}`"
        return None
