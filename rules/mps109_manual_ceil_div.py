"""
## What it does
Flags a hand-written ceiling division `(a + b - 1) / b` — also spelled `(b - 1 + a) / b`,
`(a + (b - 1)) / b`, or with the divisor folded into a literal, `(n + 255) / 256` (divisors from 3 up;
`(n + 1) / 2` is left alone) — in host code and
in Metal code (`.metal` files, Metal embedded in host strings or passed to `compile_shader`).

## Why is this bad?
The idiom is easy to get subtly wrong (`(a + b) / b`, `(a - 1) / b + 1` for `a == 0`, a divisor that
is edited in one place and not the other), hides its intent, and mixes types silently: with an `int`
divisor and a `uint` dividend the sum wraps near `UINT_MAX`. PyTorch has one spelling for it on each
side: `at::ceil_div` (`<ATen/ceil_div.h>`) and `c10::metal::ceil_div` (`<c10/metal/common.h>`), both
of which require both operands to have one type.

## Example
```objc
const auto ngroups = (numel + kGroupSize - 1) / kGroupSize;
```
```metal
const uint nchunks = (size + 255) / 256;
```

## Use instead
```objc
const auto ngroups = at::ceil_div(numel, kGroupSize);
```
```metal
using namespace c10::metal;
const uint nchunks = ceil_div(size, 256u);
```

## How to fix
Call `at::ceil_div(a, b)` on the host and `c10::metal::ceil_div(a, b)` in Metal (unqualified
`ceil_div` after `using namespace c10::metal;`). The automatic fix does it, and it is *safe*: when both
operands have the same type it writes `ceil_div(a, b)`; when their types differ (`int64_t` and `uint32_t`,
an `int64_t` size and an unsuffixed literal) it writes `ceil_div<T>(a, b)` with `T` the type the hand-written
expression computes in (the usual arithmetic conversions), since `ceil_div` deduces one type from both
arguments and mixed types would not compile. Types come from declarations, parameters, function
template parameters and file- or project-scope constants. In host code, when one operand's type is not known (a struct
field: `ceil_div(M, t.BM)`, an expression: `axis_size / 2`), no edit is offered and the message says to write
`ceil_div<T>(...)`; in Metal the same holds against a 64-bit operand, and other operands of unknown type
(template constants of a struct) get the edit as *unsafe*. The fix adds `#include <ATen/ceil_div.h>` (host;
neither `OperationUtils.h` nor `<torch/extension.h>` brings it) or `#include <c10/metal/common.h>`
(Metal; `utils.h`, `indexing.h` and `error.h` bring it) when the file does not include it; in Metal
embedded in a host string it is offered only when the string already reaches the header.
A PyTorch convention: not applied in out-of-tree extensions (`docs/extensions.md`), whose kernels do not
have `c10/metal/common.h` on their include path. Macro definitions
and the definitions of ceil-div helpers themselves (`ceil_div`, `ceildiv`, `div_up`, `round_up`) are not flagged.

Guide: *Working with TensorIterators* — "Use `ceil_div`".
"""

from __future__ import annotations

import re

from mpslint import names
from mpslint.fixedits import include_edit
from mpslint.masking import _skip_regions
from mpslint.model import Fix, Severity
from mpslint.rule import Rule
from mpslint.semantic.model import semantic_model

_IDENT = re.compile(r"[A-Za-z_]\w*")
_ONE = re.compile(r"^1(?:[uU]?[lL]{0,2}|[lL]{1,2}[uU])$")
_INT_LIT = re.compile(r"^(\d+)([uU]?[lL]{0,2}|[lL]{1,2}[uU])$")
_SIZE_CALL = re.compile(r"(?:\.|->)\s*(?:numel|size|stride|dim|ndimension|storage_offset|nbytes)\s*\([^()]*\)$")
_WIDE = {"int", "int32_t", "uint", "uint32_t", "unsigned", "unsigned int", "long", "int64_t", "ulong", "uint64_t", "size_t", "NSUInteger", "NSInteger", "long long", "ptrdiff_t"}
_USING_C10_METAL = re.compile(r"\busing\s+namespace\s+c10\s*::\s*metal\s*;")


def _bits(t: str | None) -> int:
    from mpslint.semantic.types import parse_type

    c = parse_type(t, {}) if t else None
    return c.bits if c is not None and c.kind == "int" else 0


def _common_spelling(ta: str, tb: str) -> str | None:
    """How to spell the type ``a + b`` has for operands of types ``ta`` and ``tb`` (one of them, or ``int``)."""
    from mpslint.semantic.types import INT32, arith, parse_type

    a, b = parse_type(ta, {}), parse_type(tb, {})
    if a.kind != "int" or b.kind != "int":
        return None
    c = arith(a, b)
    if c == a:
        return ta
    if c == b:
        return tb
    return "int" if c == INT32 else None


def _norm(t: str) -> str:
    t = re.sub(r"\s+", "", t)
    while t.startswith("(") and t.endswith(")") and _balanced(t[1:-1]):
        t = t[1:-1]
    return t


def _balanced(t: str) -> bool:
    d = 0
    for ch in t:
        if ch in "([{":
            d += 1
        elif ch in ")]}":
            d -= 1
            if d < 0:
                return False
    return d == 0


def _terms(expr: str, sign: int = 1) -> list[tuple[int, str]] | None:
    """Top-level additive terms of ``expr`` with their signs; parenthesised sums are flattened."""
    out: list[tuple[int, str]] = []
    depth = 0
    cur_sign = sign
    start = 0
    i = 0
    s = expr
    pieces: list[tuple[int, str]] = []
    while i < len(s):
        ch = s[i]
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif depth == 0 and ch in "+-":
            nxt = s[i + 1] if i + 1 < len(s) else ""
            if nxt in "+-=>" or (i > 0 and s[i - 1] in "+-"):
                return None  # ++, --, ->, +=: not a plain sum
            prev = s[:i].rstrip()
            if prev and (prev[-1].isalnum() or prev[-1] in "_)]"):
                if re.search(r"\d[eE]$", prev) and re.search(r"(?<![\w.])\d+(\.\d*)?[eE]$", prev):
                    i += 1
                    continue  # 1e-5
                pieces.append((cur_sign, s[start:i]))
                cur_sign = sign if ch == "+" else -sign
                start = i + 1
        i += 1
    pieces.append((cur_sign, s[start:]))
    for sg, text in pieces:
        t = text.strip()
        if not t:
            return None
        if t.startswith("(") and t.endswith(")") and _balanced(t[1:-1]):
            inner = _terms(t[1:-1], sg)
            if inner is not None and len(inner) > 1:
                out.extend(inner)
                continue
        out.append((sg, t))
    return out


def _match_paren_back(text: str, close: int) -> int:
    depth = 0
    for k in range(close, -1, -1):
        ch = text[k]
        if ch == ")":
            depth += 1
        elif ch == "(":
            depth -= 1
            if depth == 0:
                return k
        elif ch in ";{}":
            return -1
    return -1


def _right_operand(text: str, i: int) -> int:
    """End offset of the operand starting at ``i`` (an identifier chain with calls/subscripts, a literal, or a group)."""
    n = len(text)
    j = i
    if j < n and text[j] == "(":
        depth = 0
        while j < n:
            if text[j] == "(":
                depth += 1
            elif text[j] == ")":
                depth -= 1
                if depth == 0:
                    return j + 1
            j += 1
        return -1
    m = re.compile(r"\d+[uUlL]*|(?:::)?[A-Za-z_]\w*").match(text, j)
    if not m:
        return -1
    j = m.end()
    while j < n:
        m2 = re.compile(r"\s*(?:\.|->|::)\s*[A-Za-z_]\w*").match(text, j)
        if m2:
            j = m2.end()
            continue
        if text[j] in "([":
            close = {"(": ")", "[": "]"}[text[j]]
            depth = 0
            k = j
            while k < n:
                if text[k] in "([":
                    depth += 1
                elif text[k] in ")]":
                    depth -= 1
                    if depth == 0:
                        break
                k += 1
            if k >= n or text[k] != close:
                return -1
            j = k + 1
            continue
        break
    return j


def _preprocessor_lines(text: str) -> list[tuple[int, int]]:
    out = []
    pos = 0
    cont = False
    for line in text.split("\n"):
        end = pos + len(line)
        if cont or line.lstrip().startswith("#"):
            out.append((pos, end))
            cont = line.rstrip().endswith("\\")
        pos = end + 1
    return out


class ManualCeilDiv(Rule):
    code = "MPS109"
    name = "manual-ceil-div"
    severity = Severity.INFO
    scope = "host"
    summary = "Hand-written `(a + b - 1) / b`; use `at::ceil_div` (host) or `c10::metal::ceil_div` (Metal)"
    fixable = "safe"
    guide = "Working with TensorIterators"
    contexts = ("pytorch",)  # a PyTorch convention (mpslint.context)

    def check(self, ctx):
        project = ctx.project
        for path in sorted(set(project.hosts) | set(project.metals)):
            text = ctx.text(path)
            pieces = []  # (start, end, metal, functions)
            metal_ranges = []
            for m in project.metals.get(path, []):
                end = m.end if m.end > m.base else len(text)
                pieces.append((m.base, end, True, m.functions))
                metal_ranges.append((m.base, end))
            if path in project.hosts:
                pieces.append((0, len(text), False, project.hosts[path].functions))
            for start, end, metal, functions in pieces:
                yield from self._scan(ctx, path, text, start, end, metal, functions, metal_ranges)

    def _scan(self, ctx, path, text, start, end, metal, functions, metal_ranges):
        piece = text[start:end]
        chars = list(piece)
        for a, b in _skip_regions(piece):
            for k in range(a, b):
                if chars[k] != "\n":
                    chars[k] = " "
        for a, b in _preprocessor_lines(piece):
            for k in range(a, b):
                chars[k] = " "
        clean = "".join(chars)
        using = bool(_USING_C10_METAL.search(clean)) if metal else False
        for m in re.finditer(r"\)\s*/(?![/*=])", clean):
            close = m.start()
            open_ = _match_paren_back(clean, close)
            if open_ < 0:
                continue
            k = open_ - 1
            while k >= 0 and clean[k] in " \t\n":
                k -= 1
            before = clean[max(0, k - 20) : k + 1]  # enough for the keyword test below and the char before it
            keyword = re.search(r"(?<![\w.>:])(return|case|throw|co_return|else|do)$", before)
            if before and not keyword and (before[-1].isalnum() or before[-1] in "_>]" or before[-1] in "*/%"):
                continue  # a call, a cast, a subscript or a product: not a plain (sum) / b
            rs = m.end()
            while rs < len(clean) and clean[rs] in " \t\n":
                rs += 1
            re_ = _right_operand(clean, rs)
            if re_ < 0:
                continue
            a_abs, b_abs = start + open_, start + re_
            if not metal and any(x <= a_abs < y for x, y in metal_ranges):
                continue
            divisor = clean[rs:re_]
            group = clean[open_ + 1 : close]
            hit = self._ceil_div(group, divisor)
            if hit is None:
                continue
            fn = self._function_at(functions, a_abs)
            if fn is not None and re.fullmatch(r"(?i)ceil_?div(?:_up)?|round_?up|div_?up", fn.name.split("::")[-1]):
                continue
            dividend, div_text = hit
            yield self._report(ctx, path, a_abs, b_abs, dividend, div_text, metal, using, fn, (start, end))

    @staticmethod
    def _ceil_div(group: str, divisor: str) -> tuple[str, str] | None:
        terms = _terms(group)
        if not terms or len(terms) < 2:
            return None
        b = _norm(divisor)
        rest = list(terms)
        lit = _INT_LIT.match(b)
        # (a + b - 1) / b
        i_b = next((k for k, (sg, t) in enumerate(rest) if sg > 0 and _norm(t) == b), None)
        i_one = next((k for k, (sg, t) in enumerate(rest) if sg < 0 and _ONE.match(_norm(t))), None)
        if i_b is not None and i_one is not None and len(rest) >= 3:
            rest = [x for k, x in enumerate(rest) if k not in (i_b, i_one)]
        elif lit and int(lit.group(1)) >= 3:
            # (n + 255) / 256; not (n + 1) / 2, which reads as "half, rounded up" as often as a ceil_div
            want = int(lit.group(1)) - 1
            i_c = next((k for k, (sg, t) in enumerate(rest) if sg > 0 and _INT_LIT.match(_norm(t)) and int(_INT_LIT.match(_norm(t)).group(1)) == want), None)
            if i_c is None:
                return None
            rest = [x for k, x in enumerate(rest) if k != i_c]
        else:
            return None
        if not rest or rest[0][0] < 0 and len(rest) == 1:
            return None
        rest.sort(key=lambda x: -x[0])  # a positive term first
        out = ""
        for k, (sg, t) in enumerate(rest):
            t = re.sub(r"\s+", " ", t.strip())
            out += (t if k == 0 else f" {'+' if sg > 0 else '-'} {t}") if sg > 0 or k else f"-{t}"
        return out, re.sub(r"\s+", " ", divisor.strip())

    @staticmethod
    def _function_at(functions, offset):
        best = None
        for fn in functions:
            if fn.span.start <= offset < fn.span.end and (best is None or fn.span.start >= best.span.start):
                best = fn
        return best

    @staticmethod
    def _type_of(expr: str, fn, metal: bool, constants=None) -> str | None:
        t = _norm(expr)
        lit = _INT_LIT.match(t)
        if lit:
            suf = lit.group(2).lower()
            return {"": "int", "u": "uint" if metal else "unsigned", "l": "long", "ul": "ulong" if metal else "unsigned long", "lu": "ulong" if metal else "unsigned long"}.get(suf)
        if not metal and _SIZE_CALL.search(t):
            return "int64_t"
        cast = re.fullmatch(r"(?:static_cast<([\w:\s]+)>|(u?int|u?long|u?short|uint32_t|int32_t|int64_t|uint64_t|size_t))\((.*)\)", t)
        if cast and _balanced(cast.group(3)):
            return (cast.group(1) or cast.group(2)).strip()
        if fn is None or not _IDENT.fullmatch(t):
            return None
        cands = [d.type for d in fn.decls if d.name == t] + [p.type for p in fn.params if p.name == t]
        cands += [p.type for p in getattr(fn, "template_params", ()) if p.name == t and p.type != "typename"]
        if not cands and constants is not None and constants.constant(t) is not None:
            cands = [constants.constant(t)[0]]  # a file- or project-scope `constexpr int SCAN_TPTG = 1024;`
        if len(set(cands)) != 1:
            return None
        typ = re.sub(r"\b(const|constexpr|static|constant|thread|device|threadgroup|volatile)\b|[&]", " ", cands[0])
        typ = re.sub(r"\s+", " ", typ).strip()
        if typ == "auto" or not typ or "*" in typ:
            if typ == "auto":
                inits = [d.init.text for d in fn.decls if d.name == t and d.init is not None]
                if len(inits) == 1 and not metal and _SIZE_CALL.search(inits[0]):
                    return "int64_t"
            return None
        return typ

    def _report(self, ctx, path, a, b, dividend, divisor, metal, using, fn, piece):
        qualified = "c10::metal::ceil_div" if metal else "at::ceil_div"
        lo, hi = piece
        text = ctx.text(path)
        scope = names.scope_of(text[lo:hi])
        func = "ceil_div" if metal and using else qualified  # qualified unless `using namespace c10::metal`
        header = names.DECLARES[qualified]
        constants = semantic_model(ctx.project).tables
        ta, tb = self._type_of(dividend, fn, metal, constants), self._type_of(divisor, fn, metal, constants)
        applicability, targ = "unsafe", ""
        if ta and tb and ta == tb:
            applicability = "safe"
        elif ta and tb and (ta == "int" and _INT_LIT.match(_norm(dividend)) or tb == "int" and _INT_LIT.match(_norm(divisor))):
            other = tb if ta == "int" and _INT_LIT.match(_norm(dividend)) else ta
            if other in _WIDE:
                applicability, targ = "safe", f"<{other}>"
        elif ta and tb:
            # mixed operand types: `ceil_div` deduces one type from both, so name the type the hand-written
            # expression computes in (the usual arithmetic conversions): `at::ceil_div<int64_t>(size, TILE_DIM)`
            spelled = _common_spelling(ta, tb)
            if spelled is not None:
                applicability, targ = "safe", f"<{spelled}>"
        new = f"{func}{targ}({dividend}, {divisor})"
        edits = [ctx.edit(path, a, b, new)]
        embedded = lo > 0 or ctx.project.sources[path].kind != ("metal" if metal else "host")
        fix = None
        known = ta or tb
        if applicability == "unsafe" and (ta is None) != (tb is None) and (not metal or _bits(known) >= 64):
            pass  # host code (int64 sizes everywhere) or a 64-bit operand against one of unknown type: they likely
            # differ (`ceil_div(M, t.BM)`, `ceil_div(axis_size / 2, elements_per_simd)`) and the call would not compile
        elif scope.declares(qualified):
            fix = Fix(f"Use `{func}`", tuple(edits), applicability)
        elif not embedded:  # the header is added where the file's includes are; not inside a string
            hf = ctx.project.hosts.get(path)
            edits.insert(0, include_edit(ctx, path, hf.includes if hf is not None and not metal else None, header, lo, hi))
            fix = Fix(f"Use `{func}` and include <{header}>", tuple(edits), applicability)
        original = re.sub(r"\s+", " ", text[a:b])
        if applicability == "safe":
            advice = f"use `{new}` from <{header}>."
        else:
            kinds = f" (`{ta}` and `{tb}`)" if ta and tb else ""
            advice = (f"use `{func}<T>({dividend}, {divisor})` from <{header}>, with `T` the type the division computes "
                      f"in{kinds}: `{func}` deduces a single type from both operands, so without `<T>` mixed operands do not compile.")
        return ctx.finding(
            self,
            path,
            ctx.project.sources[path].index.span(a, b),
            f"`{original}` is a hand-written ceiling division; {advice}",
            fix=fix,
        )
