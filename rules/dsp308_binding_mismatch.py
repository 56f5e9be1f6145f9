"""
## What it does
Compares what a host launch binds with the `[[buffer(n)]]` parameters of the kernel it launches. The
kernel is the one the function's `getPipelineStateForFunc(...)` name resolves to (all candidate kernels
must agree on their slots); the bindings are the function's `mtl_setArgs(enc, ...)` /
`mtl_setArgs<k>(enc, ...)`, `mtl_setBuffer` / `mtl_setBytes` / `mtl_setArg(enc, x, n)`,
`bind_iter_tensors(enc, iter, n)` and `[enc setBuffer:... atIndex:n]` / `setBytes:` calls. Flags:

- a `[[buffer(n)]]` slot nothing binds, and a bound slot the kernel has no parameter for (a kernel
  without `[[buffer(n)]]` attributes gets Metal's implicit numbering of its `device`/`constant`
  parameters);
- a `device ErrorMessages*` parameter bound to something other than the stream's error buffer
  (`stream->getErrorBuffer()`), or left unbound.

The rule stays silent when it cannot see the whole binding: more than one launch in the function,
a binding under an `if` or in a loop, a slot that is not a literal, `bind_iter_tensors` without a
count, `exec_*_kernel` launches (the library binds those itself).

A binding the kernel has no slot for, with every other argument where the kernel reads it, is reported as
`info`: Metal ignores it, so nothing runs wrong; it is a cleanup (the kernel lost a parameter or the host
binds a stale argument). When an argument bound at one slot carries the name of the kernel's parameter at
another (`mtl_setArgs(enc, out, index, value)` for a kernel `(out, value)`), the arguments are shifted, and
that is an error like the other mismatches.

## Why is this bad?
Metal does not check the binding against the kernel. An unbound buffer reads garbage or faults the GPU
("Invalid device load"), a shifted slot feeds one argument into another parameter, and an error buffer
bound to the wrong object makes `TORCH_REPORT_ERROR` write into user data instead of raising.

## Example
```objc
// kernel void masked_scale(device T* out [[buffer(0)]], constant T* in [[buffer(1)]],
//                          constant bool* mask [[buffer(2)]], constant float& scale [[buffer(3)]], ...)
mtl_setArgs(encoder, out, input, scale);            // scale lands in the mask slot; slot 3 unbound
```

## Use instead
```objc
mtl_setArgs(encoder, out, input, mask, scale);
```

## How to fix
Bind exactly the kernel's `[[buffer(n)]]` slots, in order, and pass `stream->getErrorBuffer()` for an
`ErrorMessages*` parameter.

Guide: *Working with TensorIterators* (`mtl_setArgs<N>` slots) and *Error Reporting from Kernels*.
"""

from __future__ import annotations

import re

from mpslint.semantic.launch_bindings import bindings, single_kernel_launches  # bindings: re-exported for older importers
from mpslint.model import Severity
from mpslint.rule import Rule

class BindingMismatch(Rule):
    code = "DSP308"
    name = "binding-mismatch"
    severity = Severity.ERROR
    scope = "dispatch"
    summary = "Host launch binds buffers that do not match the kernel's [[buffer(n)]] parameters"
    guide = "Working with TensorIterators; Error Reporting from Kernels"

    def check(self, ctx):
        for launch in single_kernel_launches(ctx.graph):
            a, fn, kernel, ref, slots = launch.attrs, launch.function, launch.kernel, launch.ref, launch.slots
            got = bindings(fn, ref.span.start)
            if got is None:
                continue
            bound, first = got
            missing = sorted(set(slots) - set(bound))
            extra = sorted(set(bound) - set(slots))
            problems = []
            if missing:
                problems.append("nothing binds " + ", ".join(f"`{slots[k].name}` [[buffer({k})]]" for k in missing))
            if extra:
                problems.append("the kernel has no parameter for " + ", ".join(f"`{bound[k][0]}` (slot {k})" for k in extra))
            for k, b in sorted(slots.items()):
                if "ErrorMessages" in b.type and k in bound and "getErrorBuffer" not in self._resolve(fn, bound[k][0]):
                    problems.append(f"`{b.name}` [[buffer({k})]] is an ErrorMessages buffer but gets `{bound[k][0]}`, not `stream->getErrorBuffer()`")
            shifted = self._shifted(slots, bound)
            if shifted:
                problems.append(shifted)
            if not problems:
                continue
            # an extra binding alone, with every argument where the kernel reads it: Metal ignores it (cleanup)
            only_extra = not missing and len(problems) == 1 and extra
            yield ctx.finding(
                self,
                a["path"],
                first.span,
                f"binding does not match kernel `{kernel.name}` ({len(slots)} buffer parameters, {len(bound)} bound): "
                + "; ".join(problems)
                + ("; the kernel ignores the extra argument: drop it, or restore the parameter the kernel lost." if only_extra
                   else "; bind exactly the kernel's [[buffer(n)]] slots in order."),
                severity=Severity.INFO if only_extra else None,
                kernel=kernel.name,
            )

    @staticmethod
    def _shifted(slots, bound) -> str:
        """An argument bound at one slot under the name of the kernel's parameter at another: the arguments
        before it are out of place (``mtl_setArgs(enc, out, index, value)`` for ``(out, value)``)."""
        by_name = {b.name: k for k, b in slots.items() if b.name}
        for k in sorted(bound):
            text = bound[k][0]
            want = by_name.get(text)
            if want is not None and want != k and re.fullmatch(r"[A-Za-z_]\w*", text):
                return f"`{text}` is bound at slot {k} but the kernel's `{text}` is [[buffer({want})]]: an argument before it is out of place"
        return ""

    @staticmethod
    def _resolve(fn, text: str) -> str:
        """A bound name's initialiser, when it is a local variable."""
        if re.fullmatch(r"[A-Za-z_]\w*", text):
            for d in reversed(fn.decls):
                if d.name == text and d.init is not None:
                    return d.init.text
        return text
