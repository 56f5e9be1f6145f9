"""
## What it does
Flags a Metal kernel (or device helper) that indexes a device buffer with a value it read from another buffer
(the contents of an index tensor: `I idx = indices[i]; ... weight[idx * stride + j]`) when nothing on the path
compares that value: no dominating `if`, early return or loop condition that mentions it (or a flag computed
from it), no `min`/`max`/`clamp`, `%` or mask around it in the subscript. One finding per function, on its first
such access.

## Why is this bad?
An index tensor holds user data. CPU and CUDA raise an `IndexError` (or a device assert) for an index out of
range; a Metal kernel that uses it unchecked reads or writes outside the buffer: silently wrong values, another
tensor's memory overwritten, or a GPU fault. `embedding_bag` read `weight[indices[i] * stride]` with no check until
pytorch/pytorch#168930 added one, reported through the kernel's error buffer.

## Example
```metal
kernel void gather_rows(device const long* indices [[buffer(0)]], device const float* table [[buffer(1)]],
                        device float* out [[buffer(2)]], constant uint& width [[buffer(3)]],
                        uint2 pos [[thread_position_in_grid]]) {
  const long row = indices[pos.y];
  out[pos.y * width + pos.x] = table[row * width + pos.x];
}
```

## Use instead
```metal
  const long row = indices[pos.y];
  if (row < 0 || row >= num_rows) {
    TORCH_REPORT_ERROR(error_buf, "index ", row, " is out of bounds for ", num_rows, " rows");
    return;
  }
```

## How to fix
Compare the index with the size of the dimension it selects before the access and report through the kernel's
error buffer (`c10/metal/error.h`: `TORCH_REPORT_ERROR`, read back by the host), or validate the index tensor
on the host before the launch. Not flagged: indices bounded in the kernel (any dominating comparison of the value,
`min`/`clamp`, `%`), loop counters that start from a loaded offset, threadgroup or thread memory, values read from buffers
named for a launch's geometry (`sizes`, `strides`, `shape`, `dims`, `extent`: the host's shape arrays), and backward
kernels (`*_backward*`, `*_grad*`): the indices they are handed are the forward's, where the check belongs;
kernels whose every launching host function (or every caller of it) validates a tensor first (`t.min()`,
`t.max()`, `at::aminmax`, `at::_assert_async`), as `bincount` does before it sizes its output; and index buffers
every visible launch binds from a tensor the op made itself (allocated in the launching function, `at::argsort(x)`,
or passed freshly allocated by every caller): a permutation it sorted, offsets it computed, in range by
construction. A device helper is judged through the kernels that hand it the buffer.

With the operation sources in the run (a PyTorch checkout, an extension's `.mm` files), a kernel no host function
in view launches is not judged (a helper whose callers are hidden behind a macro still is); Metal linted alone,
every kernel is.

Opt-in (`--select MTL209`): Metal linted alone, or launched through a binding wrapper of the extension's own
(`set_buf(enc, t, 0)`), an index tensor the op made is not told apart from one the user passed.
"""

from __future__ import annotations

import re

from mpslint.families import operation_sources
from mpslint.model import Severity
from mpslint.rule import Rule
from mpslint.semantic import hostflow as hf
from mpslint.semantic.expressions import identifiers, strip_parens, walk
from mpslint.semantic.launch_bindings import launch_tensor_origins
from mpslint.semantic.launchflow import MetalCallIndex, launchers
from mpslint.semantic.metalflow import metal_sources
from mpslint.semantic.model import semantic_model

_CLAMPS = {"min", "max", "clamp", "select"}
_BACKWARD = ("backward", "_grad", "bwd")
# buffers of a launch's geometry (bound from the host's size and stride arrays), not of a tensor's contents
_SHAPE_NAME = re.compile(r"stride|size|shape|dims?$|extent", re.I)
# tensor reductions a host uses to validate an index tensor before the launch (`TORCH_CHECK(idx.min().item<int64_t>()
# >= 0)`, `auto [lo, hi] = at::aminmax(idx)`, `at::_assert_async(...)`)
_VALIDATES = {"min", "max", "aminmax", "_aminmax", "_assert_async", "_assert_async_msg", "index_check"}


def _host_validates(fn) -> bool:
    """``fn`` reduces a tensor to its extremes or asserts on the device: it validates index values."""
    for c in fn.calls:
        if c.name not in _VALIDATES:
            continue
        if c.name in ("min", "max") and (not c.receiver or c.callee.startswith("std::") or len(c.args) > 1):
            continue  # `std::min(a, b)`, not `t.min()`
        return True
    return False


def _uncast(n):
    n = strip_parens(n)
    while n.kind == "cast" and n.kids:
        n = strip_parens(n.kids[-1])
    return n


def _buffers(fn) -> set[str]:
    """Pointer parameters in device or constant memory (the tensors a kernel is given)."""
    return {p.name for p in fn.params if p.name and "*" in p.type and p.space in ("device", "constant")}


def _load_of(n, buffers: set[str]) -> str | None:
    """``n`` is (up to casts) a load `buf[i]` of an element from one of ``buffers``: that buffer. A load at a
    constant position (`strides[0]`, `sizes[2]`) reads a shape, not a tensor's contents."""
    n = _uncast(n)
    if n.kind == "index" and len(n.kids) == 2:
        base = strip_parens(n.kids[0])
        at = strip_parens(n.kids[1])
        if base.kind == "id" and base.op in buffers and at.kind != "int" and not _SHAPE_NAME.search(base.op):
            return base.op
    return None


def _gathered(fn, buffers: set[str]) -> dict[str, str]:
    """Locals whose only value is a load from a buffer (`const long row = indices[i];`): name -> buffer."""
    assigned = {a.lhs for a in fn.assigns}
    stepped = {s.update.text for s in fn.stmts if s.update is not None}
    out = {}
    for d in fn.decls:
        if d.init is None or d.init.tree is None or d.name in assigned or d.pointer or d.array:
            continue
        if any(d.name in u for u in stepped):
            continue
        init = d.init.tree.kids[0] if d.init.tree.kind == "init" and len(d.init.tree.kids) == 1 else d.init.tree
        src = _load_of(init, buffers)
        if src is not None:
            out[d.name] = src
    return out


def _tamed(index, names: set[str]) -> bool:
    """The subscript bounds the gathered value itself: a `min`/`max`/`clamp`, a `%` or a `&` over it, or a `?:`."""
    for n in walk(index):
        if n.kind == "call" and n.op in _CLAMPS and names & identifiers(n):
            return True
        if n.kind == "binary" and n.op in ("%", "&") and names & identifiers(n):
            return True
        if n.kind == "cond" and names & identifiers(n):
            return True
    return False


class UncheckedGatheredIndex(Rule):
    code = "MTL209"
    name = "unchecked-gathered-index"
    severity = Severity.WARNING
    scope = "metal"
    default_enabled = False  # without the launch in view, an index tensor the op made is not told apart from the user's
    summary = "A buffer indexed by a value read from an index tensor, with no check of that value on the path"
    guide = "Checklist"

    def check(self, ctx):
        model = None
        graph, hosts = ctx.graph, ctx.project.hosts
        calls = MetalCallIndex(ctx.project.all_metal(), ctx.text) if operation_sources(ctx.project) else None
        sites = hf.call_sites(hosts)

        def validated(fn) -> bool:
            """Every host function that launches ``fn`` (or a kernel calling it), or every caller of it, checks the
            index values first."""
            if calls is None:
                return False
            impls = launchers(graph, frozenset(calls.ops_reaching(fn.name)))
            if not impls:
                return False
            for impl in impls:
                host = graph.attrs(impl).get("function")
                if host is None:
                    return False
                if _host_validates(host):
                    continue
                callers = hf.visible_sites(sites, host, graph.attrs(impl).get("path"))
                if not callers or not all(_host_validates(f) for _p, f, _c in callers):
                    return False
            return True

        origins = None
        metal_fns = [f for src in metal_sources(ctx) for f in src.facts.functions]

        def made_by_op(fn, buffer: str) -> bool:
            """Every visible launch binds ``buffer`` (of kernel ``fn``, or of the kernels that hand it to helper
            ``fn``) from a tensor the op allocated itself: a permutation it sorted, offsets it computed."""
            nonlocal origins
            if origins is None:
                origins = launch_tensor_origins(graph, model or semantic_model(ctx.project), hosts)
            rec = origins.get(id(fn), {}).get(buffer)
            if rec:
                return all(rec)
            index = next((i for i, p in enumerate(fn.params) if p.name == buffer), None)
            if index is None:
                return False
            recs = []
            for k in metal_fns:
                for c in k.calls:
                    if c.name == fn.name and k is not fn and index < len(c.args):
                        arg = c.args[index].text.strip()
                        got = origins.get(id(k), {}).get(arg)
                        if not got:
                            return False
                        recs += got
            return bool(recs) and all(recs)

        for src in metal_sources(ctx):
            for fn in src.facts.functions:
                if fn.body_span is None or not fn.subscripts:
                    continue
                if any(w in fn.name.lower() for w in _BACKWARD):
                    continue  # a backward kernel is handed the forward's indices, checked (or not) there
                buffers = _buffers(fn)
                if len(buffers) < 2:
                    continue
                gathered = _gathered(fn, buffers)
                inline = any(
                    sub.tree is not None and sub.tree.kind == "index" and len(sub.tree.kids) == 2
                    and any(_load_of(n, buffers) for n in walk(sub.tree.kids[1]) if n.kind == "index")
                    for sub in fn.subscripts
                )
                if not gathered and not inline:
                    continue
                model = model or semantic_model(ctx.project)
                fm = model.function(fn, src.facts)
                if calls is not None:
                    ops = frozenset(calls.ops_reaching(fn.name))
                    if ops and not launchers(graph, ops):
                        continue  # with the operation sources in the run, a kernel no host in view launches is not judged
                found = self._first_unchecked(fn, fm, buffers, gathered, lambda b, fn=fn: made_by_op(fn, b))
                if found is None or validated(fn):
                    continue
                sub, name, source = found
                yield ctx.finding(
                    self,
                    src.path,
                    sub.span,
                    f"`{sub.array}[...]` is indexed by `{name}`, a value read from `{source}` (the contents of an index "
                    f"tensor), and nothing on this path compares it with the size it selects: an index out of range or "
                    f"negative reads or writes outside `{sub.array}` (silently wrong values or a GPU fault) where CPU and "
                    f"CUDA raise an IndexError. Check it before the access and report with `TORCH_REPORT_ERROR` "
                    f"(c10/metal/error.h), or validate the indices on the host before the launch.",
                )

    @staticmethod
    def _first_unchecked(fn, fm, buffers: set[str], gathered: dict[str, str], internal=lambda b: False):
        flags: dict[str, set[str]] = {}
        for d in fn.decls:  # locals computed from a gathered value (`bool valid = row < n;`)
            if d.init is not None and d.init.tree is not None:
                used = identifiers(d.init.tree) & set(gathered)
                for g in used:
                    flags.setdefault(g, set()).add(d.name)
        # row pointers into a buffer at a gathered offset: `device const uchar* row = packed + idx * width;`
        rows: dict[str, tuple[str, object]] = {}
        for d in fn.decls:
            if not d.pointer or d.init is None or d.init.tree is None:
                continue
            init = strip_parens(d.init.tree)
            if init.kind == "binary" and init.op == "+" and len(init.kids) == 2:
                for a, b in (init.kids, init.kids[::-1]):
                    a = strip_parens(a)
                    if a.kind == "id" and a.op in buffers and identifiers(b) & set(gathered):
                        rows[d.name] = (a.op, b)
        for sub in fn.subscripts:
            t = sub.tree
            if t is None or t.kind != "index" or len(t.kids) != 2 or sub.stmt < 0:
                continue
            base = strip_parens(t.kids[0])
            if base.kind != "id":
                continue
            if base.op in rows:
                target, index = rows[base.op]  # judged by the offset the row pointer starts at
            elif base.op in buffers:
                target, index = base.op, t.kids[1]
            else:
                continue
            names = identifiers(index)
            hits = [(g, gathered[g]) for g in sorted(names & set(gathered)) if gathered[g] != target]
            if not hits:
                for n in walk(index):
                    src = _load_of(n, buffers) if n.kind == "index" else None
                    if src is not None and src != target:
                        hits = [(n.text, src)]
                        break
                if not hits:
                    continue
            name, source = hits[0]
            if internal(source):
                continue  # an index tensor the op built itself
            related = {name} | flags.get(name, set())
            if _tamed(index, related):
                continue
            conds = fm.conditions(sub.stmt)
            if any(related & identifiers(c.node) for c in conds):
                continue
            if any(st.tree is not None and st.kind in ("if_statement", "while_statement") and related & identifiers(st.tree)
                   for st in fn.stmts[: sub.stmt]):
                continue  # compared before, in an `if` that does not stop the access: MTL203's missing return
            return sub, name, source
        return None
