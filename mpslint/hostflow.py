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


def guarded(fn: Function, stmt: int, value: str) -> bool:
    """A dominating guard bounds ``value`` (by its text or the tensor it belongs to)."""
    roots = {value}
    m = re.match(r"\s*([A-Za-z_]\w*)", value)
    if m:
        roots.add(m.group(1))
    for g in checks_before(fn, stmt):
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
