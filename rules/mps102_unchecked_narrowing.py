"""
## What it does
Flags an int64 size, `numel()`, stride or storage offset narrowed to 32 bits — by `static_cast`, a
C-style or functional cast, or implicitly (`uint32_t n = t.numel();`, an element of a `uint32_t`
array, a `uint32_t` field of a parameter struct, an argument to a helper's `uint32_t` parameter, a
`return` from a function declared to return `uint32_t`) — with no `c10::checked_convert`, `safe_downcast`
or dominating guard on that same value.

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
`c10::checked_convert<uint32_t>(x, "uint32_t")`. Inside a plain `dispatch_sync(queue, ^{...})` block a failing
check cannot throw out of the block (the process terminates): there the message says to convert or check
before the block (or to use `dispatch_sync_with_rethrow`, MPS107), and no automatic fix is offered.

The rule asks the semantic model (`mpslint/semantic/`): the narrowed value's type must be a 64-bit integer
(an `int` ternary of literals is not), it must come from a tensor's or iterator's sizes (through locals and
aliases: `auto n = t.numel(); ... uint32_t(n)`), and its range must not fit the target type. Ranges come
from constants (`const uint k = 4;`, `constexpr` limits), `std::min`, `%`, masks and shifts, and from the
checks that dominate the narrowing: `TORCH_CHECK`, `if (...) return/throw`, the branch of an `if`,
`can_use_32bit_indexing()`, `canUse32BitIndexMath(t)`, boolean helpers (`TORCH_CHECK(fits(n))` with
`bool fits(int64_t n) { return n <= kMax; }`) and validating void helpers (`check_int32(c * kh * kw, "...")`
with `void check_int32(int64_t n, const char*) { TORCH_CHECK(n <= kMax, ...); }`). A check bounds only the value it compares: bounding `rows`
does not bound `rows * cols`, `A || B` proves only what both arms prove. A bound on a product of sizes
bounds each factor (`n * D <= INT32_MAX` bounds `D`). Dimension counts (`t.dim()`, `t.sizes().size()`,
`iter.ndim()`) are at most 64 and never flagged.

A local that nothing reads after its declaration (`uint B = q.size(0) * q.size(1);` left over from an older
launch) is not reported: no wrapped value is ever used, and the patch a maintainer merges is deleting it, which
the compiler's unused-variable warning already asks for.

**Bounds the callers establish.** In a `static` function whose every call site is in its file, a value made of
its parameters (`q.size(2)`, `q.numel()`) is judged at each call too: `if (query.size(2) <= 8) small_path(q_contig)`
bounds `small_path`'s `q.size(2)` when the argument has the shape of `query` (a local copy, `contiguous()`,
`clone()`, `to(...)`, or a `?:` of those). Every call must bound it; one caller up (a caller's own callers are not
followed for this).

**Flag parameters.** A helper that bounds a value unless its caller sets a `bool` parameter
(`TORCH_CHECK(use_64bit_index || iter.can_use_32bit_indexing(), ...)`) is judged as its callers enter it: when
every call in view passes the same literal (an omitted argument passes its default, from the definition or a
prototype such as `bool use_64bit_index = false` in a header), the check is read with that value. A helper
nothing in view calls is entered with each flag at its default, `false` when it has none: the mode no code in
the tree asks for. Entry points (dispatched from `native_functions.yaml`, registered on a stub, bound with
`m.def`/`m.impl`) are entered with any flag.

**More memory than any Mac has.** A value computed from one size of the last two dimensions of a matrix the core
caller makes square (`cholesky_stub`: `linalg_cholesky_ex` checks `squareCheckInputs(A)`; the table is
`mpslint/semantic/core_callers.py`) is not reported when it passes the 32-bit limit only once that `N x N` matrix
holds more elements than a Mac has bytes (512 GB): `nPairs = nBlocks * (nBlocks + 1) / 2` with
`nBlocks = ceil(N / 32)` wraps at N = 2,965,825. The model evaluates the value with the size held at the largest
`N` whose square fits in that memory (741,455; `FunctionModel.range_at_size`): if it fits there, it wraps only
for a matrix no Mac can hold. `N * N` is still reported (it wraps at N = 65536: 16 GB of
floats), and so is anything that also reads a batch size.

A dimension computed from the sizes of tensors that a dominating check keeps addressable in 32 bits
(`canUse32BitIndexMath(input)`, `input.numel() <= INT32_MAX`) is not reported: each of those sizes fits, and
so does what the op derives from them in practice (an output width from an input width). Linear extents
get no such allowance.

**Sizes boxed into an NSNumber.** `[NSNumber numberWithInt:sizes[i]]` narrows an int64 size to the selector's
`int` parameter (likewise `numberWithUnsignedInt:`, `numberWithShort:`, `numberWithUnsignedShort:`): the MPSGraph
shape or MPSNDArray descriptor built from it describes a wrapped tensor. Here one dimension is reported by default
too (an element of an `IntArrayRef`, `t.size(d)`, through locals): no 32-bit index check bounds an MPSGraph shape,
a 1-D tensor's one size is its whole extent, and the fix costs nothing. The automatic fix (safe) switches to the
64-bit selector, `numberWithInteger:` / `numberWithUnsignedInteger:`; `@(value)` boxes an `int64_t` as 64-bit too.
An axis (`numberWithInt:dim`) is not a size and is not reported.

**Implicit narrowings at a boundary.** The target type may be declared away from the narrowing:
`params.numel = t.numel();` into a struct's `uint32_t` field (the field's type from the struct's definition in
the run or in the kernel headers), `bind_count(enc, t.numel())` into `void bind_count(..., uint32_t count)` (or
a `const uint32_t&`), `return t.numel();` from `static uint32_t element_count(...)`. Such a narrowing has no cast
to show it, so a reader sees none. A call is judged only when one function in the file (else in the run) can
take it by name and arity: not a template (it deduces `int64_t`), not overloads that disagree on the parameter,
not a pointer or non-`const` reference parameter (it would not compile). A `return` inside a block or lambda
returns from that, not from the function.

**Severity.** A linear extent (a numel, a product of sizes, a byte count or offset) narrowed unchecked is an
error; one dimension's size or stride is a warning: the message says which.

**Products of narrowed sizes.** `int M = x.size(-2); int K = x.size(-1); ... x.numel() / (M * K)` multiplies two
sizes already narrowed to `int` in `int` arithmetic: past 2^31 the product wraps (undefined behaviour), however
each factor was checked, and a long prefill reaches it (131,072 tokens x 16,384). The product is reported (an
error) unless the factors' ranges keep it in range; the fix is to multiply in 64 bits (`int64_t(M) * K`).
Unsigned products (`uint B = batch * heads`) are not reported yet: they wrap only past 2^32, which for leading
dimensions needs more memory than any Mac once the other dimensions are counted, and the model cannot yet take
the other dimensions' lower bounds from the callers' checks.

## Settings
By default the rule reports **linear extents only**, in PyTorch's code and in extensions alike. One dimension
narrowed to 32 bits wraps only when that single dimension passes 2^31 (2^32 unsigned). In PyTorch's op code the
callers, `TensorIterator` and the dispatch paths bound most shapes first, and about half of those findings
needed more memory than any Mac has once the other dimensions are counted, or a view nobody builds. In
extension code the readers split: on five repositories a first reader took a GEMM's `M`, `K`, `N` narrowed to
`uint32_t` as real (9 of 9); on huggingface/kernels-community's 42 Metal files an independent reader judged 52
of 52 such findings (head sizes, hidden sizes, token counts, row strides) debatable, shapes no model produces.
One dimension scaled by an integer argument of the op (`dilation_h * (kernel_h - 1) + 1`, a window's
`stride * size(2)`) is still one dimension, not a product of sizes (torchvision's `deform_conv2d`). So
dimensions are opt-in everywhere:

```toml
[tool.mpslint.rules.MPS102]
narrowed-dimensions = true          # everywhere (severity warning)
# narrowed-dimensions = "extension" # in extension code only
# narrowed-dimensions = false       # the default: linear extents only
```

Measured (strict count: a finding is true when a maintainer would merge its patch). PyTorch's tree, 47 files
(`docs/real-world.md`): linear extents 6 true / 0 false / 0 debatable in the seventh run; one dimension's size or
stride 60 / 3 / 40 in the third run. Extension code (`docs/extensions-triage.md`): kernels-community's linear
extents 3 true / 0 false / 11 debatable.

Guide: *Working with Large Tensors* — "Use a checked cast when narrowing".
"""

from __future__ import annotations

import math

from mpslint.fixedits import include_edit
from mpslint.semantic import hostflow as hf
from mpslint.semantic.core_callers import square_inputs
from mpslint.model import Fix, Severity
from mpslint.rule import Rule, Setting
from mpslint.semantic.expressions import identifiers, strip_parens, walk
from mpslint.semantic import ranges as R
from mpslint.semantic.model import CHECKED, semantic_model
from mpslint.semantic.types import fits

_FIXABLE = ("uint32_t", "int32_t", "int", "uint16_t", "int16_t")

# NSNumber's boxing selectors that take a 32- or 16-bit parameter, and the 64-bit selector to use instead
# (NSInteger and NSUInteger are 64-bit on every Mac PyTorch supports).
_BOXING = {
    "numberWithInt": ("int", "numberWithInteger"),
    "numberWithUnsignedInt": ("unsigned int", "numberWithUnsignedInteger"),
    "numberWithShort": ("short", "numberWithInteger"),
    "numberWithUnsignedShort": ("unsigned short", "numberWithUnsignedInteger"),
}


def _size_list_element(fm, node, stmt) -> bool:
    """An element of a size list: ``sizes[i]`` of an ``IntArrayRef`` (a shape helper's parameter, a local
    ``auto sizes = t.sizes()``), directly or through the locals it was copied to."""
    o, at = fm.origin(strip_parens(node), stmt)
    o = strip_parens(o)
    if o.kind == "cond":
        return any(_size_list_element(fm, k, at) for k in o.kids[1:])
    if o.kind != "index":
        return False
    base = fm.type_of(o.kids[0], at)
    return base.kind == "container" and base.name in ("IntArrayRef", "SymIntArrayRef", "DimVector")


def _limit(t) -> str:
    """Where a value narrowed to ``t`` starts to wrap."""
    return f"2^{t.bits - 1}" if t.signed and t.kind == "int" else f"2^{t.bits}"


class UncheckedNarrowing(Rule):
    code = "MPS102"
    name = "unchecked-narrowing"
    severity = Severity.ERROR
    scope = "host"
    summary = "int64 size/numel/stride/offset narrowed to 32 bits without a checked conversion or guard"
    fixable = "safe"
    guide = "Working with Large Tensors"
    settings = {
        "narrowed-dimensions": Setting(
            False,
            "report one dimension's size or stride narrowed to 32 bits (warnings): true, false, or \"extension\" "
            "(only in extension code, where no PyTorch machinery bounds the shapes)",
            choices=("extension", True, False),
        ),
    }

    def check(self, ctx):
        hosts = ctx.project.hosts
        model = semantic_model(ctx.project)
        sub_callees = hf.subiter_callees(hosts)
        sites = hf.call_sites(hosts)
        registered = hf.registered_functions(hosts)
        escaping = hf.escaping_functions(hosts)
        stubs_of = hf.registered_stubs(hosts)
        # operators native_functions.yaml dispatches to: entry points, entered with any flag
        entries = registered | ctx.graph.dispatched_functions()
        for path in sorted(hosts):
            facts = hosts[path]
            has_include = any(i.header == "c10/util/TypeCast.h" for i in facts.includes)
            for fn in facts.functions:
                if hf.is_dead(fn, path, sites, registered, escaping):
                    continue  # a static function nothing calls: dead code, nothing to fix
                callers = _Callers(model, hosts, sites, registered, escaping, path)
                # a helper's flag parameters as its callers set them: `TORCH_CHECK(use_64bit_index ||
                # iter.can_use_32bit_indexing())` bounds `iter.numel()` where every call leaves the flag false
                flags = hf.flag_arguments(fn, path, sites, entries, escaping, hosts)
                fm = model.as_called(fn, facts, flags)
                # matrices the core caller makes square (`cholesky_stub`): a size of their last two dimensions
                # comes with its square's worth of elements
                square = {fn.params[i].name for i in square_inputs(stubs_of.get(hf.short_name(fn.name), set())) if i < len(fn.params)}
                yield from self._check_fn(ctx, path, fm, fn.name in sub_callees, has_include, facts.includes, callers, square)

    def _implicit_at_boundaries(self, ctx, path, fm, problem, message_tail, severity):
        """Implicit narrowings whose target type is declared in another function: an argument passed to a narrower
        parameter of a function in the run (`launch_rows(enc, t.numel())` with `int rows`), and a value returned
        from a function declared to return a narrower type (`int count(const Tensor& t) { return t.numel(); }`).
        Struct fields (`params.numel = t.numel();`) are judged with the other assignments."""
        fn = fm.fn
        by_name = hf.functions_named(ctx.project.hosts)
        for call in fn.calls:
            if call.message_send or call.receiver or call.stmt < 0 or call.name not in by_name:
                continue
            for i, arg in enumerate(call.args):
                if arg.tree is None or strip_parens(arg.tree).kind == "cast":
                    continue
                ptext = _callee_param_type(fm, call, i, by_name, path)
                target = fm.scope.type_of_text(ptext) if ptext else None
                if target is None or not target.is_int or target.kind == "bool":
                    continue
                got = problem(arg.tree, call.stmt, target)
                if got is None:
                    continue
                extent, miss = got
                base = ptext.replace("const ", "").replace("&", "").strip()
                yield ctx.finding(
                    self,
                    path,
                    arg.span,
                    f"`{arg.text}` (int64) is passed to `{call.name}`, whose parameter {i + 1} is `{ptext}`: implicit narrowing wraps "
                    f'past {_limit(target)}. Use `c10::checked_convert<{base}>({arg.text}, "{base}")` or widen the parameter.'
                    + message_tail(extent, miss, arg.text, call.stmt),
                    severity=severity(extent),
                )
        ret = fm.scope.type_of_text(fn.return_type) if fn.return_type else None
        if ret is None or not ret.is_int or ret.kind == "bool" or ret.bits >= 64:
            return
        for i, st in enumerate(fn.stmts):
            if st.kind != "return_statement" or st.tree is None or st.blocks or strip_parens(st.tree).kind == "cast":
                continue
            got = problem(st.tree, i, ret)
            if got is None:
                continue
            extent, miss = got
            yield ctx.finding(
                self,
                path,
                st.span,
                f"`{hf.short_name(fn.name)}` returns `{fn.return_type.strip()}`, but `{st.tree.text}` (int64) is returned: implicit "
                f"narrowing wraps past {_limit(ret)}. Return `int64_t`, or use "
                f'`c10::checked_convert<{ret}>({st.tree.text}, "{ret}")`.' + message_tail(extent, miss, st.tree.text, i),
                severity=severity(extent),
            )

    def _member_assign(self, ctx, path, fm, a, problem, message_tail, severity):
        """`params.numel = t.numel();`: an int64 into a struct's narrower field (the field's type from the struct)."""
        fn = fm.fn
        root = fn.stmts[a.stmt].tree if 0 <= a.stmt < len(fn.stmts) else None
        node = next((n for n in walk(root) if n.kind == "assign" and n.start == a.span.start), None) if root is not None else None
        lhs = strip_parens(node.kids[0]) if node is not None and node.kids else None
        if lhs is None or lhs.kind != "member" or strip_parens(a.rhs.tree).kind == "cast":
            return
        target = fm.type_of(lhs, a.stmt)
        got = problem(a.rhs.tree, a.stmt, target) if target.is_int else None
        if got is None:
            return
        extent, miss = got
        yield ctx.finding(
            self,
            path,
            a.span,
            f"`{a.lhs}` is `{target}` but assigned `{a.rhs.text}` (int64): implicit narrowing wraps past {_limit(target)}. "
            f'Use `c10::checked_convert<{target}>({a.rhs.text}, "{target}")`.' + message_tail(extent, miss, a.rhs.text, a.stmt),
            severity=severity(extent),
        )

    @staticmethod
    def _every_use_bounded(fm, d, declared) -> bool:
        """Each later read of the narrowed local ``d`` is dominated by a check that proves its source fits
        (`uint32_t n = t.numel(); TORCH_CHECK(t.numel() <= UINT32_MAX); launch(n)`): the wrapped value is never used."""
        src = d.init.tree
        uses = [i for i, s in enumerate(fm.fn.stmts) if i > d.stmt and s.tree is not None and d.name in identifiers(s.tree)]
        uses += [c.stmt for c in fm.fn.calls if c.stmt > d.stmt and c.tree is not None and d.name in identifiers(c.tree)]
        if not uses:
            return False
        for u in set(uses):
            r = fm.range(src, u) if fm.key(src, u) in fm.bounds(u) or _sized(fm, src, u) else None
            if r is None or r.lo is None or r.hi is None or not fits(r.lo, r.hi, declared):
                return False
        return True

    def _check_fn(self, ctx, path, fm, is_subiter_callee, has_include, includes=(), callers=None, square=frozenset()):
        fn = fm.fn
        iters = set(hf.iter_params(fn))
        loops = hf.subiter_loops(fn)
        for var, _it in loops.values():
            iters.add(var)
        iter_safe = hf.splits(fn) or is_subiter_callee
        wanted = ctx.setting(self, "narrowed-dimensions")
        dimensions = wanted is True or (wanted == "extension" and ctx.file_context(path) == "extension")

        def problem(node, stmt, target, boxed=False):
            """Why narrowing ``node`` to ``target`` at ``stmt`` may wrap: (extent, near-miss check) or None.
            ``boxed``: the value is boxed into an NSNumber for an MPSGraph shape, where one dimension is
            reported too (no 32-bit index check bounds a shape; the 64-bit selector costs nothing)."""
            n = strip_parens(node)
            if any(x.kind in ("call", "cast") and x.op in CHECKED for x in walk(n)):
                return None
            src = fm.type_of(n, stmt)
            if not src.is_int or src.bits < 64 or not target.is_int or target.bits >= 64:
                return None
            extent = fm.extent(n, stmt)
            if boxed and extent is None and _size_list_element(fm, n, stmt):
                extent = "dim"
            if extent is None or (extent != "linear" and not (dimensions or boxed)):
                return None
            o, at = fm.origin(n, stmt)
            recv = strip_parens(o).receiver if o.kind == "call" else None
            if recv is not None and recv.kind == "id" and recv.op in iters and (iter_safe or hf.in_loop(fn, stmt, loops)):
                return None
            r = fm.range(n, stmt)
            if fits(r.lo if r.lo is not None else -(1 << 70), r.hi if r.hi is not None else 1 << 70, target):
                return None
            if extent == "dim" and any(fm.tensor_bounded(t, stmt, kind == "stride") for t, kind in fm.sized_from(n, stmt)):
                return None  # a dimension computed from tensors a check keeps addressable in 32 bits
            if callers is not None and callers.bound(fm, n, stmt, target):
                return None  # every caller bounds what it passes: `if (q.size(2) <= 8) small_path(q)`
            if square and _needs_more_than_memory(fm, n, stmt, target, square):
                return None  # wraps only for a square matrix larger than any Mac's memory
            return extent, fm.near_miss(n, stmt)

        def in_plain_dispatch_sync(stmt):
            """The statement runs inside a `dispatch_sync(queue, ^{...})` block: a throwing check there cannot
            leave the block (the process terminates), so the conversion belongs before it."""
            return 0 <= stmt < len(fn.stmts) and "dispatch_sync" in fn.stmts[stmt].blocks

        def message_tail(extent, miss, shown, stmt=-1):
            what = "a linear extent (numel, product of sizes, bytes or offset)" if extent == "linear" else "one dimension's size or stride"
            tail = f" It is {what}."
            if miss is not None:
                tail += f" The check at line {miss.line} does not bound `{shown}`."
            if in_plain_dispatch_sync(stmt):
                tail += (" It sits inside a plain `dispatch_sync` block, where a failing check cannot throw out (the"
                         " process terminates): convert or check before the block, or make it `dispatch_sync_with_rethrow` (MPS107).")
            return tail

        def severity(extent):
            return Severity.ERROR if extent == "linear" else Severity.WARNING

        for cast in fn.casts:
            if cast.kind not in ("static_cast", "c_style", "functional") or cast.operand.tree is None:
                continue
            typ = cast.type.strip()
            target = fm.scope.type_of_text(typ)
            got = problem(cast.operand.tree, cast.stmt, target)
            if got is None:
                continue
            extent, miss = got
            fix = None
            if cast.kind == "static_cast" and typ in _FIXABLE and not in_plain_dispatch_sync(cast.stmt):
                src = ctx.source(path, cast.operand.span)
                edits = [ctx.edit(path, cast.span.start, cast.span.end, f'c10::checked_convert<{typ}>({src}, "{typ}")')]
                if not has_include and includes:
                    # at file scope: not after the `*_metallib.h` include that PyTorch's op files keep inside the
                    # namespace under `#ifndef PYTORCH_JIT_COMPILE_SHADERS`
                    edits.append(include_edit(ctx, path, includes, "c10/util/TypeCast.h"))
                fix = Fix(f"Use `c10::checked_convert<{typ}>`", tuple(edits), "safe")
            yield ctx.finding(
                self,
                path,
                cast.span,
                f"`{cast.operand.text}` (int64) is narrowed to `{typ}` unchecked; past {_limit(target)} it wraps silently. "
                f'Use `c10::checked_convert<{typ}>({cast.operand.text}, "{typ}")` or guard it with `TORCH_CHECK`.'
                + message_tail(extent, miss, cast.operand.text, cast.stmt),
                fix=fix,
                severity=severity(extent),
            )
        for call in fn.calls:
            boxing = _BOXING.get(call.name)
            if boxing is None or not call.message_send or len(call.args) != 1 or call.args[0].tree is None:
                continue
            if strip_parens(call.args[0].tree).kind == "cast":
                continue  # an explicit cast is reported itself
            param, wide = boxing
            got = problem(call.args[0].tree, call.stmt, fm.scope.type_of_text(param), boxed=True)
            if got is None:
                continue
            extent, miss = got
            text = ctx.source(path, call.span)
            at = text.find(call.name + ":")
            fix = None
            if at >= 0:
                start = call.span.start + at
                fix = Fix(f"Use `{wide}:`", (ctx.edit(path, start, start + len(call.name), wide),), "safe")
            yield ctx.finding(
                self,
                path,
                call.span,
                f"`{call.args[0].text}` (int64) is boxed with `{call.name}:`, whose parameter is `{param}`: past "
                f"{_limit(fm.scope.type_of_text(param))} the NSNumber holds a wrapped value. Use `{wide}:` (64-bit) or `@({call.args[0].text})`."
                + message_tail(extent, miss, call.args[0].text, call.stmt),
                fix=fix,
                severity=severity(extent),
            )
        for d in fn.decls:
            if d.init is None or d.init.tree is None:
                continue
            declared = fm.scope.type_of_text(d.type)
            init = d.init.tree
            if d.array or declared.kind == "container":
                elem = declared.elem if declared.kind == "container" and declared.elem is not None else declared
                if d.array and declared.kind == "container":
                    elem = declared.elem
                if elem is None or not elem.is_int or init.kind != "init":
                    continue
                bad = []
                for item in init.kids:
                    if strip_parens(item).kind == "cast":
                        continue  # an explicit cast is reported itself
                    got = problem(item, d.stmt, elem)
                    if got is not None:
                        bad.append((item, got))
                if bad:
                    item, (extent, miss) = bad[0]
                    yield ctx.finding(
                        self,
                        path,
                        d.init.span,
                        f"`{item.text}` (int64) is stored in a 32-bit array `{d.name}` unchecked; use "
                        f"`c10::checked_convert<{elem}>` for each element or guard the sizes." + message_tail(extent, miss, item.text, d.stmt),
                        severity=severity(extent),
                    )
                continue
            if strip_parens(init).kind == "cast" or not declared.is_int:
                continue  # the explicit cast is reported itself
            got = problem(init, d.stmt, declared)
            if got is None or not fm.read_after(d.name, d.stmt) or self._every_use_bounded(fm, d, declared):
                continue  # unchecked, but never read (a dead local: nothing wraps) or read only where it fits
            extent, miss = got
            short = d.type.split()[-1]
            yield ctx.finding(
                self,
                path,
                d.span,
                f"`{d.name}` is `{d.type.strip()}` but initialised from `{d.init.text}` (int64): implicit narrowing wraps past {_limit(declared)}. "
                f'Use `c10::checked_convert<{short}>({d.init.text}, "{short}")`.' + message_tail(extent, miss, d.init.text, d.stmt),
                severity=severity(extent),
            )
        yield from _narrow_products(ctx, self, path, fm)
        yield from self._implicit_at_boundaries(ctx, path, fm, problem, message_tail, severity)
        # the subscript each `array[i] = value` assigns to, by its statement and start
        subscript_at = {(sub.stmt, sub.span.start): sub.tree for sub in fn.subscripts if sub.tree is not None}
        for a in fn.assigns:
            if a.op != "=" or a.rhs.tree is None:
                continue
            if a.lhs.isidentifier():
                sym = fm.scope.lookup(a.lhs, a.stmt)
                if sym is None or not sym.type.is_int or sym.type.bits >= 64 or strip_parens(a.rhs.tree).kind == "cast":
                    continue
                got = problem(a.rhs.tree, a.stmt, sym.type)
                if got is None:
                    continue
                extent, miss = got
                yield ctx.finding(
                    self,
                    path,
                    a.span,
                    f"`{a.lhs}` is `{sym.type_text.strip()}` but assigned `{a.rhs.text}` (int64): implicit narrowing wraps "
                    f"past {_limit(sym.type)}. Use `c10::checked_convert<{sym.type}>({a.rhs.text}, \"{sym.type}\")`."
                    + message_tail(extent, miss, a.rhs.text, a.stmt),
                    severity=severity(extent),
                )
                continue
            lhs = subscript_at.get((a.stmt, a.span.start))
            if lhs is None:
                yield from self._member_assign(ctx, path, fm, a, problem, message_tail, severity)
                continue
            target = fm.type_of(lhs, a.stmt)
            base = strip_parens(lhs.kids[0])
            if base.kind != "id" or strip_parens(a.rhs.tree).kind == "cast":
                continue
            got = problem(a.rhs.tree, a.stmt, target)
            if got is None:
                continue
            extent, miss = got
            yield ctx.finding(
                self,
                path,
                a.span,
                f"`{a.rhs.text}` (int64) is stored into the 32-bit array `{base.op}` unchecked; "
                f"use `c10::checked_convert` or guard the value with `TORCH_CHECK`." + message_tail(extent, miss, a.rhs.text, a.stmt),
                severity=severity(extent),
            )


def _callee_param_type(fm, call, index: int, by_name, path):
    """The declared type of the ``index``-th parameter of the one function ``call`` can reach by name (in its own
    file first, then in the run), or None: several candidates, a template, a variadic or a non-const reference."""
    cands = [(p, f) for p, f in by_name.get(call.name, ()) if not f.template_params and _arity_fits(f, len(call.args))]
    own = [c for c in cands if c[0] == path]
    cands = own or cands
    if len({f.params[index].type.strip() for _, f in cands}) != 1:
        return None
    ptext = cands[0][1].params[index].type.strip()
    if "*" in ptext or "..." in ptext or ("&" in ptext and not ptext.startswith("const ")):
        return None
    return ptext


def _arity_fits(f, n: int) -> bool:
    required = sum(1 for p in f.params if not p.default)
    return required <= n <= len(f.params) and not any("..." in p.type for p in f.params)


def _narrow_products(ctx, self, path, fm):
    """`M * K` of sizes already narrowed to signed 32 bits (`int M = x.size(-2);`), multiplied in `int`: a linear
    extent that wraps (undefined behaviour) however each factor was checked, unless their ranges keep the product
    in range."""
    fn = fm.fn
    trees = [(d.init.tree, d.stmt) for d in fn.decls if d.init is not None and d.init.tree is not None]
    trees += [(st.tree, k) for k, st in enumerate(fn.stmts) if st.tree is not None and st.kind not in ("if_statement", "for_statement", "while_statement", "switch_statement", "for_range_loop")]
    found = []
    for tree, stmt in trees:
        for n in walk(tree):
            if n.kind != "binary" or n.op != "*" or len(n.kids) != 2:
                continue
            t = fm.type_of(n, stmt)
            if not t.is_int or t.bits > 32 or t.kind == "bool" or not t.signed:
                # signed only: there the wrap is undefined behaviour. An unsigned product of narrowed sizes
                # (`uint B = batch * heads` in a grid) wraps only past 2^32, which for leading dimensions needs more
                # memory than any Mac once the other dimensions are counted, a bound the model cannot yet take from
                # the callers' checks
                continue
            if fm.extent(n, stmt) != "linear":
                continue
            kids = [strip_parens(k) for k in n.kids]
            sized = [bool(fm.sized_from(k, stmt)) for k in kids]
            if not any(sized):
                continue
            if any(not sz and k.kind not in ("int", "sizeof") and not fm.range(k, stmt).bounded for k, sz in zip(kids, sized)):
                continue  # a factor that is neither a tensor's size nor a known value (a kernel size from the user)
            a, b = (fm.range(k, stmt) for k in kids)
            prod = R.mul(a, b)
            if prod.lo is not None and prod.hi is not None and prod.lo >= t.min() and prod.hi <= t.max():
                continue
            found.append((n, stmt, t))
    found.sort(key=lambda x: (x[0].start, -(x[0].end - x[0].start)))
    out = []
    for n, stmt, t in found:
        if any(o.start <= n.start and n.end <= o.end for o, _, _ in out):
            continue  # inside a product already reported: one finding for `M * N * K`
        out.append((n, stmt, t))
    for n, stmt, t in out:
        a = strip_parens(n.kids[0])
        yield ctx.finding(
            self,
            path,
            ctx.span(path, n.start, n.end),
            f"`{n.text}` multiplies sizes narrowed to 32 bits in `{t.name or 'int'}` arithmetic: past {_limit(t)} the "
            f"product wraps (undefined behaviour) however each factor was checked. Compute it in "
            f"64 bits (`int64_t({a.text}) * ...`) or from the tensor's own sizes. It is a linear extent (numel, product "
            "of sizes, bytes or offset).",
            severity=Severity.ERROR,
        )


class _Callers:
    """Whether every caller of a function keeps a value of its parameters within a type, at the call."""

    def __init__(self, model, hosts, sites, registered, escaping, path):
        self.model, self.hosts, self.sites = model, hosts, sites
        self.registered, self.escaping, self.path = registered, escaping, path

    def bound(self, fm, node, stmt, target) -> bool:
        """``node`` (at ``stmt``) is made of ``fm``'s parameters only, ``fm`` is a ``static`` function whose every
        call site is visible, and at each call the caller's dominating checks keep the value within ``target``."""
        fn = fm.fn
        name = hf.short_name(fn.name)
        if fn.kind == "impl_func" or name in self.registered or name in self.escaping or not hf.is_static(fn):
            return False  # registered, handed out as a value or callable from another file: callers not all visible
        o, at = fm.origin(node, stmt)
        index = {p.name: i for i, p in enumerate(fn.params) if p.name}
        ids = identifiers(o)
        if not ids or not ids <= index.keys() or any(fm.defs.assigned(i) for i in ids):
            return False
        calls = hf.visible_sites(self.sites, fn, self.path)
        if not calls:
            return False
        for cpath, caller, call in calls:
            if any(index[i] >= len(call.args) or call.args[index[i]].tree is None for i in ids):
                return False
            cfm = self.model.function(caller, self.hosts.get(cpath))
            env = {i: (cfm, call.args[index[i]].tree, call.stmt) for i in ids}
            r = fm.bound_at_call(o, at, env, cfm, call.stmt)
            if r.lo is None or r.hi is None or not fits(r.lo, r.hi, target):
                return False
        return True


# the most unified memory a Mac ships with (Mac Studio, M3 Ultra: 512 GB), in bytes
MAX_DEVICE_BYTES = 512 << 30


def _needs_more_than_memory(fm, node, stmt, target, square) -> bool:
    """``node`` is computed from one size of the last two dimensions of a matrix the core caller makes square, and
    it passes ``target`` only once that size ``N`` makes the ``N x N`` matrix larger than any Mac's memory (at one
    byte an element). `nPairs = nBlocks * (nBlocks + 1) / 2` with `nBlocks = ceil(N / 32)` wraps at N = 3e6: 9e12
    elements; at N = 741455 (the largest square in 512 GB) it is 2.7e8."""
    keys = fm.size_keys(node, stmt)
    if not keys or len(keys) != 1:
        return False
    key = next(iter(keys))
    if key not in {f"{p}.size({d})" for p in square for d in ("-1", "-2")}:
        return False
    # the largest N whose N x N matrix fits in memory at one byte an element: if the value fits there, it wraps only
    # for a larger matrix
    r = fm.range_at_size(node, stmt, key, math.isqrt(MAX_DEVICE_BYTES))
    return r.hi is not None and r.hi <= target.max()


def _sized(fm, node, stmt) -> bool:
    """A dominating check bounds a tensor ``node`` is sized from (its numel, or its 32-bit index math)."""
    return any(fm.tensor_bounded(t, stmt, kind == "stride") for t, kind in fm.sized_from(node, stmt))
