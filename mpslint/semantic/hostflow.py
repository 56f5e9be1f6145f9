"""Structural questions host-code rules ask: split loops, iterators, bindings, launches, call sites, reachability.

Pure functions over ``Function`` facts; no rule logic and no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..facts.cpp import Call, Function
from .types import parse_type

TENSOR_REF_TYPE = re.compile(r"\b(?:at::)?(Tensor|TensorBase)\s*&")
WHOLE_TENSOR_CALLS = ("tensor", "output", "input", "tensor_base", "output_base", "input_base")
BINDERS = ("mtl_setArgs", "mtl_setBuffer", "mtl_setArg")
DISPATCHERS = ("mtl_dispatch1DJob", "mtl_dispatch2DJob", "mtl_dispatch3DJob", "dispatchThreads", "dispatchThreadgroups", "MTLSizeMake")
CHECK_CALL = re.compile(r"TORCH_CHECK\w*|TORCH_INTERNAL_ASSERT\w*|AT_ASSERT\w*|assert|AT_ERROR|TORCH_WARN\w*")
THROWING = re.compile(r"\bthrow\b|TORCH_CHECK\w*\s*\(\s*false|AT_ERROR|TORCH_INTERNAL_ASSERT\w*\s*\(\s*false|TORCH_CHECK_NOT_IMPLEMENTED\s*\(\s*false")


def iter_params(fn: Function) -> list[str]:
    """Parameters that refer to a TensorIterator (`TensorIteratorBase& iter`, `TensorIterator* it`), by type."""
    out = []
    for p in fn.params:
        if not p.name or not ("&" in p.type or "*" in p.type):
            continue
        t = parse_type(p.type, {})
        t = t.elem if t.kind == "ptr" and t.elem is not None else t
        if t.kind == "iter" and "TensorIteratorConfig" not in p.type:  # a config builds an iterator; it is not one
            out.append(p.name)
    return out


def subiter_loops(fn: Function) -> dict[int, tuple[str, str]]:
    """Loops ``for (auto&& sub : it.with_32bit_indexing())``: stmt index -> (loop var, iterator)."""
    out = {}
    for i, s in enumerate(fn.stmts):
        if s.kind != "for_range_loop" or s.tree is None or not s.var:
            continue
        rng = s.tree
        recv = rng.receiver if rng.kind == "call" and rng.op == "with_32bit_indexing" else None
        if recv is not None:
            out[i] = (s.var, recv.text)
    return out


def splits(fn: Function) -> bool:
    """The function recurses over ``with_32bit_indexing()`` sub-iterators."""
    for idx, (var, _it) in subiter_loops(fn).items():
        for c in fn.calls:
            if idx in fn.stmts[c.stmt].parents if c.stmt >= 0 else False:
                if c.name == fn.name and any(a.text == var for a in c.args):
                    return True
    return False


def in_loop(fn: Function, stmt: int, loops: Iterable[int]) -> bool:
    if stmt < 0:
        return False
    parents = set(fn.stmts[stmt].parents) | {stmt}
    return bool(parents & set(loops))


def bound_args(call: Call) -> list:
    """The argument expressions a binding call binds as buffers."""
    if call.name in ("mtl_setArgs",):
        return list(call.args[1:])
    if call.name in ("mtl_setBuffer", "mtl_setArg"):
        return list(call.args[1:2])
    if call.name == "getMTLBufferStorage":
        return list(call.args[:1])
    return []


def dispatch_size_args(call: Call) -> list:
    if call.name in ("mtl_dispatch1DJob", "mtl_dispatch2DJob", "mtl_dispatch3DJob"):
        return list(call.args[2:])
    if call.name in ("dispatchThreads", "dispatchThreadgroups", "MTLSizeMake"):
        return list(call.args)
    return []


def stmt_text(fn: Function, i: int) -> str:
    return fn.stmts[i].text if 0 <= i < len(fn.stmts) else ""


def then_branch_throws(fn: Function, if_idx: int) -> bool:
    for s in fn.stmts[if_idx + 1 :]:
        if if_idx not in s.parents:
            break
        if THROWING.search(s.text):
            return True
    return False


def functions_by_name(hosts) -> dict[str, list[tuple[str, Function]]]:
    out: dict[str, list[tuple[str, Function]]] = {}
    for path in sorted(hosts):
        for fn in hosts[path].functions:
            out.setdefault(fn.name, []).append((path, fn))
    return out


def subiter_callees(hosts) -> set[str]:
    """Functions that run on sub-iterators: they recurse over with_32bit_indexing() or are called from such a loop."""
    out: set[str] = set()
    for path in hosts:
        for fn in hosts[path].functions:
            loops = subiter_loops(fn)
            if not loops:
                continue
            for c in fn.calls:
                if c.stmt < 0:
                    continue
                for idx, (var, _it) in loops.items():
                    if idx in fn.stmts[c.stmt].parents and any(a.text == var for a in c.args):
                        out.add(c.name)
    return out


# ---------------------------------------------------------------- launches, guards and call sites (MPS105-MPS112)

LAUNCHERS = ("mtl_dispatch1DJob", "mtl_dispatch2DJob", "mtl_dispatch3DJob", "dispatchThreads", "dispatchThreadgroups")
EXEC_KERNEL = re.compile(r"^exec_(?:unary|binary|ternary)_kernel\w*$")
ITER_BUILD = re.compile(r"\bTensorIterator(?:Config|Base)?\b|\b(?:borrowing_)?(?:nullary|unary|binary)_op\s*\(")


def short_name(name: str) -> str:
    """``MetalShaderLibrary::exec_unary_kernel`` -> ``exec_unary_kernel``."""
    return name.split("::")[-1].strip()


def launches(fn: Function) -> list[Call]:
    """Direct kernel launches in ``fn`` (``mtl_dispatch*Job``, ``dispatchThreads``, ``dispatchThreadgroups``)."""
    return [c for c in fn.calls if c.name in LAUNCHERS]


def local_iterators(fn: Function) -> list[str]:
    """Iterator parameters and locals built as iterators (``auto iter = TensorIteratorConfig()...build();``)."""
    out = list(iter_params(fn))
    for d in fn.decls:
        if d.name in out:
            continue
        if re.search(r"\bTensorIterator(?:Base)?\b", d.type) or (d.init is not None and ITER_BUILD.search(d.init.text)):
            out.append(d.name)
    return out


# Whole-project indexes several rules ask for in one run: computed once per ``hosts`` mapping (the project's,
# which does not change during a run; a fix being verified builds a new project and so a new mapping).
_PROJECT_MEMO: dict[str, tuple[object, object]] = {}


def _once_per_hosts(kind: str, hosts, compute):
    hit = _PROJECT_MEMO.get(kind)
    if hit is not None and hit[0] is hosts:
        return hit[1]
    value = compute(hosts)
    _PROJECT_MEMO[kind] = (hosts, value)
    return value


def functions_named(hosts) -> dict[str, list[tuple[str, Function]]]:
    """``functions_by_name`` computed once per run (read-only: shared between rules)."""
    return _once_per_hosts("functions_by_name", hosts, functions_by_name)


def call_sites(hosts) -> dict[str, list[tuple[str, Function, Call]]]:
    """Short callee name -> every (path, caller, call) that calls it (read-only: shared between rules)."""
    return _once_per_hosts("call_sites", hosts, _call_sites)


def _call_sites(hosts) -> dict[str, list[tuple[str, Function, Call]]]:
    out: dict[str, list[tuple[str, Function, Call]]] = {}
    for path in sorted(hosts):
        for fn in hosts[path].functions:
            for c in fn.calls:
                out.setdefault(c.name, []).append((path, fn, c))
    return out


_BINDERS = ("def", "impl", "def_static")


def registered_functions(hosts) -> set[str]:
    """Functions called from outside the project's code: registered on a dispatch stub (the dispatcher calls
    them), or bound as an operator or a Python function (`m.impl("op", &fn)`, `m.impl("op", TORCH_FN(fn))`,
    `m.def("op", &fn)` in `TORCH_LIBRARY`/`PYBIND11_MODULE`): entry points, reached with any input."""
    return _once_per_hosts("registered", hosts, _registered_functions)


def _registered_functions(hosts) -> set[str]:
    out = {r.function for facts in hosts.values() for r in facts.stub_registrations}
    names = {short_name(fn.name) for facts in hosts.values() for fn in facts.functions}
    for facts in hosts.values():
        for fn in facts.functions:
            for c in fn.calls:
                if c.name not in _BINDERS or not c.receiver or len(c.args) < 2:
                    continue
                for a in c.args[1:]:
                    t = a.text.strip()
                    if t.startswith("TORCH_FN(") and t.endswith(")"):
                        t = t[len("TORCH_FN("):-1].strip()
                    t = t.lstrip("&").strip().split("::")[-1]
                    if t in names:
                        out.add(t)
    return out


def registered_stubs(hosts) -> dict[str, set[str]]:
    """Function name -> the dispatch stubs it is registered on (``REGISTER_DISPATCH(stub, &fn)``)."""
    out: dict[str, set[str]] = {}
    for facts in hosts.values():
        for r in facts.stub_registrations:
            out.setdefault(r.function, set()).add(r.stub.strip())
    return out


def unreachable(fn: Function, path: str, sites, registered: set[str], escaping: set[str]) -> bool:
    """A function no visible code reaches: ``static`` (or a helper handed out as a value) with no call site in
    its file and no stub registration. Its launches run only if something we cannot see calls it."""
    name = short_name(fn.name)
    if name in registered or fn.kind == "impl_func" or visible_sites(sites, fn, path):
        return False
    return is_static(fn) or name in escaping


def escaping_functions(hosts) -> set[str]:
    """Functions whose name is used as a value inside some function (``&fn``, a template argument
    ``helper<T, fn<T>>(...)``): they have callers the call sites do not show (read-only: shared)."""
    return _once_per_hosts("escaping", hosts, _escaping_functions)


def _escaping_functions(hosts) -> set[str]:
    names = {short_name(fn.name) for facts in hosts.values() for fn in facts.functions}
    out: set[str] = set()
    for facts in hosts.values():
        for fn in facts.functions:
            for s in fn.stmts:
                for m in re.finditer(r"(?<![\w.>:])([A-Za-z_]\w*)\s*(?:<[^<>();]*>)?(?=\s*[^\w\s(<])", s.text):
                    if m.group(1) in names and m.group(1) != short_name(fn.name):
                        out.add(m.group(1))
    return out


def is_dead(fn: Function, path: str | None, sites, registered: set[str], escaping: set[str]) -> bool:
    """A ``static`` function nothing in its file calls, registers or hands out as a value (``&fn``): dead code.
    (``unreachable`` is wider: it also counts functions handed out, whose callers cannot be seen.)"""
    name = short_name(fn.name)
    if fn.kind == "impl_func" or name in registered or name in escaping or not is_static(fn):
        return False
    return not visible_sites(sites, fn, path)


def is_live(fn: Function, path: str | None, hosts) -> bool:
    """``not is_dead(...)`` with the run's call sites, registrations and escaping names (each computed once per run)."""
    return not is_dead(fn, path, call_sites(hosts), registered_functions(hosts), escaping_functions(hosts))


def is_static(fn: Function) -> bool:
    return bool(re.search(r"\bstatic\b", fn.qualifiers))


def visible_sites(sites, fn: Function, path: str | None) -> list[tuple[str, Function, Call]]:
    """Call sites of ``fn`` other than its own recursion; for a ``static`` function only those in its file."""
    name = short_name(fn.name)
    out = [(p, f, c) for p, f, c in sites.get(name, []) if f is not fn]
    if path is not None and is_static(fn):
        out = [(p, f, c) for p, f, c in out if p == path]
    return out


def all_callers(fn_name: str, sites, registered: set[str], pred, depth: int = 3, seen: frozenset = frozenset(), fn: Function | None = None, path: str | None = None) -> bool:
    """Every call site of ``fn_name`` satisfies ``pred(path, caller, call)`` or sits in a caller for which this
    holds in turn (up to ``depth`` levels). False when there is no call site or the function is a stub.
    Recursive calls (from ``fn`` itself, or from a function of the same name when ``fn`` is not given) are
    not call sites; a ``static`` ``fn`` (given with its ``path``) is only called from its own file."""
    name = short_name(fn_name)
    if name in registered or name in seen or depth <= 0:
        return False
    if fn is not None:
        calls = visible_sites(sites, fn, path)
    else:
        calls = [(p, f, c) for p, f, c in sites.get(name, []) if short_name(f.name) != name]
    if not calls:
        return False
    for p, f, c in calls:
        if pred(p, f, c):
            continue
        if not all_callers(f.name, sites, registered, pred, depth - 1, seen | {name}, fn=f, path=p):
            return False
    return True


def param_defaults(hosts) -> dict[str, tuple[str, ...]]:
    """Function name -> its parameters' default arguments, from the prototypes of every host file and header."""
    return _once_per_hosts("param_defaults", hosts, _param_defaults)


def _param_defaults(hosts) -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for path in sorted(hosts):
        for name, defaults in getattr(hosts[path], "param_defaults", {}).items():
            out.setdefault(name, defaults)
    return out


_BOOL_WORDS = {"true": True, "false": False}


def flag_arguments(fn: Function, path: str | None, sites, registered: set[str], escaping: set[str], hosts) -> dict[str, bool]:
    """The ``bool`` parameters of a helper that every call in view passes the same literal for (an omitted argument
    passes its default, from the definition or a prototype): name -> value. A helper nothing in view calls is
    entered with each flag ``false`` (its default, or the mode no code here asks for: the caller that would
    set it is where a defect of that mode lies). Entry points and functions handed out as values: nothing."""
    name = short_name(fn.name)
    if fn.kind == "impl_func" or name in registered or name in escaping:
        return {}
    flags = [(i, p) for i, p in enumerate(fn.params) if p.name and parse_type(p.type).kind == "bool" and "&" not in p.type and "*" not in p.type]
    if not flags:
        return {}
    declared = param_defaults(hosts).get(name, ())
    calls = visible_sites(sites, fn, path)
    out: dict[str, bool] = {}
    for i, p in flags:
        default = p.default or (declared[i] if i < len(declared) else "")
        seen: set[bool | None] = set()
        for _cp, _caller, call in calls:
            text = call.args[i].text.strip() if i < len(call.args) else default
            seen.add(_BOOL_WORDS.get(text))
        if not calls:
            seen.add(_BOOL_WORDS.get(default, False))
        if len(seen) == 1 and None not in seen:
            out[p.name] = seen.pop()
    return out


def mentions(text: str, name: str) -> bool:
    return bool(re.search(r"(?<![\w.>])" + re.escape(name) + r"\b", text))


# ---------------------------------------------------------------- exhaustive switches (MPS107)

_ENUM_DEF = re.compile(r"\benum\s+(?:class\s+|struct\s+)?([A-Za-z_]\w*)\s*(?::\s*[\w:\s]+?)?\{([^{}]*)\}", re.S)
_CASE_LABEL = re.compile(r"^case\s+((?:[A-Za-z_]\w*\s*::\s*)*[A-Za-z_]\w*)\s*:(?!:)")
# sentinel enumerators that name no real case: `SIGNPOST_NONE = 0`, `SIGNPOST_COUNT`, `NUM_KINDS`, `kNumKinds`
# (not `MAX`/`END`/a bare `NONE`: those are often real values, `REDUCE_MAX`, a loss reduction `NONE`)
_SENTINEL = re.compile(r"\w+_(?:NONE|COUNT)|NUM_\w+|k?Num[A-Z]\w*")


def enum_members(texts: Iterable[str]) -> dict[str, list[frozenset[str]]]:
    """Enumerators of every enum defined in ``texts``: enum name -> one set per definition
    (``enum class Type { GRAPH, KERNEL };`` -> ``{"Type": [{"GRAPH", "KERNEL"}]}``)."""
    out: dict[str, list[frozenset[str]]] = {}
    for text in texts:
        if "enum" not in text:
            continue
        for m in _ENUM_DEF.finditer(text):
            body = re.sub(r"//[^\n]*|/\*.*?\*/", "", m.group(2), flags=re.S)
            names = [x.split("=")[0].strip() for x in body.split(",")]
            names = [n for n in names if n]
            if names and all(re.fullmatch(r"[A-Za-z_]\w*", n) for n in names):
                out.setdefault(m.group(1), []).append(frozenset(names))
    return out


def unreachable_default(fn: Function, stmt: int, enums: dict[str, list[frozenset[str]]]) -> bool:
    """Statement ``stmt`` sits under the ``default:`` label of a ``switch`` whose ``case`` labels name every
    enumerator of one enum defined in the project (sentinels such as ``X_NONE``/``X_COUNT`` aside): that
    default guards against an invalid enum value (a corrupt object), not a path any real value takes."""
    if not enums or not 0 <= stmt < len(fn.stmts):
        return False
    for p in fn.stmts[stmt].parents + (stmt,):
        s = fn.stmts[p]
        if s.kind != "case_statement" or not s.text.startswith("default") or not s.parents:
            continue
        sw = s.parents[-1]
        labels = []
        for k, t in enumerate(fn.stmts):
            if t.kind == "case_statement" and t.parents and t.parents[-1] == sw and not t.text.startswith("default"):
                m = _CASE_LABEL.match(t.text)
                if m is None:
                    break
                labels.append([x.strip() for x in m.group(1).split("::")])
        else:
            if not labels:
                continue
            quals = {parts[-2] for parts in labels if len(parts) >= 2}
            names = {parts[-1] for parts in labels}
            if len(quals) > 1:
                continue
            candidates = enums.get(next(iter(quals)), []) if quals else [m for ms in enums.values() for m in ms]
            if any({m for m in members if not _SENTINEL.fullmatch(m)} <= names and (quals or names <= members) for members in candidates):
                return True
    return False
