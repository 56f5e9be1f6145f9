"""Expression trees built from tree-sitter nodes (not from text), kept with the facts and cached with them.

A ``Node`` is a small immutable tree: identifiers, literals (with their suffixes), calls (the callee is the first
child: an identifier, a qualified name, or a member access whose object is the receiver), member accesses,
subscripts, the three cast forms, unary/binary operators, ``?:``, ``sizeof``, brace initialisers, assignments.
Lambdas and Objective-C blocks are boundaries (``kind == "lambda"``, no children). Masked Objective-C message
sends reach tree-sitter as calls or as opaque text and come out as calls or ``other``.

Spans are character offsets into the reported file (``start``, ``end``); ``text`` is the node's compact source
text (runs of white space folded to one space).
"""

from __future__ import annotations

__all__ = ["Node", "TreeBuilder", "strip_parens", "walk", "identifiers", "int_literal"]

import re
from collections.abc import Iterator

_INT_LIT = re.compile(r"^(0[xX][0-9a-fA-F']+|0[bB][01']+|0[0-7']*|[1-9][0-9']*)([uUlLzZ]*)$")


class Node:
    """One expression. ``kind`` is one of: id, int, float, str, char, bool, null, call, member, index, cast,
    unary, postfix, binary, cond, sizeof, init, assign, comma, lambda, other.

    - ``op``: the identifier / qualified name for ``id``; the literal text for literals; the operator for
      unary/binary/assign/postfix; the member name for ``member``; the cast form (``static_cast``,
      ``reinterpret_cast``, ``c_style``, ``functional``) for ``cast``; the callee's last name for ``call``.
    - ``extra``: the cast's target type, a call's template arguments (``item<int64_t>``: ``"int64_t"``),
      ``.`` or ``->`` for members, ``sizeof``'s type.
    - ``kids``: operands in source order; for ``call`` the callee first, then the arguments.
    """

    __slots__ = ("kind", "op", "extra", "kids", "start", "end", "_src", "_s0", "_text")

    def __init__(self, kind: str, op: str, extra: str, kids: tuple, start: int, end: int, text: str, src: str | None = None, s0: int = 0):
        self.kind = kind
        self.op = op
        self.extra = extra
        self.kids = kids
        self.start = start
        self.end = end
        # the text is cut from the (shared) source on first use: most nodes are never printed
        self._text = text
        self._src = src
        self._s0 = s0

    @property
    def text(self) -> str:
        t = self._text
        if t is None:
            raw = self._src[self._s0 : self._s0 + (self.end - self.start)]
            t = self._text = " ".join(raw.split()) if ("  " in raw or "\n" in raw or "\t" in raw or "\r" in raw) else raw.strip()
        return t

    # pickling with __slots__ and no __dict__ (the text is resolved first: the source is not pickled)
    def __getstate__(self):
        return (self.kind, self.op, self.extra, self.kids, self.start, self.end, self.text)

    def __setstate__(self, st):
        self.kind, self.op, self.extra, self.kids, self.start, self.end, self._text = st
        self._src = None
        self._s0 = 0

    def __repr__(self) -> str:
        return f"Node({self.kind}:{self.op!r} {self.text!r})"

    # ------------------------------------------------------------ call helpers
    @property
    def callee(self) -> "Node | None":
        return self.kids[0] if self.kind == "call" and self.kids else None

    @property
    def args(self) -> tuple:
        return self.kids[1:] if self.kind == "call" else ()

    @property
    def receiver(self) -> "Node | None":
        """The object a member call is made on: ``t`` in ``t.numel()``."""
        c = self.callee
        if c is not None and c.kind == "member" and c.kids:
            return c.kids[0]
        return None

    @property
    def qualified(self) -> str:
        """The callee as written without white space: ``std::min``, ``c10::checked_convert``."""
        c = self.callee
        if c is None:
            return ""
        if c.kind == "id":
            return c.op
        return c.op if c.kind == "member" else ""

    def key(self) -> str:
        """A canonical structural key: equal for the same value spelled with different spacing or parentheses."""
        n = strip_parens(self)
        if n.kind in ("id", "int", "float", "str", "char", "bool", "null", "other", "lambda"):
            return n.op if n.kind != "other" else n.text
        if n.kind == "member":
            return f"{n.kids[0].key()}{n.extra}{n.op}" if n.kids else n.op
        if n.kind == "call":
            targs = f"<{n.extra}>" if n.extra else ""
            return f"{n.kids[0].key()}{targs}(" + ",".join(k.key() for k in n.kids[1:]) + ")"
        if n.kind == "index":
            return f"{n.kids[0].key()}[{n.kids[1].key()}]"
        if n.kind == "cast":
            return f"({n.extra}){n.kids[0].key()}"
        if n.kind in ("unary",):
            return f"{n.op}{n.kids[0].key()}"
        if n.kind == "postfix":
            return f"{n.kids[0].key()}{n.op}"
        if n.kind in ("binary", "assign", "comma"):
            return f"({n.kids[0].key()}{n.op}{n.kids[1].key()})"
        if n.kind == "cond":
            return f"({n.kids[0].key()}?{n.kids[1].key()}:{n.kids[2].key()})"
        if n.kind == "sizeof":
            return f"sizeof({n.extra or (n.kids[0].key() if n.kids else '')})"
        if n.kind == "init":
            return "{" + ",".join(k.key() for k in n.kids) + "}"
        return n.text


def strip_parens(n: Node) -> Node:
    while n.kind == "paren" and n.kids:
        n = n.kids[0]
    return n


def walk(n: Node) -> Iterator[Node]:
    """Every node of the tree, pre-order; lambdas are not entered."""
    stack = [n]
    while stack:
        x = stack.pop()
        yield x
        stack.extend(reversed(x.kids))


def identifiers(n: Node) -> set[str]:
    """Plain identifiers read by ``n`` (not member names, not callee names)."""
    out: set[str] = set()
    stack = [n]
    while stack:
        x = stack.pop()
        if x.kind == "id":
            out.add(x.op)
        elif x.kind == "call":
            c = x.kids[0] if x.kids else None
            if c is not None and c.kind == "member":
                stack.append(c.kids[0])
            stack.extend(x.kids[1:])
        elif x.kind == "member":
            stack.append(x.kids[0])
        else:
            stack.extend(x.kids)
    return out


def int_literal(text: str) -> tuple[int, str] | None:
    """``(value, suffix)`` of an integer literal (``0x80000000u`` -> ``(2147483648, "u")``), or None."""
    m = _INT_LIT.match(text.strip())
    if not m:
        return None
    digits = m.group(1).replace("'", "")
    try:
        if digits[:2] in ("0x", "0X"):
            v = int(digits, 16)
        elif digits[:2] in ("0b", "0B"):
            v = int(digits[2:], 2)
        elif len(digits) > 1 and digits[0] == "0":
            v = int(digits, 8)
        else:
            v = int(digits)
    except ValueError:
        return None
    return v, m.group(2).lower()


_LEAF = {
    "identifier": "id",
    "field_identifier": "id",
    "type_identifier": "id",
    "namespace_identifier": "id",
    "primitive_type": "id",
    "this": "id",
    "number_literal": "num",
    "string_literal": "str",
    "raw_string_literal": "str",
    "concatenated_string": "str",
    "char_literal": "char",
    "true": "bool",
    "false": "bool",
    "null": "null",
    "nullptr": "null",
}
_CAST_CALLS = {"static_cast", "reinterpret_cast", "const_cast", "bit_cast", "as_type"}
_FUNCTIONAL_TYPES = {
    "int", "uint", "unsigned", "long", "ulong", "short", "ushort", "char", "uchar", "float", "half", "bfloat",
    "double", "bool", "size_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t",
    "uint64_t", "NSUInteger", "NSInteger", "ptrdiff_t", "intptr_t", "uintptr_t", "int2", "int3", "int4", "uint2",
    "uint3", "uint4", "long2", "long3", "long4", "ulong2", "ulong3", "ulong4", "float2", "float3", "float4",
}


class TreeBuilder:
    """Turns tree-sitter expression nodes of one file into ``Node`` trees (each region built once)."""

    def __init__(self, facts):
        self.f = facts  # a CppFacts: off(), mtext(), base
        self._memo: dict[tuple[int, int, str], Node] = {}

    def build(self, ts) -> Node:
        key = (ts.start_byte, ts.end_byte, ts.type)
        n = self._memo.get(key)
        if n is None:
            n = self._memo[key] = self._build(ts, 0)
        return n

    def _text(self, ts) -> str:
        t = self.f.mtext(ts)
        if "  " in t or "\n" in t or "\t" in t or "\r" in t or t[:1] == " " or t[-1:] == " ":
            return " ".join(t.split())
        return t

    def _mk(self, ts, kind, op="", extra="", kids=()) -> Node:
        f = self.f
        if f._ascii:
            start, end = ts.start_byte, ts.end_byte
            return Node(kind, op, extra, tuple(kids), f.base + start, f.base + end, None, f.masked, start)
        a, b = f.off(ts.start_byte), f.off(ts.end_byte)
        return Node(kind, op, extra, tuple(kids), f.base + a, f.base + b, None, f.masked, a)

    def _sub(self, ts, depth: int) -> Node:
        key = (ts.start_byte, ts.end_byte, ts.type)
        n = self._memo.get(key)
        if n is None:
            n = self._memo[key] = self._build(ts, depth + 1)
        return n

    def _build(self, ts, depth: int) -> Node:
        t = ts.type
        if depth > 200:
            return self._mk(ts, "other")
        leaf = _LEAF.get(t)
        if leaf is not None:
            text = self._text(ts)
            if leaf == "num":
                digits = text[1:].strip()
                if text.startswith("-") and int_literal(digits) is not None:
                    # tree-sitter folds the sign into the literal in some places (`{-1, n}`): the negation of an
                    # integer literal, as everywhere else
                    whole = self._mk(ts, "unary", "-")
                    lit = Node("int", digits, "", (), whole.end - len(digits), whole.end, digits)
                    return self._mk(ts, "unary", "-", "", (lit,))
                return self._mk(ts, "int" if int_literal(text) is not None else "float", text)
            return self._mk(ts, leaf, text)
        if t == "user_defined_literal":  # MSL's `1.0h`, `2h`
            text = self._text(ts)
            return self._mk(ts, "float" if text[:1].isdigit() or text[:1] == "." else "other", text)
        if t == "qualified_identifier" or t == "template_type":
            return self._mk(ts, "id", "".join(self._text(ts).split()))
        if t == "parenthesized_expression":
            inner = [c for c in ts.named_children if c.type != "comment"]
            if len(inner) == 1:
                return self._mk(ts, "paren", "", "", (self._sub(inner[0], depth),))
            return self._mk(ts, "other")
        if t == "call_expression":
            return self._call(ts, depth)
        if t == "field_expression":
            arg = ts.child_by_field_name("argument")
            fld = ts.child_by_field_name("field")
            opn = ts.child_by_field_name("operator")
            if arg is None or fld is None:
                return self._mk(ts, "other")
            name = fld.child_by_field_name("name") if fld.type == "template_method" else fld
            return self._mk(ts, "member", self._text(name if name is not None else fld), self._text(opn) if opn is not None else ".", (self._sub(arg, depth),))
        if t == "subscript_expression":
            arg = ts.child_by_field_name("argument")
            ix = ts.child_by_field_name("indices") or ts.child_by_field_name("index")
            if arg is None or ix is None:
                return self._mk(ts, "other")
            inner = [c for c in ix.named_children if c.type != "comment"] if ix.type == "subscript_argument_list" else [ix]
            if len(inner) != 1:
                return self._mk(ts, "other")
            return self._mk(ts, "index", "", "", (self._sub(arg, depth), self._sub(inner[0], depth)))
        if t == "cast_expression":
            tn = ts.child_by_field_name("type")
            vn = ts.child_by_field_name("value")
            if tn is None or vn is None:
                return self._mk(ts, "other")
            return self._mk(ts, "cast", "c_style", self._text(tn), (self._sub(vn, depth),))
        if t in ("unary_expression", "pointer_expression"):
            a = ts.child_by_field_name("argument")
            o = ts.child_by_field_name("operator")
            if a is None:
                return self._mk(ts, "other")
            return self._mk(ts, "unary", self._text(o) if o is not None else "", "", (self._sub(a, depth),))
        if t == "update_expression":
            a = ts.child_by_field_name("argument")
            o = ts.child_by_field_name("operator")
            if a is None or o is None:
                return self._mk(ts, "other")
            prefix = o.start_byte < a.start_byte
            return self._mk(ts, "unary" if prefix else "postfix", self._text(o), "", (self._sub(a, depth),))
        if t in ("binary_expression", "assignment_expression", "comma_expression"):
            left = ts.child_by_field_name("left")
            right = ts.child_by_field_name("right")
            o = ts.child_by_field_name("operator")
            if left is None or right is None:
                return self._mk(ts, "other")
            kind = {"binary_expression": "binary", "assignment_expression": "assign", "comma_expression": "comma"}[t]
            op = self._text(o) if o is not None else ","
            return self._mk(ts, kind, op, "", (self._sub(left, depth), self._sub(right, depth)))
        if t == "conditional_expression":
            c = ts.child_by_field_name("condition")
            a = ts.child_by_field_name("consequence")
            b = ts.child_by_field_name("alternative")
            if c is None or a is None or b is None:
                return self._mk(ts, "other")
            return self._mk(ts, "cond", "?:", "", (self._sub(c, depth), self._sub(a, depth), self._sub(b, depth)))
        if t == "sizeof_expression":
            tn = ts.child_by_field_name("type")
            vn = ts.child_by_field_name("value")
            if tn is not None:
                return self._mk(ts, "sizeof", "sizeof", self._text(tn))
            if vn is not None:
                return self._mk(ts, "sizeof", "sizeof", "", (self._sub(vn, depth),))
            return self._mk(ts, "other")
        if t in ("initializer_list", "argument_list"):
            return self._mk(ts, "init", "", "", [self._sub(c, depth) for c in ts.named_children if c.type != "comment"])
        if t == "compound_literal_expression":
            tn = ts.child_by_field_name("type")
            vn = ts.child_by_field_name("value")
            kids = [self._sub(vn, depth)] if vn is not None else []
            return self._mk(ts, "cast", "functional", self._text(tn) if tn is not None else "", kids)
        if t == "lambda_expression":
            return self._mk(ts, "lambda")
        if t == "template_function":
            return self._mk(ts, "id", "".join(self._text(ts).split()))
        return self._mk(ts, "other", self._text(ts))

    def _call(self, ts, depth: int) -> Node:
        func = ts.child_by_field_name("function")
        args = ts.child_by_field_name("arguments")
        if func is None:
            return self._mk(ts, "other")
        argv = [self._sub(a, depth) for a in args.named_children if a.type != "comment"] if args is not None else []
        targs = ""
        if func.type == "template_function":
            name_n = func.child_by_field_name("name")
            ta = func.child_by_field_name("arguments")
            targs = self._text(ta)[1:-1].strip() if ta is not None else ""
            name = "".join(self._text(name_n).split()) if name_n is not None else ""
            short = name.rsplit("::", 1)[-1]
            if short in _CAST_CALLS and len(argv) == 1:
                return self._mk(ts, "cast", short, targs, argv)
            callee = self._mk(func, "id", name)
            return self._mk(ts, "call", short, targs, [callee, *argv])
        if func.type == "field_expression":
            fld = func.child_by_field_name("field")
            if fld is not None and fld.type == "template_method":
                ta = fld.child_by_field_name("arguments")
                targs = self._text(ta)[1:-1].strip() if ta is not None else ""
            callee = self._sub(func, depth)
            return self._mk(ts, "call", callee.op, targs, [callee, *argv])
        name = "".join(self._text(func).split())
        if func.type in ("primitive_type", "type_identifier", "identifier") and name in _FUNCTIONAL_TYPES and len(argv) == 1:
            return self._mk(ts, "cast", "functional", name, argv)
        if func.type == "parenthesized_expression" and name[1:-1] in _FUNCTIONAL_TYPES and len(argv) == 1:
            # `(NSUInteger)(n * 4)`, `(uint)(a * b)`: a C-style cast to a type that is not a primitive type of
            # tree-sitter's grammar comes as a call of a parenthesised name
            return self._mk(ts, "cast", "c_style", name[1:-1], argv)
        callee = self._sub(func, depth)
        short = name.rsplit("::", 1)[-1]
        if "<" in short and short.endswith(">"):
            # `c10::checked_convert<uint32_t>(...)`: the template arguments of the last component
            targs = short[short.find("<") + 1 : -1]
            short = short[: short.find("<")]
            if short in _CAST_CALLS and len(argv) == 1:
                return self._mk(ts, "cast", short, targs, argv)
        return self._mk(ts, "call", short, targs, [callee, *argv])
