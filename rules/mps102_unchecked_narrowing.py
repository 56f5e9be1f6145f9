"""
## What it does
Flags an int64 size, `numel()`, stride or storage offset narrowed to 32 bits — by `static_cast`, a
C-style or functional cast, or implicitly (`uint32_t n = t.numel();`, an element of a `uint32_t`
array) — with no `c10::checked_convert`, `safe_downcast` or dominating guard on that same value.

## Why is this bad?
Most Metal kernels take `numel` as `uint32_t` and index in 32 bits. A tensor with more than 2^32
elements wraps around: the kernel processes a few elements and returns garbage, with no error. A
checked conversion turns the wraparound into a `TORCH_CHECK` failure instead of a corrupt output.

## Example
```cpp
const uint32_t numel = static_cast<uint32_t>(self.numel());
uint32_t ndim = self.dim();          // fine: dim() is small
uint32_t rows = self.size(0);        // implicit narrowing
```

## Use instead
```cpp
const uint32_t numel = c10::checked_convert<uint32_t>(self.numel(), "uint32_t");
```
or split the work first: after `if (!iter.can_use_32bit_indexing()) { for (auto&& sub : iter.with_32bit_indexing()) ...; return; }`,
narrowing `iter.numel()` is correct and not flagged.

## How to fix
Wrap the value in `c10::checked_convert<T>(value, "T")` (`<c10/util/TypeCast.h>`), or bound it with a
`TORCH_CHECK(value <= std::numeric_limits<uint32_t>::max(), ...)` before the cast, or decompose the
iterator with `with_32bit_indexing()`. The automatic fix rewrites `static_cast<uint32_t>(x)` into
`c10::checked_convert<uint32_t>(x, "uint32_t")`.

Also counted as bounds: a guard on a product that contains the value (`n * D <= INT32_MAX` bounds `D`), a
local flag holding such a bound (`use32 = (n - 1) * stride <= INT32_MAX; if (use32) ...`, or
`canUse32BitIndexMath(t)`), a comparison with a named limit constant (`t.numel() <= kMaxNumel`), and
`std::min(kChunk, rest)` with a constant that fits. Dimension counts (`t.dim()`, `t.sizes().size()`,
`iter.ndim()`) are not sizes and are not flagged.

Guide: *Working with Large Tensors* — "Use a checked cast when narrowing".
"""

from __future__ import annotations

import re

from mpslint import hostflow as hf
from mpslint.model import Fix, Severity
from mpslint.rule import Rule

_CHECKED = re.compile(r"checked_convert|safe_downcast|narrow_cast")
_ITER_SIZE = re.compile(r"^\s*([A-Za-z_]\w*)\s*(?:\.|->)\s*(numel|shape|strides|stride|size)\s*\(")


# the number of dimensions (`t.dim()`, `t.sizes().size() - 1`): at most a few dozen, never wraps
_DIM_COUNT = re.compile(r"[\w.\->()\[\]]*?(?:\.|->)(?:dim|ndim|ndimension)\(\)(?:\s*[-+]\s*\d+)?|[\w.\->()\[\]]*?(?:\.|->)(?:sizes|strides)\(\)\s*\.\s*size\(\)(?:\s*[-+]\s*\d+)?")


def _min_with_small_constant(fn, text: str) -> bool:
    """`std::min(max_chunk, total - base)` with `constexpr size_t max_chunk = 0x80000000`: the minimum of anything
    and a constant that fits in 32 bits fits too (chunked copies bound each piece this way)."""
    m = re.fullmatch(r"(?:std::)?min\s*(?:<[^<>]*>)?\s*\((.*)\)", text.strip(), re.S)
    if not m:
        return False
    depth, parts, cur = 0, [], ""
    for ch in m.group(1):
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch in "(<[{"
        depth -= ch in ")>]}"
        cur += ch
    parts.append(cur)

    def small(arg: str) -> bool:
        a = arg.strip()
        lit = re.fullmatch(r"(0[xX][0-9a-fA-F]+|\d+)[uUlL]*", a)
        if lit:
            return int(lit.group(1), 0) <= 0xFFFFFFFF
        for d in fn.decls:
            if d.name == a and d.init is not None and re.search(r"\bconst(?:expr)?\b", d.type):
                return small(d.init.text)
        return False

    return len(parts) == 2 and any(small(x) for x in parts)

class UncheckedNarrowing(Rule):
    code = "MPS102"
    name = "unchecked-narrowing"
    severity = Severity.ERROR
    scope = "host"
    summary = "int64 size/numel/stride/offset narrowed to 32 bits without a checked conversion or guard"
    fixable = "safe"
    guide = "Working with Large Tensors"

    def check(self, ctx):
        hosts = ctx.project.hosts
        sub_callees = hf.subiter_callees(hosts)
        for path in sorted(hosts):
            facts = hosts[path]
            has_include = any(i.header == "c10/util/TypeCast.h" for i in facts.includes)
            for fn in facts.functions:
                yield from self._check_fn(ctx, path, fn, fn.name in sub_callees, has_include, facts.includes)

    def _check_fn(self, ctx, path, fn, is_subiter_callee, has_include, includes=()):
        svars = hf.size_vars(fn)
        iters = set(hf.iter_params(fn))
        loops = hf.subiter_loops(fn)
        for var, _it in loops.values():
            iters.add(var)
        split_at = hf.has_32bit_check(fn)
        iter_safe = hf.splits(fn) or is_subiter_callee

        def value_of(text: str) -> str | None:
            t = text.strip()
            while t.startswith("(") and t.endswith(")"):
                t = t[1:-1].strip()
            if _CHECKED.search(t) or _DIM_COUNT.fullmatch(t) or _min_with_small_constant(fn, t):
                return None
            if hf.is_size_expr(t):
                return t
            for v, (init, _s) in svars.items():
                if re.search(r"(?<![\w.])" + re.escape(v) + r"\b(?!\s*\()", t):
                    return init if t == v else t
            return None

        def safe(stmt: int, value: str, call_stmt: int) -> bool:
            m = _ITER_SIZE.match(value)
            if m and m.group(1) in iters:
                if iter_safe or (0 <= split_at <= call_stmt) or hf.in_loop(fn, call_stmt, loops):
                    return True
            return hf.guarded(fn, stmt, value)

        reported: set[int] = set()
        for cast in fn.casts:
            if cast.kind not in ("static_cast", "c_style", "functional"):
                continue
            typ = cast.type.strip()
            if not hf.NARROW_TYPES.match(typ):
                continue
            value = value_of(cast.operand.text)
            if value is None or safe(cast.stmt, value, cast.stmt) or hf.guarded(fn, cast.stmt, cast.operand.text.strip()):
                continue
            reported.add(cast.span.start)
            fix = None
            if cast.kind == "static_cast" and typ in ("uint32_t", "int32_t", "int", "uint16_t", "int16_t"):
                src = ctx.source(path, cast.operand.span)
                edits = [ctx.edit(path, cast.span.start, cast.span.end, f'c10::checked_convert<{typ}>({src}, "{typ}")')]
                if not has_include and includes:
                    at = includes[-1].span.end  # after the last #include line
                    edits.append(ctx.edit(path, at, at, "\n#include <c10/util/TypeCast.h>"))
                fix = Fix(f"Use `c10::checked_convert<{typ}>`", tuple(edits), "safe")
            yield ctx.finding(
                self,
                path,
                cast.span,
                f"`{cast.operand.text}` (int64) is narrowed to `{typ}` unchecked; past 2^32 elements it wraps silently. "
                f'Use `c10::checked_convert<{typ}>({cast.operand.text}, "{typ}")` or guard it with `TORCH_CHECK`.',
                fix=fix,
            )
        narrow_arrays = {d.name for d in fn.decls if d.array and hf.NARROW_TYPES.match(d.type.strip())}
        narrow_arrays |= {d.name for d in fn.decls if re.search(r"std::array\s*<\s*(uint32_t|int32_t|int|uint)\s*,", d.type)}
        for d in fn.decls:
            if d.init is None:
                continue
            typ = d.type.strip()
            arr = re.search(r"std::array\s*<\s*(uint32_t|int32_t|int|uint)\s*,", typ)
            if d.array or arr:
                if not (arr or hf.NARROW_TYPES.match(typ)):
                    continue
                items = [x.strip() for x in d.init.text.strip("{} ").split(",")] if d.init.text.startswith("{") else []
                bad = [x for x in items if value_of(x) and not re.search(r"static_cast|\b(int|uint32_t|uint)\s*\(", x) and not safe(d.stmt, value_of(x), d.stmt)]
                if bad:
                    yield ctx.finding(
                        self,
                        path,
                        d.init.span,
                        f"`{bad[0]}` (int64) is stored in a 32-bit array `{d.name}` unchecked; use "
                        f"`c10::checked_convert<{arr.group(1) if arr else typ.split()[-1]}>` for each element or guard the sizes.",
                    )
                continue
            if not hf.NARROW_TYPES.match(typ):
                continue
            init = d.init.text
            if re.search(r"static_cast|\((?:uint32_t|int32_t|int|uint|unsigned)\)|\b(?:uint32_t|int32_t|int|uint)\s*\(", init):
                continue  # the explicit cast is reported itself
            value = value_of(init)
            if value is None or safe(d.stmt, value, d.stmt) or hf.guarded(fn, d.stmt, init.strip()):
                continue
            yield ctx.finding(
                self,
                path,
                d.span,
                f"`{d.name}` is `{typ}` but initialised from `{init}` (int64): implicit narrowing wraps past 2^32. "
                f'Use `c10::checked_convert<{typ.split()[-1]}>({init}, "{typ.split()[-1]}")`.',
            )
        for a in fn.assigns:
            m = re.match(r"([A-Za-z_]\w*)\s*\[", a.lhs)
            if not m or m.group(1) not in narrow_arrays or a.op != "=":
                continue
            value = value_of(a.rhs.text)
            if value is None or re.search(r"static_cast|checked_convert", a.rhs.text) or safe(a.stmt, value, a.stmt):
                continue
            yield ctx.finding(
                self,
                path,
                a.span,
                f"`{a.rhs.text}` (int64) is stored into the 32-bit array `{m.group(1)}` unchecked; "
                f"use `c10::checked_convert` or guard the value with `TORCH_CHECK`.",
            )
