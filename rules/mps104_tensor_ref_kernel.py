"""
## What it does
Flags (1) a launch helper that takes `Tensor&`/`TensorBase&` and binds that tensor whole
(`mtl_setArgs`, `mtl_setBuffer`, `[encoder setBuffer:...]`) while its callers hand it the operands of a
`TensorIterator` — a `TensorIteratorBase&` and `bind_iter_tensors` belong there; and (2) a
`const_cast` of a `TensorBase`/`Tensor` used to build an iterator.

## Why is this bad?
A `Tensor&` loses the offset and shape that `with_32bit_indexing()` gives each sub-iterator, so the
helper can only ever bind the whole tensor: wrong results past `INT32_MAX` elements, and no way to
split. Const-casting a `const TensorBase&` to build an iterator writes through a `const` reference
and skips the iterator's borrowing semantics.

## Example
```objc
static void launch_fill(const Tensor& out, float v) {
  mtl_setArgs(encoder, out, v);
}
static void fill_kernel(TensorIteratorBase& iter, float v) {
  launch_fill(iter.output(), v);
}
auto iter = TensorIterator::nullary_op(const_cast<TensorBase&>(self));
```

## Use instead
```objc
static void launch_fill(TensorIteratorBase& iter, float v) {
  bind_iter_tensors(encoder, iter, /*ntensors=*/1);
  mtl_setArgs<1>(encoder, v);
}
auto iter = at::TensorIterator::borrowing_nullary_op(self);
```

## How to fix
Pass the `TensorIteratorBase&` down to the helper and bind with `bind_iter_tensors`; when a stub
hands you a `const TensorBase&`, build the iterator with `TensorIterator::borrowing_nullary_op(self)`.

Guide: *Working with TensorIterators* — "Pass `TensorIteratorBase&`, not `Tensor&`".
"""

from __future__ import annotations


from mpslint.semantic import hostflow as hf
from mpslint.model import Severity
from mpslint.rule import Rule
from mpslint.semantic.expressions import identifiers
from mpslint.semantic.model import semantic_model
from mpslint.semantic.types import parse_type

# calls that put a tensor into a TensorIterator (a config's add_*, the static builders, the constructors)
_ITER_BUILD = {
    "add_output", "add_owned_output", "add_input", "add_owned_input", "add_const_input", "add_borrowed_input",
    "add_borrowed_output", "nullary_op", "unary_op", "binary_op", "borrowing_nullary_op", "borrowing_unary_op",
    "borrowing_binary_op", "unary_float_op", "binary_float_op", "comparison_op", "reduce_op",
}


def _builds_iterator(call) -> bool:
    return call.name in _ITER_BUILD or call.name.startswith("TensorIterator")


class TensorRefKernel(Rule):
    code = "MPS104"
    name = "tensor-ref-kernel"
    severity = Severity.WARNING
    scope = "host"
    summary = "Launch helper takes `Tensor&` and binds whole tensors where `TensorIteratorBase&` belongs; or const_cast to build an iterator"
    guide = "Working with TensorIterators"
    contexts = ("pytorch",)  # a PyTorch convention (mpslint.context)

    def check(self, ctx):
        hosts = ctx.project.hosts
        by_name = hf.functions_by_name(hosts)
        model = semantic_model(ctx.project)
        # helper (path, name) -> {param index: (param, caller, argument text)}
        misuse: dict[tuple[str, str], dict[int, tuple]] = {}
        helpers: dict[tuple[str, str], object] = {}
        for path in sorted(hosts):
            for fn in hosts[path].functions:
                yield from self._const_cast(ctx, path, fn)
                iters = hf.iter_params(fn)
                if not iters:
                    continue
                fm = model.function(fn, hosts[path])
                for call in fn.calls:
                    if call.name in hf.BINDERS:
                        continue
                    for k, arg in enumerate(call.args):
                        t = arg.text.strip()
                        if arg.tree is None or not _iterator_operand(fm, arg.tree, call.stmt, set(iters)):
                            continue
                        for hpath, helper in by_name.get(call.name, []):
                            if k >= len(helper.params) or hf.iter_params(helper):
                                continue
                            p = helper.params[k]
                            if hf.TENSOR_REF_TYPE.search(p.type) and self._binds(helper, p.name):
                                key = (hpath, helper.name)
                                helpers[key] = helper
                                misuse.setdefault(key, {}).setdefault(k, (p, fn.name, t))
        for (hpath, _name), params in sorted(misuse.items()):
            helper = helpers[(hpath, _name)]
            first = params[min(params)]
            names = ", ".join(f"`{p.name}`" for p, _, _ in (params[i] for i in sorted(params)))
            p, caller, arg = first
            yield ctx.finding(
                self,
                hpath,
                p.span,
                f"`{helper.name}` takes whole tensors ({names}) and binds them, but `{caller}` passes it iterator "
                f"operands (`{arg}`); take `TensorIteratorBase& iter` instead and bind with `bind_iter_tensors(encoder, iter)`.",
            )

    @staticmethod
    def _binds(fn, name):
        return any(a.text == name for c in fn.calls for a in hf.bound_args(c))

    def _const_cast(self, ctx, path, fn):
        casted: dict[str, int] = {}
        builders = [b for b in fn.calls if _builds_iterator(b)]
        for c in fn.calls:
            if c.name != "const_cast" or parse_type(c.template, {}).kind != "tensor" or not c.template.rstrip().endswith("&"):
                continue
            # the cast is an argument of a builder call, or is held in a local a later builder call takes
            feeds = any(b.span.start <= c.span.start and c.span.end <= b.span.end for b in builders)
            if not feeds:
                for d in fn.decls:
                    if d.stmt == c.stmt:
                        casted[d.name] = c.stmt
                        if any(b.stmt > c.stmt and any(a.tree is not None and d.name in identifiers(a.tree) for a in b.args) for b in builders):
                            feeds = True
            if feeds:
                yield ctx.finding(
                    self,
                    path,
                    c.span,
                    f"`const_cast<{c.template}>` is used to build a TensorIterator; use "
                    f"`at::TensorIterator::borrowing_nullary_op(...)` (or a borrowing config) on the const tensor instead.",
                )


def _iterator_operand(fm, node, stmt: int, iters: set[str]) -> bool:
    """``node`` holds a whole operand of one of ``iters`` (`iter.output()`, or a local bound to one)."""
    o, at = fm.origin(node, stmt)
    if o.kind != "call" or o.op not in hf.WHOLE_TENSOR_CALLS or o.receiver is None:
        return False
    r, _ = fm.origin(o.receiver, at)
    return r.kind == "id" and r.op in iters
