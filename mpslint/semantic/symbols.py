"""Symbols: a function's parameters and locals with their declared types, and the file's (and project's)
typedefs, struct fields and constants.

``Scope.lookup(name, stmt)`` finds the declaration in scope at a statement (the innermost earlier declaration
whose block encloses it, else a parameter, else a file-scope constant); types resolve typedefs through the file's
table first, then the project's.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..facts.cpp import Decl, Function, Param
from .expressions import Node
from .types import CType, parse_type


@dataclass(frozen=True)
class Symbol:
    name: str
    type: CType
    type_text: str
    decl: Decl | Param | None  # None for file-scope constants
    init: Node | None
    const: bool  # const / constexpr: its value is its initialiser for its whole lifetime
    stmt: int  # the declaring statement (-1 for parameters and file scope)
    template: bool = False  # a non-type template parameter: a compile-time constant of unknown value


class FileTables:
    """Typedefs, struct fields and constants: one file's, backed by the whole project's."""

    def __init__(self, typedefs: dict[str, str], structs: dict[str, dict[str, str]], constants: dict, project: "FileTables | None" = None):
        self.typedefs = typedefs
        self.structs = structs
        self.constants = constants
        self.project = project

    def typedef(self, name: str) -> str | None:
        t = self.typedefs.get(name)
        if t is None and self.project is not None:
            t = self.project.typedefs.get(name)
        return t

    def all_typedefs(self) -> dict[str, str]:
        if self.project is None:
            return self.typedefs
        merged = dict(self.project.typedefs)
        merged.update(self.typedefs)
        return merged

    def struct(self, name: str) -> dict[str, str] | None:
        s = self.structs.get(name)
        if s is None and self.project is not None:
            s = self.project.structs.get(name)
        return s

    def constant(self, name: str) -> tuple[str, Node] | None:
        c = self.constants.get(name)
        if c is None and self.project is not None:
            c = self.project.constants.get(name)
        return c


def _is_const(type_text: str) -> bool:
    words = type_text.replace("&", " ").split()
    return "const" in words or "constexpr" in words


class Scope:
    """The names a function can see."""

    def __init__(self, fn: Function, tables: FileTables):
        self.fn = fn
        self.tables = tables
        self._typedefs = tables.all_typedefs()
        self._by_name: dict[str, list[Decl]] = {}
        for d in fn.decls:
            self._by_name.setdefault(d.name, []).append(d)
        self._params = {p.name: p for p in fn.params if p.name}
        self._template = {p.name: p for p in getattr(fn, "template_params", ()) if p.name and p.type != "typename"}
        self._types: dict[str, CType] = {}

    def type_of_text(self, text: str) -> CType:
        t = self._types.get(text)
        if t is None:
            t = self._types[text] = parse_type(text, self._typedefs)
        return t

    def _encloses(self, d: Decl, stmt: int) -> bool:
        if stmt < 0 or d.stmt < 0 or d.stmt >= len(self.fn.stmts) or stmt >= len(self.fn.stmts):
            return d.stmt <= stmt
        if d.stmt > stmt:
            return False
        dp = self.fn.stmts[d.stmt].parents
        sp = self.fn.stmts[stmt].parents + (stmt,)
        return tuple(sp[: len(dp)]) == tuple(dp)

    def lookup(self, name: str, stmt: int) -> Symbol | None:
        best = None
        for d in self._by_name.get(name, ()):
            if self._encloses(d, stmt) and (best is None or d.stmt >= best.stmt):
                best = d
        if best is not None:
            typ = self.type_of_text(best.type)
            if best.array:
                typ = CType("container", name=typ.name + "[]", elem=typ)
            return Symbol(name, typ, best.type, best, best.init.tree if best.init is not None else None, _is_const(best.type), best.stmt)
        p = self._params.get(name)
        if p is not None:
            if "[" in p.type:  # `int sizes[3]`
                elem = self.type_of_text(p.type[: p.type.find("[")].replace(name, "").strip())
                return Symbol(name, CType("container", name=p.type, elem=elem), p.type, p, None, False, -1)
            return Symbol(name, self.type_of_text(p.type), p.type, p, None, _is_const(p.type) and "&" not in p.type, -1)
        t = self._template.get(name)
        if t is not None:
            return Symbol(name, self.type_of_text(t.type), t.type, t, None, True, -1, template=True)
        c = self.tables.constant(name)
        if c is not None:
            typ_text, node = c
            return Symbol(name, self.type_of_text(typ_text), typ_text, None, node, True, -1)
        return None

    def field_type(self, struct: CType, field: str) -> CType | None:
        if struct.kind != "struct":
            return None
        fields = self.tables.struct(struct.name.split("<")[0])
        if not fields or field not in fields:
            return None
        t = fields[field]
        if t.endswith("[]"):
            return CType("container", name=t, elem=self.type_of_text(t[:-2]))
        return self.type_of_text(t)
