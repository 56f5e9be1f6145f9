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
start of the storage: for `cpu[2]` that is `cpu[0]`. Not flagged: the buffer handle
(`__builtin_bit_cast(id<MTLBuffer>, t.storage().data())`, a cast to `id<...>`), the address as an integer
(`reinterpret_cast<size_t>(...)` to measure a distance), tensors allocated in the function. The fix is
`t.const_data_ptr()` / `t.data_ptr()`, which include the offset, or adding `t.storage_offset() * t.element_size()`.

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

## How to fix
Pass `t.storage_offset() * t.element_size()` of the tensor being bound, or bind with `mtl_setBuffer`.

Guide: *Working with TensorIterators* (views and storage offsets).
"""

from __future__ import annotations

import re

from mpslint.semantic import extflow
from mpslint.semantic import hostflow as hf
from mpslint.semantic.definitions import runs_after, runs_before
from mpslint.semantic.expressions import identifiers, int_literal, strip_parens
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
        for c in fn.calls:
            if c.name not in _STORAGE_DATA or c.args or not c.receiver.endswith(".storage()"):
                continue
            t = c.receiver[: -len(".storage()")]
            if not t.replace(".", "").replace("->", "").isidentifier():
                continue
            sink = self._host_use(fn, c)
            if sink is None or self._offset_read(fn, t, c.stmt):
                continue
            origin = extflow.tensor_origin(fn, t, c.span.start)
            if origin.fresh or self._fresh_from_callers(ctx.graph, impl, fn, origin.root):
                continue  # allocated here (or by every caller): its storage starts at its first element
            yield ctx.finding(
                self,
                path,
                c.span,
                f"`{t}.storage().data()` is the start of `{t}`'s storage, not `{t}`'s first element ({sink}): for a view "
                f"(`x[i]`, a slice, `narrow`) it points `{t}.storage_offset()` elements early, and no read of "
                f"`{t}.storage_offset()` in `{hf.short_name(fn.name)}` corrects it on this path. Use `{t}.const_data_ptr()` (or `{t}.data_ptr()`), which includes "
                f"the offset, or add `{t}.storage_offset() * {t}.element_size()` bytes.",
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
    def _offset_read(fn, t: str, use: int) -> bool:
        """`t.storage_offset()` is read where it can correct the pointer: before the use on every path to it, in
        the use's statement, or after it on a path the use can take."""
        for k in fn.calls:
            if k.name != "storage_offset" or k.receiver != t or k.stmt < 0:
                continue
            if k.stmt == use or runs_before(fn, k.stmt, use) or runs_after(fn, use, k.stmt):
                return True
        return False

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
            return (f"`{t}` may be a view with a non-zero storage offset (it comes from `{origin.root}`), but it is bound at "
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
