"""
## What it does
Compares what a host launch writes with `[enc setBytes:p length:n atIndex:k]` (or, for arrays, PyTorch's
`mtl_setArgs(enc, ...)` / `mtl_setBytes(enc, x, k)`, which copy `sizeof(x)`; scalars bound that way are
DSP312's) with what the launched kernel
reads from its `constant` parameter `[[buffer(k)]]` (the kernel its `newFunctionWithName:` /
pipeline-state name resolves to). Flags:
- a kernel that reads more than the host writes: `constant uint3& sizes` (16 bytes: Metal's `uint3`
  is padded to four elements) bound with the 12 bytes of a `std::array<uint32_t, 3>`, or
  `constant uint* sizes` read at `sizes[3]` when the host wrote 3 values;
- a `length:` larger than the host object it copies from (`length:16` from a 12-byte
  `std::array<uint32_t, 3>`).
The host object must be a local `std::array<T, N>`, C array or scalar, the length a literal or
`sizeof(...)` arithmetic, and every kernel the name selects must agree on the parameter.

## Why is this bad?
`setBytes:length:` copies exactly `length` bytes; whatever the kernel reads beyond them is
undefined (stale constant memory — wrong shapes, strides or sizes with no error), and Metal's
validation layer rejects the launch ("argument has a length(16)", buffer "has space for 12 bytes").
Copying more bytes than the host object holds reads past it on the host stack.

## Example
```objc
std::array<uint32_t, 3> sizes = {M, K, N};       // kernel: constant uint3& sizes [[buffer(4)]]
[enc setBytes:sizes.data() length:sizeof(uint32_t) * sizes.size() atIndex:4];
```

## Use instead
```objc
std::array<uint32_t, 4> sizes = {M, K, N, 0};    // uint3 occupies 16 bytes
[enc setBytes:sizes.data() length:sizeof(uint32_t) * sizes.size() atIndex:4];
```

## How to fix
Make the host object as large as the kernel parameter (pad a `uint3` to four values), pass
`sizeof` of the object as the length, or declare the kernel parameter as `packed_uint3` / an array
of the length the host writes.

Guide: *Writing a Metal kernel* (argument buffers and `setBytes`).
"""

from __future__ import annotations

import re

from mpslint.semantic import extflow
from mpslint.model import Severity
from mpslint.rule import Rule

SIZES = {
    "char": 1, "uchar": 1, "int8_t": 1, "uint8_t": 1, "bool": 1,
    "short": 2, "ushort": 2, "half": 2, "bfloat": 2, "int16_t": 2, "uint16_t": 2,
    "int": 4, "uint": 4, "unsigned": 4, "float": 4, "int32_t": 4, "uint32_t": 4, "unsigned int": 4,
    "long": 8, "ulong": 8, "int64_t": 8, "uint64_t": 8, "double": 8, "size_t": 8,
}
_VEC = re.compile(r"(packed_)?(char|uchar|short|ushort|int|uint|long|ulong|half|float|bfloat)([234])")


def metal_size(type_: str) -> int | None:
    t = type_.replace("const", "").strip()
    m = _VEC.fullmatch(t)
    if m:
        n = int(m.group(3))
        return SIZES[m.group(2)] * (n if m.group(1) or n != 3 else 4)
    return SIZES.get(t)


def host_object(fn, ptr: str, text_of_decl) -> tuple[str, str, int] | None:
    """(name, description, bytes) of the local a ``setBytes:`` pointer points at."""
    m = re.fullmatch(r"&?\s*([A-Za-z_]\w*)(?:\s*\.\s*data\s*\(\s*\)|\s*\[\s*0\s*\])?", ptr.strip())
    if not m:
        return None
    name = m.group(1)
    d = next((d for d in reversed(fn.decls) if d.name == name), None)
    if d is None:
        return None
    am = re.fullmatch(r"(?:const\s+|constexpr\s+|static\s+)*std::array\s*<\s*([\w ]+?)\s*,\s*(\d+)\s*>", d.type.strip())
    if am and am.group(1) in SIZES:
        return name, f"std::array<{am.group(1)}, {am.group(2)}>", SIZES[am.group(1)] * int(am.group(2))
    base = re.sub(r"^(?:const\s+|constexpr\s+|static\s+)+", "", d.type.strip())
    if base in SIZES:
        if d.array:
            cm = re.search(re.escape(name) + r"\s*\[\s*(\d+)\s*\]", text_of_decl(d))
            if not cm:
                return None
            return name, f"{base}[{cm.group(1)}]", SIZES[base] * int(cm.group(1))
        if ptr.strip().startswith("&"):
            return name, base, SIZES[base]
    return None


def length_bytes(text: str, obj: tuple[str, str, int] | None, fn) -> int | None:
    t = re.sub(r"\s+", "", text)
    if re.fullmatch(r"\d+[uUlL]*", t):
        return int(re.match(r"\d+", t).group(0))
    if obj is not None and t in (f"sizeof({obj[0]})", f"sizeof({obj[0]}[0])*{obj[0]}.size()"):
        return obj[2]
    m = re.fullmatch(r"sizeof\(([\w:]+)\)\*(\w+)(?:\.size\(\))?|(\w+)(?:\.size\(\))?\*sizeof\(([\w:]+)\)", t)
    if m:
        ty = (m.group(1) or m.group(4)).split("::")[-1]
        count = m.group(2) or m.group(3)
        if ty not in SIZES:
            return None
        if count.isdigit():
            return SIZES[ty] * int(count)
        if obj is not None and count == obj[0] and ".size()" in t:
            return obj[2]
    return None


class ConstantBufferOverread(Rule):
    code = "DSP310"
    name = "constant-buffer-overread"
    severity = Severity.ERROR
    scope = "dispatch"
    contexts = ("pytorch", "extension")
    summary = "Kernel reads more of a setBytes constant than the host writes (or the host copies past its object)"
    guide = "Writing a Metal kernel"

    def check(self, ctx):
        graph = ctx.graph
        for impl, a, fn, kernels in extflow.host_launches(graph):
            path = a["path"]
            for span, slot, ptr, length in self._byte_bindings(fn):
                obj = host_object(fn, ptr, lambda d: ctx.source(path, d.span))
                if length is None and (obj is None or "[" not in obj[1] and "<" not in obj[1]):
                    continue  # a scalar through mtl_setArgs / mtl_setBytes: its width and kind are DSP312's
                n = length_bytes(length, obj, fn) if length is not None else (obj[2] if obj is not None else None)
                if n is None:
                    continue
                need = self._kernel_reads(kernels, slot)
                if obj is not None and n > obj[2]:
                    grow = (f"make `{obj[0]}` {need[0]} bytes ({need[1]} in `{need[2]}`) and pass `sizeof({obj[0]})`" if need and need[0] > obj[2]
                            else f"pass `sizeof({obj[0]})`")
                    yield ctx.finding(self, path, span,
                                      f"`setBytes:` copies {n} bytes from `{obj[0]}`, a {obj[1]} of {obj[2]} bytes: it reads past "
                                      f"the host object; {grow}.")
                    continue
                if need is None or need[0] <= n:
                    continue
                held = f" (`{obj[0]}`, a {obj[1]})" if obj else ""
                yield ctx.finding(self, path, span,
                                  f"kernel `{need[2]}` needs {need[0]} bytes at [[buffer({slot})]] ({need[1]}) but the host writes {n}"
                                  f"{held}: Metal's validation rejects the launch and what lies past byte {n} is undefined; write "
                                  f"{need[0]} bytes (pad the host object) or read only what is written.",
                                  kernel=need[2])

    @staticmethod
    def _byte_bindings(fn):
        """(span, slot, host expression, length text or None) for ``[enc setBytes:p length:n atIndex:k]`` and for
        PyTorch's ``mtl_setArgs(enc, ...)`` / ``mtl_setBytes(enc, x, k)``, which copy ``sizeof`` the argument."""
        for call in fn.calls:
            b = extflow.slot_binding(call)
            if b is not None and call.name == "setBytes":
                yield call.args[1].span, b[0], b[1], b[2]
            elif call.name == "mtl_setBytes" and not call.message_send and len(call.args) >= 3:
                m = re.fullmatch(r"\s*(\d+)\s*", call.args[2].text)
                if m:
                    yield call.args[1].span, int(m.group(1)), "&" + call.args[1].text.strip(), None
            elif call.name == "mtl_setArgs" and not call.message_send and len(call.args) >= 2:
                base = re.fullmatch(r"\s*(\d*)\s*", call.template or "")
                if base is None:
                    continue
                for k, arg in enumerate(call.args[1:]):
                    if re.fullmatch(r"[A-Za-z_]\w*", arg.text.strip()):
                        yield arg.span, int(base.group(1) or 0) + k, "&" + arg.text.strip(), None

    @staticmethod
    def _kernel_reads(kernels, slot: int) -> tuple[int, str, str] | None:
        """(bytes, what, kernel) the kernels read from ``slot``; None unless every kernel reads a known amount."""
        reads = []
        for k in kernels:
            bp = next((b for b in k.buffers if b.index == slot), None)
            if bp is None:
                return None
            t = bp.type.strip()
            if t.endswith("&"):
                size = metal_size(t[:-1])
                if size is None:
                    return None
                reads.append((size, f"`{t[:-1].strip()}& {bp.name}` is {size} bytes", k.name))
            elif t.endswith("*"):
                size = metal_size(t[:-1])
                idx = []
                for s in k.function.subscripts:
                    if s.array != bp.name:
                        continue
                    m = re.fullmatch(r"\s*(\d+)\s*[uU]?\s*", s.index.text)
                    if not m:
                        return None  # a computed index: not judged
                    idx.append(int(m.group(1)))
                if size is None or not idx:
                    return None
                top = max(idx)
                reads.append(((top + 1) * size, f"it reads `{bp.name}[{top}]`", k.name))
            else:
                return None
        if not reads or len({r[0] for r in reads}) != 1:
            return None
        return reads[0]
