"""
## What it does
Flags a Metal op registered for some of `float`, `half` and `bfloat` but not all of them — in `.metal`
files and in Metal embedded in host strings. `bfloat` guarded by `#if __METAL_VERSION__ >= 310` counts
as registered. When the host code that launches the op filters dtypes (`TORCH_CHECK(isFloatingType(...))`,
`AT_DISPATCH_*`, an explicit `scalar_type() == kFloat || ...`), only the dtypes it launches are required.
Not flagged: complex kernels (`float2`/`half2` outputs or host names; torch has no complex bfloat),
kernels registered for `half`/`bfloat` without `float` (deliberate low-precision specializations), and
`float`-only kernels unless the host's dtype filter shows it launches `half` or `bfloat` too.

## Why is this bad?
The host code builds the kernel name from the tensor's dtype (`"my_op_" + scalarToMetalTypeString(t)`).
A missing registration is found only at run time, as a "failed to create pipeline state" error for that
dtype — typically `bfloat16`, which tests exercise least.

## Example
```metal
REGISTER_UNARY_OP(my_op, float, float);
REGISTER_UNARY_OP(my_op, half, half);
```

## Use instead
```metal
REGISTER_UNARY_OP(my_op, float, float);
REGISTER_UNARY_OP(my_op, half, half);
REGISTER_UNARY_OP(my_op, bfloat, bfloat);
```

## How to fix
Register the missing dtypes (the message names them), or, if the op genuinely cannot support a dtype,
reject it on the host before launch with a `TORCH_CHECK` on the dtype so users get a clear error.

Guide: *Checklist* — "Supports required dtypes (float32, float16, bfloat16 ...)".
"""

from __future__ import annotations

from mpslint.facts.metal import FLOAT_TYPES
from mpslint.model import Severity
from mpslint.rule import Rule


_COMPLEX = frozenset({"float2", "half2"})


def _words(name: str) -> list[str]:
    return "".join(c if c.isalnum() else " " for c in name).split()


def _names_complex(name: str) -> bool:
    # a word test only where one of the words can be in the text at all
    return ("float2" in name or "half2" in name) and any(w in _COMPLEX for w in _words(name))


def _is_complex(reg) -> bool:
    """Complex registrations are written with Metal's two-component float types (``float2`` for complex64),
    as the output type or as a word of a host name (``mul_float2_float2``)."""
    return _names_complex(reg.out_dtype) or any(_names_complex(hn) for hn in reg.host_names)


class MissingDtypeRegistration(Rule):
    code = "MTL201"
    name = "missing-dtype-registration"
    severity = Severity.WARNING
    scope = "metal"
    summary = "Metal op registered for some of float/half/bfloat but not all"
    guide = "Checklist: Supports required dtypes"
    contexts = ("pytorch",)  # a PyTorch convention (mpslint.context)

    def check(self, ctx):
        groups: dict[tuple[str, str], list] = {}
        for mf in ctx.project.all_metal():
            for reg in mf.registrations:
                groups.setdefault((reg.op, mf.path), []).append(reg)
        graph = ctx.graph
        for (op, path), regs in sorted(groups.items()):
            # complex kernels (float2/half2 outputs or host names) have no bfloat counterpart: torch has no complex bfloat
            regs = [r for r in regs if not _is_complex(r)]
            have = {r.dtype for r in regs}
            floats = have & set(FLOAT_TYPES)
            if "float" not in floats:
                continue  # a half/bfloat-only kernel is a deliberate low-precision specialization, not a forgotten dtype
            missing = [t for t in FLOAT_TYPES if t not in have]
            launched = self._launched_dtypes(graph, op)
            if launched is not None:
                missing = [t for t in missing if t in launched]
            elif floats == {"float"}:
                continue  # fp32-only ops (linalg, ctc_loss) are deliberate unless the host shows it launches more
            if not missing:
                continue
            last = max((r for r in regs if r.dtype in FLOAT_TYPES), key=lambda r: r.span.start)
            example = self._example(last, missing[0])
            yield ctx.finding(
                self,
                path,
                last.span,
                f"Metal op `{op}` is registered for {', '.join(t for t in FLOAT_TYPES if t in have)} but not "
                f"{', '.join(missing)}; launching it with {'/'.join(missing)} fails at run time. "
                f"Add {example}, or reject the dtype on the host with a TORCH_CHECK.",
                op=op,
            )

    @staticmethod
    def _launched_dtypes(graph, op):
        """Dtypes the host can launch ``op`` with, from the filters of its launchers (or their callers).

        None when any launch path is unfiltered: then all of float/half/bfloat are required.
        """
        krefs = graph.into("mop:" + op, "resolves")
        if not krefs:
            return None
        allowed: set[str] = set()

        def filters_of(impl, depth=0):
            own = graph.attrs(impl).get("dtype_filters") or []
            if own:
                return [set(f.dtypes) for f in own]
            callers = graph.into(impl, "calls")
            if not callers or depth > 3:
                return None
            out = []
            for c in callers:
                sub = filters_of(c, depth + 1)
                if sub is None:
                    return None
                out.extend(sub)
            return out

        for kref in krefs:
            for impl in graph.into(kref, "launches"):
                fs = filters_of(impl)
                if fs is None:
                    return None
                for f in fs:
                    allowed |= f
        return allowed

    @staticmethod
    def _example(reg, dtype):
        if reg.macro.startswith("REGISTER_") and reg.macro in ("REGISTER_UNARY_OP", "REGISTER_BINARY_OP", "REGISTER_OPMATH_BINARY_OP", "REGISTER_TERNARY_OP"):
            return f"`{reg.macro}({reg.op}, {dtype}, {dtype});`"
        if reg.macro == "template":
            return f"an instantiation of `{reg.kernel or reg.op}<{dtype}>`"
        return f"`{reg.macro}(...)` for `{dtype}`"
