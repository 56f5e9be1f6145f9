"""Questions the stream-protocol and host<->kernel contract rules ask (MPS113-MPS117, DSP310/DSP311).

Pure functions over facts and the dispatch graph; no rule logic, no I/O. The kernels a host function launches come
from the graph's links (``impl -launches-> kref -resolves-> mop``), so extension-style launches
(``newFunctionWithName:``, pipeline wrappers) count like PyTorch's ``getPipelineStateForFunc``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..facts.cpp import Call, Function

# block-taking calls that run their block on a dispatch queue (the MPS stream's serial queue in op code)
QUEUE_BLOCK = re.compile(r"dispatch_(?:sync|async|block|barrier_sync|barrier_async)\w*")
STREAM_CB_CALL = re.compile(r"(?:\b|::)get_command_buffer\s*\(\s*\)|(?:->|\.)\s*commandBuffer\s*\(\s*\)|\bgetCommandBuffer\s*\(\s*\)")
_FRESH = re.compile(
    r"^(?:at::|torch::|c10::)?(?:empty|zeros|ones|full|empty_like|zeros_like|ones_like|full_like|empty_strided|rand|randn|arange)\s*\("
    r"|\.\s*(?:new_empty|new_zeros|new_ones|new_full)\s*\("
)
_VIEWING = ("contiguous", "view", "reshape", "flatten", "squeeze", "unsqueeze", "expect_contiguous", "to", "type", "toType", "detach", "narrow", "select", "slice", "transpose", "permute", "t", "expand", "as_strided", "clone")
# methods that always return a newly allocated tensor (storage offset 0), unlike the views above
_ALLOCATING = ("index_select", "masked_select", "nonzero", "argsort", "matmul", "mm", "bmm", "cumsum", "cumprod",
               "repeat", "repeat_interleave", "tril", "triu", "flip", "roll", "gather")
# the same ops called as namespace functions: `at::argsort(x)`, `torch::cumsum(x, 0)`
_FRESH_CALL = re.compile(r"^(?:at::|torch::)(?:" + "|".join(_ALLOCATING) + r")\s*\(")
_IDENT = re.compile(r"[A-Za-z_]\w*")


def in_queue(blocks: tuple[str, ...]) -> bool:
    return any(QUEUE_BLOCK.fullmatch(b.rsplit("::", 1)[-1]) and not b.endswith("dispatch_once") for b in blocks)


def stmt_blocks(fn: Function, offset: int) -> tuple[str, ...]:
    i = fn.stmt_of(offset)
    return fn.stmts[i].blocks if i >= 0 else ()


def local_init(fn: Function, name: str, at: int | None = None) -> str | None:
    """The text a local ``name`` was last initialised or assigned from before ``at``."""
    best: tuple[int, str] | None = None
    for d in fn.decls:
        if d.name == name and d.init is not None and (at is None or d.span.start < at):
            if best is None or d.span.start > best[0]:
                best = (d.span.start, d.init.text)
    for a in fn.assigns:
        if a.lhs == name and a.op == "=" and (at is None or a.span.start < at):
            if best is None or a.span.start > best[0]:
                best = (a.span.start, a.rhs.text)
    return best[1] if best else None


def is_local(fn: Function, name: str) -> bool:
    return any(d.name == name and not d.type.startswith("static") for d in fn.decls)


# ---------------------------------------------------------------- tensors


@dataclass(frozen=True)
class Origin:
    """Where a tensor expression comes from within one function."""

    names: tuple[str, ...]  # the name and every local it was derived from, nearest first
    root: str  # the last name (a parameter, or a local with an unknown source)
    fresh: bool  # allocated in this function (empty/zeros/...): contiguous, storage offset 0
    contiguous: bool  # made contiguous here (`.contiguous()`): dense, but a contiguous view keeps its offset
    converted: bool  # converted to a dtype here (`.to(kFloat)`, a fresh tensor with explicit options)
    follows: str = ""  # a fresh tensor allocated with another tensor's options (`at::empty(.., A.options())`)


def tensor_origin(fn: Function, expr: str, at: int | None = None, depth: int = 6) -> Origin:
    names: list[str] = []
    fresh = contiguous = converted = False
    follows = ""
    cur = expr.strip()
    while depth > 0:
        depth -= 1
        last = _last_method(cur)
        if last is not None:
            name, method, args = last
        elif re.fullmatch(r"[A-Za-z_]\w*", cur):
            name, method, args = cur, None, ""
        else:
            break
        if method is not None:
            if method in _ALLOCATING:
                fresh = True  # `x.index_select(0, idx)`: a new tensor, whatever `x` is
                break
            if method not in _VIEWING:
                break
            contiguous = contiguous or method in ("contiguous", "expect_contiguous")
            converted = converted or (method in ("to", "type", "toType") and bool(re.search(r"\bk[A-Z]\w+|dtype|ScalarType|Float|Half|Int|Long", args)))
            cur = name
            continue
        if name in names:
            break
        names.append(name)
        init = local_init(fn, name, at)
        if init is None:
            break
        init = init.strip()
        arms = _ternary_arms(init)
        if arms is not None:
            # `c ? a.to(kHalf).contiguous() : at::empty(..., kHalf)`: what holds for both arms holds for the local
            a, b = (_arm_origin(fn, x, at, depth) for x in arms)
            fresh = a.fresh and b.fresh
            contiguous = contiguous or (a.contiguous and b.contiguous)
            converted = converted or (a.converted and b.converted)
            if not fresh:
                names.extend(n for n in (a if not a.fresh else b).names if n not in names)
            break
        if _FRESH.search(init) or _FRESH_CALL.search(init):
            fresh = True
            converted = converted or bool(re.search(r"dtype|\bk[A-Z]\w+|ScalarType", init))
            om = re.search(r"([A-Za-z_]\w*)(?:\s*\.\s*\w+\s*\(\s*\))*\s*\.\s*options\s*\(\s*\)", init)
            lm = re.match(r"(?:at::|torch::)?\w+_like\s*\(\s*([A-Za-z_]\w*)", init)
            follows = (om.group(1) if om else "") or (lm.group(1) if lm else "")
            break
        cur = init
    root = names[-1] if names else expr.strip()
    return Origin(tuple(names) or (expr.strip(),), root, fresh, contiguous, converted, follows)


def _arm_origin(fn: Function, expr: str, at: int | None, depth: int) -> "Origin":
    """The origin of one arm of a ternary: an allocation expression itself is fresh (and converted when it names
    a dtype); anything else is followed like a local."""
    if _FRESH.search(expr):
        return Origin((expr,), expr, True, False, bool(re.search(r"dtype|\bk[A-Z]\w+|ScalarType", expr)))
    return tensor_origin(fn, expr, at, depth)


def _ternary_arms(expr: str) -> tuple[str, str] | None:
    """The two arms of a top-level `c ? a : b` (outside brackets and strings), or None."""
    depth, q, colon = 0, None, None
    for i, ch in enumerate(expr):
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch in "\"'":
            return None  # a string literal in the initialiser: not a tensor ternary worth splitting
        elif depth == 0 and ch == "?" and q is None:
            q = i
        elif depth == 0 and ch == ":" and q is not None and expr[i - 1:i + 1] != "::" and expr[i:i + 2] != "::":
            colon = i
            break
    if q is None or colon is None:
        return None
    return expr[q + 1:colon].strip(), expr[colon + 1:].strip()


def _last_method(expr: str) -> tuple[str, str, str] | None:
    """``x.to(k).contiguous()`` -> (``x.to(k)``, ``contiguous``, ``""``): the receiver, name and arguments of the
    outermost method call, or None when ``expr`` does not end in one."""
    if not expr.endswith(")"):
        return None
    depth = 0
    for i in range(len(expr) - 1, -1, -1):
        depth += expr[i] == ")"
        depth -= expr[i] == "("
        if depth == 0:
            break
    else:
        return None
    m = re.search(r"(?:\.|->)\s*([A-Za-z_]\w*)\s*(?:<[^<>()]*>)?\s*$", expr[:i])
    if not m:
        return None
    return expr[: m.start()].strip(), m.group(1), expr[i + 1 : -1]


_DTYPE_TEST = r"\s*(?:\.|->)\s*(?:scalar_type|dtype|is_floating_point|is_complex)\s*\("
_CONTIG_TEST = r"\s*(?:\.|->)\s*(?:is_contiguous|contiguous|expect_contiguous|is_non_overlapping_and_dense)\s*\("


def mentions_test(fn: Function, name: str, kind: str) -> bool:
    """A statement of ``fn`` tests (or converts) ``name``'s dtype (``kind="dtype"``) or contiguity."""
    rx = re.compile(r"(?<![\w.>])" + re.escape(name) + (_DTYPE_TEST if kind == "dtype" else _CONTIG_TEST))
    return any(rx.search(s.text) for s in fn.stmts)


def _mapped(call: Call, fn_from: Function, name: str, fn_to: Function) -> str | None:
    """The parameter of ``fn_to`` that receives ``name`` at ``call`` (a call in ``fn_from``)."""
    for i, a in enumerate(call.args):
        if a.text.strip() == name and i < len(fn_to.params):
            return fn_to.params[i].name
    return None


def tensor_checked(graph, impl: str, fn: Function, origin: Origin, kind: str) -> bool:
    """``kind`` ("dtype" / "contiguous") is established for the tensor: here, in a helper it is passed to
    (``check_args(A, B)``), or in a caller for the parameter it arrives in (one call either way)."""
    if kind == "dtype" and origin.converted:
        return True
    if kind == "contiguous" and (origin.fresh or origin.contiguous):
        return True
    names = list(origin.names) + ([origin.follows] if origin.follows else [])
    for n in names:
        if mentions_test(fn, n, kind):
            return True
    for callee in graph.out(impl, "calls"):
        cf = graph.attrs(callee).get("function")
        if cf is None:
            continue
        for c in fn.calls:
            if c.name != cf.name:
                continue
            for n in names:
                p = _mapped(c, fn, n, cf)
                if p and mentions_test(cf, p, kind):
                    return True
    params = {p.name: i for i, p in enumerate(fn.params)}
    for caller in graph.into(impl, "calls"):
        cf = graph.attrs(caller).get("function")
        if cf is None:
            continue
        for c in cf.calls:
            if c.name != fn.name:
                continue
            for n in names:
                i = params.get(n)
                if i is not None and i < len(c.args):
                    arg = c.args[i].text.strip()
                    o = tensor_origin(cf, arg, c.span.start)
                    if (kind == "dtype" and o.converted) or (kind == "contiguous" and (o.fresh or o.contiguous)):
                        return True
                    if any(mentions_test(cf, m, kind) for m in o.names + ((o.follows,) if o.follows else ())):
                        return True
    return False


# ---------------------------------------------------------------- kernels a function launches


def host_launches(graph):
    """(impl node, its attributes, its Function, the kernels it launches) for every host function of the graph
    whose kernel-name references select at least one kernel."""
    for impl in sorted(graph.nodes("impl")):
        a = graph.attrs(impl)
        fn = a.get("function")
        if fn is None:
            continue
        kernels = launched_kernels(graph, impl)
        if kernels:
            yield impl, a, fn, kernels


def launched_kernels(graph, impl: str) -> list:
    """Metal ``Kernel`` facts that the function's kernel-name references select (by ``[[host_name]]`` or by the
    kernel's own name); [] when it asks for none or the names select nothing. A kernel the host's own file embeds
    (compiled from a string there) is the one it launches: copies of it in other files are left out."""
    out = []
    host = graph.attrs(impl).get("path")
    for kid in graph.out(impl, "launches"):
        ref = graph.attrs(kid)["ref"]
        if ref.kind != "host_name":
            continue
        rx = re.compile(ref.pattern + r"\Z")
        for mop in graph.out(kid, "resolves"):
            ma = graph.attrs(mop)
            named = any(rx.match(hn) for _p, reg in ma.get("registrations", []) for hn in reg.host_names)
            if named or rx.match(ma["name"]):
                kernels = ma.get("kernels", [])
                own = [(p, k) for p, k in kernels if p == host]
                for _p, k in own or kernels:
                    if k not in out:
                        out.append(k)
    return out


# a pointer to one fixed scalar type (`device float*`, `const half*`), the type captured
SCALAR_POINTER = re.compile(r"^(?:const\s+)?(float|half|bfloat|int|uint|short|ushort|char|uchar|long|ulong|bool|int32_t|uint32_t|int64_t|int16_t|int8_t|uint8_t)\s*\*$")
SCALAR_BYTES = {"float": 4, "half": 2, "bfloat": 2, "int": 4, "uint": 4, "short": 2, "ushort": 2, "char": 1, "uchar": 1,
                "long": 8, "ulong": 8, "bool": 1, "int32_t": 4, "uint32_t": 4, "int64_t": 8, "int16_t": 2, "int8_t": 1,
                "uint8_t": 1}


def fixed_slot_scalars(kernels) -> dict[int, tuple[str, str, str]]:
    """slot -> (kernel, parameter, scalar type) where every launched kernel reads one fixed scalar type there
    (`device float* x [[buffer(0)]]`); none for templates, whose element type the host picks."""
    out: dict[int, tuple[str, str, str]] = {}
    if not kernels or any(k.function.template for k in kernels):
        return out
    for k in kernels:
        for b in k.buffers:
            m = SCALAR_POINTER.match(b.type.strip())
            if not m:
                continue
            prev = out.get(b.index)
            if prev is not None and prev[2] != m.group(1):
                out[b.index] = ("", "", "")
            elif prev is None:
                out[b.index] = (k.name, b.name, m.group(1))
    return {i: v for i, v in out.items() if v[2] and all(i in {b.index for b in k.buffers} for k in kernels)}


def slot_binding(call: Call) -> tuple[int, str, str] | None:
    """``[enc setBuffer:x offset:o atIndex:k]`` / ``setBytes:`` -> (k, first argument, offset/length argument)."""
    if not call.message_send or call.name not in ("setBuffer", "setBytes") or len(call.args) < 3:
        return None
    m = re.fullmatch(r"\s*(\d+)\s*[uU]?\s*", call.args[-1].text)
    if not m:
        return None
    return int(m.group(1)), call.args[0].text.strip(), call.args[1].text.strip()


_STORAGE_CAST = re.compile(
    r"(?:__builtin_bit_cast\s*\(\s*id\s*<\s*MTLBuffer\s*>\s*,|\(\s*(?:__bridge\s+)?id\s*<\s*MTLBuffer\s*>\s*\)\s*\(?)"
    r"\s*([A-Za-z_]\w*)\s*\.\s*storage\s*\(\s*\)\s*\.\s*data\s*\(\s*\)\s*\)?"
)


def buffer_storage_arg(text: str) -> str | None:
    """``getMTLBufferStorage(t)`` / ``mps::getMTLBufferStorage(t)`` / the cast it wraps
    (``__builtin_bit_cast(id<MTLBuffer>, t.storage().data())``) -> ``t``."""
    m = re.fullmatch(r"(?:[\w:]+::)?getMTLBufferStorage\s*\(\s*(.+?)\s*\)", text.strip(), re.S)
    if m:
        return m.group(1)
    m = _STORAGE_CAST.fullmatch(text.strip())
    return m.group(1) if m else None


def file_context(ctx, path: str) -> str:
    """"pytorch" or "extension" for the file (mpslint.context through the rule context), "pytorch" before it exists."""
    fc = getattr(ctx, "file_context", None)
    return fc(path) if fc is not None else "pytorch"


def stream_fields(hosts) -> set[str]:
    """Member names assigned the MPS stream's command buffer anywhere (``ret.commandBuffer = get_command_buffer()``)."""
    out = set()
    for hf in hosts.values():
        for fn in hf.functions:
            for a in fn.assigns:
                m = re.search(r"(?:\.|->)\s*([A-Za-z_]\w*)$", a.lhs)
                if m and STREAM_CB_CALL.search(a.rhs.text):
                    out.add(m.group(1))
    return out


def stream_command_buffer(fn: Function, expr: str, fields: set[str], at: int | None = None, depth: int = 3) -> str | None:
    """How ``expr`` is the MPS stream's command buffer (the call that returns it), or None."""
    expr = expr.strip()
    m = STREAM_CB_CALL.search(expr)
    if m:
        return expr
    if depth <= 0:
        return None
    if re.fullmatch(r"[A-Za-z_]\w*", expr):
        init = local_init(fn, expr, at)
        return stream_command_buffer(fn, init, fields, None, depth - 1) if init else None
    fm = re.fullmatch(r"[A-Za-z_][\w.\->]*(?:\.|->)([A-Za-z_]\w*)", expr)
    if fm and fm.group(1) in fields:
        return expr
    return None
