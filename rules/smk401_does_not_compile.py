"""
## What it does
A `.metal` file that fails to build: on Linux with clang against mpslint's host shim of `<metal_stdlib>`
(*host-emulated*), on macOS with `xcrun metal -Werror` or `torch.mps.compile_shader`. The diagnostic is mapped
back to the line in the `.metal` file (a header error is reported on the registration that instantiates it).

## Why is this bad?
A kernel that does not compile breaks the PyTorch build (or, for `compile_shader` code, the first call), and
the usual way to find out is an hour-long build. Host-emulated builds are stricter than Apple's compiler in a few
places and looser in others (address spaces are erased), so a host-only failure can be a shim gap: the message
says which backend produced it.

## Example
```metal
struct my_op_functor {
  template <typename T>
  inline T operator()(const T x) { return undefined_helper(x); }
};
REGISTER_UNARY_OP(my_op, float, float);
```

## Use instead
```metal
struct my_op_functor {
  template <typename T>
  inline T operator()(const T x) { return c10::metal::exp(x); }
};
REGISTER_UNARY_OP(my_op, float, float);
```

## How to fix
Fix the compiler error quoted in the message. If only the host-emulated backend fails and the code is valid
Metal, it is a gap in mpslint's shim: suppress with `// mpslint: ignore[SMK401]` and report it.

Smoke runs happen with `mpslint smoke PATHS` or `mpslint check --smoke`; on Linux they are labelled
*host-emulated* everywhere (see docs/smoke.md for what that does and does not show).

Guide: *Step 4: Compile* and *Debugging Metal Kernels with `torch.mps.compile_shader`*.
"""

from __future__ import annotations

from mpslint.model import Severity
from mpslint.rule import Rule
from mpslint.smoke.findings import smoke_findings


class DoesNotCompile(Rule):
    code = "SMK401"
    name = "does-not-compile"
    severity = Severity.ERROR
    scope = "smoke"
    summary = "A checked Metal file does not compile (host-emulated build or the Metal compiler)"
    guide = "Step 4: Compile"

    def check(self, ctx):
        yield from smoke_findings(self, ctx)
