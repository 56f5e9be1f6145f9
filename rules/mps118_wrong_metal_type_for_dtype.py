"""
## What it does
Flags a table that pairs a PyTorch dtype with a Metal type name of another width, signedness or kind:
`{c10::ScalarType::Byte, "char"}` (uint8 as a signed char), `{kInt, "uint"}`, `{at::kFloat, "half"}`,
`{ScalarType::Long, "int"}`. The pairs are brace initialisers of a map or array whose first element is a
`ScalarType` (`c10::ScalarType::X`, `ScalarType::X`, `at::kX`, `kX`) and whose second is a string literal that
names a Metal scalar type. `bool` may be carried by any 8-bit integer type (`{kBool, "char"}` is not flagged).

## Why is this bad?
The string names the kernel instantiation the host asks for: the kernel then reads the tensor's bytes as that
type. A `uint8` tensor read as `char` sign-extends: `255 >> 4` gives `-1` (255 after the store) instead of 15
(pytorch/pytorch#144190, fixed by #144251). A narrower type reads the wrong elements; a float type reads
integers' bits. Nothing fails: the results are wrong.

## Example
```cpp
static std::unordered_map<c10::ScalarType, std::string> metal_type = {
    {c10::ScalarType::Byte, "char"},   // uint8 is unsigned
    {c10::ScalarType::Char, "char"},
};
```

## Use instead
```cpp
const auto type = scalarToMetalTypeString(self);   // "uchar" for uint8, "char" for int8
```
or `{c10::ScalarType::Byte, "uchar"}` in the table.

## How to fix
Name the Metal type of the same width and signedness: `uchar`/`char`, `ushort`/`short`, `uint`/`int`,
`ulong`/`long`, `half`, `bfloat`, `float`, `bool`; in PyTorch's own code, `scalarToMetalTypeString` gives them.

Guide: *Supported dtypes* (the kernel is instantiated per dtype; the host must ask for the matching one).
"""

from __future__ import annotations

from mpslint.model import Severity
from mpslint.rule import Rule
from mpslint.semantic.expressions import strip_parens, walk
from mpslint.semantic.types import parse_type

# PyTorch's dtypes as (kind, bits, signed)
_DTYPES = {
    "Byte": ("int", 8, False), "Char": ("int", 8, True), "Short": ("int", 16, True), "Int": ("int", 32, True),
    "Long": ("int", 64, True), "UInt16": ("int", 16, False), "UInt32": ("int", 32, False), "UInt64": ("int", 64, False),
    "Half": ("float", 16, "half"), "BFloat16": ("float", 16, "bfloat"), "Float": ("float", 32, True),
    "Double": ("float", 64, True), "Bool": ("bool", 1, False),
}
_METAL_NAMES = {"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "half", "bfloat", "float", "bool"}
_CANONICAL = {"Byte": "uchar", "Char": "char", "Short": "short", "Int": "int", "Long": "long", "UInt16": "ushort",
              "UInt32": "uint", "UInt64": "ulong", "Half": "half", "BFloat16": "bfloat", "Float": "float", "Bool": "bool"}


def _dtype(n) -> str | None:
    """`c10::ScalarType::Byte`, `ScalarType::Byte`, `at::kByte`, `kByte` -> "Byte"."""
    n = strip_parens(n)
    if n.kind != "id":
        return None
    last = n.op.split("::")[-1]
    if "ScalarType::" in n.op and last in _DTYPES:
        return last
    if last.startswith("k") and last[1:] in _DTYPES:
        return last[1:]
    return None


def _agrees(dtype: str, metal: str) -> bool:
    kind, bits, signed = _DTYPES[dtype]
    t = parse_type(metal, {})
    if kind == "bool":
        return t.kind == "bool" or (t.kind == "int" and t.bits == 8)  # a bool byte carried as any 8-bit integer
    if kind == "float":
        if signed in ("half", "bfloat"):
            return metal == signed
        return t.kind == "float" and t.bits == bits
    return t.kind == "int" and t.bits == bits and t.signed == signed


class WrongMetalTypeForDtype(Rule):
    code = "MPS118"
    name = "wrong-metal-type-for-dtype"
    severity = Severity.ERROR
    scope = "host"
    contexts = ("pytorch", "extension")
    summary = "A dtype paired with a Metal type name of another width, signedness or kind"
    guide = "Supported dtypes"

    def check(self, ctx):
        hosts = ctx.project.hosts
        for path in sorted(hosts):
            for fn in hosts[path].functions:
                trees = [d.init.tree for d in fn.decls if d.init is not None and d.init.tree is not None]
                trees += [s.tree for s in fn.stmts if s.tree is not None]
                seen: set[int] = set()
                for tree in trees:
                    for n in walk(tree):
                        if n.kind != "init" or len(n.kids) != 2 or n.start in seen:
                            continue
                        dtype = _dtype(n.kids[0])
                        lit = strip_parens(n.kids[1])
                        if dtype is None or lit.kind != "str":
                            continue
                        metal = lit.op.strip('"')
                        if metal not in _METAL_NAMES or _agrees(dtype, metal):
                            continue
                        seen.add(n.start)
                        want = _CANONICAL.get(dtype, "")
                        t = parse_type(metal, {})
                        what = "signedness" if (t.kind, t.bits) == _DTYPES[dtype][:2] else "width or kind"
                        yield ctx.finding(
                            self,
                            path,
                            ctx.span(path, lit.start, lit.end),
                            f"`{n.kids[0].text}` is paired with the Metal type `{metal}`, of another {what}: "
                            f"the kernel reads the tensor's elements as `{metal}` (a `uint8` read as `char` sign-extends). "
                            f"Use `\"{want}\"`" + (", or `scalarToMetalTypeString`." if ctx.file_context(path) == "pytorch" else "."),
                        )
