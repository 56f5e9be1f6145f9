"""
## What it does
Flags a 32-bit index specialisation (`cat_out_mps_impl<int32_t>(...)` where the same function also calls
`cat_out_mps_impl<int64_t>(...)`) chosen by `isTooLargeForMPSGraph(t)` alone: the check that selects the
narrow instantiation bounds each of `t`'s dimensions, not its element count or its offsets.

## Why is this bad?
`isTooLargeForMPSGraph(t)` answers "can MPSGraph take this tensor?": it compares every size with
`INT32_MAX` (and, for a strided view on macOS 15, its storage's element count). It does not compare
`t.numel()`: a contiguous `32769 x 65536` tensor passes it with 2^31 + 65536 elements. A kernel
instantiated with a 32-bit index type computes linear offsets (`sum(stride[d] * idx[d])`) in that type, so
past 2^31 the offsets wrap negative: the kernel writes before the output's allocation, corrupting other
tensors, and leaves the tail unwritten. This is pytorch/pytorch#189960, fixed in #189965 by choosing the
index width from the largest offset each tensor can produce.

## Example
```objc
bool large = isTooLargeForMPSGraph(out);
if (large) {
  return cat_impl<int64_t>(inputs, dim, out);
}
return cat_impl<int32_t>(inputs, dim, out);
```

## Use instead
```objc
// every offset of `out` fits in int32: its sizes, strides and element count
if (!at::native::canUse32BitIndexMath(out)) {
  return cat_impl<int64_t>(inputs, dim, out);
}
return cat_impl<int32_t>(inputs, dim, out);
```

## How to fix
Select the width from what the kernel computes: `at::native::canUse32BitIndexMath(t)`
(`<ATen/native/CanUse32BitIndexMath.h>`, exported by the wheel, so it serves extensions too), a comparison of
`t.numel()` (or of the largest offset, `sum((size(d) - 1) * stride(d))`, for views) with
`std::numeric_limits<int32_t>::max()`, or `offsetsFitIn<int32_t>(...)`; keep `isTooLargeForMPSGraph` for what
it is for, choosing between MPSGraph and a Metal kernel. Not flagged: a selection that also bounds the
tensor's element count or tests it for 32-bit indexing (`isTooLargeForMPSGraph(out) || out.numel() >
INT32_MAX`), a check of another value, instantiations with non-integer types, and a function that calls only
one width.

The check is judged by the semantic model, as MPS102's are: it must dominate the narrow instantiation
(the `else` of the `if` that tests it, an early `return` when it holds, a boolean local that holds it, an
`||` of such checks); what it proves is read from the condition's tree, so an `||` with a numel bound covers
the tensor and an `&&` does not.
"""

from __future__ import annotations

from mpslint.model import Severity
from mpslint.rule import Rule
from mpslint.semantic import hostflow as hf
from mpslint.semantic.model import semantic_model

_CHECK = "isTooLargeForMPSGraph"


class IndexWidthFromDimensions(Rule):
    code = "MPS119"
    name = "index-width-from-dimensions"
    severity = Severity.ERROR
    scope = "host"
    summary = "A 32-bit index instantiation chosen by `isTooLargeForMPSGraph`, which bounds each dimension, not the offsets"
    guide = "Working with Large Tensors"

    def check(self, ctx):
        hosts = ctx.project.hosts
        model = semantic_model(ctx.project)
        for path in sorted(hosts):
            facts = hosts[path]
            for fn in facts.functions:
                if not any(c.name == _CHECK for c in fn.calls) or not hf.is_live(fn, path, hosts):
                    continue
                yield from self._check_fn(ctx, path, model.function(fn, facts))

    def _check_fn(self, ctx, path, fm):
        fn = fm.fn
        widths: dict[str, dict[int, list]] = {}
        for c in fn.calls:
            if not c.template or c.stmt < 0:
                continue
            t = fm.scope.type_of_text(c.template.split(",")[0].strip())
            if t.kind == "int" and t.bits in (32, 64):
                widths.setdefault(c.callee, {}).setdefault(t.bits, []).append((c, t))
        checks = [c for c in fn.calls if c.name == _CHECK and c.args and c.args[0].tree is not None]
        reported: set[int] = set()
        for callee in sorted(widths):
            by_bits = widths[callee]
            if 64 not in by_bits:
                continue  # one width only: not a choice of index width
            for call, typ in by_bits.get(32, ()):
                bounds = fm.bounds(call.stmt)
                loose = [k[: -len("#dims")] for k in sorted(bounds) if k.endswith("#dims")]
                loose = [t for t in loose if not self._offsets_bounded(bounds, t, typ)]
                if not loose:
                    continue
                sites = [c for t in loose for c in checks if fm.key(c.args[0].tree, c.stmt) == t]
                site = min(sites, key=lambda c: c.span.start) if sites else None
                span = site.span if site is not None else call.span
                if span.start in reported:
                    continue
                reported.add(span.start)
                shown = [next((c.args[0].text for c in sites if fm.key(c.args[0].tree, c.stmt) == t), t) for t in loose]
                names = " and ".join(f"`{x}`" for x in shown)
                first = shown[0]
                narrow = call.template.split(",")[0].strip()
                limit, example = ("2^31", "32769 x 65536") if typ.signed else ("2^32", "65537 x 65536")
                yield ctx.finding(
                    self,
                    path,
                    span,
                    f"`{_CHECK}` bounds each dimension of {names} below 2^31, not the element count or the offsets, yet "
                    f"it selects the 32-bit `{call.name}<{call.template}>` (line {call.span.line}): a contiguous tensor "
                    f"whose every dimension fits ({example}) has more than {limit} elements, and its `{narrow}` offsets "
                    f"wrap. Choose the width with `at::native::canUse32BitIndexMath({first})` "
                    f"(<ATen/native/CanUse32BitIndexMath.h>) or by comparing "
                    f"`{first}.numel()` (the largest offset, for a view) with `std::numeric_limits<{narrow}>::max()`.",
                )

    @staticmethod
    def _offsets_bounded(bounds, tensor: str, typ) -> bool:
        """The same condition keeps ``tensor``'s offsets within ``typ``: a 32-bit indexing test, or its element count."""
        if tensor + "#32bit" in bounds:
            return True
        nb = bounds.get(tensor + ".numel()")
        return nb is not None and nb.interval.hi is not None and nb.interval.hi <= typ.max()
