"""
## What it does
Flags, in a kernel launch driven by a `TensorIterator` that runs on 32-bit sub-iterators, a *whole*
tensor taken from the iterator (`iter.tensor(i)`, `iter.output(i)`, `iter.input(i)`, directly, through
a local alias such as `const Tensor& out = iter.output();`, or through a helper that takes it as
`Tensor&`) that is bound to the encoder, or whose `numel()`/`sizes()`/`strides()` size the dispatch.

## Why is this bad?
After `iter.with_32bit_indexing()`, every sub-iterator still refers to the original tensor:
`iter.output()` is the whole storage, not this chunk's slice. Binding it makes every sub-iterator
write the same prefix of the output and leaves the tail uninitialised; sizing the grid with
`iter.output().numel()` launches the whole tensor's worth of threads for every chunk. The result is
silently wrong only for tensors past `INT32_MAX` elements, which tests rarely reach.

## Example
```objc
static void fill_kernel(TensorIteratorBase& iter, const Scalar& v) {
  if (!iter.can_use_32bit_indexing()) {
    for (auto&& sub_iter : iter.with_32bit_indexing()) {
      fill_kernel(sub_iter, v);
    }
    return;
  }
  const auto& out = iter.output();
  mtl_setArgs(encoder, out, v);                 // whole tensor bound
  mtl_dispatch1DJob(encoder, pso, out.numel()); // whole tensor's size
}
```

## Use instead
```objc
  bind_iter_tensors(encoder, iter, /*ntensors=*/1);
  mtl_setArgs<1>(encoder, v);
  mtl_dispatch1DJob(encoder, pso, iter.numel());
```

## How to fix
Bind the iterator's operands with `bind_iter_tensors(encoder, iter)` (it computes each chunk's
offset) and size the dispatch with `iter.numel()` / `iter.shape()`. Uses of the whole tensor for its
dtype, options or device are fine and not flagged.

Guide: *Working with TensorIterators* — "`iter.tensor(0)` returns the whole tensor for sub-iters".
"""

from __future__ import annotations

from mpslint.semantic import hostflow as hf
from mpslint.model import Fix, Severity
from mpslint.rule import Rule
from mpslint.semantic.expressions import strip_parens, walk
from mpslint.semantic.model import semantic_model


# a buffer taken with the sub-iterator's offset added, or only made resident: not a whole-tensor binding
_SLICE_AWARE = {"iter_tensor_offset", "useResource", "useResources"}


class WholeTensorInSubiterator(Rule):
    code = "MPS101"
    name = "whole-tensor-in-subiterator"
    severity = Severity.ERROR
    scope = "host"
    summary = "Whole tensor from `iter.tensor()`/`iter.output()` bound or used to size a sub-iterator launch"
    fixable = "safe"
    guide = "Working with TensorIterators"

    def check(self, ctx):
        hosts = ctx.project.hosts
        sub_callees = hf.subiter_callees(hosts)
        by_name = hf.functions_by_name(hosts)
        model = semantic_model(ctx.project)
        for path in sorted(hosts):
            for fn in hosts[path].functions:
                iters = hf.iter_params(fn)
                if not iters or not (hf.splits(fn) or fn.name in sub_callees):
                    continue
                yield from self._check_fn(ctx, path, model.function(fn, hosts[path]), iters, by_name)

    def _check_fn(self, ctx, path, fm, iters, by_name):
        fn = fm.fn
        loops = hf.subiter_loops(fn)
        iter_set = set(iters)

        def is_iter(node, stmt) -> bool:
            o, _ = fm.origin(node, stmt)  # `auto& it = iter;` is the iterator too
            return o.kind == "id" and o.op in iter_set

        def whole(node, stmt):
            """``node`` holds a whole tensor of the iterator (`iter.output()`, or a local bound to one): its text."""
            o, at = fm.origin(node, stmt)
            if o.kind == "call" and o.op in hf.WHOLE_TENSOR_CALLS and o.receiver is not None and is_iter(o.receiver, at):
                return o.text
            return None

        def whole_size(node, stmt):
            """A size of a whole tensor inside ``node`` (also through locals: `auto n = out.numel();`)."""
            o, at = fm.origin(node, stmt)
            for n in walk(o):
                if n.kind == "call" and n.op in ("numel", "sizes", "strides", "size", "stride") and n.receiver is not None:
                    if whole(n.receiver, at):
                        return n.text if o is strip_parens(node) else f"{strip_parens(node).text} = {o.text}"
                if n.kind == "id" and n is not o and n.op not in iter_set:
                    got = whole_size(n, at) if fm.origin(n, at)[0] is not n else None
                    if got:
                        return f"{n.op} = {got}"
            return None

        it = iters[0]
        for call in fn.calls:
            if hf.in_loop(fn, call.stmt, loops):
                continue  # the split loop itself
            same_stmt = {c.name for c in fn.calls if c.stmt == call.stmt}
            if call.name == "getMTLBufferStorage" and same_stmt & _SLICE_AWARE:
                continue  # offset by the sub-iterator's own offset (`+ iter_tensor_offset(iter, k)`), or residency only
            for arg in hf.bound_args(call):
                w = whole(arg.tree, call.stmt) if arg.tree is not None else None
                if w:
                    yield ctx.finding(
                        self,
                        path,
                        arg.span,
                        f"`{arg.text}` is the whole tensor, not this sub-iterator's slice: binding it makes every 32-bit chunk "
                        f"read/write the same prefix. Bind the operands with `bind_iter_tensors(encoder, {it})` instead."
                        + ("" if w == arg.text else f" (`{arg.text}` is `{w}`.)"),
                    )
            for arg in hf.dispatch_size_args(call):
                if arg.tree is None:
                    continue
                what = whole_size(arg.tree, call.stmt)
                if what:
                    fix = None
                    n = strip_parens(arg.tree)
                    if n.kind == "call" and n.op == "numel" and not n.args and what == n.text:
                        fix = Fix(f"Use `{it}.numel()`", (ctx.edit(path, arg.span.start, arg.span.end, f"{it}.numel()"),), "safe")
                    yield ctx.finding(
                        self,
                        path,
                        arg.span,
                        f"dispatch sized by `{what}`, the whole tensor's size, on a sub-iterator; "
                        f"use `{it}.numel()` (or `{it}.shape()`) so each chunk launches its own elements.",
                        fix=fix,
                    )
            # whole tensors handed to a helper that binds them
            for k, arg in enumerate(call.args):
                w = whole(arg.tree, call.stmt) if arg.tree is not None else None
                if not w or call.name in hf.BINDERS or call.name == "getMTLBufferStorage":
                    continue
                for _hpath, helper in by_name.get(call.name, []):
                    if k < len(helper.params) and hf.TENSOR_REF_TYPE.search(helper.params[k].type) and self._binds(helper, helper.params[k].name):
                        yield ctx.finding(
                            self,
                            path,
                            arg.span,
                            f"`{arg.text}` (the whole tensor) is passed to `{call.name}`, which binds it to the encoder; on a "
                            f"sub-iterator pass `{it}` and bind with `bind_iter_tensors` inside the helper.",
                        )
                        break

    @staticmethod
    def _binds(fn, name: str) -> bool:
        for c in fn.calls:
            for a in hf.bound_args(c):
                if a.text == name:
                    return True
        return False
