"""
## What it does
Flags a direct kernel launch (`mtl_dispatch1DJob`/`2D`/`3D`, `dispatchThreads`,
`dispatchThreadgroups`) whose grid is sized from a tensor or iterator and that an empty tensor can
reach: no `if (x.numel() == 0) return;` (or `TORCH_CHECK(x.numel() > 0, ...)`, or an enclosing
`if (x.numel() > 0)`) dominates it, and not every caller of the function guards either. One finding
per function, on its first unguarded launch.

It also flags `getMPSNDArray(t, ...)` where `t` itself can be empty: no check that dominates it (in the
function, or in every caller for what it passes as `t`) proves `t.numel() >= 1`. Here the launch rule's
leniency (any tensor of the op checked counts) does not hold: a matmul whose inner dimension is 0 has an empty
input and a non-empty output, so `if (output.numel() == 0) return output;` does not cover the input's MPSNDArray
(`F.linear` with `in_features == 0`, pytorch/pytorch#190050, fixed by #190051). An MPSNDArray with a
zero-length dimension aborts the process in an MPS assertion that no exception catches. The message names the
check the path does make (`_mps_linear` checks `output` before the call, not `input`). A path that checks two
tensors of the op (the output and the input) has handled the empty cases by shape, and its other operands (a
bias, non-empty whenever the output is) are not reported; a view or copy that keeps the element count
(`input.flatten(0, -2)`, `.view(...)`, `.contiguous()`) is covered by a check of what it views.

It also flags an MPSGraph `Placeholder(graphTensor, t)` on a path where nothing checks any tensor's element
count (in the function, or in every caller): an empty tensor has no buffer, and the constructor asserts
`[srcBuf length] > 0` ("Placeholder tensor is empty!", a RuntimeError that asks the user to report a bug to
PyTorch). `dot` of two empty vectors (pytorch/pytorch#165237) and `baddbmm` with an empty batch (#188808) failed
so where CPU returns 0 or `beta * input`. Only the path with no emptiness check at all: an elementwise op's
`if (output.numel() == 0) return;` covers its inputs, and most MPSGraph ops are elementwise. A Placeholder in the
arm of a `?:` that proves its tensor non-empty (`self.numel() != 0 ? Placeholder(..., self) : Placeholder()`) is
not flagged, and neither is one after a test of a tensor's size against 0 (`if (result_sizes[0] == 0 ||
result_sizes[1] == 0) return result;` in `addr`, whose result's sizes are the vectors' lengths): a tensor with a
zero-sized dimension is the empty one. A size compared with 1, or an argument compared with 0, is not such a test.

It also flags `t.reshape({-1, k})` and `t.view({...})` with one `-1` where another size can be 0 and `t` can be
empty: PyTorch cannot infer the `-1` of a tensor with no elements when the other sizes multiply to 0, and throws
`cannot reshape tensor of 0 elements into shape [-1, 0] because the unspecified dimension size -1 can be any value
and is ambiguous`. Linear's weight gradient reshaped the input to `{-1, input.size(-1)}` before its emptiness
check, so `in_features == 0` failed in backward (pytorch/pytorch#190050, fixed by #190051). Not flagged: a size a
check bounds away from 0 (`if (input.size(-1) > 32768)`), a literal, a size of a tensor a check proves non-empty,
a receiver that is non-empty (then the `-1` is always determined), in the function or in every caller, or in
the arm of a `?:` that proves it non-empty (`input.numel() == 0 ? input.reshape({1, M, 0}) : input.reshape({1, M,
-1})`). Only in
PyTorch's own operators: the reshape throws a clean `RuntimeError`, a defect where CPU accepts the shape, while an
extension's op may refuse zero-sized dimensions.

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
argument, a function pointer), whose callers cannot be seen. A function bound as an operator or a Python
function (`m.impl("op", TORCH_FN(fn))`, `m.def("op", &fn)` in `TORCH_LIBRARY`/`PYBIND11_MODULE`) is an entry
point, reached with any input, `static` or not. Outside `native/mps`, a function with no tensor
in scope (stream code replaying launches it recorded earlier) is not checked, unless it asks for a kernel by
name itself (`newFunctionWithName:`, a pipeline getter: an extension's launch helper taking sizes, not tensors).

Not flagged either: a helper returning something other than a tensor (a buffer, a flag: `id<MTLBuffer>
generateOffsets(...)`) that nothing in the linted tree calls. Its guard belongs in its callers (no early return of
its own stands for "no work" to them), and they are in files not linted; where its callers are in view, it is
reported unless every one of them guards.

Not flagged either: a function registered only on dispatch stubs whose caller in core ATen returns before the
stub on empty input (`cholesky_stub`: `linalg_cholesky_ex_out` returns when `L.numel() == 0`; the table is
`mpslint/semantic/core_callers.py`, each entry read in PyTorch's sources). A stub not in the table is judged
reachable with an empty tensor.

Guide: *Checklist* — "Handles empty tensors".
"""

from __future__ import annotations

import re

from mpslint.semantic import extflow
from mpslint.semantic import hostflow as hf
from mpslint.semantic.core_callers import empty_checked_by_core
from mpslint.model import Severity
from mpslint.rule import Rule
from mpslint.semantic.expressions import strip_parens, walk
from mpslint.semantic.model import semantic_model
from mpslint.semantic.types import holds_tensor, parse_type

# views and copies with their receiver's element count
_SAME_NUMEL = {"flatten", "view", "reshape", "contiguous", "clone", "to", "detach", "t", "transpose", "permute", "squeeze", "unsqueeze", "view_as", "reshape_as", "expect_contiguous"}
_OPS_PATH = re.compile(r"(?:^|/)native/mps/(?:operations/)?[^/]+\.(?:mm|cpp|h)$")


def _minus_one(n) -> bool:
    """``n`` is the literal -1 (a size to infer)."""
    n = strip_parens(n)
    if n.kind == "unary" and n.op == "-" and n.kids:
        k = strip_parens(n.kids[0])
        return k.kind == "int" and k.op.rstrip("lLuU") == "1"
    return n.kind == "int" and n.op == "-1"


def _has_tensor(fn) -> bool:
    """A tensor is in scope: a parameter or local of a tensor type, or a numel()/sizes() call."""
    if any(holds_tensor(parse_type(p.type or "")) for p in fn.params) or any(holds_tensor(parse_type(d.type or "")) for d in fn.decls):
        return True
    return any(c.name in ("numel", "sizes", "nbytes") and c.receiver for c in fn.calls)




def _sized_by(launch) -> list[str]:
    """The locals or parameters whose `.numel()` sizes the launch (`MTLSizeMake(out.numel(), 1, 1)`: `out`)."""
    out: list[str] = []
    for a in launch.args:
        for n in walk(a.tree) if a.tree is not None else ():
            r = strip_parens(n.receiver) if n.kind == "call" and n.op == "numel" and n.receiver is not None else None
            if r is not None and r.kind == "id" and r.op not in out:
                out.append(r.op)
    return out


def _returns_work_product(fn) -> bool:
    """``fn`` returns something other than an op's result (a buffer, a flag): a helper whose empty-input guard
    belongs in its callers, since no early return of its own stands for "no work" to them."""
    ret = (fn.return_type or "").replace("static", "").replace("inline", "").strip()
    if fn.kind == "impl_func" or ret in ("", "void"):
        return False
    return "Tensor" not in ret  # a tensor, or a tuple or vector of them, is an op's result


def _early_return(fn, launch) -> str:
    """The early return that compiles in ``fn``: a bare `return;` in a void function, the output tensor in one
    returning a tensor, and for a helper returning something else (a buffer, a flag) the callers' guard."""
    ret = (fn.return_type or "").replace("static", "").replace("inline", "").strip()
    if fn.kind == "impl_func" or ret in ("", "void"):
        return "return early with `if (<output or iter>.numel() == 0) { return; }` before the launch."
    if ret.split("::")[-1].rstrip("&").strip() in ("Tensor", "TensorBase"):
        outs = [p.name for p in fn.params if p.name and "const" not in p.type and p.type.replace(" ", "").endswith("Tensor&")]
        if len(outs) == 1:
            return f"return early with `if ({outs[0]}.numel() == 0) {{ return {outs[0]}; }}` before the launch."
        local = [n for n in _sized_by(launch) if any(d.name == n for d in fn.decls)]
        if len(local) == 1:
            return f"return early with `if ({local[0]}.numel() == 0) {{ return {local[0]}; }}` before the launch."
        return "return the (empty) result early when the input has no elements, before the launch."
    if ret.startswith(("std::tuple<", "tuple<")) and "Tensor" in ret:
        return "return the (empty) outputs early once they are allocated (`return {out, ...};`), before the launch."
    return (f"`{hf.short_name(fn.name)}` returns `{ret}`: have its callers skip it when the tensor is empty, or return "
            f"early with the value that stands for no work, before the launch.")


class MissingEmptyGuard(Rule):
    code = "MPS110"
    name = "missing-empty-guard"
    severity = Severity.WARNING
    scope = "host"
    summary = "Kernel launch, MPSNDArray, MPSGraph Placeholder or size-inferring reshape reachable with an empty tensor (no `numel() == 0` early return on the path)"
    guide = "Checklist"

    @staticmethod
    def _nonempty(fm, node, stmt: int, depth: int = 0) -> bool:
        """The grid dimension ``node`` is at least 1 at ``stmt``: a constant, a value the dominating checks
        bound below by 1 (`if (n == 0) return;`, `TORCH_CHECK(n > 0)`, `if (n)`, a loop `while (n > 0)`),
        an `MTLSizeMake` of such values, or a local holding one."""
        n = strip_parens(node)
        o, at = fm.origin(n, stmt)
        if o.kind == "call" and o.op in ("MTLSizeMake", "MTLSize") and o.args and depth < 3:
            return all(MissingEmptyGuard._nonempty(fm, a, at, depth + 1) for a in o.args)
        if o.kind == "init" and o.kids and depth < 3:
            return all(MissingEmptyGuard._nonempty(fm, a, at, depth + 1) for a in o.kids)
        return fm.nonzero(n, stmt)

    @staticmethod
    def _guarded(fm, stmt: int) -> bool:
        """A dominating check proves some tensor non-empty (`if (out.numel() == 0) return;`): the tensors of
        one op share their element count in all but a few ops, so any such check counts."""
        return any(k.endswith(".numel()") and b.interval.lo is not None and b.interval.lo >= 1 for k, b in fm.bounds(stmt).items())

    @staticmethod
    def _numel_key(fm, node, stmt: int) -> str:
        """The key of the tensor whose element count ``node`` has: through locals and the views and copies that
        keep it (`input.flatten(0, -2)`, `x.view(...)`, `t.contiguous()`)."""
        n, at = strip_parens(node), stmt
        for _ in range(6):
            o, o_at = fm.origin(n, at) if n.kind == "id" else (n, at)
            o = strip_parens(o)
            if o.kind == "call" and o.op in _SAME_NUMEL and o.receiver is not None:
                n, at = strip_parens(o.receiver), o_at
                continue
            break
        return fm.key(n, at)

    @classmethod
    def _tensor_nonempty(cls, fm, node, stmt: int) -> bool:
        """A dominating check proves this very tensor non-empty (`if (input.numel() == 0) return ...;`), or one it is
        a view or copy of with the same element count."""
        b = fm.bounds(stmt)
        for key in {fm.key(node, stmt) + ".numel()", cls._numel_key(fm, node, stmt) + ".numel()"}:
            got = b.get(key)
            if (got is not None and got.interval.lo is not None and got.interval.lo >= 1) or key + "#nonzero" in b:
                return True
        return False

    @classmethod
    def _covered(cls, fm, node, stmt: int) -> bool:
        """``node``'s tensor is proved non-empty, or the path checks two tensors of the op (`output` and `input`):
        the empty cases are then handled by shape (a matmul's bias is non-empty whenever its output is), and only
        the one-check pattern (the output alone) misses the inner dimension."""
        if cls._tensor_nonempty(fm, node, stmt):
            return True
        proved = {k for k, b in fm.bounds(stmt).items() if k.endswith(".numel()") and b.interval.lo is not None and b.interval.lo >= 1}
        return len(proved) >= 2

    @staticmethod
    def _proved_nonempty(fm, stmt: int, keyed) -> list[str]:
        """Which of ``keyed`` (texts with their value keys) the checks dominating ``stmt`` prove non-empty."""
        b = fm.bounds(stmt)
        out = []
        for text, key in keyed:
            got = b.get(key + ".numel()")
            if got is not None and got.interval.lo is not None and got.interval.lo >= 1:
                out.append(text)
        return out

    def _other_checks(self, fm, stmt: int, name: str, sites, fn, path, model, hosts) -> str:
        """What the path checks instead of ``name``: another parameter here, or what a caller passes."""
        params = [(p.name, fm.name_key(p.name, stmt)) for p in fn.params if p.name and p.name != name]
        here = self._proved_nonempty(fm, stmt, params)
        if here:
            return f"the checks on the path prove `{here[0]}` non-empty, not `{name}`"
        for cpath, caller, c in hf.visible_sites(sites, fn, path):
            cm = model.function(caller, hosts.get(cpath))
            args = [(a.text, cm.key(a.tree, c.stmt)) for a in c.args if a.tree is not None]
            there = [x for x in self._proved_nonempty(cm, c.stmt, args) if x != name]
            if there:
                return f"`{hf.short_name(caller.name)}` checks `{there[0]}` before the call, not `{name}`"
        return f"nothing on the path proves `{name}` non-empty"

    def _ndarray_sites(self, ctx, path, fn, fm, model, sites, registered, escaping, stubs_of):
        """`getMPSNDArray(t, ...)` where `t` itself may be empty: a check of another tensor of the op does not
        cover it (linear's input is (..., 0) for `in_features == 0` while its output is not empty), and an
        MPSNDArray with a zero-length dimension aborts the process."""
        hosts = ctx.project.hosts
        for call in fn.calls:
            if call.name != "getMPSNDArray" or not call.args or call.args[0].tree is None or call.stmt < 0:
                continue
            t = strip_parens(call.args[0].tree)
            if t.kind != "id" or self._covered(fm, t, call.stmt):
                continue
            index = next((i for i, p in enumerate(fn.params) if p.name == t.op), None)

            def caller_guards(cpath, caller, c, index=index):
                if index is None or index >= len(c.args) or c.args[index].tree is None:
                    return False
                return self._covered(model.function(caller, hosts.get(cpath)), strip_parens(c.args[index].tree), c.stmt)

            if index is not None and not fm.defs.assigned(t.op) and hf.all_callers(fn.name, sites, registered, caller_guards, fn=fn, path=path):
                continue
            if empty_checked_by_core(stubs_of.get(hf.short_name(fn.name), set())) or hf.unreachable(fn, path, sites, registered, escaping):
                continue
            why = self._other_checks(fm, call.stmt, t.op, sites, fn, path, model, hosts)
            yield ctx.finding(
                self,
                path,
                call.span,
                f"`getMPSNDArray({t.op}, ...)` builds an MPSNDArray over `{t.op}`, which can be empty here: {why} (a matmul "
                f"whose inner dimension is 0 has an empty input and a non-empty output). An MPSNDArray with a zero-length "
                f"dimension aborts the process (an MPS assertion no exception catches); handle `{t.op}.numel() == 0` "
                f"before it (return the result the empty case defines).",
            )
            return  # one finding per function

    @staticmethod
    def _arm_proves(fm, fn, call) -> dict:
        """What the `?:` conditions around ``call`` prove in the arm it is in (`self.numel() != 0 ?
        Placeholder(..., self) : Placeholder()`): value key -> interval."""
        roots = [fn.stmts[call.stmt].tree] + [d.init.tree for d in fn.decls if d.stmt == call.stmt and d.init is not None]
        proved: dict = {}
        for root in roots:
            for n in walk(root) if root is not None else ():
                if n.kind != "cond" or len(n.kids) != 3:
                    continue
                for arm, truth in ((n.kids[1], True), (n.kids[2], False)):
                    if arm.start <= call.span.start and call.span.end <= arm.end:
                        proved.update(fm.prove(n.kids[0], truth, call.stmt))
        return proved

    @classmethod
    def _handles_empty(cls, fm, stmt: int) -> bool:
        """The path to ``stmt`` deals with empty tensors in some way: a dominating check proves a tensor non-empty,
        or a dominating condition tests an element count (`if (self.numel() == 0 & other.numel() == 0) return
        ...;` proves neither alone, yet the author handled the empty case; the two are equal by `dot_check`)."""
        if cls._guarded(fm, stmt):
            return True
        return any(
            (n.kind == "call" and n.op in ("numel", "sym_numel", "is_empty")) or cls._size_against_zero(fm, n, c.stmt)
            for c in fm.conditions(stmt)
            for n in walk(c.node)
        )

    @staticmethod
    def _size_against_zero(fm, n, stmt: int) -> bool:
        """``n`` compares one size of a tensor with 0 (`result_sizes[0] == 0` with `IntArrayRef result_sizes =
        result.sizes();`, `out.size(1) != 0`): a tensor with a zero-sized dimension is the empty tensor, so the
        author handled the empty case (`addr` returns when either size of its result is 0, and the result's sizes
        are the vectors' lengths). A size compared with 1, or a parameter compared with 0, is not such a test."""
        if n.kind != "binary" or n.op not in ("==", "!=", "<=", ">", "<", ">=") or len(n.kids) != 2:
            return False
        for value, other in ((n.kids[0], n.kids[1]), (n.kids[1], n.kids[0])):
            o = strip_parens(other)
            if o.kind == "int" and o.op.rstrip("lLuU") == "0" and fm.extent(value, stmt) == "dim":
                got = fm.sized_from(value, stmt)
                if len(got) == 1 and next(iter(got))[1] == "size":
                    return True
        return False

    def _placeholder_sites(self, ctx, path, fn, fm, model, sites, registered, escaping, stubs_of):
        """`Placeholder(graphTensor, t)` where nothing on the path checks any tensor's element count: the
        constructor asserts `[srcBuf length] > 0` ("Placeholder tensor is empty!"), and an empty tensor's buffer is
        nil (`dot` of empty vectors before pytorch/pytorch#165237, `baddbmm` with an empty batch before #188808).
        Only the path with no emptiness check at all: a check of the output covers the inputs of the elementwise
        ops, which are most MPSGraph ops, and telling the reductions apart needs each op's shape rules."""
        hosts = ctx.project.hosts
        for call in fn.calls:
            if call.name != "Placeholder" or len(call.args) < 2 or call.args[1].tree is None or call.stmt < 0:
                continue
            t = strip_parens(call.args[1].tree)
            numel = f"{t.text}.numel()"
            if t.kind == "unary" and t.op == "*" and t.kids:
                t = strip_parens(t.kids[0])  # `*self_` of a MaybeOwned
                numel = f"{t.text}->numel()"
            if t.kind != "id" or self._handles_empty(fm, call.stmt):
                continue
            arm = self._arm_proves(fm, fn, call)
            if any(k.endswith(".numel()") and iv.lo is not None and iv.lo >= 1 for k, iv in arm.items()):
                continue

            def caller_guards(cpath, caller, c):
                return self._handles_empty(model.function(caller, hosts.get(cpath)), c.stmt)

            if hf.all_callers(fn.name, sites, registered, caller_guards, fn=fn, path=path):
                continue
            if empty_checked_by_core(stubs_of.get(hf.short_name(fn.name), set())) or hf.unreachable(fn, path, sites, registered, escaping):
                continue
            shown = call.args[1].text
            unguarded = next((c for cpath, caller, c in hf.visible_sites(sites, fn, path) if not caller_guards(cpath, caller, c)), None)
            where = "nothing on the path checks whether a tensor of the op is empty"
            if unguarded is not None:
                caller = next(f for cpath, f, c in hf.visible_sites(sites, fn, path) if c is unguarded)
                where = f"nothing here checks whether a tensor of the op is empty, and `{hf.short_name(caller.name)}` calls it without a check"
            yield ctx.finding(
                self,
                path,
                call.span,
                f"`Placeholder(..., {shown})` wraps `{shown}`'s buffer, and {where}: an empty tensor has no buffer, and "
                f"the constructor's `[srcBuf length] > 0` internal assert fails (\"Placeholder tensor is empty!\", a "
                f"RuntimeError asking the user to report a bug) where CPU returns a result. Handle `{numel} == 0` "
                f"before building the graph: return the result the empty case defines (an empty output, or a "
                f"reduction's identity: `dot` of empty vectors is 0).",
            )
            return  # one finding per function

    @classmethod
    def _size_nonzero(cls, fm, node, stmt: int) -> bool:
        """The size ``node`` cannot be 0 at ``stmt``: a check bounds it, or it is a size of a tensor (through
        locals: `const auto k = input.size(-1);`) that a check proves non-empty."""
        if fm.nonzero(node, stmt):
            return True
        o, at = fm.origin(strip_parens(node), stmt)
        o = strip_parens(o)
        if o.kind == "index" and o.kids:
            o = strip_parens(o.kids[0])  # `t.sizes()[1]`
        if o.kind == "call" and o.op in ("size", "sizes", "sym_size") and o.receiver is not None:
            return cls._tensor_nonempty(fm, strip_parens(o.receiver), at)
        return False

    def _reshape_sites(self, ctx, path, fn, fm, model, sites, registered, escaping, stubs_of):
        """`t.reshape({-1, k})` / `t.view({..., -1, ...})` where another size can be 0: PyTorch cannot infer the
        `-1` of an empty tensor when the other sizes multiply to 0 and throws ("cannot reshape tensor of 0 elements
        into shape [-1, 0]"): linear's backward with `in_features == 0` (pytorch/pytorch#190050, fixed by #190051)."""
        hosts = ctx.project.hosts
        for call in fn.calls:
            if call.name not in ("reshape", "view") or len(call.args) != 1 or call.args[0].tree is None or call.stmt < 0:
                continue
            shape = strip_parens(call.args[0].tree)
            if shape.kind != "init" or len(shape.kids) < 2 or call.tree is None or call.tree.receiver is None:
                continue
            dims = [strip_parens(k) for k in shape.kids]
            infer = [d for d in dims if _minus_one(d)]
            if len(infer) != 1:
                continue
            t = strip_parens(call.tree.receiver)
            others = [d for d in dims if d is not infer[0]]
            if self._tensor_nonempty(fm, t, call.stmt):
                continue  # a non-empty tensor's -1 is always determined
            arm = self._arm_proves(fm, fn, call)
            keys = {fm.key(t, call.stmt) + ".numel()", self._numel_key(fm, t, call.stmt) + ".numel()"}
            if any(k in keys and iv.lo is not None and iv.lo >= 1 for k, iv in arm.items()):
                continue  # the arm of `t.numel() == 0 ? t.reshape({1, M, 0}) : t.reshape({1, M, -1})` for a non-empty `t`
            zero = [d for d in others if not self._size_nonzero(fm, d, call.stmt)]
            if not zero:
                continue
            index = next((i for i, p in enumerate(fn.params) if t.kind == "id" and p.name == t.op), None)

            def caller_guards(cpath, caller, c, index=index):
                if index is None or index >= len(c.args) or c.args[index].tree is None:
                    return False
                return self._tensor_nonempty(model.function(caller, hosts.get(cpath)), strip_parens(c.args[index].tree), c.stmt)

            if index is not None and not fm.defs.assigned(t.op) and hf.all_callers(fn.name, sites, registered, caller_guards, fn=fn, path=path):
                continue
            if empty_checked_by_core(stubs_of.get(hf.short_name(fn.name), set())) or hf.unreachable(fn, path, sites, registered, escaping):
                continue
            shown = zero[0].text
            yield ctx.finding(
                self,
                path,
                call.span,
                f"`{call.tree.text}` throws when `{t.text}` is empty with `{shown}` == 0: the `-1` of a tensor with no "
                f"elements cannot be inferred when the other sizes multiply to 0 (\"cannot reshape tensor of 0 elements "
                f"into shape [...] because the unspecified dimension size -1 can be any value\"), and nothing on the path "
                f"proves `{shown}` non-zero or `{t.text}` non-empty. Handle `{t.text}.numel() == 0` before it (return the "
                f"result the empty case defines), or use `flatten` (`{t.text}.flatten(0, -2)`, `{t.text}.flatten(1)`), which keeps an "
                f"empty tensor's sizes, instead of a `-1`.",
            )
            return  # one finding per function

    def check(self, ctx):
        hosts = ctx.project.hosts
        sites = hf.call_sites(hosts)
        registered = hf.registered_functions(hosts)
        stubs_of = hf.registered_stubs(hosts)
        escaping = hf.escaping_functions(hosts)
        entries = registered | ctx.graph.dispatched_functions()

        model = semantic_model(ctx.project)

        def caller_guards(cpath, caller, call) -> bool:
            return self._guarded(model.function(caller, hosts.get(cpath)), call.stmt)

        for path in sorted(hosts):
            for fn in hosts[path].functions:
                if not _OPS_PATH.search(path) and not _has_tensor(fn) and not ctx.graph.out(f"impl:{path}:{fn.name}", "launches"):
                    # stream/graph infrastructure re-issuing launches it recorded: no tensor can be empty here. A
                    # function that asks for a kernel by name (an extension's launch helper) is op code all the same.
                    continue
                fm = model.function(fn, hosts[path])
                yield from self._ndarray_sites(ctx, path, fn, fm, model, sites, registered, escaping, stubs_of)
                if any(c.name == "Placeholder" for c in fn.calls):
                    yield from self._placeholder_sites(ctx, path, fn, fm, model, sites, registered, escaping, stubs_of)
                if any(c.name in ("reshape", "view") for c in fn.calls) and extflow.file_context(ctx, path) == "pytorch":
                    # a clean RuntimeError on a zero-sized dimension is a defect where CPU accepts the shape (an
                    # ATen operator); an extension's op may define its own domain
                    yield from self._reshape_sites(ctx, path, fn, fm, model, sites, registered, escaping, stubs_of)
                launch = None
                for call in hf.launches(fn):
                    args = hf.dispatch_size_args(call)
                    if call.name in ("dispatchThreads", "dispatchThreadgroups"):
                        args = call.args[:1]  # the grid; the threadgroup size is not what an empty tensor zeroes
                    trees = [a.tree for a in args if a.tree is not None]
                    if not trees or all(self._nonempty(fm, t, call.stmt) for t in trees):
                        continue
                    if self._guarded(fm, call.stmt):
                        continue
                    launch = call
                    break
                if launch is None:
                    continue
                if empty_checked_by_core(stubs_of.get(hf.short_name(fn.name), set())):
                    continue  # only called through stubs whose core caller returns on empty input
                if hf.all_callers(fn.name, sites, registered, caller_guards, fn=fn, path=path):
                    continue
                if hf.unreachable(fn, path, sites, registered, escaping):
                    continue  # a static function nothing calls, or one passed as a value: its callers are not visible
                if _returns_work_product(fn) and not hf.visible_sites(sites, fn, path) and hf.short_name(fn.name) not in entries:
                    continue  # a helper returning a buffer or a flag, called only from files not linted: the guard is theirs
                size = ", ".join(a.text for a in (hf.dispatch_size_args(launch) if launch.name.startswith("mtl_") else launch.args[:1]))
                yield ctx.finding(
                    self,
                    path,
                    launch.span,
                    f"`{launch.name}` sized by `{size}` is reachable with an empty tensor (a zero-sized grid fails Metal "
                    f"validation); {_early_return(fn, launch)}",
                )
