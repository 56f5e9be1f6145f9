"""
## What it does
Flags a direct kernel launch (`mtl_dispatch1DJob`/`2D`/`3D`, `dispatchThreads`,
`dispatchThreadgroups`) whose grid is sized from a tensor or iterator and that an empty tensor can
reach: no `if (x.numel() == 0) return;` (or `TORCH_CHECK(x.numel() > 0, ...)`, or an enclosing
`if (x.numel() > 0)`) dominates it, and not every caller of the function guards either. One finding
per function, on its first unguarded launch.

## Why is this bad?
An empty tensor gives a zero-sized grid: Metal's validation layer rejects `dispatchThreads` with a zero
dimension (`threadsPerGrid.width(0) must be != 0`), and without validation the encoder may still bind
`nil` buffers for the empty storage. Either way `torch.empty(0, device="mps")` through the op crashes
or errors where CPU returns an empty result. The guide's checklist asks for it: "Handles empty tensors".

## Example
```objc
TORCH_IMPL_FUNC(lerp_out_mps)(const Tensor& self, const Tensor& end, const Scalar& w, const Tensor& out) {
  ...
  mtl_dispatch1DJob(encoder, pso, out.numel());
}
```

## Use instead
```objc
  if (out.numel() == 0) {
    return;
  }
  ...
  mtl_dispatch1DJob(encoder, pso, out.numel());
```

## How to fix
Return early when the output (or the iterator) is empty, before the pipeline state is fetched.
Launches through `lib.exec_unary_kernel` / `exec_binary_kernel` / `exec_*_kernel_with_params` are fine:
those skip empty iterators themselves. Not flagged either: constant-sized grids (also through locals
such as `MTLSize grid = MTLSizeMake(1, 1, 1);`), launches inside a loop that skips empty inputs with
`continue` or runs only while `n > 0`, and functions handed to other code as a value (a template
argument, a function pointer), whose callers cannot be seen. Outside `native/mps`, a function with no tensor
in scope (stream code replaying launches it recorded earlier) is not checked.

Guide: *Checklist* — "Handles empty tensors".
"""

from __future__ import annotations

import re

from mpslint import hostflow as hf
from mpslint.model import Severity
from mpslint.rule import Rule

_OPS_PATH = re.compile(r"(?:^|/)native/mps/(?:operations/)?[^/]+\.(?:mm|cpp|h)$")
_TENSOR = re.compile(r"\b(?:Tensor|TensorBase|TensorIteratorBase|TensorIterator|TensorList|ITensorListRef)\b")


def _has_tensor(fn) -> bool:
    """A tensor is in scope: a parameter or local of a tensor type, or a numel()/sizes() call."""
    if any(_TENSOR.search(p.type or "") for p in fn.params) or any(_TENSOR.search(d.type or "") for d in fn.decls):
        return True
    return any(c.name in ("numel", "sizes", "nbytes") and c.receiver for c in fn.calls)


_CONST = re.compile(r"^\s*(?:\d+[uUlL]*|MTLSizeMake\(\s*\d+[uUlL]*\s*,\s*\d+[uUlL]*\s*,\s*\d+[uUlL]*\s*\))\s*$")


class MissingEmptyGuard(Rule):
    code = "MPS110"
    name = "missing-empty-guard"
    severity = Severity.WARNING
    scope = "host"
    summary = "Kernel launch reachable with an empty tensor (no `numel() == 0` early return on the path)"
    guide = "Checklist"

    @staticmethod
    def _constant(fn, text: str, depth: int = 3) -> bool:
        """``text`` is a constant grid: a literal, ``MTLSizeMake`` of literals, or a local initialised (and
        only ever assigned) from one."""
        if _CONST.match(text):
            return True
        name = text.strip()
        if depth <= 0 or not re.fullmatch(r"[A-Za-z_]\w*", name):
            return False
        inits = [d.init.text for d in fn.decls if d.name == name and d.init is not None]
        inits += [a.rhs.text for a in fn.assigns if a.lhs == name]
        return bool(inits) and all(MissingEmptyGuard._constant(fn, t, depth - 1) for t in inits)

    def check(self, ctx):
        hosts = ctx.project.hosts
        sites = hf.call_sites(hosts)
        registered = hf.registered_functions(hosts)
        escaping = hf.escaping_functions(hosts)

        def caller_guards(_path, caller, call) -> bool:
            return hf.empty_guarded(caller, call.stmt)

        for path in sorted(hosts):
            for fn in hosts[path].functions:
                if not _OPS_PATH.search(path) and not _has_tensor(fn):
                    continue  # stream/graph infrastructure re-issuing launches it recorded: no tensor can be empty here
                launch = None
                for call in hf.launches(fn):
                    args = hf.dispatch_size_args(call)
                    if call.name in ("dispatchThreads", "dispatchThreadgroups"):
                        args = call.args[:1]  # the grid; the threadgroup size is not what an empty tensor zeroes
                    if not args or all(self._constant(fn, a.text) for a in args):
                        continue
                    sized_by = {m.group(0) for a in args for m in re.finditer(r"(?<![\w.>])[A-Za-z_]\w*\b(?!\s*[(<:])", a.text)}
                    if hf.empty_guarded(fn, call.stmt, sized_by):
                        continue
                    launch = call
                    break
                if launch is None:
                    continue
                if hf.all_callers(fn.name, sites, registered, caller_guards, fn=fn, path=path):
                    continue
                if hf.unreachable(fn, path, sites, registered, escaping):
                    continue  # a static function nothing calls, or one passed as a value: its callers are not visible
                size = ", ".join(a.text for a in (hf.dispatch_size_args(launch) if launch.name.startswith("mtl_") else launch.args[:1]))
                yield ctx.finding(
                    self,
                    path,
                    launch.span,
                    f"`{launch.name}` sized by `{size}` is reachable with an empty tensor (a zero-sized grid fails Metal "
                    f"validation); return early with `if (<output or iter>.numel() == 0) {{ return; }}` before the launch.",
                )
