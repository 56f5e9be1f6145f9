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

import re

from mpslint import hostflow as hf
from mpslint.model import Fix, Severity
from mpslint.rule import Rule


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
        for path in sorted(hosts):
            for fn in hosts[path].functions:
                iters = hf.iter_params(fn)
                if not iters or not (hf.splits(fn) or fn.name in sub_callees):
                    continue
                yield from self._check_fn(ctx, path, fn, iters, by_name)

    def _check_fn(self, ctx, path, fn, iters, by_name):
        rx = hf.whole_tensor_rx(iters)
        loops = hf.subiter_loops(fn)
        al = hf.aliases(fn, rx)
        alias_rx = re.compile(r"^(" + "|".join(map(re.escape, al)) + r")$") if al else None

        def whole(text: str) -> str | None:
            t = text.strip()
            if rx.fullmatch(t):
                return t
            if alias_rx and alias_rx.fullmatch(t):
                return t
            return None

        # size-valued locals derived from a whole tensor: `auto n = out.numel();`
        whole_sizes: dict[str, str] = {}
        for d in fn.decls:
            if d.init is not None and self._whole_size(d.init.text, rx, al):
                whole_sizes[d.name] = d.init.text
        it = iters[0]
        for call in fn.calls:
            if hf.in_loop(fn, call.stmt, loops):
                continue  # the split loop itself
            for arg in hf.bound_args(call):
                w = whole(arg.text)
                if w:
                    yield ctx.finding(
                        self,
                        path,
                        arg.span,
                        f"`{w}` is the whole tensor, not this sub-iterator's slice: binding it makes every 32-bit chunk "
                        f"read/write the same prefix. Bind the operands with `bind_iter_tensors(encoder, {it})` instead.",
                    )
            if call.name in ("setBuffer",) and call.args:
                m = re.fullmatch(r"getMTLBufferStorage\((.*)\)", call.args[0].text)
                if m and whole(m.group(1)):
                    continue  # reported through getMTLBufferStorage
            for arg in hf.dispatch_size_args(call):
                hit = self._whole_size(arg.text, rx, al)
                var = next((v for v in whole_sizes if re.search(r"(?<![\w.])" + re.escape(v) + r"\b", arg.text)), None)
                if hit or var:
                    what = hit or f"{var} = {whole_sizes[var]}"
                    fix = None
                    if hit and re.fullmatch(r".*\.\s*numel\s*\(\s*\)", arg.text) and arg.text == hit:
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
                w = whole(arg.text)
                if not w or call.name in hf.BINDERS or call.name == "getMTLBufferStorage":
                    continue
                for _hpath, helper in by_name.get(call.name, []):
                    if k < len(helper.params) and hf.TENSOR_REF_TYPE.search(helper.params[k].type) and self._binds(helper, helper.params[k].name):
                        yield ctx.finding(
                            self,
                            path,
                            arg.span,
                            f"`{w}` (the whole tensor) is passed to `{call.name}`, which binds it to the encoder; on a "
                            f"sub-iterator pass `{it}` and bind with `bind_iter_tensors` inside the helper.",
                        )
                        break

    @staticmethod
    def _whole_size(text: str, rx, al) -> str | None:
        names = [rx.pattern]
        for m in re.finditer(r"((?:" + rx.pattern + r")|[A-Za-z_]\w*)\s*(?:\.|->)\s*(numel|sizes|strides|size|stride)\s*\([^()]*\)(\s*\[[^\]]*\])?", text):
            recv = m.group(1)
            if rx.fullmatch(recv) or recv in al:
                return m.group(0)
        del names
        return None

    @staticmethod
    def _binds(fn, name: str) -> bool:
        for c in fn.calls:
            for a in hf.bound_args(c):
                if a.text == name:
                    return True
        return False
