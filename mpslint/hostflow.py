"""Questions host-code rules ask about one function's facts: iterators, aliases, bindings, guards, sizes.

Pure functions over ``Function`` facts; no rule logic and no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .facts.cpp import Call, Function, Stmt

ITER_TYPE = re.compile(r"\bTensorIterator(Base)?\s*[&*]")
TENSOR_REF_TYPE = re.compile(r"\b(?:at::)?(Tensor|TensorBase)\s*&")
WHOLE_TENSOR_CALLS = ("tensor", "output", "input", "tensor_base", "output_base", "input_base")
BINDERS = ("mtl_setArgs", "mtl_setBuffer", "mtl_setArg")
DISPATCHERS = ("mtl_dispatch1DJob", "mtl_dispatch2DJob", "mtl_dispatch3DJob", "dispatchThreads", "dispatchThreadgroups", "MTLSizeMake")
SIZE_CALL = re.compile(r"\.\s*(numel|size|sizes|stride|strides|storage_offset|nbytes|shape)\s*\((?!\s*\))|\.\s*(numel|sizes|strides|storage_offset|nbytes|shape)\s*\(\s*\)")
NARROW_TYPES = re.compile(
    r"^(?:const\s+|static\s+|constexpr\s+)*(uint32_t|int32_t|int|uint|unsigned|unsigned int|int32|uint32|short|ushort|int16_t|uint16_t|uint8_t|int8_t|char)$"
)
LIMIT_TOKENS = re.compile(
    r"numeric_limits|INT_MAX|UINT_MAX|INT32_MAX|UINT32_MAX|INT16_MAX|2147483647|4294967295|1\s*<<\s*3[12]|1U?L?L?\s*<<\s*3[12]|can_use_32bit_indexing|canUse32BitIndexMath|can_use_32bit_index_math"
)
CHECK_CALL = re.compile(r"TORCH_CHECK\w*|TORCH_INTERNAL_ASSERT\w*|AT_ASSERT\w*|assert|AT_ERROR|TORCH_WARN\w*")
THROWING = re.compile(r"\bthrow\b|TORCH_CHECK\w*\s*\(\s*false|AT_ERROR|TORCH_INTERNAL_ASSERT\w*\s*\(\s*false|TORCH_CHECK_NOT_IMPLEMENTED\s*\(\s*false")


def word(name: str) -> re.Pattern:
    return re.compile(r"(?<![\w.>])" + re.escape(name) + r"\b(?!\s*\()")


def iter_params(fn: Function) -> list[str]:
    return [p.name for p in fn.params if ITER_TYPE.search(p.type) and p.name]


def subiter_loops(fn: Function) -> dict[int, tuple[str, str]]:
    """Loops ``for (auto&& sub : it.with_32bit_indexing())``: stmt index -> (loop var, iterator)."""
    out = {}
    for i, s in enumerate(fn.stmts):
        if s.kind == "for_range_loop":
            m = re.search(r"for\s*\(.*?([A-Za-z_]\w*)\s*:\s*([\w.\->]+?)\s*(?:\.|->)\s*with_32bit_indexing\s*\(", s.text)
            if m:
                out[i] = (m.group(1), m.group(2))
    return out


def splits(fn: Function) -> bool:
    """The function recurses over ``with_32bit_indexing()`` sub-iterators."""
    for idx, (var, _it) in subiter_loops(fn).items():
        for c in fn.calls:
            if idx in fn.stmts[c.stmt].parents if c.stmt >= 0 else False:
                if c.name == fn.name and any(a.text == var for a in c.args):
                    return True
    return False


def has_32bit_check(fn: Function, it: str | None = None) -> int:
    """Statement index of the first ``can_use_32bit_indexing()`` check (on ``it`` if given), or -1."""
    for c in fn.calls:
        if c.name in ("can_use_32bit_indexing", "canUse32BitIndexMath") and (it is None or c.receiver == it or (c.args and c.args[0].text == it)):
            return c.stmt
    return -1


def in_loop(fn: Function, stmt: int, loops: Iterable[int]) -> bool:
    if stmt < 0:
        return False
    parents = set(fn.stmts[stmt].parents) | {stmt}
    return bool(parents & set(loops))


def whole_tensor_rx(iters: Iterable[str]) -> re.Pattern | None:
    names = [re.escape(i) for i in iters if i]
    if not names:
        return None
    return re.compile(r"(?<![\w.])(" + "|".join(names) + r")\s*(?:\.|->)\s*(" + "|".join(WHOLE_TENSOR_CALLS) + r")\s*\(\s*\d*\s*\)")


def aliases(fn: Function, rx: re.Pattern) -> dict[str, int]:
    """Locals bound to a whole tensor of the iterator: name -> declaring statement."""
    out: dict[str, int] = {}
    for d in fn.decls:
        if d.init is None:
            continue
        init = d.init.text.strip()
        if init.startswith("{") and init.endswith("}"):
            init = init[1:-1].strip()
        if rx.fullmatch(init) or init in out:
            if "Tensor" in d.type or d.type.replace("const", "").strip() in ("auto", "auto&", "") or d.reference:
                out[d.name] = d.stmt
    for a in fn.assigns:
        if rx.fullmatch(a.rhs.text) and re.fullmatch(r"[A-Za-z_]\w*", a.lhs):
            out.setdefault(a.lhs, a.stmt)
    return out


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


def is_size_expr(text: str) -> bool:
    return bool(SIZE_CALL.search(text))


def size_vars(fn: Function) -> dict[str, tuple[str, int]]:
    """Locals holding an int64 size/numel/stride/offset: name -> (initialiser, stmt)."""
    out: dict[str, tuple[str, int]] = {}
    for d in fn.decls:
        if d.init is None or d.array:
            continue
        t = d.type.replace("const", "").replace("constexpr", "").strip()
        if t in ("auto", "int64_t", "long", "size_t", "NSUInteger", "uint64_t", "long long", "c10::SymInt", "ptrdiff_t", "auto&"):
            init = d.init.text
            if is_size_expr(init) and not re.search(r"checked_convert|safe_downcast|static_cast|\b(?:int|uint32_t|int32_t)\s*\(", init):
                out[d.name] = (init, d.stmt)
    return out


def checks_before(fn: Function, stmt: int) -> list[str]:
    """Texts of guards that run before ``stmt``: TORCH_CHECK conditions and if-headers that return/throw."""
    out = []
    for c in fn.calls:
        if 0 <= c.stmt <= stmt and CHECK_CALL.fullmatch(c.name) and c.args:
            out.append(c.args[0].text)
    for i, s in enumerate(fn.stmts[: max(stmt, 0)]):
        if s.kind == "if_statement":
            out.append(s.text)
    return out


# a named limit constant (`kMaxFusedLossNumel`, `MAX_GRID_ELEMS`) compared directly with the value
_NAMED_BOUND = r"(?:[\w:]*::)?\w*(?:Max|MAX|Limit|LIMIT)\w*"


def _expand_locals(fn: Function, stmt: int, text: str, rounds: int = 3) -> str:
    """``text`` followed by the initialisers of the locals it names (and theirs): `if (use32)` with
    `use32 = (n - 1) * abs_step <= INT32_MAX` and `abs_step = step < 0 ? -step : step` reads as the bound."""
    inits = {d.name: d.init.text for d in fn.decls if d.init is not None and 0 <= d.stmt < stmt}
    seen: set[str] = set()
    out = text
    for _ in range(rounds):
        new = [n for n in re.findall(r"[A-Za-z_]\w*", out) if n in inits and n not in seen]
        if not new:
            break
        for n in new:
            seen.add(n)
            out += " ; " + inits[n]
    return out


def guarded(fn: Function, stmt: int, value: str) -> bool:
    """A dominating guard bounds ``value`` (by its text or the tensor it belongs to)."""
    roots = {value}
    m = re.match(r"\s*([A-Za-z_]\w*)", value)
    if m:
        roots.add(m.group(1))
    for g in checks_before(fn, stmt):
        if not LIMIT_TOKENS.search(g):
            if any(re.search(re.escape(r) + r"\s*[<>]=?\s*" + _NAMED_BOUND + r"\b", g) for r in roots):
                return True
            g = _expand_locals(fn, stmt, g)
            if not LIMIT_TOKENS.search(g):
                continue
        if "can_use_32bit_indexing" in g or any(re.search(r"(?<![\w.])" + re.escape(r) + r"\b", g) for r in roots):
            return True
    return False


def stmt_text(fn: Function, i: int) -> str:
    return fn.stmts[i].text if 0 <= i < len(fn.stmts) else ""


def then_branch_throws(fn: Function, if_idx: int) -> bool:
    for s in fn.stmts[if_idx + 1 :]:
        if if_idx not in s.parents:
            break
        if THROWING.search(s.text):
            return True
    return False


def stmts_after(fn: Function, i: int) -> list[tuple[int, Stmt]]:
    return [(k, s) for k, s in enumerate(fn.stmts) if k >= i]


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
_EMPTY_TEST = re.compile(r"==\s*0\b|\b0\s*==|<=\s*\d+[uUlL]*\b|<\s*[1-9]\d*[uUlL]*\b|!\s*[A-Za-z_(]|\bis_empty\s*\(|\.\s*empty\s*\(\s*\)")
_SIZE_WORD = re.compile(r"\b(?:numel|is_empty|empty|size|sizes|nbytes|_nnz)\s*\(")


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


def ancestors(fn: Function, stmt: int) -> tuple[int, ...]:
    return fn.stmts[stmt].parents if 0 <= stmt < len(fn.stmts) else ()


def branch_under(fn: Function, stmt: int, anc: int) -> str:
    """Which branch ("then"/"else") of the if-statement ``anc`` holds ``stmt``."""
    chain = list(ancestors(fn, stmt)) + [stmt]
    if anc not in chain[:-1]:
        return ""
    child = chain[chain.index(anc) + 1]
    return fn.stmts[child].branch


_LOOPS = ("for_statement", "for_range_loop", "while_statement", "do_statement")


def branch_returns(fn: Function, if_idx: int, branch: str = "then", skip_loop: bool = False) -> bool:
    """The given branch of if-statement ``if_idx`` ends the function (a return or throw in it), or, with
    ``skip_loop``, ends the enclosing loop's iteration (``continue``/``break``)."""
    exits = ("return_statement", "throw_statement") + (("continue_statement", "break_statement") if skip_loop else ())
    for k, s in enumerate(fn.stmts[if_idx + 1 :], start=if_idx + 1):
        if if_idx not in s.parents:
            break
        if s.kind in exits and branch_under(fn, k, if_idx) == branch:
            return True
        if branch == "then" and THROWING.search(s.text) and branch_under(fn, k, if_idx) == "then":
            return True
    return False


def size_locals(fn: Function) -> set[str]:
    """Locals initialised from a tensor or iterator size (``const auto numel = iter.numel();``)."""
    return {d.name for d in fn.decls if d.init is not None and _SIZE_WORD.search(d.init.text)}


def is_empty_test(cond: str, sizes: set[str] = frozenset()) -> bool:
    """``cond`` is true when a tensor is empty: ``x.numel() == 0``, ``!iter.numel()``, ``n == 0`` for a size local."""
    if not _EMPTY_TEST.search(cond):
        return False
    if _SIZE_WORD.search(cond):
        return True
    return any(re.search(r"(?<![\w.])" + re.escape(v) + r"\s*(?:==\s*0|<=\s*\d+|<\s*[1-9]\d*)[uUlL]*\b|!\s*" + re.escape(v) + r"\b", cond) for v in sizes)


def is_nonempty_test(cond: str, sizes: set[str] = frozenset()) -> bool:
    """``cond`` is true only for a non-empty tensor: ``x.numel() > 0``, ``x.numel() != 0``, ``if (numel)``,
    or a loop condition ``n > 0`` over a size local."""
    if re.search(r"\bnumel\s*\(\s*\)\s*(?:>|!=)\s*0\b", cond) or re.fullmatch(r"\s*(?:if\s*)?\(\s*[\w.\->]+\s*(?:\.|->)\s*numel\s*\(\s*\)\s*\)\s*", cond):
        return True
    return any(re.search(r"(?<![\w.])" + re.escape(v) + r"\s*(?:>|!=)\s*0\b", cond) or re.fullmatch(r"\s*(?:if\s*)?\(\s*" + re.escape(v) + r"\s*\)\s*", cond) for v in sizes)


def empty_guarded(fn: Function, stmt: int, extra: set[str] = frozenset()) -> bool:
    """An empty-tensor guard dominates statement ``stmt``: an earlier ``if (x.numel() == 0) return;`` in an
    enclosing scope, an enclosing ``if (x.numel() > 0)``, the else-branch of an emptiness test, or a
    ``TORCH_CHECK(x.numel() > 0, ...)`` before it. ``extra``: more names that hold a size (the variables a
    launch is sized by, such as a ``steps`` parameter)."""
    if stmt < 0:
        return False
    sizes = size_locals(fn) | set(extra)
    anc = set(ancestors(fn, stmt))
    for i, s in enumerate(fn.stmts[:stmt]):
        if s.kind in _LOOPS and i in anc and is_nonempty_test(s.text.split(";")[1] if s.text.count(";") >= 2 else s.text, sizes):
            return True  # for (n = x.numel(); n > 0; ...) { launch }
        if s.kind != "if_statement":
            continue
        if i in anc:
            br = branch_under(fn, stmt, i)
            if br == "then" and is_nonempty_test(s.text, sizes):
                return True
            if br == "else" and is_empty_test(s.text, sizes):
                return True
            continue
        if set(s.parents) <= anc and is_empty_test(s.text, sizes):
            in_loop = bool(s.parents) and fn.stmts[s.parents[-1]].kind in _LOOPS
            if branch_returns(fn, i, "then", skip_loop=in_loop):
                return True
    for c in fn.calls:
        if 0 <= c.stmt < stmt and c.name.startswith("TORCH_CHECK") and c.args and set(ancestors(fn, c.stmt)) <= anc:
            if is_nonempty_test(c.args[0].text, sizes):
                return True
    return False


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


def registered_functions(hosts) -> set[str]:
    """Functions registered on a dispatch stub (called by the dispatcher, not by project code)."""
    return {r.function for facts in hosts.values() for r in facts.stub_registrations}


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
