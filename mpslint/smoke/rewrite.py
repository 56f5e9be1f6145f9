"""Small textual MSL -> host C++ rewrites, applied to a .metal file and every header it includes.

Every rewrite keeps the line structure (no line is added or removed), and the rewritten text starts with a
`#line 1 "<original path>"` directive, so clang's diagnostics point at the original file and line.
"""
from __future__ import annotations

import re

from .textutil import match_paren

# `threadgroup T name[N];` in a function body is group-shared storage.  With one threadgroup running at a
# time on the fiber runtime, a function-local `static` gives exactly that sharing.
# (a declaration ends in `;` or `=` after its array bounds; a kernel or function parameter `threadgroup T a[N][M],`
# is a pointer to group memory and stays as it is)
_TG_DECL = re.compile(
    r"(^|[;{}:])(\s*)threadgroup\s+(?=[A-Za-z_][\w:]*(?:\s*<[^;{}()]*?>)?\s+[A-Za-z_]\w*\s*"
    r"(?:\[[^\]\n;]*\]\s*)*(?:;|=))", re.M)
_HALF_LIT = re.compile(r"(?<![\w.])((?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)[hH]\b")
_BF_LIT = re.compile(r"(?<![\w.])((?:\d+\.\d*|\.\d+|\d+)(?:[eE][+-]?\d+)?)bf\b")
_HOST_NAME = re.compile(r"\[\[\s*host_name\s*\(")
_KERNEL_ATTR = re.compile(r"\[\[\s*kernel\s*\]\]")
_TG_ATTR = re.compile(r"\[\[\s*threadgroup\s*\(")
# function attributes the host neither needs nor parses between `template <...>` and `kernel`
_DROP_ATTR = re.compile(r"\[\[\s*max_total_threads_per_threadgroup\s*\([^\]]*\)\s*\]\]")
# partial specialisations of a class template: `template <...> struct name<args> {`
_SPEC_HEAD = re.compile(r"\btemplate\s*<([^<>{};]*)>\s*struct\s+([A-Za-z_]\w*)\s*<")
# address spaces are erased on the host (`constant` becomes `const`)
_ERASED_AS = re.compile(r"\b(?:thread|device|threadgroup|threadgroup_imageblock|ray_data|object_data)\b")
_CONSTANT = re.compile(r"\bconstant\b")
_FUNC_CONST = re.compile(
    r"\bconstant\s+([A-Za-z_][\w:]*)\s+([A-Za-z_]\w*)\s*\[\[\s*function_constant\s*\(\s*[\w:]+\s*\)\s*\]\]\s*;")


def _rewrite_host_name(text: str) -> str:
    """`[[host_name("x")]]` may sit between `template` and an explicit instantiation, where host C++ rejects
    attribute lists: turn it into a macro (empty when compiling, the attribute again for analysis)."""
    out, i = [], 0
    while True:
        m = _HOST_NAME.search(text, i)
        if not m:
            out.append(text[i:])
            break
        j = match_paren(text, m.end() - 1, "(", ")")
        k = text.find("]]", j) if j >= 0 else -1
        if j < 0 or k < 0:
            out.append(text[i:])
            break
        out.append(text[i:m.start()])
        out.append(" MSL_HOST_NAME(" + text[m.end():j] + ") ")
        out.append("\n" * text.count("\n", j, k + 2))  # keep line numbers
        i = k + 2
    return "".join(out)


def _blank(s: str) -> str:
    """Same length and line structure (newlines and line-continuation backslashes kept), no tokens."""
    return "".join(c if c in "\\\n" else " " for c in s)


def _collapse_address_space_specialisations(text: str) -> str:
    """`template <class T> struct P<device T*> {...};` and `... P<threadgroup T*> {...};` differ only in an address
    space, which the host erases: the second is a redefinition there.  Keep the first of each such group (they all
    match the same host type) and blank the others."""
    seen: set = set()
    out, i = [], 0
    for m in _SPEC_HEAD.finditer(text):
        if m.start() < i:
            continue
        lt = m.end() - 1
        gt = match_paren(text, lt, "<", ">")
        if gt < 0:
            continue
        args = text[lt + 1:gt]
        if not _ERASED_AS.search(args) and not _CONSTANT.search(args):
            continue
        brace = gt + 1
        while brace < len(text) and text[brace] in " \t\r\n\\":
            brace += 1
        if brace >= len(text) or text[brace] != "{":
            continue
        close = match_paren(text, brace, "{", "}")
        semi = close + 1
        while 0 <= semi < len(text) and text[semi] in " \t\r\n\\":
            semi += 1
        if close < 0 or semi >= len(text) or text[semi] != ";":
            continue
        norm = " ".join(_CONSTANT.sub("const", _ERASED_AS.sub(" ", args)).split())
        key = (m.group(2), " ".join(m.group(1).split()), norm.replace(" *", "*").replace("* ", "*"))
        if key in seen:
            out.append(text[i:m.start()])
            out.append(_blank(text[m.start():semi + 1]))
            i = semi + 1
        else:
            seen.add(key)
    out.append(text[i:])
    return "".join(out)


def rewrite_source(text: str, origin: str | None = None) -> str:
    text = _rewrite_host_name(text)
    text = _DROP_ATTR.sub(lambda m: _blank(m.group(0)), text)
    text = _collapse_address_space_specialisations(text)
    text = _KERNEL_ATTR.sub("kernel", text)
    text = _TG_ATTR.sub("[[msl_threadgroup(", text)  # `threadgroup` is a macro on the host
    text = _TG_DECL.sub(lambda m: f"{m.group(1)}{m.group(2)}static ", text)
    # function constants are fixed when a pipeline is made; the host build gives them their default value
    text = _FUNC_CONST.sub(lambda m: f"{m.group(1)} {m.group(2)} = {m.group(1)}();", text)
    text = _HALF_LIT.sub(lambda m: f"((half){m.group(1)}f)", text)
    text = _BF_LIT.sub(lambda m: f"((bfloat){m.group(1)}f)", text)
    if origin is not None:
        text = f'#line 1 "{_escape(origin)}"\n' + text
    return text


def _escape(path: str) -> str:
    return path.replace("\\", "\\\\").replace('"', '\\"')
