"""Language-level facts from a tree-sitter-cpp tree: functions, statements, calls, declarations, casts.

Host code and Metal code both go through here; ``host.py`` and ``metal.py`` add what is specific to each.
All texts are compact (runs of white space folded to one space); spans point into the original file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..model import Span
from ..semantic.expressions import Node, TreeBuilder
from ..source import ByteToChar, LineIndex

_WS = re.compile(r"\s+")


def compact(text: str) -> str:
    # str.split() and \s split on the same (Unicode) white space; this is _WS.sub(" ", text).strip(), faster
    return " ".join(text.split())


@dataclass(frozen=True)
class Expr:
    text: str
    span: Span
    tree: Node | None = field(default=None, compare=False, repr=False)  # the expression tree (semantic model)


@dataclass(frozen=True)
class Call:
    callee: str  # e.g. "lib.exec_binary_kernel", "mtl_setArgs", "computeEncoder.setBuffer"
    name: str  # last component: "exec_binary_kernel"
    receiver: str  # "lib", "iter", "" for free functions
    template: str  # template arguments: "1" for mtl_setArgs<1>
    args: tuple[Expr, ...]
    span: Span
    stmt: int  # index of the innermost enclosing statement, -1 outside functions
    message_send: bool  # written as an Objective-C message send
    blocks: tuple[str, ...]  # names of the calls whose block/lambda arguments enclose this call
    tree: Node | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Stmt:
    kind: str  # tree-sitter node type
    text: str  # whole statement, or only the header for if/for/while/switch
    span: Span
    parents: tuple[int, ...]  # enclosing compound statements (if/for/while/...), outermost first
    blocks: tuple[str, ...]
    branch: str = ""  # "then" / "else" for a statement directly inside an if
    # the statement's expression: an if/while/switch/for condition, a for-range's range, an expression
    # statement's expression, a return's value (None for declarations and the rest)
    tree: Node | None = field(default=None, compare=False, repr=False)
    var: str = ""  # a range-for's loop variable: `sub` in `for (auto&& sub : iter.with_32bit_indexing())`
    update: Node | None = field(default=None, compare=False, repr=False)  # a `for` header's update: `i++`


@dataclass(frozen=True)
class Decl:
    type: str
    name: str
    init: Expr | None
    span: Span
    stmt: int
    array: bool = False
    reference: bool = False
    pointer: bool = False  # declared through a pointer declarator: `device float* p = ...`


@dataclass(frozen=True)
class Cast:
    kind: str  # "static_cast" | "c_style" | "functional"
    type: str
    operand: Expr
    span: Span
    stmt: int
    tree: Node | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Assign:
    lhs: str
    rhs: Expr
    span: Span
    stmt: int
    op: str = "="


@dataclass(frozen=True)
class Subscript:
    array: str  # the subscripted expression: "output", "tile[c]", "params.sizes"
    index: Expr  # what is inside the brackets
    span: Span  # the whole ``array[index]``
    stmt: int
    tree: Node | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class Param:
    type: str
    name: str
    span: Span
    default: str = ""
    raw: str = ""  # the parameter's original text (Metal: with its [[attribute]])
    space: str = ""  # Metal address space of a pointer or reference: "device", "constant", "threadgroup", "thread"


@dataclass
class Function:
    name: str
    kind: str  # "function" | "impl_func" | "method" | "kernel"
    params: tuple[Param, ...]
    span: Span
    name_span: Span
    body_span: Span | None
    return_type: str = ""
    template: bool = False
    qualifiers: str = ""  # original text before the name: "static inline", "kernel void", ...
    # a template's parameters: non-type ones with their type (`int N`), type ones with type "typename"
    template_params: tuple[Param, ...] = ()
    stmts: list[Stmt] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    decls: list[Decl] = field(default_factory=list)
    casts: list[Cast] = field(default_factory=list)
    assigns: list[Assign] = field(default_factory=list)
    subscripts: list[Subscript] = field(default_factory=list)

    def stmt_of(self, offset: int) -> int:
        best = -1
        for i, s in enumerate(self.stmts):
            if s.span.start <= offset < s.span.end:
                best = i
        return best


_COMPOUND = {
    "if_statement",
    "for_statement",
    "for_range_loop",
    "while_statement",
    "do_statement",
    "switch_statement",
    "case_statement",
    "try_statement",
}
_SIMPLE = {
    "expression_statement",
    "declaration",
    "return_statement",
    "throw_statement",
    "break_statement",
    "continue_statement",
    "goto_statement",
    "alias_declaration",
    "static_assert_declaration",
}
_IMPL_FUNC = re.compile(r"^TORCH_IMPL_FUNC\s*\(\s*(\w+)\s*\)")
_LEAD = re.compile(r"(\[\[\s*kernel\s*\]\]|\bkernel|\bvertex|\bfragment)\s*$")
_NAME = re.compile(r"[A-Za-z_]\w*")
_TRAILING_NAME = re.compile(r"[A-Za-z_]\w*\s*$")
_PARAM_ATTR = re.compile(r"\s*(\[\[.*?\]\])", re.S)
_ADDRESS_SPACE = re.compile(r"(?<![\w:])(device|constant|threadgroup_imageblock|threadgroup|thread|ray_data|object_data)\b")
_LAST_NAME = re.compile(r"([A-Za-z_]\w*)\s*$")


class CppFacts:
    """Walks one tree once, filling ``functions``."""

    def __init__(self, text: str, masked: str, tree, index: LineIndex, base: int = 0):
        self.text = text
        self.masked = masked
        self.index = index
        self.base = base  # offset of this text inside the reported file (embedded Metal)
        self.b2c = ByteToChar(masked)
        self._ascii = self.b2c.table is None  # byte offsets are character offsets
        self._spans: dict[tuple[int, int], Span] = {}  # one Span per region (nodes are visited more than once)
        self.functions: list[Function] = []
        self.trees = TreeBuilder(self)
        # file scope: `typedef`/`using` aliases, struct fields, `constexpr`/`const` values (semantic model)
        self.typedefs: dict[str, str] = {}
        # function name -> the default argument of each parameter ("" for none), from file-scope prototypes
        # (`id<MTLBuffer> f(..., bool use_64bit_index = false);` in a header): what a call that omits it passes
        self.param_defaults: dict[str, tuple[str, ...]] = {}
        self.structs: dict[str, dict[str, str]] = {}
        self.constants: dict[str, tuple[str, Node]] = {}
        self._walk_top(tree.root_node)

    # ---------------------------------------------------------------- helpers
    def off(self, b: int) -> int:
        return b if self._ascii else self.b2c(b)

    def span(self, node) -> Span:
        if self._ascii:
            key = (self.base + node.start_byte, self.base + node.end_byte)
        else:
            key = (self.base + self.b2c(node.start_byte), self.base + self.b2c(node.end_byte))
        sp = self._spans.get(key)
        if sp is None:
            sp = self._spans[key] = self.index.span(*key)
        return sp

    def raw(self, node) -> str:
        if self._ascii:
            return self.text[node.start_byte : node.end_byte]
        return self.text[self.off(node.start_byte) : self.off(node.end_byte)]

    def mtext(self, node) -> str:
        if self._ascii:
            return self.masked[node.start_byte : node.end_byte]
        return self.masked[self.off(node.start_byte) : self.off(node.end_byte)]

    def ex(self, node) -> Expr:
        """The expression fact of ``node``: its compact text, span and tree."""
        tree = self.trees.build(node)
        return Expr(tree.text, self.span(node), tree)

    # ---------------------------------------------------------------- functions
    def _walk_top(self, root) -> None:
        stack = [root]
        while stack:
            node = stack.pop()
            t = node.type
            if t == "function_definition":
                self._function(node)
                continue  # nested lambdas belong to the function
            if t in ("type_definition", "alias_declaration", "struct_specifier", "class_specifier", "declaration"):
                self._file_scope(node)
            if t in ("template_declaration",):
                for c in reversed(node.named_children):
                    stack.append(c)
                continue
            for c in reversed(node.children):
                stack.append(c)

    def _file_scope(self, node) -> None:
        """Typedefs, aliases, struct fields and constants declared outside functions."""
        t = node.type
        if t == "type_definition":
            tn = node.child_by_field_name("type")
            if tn is None:
                return
            base = compact(self.mtext(tn))
            for d in node.children_by_field_name("declarator"):
                names = _NAME.findall(self.mtext(d))
                if names:
                    ptr = "*" if "*" in self.mtext(d) else ""
                    self.typedefs[names[-1]] = base + ptr
        elif t == "alias_declaration":
            nm = node.child_by_field_name("name")
            tn = node.child_by_field_name("type")
            if nm is not None and tn is not None:
                self.typedefs[compact(self.mtext(nm))] = compact(self.mtext(tn))
        elif t in ("struct_specifier", "class_specifier"):
            nm = node.child_by_field_name("name")
            body = node.child_by_field_name("body")
            if nm is None or body is None:
                return
            fields: dict[str, str] = {}
            for fd in body.named_children:
                if fd.type != "field_declaration":
                    continue
                tn = fd.child_by_field_name("type")
                if tn is None:
                    continue
                base = compact(self.mtext(tn))
                for d in fd.children_by_field_name("declarator"):
                    dt = self.mtext(d)
                    names = _NAME.findall(dt.split("[")[0])
                    if names:
                        fields[names[-1]] = base + ("[]" if "[" in dt else "")
            self.structs[compact(self.mtext(nm))] = fields
        elif t == "declaration":
            tn = node.child_by_field_name("type")
            if tn is None:
                return
            for d in node.children_by_field_name("declarator"):
                fd = d
                while fd is not None and fd.type in ("pointer_declarator", "reference_declarator", "attributed_declarator"):
                    fd = fd.child_by_field_name("declarator") or (fd.named_children[-1] if fd.named_child_count else None)
                if fd is not None and fd.type == "function_declarator":
                    plist = fd.child_by_field_name("parameters")
                    if plist is None or "=" not in self.mtext(plist):
                        continue  # no default argument: nothing a call could omit
                    name, _ = self._declarator_name(fd)
                    if name:
                        defaults = tuple(p.default for p in self._params(plist))
                        if any(defaults):
                            self.param_defaults[name.split("::")[-1]] = defaults
            qual = compact(self.masked[self.off(node.start_byte) : self.off(tn.start_byte)])
            typ = (qual + " " + compact(self.mtext(tn))).strip()
            if "const" not in typ.split() and "constexpr" not in typ.split():
                return
            for d in node.children_by_field_name("declarator"):
                if d.type != "init_declarator":
                    continue
                target = d.child_by_field_name("declarator")
                val = d.child_by_field_name("value")
                if target is None or val is None:
                    continue
                names = _NAME.findall(self.mtext(target).split("[")[0])
                if names and "[" not in self.mtext(target):
                    self.constants[names[-1]] = (typ, self.trees.build(val))

    def _declarator_name(self, decl) -> tuple[str, object]:
        """Name of a function declarator and the node naming it."""
        node = decl
        while node is not None and node.type in (
            "function_declarator",
            "pointer_declarator",
            "reference_declarator",
            "attributed_declarator",
        ):
            inner = node.child_by_field_name("declarator")
            if inner is None and node.type == "reference_declarator" and node.named_child_count:
                inner = node.named_children[-1]  # tree-sitter-cpp gives `& f(...)` no "declarator" field
            if inner is None:
                break
            if inner.type == "function_declarator" or inner.type.endswith("declarator"):
                node = inner
                continue
            node = inner
            break
        if node is None:
            return "", decl
        return compact(self.mtext(node)), node

    def _function(self, node) -> None:
        decl = node.child_by_field_name("declarator")
        body = node.child_by_field_name("body")
        if decl is None:
            return
        head = compact(self.mtext(decl))
        kind = "function"
        m = _IMPL_FUNC.match(head)
        name_node = decl
        if m:
            name = m.group(1)
            kind = "impl_func"
            inner = decl.child_by_field_name("declarator")
            name_node = inner if inner is not None else decl
            params_node = decl.child_by_field_name("parameters")
        else:
            name, name_node = self._declarator_name(decl)
            fd = decl
            while fd is not None and fd.type != "function_declarator":
                # reference_declarator (`Tensor& f(...)`) holds its declarator as an unnamed child
                fd = fd.child_by_field_name("declarator") or next((c for c in fd.named_children if c.type.endswith("declarator")), None)
            params_node = fd.child_by_field_name("parameters") if fd is not None else None
        if not name:
            return
        params = self._params(params_node) if params_node is not None else ()
        rtype = node.child_by_field_name("type")
        start = self.off(node.start_byte)
        prefix = self.text[start : self.off(name_node.start_byte)]
        lead = _LEAD.search(self.text[max(0, start - 40) : start])
        if lead:
            prefix = lead.group(1) + " " + prefix
        parent = node.parent
        template = parent is not None and parent.type == "template_declaration"
        tparams: tuple[Param, ...] = ()
        if template:
            tlist = parent.child_by_field_name("parameters")
            if tlist is not None:
                kinds = ("type_parameter_declaration", "optional_type_parameter_declaration", "variadic_type_parameter_declaration")
                typed = tuple(Param(type="typename", name=self.mtext(c.named_children[0]).strip(), span=self.span(c))
                              for c in tlist.named_children if c.type in kinds and c.named_children)
                tparams = typed + self._params(tlist)
        if parent is not None and parent.type == "field_declaration_list":
            kind = "method"
        fn = Function(
            name=name,
            kind=kind,
            params=params,
            span=self.span(parent if template else node),
            name_span=self.span(name_node),
            body_span=self.span(body) if body is not None else None,
            return_type=compact(self.mtext(rtype)) if rtype is not None else "",
            template=template,
            qualifiers=compact(prefix),
            template_params=tparams,
        )
        self.functions.append(fn)
        if body is not None:
            self._body(fn, body, (), (), "")

    def _params(self, plist) -> tuple[Param, ...]:
        out = []
        for p in plist.named_children:
            if p.type not in ("parameter_declaration", "optional_parameter_declaration", "variadic_parameter_declaration"):
                continue
            d = p.child_by_field_name("declarator")
            t = p.child_by_field_name("type")
            name = ""
            if d is not None:
                nm = _NAME.findall(self.mtext(d))
                name = nm[-1] if nm else ""
            typ = compact(self.mtext(p))
            if d is not None:
                typ = compact(self.masked[self.off(p.start_byte) : self.off(d.start_byte)] + _TRAILING_NAME.sub("", self.mtext(d).split("=")[0]))
            elif t is not None:
                typ = compact(self.mtext(p))
            default = ""
            dv = p.child_by_field_name("default_value")
            if dv is not None:
                default = compact(self.mtext(dv))
            # Metal attributes were masked: the original text after the parameter up to ',' or ')' holds them
            end = self.off(p.end_byte)
            tail = self.text[end : end + 200]
            tm = _PARAM_ATTR.match(tail)
            raw = compact(self.raw(p) + (" " + tm.group(1) if tm else ""))
            # the address space was masked and may lie before the node: the original text back to `(` or `,`
            start = self.off(p.start_byte)
            lead = self.text[max(0, start - 60) : start]
            lead = lead[max(lead.rfind("("), lead.rfind(",")) + 1 :]
            head = self.text[start : self.off(d.start_byte)] if d is not None else ""
            sm = _ADDRESS_SPACE.search(lead + " " + head)
            out.append(Param(type=typ, name=name, span=self.span(p), default=default, raw=raw, space=sm.group(1) if sm else ""))
        return tuple(out)

    # ---------------------------------------------------------------- bodies
    def _body(self, fn: Function, node, parents: tuple[int, ...], blocks: tuple[str, ...], branch: str) -> None:
        """Visit ``node`` (a statement or expression) inside ``fn``."""
        t = node.type
        if t == "compound_statement":
            for c in node.named_children:
                self._body(fn, c, parents, blocks, branch)
            return
        if t in _COMPOUND:
            idx = len(fn.stmts)
            header = self._header(node)
            var = ""
            if t == "for_range_loop":
                dn = node.child_by_field_name("declarator")
                names = _NAME.findall(self.mtext(dn)) if dn is not None else []
                var = names[-1] if names else ""
            upd = node.child_by_field_name("update") if t == "for_statement" else None
            fn.stmts.append(Stmt(t, header, self.span(node), parents, blocks, branch, self._stmt_tree(node), var,
                                 self.trees.build(upd) if upd is not None else None))
            inner_parents = parents + (idx,)
            for c in node.named_children:
                if t == "if_statement":
                    fname = _field_of(node, c)
                    if fname == "condition":
                        self._expr(fn, c, idx, blocks)
                    elif fname == "consequence":
                        self._body(fn, c, inner_parents, blocks, "then")
                    elif fname == "alternative":
                        for cc in c.named_children:
                            self._body(fn, cc, inner_parents, blocks, "else")
                    continue
                if c.type in ("compound_statement",) or c.type in _COMPOUND or c.type in _SIMPLE:
                    self._body(fn, c, inner_parents, blocks, "")
                else:
                    self._expr(fn, c, idx, blocks)
            return
        if t in _SIMPLE or t.endswith("_statement") or t == "declaration":
            idx = len(fn.stmts)
            fn.stmts.append(Stmt(t, compact(self.mtext(node)), self.span(node), parents, blocks, branch, self._stmt_tree(node)))
            if t == "declaration":
                self._declaration(fn, node, idx)
            self._expr(fn, node, idx, blocks)
            return
        # anything else (ERROR nodes, stray expressions): still mine it for calls
        self._expr(fn, node, len(fn.stmts) - 1, blocks)

    def _stmt_tree(self, node) -> Node | None:
        t = node.type
        target = None
        if t in ("if_statement", "while_statement", "switch_statement", "do_statement"):
            c = node.child_by_field_name("condition")
            if c is not None and c.type == "condition_clause":
                c = c.child_by_field_name("value")
            elif c is not None and c.type == "parenthesized_expression" and c.named_child_count == 1:
                c = c.named_children[0]
            target = c
        elif t == "for_statement":
            target = node.child_by_field_name("condition")
        elif t == "for_range_loop":
            target = node.child_by_field_name("right")
        elif t == "case_statement":
            target = node.child_by_field_name("value")  # the label (None for `default:`)
        elif t in ("expression_statement", "return_statement", "throw_statement"):
            kids = [c for c in node.named_children if c.type != "comment"]
            target = kids[0] if kids else None
        if target is None or target.type in ("declaration", "init_declarator", "compound_statement"):
            return None
        return self.trees.build(target)

    def _header(self, node) -> str:
        body = None
        for fname in ("consequence", "body"):
            body = node.child_by_field_name(fname)
            if body is not None:
                break
        if body is None:
            return compact(self.mtext(node))[:400]
        return compact(self.masked[self.off(node.start_byte) : self.off(body.start_byte)])

    def _declaration(self, fn: Function, node, idx: int) -> None:
        tnode = node.child_by_field_name("type")
        base_type = compact(self.mtext(tnode)) if tnode is not None else ""
        qual = compact(self.masked[self.off(node.start_byte) : self.off(tnode.start_byte)]) if tnode is not None else ""
        typ = (qual + " " + base_type).strip()
        for d in node.children_by_field_name("declarator"):
            init = None
            target = d
            if d.type == "init_declarator":
                target = d.child_by_field_name("declarator")
                val = d.child_by_field_name("value")
                if val is not None:
                    init = self.ex(val)
            if target is None:
                continue
            ttext = self.mtext(target)
            names = _NAME.findall(ttext.split("[")[0])
            if not names:
                continue
            fn.decls.append(
                Decl(
                    type=typ,
                    name=names[-1],
                    init=init,
                    span=self.span(d),
                    stmt=idx,
                    array="[" in ttext,
                    reference="&" in ttext,
                    pointer=target.type == "pointer_declarator",
                )
            )

    def _expr(self, fn: Function, node, idx: int, blocks: tuple[str, ...]) -> None:
        stack = [(node, blocks)]
        while stack:
            n, blk = stack.pop()
            t = n.type
            if t == "lambda_expression":
                body = n.child_by_field_name("body")
                if body is not None:
                    self._body(fn, body, fn.stmts[idx].parents + (idx,) if 0 <= idx < len(fn.stmts) else (), blk, "")
                continue
            if t == "call_expression":
                call = self._call(fn, n, idx, blk)
                if call is not None:
                    fn.calls.append(call)
                    inner = blk + (call.name,)
                    func = n.child_by_field_name("function")
                    if func is not None:
                        stack.append((func, blk))
                    args = n.child_by_field_name("arguments")
                    if args is not None:
                        for c in reversed(args.named_children):
                            stack.append((c, inner if c.type == "lambda_expression" else blk))
                    continue
            elif t == "cast_expression":
                tn = n.child_by_field_name("type")
                vn = n.child_by_field_name("value")
                if tn is not None and vn is not None:
                    fn.casts.append(Cast("c_style", compact(self.mtext(tn)), self.ex(vn), self.span(n), idx, self.trees.build(n)))
            elif t == "subscript_expression":
                an = n.child_by_field_name("argument")
                ixn = n.child_by_field_name("indices") or n.child_by_field_name("index")
                if an is not None and ixn is not None:
                    inner = [c for c in ixn.named_children if c.type != "comment"] if ixn.type == "subscript_argument_list" else [ixn]
                    if len(inner) == 1:
                        fn.subscripts.append(Subscript(compact(self.mtext(an)), self.ex(inner[0]), self.span(n), idx, self.trees.build(n)))
            elif t == "assignment_expression":
                ln = n.child_by_field_name("left")
                rn = n.child_by_field_name("right")
                opn = n.child_by_field_name("operator")
                if ln is not None and rn is not None:
                    fn.assigns.append(
                        Assign(compact(self.mtext(ln)), self.ex(rn), self.span(n), idx, compact(self.mtext(opn)) if opn is not None else "=")
                    )
            for c in reversed(n.named_children):
                stack.append((c, blk))

    def _call(self, fn: Function, node, idx: int, blocks) -> Call | None:
        func = node.child_by_field_name("function")
        args = node.child_by_field_name("arguments")
        if func is None:
            return None
        template = ""
        last = func
        while last is not None and last.type == "qualified_identifier":
            last = last.child_by_field_name("name")  # `mps::impl<int32_t>`: the last component's arguments
        if last is not None and last.type == "template_function":
            targs = last.child_by_field_name("arguments")
            template = compact(self.mtext(targs))[1:-1] if targs is not None else ""
        elif func.type == "field_expression":
            fld = func.child_by_field_name("field")
            if fld is not None and fld.type == "template_method":
                targs = fld.child_by_field_name("arguments")
                template = compact(self.mtext(targs))[1:-1] if targs is not None else ""
        callee = "".join(self.mtext(func).split())
        if template:
            callee = callee[: callee.find("<")] if "<" in callee else callee
        name_m = _LAST_NAME.search(callee)
        name = name_m.group(1) if name_m else callee
        receiver = ""
        if func.type == "field_expression":
            arg = func.child_by_field_name("argument")
            if arg is not None:
                receiver = "".join(self.mtext(arg).split())
        elif "::" in callee:
            receiver = ""
        argv: list[Expr] = []
        if args is not None:
            for a in args.named_children:
                if a.type == "comment":
                    continue
                argv.append(self.ex(a))
        tree = self.trees.build(node)
        if name == "static_cast" or name == "reinterpret_cast":
            if argv:
                fn.casts.append(Cast("static_cast" if name == "static_cast" else name, template, argv[0], self.span(node), idx, tree))
        elif func.type in ("primitive_type", "type_identifier", "identifier") and _is_type_name(callee) and len(argv) == 1:
            fn.casts.append(Cast("functional", callee, argv[0], self.span(node), idx, tree))
        elif func.type == "parenthesized_expression" and _is_type_name(callee[1:-1]) and len(argv) == 1:
            # `(NSUInteger)(n * 4)`: a C-style cast to a type tree-sitter does not know (not a primitive type),
            # parsed as a call of a parenthesised name
            fn.casts.append(Cast("c_style", callee[1:-1], argv[0], self.span(node), idx, tree))
        start = self.off(node.start_byte)
        return Call(
            callee=callee,
            name=name,
            receiver=receiver,
            template=template,
            args=tuple(argv),
            span=self.span(node),
            stmt=idx,
            message_send=self.text[start : start + 1] == "[" or (start > 0 and self.text[start - 1] == "["),
            blocks=tuple(blocks),
            tree=tree,
        )


_TYPE_NAMES = {
    "int", "uint", "unsigned", "long", "ulong", "short", "ushort", "char", "uchar", "float", "half", "bfloat",
    "double", "bool", "size_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t",
    "uint64_t", "NSUInteger", "NSInteger", "ptrdiff_t", "intptr_t", "uintptr_t",
}


def _is_type_name(text: str) -> bool:
    return text in _TYPE_NAMES


def _field_of(parent, child) -> str:
    for i, c in enumerate(parent.children):
        if c.id == child.id:
            return parent.field_name_for_child(i) or ""
    return ""
