"""
## What it does
Flags a tensor's Metal buffer read as one fixed element type with nothing in the op establishing that
the tensor has that type: `getMTLBufferStorage(t)` bound with `[enc setBuffer:... atIndex:k]` to a
kernel parameter `device float* x [[buffer(k)]]` of a non-template kernel (the kernel is the one the
function's `newFunctionWithName:` / pipeline-state name resolves to), or `(float*)[buf contents]` of
such a buffer — when neither the op, a helper it hands the tensor to (`check_args(A, B)`), nor its
caller tests `t.scalar_type()` / `t.dtype()` or converts it (`t.to(at::kFloat)`). The message also
says when nothing makes the tensor contiguous.

## Why is this bad?
The buffer is raw bytes: a `half`, `bfloat16` or `double` tensor reaches the kernel as if it were
`float` — wrong values, and reads past the end of the buffer when the element is smaller. CPU and CUDA
kernels dispatch on the dtype (or `data_ptr<float>()` throws); a raw Metal binding does neither. A
non-contiguous tensor (a transpose, a slice) is read in the wrong order for the same reason.

## Example
```objc
torch::Tensor scale(const torch::Tensor& x) {
  auto out = torch::empty_like(x);
  ...
  [enc setBuffer:getMTLBufferStorage(x) offset:x.storage_offset() * x.element_size() atIndex:0];  // device float* in
```

## Use instead
```objc
  TORCH_CHECK(x.scalar_type() == at::kFloat, "scale: expected a float32 tensor");
  TORCH_CHECK(x.is_contiguous(), "scale: expected a contiguous tensor");
```

Not flagged: a tensor the op converts itself (`x.to(at::kHalf)`, also in both arms of a `?:` such as
`has_bias ? bias->to(kHalf).contiguous() : at::empty({1}, opts.dtype(kHalf))`).

## How to fix
Check the dtype (and contiguity) with `TORCH_CHECK` before binding, convert (`x.to(at::kFloat).contiguous()`),
or instantiate the kernel per dtype and pick it by `x.scalar_type()`.

Guide: *Writing a Metal kernel* (kernels are instantiated per dtype).

Off by default (`--select MPS116` or `extend-select = ["MPS116"]`). On eight extension repositories
(`docs/extensions-triage.md`, strict count) 2 of its 19 findings were patches an author would apply: most tensors
it reports get their dtype from the package's Python wrappers (`if p.dtype == torch.float16`) or from the
package's own quantiser (packed bytes), which the C++ does not show. Run it when reviewing an op that takes
user tensors straight from Python.
"""

from __future__ import annotations

import re

from mpslint.semantic import extflow
from mpslint.model import Severity
from mpslint.rule import Rule

_SCALAR = extflow.SCALAR_POINTER  # `float*`, `const half*`: one fixed element type


class RawDtypeRead(Rule):
    code = "MPS116"
    name = "raw-dtype-read"
    severity = Severity.WARNING
    scope = "host"
    default_enabled = False  # measured below the default set's bar: see "Off by default" above
    contexts = ("pytorch", "extension")
    summary = "Tensor buffer read as a fixed element type with no dtype check on the tensor in the op"
    guide = "Writing a Metal kernel"

    def check(self, ctx):
        graph = ctx.graph
        for impl in sorted(graph.nodes("impl")):
            a = graph.attrs(impl)
            fn = a.get("function")
            if fn is None:
                continue
            kernels = extflow.launched_kernels(graph, impl)
            fixed = extflow.fixed_slot_scalars(kernels)
            seen: set[str] = set()
            for call in fn.calls:
                b = extflow.slot_binding(call)
                if b is None or b[0] not in fixed:
                    continue
                t = extflow.buffer_storage_arg(b[1])
                if t is None:
                    continue
                yield from self._judge(ctx, graph, impl, a["path"], fn, t, call, f"`{fixed[b[0]][1]}` [[buffer({b[0]})]] of `{fixed[b[0]][0]}`", fixed[b[0]][2], seen)
            for cast in fn.casts:
                m = re.fullmatch(r"\(?\s*([A-Za-z_]\w*)\s*\.\s*contents\s*\)?", cast.operand.text.strip())
                tm = _SCALAR.match(cast.type.strip())
                if not m or not tm:
                    continue
                src = extflow.local_init(fn, m.group(1), cast.span.start) or ""
                t = extflow.buffer_storage_arg(src)
                if t is not None:
                    yield from self._judge(ctx, graph, impl, a["path"], fn, t, cast, f"`({cast.type})` of its contents", tm.group(1), seen)

    def _judge(self, ctx, graph, impl, path, fn, t, site, what, scalar, seen):
        origin = extflow.tensor_origin(fn, t, site.span.start)
        if origin.fresh and not origin.converted:
            return  # allocated like another tensor (`empty_like(a)`): that tensor's binding is the one to judge
        if origin.converted:
            return  # converted to a dtype in the op (`x.to(at::kHalf)`, or allocated with one): its type is known
        if origin.root in seen or extflow.tensor_checked(graph, impl, fn, origin, "dtype"):
            return
        seen.add(origin.root)
        contiguous = extflow.tensor_checked(graph, impl, fn, origin, "contiguous")
        also = "" if contiguous else f"; nothing makes `{t}` contiguous either (`TORCH_CHECK({t}.is_contiguous(), ...)`)"
        yield ctx.finding(
            self,
            path,
            site.span,
            f"`{t}`'s buffer is accessed as `{scalar}` ({what}) but nothing in `{fn.name}` checks or converts its dtype: "
            f"a tensor of another dtype is reinterpreted as `{scalar}`; `TORCH_CHECK({t}.scalar_type() == ..., ...)` or convert it first{also}.",
        )
