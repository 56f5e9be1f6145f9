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
and thread-local arrays, products of small loop counters over dimensions (`d` in
`for (uint d = 0; d < ndim; ++d)`), and values whose type mpslint cannot see (template types such
as `index_t`, struct fields of unknown type). One finding per statement, and per product in a function.

**Judged by the host that launches the kernel.** When the run includes the MPS operation sources
(`native/mps/operations/*.mm`), a product
is reported only if a host function in the tree launches the kernel (directly, or through a device
helper the kernel calls) and neither it, the helpers it calls nor its callers (two calls either way)
keep the sizes in range: no `with_32bit_indexing()` split, no `can_use_32bit_indexing()` /
`canUse32BitIndexMath()` / `offsetsFitIn<uint32_t>()` test or index-width dispatch, no comparison of
a size with a 32-bit limit (`std::numeric_limits<int32_t>::max()`, `INT_MAX`, `UINT32_MAX`) or a named
limit (`kMaxFusedLossNumel`). The message names the unbounded launcher. Kernels that no host code in
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

## How to fix
Compute offsets in `long` (Metal's 64-bit integer): declare the offset `long`, pass sizes and
strides as `long`/`int64_t`, or cast one operand before multiplying (`long(i) * stride`). If the host
guarantees the range (a `TORCH_CHECK` on the sizes), say so with `// mpslint: ignore[MTL204]`.

Guide: *Working with Large Tensors* — "Most Metal kernels take `numel` as `uint32_t` and index in
32 bits, so anything past `INT32_MAX` needs host-side splitting".
"""

from __future__ import annotations

import re
from functools import lru_cache

from mpslint.model import Severity
from mpslint.parsing import parse
from mpslint.rule import Rule
from mpslint.families import operation_sources
from mpslint.launchflow import MetalCallIndex, index_range_evidence, launchers
from mpslint.metalflow import metal_sources

W32, W64, CONST = "w32", "w64", "const"

_T64 = {"long", "ulong", "int64_t", "uint64_t", "size_t", "ptrdiff_t", "intptr_t", "uintptr_t", "long long", "unsigned long"}
_T32 = {"int", "uint", "int32_t", "uint32_t", "short", "ushort", "int16_t", "uint16_t", "unsigned", "unsigned int", "char", "uchar", "int8_t", "uint8_t"}
_QUALS = re.compile(r"\b(const|constant|device|thread|threadgroup|threadgroup_imageblock|static|volatile|inline|register|metal::|::)\b")
_SMALL_BOUND = re.compile(r"(?i)^(?:\w*dim\w*|\w*rank\w*|num_?indices|\w*_?ndims?|[A-Z][A-Z0-9_]*|\d+[uUlL]*|sizeof\b.*|max_ndim|kMax\w*)$")
_FOR_HEAD = re.compile(r"for\s*\(\s*(?:const\s+)?(?:[\w:]+\s+)?([A-Za-z_]\w*)\s*=\s*[^;]*;\s*\1\s*(?:<|<=|!=)\s*([^;]+?)\s*;")
_STRUCT = re.compile(r"\bstruct\s+(\w+)\s*(?::[^{]*)?\{([^{}]*)\}", re.S)
_FIELD = re.compile(r"^\s*(?:const\s+)?([\w:]+(?:\s+\w+)?)\s+(\w+)\s*(?:\[[^\]]*\])?\s*(?:=[^;]*)?;", re.M)


def _base_type(t: str) -> str:
    t = _QUALS.sub(" ", t.replace("&", " ")).strip()
    return re.sub(r"\s+", " ", t)


def _scalar_width(t: str):
    """Width of a (vector of) scalar type name: W32, W64 or None."""
    t = _base_type(t).replace("*", "").strip()
    if "constexpr" in t:
        return CONST
    if t in _T64:
        return W64
    if t in _T32:
        return W32
    m = re.fullmatch(r"(u?long|u?int|u?short|u?char)[234]", t)
    if m:
        return W64 if "long" in m.group(1) else W32
    m = re.fullmatch(r"(?:metal::)?(?:vec|array)<\s*([\w ]+?)\s*,\s*\d+\s*>", t)
    if m:
        return _scalar_width(m.group(1))
    return None


@lru_cache(maxsize=20000)
def _parse_expr(text: str):
    tree = parse("void __mpslint_f() { (" + text + "); }")
    node = tree.root_node
    try:
        body = node.named_children[0].child_by_field_name("body")
        stmt = body.named_children[0]
        expr = stmt.named_children[0]
        if expr.type == "parenthesized_expression":
            expr = expr.named_children[0]
        return expr if not expr.has_error else None
    except (IndexError, AttributeError):
        return None


class _Env:
    """What a function's names are: 32/64-bit integers, compile-time constants, buffers, local arrays."""

    def __init__(self, fn, header: str, struct_fields: dict[str, set], text: str = ""):
        self.types: dict[str, object] = {}
        self.buffers: set[str] = set()
        self.locals_arrays: set[str] = set()
        self.elem: dict[str, object] = {}  # pointer/array name -> element width
        self.small: set[str] = set()
        self.struct_fields = struct_fields
        self.decl_init: dict[str, object] = {}
        for m in re.finditer(r"(?:^|[<,])\s*(?:typename|class)\s+(\w+)", header):
            self.types[m.group(1)] = None
        for m in re.finditer(r"(?:^|[<,])\s*(?:u?int|u?short|u?long|bool|size_t|int\d+_t|uint\d+_t)\s+(\w+)", header):
            self.types[m.group(1)] = CONST
        for p in fn.params:
            if not p.name:
                continue
            raw = p.raw
            if "*" in p.type or "[" in raw.split("[[")[0]:
                # the address space may precede the parameter's node (it was masked): look before it too
                lead = text[max(0, p.span.start - 40) : p.span.start]
                lead = re.split(r"[(,]", lead)[-1]
                space = re.search(r"(?<![\w:])(device|constant|threadgroup|thread)\b", lead + " " + raw)
                if space is not None and space.group(1) in ("device", "constant"):
                    self.buffers.add(p.name)
                self.elem[p.name] = _scalar_width(p.type)
                self.types[p.name] = None
            else:
                self.types[p.name] = _scalar_width(p.type)
        for d in fn.decls:
            if d.array:
                self.locals_arrays.add(d.name)
                self.elem[d.name] = _scalar_width(d.type)
                self.types[d.name] = None
                continue
            self.types[d.name] = _scalar_width(d.type)
            if d.init is not None:
                self.decl_init[d.name] = d
        for s in fn.stmts:
            if s.kind == "for_statement":
                m = _FOR_HEAD.search(s.text)
                if m and _SMALL_BOUND.match(m.group(2).strip()):
                    self.small.add(m.group(1))

    def resolve_auto(self, fn):
        """Give ``auto`` locals the width of their initializer (one pass, in order)."""
        for d in fn.decls:
            if d.array or d.init is None or self.types.get(d.name) is not None:
                continue
            if re.search(r"\bauto\b", d.type):
                w, _ = width(d.init.text, self)
                self.types[d.name] = w if w in (W32, W64) else None


def width(text: str, env: _Env):
    """(width of the expression, [texts of run-time 32x32 products inside it])."""
    node = _parse_expr(text)
    if node is None:
        return None, []
    narrow: list[str] = []
    w = _w(node, env, narrow)
    return w, narrow


def _w(n, env: _Env, narrow: list):
    t = n.type
    if t == "number_literal":
        s = n.text.decode()
        return W64 if re.search(r"[lL]", s) and not re.search(r"[eE.]", s) else (None if re.search(r"[.eEfFhH]", s) and not s.startswith("0x") else CONST)
    if t in ("true", "false", "char_literal", "sizeof_expression", "alignof_expression"):
        return CONST
    if t == "identifier":
        name = n.text.decode()
        if name in env.types:
            w = env.types[name]
            if w is not None and name in env.small:
                return CONST
            return w
        if re.fullmatch(r"[A-Z][A-Z0-9_]*|k[A-Z]\w*", name):
            return CONST  # macro or kConstant
        return None
    if t == "qualified_identifier":
        return CONST if re.search(r"::k[A-Z]\w*$|::[A-Z][A-Z0-9_]*$", n.text.decode()) else None
    if t == "parenthesized_expression":
        inner = n.named_children
        return _w(inner[-1], env, narrow) if inner else None
    if t == "cast_expression":
        tn = n.child_by_field_name("type")
        vn = n.child_by_field_name("value")
        if vn is not None:
            _w(vn, env, narrow)
        return _scalar_width(tn.text.decode()) if tn is not None else None
    if t == "call_expression":
        fnode = n.child_by_field_name("function")
        args = n.child_by_field_name("arguments")
        argn = [a for a in args.named_children] if args is not None else []
        for a in argn:
            _w(a, env, narrow)
        if fnode is None:
            return None
        if fnode.type == "template_function":
            name = fnode.child_by_field_name("name")
            targs = fnode.child_by_field_name("arguments")
            if name is not None and name.text.decode() in ("static_cast", "as_type") and targs is not None:
                return _scalar_width(targs.text.decode()[1:-1])
            return None
        fname = fnode.text.decode()
        if fnode.type in ("primitive_type", "type_identifier", "identifier", "sized_type_specifier") and _scalar_width(fname) is not None:
            return _scalar_width(fname)
        if fname in ("min", "max", "metal::min", "metal::max", "::metal::min", "::metal::max", "clamp") and argn:
            ws = [_w(a, env, []) for a in argn]
            return W64 if W64 in ws else (W32 if W32 in ws and None not in ws else None)
        return None
    if t == "field_expression":
        arg = n.child_by_field_name("argument")
        fld = n.child_by_field_name("field")
        if arg is None or fld is None:
            return None
        field = fld.text.decode()
        if arg.type == "identifier" and re.fullmatch(r"[xyzw]|[rgba]", field):
            base = env.types.get(arg.text.decode())
            return base if base in (W32, W64) else None
        ws = env.struct_fields.get(field)
        if ws and len(ws) == 1:
            return next(iter(ws))
        return None
    if t == "subscript_expression":
        arg = n.child_by_field_name("argument")
        idx = n.child_by_field_name("indices")
        if idx is not None:
            for c in idx.named_children:
                _w(c, env, narrow)
        if arg is not None and arg.type == "identifier":
            return env.elem.get(arg.text.decode())
        return None
    if t == "binary_expression":
        op = n.child_by_field_name("operator")
        op = op.type if op is not None else ""
        ln, rn = n.child_by_field_name("left"), n.child_by_field_name("right")
        lw = _w(ln, env, narrow) if ln is not None else None
        rw = _w(rn, env, narrow) if rn is not None else None
        if op in ("*", "+", "-"):
            if op == "*" and lw == W32 and rw == W32:
                narrow.append(n.text.decode())
            if W64 in (lw, rw):
                return W64
            if lw is None or rw is None:
                return None
            return W32 if W32 in (lw, rw) else CONST
        if op in ("/", "%", ">>", "&", "<<", "|", "^"):
            return lw
        return None  # comparisons, logic
    if t == "conditional_expression":
        a = n.child_by_field_name("consequence")
        b = n.child_by_field_name("alternative")
        ws = [_w(x, env, narrow) for x in (a, b) if x is not None]
        return W64 if W64 in ws else (W32 if ws and all(x in (W32, CONST) for x in ws) and W32 in ws else None)
    if t in ("unary_expression", "update_expression"):
        arg = n.child_by_field_name("argument")
        return _w(arg, env, narrow) if arg is not None else None
    return None


def _struct_fields(ctx) -> dict[str, set]:
    out: dict[str, set] = {}
    for src in metal_sources(ctx):
        for m in _STRUCT.finditer(src.text):
            for f in _FIELD.finditer(m.group(2)):
                w = _scalar_width(f.group(1))
                out.setdefault(f.group(2), set()).add(w)
    return {k: v for k, v in out.items() if None not in v}


class NarrowOffsetArithmetic(Rule):
    code = "MTL204"
    name = "narrow-offset-arithmetic"
    severity = Severity.WARNING
    scope = "metal"
    default_enabled = False  # 32-bit indexing is PyTorch's design where the host splits: see the docs
    summary = "uint/int arithmetic (products of sizes, strides or indices) forming a buffer index or offset"
    guide = "Working with Large Tensors"

    def check(self, ctx):
        fields = _struct_fields(ctx)
        seen: set[tuple[str, int]] = set()
        graph = ctx.graph
        # with the MPS operation sources in the run (as the DSP rules ask before reasoning about absence), a finding
        # needs a visible launch that nothing bounds; Metal (or headers) linted without them: every product
        calls = MetalCallIndex(ctx.project.all_metal(), ctx.text) if operation_sources(ctx.project) else None
        verdicts: dict[frozenset, str | None] = {}
        for src in metal_sources(ctx):
            text = ctx.text(src.path)
            for fn in src.facts.functions:
                if fn.body_span is None:
                    continue
                header = text[fn.span.start : fn.name_span.start]
                header = header[: header.find(">") + 1] if header.lstrip().startswith("template") else ""
                env = _Env(fn, header, fields, text)
                env.resolve_auto(fn)
                found = list(self._function(ctx, src.path, fn, env, seen))
                if not found:
                    continue
                if calls is None:
                    note = "no MPS operation source was linted with this file to show a bound"
                else:
                    mops = frozenset(calls.ops_reaching(fn.name))
                    if mops not in verdicts:
                        verdicts[mops] = _unbounded_launch(graph, mops)
                    note = verdicts[mops]
                    if note is None:  # not launched from the linted host code, or every launch is bounded
                        continue
                for span, what, how in found:
                    yield self._finding(ctx, src.path, span, what, how, note)

    def _function(self, ctx, path, fn, env: _Env, seen):
        # pointers into buffers are buffers too: `constant float* base = in + offset;`
        for d in fn.decls:
            if d.init is not None and not d.array and ctx.source(path, d.span).lstrip().startswith("*"):
                if any(re.search(r"(?<![\w.])" + re.escape(b) + r"\b", d.init.text) for b in list(env.buffers)):
                    env.buffers.add(d.name)
        # names used to index buffers (or offset buffer pointers)
        index_uses: dict[str, object] = {}
        for sub in fn.subscripts:
            if sub.array not in env.buffers:
                continue
            for name in re.findall(r"[A-Za-z_]\w*", sub.index.text):
                index_uses.setdefault(name, sub)
        for d in fn.decls:
            if d.init is not None and "*" in ctx.source(path, d.span).split("=")[0]:
                for b in env.buffers:
                    if re.search(r"(?<![\w.])" + re.escape(b) + r"\s*\+", d.init.text):
                        for name in re.findall(r"[A-Za-z_]\w*", d.init.text):
                            index_uses.setdefault(name, d)
        # 1. products inside buffer subscripts (one finding per statement: `float4(y[a * s], y[(a + 1) * s], ...)`)
        # and one per product in a function: `x[(base + i) * sa]` in every loop of a kernel is one problem)
        stmts_done: set[int] = set()
        products_done: set[str] = set()
        for sub in fn.subscripts:
            if sub.array not in env.buffers or (sub.stmt >= 0 and sub.stmt in stmts_done):
                continue
            _, narrow = width(sub.index.text, env)
            narrow = [n for n in narrow if re.sub(r"\s+", "", n) not in products_done]
            if narrow and (path, sub.index.span.start) not in seen:
                seen.add((path, sub.index.span.start))
                stmts_done.add(sub.stmt)
                products_done.update(re.sub(r"\s+", "", n) for n in narrow)
                yield (sub.index.span, f"`{narrow[0]}` is a 32-bit product inside the index of `{sub.array}[...]`",
                                    "compute the offset in `long` (cast one operand: `long(a) * b`)")
        # 2. pointer offsets: T* p = buf + a * b
        for d in fn.decls:
            if d.init is None or "*" not in ctx.source(path, d.span).split("=")[0]:
                continue
            if not any(re.search(r"(?<![\w.])" + re.escape(b) + r"\b", d.init.text) for b in env.buffers):
                continue
            _, narrow = width(d.init.text, env)
            narrow = [n for n in narrow if re.sub(r"\s+", "", n) not in products_done]
            if narrow and (path, d.init.span.start) not in seen:
                seen.add((path, d.init.span.start))
                products_done.update(re.sub(r"\s+", "", n) for n in narrow)
                yield (d.init.span, f"`{narrow[0]}` is a 32-bit product in the pointer offset of `{d.name}`",
                                    "compute the offset in `long` (cast one operand: `long(a) * b`)")
        # 3. 32-bit locals computed from products, used to index a buffer
        for d in fn.decls:
            if d.array or d.init is None or d.name not in index_uses or env.types.get(d.name) != W32:
                continue
            w, narrow = width(d.init.text, env)
            product = narrow[0] if narrow else _runtime_product(d.init.text, env)
            if product is None or (path, d.init.span.start) in seen:
                continue
            seen.add((path, d.init.span.start))
            what = (f"`{d.name}` is a 32-bit `{_base_type(d.type)}` computed from the 32-bit product `{product}`" if narrow else
                    f"the 64-bit product `{product}` is narrowed into the 32-bit `{_base_type(d.type)} {d.name}`")
            yield (d.init.span, what + " and then indexes a buffer", f"declare `{d.name}` as `long`")
        # 4. offset += a * b into a 32-bit local
        for a in fn.assigns:
            if a.op not in ("+=", "-=", "*=", "=") or a.lhs not in index_uses or env.types.get(a.lhs) != W32:
                continue
            w, narrow = width(a.rhs.text, env)
            product = narrow[0] if narrow else _runtime_product(a.rhs.text, env)
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


def _unbounded_launch(graph, mops) -> str | None:
    """Why a launch of these kernels is unbounded (names the host function), or None when none is."""
    for impl in launchers(graph, mops):
        if index_range_evidence(graph, impl) is None:
            a = graph.attrs(impl)
            return (f"launched from `{a.get('name')}` in {a.get('path')}, which neither splits the launch with "
                    "`with_32bit_indexing()` nor compares the sizes with a 32-bit limit")
    return None


def _runtime_product(text: str, env: _Env) -> str | None:
    """A product of two run-time (non-constant) integers anywhere in ``text``, 64-bit ones included."""
    node = _parse_expr(text)
    if node is None:
        return None
    stack = [node]
    while stack:
        n = stack.pop()
        if n.type == "binary_expression":
            op = n.child_by_field_name("operator")
            if op is not None and op.type == "*":
                ln, rn = n.child_by_field_name("left"), n.child_by_field_name("right")
                lw = _w(ln, env, []) if ln is not None else None
                rw = _w(rn, env, []) if rn is not None else None
                if lw in (W32, W64) and rw in (W32, W64):
                    return n.text.decode()
        stack.extend(n.named_children)
    return None
