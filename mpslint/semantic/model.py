"""The queries rules ask: the type of an expression, where a value comes from, what bounds it and where.

``SemanticModel(project)`` is built once per run; ``model.function(path, fn)`` gives a ``FunctionModel`` with

- ``type_of(node, stmt)``: the C++/MSL type (promotions, conversions, ``?:``, literals, ``auto``, the PyTorch API);
- ``key(node, stmt)``: a canonical key of the value, locals replaced by their single reaching definition, so
  ``auto n = t.numel(); ... n`` and ``t.numel()`` have the same key, and so do aliases of one tensor;
- ``range(node, stmt)``: an interval from constants, types, the API, ``min``/``%``/masks/shifts and the
  dominating guards;
- ``bounds(stmt)``: what every dominating check proves (key -> interval, and the check);
- ``extent(node, stmt)``: ``"linear"`` for a numel, a product of sizes, a byte count or offset; ``"dim"`` for
  one size or stride; None for anything else.

Boolean helpers are summarised once (``return h <= 256 && ...``) and applied where they are called.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..facts.cpp import Function
from . import ranges as R
from .definitions import Definitions
from .expressions import Node, identifiers, int_literal, strip_parens, walk
from .guards import Condition, dominating_conditions
from .ranges import Interval
from .symbols import FileTables, Scope
from .types import BOOL, INT32, INT64, INT_ARRAY, INT8, SIZE_T, UINT32, UNKNOWN, CType, arith, common, literal_type, promote

_MAX_DEPTH = 16
_MAX_PROVE_DEPTH = 24  # conditions nest deeper than values: `a && (b || c)` held in boolean locals of locals
_MAX_NESTING = 12  # statements whose bounds are being computed at once (each asks about values defined earlier)
LINEAR_CALLS = {"numel", "nbytes", "storage_offset", "num_output_elements", "sym_numel", "storage_nbytes"}
DIM_CALLS = {"size", "stride", "sym_size", "sym_stride"}
ARRAY_CALLS = {"sizes", "strides", "shape", "sym_sizes", "sym_strides"}
COUNT_CALLS = {"dim", "ndim", "ndimension", "ntensors", "ninputs", "noutputs", "num_reduce_dims"}
ELEM_CALLS = {"element_size", "itemsize"}
CHECKED = {"checked_convert", "safe_downcast", "narrow_cast", "checked_cast"}
NAMED_LIMITS = {
    "INT_MAX": R.INT32_MAX, "INT32_MAX": R.INT32_MAX, "UINT_MAX": R.UINT32_MAX, "UINT32_MAX": R.UINT32_MAX,
    "INT16_MAX": (1 << 15) - 1, "UINT16_MAX": (1 << 16) - 1, "INT64_MAX": (1 << 63) - 1, "SIZE_MAX": (1 << 64) - 1,
    "CHAR_BIT": 8, "UINT8_MAX": 255, "INT8_MAX": 127,
}
_SHAPE_CALLS = {"size", "sym_size", "sizes", "sym_sizes", "shape", "numel", "sym_numel", "dim", "ndimension"}
_SHAPE_KEEPING = {"contiguous", "clone", "to", "detach", "expect_contiguous", "resolve_conj", "resolve_neg"}
_VEC_COMPONENTS = {"x", "y", "z", "w", "r", "g", "b", "a"}
_SIZE_RANGE = Interval(0, (1 << 63) - 1)
_COMPARE = {"<", "<=", ">", ">=", "==", "!="}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "==": "==", "!=": "!="}
_NEGATE = {"<": ">=", "<=": ">", ">": "<=", ">=": "<", "==": "!=", "!=": "=="}


@dataclass(frozen=True)
class Bound:
    interval: Interval
    condition: Condition | None


class SemanticModel:
    """Project-wide tables and helper summaries, and one ``FunctionModel`` per function, built on demand."""

    def __init__(self, project):
        typedefs: dict[str, str] = {}
        structs: dict[str, dict[str, str]] = {}
        constants: dict = {}
        self._files: dict[str, list] = {}
        for path, facts in sorted((getattr(project, "hosts", {}) or {}).items()):
            self._files.setdefault(path, []).extend([facts, *getattr(facts, "embedded", [])])
        for path, lst in sorted((getattr(project, "metals", {}) or {}).items()):
            self._files.setdefault(path, []).extend(x for x in lst if all(x is not y for y in self._files[path]))
        for path in sorted(self._files):
            for sub in self._files[path]:
                for k, v in (getattr(sub, "typedefs", None) or {}).items():
                    typedefs.setdefault(k, v)
                for k, v in (getattr(sub, "structs", None) or {}).items():
                    structs.setdefault(k, v)
                for k, v in (getattr(sub, "constants", None) or {}).items():
                    constants.setdefault(k, v)
        self.tables = FileTables(typedefs, structs, constants)
        self._file_tables: dict[int, FileTables] = {}
        self._functions: dict[int, FunctionModel] = {}
        self.helpers: dict[str, tuple[tuple[str, ...], Node, "FunctionModel"]] = {}
        self._helper_facts: dict[str, tuple[Function, object]] = {}
        self.checkers: dict[str, tuple[tuple[str, ...], list[tuple[Node, int]], "FunctionModel"] | None] = {}
        self._checker_facts: dict[str, tuple[Function, object]] = {}
        for path in sorted(self._files):
            for sub in self._files[path]:
                for fn in getattr(sub, "functions", []):
                    ret = fn.return_type.replace("static", "").replace("inline", "").replace("constexpr", "").strip()
                    if ret in ("bool", "BOOL"):
                        self._helper_facts.setdefault(fn.name, (fn, sub))
                    elif ret == "void" and fn.kind == "function" and _top_level_checks(fn):
                        self._checker_facts.setdefault(fn.name, (fn, sub))
        # void functions that validate their arguments (`check_size(n)` whose body is `TORCH_CHECK(n <= ...)`):
        # a call to one bounds what it is passed, after the call
        self.checker_names = frozenset(self._checker_facts)

    def tables_for(self, facts) -> FileTables:
        t = self._file_tables.get(id(facts))
        if t is None:
            t = self._file_tables[id(facts)] = FileTables(
                getattr(facts, "typedefs", None) or {}, getattr(facts, "structs", None) or {}, getattr(facts, "constants", None) or {}, self.tables
            )
        return t

    def function(self, fn: Function, facts=None, params: dict[str, Interval] | None = None) -> "FunctionModel":
        """The model of ``fn``; with ``params``, of ``fn`` entered with those ranges of its parameters (a kernel as
        the host code that launches it binds it: ``launch_bindings.launch_param_ranges``)."""
        key = (id(fn), tuple(sorted(params.items()))) if params else id(fn)
        m = self._functions.get(key)
        if m is None:
            m = self._functions[key] = FunctionModel(self, fn, self.tables_for(facts) if facts is not None else self.tables, params)
        return m

    def as_called(self, fn: Function, facts, flags: dict[str, bool]) -> "FunctionModel":
        """The model of ``fn`` entered with the ``bool`` flags its callers set (``hostflow.flag_arguments``)."""
        return self.function(fn, facts, {k: Interval.point(int(v)) for k, v in flags.items()} or None)

    def helper(self, name: str) -> tuple[tuple[str, ...], Node, "FunctionModel"] | None:
        """A boolean helper whose body is one ``return <expr>;``: its parameters, that expression, its model."""
        if name in self.helpers:
            return self.helpers[name]
        got = None
        entry = self._helper_facts.get(name)
        if entry is not None:
            fn, facts = entry
            expr = _helper_expression(fn)
            if expr is not None:
                got = (tuple(p.name for p in fn.params), expr, self.function(fn, facts))
        self.helpers[name] = got
        return got


    def checker(self, name: str):
        """A void function whose top level only declares constants and checks its arguments (``TORCH_CHECK(size <=
        kMax, ...)``, ``if (bad) { TORCH_CHECK(false, ...); }``): its parameters, the conditions every return from it
        establishes (each with the statement it holds at), its model. None for anything else."""
        if name in self.checkers:
            return self.checkers[name]
        got = None
        entry = self._checker_facts.get(name)
        if entry is not None:
            fn, facts = entry
            parts = _checker_conditions(fn)
            if parts:
                got = (tuple(p.name for p in fn.params), parts, self.function(fn, facts))
        self.checkers[name] = got
        return got


class FunctionModel:
    def __init__(self, model: SemanticModel, fn: Function, tables: FileTables, params: dict[str, Interval] | None = None):
        self.model = model
        self.fn = fn
        # what every caller (a launching host) passes for a parameter: name -> range; `pos.x` for a vector's component
        self.params = dict(params or {})
        self.tables = tables
        self.scope = Scope(fn, tables)
        self.defs = Definitions(fn)
        self._bounds: dict[int, dict[str, Bound]] = {}
        self._flags: dict[str, Interval] | None = None
        self._nesting = 0
        # memos of the top-level queries; nodes live as long as the facts that hold them (ids are stable)
        self._key_memo: dict[tuple[int, int], str] = {}
        self._type_memo: dict[tuple[int, int], CType] = {}
        self._range_memo: dict[tuple, Interval] = {}
        self._values_memo: dict[tuple[str, int], list | None] = {}
        self._origin_memo: dict[tuple[int, int], tuple[Node, int]] = {}

    # ------------------------------------------------------------------ reads
    def read_after(self, name: str, stmt: int) -> bool:
        """Some statement after ``stmt`` may read the local ``name``: an expression tree of the facts (a
        statement's, a declaration's initialiser, a call, a cast, an assignment) names it, or, for what has no
        tree (a constructor-style declaration, a macro's arguments), the statement's text holds it as a word.
        False only when nothing after ``stmt`` can see the value: the value is never used."""
        fn = self.fn
        trees = [s.tree for s in fn.stmts[stmt + 1:]] + [s.update for s in fn.stmts[stmt + 1:]]
        trees += [d.init.tree for d in fn.decls if d.stmt > stmt and d.init is not None]
        trees += [c.tree for c in fn.calls if c.stmt > stmt]
        trees += [c.operand.tree for c in fn.casts if c.stmt > stmt]
        trees += [a.rhs.tree for a in fn.assigns if a.stmt > stmt] + [x.tree for x in fn.subscripts if x.stmt > stmt]
        if any(t is not None and name in identifiers(t) for t in trees):
            return True
        word = re.compile(r"(?<![\w.])" + re.escape(name) + r"(?!\w)")
        return any(word.search(s.text) for s in fn.stmts[stmt + 1:])

    # ------------------------------------------------------------------ values
    def values(self, name: str, stmt: int) -> list[tuple[Node | None, int]] | None:
        """The values ``name`` may hold at ``stmt`` with the statement each was computed at; None when ``name``
        is not a local, parameter or constant mpslint can see."""
        mk = (name, stmt)
        if mk in self._values_memo:
            return self._values_memo[mk]
        got = self._values_memo[mk] = self._values(name, stmt)
        return got

    def _values(self, name: str, stmt: int) -> list[tuple[Node | None, int]] | None:
        sym = self.scope.lookup(name, stmt)
        if sym is None:
            return None
        if sym.decl is None:  # file scope constant
            return [(sym.init, -1)]
        if sym.stmt < 0:  # parameter
            return [(None, -1)] + [(d.value, d.stmt) for d in self.defs.reaching(name, -1, stmt)]
        reach = self.defs.reaching(name, sym.stmt, stmt)
        killers = [d for d in reach if d.value is not None and self._dominates(d.stmt, stmt)]
        if killers:
            last = max(killers, key=lambda d: d.stmt)
            return [(d.value, d.stmt) for d in reach if d.stmt >= last.stmt or not self._dominates(d.stmt, last.stmt)]
        return [(sym.init, sym.stmt)] + [(d.value, d.stmt) for d in reach]

    def _floor(self, name: str, sym, stmt: int, depth: int) -> int | None:
        """A local that only ever grows (`for (int i = 0; ...; i++)`, `k += 4`) is at least its initial value."""
        reach = self.defs.reaching(name, sym.stmt, stmt)
        if not reach:
            return None
        for d in reach:
            if d.op in ("++", "step+"):
                continue
            if d.op == "+=" and d.rhs is not None:
                r = self.range(d.rhs, d.stmt, depth + 1)
                if r.lo is not None and r.lo >= 0:
                    continue
            return None
        init = sym.init.kids[0] if sym.init.kind == "init" and len(sym.init.kids) == 1 else sym.init
        lo = self.range(init, sym.stmt, depth + 1).lo
        return lo

    def _dominates(self, a: int, b: int) -> bool:
        st = self.fn.stmts
        if not (0 <= a < len(st) and 0 <= b < len(st)) or a >= b:
            return False
        pa = st[a].parents
        return tuple((st[b].parents + (b,))[: len(pa)]) == tuple(pa) and not any(st[p].kind in ("for_statement", "while_statement", "for_range_loop", "do_statement") for p in st[b].parents if p not in pa)

    def origin(self, node: Node, stmt: int, depth: int = 0) -> tuple[Node, int]:
        """``node`` with a local replaced by its single reaching value (transitively): where the value comes from."""
        if depth == 0:
            mk = (id(node), stmt)
            got = self._origin_memo.get(mk)
            if got is None:
                got = self._origin_memo[mk] = self._origin(node, stmt, 0)
            return got
        return self._origin(node, stmt, depth)

    def _origin(self, node: Node, stmt: int, depth: int = 0) -> tuple[Node, int]:
        n = strip_parens(node)
        while n.kind == "id" and depth < _MAX_DEPTH:
            vals = self.values(n.op, stmt)
            if not vals or len(vals) != 1 or vals[0][0] is None:
                break
            v, at = vals[0]
            if v.kind == "init" and len(v.kids) == 1:
                v = v.kids[0]
            n, stmt, depth = strip_parens(v), at, depth + 1
        return n, stmt

    def array_element(self, node: Node, stmt: int) -> Node:
        """``node`` with the array it indexes replaced by where the array comes from: `sizes[0]` after
        `IntArrayRef sizes = t.sizes();` is `t.sizes()[0]`, one size of `t` (and `strides[1]` one stride)."""
        n = strip_parens(node)
        if n.kind != "index" or len(n.kids) != 2 or strip_parens(n.kids[0]).kind != "id":
            return n
        base, _ = self.origin(n.kids[0], stmt)
        if base.kind == "call" and base.op in ARRAY_CALLS and base.receiver is not None:
            return _synthetic("index", n.op, (base, n.kids[1]), n)
        return n

    def key(self, node: Node, stmt: int, depth: int = 0, env: dict | None = None) -> str:
        """The canonical key of the value ``node`` holds at ``stmt``."""
        if env is None and depth == 0:
            mk = (id(node), stmt)
            got = self._key_memo.get(mk)
            if got is None:
                got = self._key_memo[mk] = self._key(node, stmt, 0, None)
            return got
        return self._key(node, stmt, depth, env)

    def name_key(self, name: str, stmt: int) -> str:
        """The key of the value a local or parameter ``name`` holds at ``stmt`` (no node at hand)."""
        return self._key(Node("id", name, "", (), -1, -1, name), stmt)

    def name_type(self, name: str, stmt: int) -> CType:
        """The type of a local or parameter ``name`` at ``stmt`` (``auto`` deduced from its initialiser)."""
        return self._type_of(Node("id", name, "", (), -1, -1, name), stmt)

    def _key(self, node: Node, stmt: int, depth: int = 0, env: dict | None = None) -> str:
        n = strip_parens(node)
        if depth > _MAX_DEPTH:
            return n.key()
        if n.kind == "id":
            if env and n.op in env:
                caller, arg, at = env[n.op]
                return caller.key(arg, at, depth + 1)
            o, at = self.origin(n, stmt, depth)
            if o is not n:
                return self.key(o, at, depth + 1)
            return n.op
        if n.kind == "member":
            return f"{self.key(n.kids[0], stmt, depth + 1, env)}.{n.op}" if n.kids else n.op
        if n.kind == "call":
            c = n.kids[0]
            if c.kind == "member" and c.kids and len(n.kids) == 1 and c.op in ("nbytes", "itemsize"):
                # one value, three spellings: `t.nbytes()` is `t.numel() * t.element_size()`, `itemsize()` is
                # `element_size()` (a check of the product bounds the byte count)
                elem = f"{self.key(c.kids[0], stmt, depth + 1, env)}.element_size()"
                if c.op == "itemsize":
                    return elem
                a, b = sorted((f"{self._shape_key(c.kids[0], stmt, depth + 1, env)}.numel()", elem))
                return f"({a}*{b})"
            if c.kind == "member" and c.kids and c.op in _SHAPE_CALLS:
                head = f"{self._shape_key(c.kids[0], stmt, depth + 1, env)}.{c.op}"  # `t.contiguous().size(0)` is `t.size(0)`
            else:
                head = f"{self.key(c.kids[0], stmt, depth + 1, env)}.{c.op}" if c.kind == "member" and c.kids else c.key()
            targs = f"<{n.extra}>" if n.extra else ""
            return head + targs + "(" + ",".join(self.key(a, stmt, depth + 1, env) for a in n.kids[1:]) + ")"
        if n.kind == "index":
            return f"{self.key(n.kids[0], stmt, depth + 1, env)}[{self.key(n.kids[1], stmt, depth + 1, env)}]"
        if n.kind == "binary":
            a, b = self.key(n.kids[0], stmt, depth + 1, env), self.key(n.kids[1], stmt, depth + 1, env)
            if n.op in ("*", "+") and b < a:
                a, b = b, a  # commutative: `t.element_size() * t.numel()` is `t.numel() * t.element_size()`
            return f"({a}{n.op}{b})"
        if n.kind == "cast":
            return f"({n.extra}){self.key(n.kids[0], stmt, depth + 1, env)}" if n.kids else n.key()
        if n.kind == "unary":
            return f"{n.op}{self.key(n.kids[0], stmt, depth + 1, env)}"
        return n.key()

    def _shape_key(self, node: Node, stmt: int, depth: int, env) -> str:
        """The key of the tensor whose shape ``node`` has: through locals, copies that keep the shape
        (``contiguous()``, ``clone()``, ``to(...)``, ``detach()``) and a ``?:`` of two such tensors."""
        n = strip_parens(node)
        if depth > _MAX_DEPTH:
            return self.key(n, stmt, depth, env)
        if n.kind == "id" and env and n.op in env:
            caller, arg, at = env[n.op]
            return caller._shape_key(arg, at, depth + 1, None)
        if n.kind == "id":
            o, at = self.origin(n, stmt, depth)
            if o is not n:
                return self._shape_key(o, at, depth + 1, env)
        if n.kind == "call" and n.kids and n.kids[0].kind == "member" and n.kids[0].kids and n.kids[0].op in _SHAPE_KEEPING:
            return self._shape_key(n.kids[0].kids[0], stmt, depth + 1, env)
        if n.kind == "cond" and len(n.kids) == 3:
            a = self._shape_key(n.kids[1], stmt, depth + 1, env)
            if a == self._shape_key(n.kids[2], stmt, depth + 1, env):
                return a
        return self.key(n, stmt, depth, env)

    def bound_at_call(self, node: Node, stmt: int, env: dict, caller: "FunctionModel", at: int) -> Interval:
        """The range of this function's value ``node`` (at ``stmt``) as a caller bounds it at its call ``at``, the
        parameters bound by ``env`` (name -> (caller, argument, at)): the caller's checks that dominate the call,
        by the value's key in the caller's terms (`q.size(2) <= 8` before `f(q)` bounds `f`'s `t.size(2)`)."""
        r = self.range(node, stmt, env=env, guards=False)
        bounds = caller.bounds(at)
        if not bounds:
            return r
        o = strip_parens(self.origin(node, stmt)[0]) if strip_parens(node).kind == "id" else strip_parens(node)
        b = bounds.get(self.key(o, stmt, env=env))
        if b is not None:
            r = r.meet(b.interval)
        owner = _size_owner(o)
        if owner is not None:
            nb = bounds.get(self._shape_key(owner, stmt, 0, env) + ".numel()")
            if nb is not None and nb.interval.hi is not None:
                r = r.meet(Interval(None, nb.interval.hi))
        if owner is not None and self.key(owner, stmt, env=env) + "#dims" in bounds:
            r = r.meet(Interval(None, R.INT32_MAX))
        owner = owner if owner is not None else _stride_owner(o)
        if owner is not None and self.key(owner, stmt, env=env) + "#32bit" in bounds:
            r = r.meet(Interval(None, R.INT32_MAX))
        return r

    # ------------------------------------------------------------------ types
    def type_of(self, node: Node, stmt: int, depth: int = 0) -> CType:
        mk = (id(node), stmt)
        got = self._type_memo.get(mk)
        if got is None:
            got = self._type_of(node, stmt, depth)
            if depth == 0:
                self._type_memo[mk] = got
        return got

    def _type_of(self, node: Node, stmt: int, depth: int = 0) -> CType:
        n = strip_parens(node)
        if depth > _MAX_DEPTH:
            return UNKNOWN
        k = n.kind
        if k == "int":
            return literal_type(n.op)
        if k == "float":
            return literal_type(n.op)
        if k == "bool":
            return BOOL
        if k == "char":
            return INT8
        if k == "id":
            if n.op in NAMED_LIMITS:
                return INT32 if n.op in ("INT_MAX", "INT32_MAX") else (UINT32 if n.op in ("UINT_MAX", "UINT32_MAX") else INT64)
            sym = self.scope.lookup(n.op, stmt)
            if sym is None:
                return UNKNOWN
            if sym.type.name == "auto" or (sym.type.kind == "unknown" and sym.init is not None):
                if sym.init is not None:
                    init = sym.init.kids[0] if sym.init.kind == "init" and len(sym.init.kids) == 1 else sym.init
                    return self.type_of(init, sym.stmt, depth + 1)
                return UNKNOWN
            return sym.type
        if k == "member":
            base = self.type_of(n.kids[0], stmt, depth + 1) if n.kids else UNKNOWN
            if base.kind == "vector" and n.op in _VEC_COMPONENTS:
                return base.elem or UNKNOWN
            if base.kind == "vector" and len(n.op) > 1 and set(n.op) <= _VEC_COMPONENTS:
                return CType("vector", name=f"{base.elem}{len(n.op)}", elem=base.elem, count=len(n.op))
            if base.kind == "ptr" and base.elem is not None:
                base = base.elem
            ft = self.scope.field_type(base, n.op)
            return ft or UNKNOWN
        if k == "call":
            return self._call_type(n, stmt, depth)
        if k == "index":
            base = self.type_of(n.kids[0], stmt, depth + 1)
            if base.kind in ("container", "ptr", "vector") and base.elem is not None:
                return base.elem
            return UNKNOWN
        if k == "cast":
            return self.scope.type_of_text(n.extra)
        if k == "unary":
            if n.op == "!":
                return BOOL
            t = self.type_of(n.kids[0], stmt, depth + 1)
            if n.op == "*":
                return t.elem if t.kind in ("ptr", "container") and t.elem is not None else UNKNOWN
            if n.op == "&":
                return CType("ptr", 64, False, "ptr", elem=t)
            if n.op in ("++", "--"):
                return t
            return promote(t) if t.is_int else t
        if k == "postfix":
            return self.type_of(n.kids[0], stmt, depth + 1)
        if k == "binary":
            if n.op in _COMPARE or n.op in ("&&", "||"):
                return BOOL
            a = self.type_of(n.kids[0], stmt, depth + 1)
            if n.op in ("<<", ">>"):
                return promote(a) if a.is_int else a
            b = self.type_of(n.kids[1], stmt, depth + 1)
            if a.kind == "ptr" and n.op in ("+", "-") and b.is_int:
                return a
            return arith(a, b)
        if k == "cond":
            return common(self.type_of(n.kids[1], stmt, depth + 1), self.type_of(n.kids[2], stmt, depth + 1))
        if k == "sizeof":
            return SIZE_T
        if k == "assign":
            return self.type_of(n.kids[0], stmt, depth + 1)
        if k == "comma":
            return self.type_of(n.kids[1], stmt, depth + 1)
        return UNKNOWN

    def _call_type(self, n: Node, stmt: int, depth: int) -> CType:
        name = n.op
        recv = n.receiver
        rt = self.type_of(recv, stmt, depth + 1) if recv is not None else UNKNOWN
        if name in CHECKED or name in ("numeric_limits",):
            return self.scope.type_of_text(n.extra.split(",")[0]) if n.extra else UNKNOWN
        q = n.kids[0].op if n.kids and n.kids[0].kind == "id" else ""
        if "numeric_limits<" in q:
            inner = q[q.find("<") + 1 : q.rfind(">")]
            return self.scope.type_of_text(inner)
        if recv is not None and rt.kind not in ("container",):
            if name in LINEAR_CALLS:
                return SIZE_T if name in ("nbytes", "storage_nbytes") else INT64
            if name in DIM_CALLS and n.args:
                return INT64
            if name in ARRAY_CALLS:
                return INT_ARRAY
            if name == "strides" and n.args:
                return INT_ARRAY
            if name in COUNT_CALLS:
                return INT64 if name in ("dim", "ndimension") else INT32
            if name in ELEM_CALLS:
                return INT64 if name == "element_size" else SIZE_T
            if name == "item" and n.extra:
                return self.scope.type_of_text(n.extra)
        if recv is not None and name in ("size", "count", "length") and not n.args:
            return SIZE_T
        if name in ("min", "max", "clamp", "ceil_div", "abs", "div_up", "round_up"):
            if n.extra:
                return self.scope.type_of_text(n.extra)
            ts = [self.type_of(a, stmt, depth + 1) for a in n.args]
            out = ts[0] if ts else UNKNOWN
            for t in ts[1:]:
                out = arith(out, t)
            return out
        if name in ("cast", "static_cast") and n.extra:
            return self.scope.type_of_text(n.extra)
        return UNKNOWN

    # ------------------------------------------------------------------ ranges
    def type_range(self, t: CType) -> Interval:
        if t.kind in ("int", "bool"):
            return Interval(t.min(), t.max())
        return R.TOP

    def range(self, node: Node, stmt: int, depth: int = 0, env: dict | None = None, guards: bool = True) -> Interval:
        if env is None and depth == 0:
            mk = (id(node), stmt, guards)
            got = self._range_memo.get(mk)
            if got is None:
                got = self._range_at(node, stmt, 0, None, guards)
                if self._nesting == 0:  # not while some statement's guards are half computed
                    self._range_memo[mk] = got
            return got
        return self._range_at(node, stmt, depth, env, guards)

    def _range_at(self, node: Node, stmt: int, depth: int, env: dict | None, guards: bool) -> Interval:
        n = strip_parens(node)
        if depth > _MAX_DEPTH:
            return R.TOP
        r = self._range(n, stmt, depth, env)
        if guards and 0 <= stmt:
            bounds = self.bounds(stmt)
            b = bounds.get(self.key(n, stmt, env=env))
            if b is not None:
                r = r.meet(b.interval)
            o = self.origin(n, stmt)[0] if n.kind == "id" else n
            owner = _size_owner(o)
            if owner is not None and bounds:
                # one size of a tensor (or iterator) is at most its element count, when it has elements
                nb = bounds.get(self._shape_key(owner, stmt, 0, env) + ".numel()")
                if nb is not None and nb.interval.hi is not None:
                    r = r.meet(Interval(None, nb.interval.hi))
            if owner is not None and bounds and self.key(owner, stmt, env=env) + "#dims" in bounds:
                r = r.meet(Interval(None, R.INT32_MAX))  # `!isTooLargeForMPSGraph(t)`: each size, not their product
            owner = owner if owner is not None else _stride_owner(o)
            if owner is not None and bounds and self.key(owner, stmt, env=env) + "#32bit" in bounds:
                # `canUse32BitIndexMath(t)`: every offset t can address fits, so does each size and stride
                r = r.meet(Interval(None, R.INT32_MAX))
        return r

    def _range(self, n: Node, stmt: int, depth: int, env) -> Interval:
        k = n.kind
        if k == "int":
            lit = int_literal(n.op)
            return Interval.point(lit[0]) if lit else R.TOP
        if k == "bool":
            return Interval.point(1 if n.op == "true" else 0)
        if k == "id":
            if env and n.op in env:
                caller, arg, at = env[n.op]
                return caller.range(arg, at, depth + 1)
            if n.op in NAMED_LIMITS:
                return Interval.point(NAMED_LIMITS[n.op])
            vals = self.values(n.op, stmt)
            sym = self.scope.lookup(n.op, stmt)
            declared = self.type_range(self.type_of(n, stmt, depth + 1)) if sym is not None else R.TOP
            if sym is not None and sym.stmt < 0 and n.op in self.params and not self.defs.assigned(n.op):
                declared = declared.meet(self.params[n.op])  # a parameter, as every launch binds it
            if not vals:
                return declared
            out = None
            for v, at in vals:
                if v is None:
                    rv = declared
                else:
                    if v.kind == "init" and len(v.kids) == 1:
                        v = v.kids[0]
                    rv = self.range(v, at, depth + 1) if v.kind != "init" else declared
                    if declared.bounded and not rv.within(declared.lo, declared.hi):
                        rv = declared  # the value wraps into the declared type
                out = rv if out is None else out.join(rv)
            out = out or R.TOP
            if sym is not None and sym.init is not None and sym.stmt >= 0 and (out.lo is None or out.lo == declared.lo):
                floor = self._floor(n.op, sym, stmt, depth)
                if floor is not None:
                    out = Interval(floor, out.hi)
            return out.meet(declared) if declared.bounded else out
        if k == "member":
            t = self.type_of(n, stmt, depth + 1)
            base = strip_parens(n.kids[0]) if n.kids else None
            if base is not None and base.kind == "id" and f"{base.op}.{n.op}" in self.params and not self.defs.assigned(base.op):
                return self.type_range(t).meet(self.params[f"{base.op}.{n.op}"])
            return self.type_range(t)
        if k == "cast":
            t = self.scope.type_of_text(n.extra)
            inner = self.range(n.kids[0], stmt, depth + 1, env) if n.kids else R.TOP
            tr = self.type_range(t)
            if not tr.bounded:
                return inner
            return inner if inner.within(tr.lo, tr.hi) else tr
        if k == "unary":
            a = self.range(n.kids[0], stmt, depth + 1, env)
            if n.op == "-":
                return R.neg(a)
            if n.op == "+":
                return a
            if n.op == "!":
                return Interval(0, 1)
            return R.TOP
        if k == "binary":
            if n.op in _COMPARE or n.op in ("&&", "||"):
                return Interval(0, 1)
            f = R.BINARY.get(n.op)
            if f is None:
                return R.TOP
            a = self.range(n.kids[0], stmt, depth + 1, env)
            b = self.range(n.kids[1], stmt, depth + 1, env)
            out = f(a, b)
            t = self.type_of(n, stmt, depth + 1)
            tr = self.type_range(t)
            if tr.bounded and not out.within(tr.lo, tr.hi):
                return tr  # wraps in its own type
            return out
        if k == "cond":
            return self.range(n.kids[1], stmt, depth + 1, env).join(self.range(n.kids[2], stmt, depth + 1, env))
        if k == "sizeof":
            # a scalar type's size is exact (`sizeof(float)` is 4); a struct, a vector or an expression: 1 to 64 KB
            t = self.scope.type_of_text(n.extra) if n.extra else None
            if t is not None and t.kind in ("int", "float", "bool") and t.bits:
                return Interval.point(max(1, t.bits // 8))
            return Interval(1, 1 << 16)
        if k == "call":
            return self._call_range(n, stmt, depth, env)
        if k == "index":
            t = self.type_of(n, stmt, depth + 1)
            base = strip_parens(n.kids[0])
            if base.kind == "call" and base.op in ARRAY_CALLS or base.kind == "call" and base.op == "strides":
                return _SIZE_RANGE
            return self.type_range(t)
        return self.type_range(self.type_of(n, stmt, depth + 1))

    def _call_range(self, n: Node, stmt: int, depth: int, env) -> Interval:
        name = n.op
        args = n.args
        q = n.kids[0].op if n.kids and n.kids[0].kind == "id" else ""
        if "numeric_limits<" in q:
            t = self.scope.type_of_text(q[q.find("<") + 1 : q.rfind(">")])
            if name == "max":
                return Interval.point(t.max()) if t.max() is not None else R.TOP
            if name in ("min", "lowest"):
                return Interval.point(t.min()) if t.min() is not None else R.TOP
        recv = n.receiver
        if recv is not None:
            if name in LINEAR_CALLS or (name in DIM_CALLS and args):
                return _SIZE_RANGE
            if name in COUNT_CALLS:
                return Interval(0, 64)
            if name in ELEM_CALLS:
                return Interval(1, 16)
            if name in ("size", "length") and not args:
                rr = strip_parens(recv)
                if rr.kind == "call" and rr.op in ARRAY_CALLS:
                    return Interval(0, 64)
                return Interval(0, (1 << 63) - 1)
        if name in CHECKED and n.extra:
            t = self.scope.type_of_text(n.extra.split(",")[0])
            return self.type_range(t)
        if name in ("min", "max") and len(args) == 2:
            a = self.range(args[0], stmt, depth + 1, env)
            b = self.range(args[1], stmt, depth + 1, env)
            return R.minimum(a, b) if name == "min" else R.maximum(a, b)
        if name == "clamp" and len(args) == 3:
            return R.maximum(R.minimum(self.range(args[0], stmt, depth + 1, env), self.range(args[2], stmt, depth + 1, env)), self.range(args[1], stmt, depth + 1, env))
        if name in ("ceil_div", "div_up") and len(args) == 2:
            a = self.range(args[0], stmt, depth + 1, env)
            b = self.range(args[1], stmt, depth + 1, env)
            if a.lo is not None and a.lo >= 0 and b.lo is not None and b.lo >= 1:
                return Interval(0, a.hi)
        return self.type_range(self.type_of(n, stmt, depth + 1))

    # ------------------------------------------------------------------ guards
    def bounds(self, stmt: int) -> dict[str, Bound]:
        got = self._bounds.get(stmt)
        if got is None:
            if self._nesting > _MAX_NESTING:
                return {}  # a long chain of locals each bounded by checks before it: stop, knowing less
            self._bounds[stmt] = {}  # a check that (through locals) asks about its own statement proves nothing
            self._nesting += 1
            try:
                conds = dominating_conditions(self.fn, stmt, self.model.checker_names)
                # a flag parameter the function is entered with (`use_64bit_index` false at every call) is known
                seed = self._flag_params()
                got = self._collect(conds, seed or None)
                if seed or (len(conds) > 1 and any(k.endswith("#bool") for k in got)):
                    # a second pass: a disjunction one of whose arms the other checks refute proves its other arm
                    # (`if (!fast && !prefill) return; if (prefill) return;` leaves `fast`)
                    got = self._collect(conds, {**seed, **{k: b.interval for k, b in got.items()}})
            finally:
                self._nesting -= 1
            for k, iv in self.params.items():
                if "(" in k:  # a value the model is entered with (`out.size(-1)` at one size: range_at_size)
                    prev = got.get(k)
                    got[k] = Bound(iv if prev is None else prev.interval.meet(iv), prev.condition if prev else None)
            self._bounds[stmt] = got
        return got

    def _flag_params(self) -> dict[str, Interval]:
        """The ``bool`` parameters this model is entered with a value of (``params``), as proved atoms (computed once)."""
        if self._flags is None:
            self._flags = {
                p.name + "#bool": self.params[p.name]
                for p in self.fn.params
                if p.name and p.name in self.params and not self.defs.assigned(p.name) and self.name_type(p.name, -1).kind == "bool"
            }
        return self._flags

    def _collect(self, conds, known) -> dict[str, Bound]:
        got: dict[str, Bound] = {}
        for cond in conds:
            for key, iv in self.prove(cond.node, cond.truth, cond.stmt, known=known).items():
                prev = got.get(key)
                got[key] = Bound(iv if prev is None else prev.interval.meet(iv), cond if prev is None else prev.condition)
        return got

    def nonzero(self, node: Node, stmt: int) -> bool:
        """``node`` cannot be 0 at ``stmt``: its range excludes 0, or a dominating check proves ``!= 0``
        (also through casts: ``static_cast<NSUInteger>(steps)`` after ``if (steps == 0) return;``)."""
        n = strip_parens(node)
        while n.kind == "cast" and n.kids:
            n = strip_parens(n.kids[0])
        r = self.range(n, stmt)
        if (r.lo is not None and r.lo > 0) or (r.hi is not None and r.hi < 0):
            return True
        return self.key(n, stmt) + "#nonzero" in self.bounds(stmt)

    def conditions(self, stmt: int) -> list[Condition]:
        return dominating_conditions(self.fn, stmt, self.model.checker_names)

    def prove(self, node: Node, truth: bool, stmt: int, env: dict | None = None, depth: int = 0, known: dict | None = None) -> dict[str, Interval]:
        """What ``node`` being ``truth`` proves: value key -> interval. With ``known`` (what holds anyway), an arm of
        a disjunction that contradicts it is impossible and the other arm is what is proved. A boolean local
        proves its own atom too (``flag#bool`` is 1 or 0), so another check can refute it."""
        n = strip_parens(node)
        if depth > _MAX_PROVE_DEPTH:
            return {}
        if n.kind == "unary" and n.op == "!":
            return self.prove(n.kids[0], not truth, stmt, env, depth + 1, known)
        logical = n.op if n.kind == "binary" and n.op in ("&&", "||") else None
        if n.kind == "binary" and n.op in ("&", "|") and len(n.kids) == 2 and all(self.type_of(k, stmt).kind == "bool" for k in n.kids):
            # `a.numel() == 0 & b.numel() == 0`: bitwise on two bools is the logical operator without the short circuit
            logical = "&&" if n.op == "&" else "||"
        if logical is not None:
            a = self.prove(n.kids[0], truth, stmt, env, depth + 1, known)
            b = self.prove(n.kids[1], truth, stmt, env, depth + 1, known)
            if (logical == "&&") == truth:  # both hold
                return _meet_all(a, b)
            if known:
                if _contradicts(a, known):
                    return b
                if _contradicts(b, known):
                    return a
            return _join_common(a, b)  # one of them holds: only what both prove
        if n.kind == "binary" and n.op in ("==", "!="):
            member = self._membership(n, stmt, env)
            if member is not None:
                table, value = member
                if (n.op == "!=") != truth:
                    return {}  # not in the table: says nothing about a bound
                return self._within(value, Interval(min(table), max(table)), stmt, env, depth)
        if n.kind == "binary" and n.op in _COMPARE:
            op = n.op if truth else _NEGATE[n.op]
            return self._compare(n.kids[0], op, n.kids[1], stmt, env, depth)
        if n.kind == "id":
            if env and n.op in env:
                caller, arg, at = env[n.op]
                return caller.prove(arg, truth, at, None, depth + 1)
            if not truth:
                ors = self._or_accumulated(n.op, stmt)
                if ors:
                    # `bool large = false; ... large |= isTooLargeForMPSGraph(out);`: false means every `|=` that
                    # ran on the way here was handed false
                    out: dict[str, Interval] = {}
                    for d in ors:
                        out = _meet_all(out, self.prove(d.rhs, False, d.stmt, None, depth + 1, known))
                    return out
            vals = self.values(n.op, stmt)
            if vals == [(None, -1)] and self.type_of(n, stmt).kind == "bool":
                # a flag parameter no statement reassigns: its own atom, which another check or the callers refute
                return {n.op + "#bool": Interval.point(1 if truth else 0)}
            if vals and len(vals) == 1 and vals[0][0] is not None:
                v, at = vals[0]
                if v.kind == "init" and len(v.kids) == 1:
                    v = v.kids[0]
                out = dict(self.prove(v, truth, at, None, depth + 1, known))
                if self.type_of(n, stmt).kind == "bool":
                    out[self.key(n, stmt) + "#bool"] = Interval.point(1 if truth else 0)
                return out
            return {}
        if n.kind == "call":
            got = self._prove_call(n, truth, stmt, env, depth)
            if got:
                return got
        if n.kind in ("call", "member", "index", "binary", "id") and self.type_of(n, stmt).kind == "int":
            # `if (numel)`: an integer used as a condition is compared with zero
            zero = Node("int", "0", "", (), n.start, n.start, "0")
            return self._compare(n, "!=" if truth else "==", zero, stmt, env, depth)
        return {}

    def _or_accumulated(self, name: str, stmt: int) -> list:
        """The `|=` assignments of a ``bool`` local ``name`` that dominate ``stmt``, when every assignment that can
        reach it is a `|=` (no plain `=` resets the flag); empty otherwise."""
        sym = self.scope.lookup(name, stmt)
        if sym is None or sym.stmt < 0 or sym.decl is None or self.name_type(name, stmt).kind != "bool":
            return []
        reach = self.defs.reaching(name, sym.stmt, stmt)
        if not reach or any(d.op != "|=" or d.rhs is None for d in reach):
            return []
        return [d for d in reach if self._dominates(d.stmt, stmt)]

    def _table(self, n: Node) -> tuple[int, ...] | None:
        n = strip_parens(n)
        return lookup_table(self.fn, n.op) if n.kind == "id" else None

    def _membership(self, n: Node, stmt: int, env) -> tuple[tuple[int, ...], Node] | None:
        """``std::find(t.begin(), t.end(), v) != t.end()`` / ``t.find(v) != t.end()`` (or ``==``) over a constant
        lookup table ``t``: (the table's values, ``v``)."""
        a, b = (strip_parens(k) for k in n.kids)
        for find, end in ((a, b), (b, a)):
            if find.kind != "call" or find.op != "find" or end.kind != "call" or end.op != "end":
                continue
            table_node = end.receiver if end.receiver is not None else (end.args[0] if end.args else None)
            if table_node is None:
                continue
            table = self._table(table_node)
            if table is None:
                continue
            if find.receiver is not None and len(find.args) == 1 and strip_parens(find.receiver).key() == strip_parens(table_node).key():
                return table, find.args[0]  # a set's own find
            if find.receiver is None and len(find.args) == 3:
                return table, find.args[2]
        return None

    def _within(self, value: Node, iv: Interval, stmt: int, env, depth: int) -> dict[str, Interval]:
        out: dict[str, Interval] = {}
        for key, bound in self._decompose(value, iv, stmt, env, depth):
            prev = out.get(key)
            out[key] = bound if prev is None else prev.meet(bound)
        return out

    def _prove_call(self, n: Node, truth: bool, stmt: int, env, depth: int) -> dict[str, Interval]:
        name = n.op
        if truth and name in ("count", "contains") and n.receiver is not None and len(n.args) == 1:
            table = self._table(n.receiver)
            if table is not None:
                return self._within(n.args[0], Interval(min(table), max(table)), stmt, env, depth)
        if not truth:
            if name == "isTooLargeForMPSGraph" and n.args:
                # it compares each of the tensor's sizes with INT32_MAX (and, for a strided view on macOS 15, its
                # storage's element count): each dimension is bounded, not the element count or the offsets
                # (a contiguous 32769 x 65536 tensor passes it with 2^31 + 65536 elements, pytorch#189960)
                return {self.key(n.args[0], stmt, env=env) + "#dims": Interval(0, R.INT32_MAX)}
            return {}
        if name == "can_use_32bit_indexing" and n.receiver is not None:
            r = self.key(n.receiver, stmt, env=env)
            return {r + "#32bit": Interval(1, 1), r + ".numel()": Interval(0, R.INT32_MAX)}
        if name in ("canUse32BitIndexMath", "can_use_32bit_index_math") and n.args:
            r = self.key(n.args[0], stmt, env=env)
            return {r + "#32bit": Interval(1, 1), r + ".numel()": Interval(0, R.INT32_MAX)}
        if name == "offsetsFitIn" and n.args:
            # `offsetsFitIn<uint32_t>(a, b)`: every offset of every tensor fits the type
            t = self.scope.type_of_text((n.extra or "").split(",")[0]) if n.extra else UINT32
            if t.kind != "int" or t.bits > 32:
                return {}
            out: dict[str, Interval] = {}
            for a in n.args:
                r = self.key(a, stmt, env=env)
                out[r + "#32bit"] = Interval(1, 1)
                out[r + ".numel()"] = Interval(0, t.max())
            return out
        h = self.model.helper(name)
        if h is not None and n.receiver is None:
            params, expr, callee = h
            if callee is self or len(n.args) != len(params):
                return {}  # a defaulted parameter would be judged in the helper's frame, under the caller's names
            sub_env = {p: (self, a, stmt) for p, a in zip(params, n.args)}
            return callee.prove(expr, True, -1, sub_env, depth + 1)
        c = self.model.checker(name) if name in self.model.checker_names and n.receiver is None else None
        if c is not None:
            params, parts, callee = c
            if callee is self or len(n.args) != len(params):
                return {}  # a defaulted parameter would be judged in the helper's frame, under the caller's names
            sub_env = {p: (self, a, stmt) for p, a in zip(params, n.args)}
            out: dict[str, Interval] = {}
            for node, at in parts:
                for key, iv in callee.prove(node, True, at, sub_env, depth + 1).items():
                    out[key] = iv if key not in out else out[key].meet(iv)
            return out
        return {}

    def _compare(self, left: Node, op: str, right: Node, stmt: int, env, depth: int) -> dict[str, Interval]:
        out: dict[str, Interval] = {}
        for x, o, c in ((left, op, right), (right, _FLIP[op], left)):
            # the other side as the checks before this one bound it (`if (n < 8) for (...; r < n; ...)`: r < 8)
            cr = self.range(c, stmt, 0, env, guards=env is None)
            iv = None
            if o in ("<=", "<", "==") and cr.hi is not None:
                iv = Interval(None, cr.hi - (1 if o == "<" else 0))
            if o in (">=", ">", "==") and cr.lo is not None:
                lo = cr.lo + (1 if o == ">" else 0)
                iv = Interval(lo, iv.hi if iv is not None else None)
            if o == "!=" and cr.lo == 0 and cr.hi == 0:
                out[self.key(x, stmt, env=env) + "#nonzero"] = Interval(1, 1)
                for key, bound in self._nonzero_parts(strip_parens(x), stmt, env, depth):
                    prev = out.get(key)
                    out[key] = bound if prev is None else prev.meet(bound)
            if o == "!=" and cr.lo is not None and cr.lo == cr.hi:
                own = self.range(x, stmt, 0, env, guards=False)
                if own.lo is not None and own.lo == cr.lo:
                    iv = Interval(cr.lo + 1, None)  # `n != 0` for a size: n >= 1
                elif own.hi is not None and own.hi == cr.hi:
                    iv = Interval(None, cr.hi - 1)
            if iv is None:
                continue
            for key, bound in self._decompose(x, iv, stmt, env, depth):
                prev = out.get(key)
                out[key] = bound if prev is None else prev.meet(bound)
        return out

    def _decompose(self, x: Node, iv: Interval, stmt: int, env, depth: int):
        """The values a bound on ``x`` bounds: ``x`` itself, the factors of a product of sizes, the arms of
        ``max``, the operand of an absolute value; through the locals ``x`` is computed from."""
        n = strip_parens(x)
        yield self.key(n, stmt, env=env), iv
        if iv.lo is not None and iv.lo >= 1 and depth <= _MAX_DEPTH:
            yield from self._nonzero_parts(n, stmt, env, depth)
        if depth > _MAX_DEPTH or iv.hi is None:
            return
        if n.kind == "id" and env and n.op in env:
            # a helper's parameter: what the caller passed for it, in the caller (`check(a * b)` bounds `a`, `b`)
            caller, arg, at = env[n.op]
            for key, bound in caller._decompose(arg, iv, at, None, depth + 1):
                if key != self.key(n, stmt, env=env):
                    yield key, bound
            return
        if n.kind == "id":
            o, at = self.origin(n, stmt)
            if o is not n:
                yield from self._decompose(o, iv, at, env, depth + 1)
            return
        if n.kind == "cast" and n.kids:
            yield from self._decompose(n.kids[0], iv, stmt, env, depth + 1)
        elif n.kind == "binary" and n.op == "*":
            a, b = n.kids
            for f, other in ((a, b), (b, a)):
                if self._at_least_one(other, stmt, env):
                    yield from self._decompose(f, Interval(None, iv.hi), stmt, env, depth + 1)
        elif n.kind == "binary" and n.op == "+":
            a, b = n.kids
            for f, other in ((a, b), (b, a)):
                r = self.range(other, stmt, depth + 1, env, guards=False)
                if r.lo is not None and r.lo >= 0:
                    yield from self._decompose(f, Interval(None, iv.hi), stmt, env, depth + 1)
        elif n.kind == "binary" and n.op == "-":
            a, b = n.kids
            r = self.range(b, stmt, depth + 1, env, guards=False)
            if r.hi is not None and r.hi <= 1 and r.lo is not None and r.lo >= 0:
                yield from self._decompose(a, Interval(None, iv.hi + r.hi), stmt, env, depth + 1)
        elif n.kind == "call" and n.op == "max" and len(n.args) == 2:
            for a in n.args:
                yield from self._decompose(a, iv, stmt, env, depth + 1)
        elif n.kind == "cond":
            # `s < 0 ? -s : s`: |s| <= hi
            c, a, b = (strip_parens(k) for k in n.kids)
            if c.kind == "binary" and c.op in ("<", "<=") and a.kind == "unary" and a.op == "-" and a.kids[0].key() == b.key() == c.kids[0].key():
                yield self.key(b, stmt, env=env), Interval(-iv.hi, iv.hi)
                o, at = self.origin(b, stmt)
                if o is not b:
                    yield self.key(o, at, env=env), Interval(-iv.hi, iv.hi)

    def _nonzero_parts(self, n: Node, stmt: int, env, depth: int):
        """What ``n`` being non-zero proves of the values it is computed from: the operand of a cast (a narrowed
        value that is not 0 came from one that is not 0), the numerator of a quotient of non-negative values
        (`numel / size(-1) >= 1`: `numel >= 1`) and each factor of a product. A non-negative part is then at
        least 1, any other part is only not 0 (``#nonzero``)."""
        if depth > _MAX_DEPTH:
            return
        if n.kind == "id" and env and n.op in env:
            caller, arg, at = env[n.op]
            yield from caller._nonzero_part(strip_parens(arg), at, None, depth + 1)
            return
        parts: list[tuple[Node, int]] = []
        if n.kind == "id":
            o, at = self.origin(n, stmt)
            if o is not n:
                if o.kind == "init" and len(o.kids) == 1:
                    o = o.kids[0]
                parts.append((strip_parens(o), at))
        elif n.kind == "cast" and n.kids:
            parts.append((strip_parens(n.kids[0]), stmt))
        elif n.kind == "binary" and n.op == "/" and len(n.kids) == 2:
            num, den = (strip_parens(k) for k in n.kids)
            num_r, den_r = self.range(num, stmt, depth + 1, env, guards=False), self.range(den, stmt, depth + 1, env, guards=False)
            if num_r.lo is not None and num_r.lo >= 0 and den_r.lo is not None and den_r.lo >= 0:
                parts.append((num, stmt))
        elif n.kind == "binary" and n.op == "*" and len(n.kids) == 2:
            parts.extend((strip_parens(k), stmt) for k in n.kids)
        for part, at in parts:
            yield from self._nonzero_part(part, at, env if at == stmt else None, depth + 1)

    def _nonzero_part(self, part: Node, at: int, env, depth: int):
        own = self.range(part, at, depth, env, guards=False)
        if own.lo is not None and own.lo >= 0:
            yield self.key(part, at, env=env), Interval(1, None)
        else:
            yield self.key(part, at, env=env) + "#nonzero", Interval(1, 1)
        yield from self._nonzero_parts(part, at, env, depth)

    def _at_least_one(self, n: Node, stmt: int, env) -> bool:
        """A factor that is at least 1, or a size of a tensor (a product bound then bounds the other factor for
        every tensor that has elements; an empty one launches nothing)."""
        r = self.range(n, stmt, 0, env, guards=False)
        if r.lo is not None and r.lo >= 1:
            return True
        m = strip_parens(n)
        if m.kind == "binary" and m.op == "-" and strip_parens(m.kids[1]).key() == "1":
            return True  # `(count - 1) * stride`: the offset of the last element; for count <= 1 none is taken
        return self.extent(n, stmt) is not None

    # ------------------------------------------------------------------ extents
    def extent(self, node: Node, stmt: int, depth: int = 0) -> str | None:
        """``"linear"``: a numel, byte count, storage offset, or a product with a size in it; ``"dim"``: one
        size or stride of a tensor or iterator; None otherwise."""
        n = strip_parens(node)
        if depth > _MAX_DEPTH:
            return None
        if n.kind == "id":
            o, at = self.origin(n, stmt)
            if o is n:
                vals = self.values(n.op, stmt) or []
                kinds = {self.extent(v, at, depth + 1) for v, at in vals if v is not None}
                return "linear" if "linear" in kinds else ("dim" if "dim" in kinds else None)
            return self.extent(o, at, depth + 1)
        if n.kind == "call":
            if n.op in CHECKED:
                return None
            if n.receiver is not None:
                if n.op in LINEAR_CALLS:
                    return "linear"
                if n.op in DIM_CALLS and n.args:
                    return "dim"
            if n.op in ("min",) and len(n.args) == 2:
                ks = [self.extent(a, stmt, depth + 1) for a in n.args]
                return "linear" if "linear" in ks else ("dim" if "dim" in ks else None)
            if n.op == "max" and len(n.args) == 2:
                ks = [self.extent(a, stmt, depth + 1) for a in n.args]
                return "linear" if "linear" in ks else ("dim" if "dim" in ks else None)
            return None
        if n.kind == "index":
            base = strip_parens(self.array_element(n, stmt).kids[0])
            if base.kind == "call" and (base.op in ARRAY_CALLS or base.op == "strides") and base.receiver is not None:
                return "dim"
            return None
        if n.kind == "binary":
            a = self.extent(n.kids[0], stmt, depth + 1)
            b = self.extent(n.kids[1], stmt, depth + 1)
            if n.op == "*":
                if a and b:
                    return "linear"
                if a or b:
                    other = n.kids[1] if a else n.kids[0]
                    r = self.range(other, stmt, depth + 1, guards=False)
                    if r.hi is not None and r.hi <= 1 and r.lo is not None and r.lo >= 0:
                        return a or b
                    if (a or b) == "dim" and self._scalar_parameter(other, stmt):
                        # `dilation_h * (kernel_h - 1)`: one dimension scaled by an integer argument of the
                        # op (a dilation, a stride of the window), not a product of sizes
                        return "dim"
                    return "linear"
                return None
            if n.op in ("+", "-"):
                return "linear" if "linear" in (a, b) else (a or b)
            if n.op in ("/", ">>", "%", "&"):
                return a if n.op in ("/", ">>") else None
            return None
        if n.kind == "cast":
            return self.extent(n.kids[0], stmt, depth + 1) if n.kids else None
        if n.kind == "cond":
            ks = [self.extent(k, stmt, depth + 1) for k in n.kids[1:]]
            return "linear" if "linear" in ks else ("dim" if "dim" in ks else None)
        return None

    def _scalar_parameter(self, node: Node, stmt: int) -> bool:
        """``node`` is an integer parameter of the function that no statement reassigns (through locals that
        copy it): an argument of the op, not a size, stride or element size."""
        n = strip_parens(node)
        if n.kind == "cast" and n.kids:
            n = strip_parens(n.kids[0])
        if n.kind != "id":
            return False
        o, at = self.origin(n, stmt)
        o = strip_parens(o)
        if o.kind == "cast" and o.kids:
            o = strip_parens(o.kids[0])
        if o.kind != "id" or not any(p.name == o.op for p in self.fn.params):
            return False
        return self.values(o.op, at) == [(None, -1)] and self.type_of(o, at).kind == "int"

    def sized_from(self, node: Node, stmt: int) -> set[tuple[str, str]]:
        """(key, "size" | "stride") of the tensors (or iterators) whose sizes or strides ``node`` is computed
        from; an element count or byte count is a "size"."""
        out: set[tuple[str, str]] = set()
        o, at = self.origin(node, stmt)
        for n in walk(o):
            e = self.array_element(n, at) if n.kind == "index" else n
            owner, kind = _size_owner(e), "size"
            if owner is None:
                owner, kind = _stride_owner(e), "stride"
            if owner is None and n.kind == "call" and n.op in LINEAR_CALLS and n.receiver is not None:
                owner, kind = n.receiver, "size"
            if owner is not None:
                out.add((self.key(owner, at), kind))
            elif n.kind == "id" and n is not o:
                oo, _ = self.origin(n, at)
                if oo is not n:
                    out |= self.sized_from(n, at)
        return out

    def size_keys(self, node: Node, stmt: int) -> set[str] | None:
        """The keys of the single sizes (``out.size(-1)``) ``node`` is computed from, through locals; None when it
        also reads a size-like value of another form (a numel, a stride, ``sizes()[i]``, a parameter)."""
        out: set[str] = set()
        o, at = self.origin(node, stmt)
        for n in walk(o):
            if n.kind == "call" and n.op in ("size", "sym_size") and n.receiver is not None and len(n.args) == 1:
                out.add(self.key(n, at))
            elif _size_owner(n) is not None or _stride_owner(n) is not None or (n.kind == "call" and n.op in LINEAR_CALLS):
                return None
            elif n.kind == "id" and n is not o:
                oo, oat = self.origin(n, at)
                if oo is not n:
                    sub = self.size_keys(n, at)
                    if sub is None:
                        return None
                    out |= sub
                else:
                    sym = self.scope.lookup(n.op, at)
                    if sym is not None and sym.stmt < 0 and self.type_of(n, at).is_int:
                        return None  # a parameter: a size the model cannot relate to a tensor
        return out

    def range_at_size(self, node: Node, stmt: int, size_key: str, value: int) -> Interval:
        """The range of ``node`` at ``stmt`` with the size ``size_key`` (``out.size(-1)``) held at ``value``: one point,
        so that what is computed from it (`NB = std::min(32, N)`, `ceil(N / NB)`) is exact. For a value that grows with
        the size, "fits at ``value``" means "fits at every smaller size"."""
        return FunctionModel(self.model, self.fn, self.tables, {**self.params, size_key: Interval.point(value)}).range(node, stmt)

    def tensor_bounded(self, tensor_key: str, stmt: int, strides: bool = False) -> bool:
        """A dominating check keeps ``tensor_key`` addressable in 32 bits: `canUse32BitIndexMath` /
        `can_use_32bit_indexing` holds for it (sizes and strides), or its numel is bounded by a 32-bit limit
        (sizes only: a sliced view's stride can exceed its element count)."""
        b = self.bounds(stmt)
        if tensor_key + "#32bit" in b:
            return True
        if strides:
            return False
        nb = b.get(tensor_key + ".numel()")
        return nb is not None and nb.interval.hi is not None and nb.interval.hi <= R.UINT32_MAX

    def near_miss(self, node: Node, stmt: int) -> Condition | None:
        """A dominating check that mentions what ``node`` is computed from but does not bound it."""
        from .expressions import identifiers

        o, at = self.origin(node, stmt)
        names = identifiers(o) | identifiers(strip_parens(node))
        want = self.key(node, stmt)
        for cond in self.conditions(stmt):
            if cond.how == "loop":
                continue
            proved = self.prove(cond.node, cond.truth, cond.stmt)
            if want in proved or not any(iv.hi is not None and iv.hi < (1 << 62) and not k[:1].isdigit() for k, iv in proved.items()):
                # it bounds the value, or it bounds nothing from above (`TORCH_CHECK(x.is_mps())`, `k > 0`): no near miss
                continue
            if names & identifiers(cond.node):
                return cond
        return None


def _size_owner(n: Node) -> Node | None:
    """The tensor whose one size ``n`` is: ``t`` for ``t.size(0)``, ``t.sizes()[i]``, ``iter.shape()[i]``."""
    n = strip_parens(n)
    if n.kind == "call" and n.op in ("size", "sym_size") and n.args and n.receiver is not None:
        return n.receiver
    if n.kind == "index":
        base = strip_parens(n.kids[0])
        if base.kind == "call" and base.op in ("sizes", "shape", "sym_sizes") and base.receiver is not None:
            return base.receiver
    return None


def _stride_owner(n: Node) -> Node | None:
    """The tensor whose stride or storage offset ``n`` is: ``t`` for ``t.stride(1)``, ``t.strides()[i]``."""
    n = strip_parens(n)
    if n.kind == "call" and n.op in ("stride", "sym_stride", "storage_offset") and n.receiver is not None:
        return n.receiver
    if n.kind == "index":
        base = strip_parens(n.kids[0])
        if base.kind == "call" and base.op in ("strides", "sym_strides") and base.receiver is not None:
            return base.receiver
    return None


def _bool_literal(n: Node | None) -> bool | None:
    n = strip_parens(n) if n is not None else None
    return None if n is None or n.kind != "bool" else n.op == "true"


def _synthetic(kind: str, op: str, kids: tuple, at: Node) -> Node:
    return Node(kind, op, "", kids, at.start, at.end, "")


def _top_level_checks(fn: Function) -> bool:
    """``fn`` has a ``TORCH_CHECK``-style call at its top level or one level down (cheap test before summarising it)."""
    from .guards import CHECKS

    return any(len(s.parents) <= 1 and s.kind == "expression_statement" and s.tree is not None and s.tree.kind == "call"
               and s.tree.op in CHECKS for s in fn.stmts)


def _checker_conditions(fn: Function) -> list[tuple[Node, int]] | None:
    """The conditions a validating void function establishes on every path that returns from it: its top-level
    checks' conditions and the negations of `if (c) { TORCH_CHECK(false, ...) / throw }` (each with its statement).
    None when its top level does anything else (a loop, a plain call, an early return: not every path checks)."""
    from .guards import CHECKS

    st = fn.stmts
    parts: list[tuple[Node, int]] = []
    for i, s in enumerate(st):
        if s.parents:
            continue
        if s.kind == "declaration":
            continue  # local constants (`constexpr int64_t kMax = ...`), read by the checks
        if s.kind == "expression_statement" and s.tree is not None and s.tree.kind == "call" and s.tree.op in CHECKS and s.tree.args:
            if _bool_literal(s.tree.args[0]) is False:
                return None  # an unconditional failure: the function never returns
            parts.append((s.tree.args[0], i))
            continue
        if s.kind == "if_statement" and s.tree is not None:
            inner = [k for k, x in enumerate(st) if x.parents[:1] == (i,)]
            body = [st[k] for k in inner if len(st[k].parents) == 1]
            if len(body) == 1 and body[0].branch == "then" and body[0].text.lstrip().startswith(("throw", "TORCH_CHECK(false", "AT_ERROR")):
                parts.append((_synthetic("unary", "!", (s.tree,), s.tree), i))
                continue
        return None
    return parts or None


_MUTATORS = frozenset({"push_back", "emplace_back", "insert", "emplace", "erase", "clear", "resize", "assign", "pop_back", "swap", "fill"})


def lookup_table(fn: Function, name: str) -> tuple[int, ...] | None:
    """The integers of a local table ``name`` (``std::vector<int> v = {32, 64};``, ``int v[] = {...}``,
    ``std::array``/``std::set`` alike) when it is declared once with a brace list of integer literals and nothing
    in ``fn`` writes it (no assignment, no ``push_back``/``insert``/...); None otherwise."""
    decls = [d for d in fn.decls if d.name == name]
    if len(decls) != 1 or decls[0].init is None or decls[0].init.tree is None or decls[0].pointer or decls[0].reference:
        return None
    init = strip_parens(decls[0].init.tree)
    while init.kind == "init" and len(init.kids) == 1 and strip_parens(init.kids[0]).kind == "init":
        init = strip_parens(init.kids[0])
    if init.kind != "init" or not init.kids:
        return None
    vals = []
    for k in init.kids:
        k = strip_parens(k)
        neg = k.kind == "unary" and k.op == "-" and k.kids
        lit = int_literal((k.kids[0] if neg else k).op) if (k.kids and neg and strip_parens(k.kids[0]).kind == "int") or k.kind == "int" else None
        if lit is None:
            return None
        vals.append(-lit[0] if neg else lit[0])
    if any(a.lhs.strip() == name or a.lhs.strip().startswith(name + "[") for a in fn.assigns) or any(c.receiver == name and c.name in _MUTATORS for c in fn.calls):
        return None
    return tuple(vals)


def _helper_expression(fn: Function) -> Node | None:
    """What a boolean helper returns, as one expression of its parameters:
    - ``return <expr>;`` alone;
    - a chain of guards, ``if (c1) return false; ... return <expr or true>;`` -> ``!c1 && ... && expr``;
    - ``switch (x) { case A: case B: return true; default: return false; }`` -> ``x == A || x == B``.
    Constant lookup tables declared first (``lookup_table``) may precede them; anything else (other locals,
    loops, other statements) is not summarised."""
    st = fn.stmts
    if any(s.kind in ("for_statement", "while_statement", "for_range_loop", "do_statement") for s in st):
        return None
    tables = {d.stmt for d in fn.decls if lookup_table(fn, d.name) is not None}
    if any(s.kind == "declaration" and i not in tables for i, s in enumerate(st)):
        return None  # locals other than constant lookup tables (`std::vector<int> sizes = {32, 64};`)
    top = [i for i, s in enumerate(st) if not s.parents and i not in tables]
    if not top:
        return None
    if len(top) == 1 and st[top[0]].kind == "switch_statement" and st[top[0]].tree is not None:
        return _switch_expression(fn, top[0])
    parts: list[Node] = []
    for i in top[:-1]:
        s = st[i]
        inner = [k for k, x in enumerate(st) if x.parents[:1] == (i,)]
        if s.kind != "if_statement" or s.tree is None or len(inner) != 1 or st[inner[0]].kind != "return_statement":
            return None
        if _bool_literal(st[inner[0]].tree) is not False or st[inner[0]].branch != "then":
            return None
        parts.append(_synthetic("unary", "!", (s.tree,), s.tree))
    last = st[top[-1]]
    if last.kind != "return_statement" or last.tree is None:
        return None
    if _bool_literal(last.tree) is not True:
        parts.append(last.tree)
    if not parts:
        return None
    out = parts[0]
    for p in parts[1:]:
        out = _synthetic("binary", "&&", (out, p), p)
    return out


def _switch_expression(fn: Function, sw: int) -> Node | None:
    st = fn.stmts
    x = st[sw].tree
    labels: list[Node] = []
    yes: list[Node] = []
    default = None
    for k, s in enumerate(st):
        if s.parents != (sw,):
            continue
        if s.kind != "case_statement":
            return None
        rets = [r for r in st if r.parents == (sw, k)]
        if s.tree is None:  # default:
            if len(rets) != 1 or rets[0].kind != "return_statement":
                return None
            default = _bool_literal(rets[0].tree)
            continue
        labels.append(s.tree)
        if not rets:
            continue  # falls through to the next label
        if len(rets) != 1 or rets[0].kind != "return_statement" or _bool_literal(rets[0].tree) is None:
            return None
        if _bool_literal(rets[0].tree):
            yes.extend(labels)
        labels = []
    if default is not False or labels or not yes:
        return None
    out = _synthetic("binary", "==", (x, yes[0]), x)
    for lab in yes[1:]:
        out = _synthetic("binary", "||", (out, _synthetic("binary", "==", (x, lab), x)), x)
    return out


def _contradicts(proved: dict[str, Interval], known: dict[str, Interval]) -> bool:
    """Some value ``proved`` bounds cannot be where ``known`` says it is: that arm cannot hold."""
    for k, iv in proved.items():
        other = known.get(k)
        if other is None:
            continue
        m = iv.meet(other)
        if m.lo is not None and m.hi is not None and m.lo > m.hi:
            return True
    return False


def _meet_all(a: dict[str, Interval], b: dict[str, Interval]) -> dict[str, Interval]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out[k].meet(v) if k in out else v
    return out


def _join_common(a: dict[str, Interval], b: dict[str, Interval]) -> dict[str, Interval]:
    return {k: a[k].join(b[k]) for k in a.keys() & b.keys()}


__all__ = ["SemanticModel", "FunctionModel", "Bound", "semantic_model"]


def semantic_model(project) -> SemanticModel:
    """The project's model, built on first use and kept for the run."""
    m = getattr(project, "_semantic_model", None)
    if m is None:
        m = SemanticModel(project)
        project._semantic_model = m
    return m
