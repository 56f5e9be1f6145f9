"""
## What it does
Flags a host launch whose dtype checks let through dtypes the Metal registrations of the launched op
lack: integers into an op registered with `REGISTER_FLOAT_BINARY_OP` only, complex into a real-only
kernel, `bfloat16` into a kernel with no floating registration at all. The dtypes a launch can reach are
read from the checks of the launching function (or, when it has none, of every caller):
`TORCH_CHECK(isIntegralType(...))`, `TORCH_CHECK(t.scalar_type() == kInt || ...)`, `AT_DISPATCH_*`.

Dtypes rejected on the way (`TORCH_CHECK(t.scalar_type() != kBool, ...)` in the launching function or
a caller) are taken out. An unchecked launch is not reported (its dtypes are unknown here), and gaps among float, half and
bfloat of an op that has some floating registration are left to MTL201, which reports them on the Metal
side.

## Why is this bad?
The host builds the kernel name from the tensor's dtype; a dtype the check admits but the Metal source
never registered fails at run time ("failed to create pipeline state" for `x_dense_int_int`), for the
users of that dtype only.

## Example
```objc
static void logaddexp_int_kernel(TensorIteratorBase& iter) {
  TORCH_CHECK(isIntegralType(iter.common_dtype(), /*includeBool=*/true), "...");
  lib.exec_binary_kernel(iter, "logaddexp");   // registered with REGISTER_FLOAT_BINARY_OP only
}
```

## Use instead
```metal
REGISTER_FLOAT_BINARY_OP(logaddexp);
REGISTER_INT2FLOAT_BINARY_OP(logaddexp);
```

## How to fix
Register the missing dtypes in the `.metal` file (the message names them), or narrow the host check so
those dtypes are rejected with a clear error before the launch.

Guide: *Binary Kernel Type Registration Macros* and *Checklist* — "Supports required dtypes".
"""

from __future__ import annotations

from mpslint.facts.host import HOST_DTYPES
from mpslint.semantic.expressions import strip_parens
from mpslint.facts.metal import FLOAT_TYPES
from mpslint.model import Severity
from mpslint.rule import Rule

_ORDER = ("float", "half", "bfloat", "long", "int", "short", "char", "uchar", "bool", "float2", "half2")


def launch_dtypes(graph, impl: str, depth: int = 0):
    """(dtypes, filter spans) the function can launch with, from its own checks or all its callers'; None if unchecked."""
    own = graph.attrs(impl).get("dtype_filters") or []
    if own:
        out: set[str] = set()
        for f in own:
            out |= set(f.dtypes)
        return out, [(graph.attrs(impl).get("path"), f) for f in own]
    callers = graph.into(impl, "calls")
    if not callers or depth > 3:
        return None
    types: set[str] = set()
    spans = []
    for c in callers:
        sub = launch_dtypes(graph, c, depth + 1)
        if sub is None:
            return None
        types |= sub[0]
        spans += sub[1]
    return types, spans


_DTYPE_READERS = frozenset({"scalar_type", "dtype", "common_dtype", "input_dtype"})


def _is_dtype_read(n) -> bool:
    n = strip_parens(n)
    return n.kind == "call" and n.op in _DTYPE_READERS and n.receiver is not None


def _rejected(cond) -> set[str]:
    """Dtypes a condition proves the tensor is not: ``t.scalar_type() != kBool`` and the arms of ``&&``
    (``||`` proves nothing of either arm, ``!(a == kBool)`` is read as ``!=``)."""
    n = strip_parens(cond)
    if n.kind == "binary" and n.op == "&&":
        return _rejected(n.kids[0]) | _rejected(n.kids[1])
    if n.kind == "unary" and n.op == "!" and n.kids:
        inner = strip_parens(n.kids[0])
        if inner.kind == "binary" and inner.op == "==":
            n = inner
        else:
            return set()
    elif not (n.kind == "binary" and n.op == "!="):
        return set()
    a, b = n.kids[0], n.kids[1]
    if _is_dtype_read(b):
        a, b = b, a
    if not _is_dtype_read(a):
        return set()
    b = strip_parens(b)
    if b.kind not in ("id", "member"):
        return set()
    t = HOST_DTYPES.get((b.op or "").split("::")[-1])
    return {t} if t else set()


def excluded_dtypes(graph, impl: str, depth: int = 0, seen=None) -> set[str]:
    """Dtypes rejected on the way to the launch (``TORCH_CHECK(t.scalar_type() != kBool, ...)``) in the
    launching function or any caller: conservative, they only ever shrink a gap."""
    seen = set() if seen is None else seen
    if impl in seen or depth > 3:
        return set()
    seen.add(impl)
    out: set[str] = set()
    fn = graph.attrs(impl).get("function")
    if fn is not None:
        for c in fn.calls:
            if c.name.startswith("TORCH_CHECK") and c.args and c.args[0].tree is not None:
                out |= _rejected(c.args[0].tree)
    for caller in graph.into(impl, "calls"):
        out |= excluded_dtypes(graph, caller, depth + 1, seen)
    return out


class DtypeGap(Rule):
    code = "DSP304"
    name = "dtype-gap"
    severity = Severity.WARNING
    scope = "dispatch"
    summary = "Host launch admits dtypes the launched op's Metal registrations lack"
    guide = "Binary Kernel Type Registration Macros; Checklist: Supports required dtypes"

    def check(self, ctx):
        graph = ctx.graph
        for kid in sorted(graph.nodes("kref")):
            mops = graph.out(kid, "resolves")
            if not mops:
                continue
            registered: set[str] = set()
            for mid in mops:
                regs = graph.attrs(mid).get("registrations") or []
                registered |= {r.dtype for _p, r in regs}
            if not registered:
                continue
            ref = graph.attrs(kid)["ref"]
            path = graph.attrs(kid)["path"]
            for impl in graph.into(kid, "launches"):
                got = launch_dtypes(graph, impl)
                if got is None:
                    continue
                admitted, filters = got
                gap = admitted - registered - {"double"} - excluded_dtypes(graph, impl)
                if registered & set(FLOAT_TYPES):
                    gap -= set(FLOAT_TYPES)  # MTL201's business
                if not gap:
                    continue
                gap_s = ", ".join(t for t in _ORDER if t in gap) or ", ".join(sorted(gap))
                have = ", ".join(t for t in _ORDER if t in registered)
                fpath, flt = filters[0]
                where = f"line {flt.span.line}" if fpath == path else f"{fpath}:{flt.span.line}"
                yield ctx.finding(
                    self,
                    path,
                    ref.span,
                    f"`{ref.call}` launches `{ref.literal}` for dtypes the check at {where} lets through ({gap_s}), but the "
                    f"Metal source registers it only for {have}; register {gap_s} for it, or reject those dtypes in the check.",
                    kernel=ref.literal,
                )
                break
