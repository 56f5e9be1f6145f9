"""
## What it does
Flags `metal::fast::` / `fast::` math (`fast::exp(x)`, `metal::fast::tanh(x)`) and
`using namespace metal::fast;` in Metal op kernels — `.metal` files, Metal headers and Metal embedded in
`.mm` files. Sources passed to `torch.mps.compile_shader` (debugging scripts) are not flagged, nor is the
stable-softmax idiom `fast::exp(x - row_max)` / `fast::exp2(s - m)` (the subtrahend names the running max,
or the same expression guards the `-inf - -inf` case): its argument is never positive and the result is
normalised by a sum of at least one, so the fast variant's few ulp do not show.
Off by default: enable it with `--select MTL206`.

## Why is this bad?
The `fast::` variants trade accuracy for speed (several ulp, flushed denormals, no correct handling
of infinities and NaN for some functions). PyTorch compares every MPS op's output with the CPU
result in `test_output_match`; a fast-math op fails those comparisons for some inputs, or, worse,
passes them and returns subtly different numbers than CPU and CUDA for users.

## Example
```metal
struct gelu_functor {
  template <typename T>
  inline T operator()(const T x) {
    return T(0.5f * float(x) * (1.0f + fast::tanh(0.79788456f * float(x))));
  }
};
```

## Use instead
```metal
struct gelu_functor {
  template <typename T>
  inline T operator()(const T x) {
    return T(0.5f * float(x) * (1.0f + precise::tanh(0.79788456f * float(x))));
  }
};
```

## How to fix
Use `precise::` (or the default `metal::`) math, or the `c10/metal/special_math.h` helpers. If the
fast variant is deliberate (an approximation the op's documentation allows), suppress the line with
`// mpslint: ignore[MTL206]` and say why.

Guide: *Type-Specialized Functor* — "Use precise math".
"""

from __future__ import annotations

import re

from mpslint.model import Severity
from mpslint.rule import Rule
from mpslint.semantic.metalflow import metal_sources

_FAST = re.compile(r"(?<![\w:])(?:::)?(?:metal::)?fast::(\w+)|\busing\s+namespace\s+(?:::)?metal::fast\b")


_MAX_NAME = re.compile(r"(?i)max|^m$")
_NEG_INF_GUARD = re.compile(r"-\s*(?:INFINITY|(?:metal::)?numeric_limits<[^>]*>::infinity\(\))")


def _max_shifted_exp(text: str, m: re.Match) -> bool:
    """`fast::exp(x - row_max)` / `fast::exp2(s - m)`: the stable-softmax idiom.

    The argument is never positive, so the result lies in (0, 1] where the fast variant's error is a few ulp
    of a value that is then normalised by a sum >= 1; the one special case that matters (-inf - -inf) is
    either named by the subtrahend (`row_max`, `new_max[i]`, `m`) or guarded in the same expression
    (`x == -INFINITY ? 0 : fast::exp(x - y)`). Online-softmax and attention kernels use it on purpose.
    """
    if m.group(1) not in ("exp", "exp2"):
        return False
    i = m.end()
    while i < len(text) and text[i] in " \t":
        i += 1
    if i >= len(text) or text[i] != "(":
        return False
    depth, j = 0, i
    while j < len(text):
        depth += text[j] == "("
        depth -= text[j] == ")"
        if depth == 0:
            break
        j += 1
    arg = text[i + 1 : j]
    # the top-level binary minus (not a unary one at the start)
    depth, cut = 0, -1
    for k, ch in enumerate(arg):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "-" and depth == 0 and arg[:k].strip() and arg[k + 1 : k + 2] not in ("-", ">", "="):
            cut = k
    if cut < 0:
        return False
    root = re.match(r"\s*(?:\(\s*)*([A-Za-z_]\w*)", arg[cut + 1 :])
    if root and _MAX_NAME.search(root.group(1)):
        return True
    start = max(text.rfind(";", 0, m.start()), text.rfind("{", 0, m.start()), text.rfind("}", 0, m.start()))
    return bool(_NEG_INF_GUARD.search(text, start + 1, m.start()))


class FastMathInOp(Rule):
    code = "MTL206"
    name = "fast-math-in-op"
    severity = Severity.WARNING
    scope = "metal"
    default_enabled = False
    summary = "metal::fast:: math in an op kernel whose results are compared with CPU (precision loss)"
    guide = "Step 2: Type-Specialized Functor (use precise math)"

    def check(self, ctx):
        for src in metal_sources(ctx):
            if src.kind == "python":
                continue
            for m in _FAST.finditer(src.text):
                if src.in_comment_or_string(m.start()):
                    continue
                if _max_shifted_exp(src.text, m):
                    continue
                index = ctx.project.sources[src.path].index
                span = index.span(src.base + m.start(), src.base + m.end())
                if m.group(1):
                    what = f"`{m.group(0)}`"
                    fix_hint = f"use `precise::{m.group(1)}` (or `metal::{m.group(1)}`)"
                else:
                    what = "`using namespace metal::fast`"
                    fix_hint = "remove it and call `precise::` math"
                yield ctx.finding(
                    self,
                    src.path,
                    span,
                    f"{what} is fast-math (reduced precision, no IEEE special cases) in an op kernel whose results "
                    f"are compared with CPU; {fix_hint}.",
                )
