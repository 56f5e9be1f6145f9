"""
## What it does
Flags `[enc setBuffer:getMTLBufferStorage(t) offset:o atIndex:k]` whose offset does not place the
binding at `t`'s first element:
- `offset:0` for a tensor that may be a view (a parameter, or derived from one: `.contiguous()` and
  `.view()` keep the storage offset of a tensor that already was contiguous); tensors allocated in the
  function (`at::empty`, `torch::zeros`, `empty_like`, the result of an op that always allocates such as
  `index_select`, `masked_select`, `argsort`, `mm`), or passed in freshly allocated by every caller in
  the tree, start at offset 0 and are not flagged;
- an offset taken from another tensor (`offset:a.storage_offset() * ...` when binding `b`);
- `offset:t.storage_offset()` without the element size: `storage_offset()` counts elements, `setBuffer:offset:`
  takes bytes. A literal factor is a byte count (`t.storage_offset() * 4`), right when it is the size of the
  element the launched kernel reads at that slot (`device float*`: 4) and flagged when it is not; no factor is
  right for a kernel reading one-byte elements (`uchar*`). With a template kernel or no kernel in view, a
  literal factor is taken as meant.

It also flags `t.storage().data()` used as a **host pointer** to `t`'s data (handed to `setBytes:`, `memcpy`,
`newBufferWithBytesNoCopy:` or `pageAlignedBlockPtr`, cast to a data pointer, or kept in a `void*`/`float*` local)
when no read of `t.storage_offset()` corrects it: none before it on every path, in the same statement, or after it
on a path it can take. `[enc setBytes:t.storage().data() length:t.element_size() atIndex:i]` for a CPU scalar, or
`const void* host = dst.storage().data();` for a blit into a CPU tensor (pytorch/pytorch#112432), read from the
start of the storage: for `cpu[2]` that is `cpu[0]`. A read whose value is stored in a local that is overwritten
before anything uses it (`NSUInteger off = dst.storage_offset() * 4; ... off = slack;`) corrects nothing. Not
flagged: the buffer handle (`__builtin_bit_cast(id<MTLBuffer>, t.storage().data())`, a cast to `id<...>`), the
address as an integer (`reinterpret_cast<size_t>(...)` to measure a distance), tensors allocated in the function.
The fix is `t.const_data_ptr()` / `t.data_ptr()`, which include the offset, or adding
`t.storage_offset() * t.element_size()`.

When the offset is read and moves the copy (`offset += src.storage_offset() * src.itemsize()`), the range wrapped
from the storage's start must reach past it: `pageAlignedBlockPtr(src.storage().data(), src.nbytes(), ...)` or
`newBufferWithBytesNoCopy:src.storage().data() length:src.nbytes()` wraps only as many bytes as `src` has, and a
copy that starts `storage_offset()` elements in reads (or writes) that many bytes past the wrapped memory
(kulinseth/pytorch#64, "the storage offset can be bigger than what's being reported by nbytes"). It is reported at
the byte count (`src.nbytes()`, `src.numel() * src.element_size()`, through locals). Not flagged: a length with the
offset in it, a byte count that differs by branch, an offset that is only checked (`TORCH_CHECK(t.storage_offset()
== 0)`).

## Why is this bad?
`getMTLBufferStorage(t)` is the whole allocation, shared by every view of it. `x[1:]`, `x.narrow(...)`
and `x.select(0, i)` are views with a non-zero storage offset, and `.contiguous()` returns them as
they are: binding offset 0 makes the kernel read the base tensor's first elements instead — silently
wrong results, no error.

## Example
```objc
auto xc = x.contiguous();
[enc setBuffer:getMTLBufferStorage(xc) offset:0 atIndex:0];
```

## Use instead
```objc
[enc setBuffer:getMTLBufferStorage(xc) offset:xc.storage_offset() * xc.element_size() atIndex:0];
// PyTorch's own code: mtl_setBuffer(enc, xc, 0) (ATen/native/mps/OperationUtils.h) adds the offset itself
```

Wrapping host memory for a copy at the view's offset:
```objc
const void* host = src.storage().data();
void* base = pageAlignedBlockPtr(host, (NSUInteger)src.nbytes(), &aligned);   // only src's own bytes
offset = uintptr_t(host) - uintptr_t(base) + src.storage_offset() * src.itemsize();
```
Use instead:
```objc
const void* host = static_cast<const char*>(src.storage().data()) + src.storage_offset() * src.itemsize();
void* base = pageAlignedBlockPtr(host, (NSUInteger)src.nbytes(), &aligned);
offset = uintptr_t(host) - uintptr_t(base);
```

## How to fix
Pass `t.storage_offset() * t.element_size()` of the tensor being bound, or bind with `mtl_setBuffer`. For a host
range, start it at the view's first byte, or wrap `storage_offset() * itemsize() + nbytes()` bytes.

Guide: *Working with TensorIterators* (views and storage offsets).
"""

from __future__ import annotations

import re

from mpslint.semantic import extflow
from mpslint.semantic import hostflow as hf
from mpslint.semantic.definitions import runs_after, runs_before
from mpslint.semantic.expressions import identifiers, int_literal, strip_parens
from mpslint.semantic.model import semantic_model
from mpslint.model import Severity
from mpslint.rule import Rule

_ZERO = re.compile(r"\s*0+\s*[uUlL]*\s*")
_OFFSET_OF = re.compile(r"([A-Za-z_]\w*)\s*(?:\.|->)\s*storage_offset\s*\(\s*\)")
_BYTES = re.compile(r"element_size\s*\(|itemsize\s*\(|\bsizeof\s*\(|nbytes")
# calls that read or write host memory through a pointer argument
_HOST_SINKS = {"setBytes", "memcpy", "memmove", "copy_n", "newBufferWithBytes", "newBufferWithBytesNoCopy", "pageAlignedBlockPtr"}
_STORAGE_DATA = ("data", "mutable_data")


def _literal_factor(tree) -> tuple[bool, int | None]:
    """(the offset is `t.storage_offset()` alone or times an integer literal, that literal or None), read from
    the offset's expression tree: `x.storage_offset() * 4`, `4 * x.storage_offset()`."""
    n = strip_parens(tree) if tree is not None else None
    if n is None:
        return False, None
    if n.kind == "call" and n.op == "storage_offset":
        return True, None
    if n.kind == "binary" and n.op == "*" and len(n.kids) == 2:
        for a, b in (n.kids, n.kids[::-1]):
            a, b = strip_parens(a), strip_parens(b)
            lit = int_literal(b.text) if b.kind == "int" else None
            if a.kind == "call" and a.op == "storage_offset" and lit is not None:
                return True, lit[0]
    return False, None


# host calls that wrap or copy a memory range: name -> (pointer argument, length argument)
_RANGE_SINKS = {"pageAlignedBlockPtr": (0, 1), "newBufferWithBytesNoCopy": (0, 1), "newBufferWithBytes": (0, 1)}
_ELEMENT_SIZE = ("itemsize", "element_size")


def _uncast(n):
    n = strip_parens(n)
    while n.kind == "cast" and n.kids:
        n = strip_parens(n.kids[-1])
    return n


def _own_bytes(fm, node, stmt: int, names: set[str], depth: int = 0) -> list | None:
    """The expressions ``node`` takes its value from when each is the byte count of the tensor itself
    (`t.nbytes()`, `t.numel() * t.itemsize()`, through locals), with no storage offset in it; None otherwise."""
    n = _uncast(node)
    if depth > 6:
        return None
    if n.kind == "id":
        vals = fm.values(n.op, stmt)
        if not vals or any(v is None for v, _ in vals):
            return None
        out = []
        for v, at in vals:
            got = _own_bytes(fm, v.kids[0] if v.kind == "init" and len(v.kids) == 1 else v, at, names, depth + 1)
            if got is None:
                return None
            out += got
        return out
    if n.kind == "call" and n.receiver is not None and n.receiver.text in names:
        return [n] if n.op == "nbytes" and not n.args else None
    if n.kind == "binary" and n.op == "*" and len(n.kids) == 2:
        a, b = (_uncast(x) for x in n.kids)
        for x, y in ((a, b), (b, a)):
            if (x.kind == "call" and x.op == "numel" and x.receiver is not None and x.receiver.text in names
                    and (y.kind == "sizeof" or (y.kind == "call" and y.op in _ELEMENT_SIZE))):
                return [n]
    return None


def _moves_by(fn, k) -> bool:
    """The offset read ``k`` is arithmetic (an offset added or assigned), not a comparison in a check."""
    st = fn.stmts[k.stmt] if 0 <= k.stmt < len(fn.stmts) else None
    if st is None or st.kind not in ("declaration", "expression_statement"):
        return False
    head = st.text.lstrip()
    return not head.startswith(("TORCH_", "AT_ASSERT", "assert", "ET_CHECK", "C10_"))


class StorageOffsetIgnored(Rule):
    code = "MPS117"
    name = "storage-offset-ignored"
    severity = Severity.ERROR
    scope = "host"
    contexts = ("pytorch", "extension")
    summary = "Tensor buffer bound, or a host pointer taken, at an offset that ignores (or miscomputes) the tensor's storage_offset()"
    guide = "Working with TensorIterators"

    def check(self, ctx):
        hosts = ctx.project.hosts
        for path in sorted(hosts):
            for fn in hosts[path].functions:
                impl = f"impl:{path}:{fn.name}"
                if any(c.name in _STORAGE_DATA for c in fn.calls) and hf.is_live(fn, path, hosts):
                    yield from self._storage_pointers(ctx, path, fn, impl)
                scalars = None
                for call in fn.calls:
                    b = extflow.slot_binding(call)
                    if b is None or call.name != "setBuffer":
                        continue
                    t = extflow.buffer_storage_arg(b[1])
                    if t is None and b[1].isidentifier() and not any(a.lhs == b[1] for a in fn.assigns):
                        # `id<MTLBuffer> buf = getMTLBufferStorage(x); [enc setBuffer:buf offset:0 ...]`
                        init = extflow.local_init(fn, b[1], call.span.start)
                        t = extflow.buffer_storage_arg(init) if init is not None else None
                    if t is None:
                        continue
                    if scalars is None:  # what the launched kernels read at each slot, once per function
                        scalars = extflow.fixed_slot_scalars(extflow.launched_kernels(ctx.graph, impl))
                    reads = scalars.get(b[0])
                    problem = self._problem(ctx.graph, impl, fn, t, b[2], call.span.start, reads, call.args[1].tree)
                    if problem:
                        yield ctx.finding(self, path, call.args[1].span, problem)

    def _storage_pointers(self, ctx, path, fn, impl):
        """`t.storage().data()` used as a host pointer to `t`'s data: the start of the storage, `t.storage_offset()`
        elements before `t`'s first element when `t` is a view, with no read of that offset to make up for it."""
        fm = None
        for c in fn.calls:
            if c.name not in _STORAGE_DATA or c.args or not c.receiver.endswith(".storage()"):
                continue
            t = c.receiver[: -len(".storage()")]
            if not t.replace(".", "").replace("->", "").isidentifier():
                continue
            sink = self._host_use(fn, c)
            if sink is None:
                continue
            origin = extflow.tensor_origin(fn, t, c.span.start)
            if origin.fresh or self._fresh_from_callers(ctx.graph, impl, fn, origin.root):
                continue  # allocated here (or by every caller): its storage starts at its first element
            reads = self._offset_reads(fn, t, origin, c.stmt)
            fm = fm or (semantic_model(ctx.project).function(fn, ctx.project.hosts[path]) if reads else None)
            live = [k for k in reads if self._live(fm, fn, k)]
            if live:
                # the offset is read where it can correct the pointer: what is wrapped must then reach past it
                short = self._short_range(fm, fn, c, t, origin, live)
                if short is not None:
                    yield ctx.finding(self, path, ctx.span(path, *short[0]), short[1])
                continue
            if reads:
                why = (f"the read of `{reads[0].receiver}.storage_offset()` at line {reads[0].span.line} is overwritten "
                       f"before anything uses it")
            else:
                why = f"no read of `{t}.storage_offset()` in `{hf.short_name(fn.name)}` corrects it on this path"
            yield ctx.finding(
                self,
                path,
                c.span,
                f"`{t}.storage().data()` is the start of `{t}`'s storage, not `{t}`'s first element ({sink}): for a view "
                f"(`x[i]`, a slice, `narrow`) it points `{t}.storage_offset()` elements early, and {why}. Use "
                f"`{t}.const_data_ptr()` (or `{t}.data_ptr()`), which includes the offset, or add "
                f"`{t}.storage_offset() * {t}.element_size()` bytes.",
            )

    @staticmethod
    def _host_use(fn, c) -> str | None:
        """How the storage pointer of call ``c`` is used as a host data pointer, or None (a Metal buffer handle
        `__builtin_bit_cast(id<MTLBuffer>, ...)`, an address turned into an integer, a comparison...)."""

        def holds(span) -> bool:
            return span.start <= c.span.start and c.span.end <= span.end

        if any(k.name == "__builtin_bit_cast" and holds(k.span) for k in fn.calls if k.stmt == c.stmt):
            return None
        casts = [k for k in fn.casts if k.stmt == c.stmt and holds(k.operand.span)]
        if any("id<" in k.type or "MTLBuffer" in k.type or "*" not in k.type for k in casts):
            return None  # a buffer handle, or an address as an integer (`reinterpret_cast<size_t>(...)`)
        for k in fn.calls:
            if k.stmt == c.stmt and k.name in _HOST_SINKS and any(holds(a.span) for a in k.args):
                return f"it is handed to `{k.name}`"
        if casts:
            return f"it is cast to `{casts[0].type.strip()}`"
        for d in fn.decls:
            if d.stmt != c.stmt or d.init is None or not holds(d.init.span):
                continue
            if "id<" in d.type or not (d.pointer or "*" in d.type):
                return None
            later = [k for k in fn.casts if k.stmt > d.stmt and k.operand.tree is not None and d.name in identifiers(k.operand.tree)]
            if any("id<" in k.type or "MTLBuffer" in k.type for k in later):
                return None  # a data pointer local that is turned back into the buffer handle
            for k in fn.calls:
                if k.stmt > d.stmt and any(a.tree is not None and d.name in identifiers(a.tree) for a in k.args):
                    return f"through `{d.name}`, handed to `{k.name}`"
            return f"kept in `{d.name}`"
        return None

    @staticmethod
    def _offset_reads(fn, t: str, origin, use: int) -> list:
        """The reads of `t.storage_offset()` (or of a tensor `t` is taken from, which has the same offset) where
        they can correct the pointer: before the use on every path to it, in the use's statement, or after it on
        a path the use can take."""
        out = []
        for k in fn.calls:
            if k.name != "storage_offset" or k.stmt < 0 or not k.receiver:
                continue
            if k.receiver != t and (k.receiver not in origin.names and extflow.tensor_origin(fn, k.receiver, k.span.start).root != origin.root):
                continue
            if k.stmt == use or runs_before(fn, k.stmt, use) or runs_after(fn, use, k.stmt):
                out.append(k)
        return out

    @staticmethod
    def _live(fm, fn, k) -> bool:
        """The value of the offset read ``k`` can reach a use: it is not stored in a local that every later use
        sees overwritten first (`NSUInteger off = dst.storage_offset() * 4; ... off = slack;` reads it for nothing)."""

        def holds(e) -> bool:
            return e is not None and e.span.start <= k.span.start and k.span.end <= e.span.end

        local = next((d.name for d in fn.decls if d.stmt == k.stmt and holds(d.init)), None)
        if local is None:
            local = next((a.lhs for a in fn.assigns if a.stmt == k.stmt and a.op == "=" and holds(a.rhs)), None)
        if local is None or not local.isidentifier():
            return True  # used where it is read (a call's argument, a compound assignment, a store through a pointer)
        for u in range(k.stmt + 1, len(fn.stmts)):
            st = fn.stmts[u]
            top = st.tree
            if top is not None and top.kind == "assign" and top.op == "=" and top.kids and strip_parens(top.kids[0]).text == local:
                top = top.kids[-1]  # `local = ...` overwrites it; only its right-hand side reads
            trees = [top] + [c.tree for c in fn.calls if c.stmt == u] + [a.rhs.tree for a in fn.assigns if a.stmt == u]
            trees += [d.init.tree for d in fn.decls if d.stmt == u and d.init is not None]
            if not any(t is not None and local in identifiers(t) for t in trees):
                continue
            vals = fm.values(local, u)
            if vals is None or any(at == k.stmt for _, at in vals):
                return True
        return False

    @staticmethod
    def _short_range(fm, fn, c, t: str, origin, reads):
        """(the length, the message) when the storage pointer of call ``c`` starts a host range (`pageAlignedBlockPtr(p,
        n, ...)`, `newBufferWithBytes[NoCopy]:p length:n`) whose length is `t`'s own byte count while a read of
        `t.storage_offset()` moves the copy that far into it: the last offset bytes of `t` are outside the range
        (kulinseth/pytorch#64). None when the length has the offset in it, or the offset is only compared."""
        moved = [k for k in reads if _moves_by(fn, k)]
        if not moved:
            return None
        names = set(origin.names) | {t}
        for k in fn.calls:
            pos = _RANGE_SINKS.get(k.name)
            if pos is None or len(k.args) <= max(pos):
                continue
            ptr, length = k.args[pos[0]], k.args[pos[1]]
            if ptr.tree is None or length.tree is None:
                continue
            o, _ = fm.origin(_uncast(ptr.tree), k.stmt)
            o = _uncast(o)
            if o.kind != "call" or o.start != c.span.start or o.end != c.span.end:
                continue
            own = _own_bytes(fm, length.tree, k.stmt, names)
            if not own:
                continue
            # reported where the byte count is computed when it is one expression (that is the value that is
            # wrong for this range), else at the range's length
            where = own[0] if len(own) == 1 else length
            bytes_ = own[0].text if len(own) == 1 else length.text
            inside = where is length or k.span.start <= where.start < k.span.end
            at = "" if inside else f" at line {k.span.line}"
            read = moved[0].receiver
            return (where.start, where.end) if where is not length else (length.span.start, length.span.end), (
                f"`{bytes_}` is the byte count of `{t}` alone, yet it sizes the range `{k.name}` wraps{at} from "
                f"`{t}.storage().data()`, the storage's start; the copy starts `{read}.storage_offset()` elements in "
                f"(line {moved[0].span.line}), so for a view its last `storage_offset() * itemsize()` bytes fall past the "
                f"wrapped memory. Wrap `{t}.storage_offset() * {t}.itemsize() + {bytes_}` bytes there (the copy keeps "
                f"`{bytes_}`), or start the range at `static_cast<const char*>({t}.storage().data()) + "
                f"{t}.storage_offset() * {t}.itemsize()` and drop the offset from the copy's start."
            )
        return None

    @staticmethod
    def _fresh_from_callers(graph, impl: str, fn, name: str) -> bool:
        """``name`` is a parameter every caller in the tree passes a freshly allocated tensor for."""
        idx = next((i for i, p in enumerate(fn.params) if p.name == name), None)
        if idx is None:
            return False
        seen = False
        for caller in graph.into(impl, "calls"):
            cf = graph.attrs(caller).get("function")
            if cf is None:
                continue
            for c in cf.calls:
                if c.name == fn.name:
                    if len(c.args) <= idx or not extflow.tensor_origin(cf, c.args[idx].text, c.span.start).fresh:
                        return False
                    seen = True
        return seen

    def _problem(self, graph, impl: str, fn, t: str, off: str, at: int, reads=None, off_tree=None) -> str | None:
        origin = extflow.tensor_origin(fn, t, at)
        fix = f"`offset:{t}.storage_offset() * {t}.element_size()`"
        if _ZERO.fullmatch(off):
            if origin.fresh or self._fresh_from_callers(graph, impl, fn, origin.root):
                return None
            whence = f" (it comes from `{origin.root}`)" if origin.root != t else ""
            return (f"`{t}` may be a view with a non-zero storage offset{whence}, but it is bound at "
                    f"offset 0: the kernel reads the start of the allocation instead of `{t}`; use {fix}.")
        named = _OFFSET_OF.findall(off)
        if not named:
            return None
        others = [n for n in named if n not in origin.names and extflow.tensor_origin(fn, n, at).root != origin.root]
        if others and len(others) == len(named):
            return f"`{t}` is bound at `{others[0]}`'s storage offset; use {fix}."
        if not _BYTES.search(off) and not origin.fresh:
            # a literal element size is a byte count: `x.storage_offset() * 4` for a kernel reading `float*`; with
            # no factor the offset is right for a kernel reading one-byte elements (`uchar*`)
            size = extflow.SCALAR_BYTES.get(reads[2]) if reads else None
            plain, factor = _literal_factor(off_tree)
            if factor is not None and (size is None or factor == size):
                return None
            if plain and factor is None and size == 1:
                return None
            if factor is not None:
                return (f"`{off}` scales the offset by {factor}, but the kernel reads `{t}` as `{reads[2]}` ({size} bytes; "
                        f"`{reads[1]}` of `{reads[0]}`); use {fix}.")
            return (f"`{off}` counts elements but `setBuffer:offset:` takes bytes: for a view the binding starts "
                    f"before `{t}`'s first element; use {fix}.")
        return None
