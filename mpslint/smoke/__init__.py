"""Compile and smoke-run Metal kernels: host-emulated on any OS (clang from `ziglang` + a <metal_stdlib>
shim, threadgroups as fibers), or on a Mac through Metal.  Public interface: `mpslint.smoke.api`.
Importing this package is cheap: torch and the toolchain are only touched when a run starts."""
