"""
## What it does
Flags a kernel parameter in the `threadgroup` address space (`threadgroup float* scratch
[[threadgroup(0)]]`) in Metal source compiled with `torch.mps.compile_shader` — the string passed to
it in a `.py` file, or a raw string in a `.mm` file that is handed to `compile_shader` (Metal that
PyTorch builds with `MetalShaderLibrary`, whose host code sets the threadgroup memory length, is not
flagged).

## Why is this bad?
The kernels of a `compile_shader` library are launched from Python with tensors and scalars only;
nothing can set a threadgroup memory length for slot `N`, so the argument is never bound. The
kernel either fails to launch or reads and writes a zero-length threadgroup buffer.

## Example
```python
lib = torch.mps.compile_shader('''
kernel void block_sum(device const float* x [[buffer(0)]],
                      device float* out [[buffer(1)]],
                      threadgroup float* partial [[threadgroup(0)]],
                      uint tid [[thread_position_in_threadgroup]]) { ... }
''')
```

## Use instead
```python
lib = torch.mps.compile_shader('''
kernel void block_sum(device const float* x [[buffer(0)]],
                      device float* out [[buffer(1)]],
                      uint tid [[thread_position_in_threadgroup]]) {
  threadgroup float partial[256];
  ...
}
''')
```

## How to fix
Declare the scratch memory as a fixed-size `threadgroup` array inside the kernel body (size it with a
template parameter or a constant that matches the `group_size` you launch with).

Guide: *Debugging Metal Kernels with `torch.mps.compile_shader`* — "Threadgroup memory".
"""

from __future__ import annotations

import re

from mpslint.model import Severity
from mpslint.rule import Rule
from mpslint.semantic.metalflow import is_kernel_function, metal_sources

_COMPILE = re.compile(r"^(?:compile_shader|compileShader|_mps_compileShader)$")
_TG_SPACE = re.compile(r"(?<![\w:])threadgroup\b(?!\s*\()")


class ThreadgroupParamInCompileShader(Rule):
    code = "MTL205"
    name = "threadgroup-param-in-compile-shader"
    severity = Severity.ERROR
    scope = "metal"
    summary = "kernel with a [[threadgroup(N)]] parameter in source compiled with torch.mps.compile_shader"
    guide = "Debugging Metal Kernels with torch.mps.compile_shader: Common Pitfalls"

    def check(self, ctx):
        for src in metal_sources(ctx):
            if src.kind == "file":
                continue
            if src.kind == "mm" and not _compiled_by_compile_shader(ctx, src):
                continue
            text = ctx.text(src.path)
            index = ctx.project.sources[src.path].index
            for fn in src.facts.functions:
                if not is_kernel_function(fn):
                    continue
                for p in fn.params:
                    # the address space was masked before parsing: it sits just before the parameter's node
                    lead = re.search(r"(?<![\w:])threadgroup\s+$", text[max(src.base, p.span.start - 40) : p.span.start])
                    attr = re.search(r"\[\[\s*threadgroup\s*\(\s*(\d+)\s*\)\s*\]\]", p.raw)
                    if not attr and not lead and not _TG_SPACE.search(p.raw):
                        continue
                    slot = f" (slot {attr.group(1)})" if attr else ""
                    start = p.span.start - (len(lead.group(0)) if lead else 0)
                    yield ctx.finding(
                        self,
                        src.path,
                        index.span(start, p.span.end),
                        f"kernel `{fn.name}` takes threadgroup memory `{p.name}` as a parameter{slot}, which "
                        "`torch.mps.compile_shader` cannot bind; declare it inside the kernel body instead "
                        f"(`threadgroup {_elem(p)} {p.name}[N];`).",
                    )


def _elem(p) -> str:
    t = re.sub(r"\b(const|threadgroup|volatile)\b|[*&]", " ", p.type).strip()
    return t or "T"


def _compiled_by_compile_shader(ctx, src) -> bool:
    """The raw string at ``src.base`` is an argument of compile_shader, or a variable that is passed to it."""
    host = ctx.project.hosts.get(src.path)
    if host is None:
        return False
    text = ctx.text(src.path)
    opener = text.rfind('R"', 0, src.base)
    before = text[max(0, opener - 200) : opener]
    var = re.search(r"([A-Za-z_]\w*)\s*(?:\[\s*\])?\s*(?:=|\{|\()\s*$", before)
    names = {var.group(1)} if var else set()
    for fn in host.functions:
        for call in fn.calls:
            if not _COMPILE.match(call.name):
                continue
            for arg in call.args:
                if arg.span.start <= src.base < arg.span.end:
                    return True
                if arg.text in names or re.sub(r"\.c_str\(\)$|\.data\(\)$", "", arg.text) in names:
                    return True
    return False
