"""
## What it does
Flags 32-bit integer arithmetic that forms an element offset or index into a device or constant
buffer in Metal code:

- a product of two run-time 32-bit values (`uint`/`int`/`uint32_t`/`short`, vector components such
  as `tid.x`) inside a buffer subscript or pointer offset: `input[tid * stride + offset]` with
  `constant uint& stride`;
- a 32-bit local computed from such a product, or narrowing a 64-bit product
  (`uint offset = i * strides[0];` with `constant long* strides`), that then indexes a buffer;
- `offset += i * stride` accumulating into a 32-bit local that indexes a buffer.

Not flagged: arithmetic in `long`/`int64_t`/`size_t` (one 64-bit operand promotes the product),
casts to `long` before multiplying (`long(i) * stride`), products with a literal or compile-time
constant (`tid * 4`, `row * BLOCK`, template parameters, `constexpr` values), indices of threadgroup
and thread-local arrays, products whose factors the launching host keeps small (below), and values whose
type mpslint cannot see (template types such as `index_t`, struct fields of unknown type). One finding per statement, and per product in a function.

Widths and values come from the semantic model (`mpslint/semantic/`): types through typedefs
(`typedef long wide_t`), struct fields, `auto` and vector components; `const uint k = 4;` is a constant;
a factor known small (`c ? 1 : 2`, `x & 31`, `i % 8`) counts as one; a product whose factors' ranges cannot
overflow its type is not reported. A launcher that is dead code (a `static` function nothing calls)
launches nothing.

**Entered with what the host binds.** A kernel every live launch of which binds its arguments in one place
(`mtl_setArgs`, `mtl_setBytes`, `[enc setBytes:&n length:... atIndex:k]`) is judged with the ranges the
model gives the bound values at the launch: `ndim` bound from `static_cast<uint32_t>(t.dim())` is at most 64,
so a loop counter `d < ndim` is small and `d * ndim` cannot wrap; a value a dominating `TORCH_CHECK` bounds
keeps that bound; a one-dimensional dispatch of `min(n, 1024)` threads keeps the `[[thread_position_in_grid]]`
scalar below 1024. A loop counter is small only by such values, not by its name: with no visible launch
binding `ndim`, `d * ndim` is a product of two run-time `uint`s.

**Judged by the host that launches the kernel.** When the run includes the MPS operation sources
(`native/mps/operations/*.mm`), a product
is reported only if a host function in the tree launches the kernel (directly, or through a device
helper the kernel calls) and neither it, the helpers it calls nor its callers (two calls either way)
keep the sizes in range: no `with_32bit_indexing()` split, and no check the model proves to bound a size
below 2^32 (`can_use_32bit_indexing()`, `canUse32BitIndexMath(t)`, a boolean helper that compares, or a comparison of a size with a value the model knows: `std::numeric_limits<int32_t>::max()`,
`INT_MAX`, `constexpr int64_t kMaxRowNumel = 1L << 30`). A check on the launch grid bounds no offset, and
neither does `!isTooLargeForMPSGraph(t)`, which bounds each dimension, not the element count (MPS119). The message names the unbounded launcher. Kernels that no host code in
the run launches by a name mpslint can resolve are not reported: there is nothing to judge them by.
When Metal files (or headers) are linted without the operation sources, every unguarded product is
reported, marked as such.

Off by default: enable it with `--select MTL204`. Many PyTorch kernels index in 32 bits by design,
correct because the host splits work or bounds the sizes; run it when auditing kernels for large
tensors, together with their host code.

## Why is this bad?
A 32-bit product wraps at 2^32 (2^31 for `int`, where overflow is even undefined). With a tensor
past 4 G elements, or a large stride (a transposed or expanded view), `row * stride` wraps around
and the kernel reads or writes the wrong elements: silently wrong results or memory corruption,
only on large inputs that tests rarely use. Host-side `with_32bit_indexing()` splits keep element
counts below 2^31, but not every launch goes through a `TensorIterator`.

## Example
```metal
kernel void gather_rows(device float* out [[buffer(0)]],
                        constant float* in [[buffer(1)]],
                        constant uint& row_stride [[buffer(2)]],
                        uint2 pos [[thread_position_in_grid]]) {
  out[pos.y * row_stride + pos.x] = in[pos.y * row_stride + pos.x];
}
```

## Use instead
```metal
kernel void gather_rows(device float* out [[buffer(0)]],
                        constant float* in [[buffer(1)]],
                        constant long& row_stride [[buffer(2)]],
                        uint2 pos [[thread_position_in_grid]]) {
  const long offset = long(pos.y) * row_stride + pos.x;
  out[offset] = in[offset];
}
```

A kernel in a `.metal` file is not judged when every host function that asks for it compiles its own copy
embedded in its file (`newLibraryWithSource:` of a string in the same `.mm`): that copy is what runs, and it is
judged instead.

## How to fix
Compute offsets in `long` (Metal's 64-bit integer): declare the offset `long`, pass sizes and
strides as `long`/`int64_t`, or cast one operand before multiplying (`long(i) * stride`). If the host
guarantees the range (a `TORCH_CHECK` on the sizes), say so with `// mpslint: ignore[MTL204]`.

Guide: *Working with Large Tensors* — "Most Metal kernels take `numel` as `uint32_t` and index in
32 bits, so anything past `INT32_MAX` needs host-side splitting".
"""

from __future__ import annotations

from mpslint.semantic import hostflow as hf
from mpslint.model import Severity
from mpslint.rule import Rule
from mpslint.semantic import ranges as R
from mpslint.semantic.expressions import identifiers, strip_parens, walk
from mpslint.semantic.model import semantic_model
from mpslint.families import operation_sources
from mpslint.semantic.launch_bindings import launch_param_ranges
from mpslint.semantic.launchflow import MetalCallIndex, index_range_evidence, launched_elsewhere, launchers
from mpslint.semantic.metalflow import metal_sources

W32, W64, CONST = "w32", "w64", "const"
_SMALL_VALUE = 1 << 16

_SPACES = ("device", "constant")


class _Env:
    """A Metal function's buffers: its `device`/`constant` pointer and array parameters, and the pointers
    declared into them (`constant float* row = in + offset;`)."""

    def __init__(self, fm):
        fn = fm.fn
        self.buffers: set[str] = {p.name for p in fn.params if p.name and p.space in _SPACES and ("*" in p.type or "[" in p.type)}
        for d in fn.decls:
            if d.pointer and d.init is not None and d.init.tree is not None and identifiers(d.init.tree) & self.buffers:
                self.buffers.add(d.name)


def _cls(n, stmt: int, fm, env: _Env):
    """W64 / W32 / CONST for an integer expression, None when its type is not known (template types)."""
    n = strip_parens(n)
    r = fm.range(n, stmt)
    if r.lo is not None and r.lo == r.hi:
        return CONST  # a literal, `constexpr`/`const` value, template constant
    t = fm.type_of(n, stmt)
    if r.bounded and max(abs(r.lo), abs(r.hi)) <= _SMALL_VALUE and r != fm.type_range(t):
        return CONST  # a value known small (`c ? 1 : 2`, `x & 31`, `i % 8`, a loop counter below `ndim`), like a literal factor
    if n.kind == "id":
        sym = fm.scope.lookup(n.op, stmt)
        if sym is not None and sym.template:
            return CONST  # a non-type template parameter
    if t.kind == "vector" and t.elem is not None:
        t = t.elem
    if not t.is_int:
        return None
    return W64 if t.bits >= 64 else W32


def narrow_products(node, stmt: int, fm, env: _Env) -> list:
    """The run-time 32-bit products inside ``node`` that can wrap (expression nodes)."""
    out = []
    for n in walk(node):
        if n.kind != "binary" or n.op != "*":
            continue
        left, right = n.kids
        if _cls(left, stmt, fm, env) != W32 or _cls(right, stmt, fm, env) != W32:
            continue
        t = fm.type_of(n, stmt)
        if not t.is_int or t.bits >= 64:
            continue
        raw = R.mul(fm.range(left, stmt), fm.range(right, stmt))
        if raw.within(t.min(), t.max()):
            continue  # both factors are small enough (masks, `%`, guarded values): no wrap
        out.append(n)
    return out


def runtime_product(node, stmt: int, fm, env: _Env) -> str | None:
    """A product of two run-time (non-constant) integers anywhere in ``node``, 64-bit ones included."""
    for n in walk(node):
        if n.kind == "binary" and n.op == "*":
            if _cls(n.kids[0], stmt, fm, env) in (W32, W64) and _cls(n.kids[1], stmt, fm, env) in (W32, W64):
                return n.text
    return None


class NarrowOffsetArithmetic(Rule):
    code = "MTL204"
    name = "narrow-offset-arithmetic"
    severity = Severity.WARNING
    scope = "metal"
    default_enabled = False  # 32-bit indexing is PyTorch's design where the host splits: see the docs
    summary = "uint/int arithmetic (products of sizes, strides or indices) forming a buffer index or offset"
    guide = "Working with Large Tensors"

    def check(self, ctx):
        model = semantic_model(ctx.project)
        seen: set[tuple[str, int]] = set()
        graph = ctx.graph
        # with the MPS operation sources in the run (as the DSP rules ask before reasoning about absence), a finding
        # needs a visible launch that nothing bounds; Metal (or headers) linted without them: every product
        calls = MetalCallIndex(ctx.project.all_metal(), ctx.text) if operation_sources(ctx.project) else None
        verdicts: dict[frozenset, str | None] = {}
        hosts = ctx.project.hosts
        sites, registered, escaping = hf.call_sites(hosts), hf.registered_functions(hosts), hf.escaping_functions(hosts)

        def dead(attrs) -> bool:
            fn = attrs.get("function")
            return fn is not None and hf.is_dead(fn, attrs.get("path"), sites, registered, escaping)

        # what the launching hosts bind to each kernel's parameters (item: judge a kernel by its launches)
        bound = launch_param_ranges(graph, model, hosts) if calls is not None else {}
        kernel_fns = {id(k.function) for lst in ctx.project.metals.values() for m in lst for k in m.kernels}

        def entry(fn) -> dict | None:
            """The parameter ranges every live launch of kernel ``fn`` gives it (joined), or None."""
            if calls is None or id(fn) not in kernel_fns:
                return None
            impls = [i for i in launchers(graph, frozenset(calls.ops_reaching(fn.name))) if not dead(graph.attrs(i))]
            per = [bound.get(i, {}).get(id(fn)) for i in impls]
            if not per or any(p is None for p in per):
                return None
            names = set.intersection(*(set(p) for p in per))
            out = {}
            for name in sorted(names):
                iv = per[0][name]
                for p in per[1:]:
                    iv = iv.join(p[name])
                out[name] = iv
            return out or None

        for src in metal_sources(ctx):
            for fn in src.facts.functions:
                if fn.body_span is None:
                    continue
                fm = model.function(fn, src.facts, params=entry(fn))
                found = list(self._function(ctx, src.path, fm, _Env(fm), seen))
                if not found:
                    continue
                if calls is None:
                    note = "no MPS operation source was linted with this file to show a bound"
                else:
                    mops = frozenset(calls.ops_reaching(fn.name))
                    if launched_elsewhere(graph, mops, src.path):
                        continue  # every launcher compiles its own embedded copy of the kernel, not this file's
                    if mops not in verdicts:
                        verdicts[mops] = _unbounded_launch(graph, model, hosts, mops, dead)
                    note = verdicts[mops]
                    if note is None:  # not launched from the linted host code, or every launch is bounded
                        continue
                for span, what, how in found:
                    yield self._finding(ctx, src.path, span, what, how, note)

    def _function(self, ctx, path, fm, env: _Env, seen):
        fn = fm.fn
        # names used to index buffers (or offset buffer pointers)
        index_uses: set[str] = set()
        for sub in fn.subscripts:
            if sub.array in env.buffers and sub.index.tree is not None:
                index_uses |= identifiers(sub.index.tree)
        for d in fn.decls:
            if d.pointer and d.init is not None and d.init.tree is not None and _offsets_buffer(d.init.tree, env):
                index_uses |= identifiers(d.init.tree)
        # 1. products inside buffer subscripts (one finding per statement: `float4(y[a * s], y[(a + 1) * s], ...)`)
        # and one per product in a function: `x[(base + i) * sa]` in every loop of a kernel is one problem)
        stmts_done: set[int] = set()
        products_done: set[str] = set()
        for sub in fn.subscripts:
            if sub.array not in env.buffers or (sub.stmt >= 0 and sub.stmt in stmts_done):
                continue
            narrow = narrow_products(sub.index.tree, sub.stmt, fm, env) if sub.index.tree is not None else []
            narrow = [n for n in narrow if n.key() not in products_done]
            if narrow and (path, sub.index.span.start) not in seen:
                seen.add((path, sub.index.span.start))
                stmts_done.add(sub.stmt)
                products_done.update(n.key() for n in narrow)
                yield (sub.index.span, f"`{narrow[0].text}` is a 32-bit product inside the index of `{sub.array}[...]`",
                                    "compute the offset in `long` (cast one operand: `long(a) * b`)")
        # 2. pointer offsets: T* p = buf + a * b
        for d in fn.decls:
            if not d.pointer or d.init is None or d.init.tree is None or not identifiers(d.init.tree) & env.buffers:
                continue
            narrow = narrow_products(d.init.tree, d.stmt, fm, env)
            narrow = [n for n in narrow if n.key() not in products_done]
            if narrow and (path, d.init.span.start) not in seen:
                seen.add((path, d.init.span.start))
                products_done.update(n.key() for n in narrow)
                yield (d.init.span, f"`{narrow[0].text}` is a 32-bit product in the pointer offset of `{d.name}`",
                                    "compute the offset in `long` (cast one operand: `long(a) * b`)")
        # 3. 32-bit locals computed from products, used to index a buffer
        for d in fn.decls:
            if d.array or d.init is None or d.init.tree is None or d.name not in index_uses or not _is_32bit_local(fm, d.name, d.stmt):
                continue
            narrow = narrow_products(d.init.tree, d.stmt, fm, env)
            product = narrow[0].text if narrow else runtime_product(d.init.tree, d.stmt, fm, env)
            if product is None or (path, d.init.span.start) in seen:
                continue
            seen.add((path, d.init.span.start))
            base = fm.scope.lookup(d.name, d.stmt).type
            what = (f"`{d.name}` is a 32-bit `{base}` computed from the 32-bit product `{product}`" if narrow else
                    f"the 64-bit product `{product}` is narrowed into the 32-bit `{base} {d.name}`")
            yield (d.init.span, what + " and then indexes a buffer", f"declare `{d.name}` as `long`")
        # 4. offset += a * b into a 32-bit local
        for a in fn.assigns:
            if a.op not in ("+=", "-=", "*=", "=") or a.lhs not in index_uses or a.rhs.tree is None or not _is_32bit_local(fm, a.lhs, a.stmt):
                continue
            narrow = narrow_products(a.rhs.tree, a.stmt, fm, env)
            product = narrow[0].text if narrow else runtime_product(a.rhs.tree, a.stmt, fm, env)
            if product is None or (path, a.rhs.span.start) in seen:
                continue
            seen.add((path, a.rhs.span.start))
            yield (a.rhs.span, f"`{a.lhs} {a.op} ...` accumulates the product `{product}` in a 32-bit "
                                f"`{a.lhs}` that indexes a buffer", f"declare `{a.lhs}` as `long`")

    def _finding(self, ctx, path, span, what, how, note):
        return ctx.finding(
            self,
            path,
            span,
            f"{what}; it wraps past 2^32 elements (2^31 for `int`) on large tensors or strides ({note}). "
            f"{how[0].upper() + how[1:]}.",
        )


def _unbounded_launch(graph, model, hosts, mops, dead=lambda a: False) -> str | None:
    """Why a launch of these kernels is unbounded (names the host function), or None when none is. A launcher
    that is dead code (a `static` function nothing calls) launches nothing."""
    for impl in launchers(graph, mops):
        if dead(graph.attrs(impl)):
            continue
        if index_range_evidence(graph, model, hosts, impl) is None:
            a = graph.attrs(impl)
            return (f"launched from `{a.get('name')}` in {a.get('path')}, which neither splits the launch with "
                    "`with_32bit_indexing()` nor compares the sizes with a 32-bit limit")
    return None


def _offsets_buffer(node, env: _Env) -> bool:
    """``node`` is a buffer plus an offset (`in + row * stride`)."""
    return any(n.kind == "binary" and n.op in ("+", "-") and any(strip_parens(k).kind == "id" and strip_parens(k).op in env.buffers for k in n.kids)
               for n in walk(node))


def _is_32bit_local(fm, name: str, stmt: int) -> bool:
    """A local or parameter whose declared (or deduced) type is a 32-bit-or-narrower integer."""
    sym = fm.scope.lookup(name, stmt)
    if sym is None or sym.type.kind == "container":
        return False
    t = fm.name_type(name, max(stmt, sym.stmt))
    if t.kind == "vector" and t.elem is not None:
        t = t.elem
    return t.is_int and t.kind == "int" and t.bits <= 32
