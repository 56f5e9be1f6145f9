"""
## What it does
Flags a Metal kernel that takes an `ErrorMessages*` parameter (`device ::c10::metal::ErrorMessages*
error_buf`) but never reports through it: no `TORCH_REPORT_ERROR(error_buf, ...)` in its body, and the
parameter is not passed on to a helper function that could report.

## Why is this bad?
The host binds the stream's error buffer to that slot because the kernel is meant to validate its
input on the device (out-of-range indices, invalid targets). A kernel that never reports has lost
its check: bad input reads or writes out of bounds silently instead of raising
`c10::AcceleratorError` at the next sync. (If the check is really not needed, the parameter and its
binding are dead code that the next reader will trust.)

## Example
```metal
kernel void index_put_1d(device float* self [[buffer(0)]],
                         constant long* indices [[buffer(1)]],
                         constant float* values [[buffer(2)]],
                         device ErrorMessages* error_buf [[buffer(3)]],
                         uint tid [[thread_position_in_grid]]) {
  self[indices[tid]] = values[tid];
}
```

## Use instead
```metal
kernel void index_put_1d(device float* self [[buffer(0)]],
                         constant long* indices [[buffer(1)]],
                         constant float* values [[buffer(2)]],
                         constant long& numel [[buffer(3)]],
                         device ErrorMessages* error_buf [[buffer(4)]],
                         uint tid [[thread_position_in_grid]]) {
  const long idx = indices[tid];
  if (idx < 0 || idx >= numel) {
    TORCH_REPORT_ERROR(error_buf, "index ", idx, " is out of bounds for size ", numel);
    return;
  }
  self[idx] = values[tid];
}
```

## How to fix
Add the missing validation with `TORCH_REPORT_ERROR(error_buf, ...)` followed by `return;`, or, if
the kernel needs no check, remove the parameter and the host's `getErrorBuffer()` binding.

Guide: *Error Reporting from Kernels* — "Kernel side: take a `device ErrorMessages* error_buf`
argument and call `TORCH_REPORT_ERROR` on the bad path".
"""

from __future__ import annotations

import re

from mpslint.model import Severity
from mpslint.rule import Rule
from mpslint.semantic.metalflow import is_kernel_function

_ERR_TYPE = re.compile(r"\bErrorMessages\b")


class UnusedErrorBuffer(Rule):
    code = "MTL207"
    name = "unused-error-buffer"
    severity = Severity.WARNING
    scope = "metal"
    summary = "kernel takes an ErrorMessages* parameter but never calls TORCH_REPORT_ERROR with it"
    guide = "Error Reporting from Kernels"

    def check(self, ctx):
        for mf in ctx.project.all_metal():
            for fn in mf.functions:
                if not is_kernel_function(fn) or fn.body_span is None:
                    continue
                for p in fn.params:
                    if not _ERR_TYPE.search(p.type + " " + p.raw) or not p.name:
                        continue
                    if _used(fn, p.name):
                        continue
                    yield ctx.finding(
                        self,
                        mf.path,
                        p.span,
                        f"kernel `{fn.name}` takes the error buffer `{p.name}` but never reports through it; add the "
                        f"device-side check (`TORCH_REPORT_ERROR({p.name}, ...); return;`) or drop the parameter "
                        "and its host binding.",
                    )


def _used(fn, name: str) -> bool:
    word = re.compile(r"(?<![\w.])" + re.escape(name) + r"\b")
    for call in fn.calls:
        if any(word.search(a.text) for a in call.args):
            return True  # TORCH_REPORT_ERROR(name, ...) or handed to a helper
    for d in fn.decls:
        if d.init is not None and word.search(d.init.text):
            return True  # aliased
    for a in fn.assigns:
        if word.search(a.rhs.text):
            return True
    return False
