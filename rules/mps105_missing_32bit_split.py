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

Guide: *Working with Large Tensors* — "Decompose via `iter.with_32bit_indexing()`".
"""

from __future__ import annotations

import re

from mpslint import hostflow as hf
from mpslint.model import Severity
from mpslint.rule import Rule

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

        def caller_checks(_path, caller, call) -> bool:
            loops = hf.subiter_loops(caller)
            if hf.in_loop(caller, call.stmt, loops) or hf.short_name(caller.name) in sub_callees:
                return True
            k = hf.has_32bit_check(caller)
            return 0 <= k <= call.stmt or self._self_split(caller)

        for path in sorted(hosts):
            for fn in hosts[path].functions:
                iters = hf.local_iterators(fn)
                if not iters:
                    continue
                launch = self._iter_launch(fn, iters)
                if launch is None:
                    continue
                it = launch[1]
                if hf.has_32bit_check(fn) >= 0 or hf.subiter_loops(fn) or self._self_split(fn):
                    continue
                if hf.short_name(fn.name) in sub_callees:
                    continue
                if self._bounded(fn, launch[0].stmt, it):
                    continue
                if hf.all_callers(fn.name, sites, registered, caller_checks, fn=fn, path=path):
                    continue
                if hf.unreachable(fn, path, sites, registered, escaping):
                    continue  # a static function nothing calls, or one passed as a value: its callers are not visible
                yield ctx.finding(
                    self,
                    path,
                    launch[0].span,
                    f"`{hf.short_name(fn.name)}` launches on `{it}` without a 32-bit split: past INT32_MAX elements the "
                    f"kernel's 32-bit indices wrap. Add `if (!{it}.can_use_32bit_indexing()) {{ for (auto&& sub_iter : "
                    f"{it}.with_32bit_indexing()) {{ {hf.short_name(fn.name)}(sub_iter, ...); }} return; }}` before the launch.",
                )

    @staticmethod
    def _self_split(fn) -> bool:
        return any("with_32bit_indexing" in c.name for c in fn.calls)

    @staticmethod
    def _iter_launch(fn, iters):
        """(launch call, iterator) when a direct launch in ``fn`` is driven by one of ``iters``."""
        launches = hf.launches(fn)
        if not launches:
            return None
        for it in iters:
            rx = hf.whole_tensor_rx([it])
            names = [it] + list(hf.aliases(fn, rx))  # `auto out = iter.output();` drives the launch as well
            uses = False
            for c in fn.calls:
                if c.name in _ITER_USERS and any(hf.mentions(a.text, n) for a in c.args for n in names):
                    uses = True
                    break
            if not uses:
                for c in launches:
                    if any(hf.mentions(a.text, n) for a in hf.dispatch_size_args(c) for n in names):
                        uses = True
                        break
            if uses:
                return launches[0], it
        return None

    @staticmethod
    def _bounded(fn, stmt, it) -> bool:
        """A check before the launch bounds the iterator's (or a tensor's) element count to 32 bits."""
        for g in hf.checks_before(fn, stmt):
            if hf.LIMIT_TOKENS.search(g) and (hf.mentions(g, it) or re.search(r"\bnumel\s*\(", g)):
                return True
        return False
