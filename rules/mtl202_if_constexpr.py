"""
## What it does
Flags `if constexpr (...)` (and `else if constexpr (...)`) in Metal code: `.metal` files, Metal
headers, Metal embedded in `.mm` raw strings and sources passed to `torch.mps.compile_shader`. Code
guarded by `#if __METAL_VERSION__ >= 400` (Metal 4 only) is not flagged, nor is the host-only C++ of a
shared header (`#ifndef __METAL__`), comments, strings or the `IF_CONSTEXPR` macro's own definition.

## Why is this bad?
`if constexpr` is C++17. Metal 4 has it; Metal 3.x compilers accept it as an extension, with a
warning, and older or stricter toolchains reject it. PyTorch's own kernels are built for Metal 3 and
Metal 4 devices alike and spell it `if IF_CONSTEXPR (...)` (`<c10/metal/common.h>`), so the build
stays warning-free and the code states which branch is meant to be constant. This is PyTorch's
portability convention: the rule applies only inside PyTorch (out-of-tree kernels do not have
`c10/metal/common.h` on their include path; see `docs/extensions.md`).

## Example
```metal
template <typename T>
inline T load_scalar(constant T* p) {
  if constexpr (sizeof(T) == 8) {
    return T(p[0]);
  }
  return p[0];
}
```

## Use instead
```metal
#include <c10/metal/common.h>

template <typename T>
inline T load_scalar(constant T* p) {
  if IF_CONSTEXPR (sizeof(T) == 8) {
    return T(p[0]);
  }
  return p[0];
}
```
`IF_CONSTEXPR` expands to `constexpr` on Metal 4 and to nothing on Metal 3, where the compiler
still folds the constant branch. Both arms must then compile for every `T`.

## How to fix
Write `if IF_CONSTEXPR (` and include `<c10/metal/common.h>` (`utils.h`, `indexing.h` and `error.h`
include it too). The automatic fix does both, and is *unsafe*: on Metal 3 `IF_CONSTEXPR` is empty,
the branch becomes a plain `if`, and the arm that `if constexpr` discarded is compiled for every `T`;
when it uses members only some `T` have, the rewritten kernel no longer compiles (the fixer compiles a
fixed `.metal` file with the smoke host toolchain, when installed, and refuses such a fix). Restructure
such a branch with an overload or `enable_if_t` instead.

Guide: *Working with TensorIterators* — "`IF_CONSTEXPR` for Metal 3/4 portability".
"""

from __future__ import annotations

import re

from mpslint.model import Fix, Severity
from mpslint.rule import Rule
from mpslint.semantic.metalflow import host_only, metal4_only, metal_sources

_IF_CONSTEXPR = re.compile(r"\bif(\s+)(constexpr)\b(?=\s*\()")
# c10/metal headers that (directly or through another) include <c10/metal/common.h>
_BRINGS_COMMON = re.compile(r"^[ \t]*#[ \t]*include[ \t]*[<\"]c10/metal/(?:common|utils|indexing|error|special_math|igamma|reduction_utils)\.h[>\"]", re.M)
_INCLUDE_LINE = re.compile(r"^[ \t]*#[ \t]*include\b[^\n]*", re.M)
_DEFINES_MACRO = re.compile(r"^[ \t]*#[ \t]*define[ \t]+IF_CONSTEXPR\b", re.M)
_COMMON = "#include <c10/metal/common.h>"


class IfConstexpr(Rule):
    code = "MTL202"
    name = "if-constexpr"
    severity = Severity.ERROR
    scope = "metal"
    summary = "`if constexpr` in PyTorch's Metal code: its portability convention is `if IF_CONSTEXPR (...)`"
    fixable = "unsafe"
    guide = "Working with TensorIterators: IF_CONSTEXPR for Metal 3/4 portability"
    contexts = ("pytorch",)  # a PyTorch convention (mpslint.context)

    def check(self, ctx):
        for src in metal_sources(ctx):
            text = src.text
            if "constexpr" not in text:
                continue
            include_edit = None
            include_known = False
            for m in _IF_CONSTEXPR.finditer(text):
                at = m.start()
                if src.in_comment_or_string(at) or _in_directive(text, at):
                    continue
                conds = src.conditions(at)
                if metal4_only(conds) or host_only(conds):
                    continue
                if not include_known:
                    include_edit, _single_line = self._include_edit(ctx, src)
                    include_known = True
                start, end = src.base + m.start(), src.base + m.end()
                edits = [ctx.edit(src.path, src.base + m.start(2), src.base + m.end(2), "IF_CONSTEXPR")]
                if include_edit is not None:
                    edits.insert(0, include_edit)
                note = "" if include_edit is None else f" and add `{_COMMON}`"
                # unsafe always: on Metal 3 IF_CONSTEXPR is empty and the discarded arm gets compiled
                fix = Fix(f"Use `if IF_CONSTEXPR (`{note}", tuple(edits), "unsafe")
                yield ctx.finding(
                    self,
                    src.path,
                    ctx.project.sources[src.path].index.span(start, end),
                    "`if constexpr` is C++17: Metal 3.x accepts it only with a warning (Metal 4 natively); PyTorch's "
                    f"kernels write `if IF_CONSTEXPR (...)` with `{_COMMON}` included, a plain `if` on Metal 3, so "
                    "both arms must then compile for every type; or guard the code with `#if __METAL_VERSION__ >= 400`.",
                    fix=fix,
                )

    @staticmethod
    def _include_edit(ctx, src):
        """(edit adding the include or None when it is already there, whether the fix is safe)."""
        text = src.text
        if _BRINGS_COMMON.search(text) or _DEFINES_MACRO.search(text):
            return None, True
        newline = "\n"
        safe = True
        if src.kind == "python":
            full = ctx.text(src.path)
            opener = full[max(0, src.base - 4) : src.base]
            triple = opener.endswith(('"""', "'''"))
            raw = bool(re.search(r"[rR][bBuU]?(?:'''|\"\"\"|'|\")$", opener))
            if not triple:
                if raw:
                    return None, False  # a one-line raw string cannot take a newline: replace the keyword only
                newline = "\\n"
        lines = list(_INCLUDE_LINE.finditer(text))
        lines = [m for m in lines if not src.in_comment_or_string(m.start() + len(m.group(0)) - len(m.group(0).lstrip()))]
        if lines:
            at = lines[-1].end()
            content = newline + _COMMON
        else:
            at = 1 if text.startswith("\n") else 0
            content = _COMMON + newline
        return ctx.edit(src.path, src.base + at, src.base + at, content), safe


def _in_directive(text: str, at: int) -> bool:
    """``at`` is in the definition of the ``IF_CONSTEXPR`` macro itself (other macro bodies are Metal code too)."""
    line_start = text.rfind("\n", 0, at) + 1
    k = line_start
    while k > 1 and text[k - 2] == "\\":  # walk back over backslash continuations
        k = text.rfind("\n", 0, k - 1) + 1
    return bool(re.match(r"[ \t]*#[ \t]*define[ \t]+IF_CONSTEXPR\b", text[k:at]))
