"""What a host launch binds and the buffer slots of the one kernel it launches (DSP308, DSP312).

``single_kernel_launches(graph)`` yields the host functions whose pipeline name resolves to kernels that all
agree on their slots; ``bindings(fn, after)`` reads the function's binding calls (`mtl_setArgs`,
`mtl_setBuffer`/`mtl_setBytes`/`mtl_setArg`, `bind_iter_tensors`, `[enc setBuffer:... atIndex:n]`) into
slot -> bound argument, or None when the binding is not fully known (a slot that is not a literal, a binding
under an `if` or in a loop).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..facts.cpp import Expr
from .ranges import Interval
from .types import parse_type

_ARGS_BINDERS = {"mtl_setArgs"}
_SLOT_BINDERS = {"mtl_setBuffer", "mtl_setBytes", "mtl_setArg"}
_MSG_BINDERS = {"setBuffer", "setBytes", "setTexture"}
_BRANCHY = {"if_statement", "for_statement", "for_range_loop", "while_statement", "do_statement", "switch_statement", "case_statement"}
_INT = re.compile(r"\s*(\d+)\s*[uU]?\s*")


def _int(text: str) -> int | None:
    m = _INT.fullmatch(text)
    return int(m.group(1)) if m else None


def bindings(fn, after: int):
    """({slot: (arg text, call)}, first binding call) bound in ``fn`` from offset ``after`` on; None when not
    fully known."""
    got = bound_exprs(fn, after)
    if got is None:
        return None
    out, first = got
    return {k: (t, c) for k, (t, c, _a) in out.items()}, first


def bound_exprs(fn, after: int, until: int | None = None):
    """Like ``bindings``, with the bound expression too: {slot: (arg text, call, arg)} (``arg`` is None for an
    iterator operand); only calls before offset ``until`` when it is given (the next launch's kernel name)."""
    out: dict[int, tuple[str, object, Expr | None]] = {}
    first = None
    for c in fn.calls:
        if c.span.start < after or (until is not None and c.span.start >= until):
            continue
        slots: list[tuple[int, object]] = []
        if c.name in _ARGS_BINDERS and c.args and not c.message_send:
            base = 0 if not c.template else _int(c.template)
            if base is None:
                return None
            slots = [(base + k, a) for k, a in enumerate(c.args[1:])]
        elif c.name in _SLOT_BINDERS and len(c.args) >= 3 and not c.message_send:
            k = _int(c.args[2].text)
            if k is None:
                return None
            slots = [(k, c.args[1])]
        elif c.name == "bind_iter_tensors" and not c.message_send:
            n = _int(c.args[2].text) if len(c.args) >= 3 else None
            if n is None:
                return None
            slots = [(k, f"{c.args[1].text} operand {k}") for k in range(n)]
        elif c.name in _MSG_BINDERS and c.message_send and c.args:
            k = _int(c.args[-1].text)
            if k is None:
                return None
            slots = [(k, c.args[0])]
        else:
            continue
        if c.stmt >= 0:
            st = fn.stmts[c.stmt]
            if any(fn.stmts[p].kind in _BRANCHY for p in st.parents):
                return None  # conditional or repeated binding
        first = first or c
        for k, arg in slots:
            if isinstance(arg, str):
                out.setdefault(k, (arg, c, None))
            else:
                out.setdefault(k, (arg.text, c, arg))
    return (out, first) if out else None


@dataclass(frozen=True)
class Slot:
    name: str
    type: str


def kernel_slots(kernel) -> dict[int, Slot]:
    """Buffer slots of a kernel: its ``[[buffer(n)]]`` parameters, or, when it declares none, Metal's implicit
    numbering of its ``device``/``constant`` parameters in order."""
    if kernel.buffers:
        return {b.index: Slot(b.name, b.type) for b in kernel.buffers}
    out: dict[int, Slot] = {}
    for p in kernel.function.params:
        if p.name in kernel.attributes or "[[" in p.raw:
            continue
        if re.search(r"\b(device|constant)\b", p.raw):
            out[len(out)] = Slot(p.name, p.type)
    return out




@dataclass(frozen=True)
class Launch:
    impl: str  # the graph node of the host function
    attrs: dict
    function: object  # its Function facts
    kernel: object  # the Kernel facts (the first of the candidates, which all agree on their slots)
    kernel_path: str
    ref: object  # the kernel-name reference
    slots: dict[int, Slot]
    candidates: tuple = ()  # every (path, Kernel) the name selects (they agree on their slots)


def single_kernel_launches(graph):
    """Host functions with one kernel-name reference whose candidates agree on their slots."""
    for impl in sorted(graph.nodes("impl")):
        a = graph.attrs(impl)
        fn = a.get("function")
        if fn is None:
            continue
        krefs = [k for k in graph.out(impl, "launches") if graph.attrs(k)["ref"].kind == "host_name"]
        all_refs = graph.out(impl, "launches")
        if len(krefs) != 1 or len(all_refs) != 1:
            continue
        kid = krefs[0]
        ref = graph.attrs(kid)["ref"]
        kernels = _named_kernels(graph, kid, ref)
        if not kernels:
            continue
        sigs = {tuple((i, "ErrorMessages" in b.type) for i, b in sorted(kernel_slots(k).items())) for _p, k in kernels}
        if len(sigs) != 1:
            continue
        kernel_path, kernel = kernels[0]
        slots = kernel_slots(kernel)
        if not slots:
            continue
        yield Launch(impl, a, fn, kernel, kernel_path, ref, slots, tuple(kernels))


def _named_kernels(graph, kid: str, ref) -> list:
    """(path, Kernel) of the kernels a kernel-name reference selects: a [[host_name]] of theirs matches (not a
    kernel that merely shares a prefix with the name, like `clamp_index` for "clamp_" + dtype)."""
    rx = re.compile(ref.pattern + r"\Z")
    kernels = []
    for mop in graph.out(kid, "resolves"):
        ma = graph.attrs(mop)
        named = any(rx.match(hn) for _p, reg in ma.get("registrations", []) for hn in reg.host_names)
        if named or (ref.exact and ma["name"] == ref.literal):
            kernels += list(ma.get("kernels", []))
    return kernels


def all_launches(graph):
    """(impl, attrs, Function, [(path, Kernel)], ref, until) for every kernel-name reference of every host
    function, ``until`` the offset of the function's next reference (None for the last): a function that launches
    two kernels binds each one's arguments between its name and the next."""
    for impl in sorted(graph.nodes("impl")):
        a = graph.attrs(impl)
        fn = a.get("function")
        if fn is None:
            continue
        refs = sorted(((graph.attrs(k)["ref"], k) for k in graph.out(impl, "launches")), key=lambda rk: rk[0].span.start)
        for i, (ref, kid) in enumerate(refs):
            if ref.kind != "host_name":
                continue
            kernels = _named_kernels(graph, kid, ref)
            if kernels:
                until = refs[i + 1][0].span.start if i + 1 < len(refs) else None
                yield impl, a, fn, kernels, ref, until


_DISPATCH_1D = {"mtl_dispatch1DJob": 2, "dispatchThreads": 0}


def launch_param_ranges(graph, model, hosts) -> dict[str, dict[int, dict[str, object]]]:
    """What each host launch binds to a kernel's scalar parameters, as the semantic model bounds the bound value
    at the binding: host ``impl`` node -> {id(kernel Function) -> {parameter: Interval}}.

    ``mtl_setArgs(enc, out, in, uint32_t(in.dim()))`` gives the kernel's ``ndim`` [0, 64]; a value a dominating
    ``TORCH_CHECK`` bounds keeps that bound; a one-dimensional dispatch of ``n`` threads bounds the
    ``[[thread_position_in_grid]]`` scalar below ``n``. A launch whose bindings are not fully known gives nothing.
    """
    out: dict[str, dict[int, dict[str, object]]] = {}
    for launch, fm, bound_slots in _bound_launches(graph, model, hosts):
        fn = launch.function
        ranges: dict[str, object] = {}
        for slot, call, node in bound_slots:
            iv = fm.range(node, call.stmt)
            if iv.lo is not None or iv.hi is not None:
                ranges[slot.name] = iv
            if node.kind == "id":
                # a parameter struct filled field by field before it is bound: `p.ndim = t.dim(); mtl_setBytes(enc, p, 2)`
                for field, fiv in _struct_fields(fm, fn, node.op, call.stmt).items():
                    ranges[f"{slot.name}.{field}"] = fiv
        grid = _grid_1d(fn, launch.ref.span.start)
        for _path, kernel in launch.candidates or ((launch.kernel_path, launch.kernel),):
            mine = dict(ranges)
            if grid is not None:
                call, size = grid
                n = fm.range(size, call.stmt)
                if n.hi is not None:
                    for name, attr in kernel.attributes.items():
                        p = next((q for q in kernel.function.params if q.name == name), None)
                        if attr == "thread_position_in_grid" and p is not None and parse_type(p.type, {}).kind == "int":
                            mine[name] = Interval(0, max(n.hi - 1, 0))
            if mine:
                out.setdefault(launch.impl, {})[id(kernel.function)] = mine
    return out


def _bound_launches(graph, model, hosts):
    """(launch, the launching function's model, [(slot, binding call, bound value node)]) for each single-kernel
    launch whose bindings are fully known; ``&n`` of `setBytes:&n` is read as ``n``."""
    for launch in single_kernel_launches(graph):
        got = bound_exprs(launch.function, launch.ref.span.start)
        if got is None:
            continue
        bound, _first = got
        fm = model.function(launch.function, hosts.get(launch.attrs.get("path")))
        slots = []
        for k, slot in sorted(launch.slots.items()):
            if k not in bound:
                continue
            _text, call, arg = bound[k]
            if arg is None or arg.tree is None:
                continue
            node = arg.tree
            if node.kind == "unary" and node.op == "&" and node.kids:
                node = node.kids[0]  # `[enc setBytes:&n length:sizeof(n) atIndex:2]`
            slots.append((slot, call, node))
        yield launch, fm, slots


def launch_count_params(graph, model, hosts) -> dict[int, set[str]]:
    """The scalar parameters some launch binds an element count to (a value the model calls a linear extent:
    `out.numel()`, also through `c10::checked_convert` or a cast): id(kernel Function) -> parameter names. A launch
    whose bindings are not fully known gives nothing."""
    from .model import CHECKED

    out: dict[int, set[str]] = {}
    for launch, fm, bound_slots in _bound_launches(graph, model, hosts):
        names: set[str] = set()
        for slot, call, node in bound_slots:
            while node.kids and (node.kind == "cast" or (node.kind == "call" and node.op in CHECKED and node.args)):
                node = node.args[0] if node.kind == "call" else node.kids[0]
            if fm.extent(node, call.stmt) == "linear":
                names.add(slot.name)
        if names:
            for _path, kernel in launch.candidates or ((launch.kernel_path, launch.kernel),):
                out.setdefault(id(kernel.function), set()).update(names)
    return out


def _struct_fields(fm, fn, name: str, at: int) -> dict:
    """Ranges of the fields of local ``name`` assigned once each, unconditionally, before statement ``at``."""
    sym = fm.scope.lookup(name, at)
    if sym is None or sym.type.kind != "struct" or not (0 <= at < len(fn.stmts)):
        return {}
    around = set(fn.stmts[at].parents)
    seen: dict[str, list] = {}
    for a in fn.assigns:
        head, dot, field = a.lhs.replace(" ", "").partition(".")
        if head == name and dot and field.isidentifier():
            seen.setdefault(field, []).append(a)
        elif head == name and not dot:
            return {}  # the whole struct reassigned: not followed
    out = {}
    for field, assigns in sorted(seen.items()):
        if len(assigns) != 1:
            continue
        a = assigns[0]
        if a.op != "=" or a.rhs.tree is None or not (0 <= a.stmt < at) or not set(fn.stmts[a.stmt].parents) <= around:
            continue
        iv = fm.range(a.rhs.tree, a.stmt)
        if iv.lo is not None or iv.hi is not None:
            out[field] = iv
    return out


def _grid_1d(fn, after: int):
    """The one 1-D dispatch after ``after`` in ``fn`` and its thread count node: (call, node), or None."""
    found = [c for c in fn.calls if c.span.start >= after and c.name in _DISPATCH_1D and c.tree is not None]
    if len(found) != 1:
        return None
    c = found[0]
    k = _DISPATCH_1D[c.name]
    args = c.tree.args if hasattr(c.tree, "args") else []
    if len(args) <= k:
        return None
    if c.name == "dispatchThreads":
        a = args[0]
        if a.kind != "call" or a.op != "MTLSizeMake" or len(a.args) != 3:
            return None
        rest = [x for x in a.args[1:]]
        if not all(x.kind == "int" and x.op.rstrip("uUlL") == "1" for x in rest):
            return None
        return c, a.args[0]
    return c, args[k]


def launch_tensor_origins(graph, model, hosts) -> dict[int, dict[str, list[bool]]]:
    """Which kernel buffers the launching code fills itself: id(kernel Function) -> {buffer parameter: [the tensor
    bound to it is made by the op (allocated in the launching function, or passed freshly allocated by every caller
    of it in the tree), one entry per launch]}. A tensor the launching function receives from outside (an
    operator's argument) is not made by the op. Launches whose bindings are not fully known give nothing; a
    function that launches several kernels binds each one between its name and the next."""
    from . import extflow

    out: dict[int, dict[str, list[bool]]] = {}
    for impl, _attrs, fn, kernels, ref, until in all_launches(graph):
        got = bound_exprs(fn, ref.span.start, until)
        if got is None:
            continue
        bound, _first = got
        for _path, kernel in kernels:
            for k, slot in kernel_slots(kernel).items():
                if k not in bound:
                    continue
                text, call, arg = bound[k]
                if arg is None or arg.tree is None or arg.tree.kind not in ("id", "call", "member"):
                    continue
                made = _host_data(fn, arg.tree) or _made_by_op(graph, impl, fn, text, call.span.start, extflow)
                out.setdefault(id(kernel.function), {}).setdefault(slot.name, []).append(made)
    return out


def _host_data(fn, node) -> bool:
    """The bound value is host memory the launch copies (a shape, a stride array, a `std::vector` of sizes), not a
    tensor's contents: `t.strides()`, a local or parameter whose type holds no tensor and is no buffer handle."""
    from .types import holds_tensor

    if node.kind == "call" and node.op in ("sizes", "strides", "shape", "sym_sizes", "sym_strides", "data"):
        return True
    if node.kind != "id":
        return False
    ty = next((d.type for d in fn.decls if d.name == node.op), None)
    if ty is None:
        ty = next((p.type for p in fn.params if p.name == node.op), None)
    if ty is None:
        # `std::vector<int64_t> sizes(D);` reaches tree-sitter as a function declaration, not a variable's
        decl = re.compile(r"\s*((?:const\s+)?[A-Za-z_][\w:]*(?:<[^;{}()]*>)?)\s+" + re.escape(node.op) + r"\s*\(")
        ty = next((m.group(1) for st in fn.stmts if st.kind == "declaration" for m in [decl.match(st.text)] if m), None)
    if ty is None or "MTLBuffer" in ty or "Tensor" in ty or ty.strip() in ("auto", "const auto", "auto&", "const auto&"):
        return False
    return not holds_tensor(parse_type(ty))


def _made_by_op(graph, impl: str, fn, text: str, at: int, extflow) -> bool:
    origin = extflow.tensor_origin(fn, text, at)
    if origin.fresh:
        return True
    index = next((i for i, p in enumerate(fn.params) if p.name == origin.root), None)
    if index is None:
        return not any(p.name == origin.root for p in fn.params) and _local_buffer(fn, origin.root)
    seen = False
    for caller in graph.into(impl, "calls"):
        cf = graph.attrs(caller).get("function")
        if cf is None:
            continue
        for c in cf.calls:
            if c.name != fn.name:
                continue
            if index >= len(c.args) or not extflow.tensor_origin(cf, c.args[index].text, c.span.start).fresh:
                return False
            seen = True
    return seen


def _local_buffer(fn, name: str) -> bool:
    """``name`` is a Metal buffer the function allocates (`id<MTLBuffer> b = [device newBufferWithLength:...]`)."""
    return any(d.name == name and "MTLBuffer" in d.type and d.init is not None and "newBuffer" in d.init.text for d in fn.decls)
