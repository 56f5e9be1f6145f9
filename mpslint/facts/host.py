"""Facts of one host file (``.mm``, ``.cpp``, ``.h``): what it implements, registers, launches and binds."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..masking import mask_objc
from ..model import Span
from ..parsing import error_counts, parse
from ..source import LineIndex
from .cpp import CppFacts, Function
from .macros import Define, defines, expand, invocations, strip_comments
from .metal import MetalFacts, metal_facts

# torch dtype spellings in host code -> Metal type names
HOST_DTYPES = {
    "kFloat": "float", "Float": "float", "kHalf": "half", "Half": "half", "kBFloat16": "bfloat", "BFloat16": "bfloat",
    "kLong": "long", "Long": "long", "kInt": "int", "Int": "int", "kShort": "short", "Short": "short",
    "kChar": "char", "Char": "char", "kByte": "uchar", "Byte": "uchar", "kBool": "bool", "Bool": "bool",
    "kComplexFloat": "float2", "ComplexFloat": "float2", "kComplexHalf": "half2", "ComplexHalf": "half2",
    "kDouble": "double", "Double": "double",
}
_AT_DISPATCH_SETS = {
    "FLOATING_TYPES": ("float", "double"),
    "FLOATING_TYPES_AND_HALF": ("float", "double", "half"),
    "INTEGRAL_TYPES": ("uchar", "char", "int", "long", "short"),
    "ALL_TYPES": ("uchar", "char", "int", "long", "short", "float", "double"),
    "COMPLEX_TYPES": ("float2",),
    "FLOATING_AND_COMPLEX_TYPES": ("float", "double", "float2"),
    "ALL_TYPES_AND_COMPLEX": ("uchar", "char", "int", "long", "short", "float", "double", "float2"),
}
_PREDICATES = {
    "isFloatingType": ("float", "half", "bfloat", "double"),
    "supportedFloatingType": ("float", "half", "bfloat"),
    "isIntegralType": ("uchar", "char", "int", "long", "short"),
    "isComplexType": ("float2", "half2"),
}

_KERNEL_EXEC = re.compile(r"exec_(unary|binary|ternary)_kernel\w*")
_PIPELINE = re.compile(r"getPipelineStateForFunc|getCPLState|getKernelFunction|getPipelineState|getMetalKernel")
STUB_MACROS = re.compile(r"REGISTER_DISPATCH|REGISTER_MPS_DISPATCH|ALSO_REGISTER_AVX512_DISPATCH|REGISTER_ARCH_DISPATCH")
_IMPL_MACRO_BODY = re.compile(r"TORCH_IMPL_FUNC\s*\(\s*([A-Za-z_][\w#\s]*?)\s*\)")
_MPSGRAPH = re.compile(r"\bMPSGraph\w*\b|LookUpOrCreateCachedGraph|CachedGraph\b|runMPSGraph|mpsGraph\b")


@dataclass(frozen=True)
class StubRegistration:
    macro: str
    stub: str
    function: str
    span: Span


@dataclass(frozen=True)
class StubDeclaration:
    """``DECLARE_DISPATCH(fn_type, name)``: a DispatchStub every backend may register."""

    stub: str
    span: Span


@dataclass(frozen=True)
class ImplMacro:
    """An implementation defined through a macro invocation (``CREATE_MPS_..._FUNC(atan2_out_mps, ...)``)."""

    name: str
    macro: str
    span: Span
    mpsgraph: bool


@dataclass(frozen=True)
class KernelRef:
    """A kernel name asked for by host code."""

    kind: str  # "op" (exec_*_kernel: a functor/op name) or "host_name" (pipeline state: a [[host_name]])
    pattern: str  # regex over names; literal parts escaped
    literal: str  # the literal prefix (for messages)
    exact: bool  # the whole name is a literal
    function: str
    span: Span
    call: str


@dataclass(frozen=True)
class EncoderOpen:
    """``[receiver computeCommandEncoder]`` (or ``computeCommandEncoderWithDispatchType:``): a new compute encoder
    opened directly on a command buffer (a send with no argument is no call in the facts)."""

    function: str
    receiver: str  # the command-buffer expression, after masking: "stream->commandBuffer()", "env.commandBuffer"
    span: Span  # the whole send


_ENCODER_OPEN = re.compile(r"\[\s*([^\[\]]+?)\s+computeCommandEncoder(?:WithDispatchType\s*:[^\]]*)?\s*\]")


@dataclass(frozen=True)
class DtypeFilter:
    dtypes: tuple[str, ...]  # Metal type names the function can launch
    span: Span
    source: str


@dataclass(frozen=True)
class Include:
    header: str
    span: Span


@dataclass
class HostFacts:
    path: str
    functions: list[Function]
    includes: list[Include] = field(default_factory=list)
    stub_registrations: list[StubRegistration] = field(default_factory=list)
    stub_declarations: list[StubDeclaration] = field(default_factory=list)
    impl_macros: list[ImplMacro] = field(default_factory=list)
    kernel_refs: list[KernelRef] = field(default_factory=list)
    dtype_filters: dict[str, list[DtypeFilter]] = field(default_factory=dict)
    mpsgraph_functions: set[str] = field(default_factory=set)
    embedded: list[MetalFacts] = field(default_factory=list)
    error_nodes: int = 0
    missing_nodes: int = 0
    bytes: int = 0
    defines: dict[str, Define] = field(default_factory=dict)
    encoder_opens: list[EncoderOpen] = field(default_factory=list)
    pipeline_wrappers: dict[str, int] = field(default_factory=dict)  # function -> index of its kernel-name parameter
    static_strings: dict[str, list[str]] = field(default_factory=dict)  # `static constexpr ... name = "..."` values
    # file scope, for the semantic model: alias -> aliased type, struct -> field -> type, name -> (type, value)
    typedefs: dict[str, str] = field(default_factory=dict)
    structs: dict[str, dict[str, str]] = field(default_factory=dict)
    constants: dict = field(default_factory=dict)
    param_defaults: dict[str, tuple[str, ...]] = field(default_factory=dict)  # from prototypes: name -> defaults


_RAW_STRING = re.compile(r'R"([^()\\ \t\n]{0,16})\(')
_LOOKS_METAL = re.compile(r"\bkernel\s+void\b|<metal_stdlib>|\[\[\s*buffer\s*\(|using\s+namespace\s+metal\b")


def embedded_metal_ranges(text: str) -> list[tuple[int, int]]:
    """(start, end) of raw-string contents that hold Metal source."""
    out = []
    for m in _RAW_STRING.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        if "//" in text[line_start : m.start()]:
            continue
        close = ")" + m.group(1) + '"'
        end = text.find(close, m.end())
        if end < 0:
            continue
        body = text[m.end() : end]
        if _LOOKS_METAL.search(body):
            out.append((m.end(), end))
    return out


def host_facts(path: str, text: str, index: LineIndex) -> HostFacts:
    ranges = embedded_metal_ranges(text)
    host_text = text
    if ranges:  # the host parser should see the raw string as an opaque string
        chars = list(text)
        for a, b in ranges:
            for k in range(a, b):
                if chars[k] not in "\n":
                    chars[k] = " "
        host_text = "".join(chars)
    masked = mask_objc(host_text)
    tree = parse(masked)
    errs, missing = error_counts(tree)
    cpp = CppFacts(host_text, masked, tree, index)
    clean = strip_comments(host_text)
    facts = HostFacts(path=path, functions=cpp.functions, error_nodes=errs, missing_nodes=missing, bytes=len(text.encode("utf-8")))
    facts.defines = defines(clean)
    facts.typedefs, facts.structs, facts.constants = cpp.typedefs, cpp.structs, cpp.constants
    facts.param_defaults = cpp.param_defaults
    for m in re.finditer(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]+)[>"]', clean, re.M):
        facts.includes.append(Include(m.group(1), index.span(m.start(), m.end())))
    for inv in invocations(clean, STUB_MACROS):
        if len(inv.args) >= 2 and not _in_define(facts.defines, inv.start):
            fn = inv.args[1].lstrip("&").strip().split("::")[-1]
            facts.stub_registrations.append(StubRegistration(inv.name, inv.args[0], fn, index.span(inv.start, inv.end)))
    for inv in invocations(clean, re.compile(r"DECLARE_DISPATCH")):
        if len(inv.args) >= 2 and not _in_define(facts.defines, inv.start):
            facts.stub_declarations.append(StubDeclaration(inv.args[-1].strip(), index.span(inv.start, inv.end)))
    _impl_macros(facts, clean, index)
    _macro_stub_registrations(facts, clean, index)
    funcs = {f.name: f for f in cpp.functions}
    wrappers = _pipeline_wrappers(cpp.functions)
    facts.pipeline_wrappers = wrappers
    _STATIC_STRINGS[id(funcs)] = static_strings(clean)
    try:
        for fn in cpp.functions:
            body = text[fn.span.start : fn.span.end]
            if _MPSGRAPH.search(body):
                facts.mpsgraph_functions.add(fn.name)
            _kernel_refs(facts, fn, funcs, wrappers)
            for m in _ENCODER_OPEN.finditer(masked_text(host_text, fn), 0):
                a = fn.span.start + m.start()
                facts.encoder_opens.append(EncoderOpen(fn.name, " ".join(m.group(1).split()), index.span(a, fn.span.start + m.end())))
            filters = _dtype_filters(fn)
            if filters:
                facts.dtype_filters[fn.name] = filters
    finally:
        _STATIC_STRINGS.pop(id(funcs), None)
    facts.static_strings = static_strings(clean)
    for a, b in ranges:
        facts.embedded.append(metal_facts(path, text[a:b], index, base=a, embedded=True))
    return facts


def masked_text(text: str, fn: Function) -> str:
    """The function's original text with comments and string literals blanked (same offsets)."""
    body = text[fn.span.start : fn.span.end]
    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"', lambda m: " " * len(m.group(0)), body, flags=re.S)


def _in_define(defs: dict[str, Define], pos: int) -> bool:
    return any(d.start <= pos < d.end for d in defs.values())


_EXEC_IN_MACRO = re.compile(r'\b(exec_(?:unary|binary|ternary)_kernel\w*)\s*\(\s*[\w.>-]+\s*,\s*"(\w+)"')


def _macro_stub_registrations(facts: HostFacts, clean: str, index: LineIndex) -> None:
    """Registrations a file-local macro makes (``REGISTER_UNARY_TI_DISPATCH(abs)`` expanding to a
    ``static void abs_kernel_mps(...) { lib.exec_unary_kernel(iter, "abs"); }`` and a
    ``REGISTER_DISPATCH(abs_stub, abs_kernel_mps)``), with the op names the made function launches."""
    makers = {n: d for n, d in facts.defines.items() if d.params is not None and STUB_MACROS.search(d.body)}
    if not makers:
        return
    rx = re.compile("|".join(re.escape(n) for n in makers))
    for inv in invocations(clean, rx):
        if _in_define(facts.defines, inv.start):
            continue
        body = expand(makers[inv.name], inv.args)
        span = index.span(inv.start, inv.end)
        launched = [(m.group(1), m.group(2)) for m in _EXEC_IN_MACRO.finditer(body)]
        for sub in invocations(body, STUB_MACROS):
            if len(sub.args) < 2:
                continue
            fn = sub.args[1].lstrip("&").strip().split("::")[-1]
            facts.stub_registrations.append(StubRegistration(sub.name, sub.args[0], fn, span))
            for call, name in launched:
                facts.kernel_refs.append(KernelRef("op", re.escape(name), name, True, fn, span, call))


def _impl_macros(facts: HostFacts, clean: str, index: LineIndex) -> None:
    makers = {name: d for name, d in facts.defines.items() if d.params and _IMPL_MACRO_BODY.search(d.body)}
    if not makers:
        return
    rx = re.compile("|".join(re.escape(n) for n in makers))
    for inv in invocations(clean, rx):
        if _in_define(facts.defines, inv.start):
            continue
        d = makers[inv.name]
        body = expand(d, inv.args)
        for m in _IMPL_MACRO_BODY.finditer(body):
            name = re.sub(r"\s+", "", m.group(1))
            facts.impl_macros.append(ImplMacro(name, inv.name, index.span(inv.start, inv.end), bool(_MPSGRAPH.search(d.body))))


def _string_pattern(expr: str, fn: Function, depth: int = 0, funcs: dict | None = None, at: int | None = None) -> tuple[str, str, bool] | None:
    """Turn a kernel-name expression into (regex, literal prefix, exact).

    ``funcs`` (the file's functions by name) lets a name come from a helper's ``return`` statements
    (``gemv_name(dt, nw)``); a conditional ``c ? a : b`` gives an alternation of both names. ``at`` (the
    offset of the use) picks, among locals of the same name in different blocks, the last one declared before it.
    """
    expr = expr.strip()
    if depth > 7:
        return None
    inner = _objc_string_operand(expr)
    if inner is not None:  # [NSString stringWithUTF8String:name.c_str()], @(name.c_str()), name.c_str()
        return _string_pattern(inner, fn, depth + 1, funcs, at)
    fmt = _objc_format(expr)
    if fmt is not None:  # [NSString stringWithFormat:@"gemv_%s", type]: the format's literal parts
        return _concat([(re.escape(p), p, True) if p is not None else None for p in fmt])
    tern = _split_ternary(expr)
    if tern is not None:
        return _alternation([_string_pattern(t, fn, depth + 1, funcs, at) for t in tern])
    gm = re.fullmatch(r"std::get\s*<\s*(\d+)\s*>\s*\(\s*([A-Za-z_]\w*)\s*\)", expr)
    if gm and funcs:  # std::get<0>(name_and_launcher) where the tuple comes from a helper's `return std::make_tuple(...)`
        return _tuple_element(int(gm.group(1)), gm.group(2), fn, depth, funcs, at)
    cm = re.fullmatch(r"([A-Za-z_]\w*)\s*(?:<[^<>()]*>)?\s*\((.*)\)", expr, re.S)
    if cm and funcs and cm.group(1) in funcs and cm.group(1) != fn.name and cm.group(1) not in ("format", "string"):
        helper = funcs[cm.group(1)]
        rets = [st.text[len("return"):].strip().rstrip(";").strip() for st in helper.stmts if st.kind == "return_statement"]
        rets = [r for r in rets if r]
        if rets:
            return _alternation([_string_pattern(r, helper, depth + 1, funcs) for r in rets])
    mm = re.fullmatch(r"(?:[A-Za-z_]\w*(?:<[^<>]*>)?::)+([A-Za-z_]\w*)", expr)
    if mm and funcs is not None and mm.group(1) in _STATIC_STRINGS.get(id(funcs), {}):
        # LowBitConfig<nbit>::func_prefix: every `static constexpr ... func_prefix = "..."` of the file
        return _alternation([(re.escape(v), v, True) for v in _STATIC_STRINGS[id(funcs)][mm.group(1)]])
    m = re.fullmatch(r'"((?:[^"\\]|\\.)*)"', expr)
    if m:
        return re.escape(m.group(1)), m.group(1), True
    fm = re.fullmatch(r"(?:fmt::|std::)?format\s*\((.*)\)", expr, re.S)
    if fm:
        from .macros import split_args

        inner = fm.group(1)
        parts = [inner[a:b].strip() for a, b in split_args(inner, 0, len(inner))]
        if not parts:
            return None
        fmt = re.fullmatch(r'"((?:[^"\\]|\\.)*)"', parts[0])
        if not fmt:
            return None
        pieces = re.split(r"\{[^}]*\}", fmt.group(1))
        args = parts[1:]
        parts: list[tuple[str, str, bool] | None] = []
        for k, piece in enumerate(pieces):
            parts.append((re.escape(piece), piece, True))
            if k < len(pieces) - 1:
                parts.append(_string_pattern(args[k], fn, depth + 1, funcs, at) if k < len(args) else None)
        return _concat(parts)
    if "+" in expr:
        terms = _split_plus(expr)
        if len(terms) > 1:
            return _concat([_string_pattern(t, fn, depth + 1, funcs, at) for t in terms])
    sm = re.fullmatch(r"(?:std::)?string\s*\((.*)\)", expr)
    if sm:
        return _string_pattern(sm.group(1), fn, depth + 1, funcs, at)
    if re.fullmatch(r"[A-Za-z_]\w*", expr):
        for d in reversed(fn.decls):
            if d.name == expr and d.init is not None and (at is None or d.span.start < at):
                init = d.init.text
                if init.startswith("{") and init.endswith("}"):
                    init = init[1:-1]
                if init.startswith("(") and init.endswith(")"):
                    init = init[1:-1]
                return _string_pattern(init, fn, depth + 1, funcs, d.span.start)
        assigned = [a.rhs.text for a in fn.assigns if a.lhs == expr and a.op == "=" and (at is None or a.span.start < at)]
        if assigned:  # `std::string name; if (...) name = "a"; else name = "b";`
            return _alternation([_string_pattern(t, fn, depth + 1, funcs, at) for t in assigned])
        return _from_callers(expr, fn, depth, funcs)
    return None


_STATIC_STRINGS: dict[int, dict[str, list[str]]] = {}  # id(funcs) -> member -> literals, while one file's refs are read
_STATIC_MEMBER = re.compile(r'\bstatic\s+(?:constexpr\s+|const\s+|inline\s+)*[\w:<>]*\s+([A-Za-z_]\w*)\s*=\s*"((?:[^"\\]|\\.)*)"')
_NSSTRING_WRAP = re.compile(r"NSString\s*\.\s*stringWithUTF8String\s*\((.*)\)|NSString\s*\.\s*stringWithCString\s*\((.*?),[^,()]*\)", re.S)
_NSSTRING_FORMAT = re.compile(r'NSString\s*\.\s*stringWithFormat\s*\(\s*"((?:[^"\\]|\\.)*)"', re.S)


def static_strings(text: str) -> dict[str, list[str]]:
    """``static constexpr std::string_view func_prefix = "int4pack_mm_";`` in every specialization: name -> values."""
    out: dict[str, list[str]] = {}
    for m in _STATIC_MEMBER.finditer(text):
        if m.group(2) not in out.setdefault(m.group(1), []):
            out[m.group(1)].append(m.group(2))
    return out


def _objc_string_operand(expr: str) -> str | None:
    """The C/C++ string inside an Objective-C string conversion (after masking): ``NSString.stringWithUTF8String(x)``,
    ``@(x)`` (masked to ``(x)``), and ``x.c_str()`` / ``x.data()``."""
    m = _NSSTRING_WRAP.fullmatch(expr)
    if m:
        return (m.group(1) or m.group(2)).strip()
    m = re.fullmatch(r"(.+?)\s*(?:\.|->)\s*(?:c_str|data)\s*\(\s*\)", expr, re.S)
    if m:
        return m.group(1).strip()
    if expr.startswith("(") and expr.endswith(")") and _balanced(expr[1:-1]):
        return expr[1:-1].strip()
    return None


def _balanced(text: str) -> bool:
    depth = 0
    for ch in text:
        depth += ch == "("
        depth -= ch == ")"
        if depth < 0:
            return False
    return depth == 0


def _objc_format(expr: str) -> list[str | None] | None:
    """``NSString.stringWithFormat("k_%s_%d", ...)`` -> ["k_", None, "_", None, ""] (None: a run-time part)."""
    m = _NSSTRING_FORMAT.match(expr)
    if not m or not expr.endswith(")"):
        return None
    out: list[str | None] = []
    for k, piece in enumerate(re.split(r"%[-+ #0-9.]*(?:l{0,2}|h{0,2}|z|q)?[sdiuxX@]", m.group(1))):
        if k:
            out.append(None)
        out.append(piece)
    return out


def _tuple_element(k: int, name: str, fn: Function, depth: int, funcs: dict, at: int | None):
    """Element ``k`` of a local tuple initialised from a file helper that returns ``std::make_tuple(...)``s."""
    from .macros import split_args

    init = next((d.init.text for d in reversed(fn.decls) if d.name == name and d.init is not None and (at is None or d.span.start < at)), None)
    cm = re.fullmatch(r"([A-Za-z_]\w*)\s*(?:<[^<>()]*>)?\s*\((.*)\)", init or "", re.S)
    if not cm or cm.group(1) not in funcs:
        return None
    helper = funcs[cm.group(1)]
    pats = []
    for st in helper.stmts:
        if st.kind != "return_statement":
            continue
        ret = st.text[len("return"):].strip().rstrip(";").strip()
        tm = re.fullmatch(r"(?:std::)?(?:make_tuple|make_pair|tuple\s*<[^()]*>|pair\s*<[^()]*>)\s*\((.*)\)|\{(.*)\}", ret, re.S)
        if not tm:
            return None
        inner = tm.group(1) if tm.group(1) is not None else tm.group(2)
        parts = [inner[a:b].strip() for a, b in split_args(inner, 0, len(inner))]
        if len(parts) <= k:
            return None
        pats.append(_string_pattern(parts[k], helper, depth + 1, funcs))
    return _alternation(pats)


def _from_callers(param: str, fn: Function, depth: int, funcs: dict | None) -> tuple[str, str, bool] | None:
    """A string parameter named by the callers in the file: ``scan_impl(self, dim, "cumsum")`` -> ``cumsum``.

    Every call of ``fn`` in the file must pass something resolvable at that position; otherwise None.
    """
    if not funcs or depth > 3:
        return None
    idx = next((i for i, p in enumerate(fn.params) if p.name == param), None)
    if idx is None or not re.search(r"\bstring\b|\bchar\s*\*|string_view|NSString", fn.params[idx].type):
        return None
    pats = []
    for caller in funcs.values():
        if caller is fn:
            continue
        for call in caller.calls:
            if call.name == fn.name and not call.receiver:
                if len(call.args) <= idx:
                    return None
                pats.append(_string_pattern(call.args[idx].text, caller, depth + 1, funcs, call.span.start))
    return _alternation(pats)


def _split_ternary(expr: str) -> list[str] | None:
    """``c ? a : b`` at the top level -> [a, b] (None when ``expr`` is not a conditional)."""
    depth, q = 0, -1
    in_str = False
    for i, ch in enumerate(expr):
        if ch == '"' and (i == 0 or expr[i - 1] != "\\"):
            in_str = not in_str
        elif in_str:
            continue
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and ch == "?" and q < 0:
            q = i
        elif depth == 0 and ch == ":" and q >= 0 and expr[i - 1 : i + 1] != "::" and expr[i : i + 2] != "::":
            return [expr[q + 1 : i], expr[i + 1 :]]
    return None


def _alternation(pats: list[tuple[str, str, bool] | None]) -> tuple[str, str, bool] | None:
    """Either of several names: one regex, the common literal prefix; None if any is unknown."""
    if not pats or any(p is None for p in pats):
        return None
    uniq = list(dict.fromkeys(pats))
    if len(uniq) == 1:
        return uniq[0]
    lits = [p[1] for p in uniq]
    k = 0
    while all(len(x) > k for x in lits) and len({x[k] for x in lits}) == 1:
        k += 1
    # a prefix only counts as literal when every alternative's regex starts with it
    prefix = lits[0][:k]
    if not all(p[0].startswith(re.escape(prefix)) for p in uniq):
        prefix = ""
    return "(?:" + "|".join(p[0] for p in uniq) + ")", prefix, False


def _concat(parts: list[tuple[str, str, bool] | None]) -> tuple[str, str, bool]:
    """Join (regex, literal prefix, exact) pieces; None is a run-time part (``\\w+``) that ends the literal prefix."""
    rx, lit, exact = "", "", True
    for sub in parts:
        if sub is None:
            rx += r"\w+"
            exact = False
            continue
        rx += sub[0]
        if exact:
            lit += sub[1]
        exact = exact and sub[2]
    return rx, lit, exact


def _split_plus(expr: str) -> list[str]:
    terms, depth, start, in_str = [], 0, 0, False
    for i, ch in enumerate(expr):
        if in_str:
            if ch == '"' and expr[i - 1] != "\\":
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        elif ch == "+" and depth == 0:
            terms.append(expr[start:i])
            start = i + 1
    terms.append(expr[start:])
    return [t.strip() for t in terms]


def _pipeline_wrappers(functions: list[Function]) -> dict[str, int]:
    """Functions of the file that hand one of their string parameters to a pipeline getter: name -> index.

    ``quantizedPipelineState(device, kernel)`` whose body asks ``newFunctionWithName:`` for ``kernel``.
    """
    out: dict[str, int] = {}
    for fn in functions:
        strings = [(i, p.name) for i, p in enumerate(fn.params) if p.name and re.search(r"\bstring\b|\bchar\s*\*|NSString", p.type)]
        if not strings:
            continue
        for call in fn.calls:
            if not (_PIPELINE.fullmatch(call.name) or call.name.startswith("newFunctionWithName")) or not call.args:
                continue
            for i, name in strings:
                if re.search(r"(?<![\w.])" + re.escape(name) + r"\b", call.args[0].text):
                    out.setdefault(fn.name, i)
    return out


def _names_own_param(fn: Function, text: str) -> bool:
    """``text`` mentions one of ``fn``'s string parameters (a wrapper passing its caller's kernel name on)."""
    return any(p.name and re.search(r"(?<![\w.])" + re.escape(p.name) + r"\b", text) for p in fn.params
               if re.search(r"\bstring\b|\bchar\s*\*|string_view|NSString", p.type))


def wrapper_refs(facts: HostFacts, wrappers: dict[str, int]) -> list[KernelRef]:
    """Kernel names this file hands to pipeline wrappers defined in other files
    (``MPSComputeEnvironment::Create(@"project_drr")`` with ``Create`` in a shared header)."""
    out: list[KernelRef] = []
    funcs = {f.name: f for f in facts.functions}
    local = facts.pipeline_wrappers
    _STATIC_STRINGS[id(funcs)] = facts.static_strings
    try:
        for fn in facts.functions:
            for call in fn.calls:
                k = wrappers.get(call.name)
                if k is None or call.name in local or call.name == fn.name or len(call.args) <= k:
                    continue
                arg = call.args[k]
                pat = _string_pattern(arg.text, fn, 0, funcs, call.span.start)
                if pat:
                    out.append(KernelRef("host_name", pat[0], pat[1], pat[2], fn.name, arg.span, call.name))
    finally:
        _STATIC_STRINGS.pop(id(funcs), None)
    return out


def _kernel_refs(facts: HostFacts, fn: Function, funcs: dict | None = None, wrappers: dict | None = None) -> None:
    for call in fn.calls:
        if call.name in ("newFunctionWithName", "newFunctionWithName:constantValues:error:") and call.message_send and call.args:
            # [library newFunctionWithName:@"add" ...]: a Metal function of the project's own library (an embedded
            # metallib, newLibraryWithSource: of a source string, or the default library)
            if wrappers and fn.name in wrappers and _names_own_param(fn, call.args[0].text):
                continue  # the wrapper's callers name the kernel
            pat = _string_pattern(call.args[0].text, fn, 0, funcs, call.span.start)
            if pat:
                facts.kernel_refs.append(KernelRef("host_name", pat[0], pat[1], pat[2], fn.name, call.args[0].span, call.name))
            continue
        if _KERNEL_EXEC.fullmatch(call.name) and len(call.args) >= 2:
            pat = _string_pattern(call.args[1].text, fn, 0, funcs, call.span.start)
            if pat:
                facts.kernel_refs.append(KernelRef("op", pat[0], pat[1], pat[2], fn.name, call.args[1].span, call.name))
        elif _PIPELINE.fullmatch(call.name) and call.args:
            pat = _string_pattern(call.args[0].text, fn, 0, funcs, call.span.start)
            if pat:
                facts.kernel_refs.append(KernelRef("host_name", pat[0], pat[1], pat[2], fn.name, call.args[0].span, call.name))
        elif wrappers and call.name in wrappers and call.name != fn.name and len(call.args) > wrappers[call.name]:
            arg = call.args[wrappers[call.name]]
            pat = _string_pattern(arg.text, fn, 0, funcs, call.span.start)
            if pat:
                facts.kernel_refs.append(KernelRef("host_name", pat[0], pat[1], pat[2], fn.name, arg.span, call.name))


def _dtype_filters(fn: Function) -> list[DtypeFilter]:
    out = []
    for call in fn.calls:
        m = re.fullmatch(r"AT_DISPATCH_(\w+?)(?:_AND(\d))?", call.name)
        if m and m.group(1) in _AT_DISPATCH_SETS:
            base = list(_AT_DISPATCH_SETS[m.group(1)])
            n = int(m.group(2) or 0)
            for a in call.args[:n]:
                t = HOST_DTYPES.get(a.text.split("::")[-1])
                if t:
                    base.append(t)
            out.append(DtypeFilter(tuple(sorted(set(base) - {"double"})), call.span, call.name))
            continue
        if call.name in ("TORCH_CHECK", "TORCH_CHECK_TYPE", "TORCH_CHECK_NOT_IMPLEMENTED") and call.args:
            cond = call.args[0].text
            if "||" in cond or "&&" in cond:
                alts = [c for c in re.split(r"\|\|", cond)]
                types = set()
                ok = True
                for alt in alts:
                    mm = re.search(r"(?:scalar_type\(\)|dtype\(\))\s*==\s*(?:at::|c10::|ScalarType::|at::ScalarType::|kScalarType)*(\w+)", alt)
                    if mm and mm.group(1) in HOST_DTYPES and "&&" not in alt:
                        types.add(HOST_DTYPES[mm.group(1)])
                    else:
                        ok = False
                if ok and types:
                    out.append(DtypeFilter(tuple(sorted(types)), call.span, "TORCH_CHECK"))
                continue
            pm = re.fullmatch(r"(!?)\s*(?:c10::|at::)?(\w+)\((.*)\)", cond)
            if pm and pm.group(2) in _PREDICATES and not pm.group(1):
                types = set(_PREDICATES[pm.group(2)])
                if pm.group(2) == "isIntegralType" and re.search(r",\s*(/\*.*\*/)?\s*true\s*$", pm.group(3)):
                    types.add("bool")
                out.append(DtypeFilter(tuple(sorted(types - {"double"})), call.span, "TORCH_CHECK"))
    return out
