"""
## What it does
A registered op variant (dense, scalar, strided, cast...) run on small random inputs per registered dtype,
contiguous and strided, whose output differs from the torch CPU reference beyond the dtype's tolerance. The
message gives the variant, dtype, the first differing index and the maximum error.

## Why is this bad?
`test_output_match` in `test/test_mps.py` would fail, or worse, a dtype it does not cover (bfloat16, strided
inputs) silently returns wrong values to users.

## Example
```metal
struct my_sigmoid_functor {
  template <typename T>
  inline T operator()(const T x) { return T(1) / (T(1) + ::metal::exp(x)); }  // sign error
};
```

## Use instead
```metal
struct my_sigmoid_functor {
  template <typename T>
  inline T operator()(const T x) { return T(1) / (T(1) + ::metal::exp(-x)); }
};
```

## How to fix
Compare the functor with the op's CPU definition for the dtype and layout named in the message; compute in
`opmath_t<T>` where half/bfloat lose precision. Results are host-emulated: fast-math and subnormal flushing on
the GPU are not modelled.

Smoke runs happen with `mpslint smoke PATHS` or `mpslint check --smoke`; on Linux they are labelled
*host-emulated* everywhere (see docs/smoke.md for what that does and does not show).

Guide: *Step 4: Compile* and *Debugging Metal Kernels with `torch.mps.compile_shader`*.
"""

from __future__ import annotations

from mpslint.model import Severity
from mpslint.rule import Rule
from mpslint.smoke.findings import smoke_findings


class ResultMismatch(Rule):
    code = "SMK402"
    name = "result-mismatch"
    severity = Severity.ERROR
    scope = "smoke"
    summary = "A kernel variant's output differs from torch's CPU result for the op it implements"
    guide = "Step 4: Compile"

    def check(self, ctx):
        yield from smoke_findings(self, ctx)
