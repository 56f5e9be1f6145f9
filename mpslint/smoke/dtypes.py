"""Metal type names <-> c10::metal::ScalarType codes <-> element sizes <-> torch dtypes.

The ScalarType codes are those of `C10_METAL_ALL_TYPES_FUNCTOR` in c10/metal/common.h (they equal
c10::ScalarType's numbering).  torch is imported lazily: this module is usable without it.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MetalDType:
    name: str            # Metal spelling used in host names: "float", "half", "bfloat", "long", ...
    code: int            # c10::metal::ScalarType value
    size: int            # bytes per element
    kind: str            # "float" | "int" | "uint" | "bool" | "complex"
    torch_name: str      # attribute of the torch module


_TABLE = [
    MetalDType("uchar", 0, 1, "uint", "uint8"),
    MetalDType("char", 1, 1, "int", "int8"),
    MetalDType("short", 2, 2, "int", "int16"),
    MetalDType("int", 3, 4, "int", "int32"),
    MetalDType("long", 4, 8, "int", "int64"),
    MetalDType("half", 5, 2, "float", "float16"),
    MetalDType("float", 6, 4, "float", "float32"),
    MetalDType("half2", 8, 4, "complex", "complex32"),
    MetalDType("float2", 9, 8, "complex", "complex64"),
    MetalDType("bool", 11, 1, "bool", "bool"),
    MetalDType("bfloat", 15, 2, "float", "bfloat16"),
    MetalDType("ushort", 27, 2, "uint", "uint16"),
    MetalDType("uint", 28, 4, "uint", "uint32"),
    MetalDType("ulong", 29, 8, "uint", "uint64"),
]
BY_NAME: dict[str, MetalDType] = {d.name: d for d in _TABLE}
# aliases that appear in kernel sources / host names
for _alias, _name in {"uint8_t": "uchar", "int8_t": "char", "int16_t": "short", "int32_t": "int",
                      "int64_t": "long", "uint16_t": "ushort", "uint32_t": "uint", "uint64_t": "ulong",
                      "float16_t": "half", "bfloat16_t": "bfloat", "unsigned": "uint",
                      "signed char": "char", "unsigned char": "uchar"}.items():
    BY_NAME[_alias] = BY_NAME[_name]
BY_CODE: dict[int, MetalDType] = {d.code: d for d in _TABLE}
NAMES = sorted({d.name for d in _TABLE}, key=len, reverse=True)


def lookup(name: str) -> MetalDType | None:
    return BY_NAME.get(name.strip())


def to_torch(d: MetalDType):
    import torch
    return getattr(torch, d.torch_name)


def from_torch(dtype) -> MetalDType | None:
    s = str(dtype).replace("torch.", "")
    for d in _TABLE:
        if d.torch_name == s:
            return d
    return None


def split_dtype_suffix(text: str, count: int) -> list[str] | None:
    """Split the trailing `count` dtype names off `text` ("foo_float_half" -> ["float", "half"])."""
    parts = text.split("_")
    if len(parts) < count:
        return None
    tail = parts[-count:]
    return tail if all(p in BY_NAME for p in tail) else None
