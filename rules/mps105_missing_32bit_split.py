"""
## What it does
Flags a kernel launch driven by a `TensorIterator` (the iterator is bound with `bind_iter_tensors`, or
its operands — also through locals such as `auto out = iter.output();` —, `numel()` or `shape()` feed
the launch) in a function that neither checks
`iter.can_use_32bit_indexing()` nor recurses over `iter.with_32bit_indexing()`.

## Why is this bad?
Most Metal kernels index in 32 bits (`uint` thread ids, `uint`/`int` offsets). An iterator over more
than `INT32_MAX` elements (or with byte offsets past it) launches one grid whose indices wrap: the
kernel reads and writes the wrong elements and the output is silently corrupt. `TensorIterator` can
split itself into sub-iterators that each fit 32-bit indexing; the launch has to ask for it.

## Example
```objc
static void lerp_kernel(TensorIteratorBase& iter, const Scalar& weight) {
  auto pso = lib.getPipelineStateForFunc("lerp_" + scalarToMetalTypeString(iter.output()));
  dispatch_sync_with_rethrow(stream->queue(), ^() {
    bind_iter_tensors(encoder, iter);
    mtl_dispatch1DJob(encoder, pso, iter.numel());
  });
}
```

## Use instead
```objc
static void lerp_kernel(TensorIteratorBase& iter, const Scalar& weight) {
  if (!iter.can_use_32bit_indexing()) {
    for (auto&& sub_iter : iter.with_32bit_indexing()) {
      lerp_kernel(sub_iter, weight);
    }
    return;
  }
  ...
}
```

## How to fix
Add the split above at the top of the function (forward every parameter, see MPS106), or launch
through `lib.exec_unary_kernel` / `exec_binary_kernel` / `exec_*_kernel_with_params`, which split
inside. Not flagged: functions only ever called from a split loop or from callers that check
`can_use_32bit_indexing()` first, functions that pick a 64-bit kernel variant from
`can_use_32bit_indexing()`, launches whose sizes a `TORCH_CHECK` bounds to 32 bits, and functions
handed to other code as a value, whose callers cannot be seen.

The checks are judged by the semantic model: a check counts only where it dominates the launch
(`TORCH_INTERNAL_ASSERT(iter.can_use_32bit_indexing())` before it, the branch of an `if` that tests it,
an early `return`/`TORCH_CHECK(false)` when it fails), and only for what it bounds: a bound on
`iter.ndim()` is not a bound on the element count, and a check inside `if (strict) { ... }` does not
cover the path where `strict` is false. A caller's check covers the call it dominates.

A helper's `bool` parameter is read as its callers set it (see MPS102, "Flag parameters"):
`TORCH_CHECK(trust_me || iter.can_use_32bit_indexing())` bounds the iterator where every call in view passes
`false` (or omits a flag whose prototype defaults to `false`, or nothing in view calls the helper), and not where
a call passes `true` or a run-time value.

Guide: *Working with Large Tensors* — "Decompose via `iter.with_32bit_indexing()`".
"""

from __future__ import annotations


from mpslint.semantic import hostflow as hf
from mpslint.model import Severity
from mpslint.rule import Rule
from mpslint.semantic.expressions import identifiers, strip_parens, walk
from mpslint.semantic.guards import CHECKS
from mpslint.semantic.model import semantic_model
from mpslint.semantic.ranges import UINT32_MAX

_ITER_USERS = ("bind_iter_tensors", "iter_tensor_offset", "generateKernelDataOffsets") + hf.BINDERS


class Missing32BitSplit(Rule):
    code = "MPS105"
    name = "missing-32bit-split"
    severity = Severity.ERROR
    scope = "host"
    summary = "Iterator-driven launch without `can_use_32bit_indexing()` / `with_32bit_indexing()` split"
    guide = "Working with Large Tensors"

    def check(self, ctx):
        hosts = ctx.project.hosts
        sub_callees = {hf.short_name(n) for n in hf.subiter_callees(hosts)}
        sites = hf.call_sites(hosts)
        registered = hf.registered_functions(hosts)
        escaping = hf.escaping_functions(hosts)
        entries = registered | ctx.graph.dispatched_functions()

        model = semantic_model(ctx.project)

        def caller_checks(cpath, caller, call) -> bool:
            """The caller keeps the call in 32 bits: it calls from a split loop, or a check dominating the call
            bounds what it passes (its own iterator's `can_use_32bit_indexing()`, an element count)."""
            loops = hf.subiter_loops(caller)
            if hf.in_loop(caller, call.stmt, loops) or hf.short_name(caller.name) in sub_callees:
                return True
            if self._self_split(caller):
                return True
            cfm = model.function(caller, hosts.get(cpath))
            passed = [strip_parens(a.tree) for a in call.args if a.tree is not None]
            return any(n.kind == "id" and self._bounded(cfm, call.stmt, n.op) for n in passed) or self._bounded(cfm, call.stmt, None)

        for path in sorted(hosts):
            for fn in hosts[path].functions:
                iters = hf.local_iterators(fn)
                if not iters:
                    continue
                # a helper's flag parameters as its callers set them (`TORCH_CHECK(use_64bit_index ||
                # iter.can_use_32bit_indexing())` bounds the iterator where every call leaves the flag false)
                flags = hf.flag_arguments(fn, path, sites, entries, escaping, hosts)
                fm = model.as_called(fn, hosts[path], flags)
                launch = self._iter_launch(fm, iters)
                if launch is None:
                    continue
                it = launch[1]
                if hf.subiter_loops(fn) or self._self_split(fn):
                    continue
                if hf.short_name(fn.name) in sub_callees:
                    continue
                if self._bounded(fm, launch[0].stmt, it) or self._width_dispatch(fm, it):
                    continue
                if hf.all_callers(fn.name, sites, registered, caller_checks, fn=fn, path=path):
                    continue
                if hf.unreachable(fn, path, sites, registered, escaping):
                    continue  # a static function nothing calls, or one passed as a value: its callers are not visible
                if self._binds_whole_tensors(fm, it):
                    # a split would relaunch on the whole tensors (MPS101): each sub-iterator redoes the first chunk
                    advice = (f"It binds whole tensors of `{it}` (`{it}.tensor(k)`/`output()`), so a "
                              f"`with_32bit_indexing()` split would redo the first chunk on every sub-iterator. Either "
                              f"make the kernel's index math 64-bit (`ulong` offsets computed from the thread position, "
                              f"so large inputs work), or add `TORCH_CHECK({it}.can_use_32bit_indexing(), \"...\")` "
                              f"before the launch (large inputs then fail loudly), or bind the sub-iterator's operands "
                              f"(`bind_iter_tensors`) and split.")
                else:
                    advice = (f"Add `if (!{it}.can_use_32bit_indexing()) {{ for (auto&& sub_iter : "
                              f"{it}.with_32bit_indexing()) {{ {hf.short_name(fn.name)}(sub_iter, ...); }} return; }}` before the launch.")
                yield ctx.finding(
                    self,
                    path,
                    launch[0].span,
                    f"`{hf.short_name(fn.name)}` launches on `{it}` without a 32-bit split: past INT32_MAX elements the "
                    f"kernel's 32-bit indices wrap. " + advice,
                )

    @staticmethod
    def _binds_whole_tensors(fm, it: str) -> bool:
        """A binding call of the function binds a whole tensor of ``it`` (`iter.tensor(0)`, `iter.output()`,
        also through a local), not the iterator's operands."""
        fn = fm.fn
        for c in fn.calls:
            for a in hf.bound_args(c):
                if a.tree is None:
                    continue
                o, at = fm.origin(a.tree, c.stmt)
                o = strip_parens(o)
                if o.kind == "call" and o.op in hf.WHOLE_TENSOR_CALLS and o.receiver is not None and strip_parens(fm.origin(o.receiver, at)[0]).key() == it:
                    return True
        return False

    @staticmethod
    def _self_split(fn) -> bool:
        return any("with_32bit_indexing" in c.name for c in fn.calls)

    @staticmethod
    def _iter_launch(fm, iters):
        """(launch call, iterator) when a direct launch in the function is driven by one of ``iters``: the
        iterator (or one of its operands, also through locals: `auto out = iter.output();`) is bound, or
        sizes the grid."""
        fn = fm.fn
        launches = hf.launches(fn)
        if not launches:
            return None

        def drives(node, stmt, it) -> bool:
            for n in walk(node):
                if n.kind != "id":
                    continue
                o, at = fm.origin(n, stmt)
                if o.kind == "id" and o.op == it:
                    return True
                if o.kind == "call" and o.receiver is not None and strip_parens(fm.origin(o.receiver, at)[0]).key() == it:
                    return True  # `iter.output()`, `iter.numel()` through a local
            return False

        for it in iters:
            for c in fn.calls:
                if c.name in _ITER_USERS and any(a.tree is not None and drives(a.tree, c.stmt, it) for a in c.args):
                    return launches[0], it
            for c in launches:
                if any(a.tree is not None and drives(a.tree, c.stmt, it) for a in hf.dispatch_size_args(c)):
                    return launches[0], it
        return None

    @staticmethod
    def _bounded(fm, stmt, it: str | None) -> bool:
        """The checks that dominate the launch keep it in 32 bits: ``it.can_use_32bit_indexing()`` holds, or an
        element count is bounded by a 32-bit limit (the iterator's, or a tensor's: an iterator's operands have
        the output's element count)."""
        bounds = fm.bounds(stmt)
        if it and fm.name_key(it, stmt) + "#32bit" in bounds:
            return True
        for k, b in bounds.items():
            if k.endswith(".numel()") and b.interval.hi is not None and b.interval.hi <= UINT32_MAX:
                return True
        return False

    @staticmethod
    def _width_dispatch(fm, it) -> bool:
        """``can_use_32bit_indexing()`` picks the kernel variant: its result is kept in a local the function
        reads again (``use_64bit ? "k_64" : "k_32"``), so a 64-bit variant exists for large iterators."""
        fn = fm.fn

        def checks_it(tree) -> bool:
            for n in walk(tree):
                if n.kind == "call" and n.op in ("can_use_32bit_indexing", "canUse32BitIndexMath"):
                    recv = n.receiver if n.receiver is not None else (n.args[0] if n.args else None)
                    if recv is not None and strip_parens(recv).key() == it:
                        return True
            return False

        flags = set()
        for d in fn.decls:
            if d.init is not None and d.init.tree is not None and checks_it(d.init.tree):
                flags.add(d.name)  # `const bool use_64bit = !iter.can_use_32bit_indexing();`
        for c in fn.calls:
            # `TORCH_CHECK(use_64bit_index || iter.can_use_32bit_indexing())`: the flag names the 64-bit variant
            if c.name in CHECKS and c.args and c.args[0].tree is not None and checks_it(c.args[0].tree):
                flags |= {x for x in identifiers(c.args[0].tree) if x != it}
        if not flags:
            return False
        for c in fn.calls:
            if c.name not in CHECKS and c.tree is not None and flags & identifiers(c.tree):
                return True  # the flag feeds a call: the pipeline name, a helper that picks the variant
        return any(s.kind == "if_statement" and s.tree is not None and flags & identifiers(s.tree) for s in fn.stmts)
