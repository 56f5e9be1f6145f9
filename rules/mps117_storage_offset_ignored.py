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
from mpslint.semantic.expressions import int_literal, strip_parens
from mpslint.model import Severity
from mpslint.rule import Rule

_ZERO = re.compile(r"\s*0+\s*[uUlL]*\s*")
_OFFSET_OF = re.compile(r"([A-Za-z_]\w*)\s*(?:\.|->)\s*storage_offset\s*\(\s*\)")
_BYTES = re.compile(r"element_size\s*\(|itemsize\s*\(|\bsizeof\s*\(|nbytes")


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
    summary = "Tensor buffer bound at an offset that ignores (or miscomputes) the tensor's storage_offset()"
    guide = "Working with TensorIterators"

    def check(self, ctx):
        for path in sorted(ctx.project.hosts):
            for fn in ctx.project.hosts[path].functions:
                impl = f"impl:{path}:{fn.name}"
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
