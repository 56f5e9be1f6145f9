"""The small expression language of TOML launch specs: sizes, struct fields and references.

Two evaluators over one checked subset of Python's syntax (parsed with `ast`, never `eval` on raw text):

- `size(expr, env)`: integers only -- literals, names bound in the spec (`N`, `C`), arithmetic
  (`+ - * // % ** << >>`), `min`, `max`, `ceil_div`, `prod`, and `numel(x)`, `shape(x)`, `strides(x)`,
  `ndim(x)` of a buffer named `x`; lists and tuples of those.
- `torch_expr(expr, env)`: a torch expression over the buffers' initial tensors (`torch.cumsum(x, 0)`,
  `x.reshape(4, -1).sum(1)`), subscripts and slices included.  Attribute names starting with `_`, and the
  torch entry points that reach files, the network or code (`load`, `save`, `hub`, `jit`, ...) are refused:
  a spec is data, even though spec files should still come from a trusted place.
"""
from __future__ import annotations

import ast
import math
import operator

_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
        ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
        ast.Div: operator.truediv, ast.BitAnd: operator.and_, ast.BitOr: operator.or_}
_UN = {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert, ast.Not: operator.not_}
_CMP = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Eq: operator.eq,
        ast.NotEq: operator.ne}
REFUSED_ATTRS = {"load", "save", "from_file", "hub", "jit", "compile", "package", "utils", "library", "classes",
                 "ops", "numpy", "tofile", "storage", "untyped_storage", "cuda", "mps", "backends", "distributed",
                 "multiprocessing", "set_default_dtype", "manual_seed", "fx", "export", "onnx", "profiler"}


class SpecExprError(ValueError):
    pass


def ceil_div(a, b):
    return -(-a // b)


SIZE_FUNCS = {"min": min, "max": max, "ceil_div": ceil_div, "prod": lambda xs: math.prod(xs), "len": len,
              "abs": abs, "int": int}


SHAPE_FUNCS = {"numel": lambda t: int(t.numel()), "shape": lambda t: list(t.shape),
               "strides": lambda t: list(t.stride()), "ndim": lambda t: int(t.dim())}


class _Eval:
    def __init__(self, env: dict, funcs: dict, attrs: bool):
        self.env, self.funcs, self.attrs = env, funcs, attrs

    def __call__(self, node):
        m = getattr(self, "_" + type(node).__name__, None)
        if m is None:
            raise SpecExprError(f"`{ast.unparse(node)}`: {type(node).__name__} is not allowed in a spec expression")
        return m(node)

    def _Expression(self, n):
        return self(n.body)

    def _Constant(self, n):
        if not isinstance(n.value, (int, float, bool, str)) and n.value is not None:
            raise SpecExprError(f"constant {n.value!r} is not allowed")
        return n.value

    def _Name(self, n):
        if n.id in self.env:
            return self.env[n.id]
        if n.id in self.funcs:
            return self.funcs[n.id]
        if n.id in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[n.id]
        raise SpecExprError(f"unknown name `{n.id}`")

    def _BinOp(self, n):
        op = _BIN.get(type(n.op))
        if op is None:
            raise SpecExprError(f"operator {type(n.op).__name__} is not allowed")
        a, b = self(n.left), self(n.right)
        if isinstance(n.op, ast.Pow) and isinstance(b, int) and b > 256:
            raise SpecExprError("exponent too large")
        return op(a, b)

    def _UnaryOp(self, n):
        return _UN[type(n.op)](self(n.operand))

    def _Compare(self, n):
        left = self(n.left)
        if len(n.ops) == 1:   # `x != 0` on tensors is elementwise: keep the result as it is
            return _CMP[type(n.ops[0])](left, self(n.comparators[0]))
        for op, right in zip(n.ops, n.comparators):
            r = self(right)
            if not _CMP[type(op)](left, r):
                return False
            left = r
        return True

    def _IfExp(self, n):
        return self(n.body) if self(n.test) else self(n.orelse)

    def _Tuple(self, n):
        return tuple(self(e) for e in n.elts)

    def _List(self, n):
        return [self(e) for e in n.elts]

    def _Slice(self, n):
        return slice(*(self(x) if x is not None else None for x in (n.lower, n.upper, n.step)))

    def _Subscript(self, n):
        return self(n.value)[self(n.slice)]

    def _Attribute(self, n):
        if not self.attrs:
            raise SpecExprError(f"`{ast.unparse(n)}`: attributes are not allowed in a size expression")
        if n.attr.startswith("_") or n.attr in REFUSED_ATTRS:
            raise SpecExprError(f"`.{n.attr}` is not allowed in a spec expression")
        return getattr(self(n.value), n.attr)

    def _Call(self, n):
        fn = self(n.func)
        args = []
        for a in n.args:
            if isinstance(a, ast.Starred):
                raise SpecExprError("*args are not allowed")
            args.append(self(a))
        kw = {}
        for k in n.keywords:
            if k.arg is None:
                raise SpecExprError("**kwargs are not allowed")
            kw[k.arg] = self(k.value)
        return fn(*args, **kw)


def _parse(expr: str):
    if not isinstance(expr, str):
        return None
    if len(expr) > 2000:
        raise SpecExprError("expression longer than 2000 characters")
    try:
        return ast.parse(expr.strip(), mode="eval")
    except SyntaxError as e:
        raise SpecExprError(f"`{expr}`: {e.msg}") from None


def size(expr, env: dict):
    """An integer (or list of integers) from a size expression; ints and lists pass through."""
    if isinstance(expr, bool):
        raise SpecExprError("a size cannot be a boolean")
    if isinstance(expr, (int, float)):
        return expr
    if isinstance(expr, list):
        return [size(e, env) for e in expr]
    tree = _parse(expr)
    try:
        return _Eval(env, {**SIZE_FUNCS, **SHAPE_FUNCS}, attrs=False)(tree)
    except SpecExprError:
        raise
    except Exception as e:
        raise SpecExprError(f"`{expr}`: {type(e).__name__}: {e}") from None


def torch_expr(expr: str, env: dict):
    """The value of a reference expression, with `torch` and the buffers (by name) in scope."""
    import torch
    tree = _parse(expr)
    scope = {"torch": torch}
    scope.update(env)
    funcs = dict(SIZE_FUNCS)
    try:
        return _Eval(scope, funcs, attrs=True)(tree)
    except SpecExprError:
        raise
    except Exception as e:
        raise SpecExprError(f"`{expr}`: {type(e).__name__}: {e}") from None


def slice_of(text: str, env: dict):
    """`[:4]`, `[1:, 0]` -> the index object (for the compared part of an output)."""
    t = text.strip()
    if not (t.startswith("[") and t.endswith("]")):
        raise SpecExprError(f"a slice is written `[...]`, not `{text}`")
    tree = _parse("_x" + t)
    return _Eval(dict(env), dict(SIZE_FUNCS), attrs=False)(tree.body.slice)
