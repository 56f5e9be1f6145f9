"""
## What it does
Flags, in an op's entry point (`TORCH_IMPL_FUNC(x_mps)` or a `*_mps` function no other project code
calls; not a `REGISTER_DISPATCH` stub, whose generic ATen caller often makes operands contiguous), an input tensor parameter (`const Tensor&`, not named like an output) bound whole to the encoder (`mtl_setArgs`, `mtl_setBuffer`,
`getMTLBufferStorage`) for a 1-D launch over elements, when nothing in the function makes or checks
that tensor contiguous (`.contiguous()`, `is_contiguous()`, `expect_contiguous`, `needsGather`,
`is_dense_in_storage`) and neither its strides nor the iterator's are passed to the kernel. Opt-in
(`--select MPS112`).

## Why is this bad?
Binding a tensor whole passes its storage and `storage_offset`, nothing about its layout; a kernel that
indexes `input[tid]` then reads the storage in memory order. For a transposed, sliced or expanded input
(`x.t()`, `x[:, ::2]`, `x.expand(...)`) that is not element order: the op returns the right values in the
wrong places (or reads past the view), with no error, and only for non-contiguous inputs, which OpInfo
tests exercise only some of the time. The guide's checklist: "Handles non-contiguous tensors".

## Example
```objc
TORCH_IMPL_FUNC(lgamma_out_mps)(const Tensor& self, const Tensor& output) {
  ...
  mtl_setArgs(encoder, self, output);
  mtl_dispatch1DJob(encoder, pso, output.numel());
}
```

## Use instead
```objc
TORCH_IMPL_FUNC(lgamma_out_mps)(const Tensor& self, const Tensor& output) {
  auto self_ = self.contiguous();
  ...
  mtl_setArgs(encoder, self_, output);
```
or, better, make it a `TensorIterator` op (`lib.exec_unary_kernel(iter, "lgamma")`), which picks a
strided kernel variant by itself.

## How to fix
Make the input contiguous first, pass its `sizes()`/`strides()` to a strided kernel variant, or move the
op to `exec_unary_kernel`/`exec_binary_kernel`. Opt-in because the rule cannot see a caller's layout
guarantees beyond the function (a yaml entry restricted to contiguous inputs, a `.contiguous()` in the
Python wrapper).

Guide: *Checklist* — "Handles non-contiguous tensors".
"""

from __future__ import annotations

import re

from mpslint.semantic import hostflow as hf
from mpslint.model import Severity
from mpslint.rule import Rule

_TENSOR_PARAM = re.compile(r"^const\s+(?:at::)?Tensor\s*&$")
# outputs: structured kernels hand TORCH_IMPL_FUNC a contiguous proxy when the user's `out=` is strided
_OUTPUT_NAME = re.compile(r"^(?:out|output|result|values|indices|res)(?:_\w*)?$|_out$")
_LAYOUT_WORDS = ("is_contiguous", "contiguous", "expect_contiguous", "needsGather", "is_dense_in_storage", "is_non_overlapping_and_dense", "gatherViewTensor", "strides", "stride", "suggest_memory_format")


class DenseKernelOnStridedInput(Rule):
    code = "MPS112"
    name = "dense-kernel-on-strided-input"
    severity = Severity.WARNING
    scope = "host"
    default_enabled = False
    summary = "Op binds a tensor argument whole to a 1-D element launch with no contiguity check or strided variant"
    guide = "Checklist"

    def check(self, ctx):
        hosts = ctx.project.hosts
        sites = hf.call_sites(hosts)
        stubs = hf.registered_stubs(hosts)
        for path in sorted(hosts):
            for fn in hosts[path].functions:
                if hf.short_name(fn.name) in stubs:
                    continue  # a stub: ATen's generic code before it often makes the operands contiguous
                if not self._entry_point(fn, sites):
                    continue
                if hf.local_iterators(fn) or any(hf.EXEC_KERNEL.match(c.name) for c in fn.calls):
                    continue
                if not any(c.name in ("mtl_dispatch1DJob", "dispatchThreads") for c in fn.calls):
                    continue
                yield from self._check_fn(ctx, path, fn)

    @staticmethod
    def _entry_point(fn, sites) -> bool:
        if fn.kind == "impl_func":
            return True
        name = hf.short_name(fn.name)
        return bool(re.search(r"_mps_?$", name)) and not sites.get(name)

    def _check_fn(self, ctx, path, fn):
        params = [p.name for p in fn.params if p.name and _TENSOR_PARAM.match(p.type.strip()) and not _OUTPUT_NAME.search(p.name)]
        if not params:
            return
        # locals that alias a parameter (`Tensor output = output_;`) count as that parameter
        alias = {p: p for p in params}
        for d in fn.decls:
            if d.init is not None and d.init.text.strip() in alias and "contiguous" not in d.init.text:
                alias[d.name] = alias[d.init.text.strip()]
        handled = set()
        for name, root in alias.items():
            for c in fn.calls:
                if c.name in _LAYOUT_WORDS and (hf.mentions(c.receiver, name) or any(hf.mentions(a.text, name) for a in c.args)):
                    handled.add(root)
            for s in fn.stmts:  # a CPU scalar or a 0-dim tensor has no layout to get wrong
                if re.search(r"(?<![\w.])" + re.escape(name) + r"\s*\.\s*(?:is_cpu\s*\(\s*\)|dim\s*\(\s*\)\s*==\s*0)", s.text):
                    handled.add(root)
            for a in fn.assigns:
                if hf.mentions(a.lhs, name) and "contiguous" in a.rhs.text:
                    handled.add(root)
        reported = set()
        for c in fn.calls:
            for arg in hf.bound_args(c):
                t = arg.text.strip()
                root = alias.get(t)
                if root is None or root in handled or root in reported:
                    continue
                reported.add(root)
                yield ctx.finding(
                    self,
                    path,
                    arg.span,
                    f"`{t}` is bound whole to a 1-D element launch, but nothing makes `{root}` contiguous or passes its "
                    f"strides: a transposed or sliced input is read in storage order. Use `{root}.contiguous()`, a strided "
                    f"kernel with `{root}.sizes()`/`{root}.strides()`, or a TensorIterator launch.",
                )
