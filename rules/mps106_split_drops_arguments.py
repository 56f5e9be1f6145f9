"""
## What it does
Flags the recursive call inside a `for (auto&& sub_iter : iter.with_32bit_indexing())` loop when it
calls the enclosing function with fewer arguments than the function has parameters (a defaulted
parameter is silently reset to its default), or passes a parameter's default literal in its place.

## Why is this bad?
The split exists for tensors past `INT32_MAX` elements, which tests rarely reach. If the recursion
drops `alpha`, `dim` or `reduction` and the parameter has a default, the code compiles and every
small-tensor test passes, while the large-tensor path computes a different operation (`add` with
`alpha = 1` instead of the user's `alpha`).

## Example
```objc
static void add_kernel(TensorIteratorBase& iter, const Scalar& alpha = 1) {
  if (!iter.can_use_32bit_indexing()) {
    for (auto&& sub_iter : iter.with_32bit_indexing()) {
      add_kernel(sub_iter);  // alpha resets to 1
    }
    return;
  }
  ...
}
```

## Use instead
```objc
      add_kernel(sub_iter, alpha);
```

## How to fix
Forward every parameter unchanged: `fn(sub_iter, p1, p2, ...)`. The automatic fix (unsafe: it changes
what the large-tensor path computes, which is the point) appends the missing parameters by name.

Guide: *Working with Large Tensors* — "Decompose via `iter.with_32bit_indexing()`".
"""

from __future__ import annotations


from mpslint.semantic import hostflow as hf
from mpslint.model import Fix, Severity
from mpslint.rule import Rule
from mpslint.semantic.expressions import int_literal, strip_parens
from mpslint.semantic.model import semantic_model

_LITERALS = ("int", "float", "str", "char", "bool", "null")
_EMPTY = {"std::nullopt", "c10::nullopt", "nullopt"}


def _literal(n) -> bool:
    """A literal, `{}` or `std::nullopt`: a value spelled the same wherever it is written."""
    n = strip_parens(n)
    if n.kind == "unary" and n.op == "-" and n.kids:
        n = strip_parens(n.kids[0])
    return n.kind in _LITERALS or (n.kind == "init" and not n.kids) or (n.kind == "id" and n.op in _EMPTY)


class SplitDropsArguments(Rule):
    code = "MPS106"
    name = "split-drops-arguments"
    severity = Severity.ERROR
    scope = "host"
    summary = "Recursion over `with_32bit_indexing()` sub-iterators does not forward every parameter"
    fixable = "unsafe"
    guide = "Working with Large Tensors"

    def check(self, ctx):
        for path in sorted(ctx.project.hosts):
            for fn in ctx.project.hosts[path].functions:
                loops = hf.subiter_loops(fn)
                if not loops:
                    continue
                me = hf.short_name(fn.name)
                for call in fn.calls:
                    if call.name != me or call.stmt < 0:
                        continue
                    loop = next((v for idx, (v, _it) in loops.items() if idx in fn.stmts[call.stmt].parents), None)
                    if loop is None or not any(a.text == loop for a in call.args):
                        continue
                    yield from self._check_call(ctx, path, fn, call)

    @staticmethod
    def _is_default(fm, stmt: int, arg, default: str) -> bool:
        """The argument is a constant equal to the parameter's default (`0` for `= 0`, a `constexpr` holding
        it, `false` for `= false`), not the parameter forwarded."""
        n = strip_parens(arg.tree)
        if n.kind == "id" and fm.scope.lookup(n.op, stmt) is not None and fm.scope.lookup(n.op, stmt).stmt < 0 and fm.scope.lookup(n.op, stmt).decl is not None:
            return False  # a parameter: forwarded
        if arg.text == default and _literal(n):
            return True
        lit = int_literal(default)
        want = lit[0] if lit else {"true": 1, "false": 0}.get(default.strip())
        if want is None:
            return False
        r = fm.range(n, stmt)
        return r.lo == r.hi == want and fm.type_of(n, stmt).is_int

    def _check_call(self, ctx, path, fn, call):
        params = [p for p in fn.params if p.name and not p.type.strip().startswith("...")]
        if len(call.args) < len(params):
            missing = params[len(call.args) :]
            if all(p.default for p in missing):
                names = ", ".join(f"`{p.name}` (default `{p.default}`)" for p in missing)
                close = call.span.end - 1
                sep = ", " if call.args else ""
                fix = Fix(
                    "Forward the missing parameters",
                    (ctx.edit(path, close, close, sep + ", ".join(p.name for p in missing)),),
                    "unsafe",
                )
                yield ctx.finding(
                    self,
                    path,
                    call.span,
                    f"the 32-bit split calls `{call.name}` without {names}: on tensors past INT32_MAX elements the "
                    f"parameter silently resets. Forward it: `{call.name}({', '.join([a.text for a in call.args] + [p.name for p in missing])})`.",
                    fix=fix,
                )
            return
        fm = semantic_model(ctx.project).function(fn, ctx.project.hosts.get(path))
        for k, (p, a) in enumerate(zip(params, call.args)):
            if not p.default or a.tree is None or not self._is_default(fm, call.stmt, a, p.default):
                continue
            fix = Fix(f"Forward `{p.name}`", (ctx.edit(path, a.span.start, a.span.end, p.name),), "unsafe")
            yield ctx.finding(
                self,
                path,
                a.span,
                f"the 32-bit split passes `{a.text}` (the default) for `{p.name}` instead of forwarding it: on tensors "
                f"past INT32_MAX elements the parameter resets. Pass `{p.name}`.",
                fix=fix,
            )
