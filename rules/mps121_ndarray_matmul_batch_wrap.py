"""
## What it does
Flags a tensor with more than two dimensions handed as the first source (A) of a three-source
`MPSNDArrayMatrixMultiplication` (`initWithDevice:... sourceCount:3`, A @ B + C), when nothing on the path
bounds its batch dimension by 65536: no check that it has at most two dimensions (`t.dim() <= 2`, an `if
(t.dim() > 2)` that flattens), that `t.size(-3) <= 65536`, and no flatten to 2-D (`t.flatten(0, -2)`, a 2-element
`view`/`reshape`) where every caller in the tree passes it.

## Why is this bad?
The fused three-source kernel keeps the batch coordinate in 16 bits: batch `b` is written to `b mod 65536`,
clobbering another row, and rows past 65536 are left unwritten, exposing stale memory. Nothing fails; the
results are wrong and look nondeterministic. `F.linear` with a bias and a 3-D input of more than 65536 batches
hit it (pytorch/pytorch#189495, fixed by #189496 by flattening every >2-D input to one 2-D GEMM). The two-source
kernel (no bias) is not affected and is not flagged.

## Example
```objc
if (needs_nd_workaround(input)) {
  _linear_nograph(input.flatten(0, -2), weight, bias, output.flatten(0, -2));
} else {
  _linear_nograph(input, weight, bias, output);   // a (70000, 2, K) input reaches the batched kernel
}
```

## Use instead
```objc
if (input.dim() > 2) {
  _linear_nograph(input.flatten(0, -2), weight, bias, output.flatten(0, -2));   // linear's leading dims are a fake batch
} else {
  _linear_nograph(input, weight, bias, output);
}
```

## How to fix
Flatten the leading dimensions into the rows (a free view when the second operand is shared across the batch),
or split the batch in chunks of at most 65536, or use the two-source kernel and add C afterwards.
"""

from __future__ import annotations

from mpslint.model import Severity
from mpslint.rule import Rule
from mpslint.semantic import hostflow as hf
from mpslint.semantic.expressions import int_literal, strip_parens
from mpslint.semantic.model import semantic_model

_BATCH_LIMIT = 65536


def _three_source(fn):
    """The `[[MPSNDArrayMatrixMultiplication alloc] initWithDevice:d sourceCount:3]` call of ``fn``, or None."""
    for c in fn.calls:
        if c.name == "initWithDevice" and "MPSNDArrayMatrixMultiplication" in c.receiver and len(c.args) == 2:
            lit = int_literal(c.args[1].text.strip())
            if lit is not None and lit[0] == 3:
                return c
    return None


def _first_source(fn):
    """The tensor whose MPSNDArray is the first source of the encode (`encodeToCommandEncoder:... sourceArrays:@[A,
    ...]`), as (the `getMPSNDArray` call, the tensor node); else the first `getMPSNDArray` of the function."""
    arrays = {d.name: d for d in fn.decls if d.init is not None and d.init.tree is not None}
    for c in fn.calls:
        if c.name != "encodeToCommandEncoder" or len(c.args) < 3 or c.args[2].tree is None:
            continue
        srcs = strip_parens(c.args[2].tree)
        if srcs.kind == "init" and srcs.kids and strip_parens(srcs.kids[0]).kind == "id":
            d = arrays.get(strip_parens(srcs.kids[0]).op)
            init = strip_parens(d.init.tree) if d is not None else None
            if init is not None and init.kind == "call" and init.op == "getMPSNDArray" and init.args:
                call = next((k for k in fn.calls if k.name == "getMPSNDArray" and k.span.start == init.start), None)
                if call is not None:
                    return call, strip_parens(init.args[0])
    call = next((k for k in fn.calls if k.name == "getMPSNDArray" and k.args and k.args[0].tree is not None), None)
    return (call, strip_parens(call.args[0].tree)) if call is not None else None


def _two_dimensional(fm, node, stmt: int, depth: int = 0) -> bool:
    """The tensor ``node`` has at most two dimensions, or a batch of at most 65536, at ``stmt``: a check bounds
    `t.dim()` or `t.size(-3)`, or it is (through locals) a flatten to 2-D or a 2-element view or reshape."""
    n = strip_parens(node)
    b = fm.bounds(stmt)
    for suffix, limit in ((".dim()", 2), (".size(-3)", _BATCH_LIMIT)):
        got = b.get(fm.key(n, stmt) + suffix) or b.get(fm._shape_key(n, stmt, 0, None) + suffix)
        if got is not None and got.interval.hi is not None and got.interval.hi <= limit:
            return True
    o, at = fm.origin(n, stmt)
    o = strip_parens(o)
    if o.kind == "call" and o.receiver is not None and depth < 4:
        if o.op == "flatten" and len(o.args) == 2:
            a, z = (strip_parens(x).text.replace(" ", "") for x in o.args)
            if a == "0" and z == "-2":
                return True
        if o.op in ("view", "reshape") and len(o.args) == 1 and strip_parens(o.args[0]).kind == "init":
            return len(strip_parens(o.args[0]).kids) <= 2
        if o.op in ("contiguous", "to", "clone", "detach"):
            return _two_dimensional(fm, o.receiver, at, depth + 1)
    return False


class NDArrayMatmulBatchWrap(Rule):
    code = "MPS121"
    name = "ndarray-matmul-batch-wrap"
    severity = Severity.ERROR
    scope = "host"
    summary = "A >2-D tensor with an unbounded batch fed to a three-source MPSNDArrayMatrixMultiplication, which wraps batches past 65536"
    guide = "Working with Large Tensors"

    def check(self, ctx):
        hosts = ctx.project.hosts
        model = None
        for path in sorted(hosts):
            for fn in hosts[path].functions:
                kernel = _three_source(fn)
                if kernel is None or not hf.is_live(fn, path, hosts):
                    continue
                first = _first_source(fn)
                if first is None:
                    continue
                model = model or semantic_model(ctx.project)
                yield from self._judge(ctx, model, path, fn, kernel, *first)

    def _judge(self, ctx, model, path, fn, kernel, call, t):
        hosts = ctx.project.hosts
        fm = model.function(fn, hosts[path])
        if _two_dimensional(fm, t, call.stmt):
            return
        what = (f"a three-source `MPSNDArrayMatrixMultiplication` (A @ B + C, line {kernel.span.line}), whose batch "
                f"index is 16 bits: past 65536 batches, batch b is written to b mod 65536 and the rest left unwritten "
                f"(pytorch/pytorch#189495)")
        index = next((i for i, p in enumerate(fn.params) if t.kind == "id" and p.name == t.op), None)
        if index is None or fm.defs.assigned(t.op):
            yield ctx.finding(
                self, path, call.span,
                f"`{t.text}` can have more than two dimensions here and is the first source of {what}. Flatten it to 2-D "
                f"(`{t.text}.flatten(0, -2)`, with the output; a C operand of more than one dimension then goes through the "
                f"two-source kernel and is added after) or bound `{t.text}.size(-3)` by 65536 first.",
            )
            return
        sites = hf.call_sites(hosts)
        callers = hf.visible_sites(sites, fn, path)
        if not callers:
            if hf.short_name(fn.name) in hf.registered_functions(hosts) or not hf.is_static(fn):
                yield ctx.finding(
                    self, path, call.span,
                    f"`{t.text}` (a parameter: its callers are not in view) can have more than two dimensions and is the "
                    f"first source of {what}. Flatten it to 2-D (`{t.text}.flatten(0, -2)`) or bound `{t.text}.size(-3)` "
                    f"by 65536 first.",
                )
            return
        for cpath, caller, c in callers:
            if index >= len(c.args) or c.args[index].tree is None:
                continue
            arg = strip_parens(c.args[index].tree)
            if _two_dimensional(model.function(caller, hosts.get(cpath)), arg, c.stmt):
                continue
            yield ctx.finding(
                self, cpath, c.span,
                f"`{c.args[index].text}` can have more than two dimensions here and `{hf.short_name(fn.name)}` makes it the "
                f"first source of {what}. Flatten it to 2-D (`{c.args[index].text}.flatten(0, -2)` and the output with it; a "
                f"C operand of more than one dimension then cannot go with it: use the two-source kernel and add it "
                f"after) or bound `{c.args[index].text}.size(-3)` by 65536 before the call.",
            )
            return  # one finding per kernel
