"""
## What it does
A large-index smoke run (`mpslint smoke --large-index`) launched a kernel at the sizes the host passes for a
tensor past 2^31 / 2^32 elements, ran only the threadgroups near those positions with its big buffers mapped
sparse, and saw a thread past 2^31 touch memory below the region its threadgroups touch, or outside the
buffer: its offset was computed in 32 bits and wrapped.  The message names the thread, the offset it used and
the one the 64-bit computation gives.

## Why is this bad?
On the GPU the wrapped offset reads or overwrites another part of the tensor (or faults the command buffer)
only for tensors past 2^31 elements: tests with small tensors never see it, and users get silent corruption
on large inputs (PyTorch fixes this class of bug in cat, im2col/col2im, pooling, max_unpool, nonzero and
grid_sampler).

## Example
```metal
kernel void scale(device float* out [[buffer(0)]], constant float* in [[buffer(1)]],
                  uint2 pos [[thread_position_in_grid]], uint2 grid [[threads_per_grid]]) {
  const uint idx = pos.y * grid.x + pos.x;   // wraps past 2^32 elements
  out[idx] = 2 * in[idx];
}
```

## Use instead
```metal
  const long idx = long(pos.y) * grid.x + pos.x;
```

## How to fix
Compute offsets in 64 bits (`long`, `int64_t`) before multiplying by a stride, or split the launch on the
host so that every offset fits in 32 bits (MPS105 asks for that split).

The kernel needs a TOML launch spec with a `[kernel.large]` table (see docs/smoke.md); runs are labelled
*host-emulated* on Linux.

Guide: *Working with large tensors (64-bit indexing)*.
"""

from __future__ import annotations

from mpslint.model import Severity
from mpslint.rule import Rule
from mpslint.smoke.findings import smoke_findings


class IndexOverflow(Rule):
    code = "SMK405"
    name = "index-overflow"
    severity = Severity.ERROR
    scope = "smoke"
    summary = "A thread past 2^31 elements used a wrapped 32-bit offset in a large-index smoke run"
    guide = "Working with large tensors (64-bit indexing)"

    def check(self, ctx):
        yield from smoke_findings(self, ctx)
