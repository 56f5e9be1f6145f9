"""
## What it does
A kernel variant that does not finish within `--timeout` seconds when run host-emulated on a small input:
usually a loop whose bound never changes, or a barrier that not every thread of the threadgroup reaches.

## Why is this bad?
On the GPU the command buffer hangs until the watchdog kills it, and every op queued behind it on the stream
stalls.

## Example
```metal
for (uint k = tid; k < n; k += 0) { acc += in[k]; }  // never advances
```

## Use instead
```metal
for (uint k = tid; k < n; k += threads_per_group) { acc += in[k]; }
```

## How to fix
Make every loop advance and every `threadgroup_barrier` reachable by all threads of the group (no barrier
inside a divergent `if`).

Smoke runs happen with `mpslint smoke PATHS` or `mpslint check --smoke`; on Linux they are labelled
*host-emulated* everywhere (see docs/smoke.md for what that does and does not show).

Guide: *Step 4: Compile* and *Debugging Metal Kernels with `torch.mps.compile_shader`*.
"""

from __future__ import annotations

from mpslint.model import Severity
from mpslint.rule import Rule
from mpslint.smoke.findings import smoke_findings


class KernelTimeout(Rule):
    code = "SMK404"
    name = "kernel-timeout"
    severity = Severity.ERROR
    scope = "smoke"
    summary = "A kernel variant did not finish within the smoke-run time limit"
    guide = "Step 4: Compile"

    def check(self, ctx):
        yield from smoke_findings(self, ctx)
