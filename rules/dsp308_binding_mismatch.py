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

A binding the kernel has no slot for is reported as a warning (Metal ignores it; it usually means the
kernel lost a parameter or the host binds a stale argument); the other mismatches are errors.

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
from dataclasses import dataclass

from mpslint.model import Severity
from mpslint.rule import Rule

_ARGS_BINDERS = {"mtl_setArgs"}
_SLOT_BINDERS = {"mtl_setBuffer", "mtl_setBytes", "mtl_setArg"}
_MSG_BINDERS = {"setBuffer", "setBytes", "setTexture"}
_BRANCHY = {"if_statement", "for_statement", "for_range_loop", "while_statement", "do_statement", "switch_statement", "case_statement"}
_INT = re.compile(r"\s*(\d+)\s*[uU]?\s*")


def _int(text: str) -> int | None:
    m = _INT.fullmatch(text)
    return int(m.group(1)) if m else None


def bindings(fn, after: int):
    """{slot: (arg text, call)} bound in ``fn`` from offset ``after`` on; None when not fully known."""
    out: dict[int, tuple[str, object]] = {}
    first = None
    for c in fn.calls:
        if c.span.start < after:
            continue
        slots: list[tuple[int, str]] = []
        if c.name in _ARGS_BINDERS and c.args and not c.message_send:
            base = 0 if not c.template else _int(c.template)
            if base is None:
                return None
            slots = [(base + k, a.text) for k, a in enumerate(c.args[1:])]
        elif c.name in _SLOT_BINDERS and len(c.args) >= 3 and not c.message_send:
            k = _int(c.args[2].text)
            if k is None:
                return None
            slots = [(k, c.args[1].text)]
        elif c.name == "bind_iter_tensors" and not c.message_send:
            n = _int(c.args[2].text) if len(c.args) >= 3 else None
            if n is None:
                return None
            slots = [(k, f"{c.args[1].text} operand {k}") for k in range(n)]
        elif c.name in _MSG_BINDERS and c.message_send and c.args:
            k = _int(c.args[-1].text)
            if k is None:
                return None
            slots = [(k, c.args[0].text)]
        else:
            continue
        if c.stmt >= 0:
            st = fn.stmts[c.stmt]
            if any(fn.stmts[p].kind in _BRANCHY for p in st.parents):
                return None  # conditional or repeated binding
        first = first or c
        for k, text in slots:
            out.setdefault(k, (text, c))
    return (out, first) if out else None


@dataclass(frozen=True)
class Slot:
    name: str
    type: str


def kernel_slots(kernel) -> dict[int, Slot]:
    """Buffer slots of a kernel: its ``[[buffer(n)]]`` parameters, or, when it declares none, Metal's implicit
    numbering of its ``device``/``constant`` parameters in order."""
    if kernel.buffers:
        return {b.index: Slot(b.name, b.type) for b in kernel.buffers}
    out: dict[int, Slot] = {}
    for p in kernel.function.params:
        if p.name in kernel.attributes or "[[" in p.raw:
            continue
        if re.search(r"\b(device|constant)\b", p.raw):
            out[len(out)] = Slot(p.name, p.type)
    return out


class BindingMismatch(Rule):
    code = "DSP308"
    name = "binding-mismatch"
    severity = Severity.ERROR
    scope = "dispatch"
    summary = "Host launch binds buffers that do not match the kernel's [[buffer(n)]] parameters"
    guide = "Working with TensorIterators; Error Reporting from Kernels"

    def check(self, ctx):
        graph = ctx.graph
        for impl in sorted(graph.nodes("impl")):
            a = graph.attrs(impl)
            fn = a.get("function")
            if fn is None:
                continue
            krefs = [k for k in graph.out(impl, "launches") if graph.attrs(k)["ref"].kind == "host_name"]
            all_refs = graph.out(impl, "launches")
            if len(krefs) != 1 or len(all_refs) != 1:
                continue
            kid = krefs[0]
            ref = graph.attrs(kid)["ref"]
            rx = re.compile(ref.pattern + r"\Z")
            kernels = []
            for mop in graph.out(kid, "resolves"):
                ma = graph.attrs(mop)
                # only kernels the name really selects: a [[host_name]] of theirs matches (not a kernel that merely
                # shares a prefix with the name, like `clamp_index` for "clamp_" + dtype)
                named = any(rx.match(hn) for _p, reg in ma.get("registrations", []) for hn in reg.host_names)
                if named or (ref.exact and ma["name"] == ref.literal):
                    kernels += [k for _p, k in ma.get("kernels", [])]
            if not kernels:
                continue
            sigs = {tuple((i, "ErrorMessages" in b.type) for i, b in sorted(kernel_slots(k).items())) for k in kernels}
            if len(sigs) != 1:
                continue
            kernel = kernels[0]
            slots = kernel_slots(kernel)
            if not slots:
                continue
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
            if not problems:
                continue
            only_extra = not missing and len(problems) == 1 and extra
            yield ctx.finding(
                self,
                a["path"],
                first.span,
                f"binding does not match kernel `{kernel.name}` ({len(slots)} buffer parameters, {len(bound)} bound): "
                + "; ".join(problems)
                + ("; the kernel ignores the extra argument: drop it, or restore the parameter the kernel lost." if only_extra
                   else "; bind exactly the kernel's [[buffer(n)]] slots in order."),
                severity=Severity.WARNING if only_extra else None,
                kernel=kernel.name,
            )

    @staticmethod
    def _resolve(fn, text: str) -> str:
        """A bound name's initialiser, when it is a local variable."""
        if re.fullmatch(r"[A-Za-z_]\w*", text):
            for d in reversed(fn.decls):
                if d.name == text and d.init is not None:
                    return d.init.text
        return text
