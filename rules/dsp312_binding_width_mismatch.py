"""
## What it does
Compares the type of each value a host launch binds with `mtl_setArgs` / `mtl_setBytes` / `mtl_setArg` with
the `constant` parameter of the kernel's slot it lands in, by width and kind (the semantic model's types, on
both sides: typedefs, `auto`, casts and the PyTorch API resolved). Flags:

- a kernel parameter wider than what the host wrote: `constant long& n` fed an `int` or a `bool`, `constant
  uint& n` fed a `bool` (the kernel reads bytes the host never wrote);
- a different kind of the same or a smaller width: a `float` (or a `double`, which `mtl_setArgs` turns into a
  `float`) read as `constant half&` or as an integer, an integer read as `float`;
- an array whose element width or kind differs from the kernel's pointer: `std::vector<int32_t>` or
  `std::array<int, N>` bound to `constant long* sizes`, `t.sizes()` (int64) bound to `constant uint* sizes`;
- a 64-bit element count, byte count or offset read as a 32-bit integer (`constant uint& numel` fed
  `t.numel()`), as a warning, unless the model proves the value fits: past 2^32 the kernel silently sees the
  low 32 bits. One dimension's size or a count read that way is left alone (little-endian: the low bytes are
  the value for anything a tensor can have).

Templated parameters (`constant T&`), structs, tensors and buffers are not compared, nor arrays read as
vectors (how many elements an array holds for a `constant uint4&` is DSP310's).

## Why is this bad?
`setBytes` copies exactly `sizeof` the host value; Metal does not check it against the parameter. A wider
parameter reads past the bytes written (garbage, or a validation error), a narrower one or another kind
reinterprets the bits (a `float` read as `half` is a different number), and an array of 4-byte elements read
as 8-byte ones pairs each two elements into one value and reads past the end. These bugs survive tests with
small, non-negative values and break with real ones.

## Example
```objc
// kernel void shift_rows(device float* out [[buffer(0)]], constant long* sizes [[buffer(1)]],
//                        constant uint& ndim [[buffer(2)]], ...)
std::vector<int32_t> sizes(out.sizes().begin(), out.sizes().end());
mtl_setArgs(encoder, out, sizes, out.dim());   // 4-byte sizes read as longs; an int64 dim read as uint
```

## Use instead
```objc
mtl_setArgs(encoder, out, out.sizes(), static_cast<uint32_t>(out.dim()));
```

## How to fix
Bind a value of the parameter's exact type (cast on the host: `static_cast<uint32_t>(...)` for a value known
to fit, `c10::checked_convert<uint32_t>(...)` otherwise), or change the kernel's parameter to the type the host
passes. For arrays, copy into a container of the kernel's element type.

Guide: *Working with Large Tensors*; *Working with TensorIterators*.
"""

from __future__ import annotations

from mpslint.semantic.launch_bindings import bound_exprs, single_kernel_launches
from mpslint.model import Severity
from mpslint.rule import Rule
from mpslint.semantic.expressions import strip_parens
from mpslint.semantic.model import semantic_model
from mpslint.semantic.types import FLOAT, CType, fits, parse_type

_BYTES_BINDERS = {"mtl_setArgs", "mtl_setBytes", "mtl_setArg"}


def _host_type(t: CType) -> CType:
    """What `mtl_setArgs` writes for a value of type ``t``: a `double` goes as a `float`."""
    if t.kind == "float" and t.bits == 64:
        return FLOAT
    return t


def _describe(t: CType) -> str:
    return f"{t.name or t.kind}, {max(t.bits // 8, 1)} byte{'s' if t.bits > 8 else ''}"


class BindingWidthMismatch(Rule):
    code = "DSP312"
    name = "binding-width-mismatch"
    severity = Severity.ERROR
    scope = "dispatch"
    summary = "A value bound with setBytes has another width or kind than the kernel parameter that reads it"
    guide = "Working with Large Tensors"

    def check(self, ctx):
        model = semantic_model(ctx.project)
        metal_by_path = {p: lst for p, lst in ctx.project.metals.items()}
        for launch in single_kernel_launches(ctx.graph):
            fn = launch.function
            got = bound_exprs(fn, launch.ref.span.start)
            if got is None:
                continue
            bound, _first = got
            host_facts = ctx.project.hosts.get(launch.attrs.get("path"))
            fm = model.function(fn, host_facts)
            kfacts = next((m for m in metal_by_path.get(launch.kernel_path, []) if launch.kernel.function in m.functions), None)
            typedefs = model.tables_for(kfacts).all_typedefs() if kfacts is not None else model.tables.all_typedefs()
            for k, slot in sorted(launch.slots.items()):
                if k not in bound:
                    continue
                _text, call, arg = bound[k]
                if arg is None or arg.tree is None or call.name not in _BYTES_BINDERS or call.message_send:
                    continue
                problem = self._compare(fm, call.stmt, arg, slot, typedefs)
                if problem is None:
                    continue
                message, severity = problem
                yield ctx.finding(
                    self,
                    launch.attrs["path"],
                    arg.span,
                    f"`{arg.text}` is bound to `{slot.name}` [[buffer({k})]] of kernel `{launch.kernel.name}`, but "
                    + message,
                    severity=severity,
                    kernel=launch.kernel.name,
                )

    @staticmethod
    def _compare(fm, stmt: int, arg, slot, typedefs):
        raw = slot.type.strip()
        ref = raw.endswith("&")
        ptr = raw.endswith("*")
        if not (ref or ptr):
            return None
        kt = parse_type(raw.rstrip("&*").strip(), typedefs)
        if kt.kind not in ("int", "bool", "float") and not (kt.kind == "vector" and ref):
            return None  # a template parameter, a struct: nothing to compare
        ht = fm.type_of(arg.tree, stmt)
        if ptr:
            if ht.kind != "container" or ht.elem is None or ht.elem.kind not in ("int", "bool", "float"):
                return None
            he = _host_type(ht.elem) if ht.elem.kind != "float" else ht.elem
            if he.bits != kt.bits or (he.kind == "float") != (kt.kind == "float"):
                return (
                    f"its elements are {_describe(he)} and the kernel reads `{kt.name}` ({max(kt.bits // 8, 1)} bytes) "
                    f"elements: every element after the first is misread. Copy into a container of `{kt.name}`, or "
                    f"declare the parameter `constant {he.name}*`.",
                    None,
                )
            return None
        if kt.kind == "vector":
            return None  # an array read as a vector: how many elements it holds is DSP310's question
        if ht.kind not in ("int", "bool", "float"):
            return None
        sent_as = "" if _host_type(ht) is ht else f" (a `{ht.name}`, which `mtl_setArgs` sends as a float)"
        ht = _host_type(ht)
        hb, kb = max(ht.bits, 8), max(kt.bits, 8)
        if kb > hb:
            return (
                f"it is {_describe(ht)} and the kernel reads `{kt.name}` ({kb // 8} bytes): the kernel reads bytes the "
                f"host never wrote. Bind a `{kt.name}` (`static_cast<{_host_name(kt)}>({arg.text})`) or declare the "
                f"parameter `constant {_metal_name(ht)}&`.",
                None,
            )
        if (ht.kind == "float") != (kt.kind == "float") or (ht.kind == "float" and kb < hb):
            return (
                f"it is {_describe(ht)}{sent_as} and the kernel reads its bytes as `{kt.name}`: a different number. Bind a "
                f"`{kt.name}` value or declare the parameter `constant {_metal_name(ht)}&`.",
                None,
            )
        if kb < hb and ht.kind == "int":
            if fm.extent(arg.tree, stmt) != "linear":
                return None  # one size, a count, a flag: the low bytes are the value (MPS102 judges dimensions)
            r = fm.range(strip_parens(arg.tree), stmt)
            if r.lo is not None and r.hi is not None and fits(r.lo, r.hi, kt):
                return None
            return (
                f"it is {_describe(ht)} and the kernel reads `{kt.name}` ({kb // 8} bytes): past "
                f"{'2^31' if kt.signed else '2^32'} the kernel silently sees the low bytes. Bind "
                f'`c10::checked_convert<{_host_name(kt)}>({arg.text}, "{_host_name(kt)}")` or declare the parameter '
                f"`constant {_metal_name(ht)}&`.",
                Severity.WARNING,
            )
        return None


_HOST_NAMES = {("int", 32, False): "uint32_t", ("int", 32, True): "int32_t", ("int", 64, True): "int64_t",
               ("int", 64, False): "uint64_t", ("int", 16, False): "uint16_t", ("int", 16, True): "int16_t",
               ("int", 8, False): "uint8_t", ("int", 8, True): "int8_t", ("bool", 1, False): "bool"}
_METAL_NAMES = {("int", 32, False): "uint", ("int", 32, True): "int", ("int", 64, True): "long",
                ("int", 64, False): "ulong", ("int", 16, False): "ushort", ("int", 16, True): "short",
                ("int", 8, False): "uchar", ("int", 8, True): "char", ("bool", 1, False): "bool"}


def _host_name(t: CType) -> str:
    if t.kind == "float":
        return {"half": "c10::Half", "bfloat": "c10::BFloat16"}.get(t.name, "float")
    return _HOST_NAMES.get((t.kind, t.bits, t.signed), t.name)


def _metal_name(t: CType) -> str:
    if t.kind == "float":
        return t.name if t.name in ("half", "bfloat", "float") else "float"
    return _METAL_NAMES.get((t.kind, t.bits, t.signed), t.name)
