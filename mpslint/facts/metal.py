"""Facts of one piece of Metal source: kernels, their buffer slots, and the op/dtype registrations.

Registrations come from the ``REGISTER_*`` macro families of ``c10/metal`` (known here by shape, so
the headers need not be present), from macros the file defines itself (expanded until they reach a
known family or a ``template [[host_name(...)]]`` instantiation), and from explicit instantiations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..masking import mask_metal
from ..model import Span
from ..parsing import error_counts, parse
from ..source import LineIndex
from .cpp import CppFacts, Function
from .macros import Conditions, Define, concat_strings, defines, expand, invocations, strip_comments

# Metal scalar types and the torch dtype each stands for.
METAL_TO_TORCH = {
    "float": "Float",
    "half": "Half",
    "bfloat": "BFloat16",
    "long": "Long",
    "int": "Int",
    "short": "Short",
    "char": "Char",
    "uchar": "Byte",
    "bool": "Bool",
    "float2": "ComplexFloat",
    "half2": "ComplexHalf",
    "double": "Double",
    "uint": "UInt32",
    "ushort": "UInt16",
    "ulong": "UInt64",
    "int64_t": "Long",
    "int32_t": "Int",
    "int16_t": "Short",
    "int8_t": "Char",
    "uint8_t": "Byte",
    "uint32_t": "UInt32",
}
FLOAT_TYPES = ("float", "half", "bfloat")
INTEGER_TYPES = ("long", "int", "short", "uchar", "char", "bool")

# c10/metal registration families: position of the input and output dtype arguments.
KNOWN_FAMILIES: dict[str, tuple[int, int]] = {
    "REGISTER_UNARY_OP": (1, 2),
    "REGISTER_UNARY_ALPHA_OP": (1, 3),
    "REGISTER_BINARY_OP_": (1, 2),
    "REGISTER_BINARY_OP": (1, 2),
    "REGISTER_OPMATH_BINARY_OP": (1, 2),
    "REGISTER_BINARY_CASTOUT_OP": (1, 2),
    "REGISTER_BINARY_ALPHA_OP": (1, 3),
    "REGISTER_TERNARY_OP_": (1, 2),
    "REGISTER_TERNARY_OP": (1, 2),
    "REGISTER_OPMATH_TERNARY_OP": (1, 2),
}
FAMILY_KIND = {
    "REGISTER_UNARY_OP": "unary",
    "REGISTER_UNARY_ALPHA_OP": "unary_alpha",
    "REGISTER_BINARY_ALPHA_OP": "binary_alpha",
    "REGISTER_TERNARY_OP_": "ternary",
    "REGISTER_TERNARY_OP": "ternary",
    "REGISTER_OPMATH_TERNARY_OP": "ternary",
}
# Convenience macros that PyTorch defines in BinaryKernel.metal (used when a file does not define them).
CONVENIENCE: dict[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "REGISTER_FLOAT_BINARY_OP": ("REGISTER_BINARY_OP", tuple((t, t) for t in FLOAT_TYPES)),
    "REGISTER_OPMATH_FLOAT_BINARY_OP": ("REGISTER_OPMATH_BINARY_OP", tuple((t, t) for t in FLOAT_TYPES)),
    "REGISTER_INTEGER_BINARY_OP": ("REGISTER_BINARY_OP", tuple((t, t) for t in INTEGER_TYPES)),
    "REGISTER_INT2FLOAT_BINARY_OP": ("REGISTER_BINARY_OP", tuple((t, "float") for t in INTEGER_TYPES)),
}
_NOT_REGISTRATION = re.compile(r"(TORCH_\w+|C10_\w+|static_assert|DEFINE_\w+|IF_CONSTEXPR)")
_REG_NAME = re.compile(r"(REGISTER|INSTANTIATE|INSTANTIATE_\w+|\w*INSTANTIATE\w*|REGISTER_\w+|\w+_REGISTER\w*|\w*_KERNELS?|[A-Z][A-Z0-9_]*)")
_HOST_NAME_INST = re.compile(
    r"template\s*\[\[\s*host_name\s*\((?P<hn>(?:[^()]|\([^()]*\))*)\)\s*\]\]\s*(?:\[\[\s*kernel\s*\]\]\s*)?(?:kernel\s+)?"
    # whitespace inside ``ret`` only between two of its tokens, so a long whitespace run has one parse (it
    # was matched by three adjacent ``\s`` repetitions: catastrophic backtracking on a blanked-out #define)
    r"(?P<ret>(?:[\w:<>,*]|(?<=[\w:<>,*])\s+(?=[\w:<>,*]))*?)(?:(?<=[\w:<>,*])\s+)?(?P<fn>(?:::)?[\w:]+?)\s*<(?P<targs>[^;{]*?)>\s*\(",
    re.S,
)


@dataclass(frozen=True)
class Registration:
    op: str  # functor / op name ("atan2") or kernel template name for custom instantiations
    family: str  # "binary", "unary", ..., or "kernel" for custom instantiations
    macro: str  # outermost macro invoked in this file ("REGISTER_FLOAT_BINARY_OP") or "template"
    dtype: str  # input Metal type ("float")
    out_dtype: str
    host_names: tuple[str, ...]
    span: Span  # the invocation in this file
    conditions: tuple[str, ...]  # #if conditions in force
    kernel: str = ""  # kernel template instantiated, when known


@dataclass(frozen=True)
class BufferParam:
    index: int
    name: str
    type: str
    span: Span


@dataclass
class Kernel:
    function: Function
    buffers: list[BufferParam] = field(default_factory=list)
    threadgroup_params: list[tuple[int, str, Span]] = field(default_factory=list)
    attributes: dict[str, str] = field(default_factory=dict)  # param name -> attribute (thread_position_in_grid ...)

    @property
    def name(self) -> str:
        return self.function.name


@dataclass
class MetalFacts:
    path: str
    base: int  # offset of this Metal source within the file (0 for .metal files)
    end: int
    embedded: bool
    functions: list[Function]
    kernels: list[Kernel]
    registrations: list[Registration]
    error_nodes: int = 0
    missing_nodes: int = 0
    bytes: int = 0
    defines: dict[str, Define] = field(default_factory=dict)
    # file scope, for the semantic model: alias -> aliased type, struct -> field -> type, name -> (type, value)
    typedefs: dict[str, str] = field(default_factory=dict)
    structs: dict[str, dict[str, str]] = field(default_factory=dict)
    constants: dict = field(default_factory=dict)
    includes: list[str] = field(default_factory=list)  # headers named by #include (context detection)


def metal_facts(path: str, text: str, index: LineIndex, base: int = 0, embedded: bool = False) -> MetalFacts:
    masked = mask_metal(text)
    tree = parse(masked)
    errs, missing = error_counts(tree)
    cpp = CppFacts(text, masked, tree, index, base)
    clean = strip_comments(text)
    kernels = [_kernel(fn) for fn in cpp.functions if _is_kernel(fn)]
    defs = defines(clean)
    regs = _resolve_typedefs(_registrations(clean, defs, index, base, frozenset(cpp.typedefs)), cpp.typedefs)
    return MetalFacts(
        path=path,
        base=base,
        end=base + len(text),
        embedded=embedded,
        functions=cpp.functions,
        kernels=kernels,
        registrations=regs,
        error_nodes=errs,
        missing_nodes=missing,
        bytes=len(text.encode("utf-8")),
        defines=defs,
        typedefs=cpp.typedefs,
        structs=cpp.structs,
        constants=cpp.constants,
        includes=re.findall(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', clean, re.M),
    )


def _resolve_typedefs(regs: list[Registration], typedefs: dict[str, str]) -> list[Registration]:
    """Registrations name dtypes through the file's aliases (`typedef bfloat bfloat16_t;`): give the Metal type."""
    if not typedefs:
        return regs
    from dataclasses import replace

    from ..semantic.types import parse_type

    def canon(name: str) -> str:
        if name not in typedefs:
            return name
        t = parse_type(name, typedefs)
        return t.name if t.name in METAL_TO_TORCH else ""

    return [replace(r, dtype=canon(r.dtype), out_dtype=canon(r.out_dtype)) if r.dtype in typedefs or r.out_dtype in typedefs else r for r in regs]


def _is_kernel(fn: Function) -> bool:
    return bool(re.search(r"\bkernel\b|\[\[\s*kernel\s*\]\]", fn.qualifiers)) and fn.kind != "method"


_ATTR_IN_PARAM = re.compile(r"\[\[\s*(\w+)\s*(?:\(\s*(\d+)\s*\))?\s*\]\]")


def _kernel(fn: Function) -> Kernel:
    k = Kernel(fn)
    for p in fn.params:
        for m in _ATTR_IN_PARAM.finditer(p.raw):
            attr, num = m.group(1), m.group(2)
            if attr == "buffer" and num is not None:
                k.buffers.append(BufferParam(int(num), p.name, p.type, p.span))
            elif attr == "threadgroup" and num is not None:
                k.threadgroup_params.append((int(num), p.name, p.span))
            else:
                k.attributes[p.name] = attr
    return k


def _registrations(clean: str, defs: dict[str, Define], index: LineIndex, base: int, aliases=frozenset()) -> list[Registration]:
    conds = Conditions(clean)
    out: list[Registration] = []
    define_spans = [(d.start, d.end) for d in defs.values()]

    def inside_define(pos: int) -> bool:
        return any(a <= pos < b for a, b in define_spans)

    memo: dict = {}
    # 1. macro invocations at file scope
    for inv in invocations(clean, re.compile(r"[A-Z][A-Z0-9_]*")):
        if inside_define(inv.start) or _NOT_REGISTRATION.fullmatch(inv.name):
            continue
        span = index.span(base + inv.start, base + inv.end)
        found = _expand_registration(inv.name, inv.args, defs, 0, aliases, memo)
        for family_macro, op, dt_in, dt_out, host_names, kernel in found:
            out.append(
                Registration(
                    op=op,
                    family=FAMILY_KIND.get(family_macro, "binary" if "BINARY" in family_macro else ("kernel" if family_macro == "template" else "unary" if "UNARY" in family_macro else "other")),
                    macro=inv.name,
                    dtype=dt_in,
                    out_dtype=dt_out,
                    host_names=tuple(host_names),
                    span=span,
                    conditions=conds.at(inv.start),
                    kernel=kernel,
                )
            )
    # 2. explicit instantiations written out
    for m in _HOST_NAME_INST.finditer(clean):
        if inside_define(m.start()):
            continue
        hn = concat_strings(m.group("hn"))
        fn = m.group("fn").split("::")[-1]
        dt = _first_metal_type(m.group("targs"), aliases)
        out.append(
            Registration(
                op=fn,
                family="kernel",
                macro="template",
                dtype=dt,
                out_dtype=dt,
                host_names=(hn,) if hn else (),
                span=index.span(base + m.start(), base + m.end()),
                conditions=conds.at(m.start()),
                kernel=fn,
            )
        )
    return out


def _first_metal_type(targs: str, aliases=frozenset()) -> str:
    """The first Metal scalar type among template arguments, or a file alias of one (resolved later)."""
    for tok in re.split(r"[\s,<>]+", targs):
        if tok in METAL_TO_TORCH or tok in aliases:
            return tok
    return ""


def _expand_registration(name: str, args: tuple[str, ...], defs: dict[str, Define], depth: int, aliases=frozenset(), memo=None):
    """Yield (family macro, op, input dtype, output dtype, host names, kernel) for one invocation. ``memo`` (one
    file's ``defs`` and ``aliases``): the same macro with the same arguments expands once (a dtype list
    macro is invoked under each of its families)."""
    if memo is not None:
        key = (name, args, depth)
        got = memo.get(key)
        if got is None:
            got = memo[key] = _expand_registration_once(name, args, defs, depth, aliases, memo)
        return got
    return _expand_registration_once(name, args, defs, depth, aliases, None)


def _expand_registration_once(name: str, args: tuple[str, ...], defs: dict[str, Define], depth: int, aliases, memo):
    if depth > 8:
        return []
    if name in defs and defs[name].params is not None:
        body = expand(defs[name], args)
        results = []
        for inv in invocations(body, re.compile(r"[A-Z][A-Z0-9_]*")):
            if _NOT_REGISTRATION.fullmatch(inv.name):
                continue
            results.extend(_expand_registration(inv.name, inv.args, defs, depth + 1, aliases, memo))
        for m in _HOST_NAME_INST.finditer(body):
            hn = concat_strings(m.group("hn"))
            fn = m.group("fn").split("::")[-1]
            dt = _first_metal_type(m.group("targs"), aliases)
            results.append(("template", fn, dt, dt, [hn] if hn else [], fn))
        return results
    if name in KNOWN_FAMILIES and len(args) >= 2:
        i, o = KNOWN_FAMILIES[name]
        dt_in = args[i] if i < len(args) else ""
        dt_out = args[o] if o < len(args) else dt_in
        op = args[0]
        return [(name, op, dt_in, dt_out, [], "")]
    if name in CONVENIENCE and args:
        family, pairs = CONVENIENCE[name]
        return [(family, args[0], a, b, [], "") for a, b in pairs]
    return []
