"""
## What it does
A kernel variant that, run host-emulated with guard pages and canaries around every buffer, accesses memory out
of bounds, aborts or faults.

## Why is this bad?
On the GPU an out-of-bounds write corrupts a neighbouring tensor silently, or hangs the command buffer; it
rarely crashes where the bug is.

## Example
```metal
kernel void fill(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  out[i + 1] = 0;  // the last thread writes past the end
}
```

## Use instead
```metal
kernel void fill(device float* out [[buffer(0)]], constant uint& n [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  if (i < n) out[i] = 0;
}
```

## How to fix
Check the index arithmetic against the buffer's size for the variant named in the message, and bound every
access by the element count the host passes.

Smoke runs happen with `mpslint smoke PATHS` or `mpslint check --smoke`; on Linux they are labelled
*host-emulated* everywhere (see docs/smoke.md for what that does and does not show).

Guide: *Step 4: Compile* and *Debugging Metal Kernels with `torch.mps.compile_shader`*.
"""

from __future__ import annotations

from mpslint.model import Severity
from mpslint.rule import Rule
from mpslint.smoke.findings import smoke_findings


class KernelCrash(Rule):
    code = "SMK403"
    name = "kernel-crash"
    severity = Severity.ERROR
    scope = "smoke"
    summary = "A kernel variant wrote or read out of bounds, aborted or faulted when run"
    guide = "Step 4: Compile"

    def check(self, ctx):
        yield from smoke_findings(self, ctx)
