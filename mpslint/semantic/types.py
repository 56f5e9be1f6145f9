"""C++ and MSL types for what the rules need: integer widths and signedness, floats, vectors, pointers, tensors.

``parse_type`` reads a declared type's text (qualifiers, address spaces, references and namespaces dropped;
typedefs resolved through a table); ``promote``, ``arith`` and ``common`` apply the integer promotions, the usual
arithmetic conversions and the ``?:`` rule; ``literal_type`` gives an integer or floating literal's type from its
value and suffix. Host code is LP64 (``long`` is 64-bit, as on macOS); MSL's ``long`` is 64-bit too.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from .expressions import int_literal


@dataclass(frozen=True)
class CType:
    kind: str  # int | bool | float | ptr | vector | tensor | iter | container | struct | unknown
    bits: int = 0
    signed: bool = True
    name: str = ""
    elem: "CType | None" = None  # pointee, vector component, container element
    count: int = 0  # vector width, std::array extent

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "bool")

    @property
    def is_arith(self) -> bool:
        return self.kind in ("int", "bool", "float")

    def max(self) -> int | None:
        if self.kind == "bool":
            return 1
        if self.kind != "int":
            return None
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1

    def min(self) -> int | None:
        if self.kind == "bool":
            return 0
        if self.kind != "int":
            return None
        return -(1 << (self.bits - 1)) if self.signed else 0

    def __str__(self) -> str:
        return self.name or self.kind


def _int(name: str, bits: int, signed: bool) -> CType:
    return CType("int", bits, signed, name)


BOOL = CType("bool", 1, False, "bool")
INT8, UINT8 = _int("int8_t", 8, True), _int("uint8_t", 8, False)
INT16, UINT16 = _int("int16_t", 16, True), _int("uint16_t", 16, False)
INT32, UINT32 = _int("int", 32, True), _int("uint32_t", 32, False)
INT64, UINT64 = _int("int64_t", 64, True), _int("uint64_t", 64, False)
SIZE_T = _int("size_t", 64, False)
HALF, BFLOAT = CType("float", 16, True, "half"), CType("float", 16, True, "bfloat")
FLOAT, DOUBLE = CType("float", 32, True, "float"), CType("float", 64, True, "double")
UNKNOWN = CType("unknown")
TENSOR = CType("tensor", name="Tensor")
ITER = CType("iter", name="TensorIteratorBase")
INT_ARRAY = CType("container", name="IntArrayRef", elem=INT64)

SCALARS: dict[str, CType] = {
    "bool": BOOL, "BOOL": BOOL,
    "char": INT8, "signed char": INT8, "int8_t": INT8, "int8": INT8,
    "uchar": UINT8, "unsigned char": UINT8, "uint8_t": UINT8, "uint8": UINT8,
    "short": INT16, "short int": INT16, "signed short": INT16, "int16_t": INT16, "int16": INT16,
    "ushort": UINT16, "unsigned short": UINT16, "unsigned short int": UINT16, "uint16_t": UINT16, "uint16": UINT16,
    "int": INT32, "signed": INT32, "signed int": INT32, "int32_t": INT32, "int32": INT32,
    "uint": _int("uint", 32, False), "unsigned": _int("unsigned", 32, False), "unsigned int": _int("unsigned int", 32, False),
    "uint32_t": UINT32, "uint32": UINT32,
    "long": _int("long", 64, True), "long int": _int("long", 64, True), "long long": _int("long long", 64, True),
    "long long int": _int("long long", 64, True), "int64_t": INT64, "int64": INT64, "ptrdiff_t": _int("ptrdiff_t", 64, True),
    "intptr_t": _int("intptr_t", 64, True), "ssize_t": _int("ssize_t", 64, True), "NSInteger": _int("NSInteger", 64, True),
    "SymInt": _int("SymInt", 64, True),
    "ulong": _int("ulong", 64, False), "unsigned long": _int("unsigned long", 64, False),
    "unsigned long long": _int("unsigned long long", 64, False), "uint64_t": UINT64, "uint64": UINT64,
    "size_t": SIZE_T, "uintptr_t": _int("uintptr_t", 64, False), "NSUInteger": _int("NSUInteger", 64, False),
    "half": HALF, "bfloat": BFLOAT, "bfloat16_t": BFLOAT, "float16_t": HALF, "Half": HALF, "BFloat16": BFLOAT,
    "float": FLOAT, "float32_t": FLOAT, "double": DOUBLE, "opmath_t": FLOAT, "accscalar_t": FLOAT,
}
_VECTOR = re.compile(r"^(bool|char|uchar|short|ushort|int|uint|long|ulong|half|bfloat|float)([234])$")
_PACKED = re.compile(r"^packed_(char|uchar|short|ushort|int|uint|half|float)([234])$")
_QUALIFIERS = {
    "const", "constexpr", "static", "volatile", "inline", "thread", "device", "constant", "threadgroup",
    "threadgroup_imageblock", "ray_data", "object_data", "register", "mutable", "extern", "typename", "struct",
    "class", "__restrict", "restrict", "__strong", "__weak", "METAL_FUNC", "C10_HOST_DEVICE", "C10_UNUSED",
    "[[maybe_unused]]",
}
_NAMESPACES = ("std::", "c10::metal::", "c10::", "at::native::mps::", "at::native::", "at::mps::", "at::", "metal::", "torch::", "::")
_TENSOR_NAMES = {"Tensor", "TensorBase", "OptionalTensorRef", "TensorArg", "MaybeOwned<Tensor>", "TensorList", "ITensorListRef"}
_NOT_TENSORS = {"TensorOptions", "TensorImpl", "TensorGeometry"}
_ITER_NAMES = {"TensorIterator", "TensorIteratorBase", "TensorIteratorConfig"}
_ARRAYREF = {"IntArrayRef", "SymIntArrayRef", "DimVector", "SymDimVector", "DimnameList", "OptionalIntArrayRef"}
_CONTAINERS = re.compile(r"^(vector|array|SmallVector|ArrayRef|initializer_list|optional|span|deque|list)\s*<(.*)>$")


def _split_targs(s: str) -> list[str]:
    depth, cur, out = 0, "", []
    for ch in s:
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        depth += ch in "<([{"
        depth -= ch in ">)]}"
        cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


@functools.lru_cache(maxsize=8192)
def clean_type(text: str) -> str:
    """``const uint32_t&`` -> ``uint32_t``: qualifiers, address spaces, references and known namespaces dropped."""
    t = re.sub(r"\[\[[^\]]*\]\]", " ", text)
    t = t.replace("&", " ").strip()
    words = [w for w in t.split() if w not in _QUALIFIERS]
    t = " ".join(words)
    for ns in _NAMESPACES:
        t = t.replace(ns, "") if t.startswith(ns) or (" " + ns) in t or ("<" + ns) in t else t
    return re.sub(r"\s*([<>,*])\s*", r"\1", t).strip()


def parse_type(text: str, typedefs: dict[str, str] | None = None, _depth: int = 0) -> CType:
    """The type a declaration's type text names; unknown when it names nothing mpslint models."""
    if not text or _depth > 8:
        return UNKNOWN
    t = clean_type(text)
    if not t or t in ("auto", "decltype(auto)", "T", "U", "scalar_t", "void"):
        return UNKNOWN if t != "auto" else CType("unknown", name="auto")
    if t.endswith("*"):
        return CType("ptr", 64, False, t, elem=parse_type(t[:-1], typedefs, _depth + 1))
    if t in SCALARS:
        return SCALARS[t]
    m = _VECTOR.match(t) or _PACKED.match(t)
    if m:
        return CType("vector", name=t, elem=SCALARS[m.group(1)], count=int(m.group(2)))
    m = re.match(r"^vec<(\w+),(\d+)>$", t)
    if m and m.group(1) in SCALARS:
        return CType("vector", name=t, elem=SCALARS[m.group(1)], count=int(m.group(2)))
    if t in _TENSOR_NAMES or t.startswith("MaybeOwned<") or (t.startswith("Tensor") and t not in _NOT_TENSORS):
        if t in _ITER_NAMES:
            return ITER
        return TENSOR if not t.startswith("TensorIterator") else ITER
    if t in _ITER_NAMES:
        return ITER
    if t in _ARRAYREF:
        return INT_ARRAY
    m = _CONTAINERS.match(t)
    if m:
        args = _split_targs(m.group(2))
        elem = parse_type(args[0], typedefs, _depth + 1) if args else UNKNOWN
        count = 0
        if m.group(1) == "array" and len(args) > 1:
            lit = int_literal(args[1])
            count = lit[0] if lit else 0
        return CType("container", name=t, elem=elem, count=count)
    if typedefs:
        alias = typedefs.get(t)
        if alias is not None and alias != text:
            return parse_type(alias, typedefs, _depth + 1)
    return CType("struct", name=t) if re.fullmatch(r"[A-Za-z_]\w*(<.*>)?", t) else UNKNOWN


def holds_tensor(t: CType, _depth: int = 0) -> bool:
    """A tensor or an iterator, or a pointer to, container of or template over one (``std::vector<Tensor>``,
    ``c10::List<Tensor>``, ``const Tensor*``)."""
    if _depth > 8:
        return False
    if t.kind in ("tensor", "iter"):
        return True
    if t.elem is not None and holds_tensor(t.elem, _depth + 1):
        return True
    if t.kind == "struct" and "<" in t.name and t.name.endswith(">"):
        inner = t.name[t.name.index("<") + 1 : -1]
        return any(holds_tensor(parse_type(a), _depth + 1) for a in _split_targs(inner))
    return False


# --------------------------------------------------------------------------- conversions
def _rank(t: CType) -> int:
    return {1: 0, 8: 1, 16: 2, 32: 3, 64: 4}.get(t.bits, 3)


def promote(t: CType) -> CType:
    """Integer promotion: bool, 8- and 16-bit integers become ``int``."""
    if t.kind == "bool" or (t.kind == "int" and t.bits < 32):
        return INT32
    return t


def arith(a: CType, b: CType) -> CType:
    """The usual arithmetic conversions of a binary operator's operands."""
    if a.kind == "vector" or b.kind == "vector":
        return a if a.kind == "vector" else b
    if not (a.is_arith and b.is_arith):
        return UNKNOWN
    if a.kind == "float" or b.kind == "float":
        fa = a if a.kind == "float" else None
        fb = b if b.kind == "float" else None
        if fa and fb:
            return fa if fa.bits >= fb.bits else fb
        return fa or fb
    a, b = promote(a), promote(b)
    if a.signed == b.signed:
        return a if _rank(a) >= _rank(b) else b
    u, s = (a, b) if not a.signed else (b, a)
    if _rank(u) >= _rank(s):
        return u
    if s.bits > u.bits:
        return s
    return _int("unsigned " + s.name, s.bits, False)


def common(a: CType, b: CType) -> CType:
    """The type of ``c ? a : b``."""
    if a.kind == "unknown":
        return b
    if b.kind == "unknown":
        return a
    if a.is_arith and b.is_arith:
        return arith(a, b)
    return a


def literal_type(text: str) -> CType:
    """Type of an integer literal by value and suffix (C++ [lex.icon]); floats by suffix."""
    lit = int_literal(text)
    if lit is None:
        s = text.strip().lower()
        if s.endswith("h"):
            return HALF
        if s.endswith("f"):
            return FLOAT
        return DOUBLE
    v, suf = lit
    decimal = not text.strip().lower().startswith(("0x", "0b")) and not (len(text.strip()) > 1 and text.strip()[0] == "0")
    unsigned = "u" in suf
    longs = suf.count("l")
    cands: list[CType] = []
    if longs == 0:
        cands = [UINT32, UINT64] if unsigned else ([INT32, INT64] if decimal else [INT32, UINT32, INT64, UINT64])
    else:
        cands = [UINT64] if unsigned else ([INT64] if decimal else [INT64, UINT64])
    for c in cands:
        if v <= c.max():
            return c
    return UINT64


def fits(lo: int, hi: int, t: CType) -> bool:
    mx, mn = t.max(), t.min()
    return mx is not None and mn is not None and mn <= lo and hi <= mx
