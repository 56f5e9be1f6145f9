"""Reaching definitions inside one function: which assignments of a local can reach a statement.

Branches are exact: an assignment in a branch that does not contain the use reaches it only if that branch
can fall through (it does not end in ``return``/``throw``/``TORCH_CHECK(false)``), and an assignment in one arm
of an ``if`` never hides one in the other. Loops are conservative: an assignment anywhere in a loop that encloses
the use reaches it, before or after it. Increments (``++i``, ``i += k``) are definitions with no known value.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..facts.cpp import Function
from .expressions import Node, walk

_LOOPS = {"for_statement", "for_range_loop", "while_statement", "do_statement"}
_TERMINATORS = ("return", "throw", "TORCH_CHECK(false", "AT_ERROR", "TORCH_INTERNAL_ASSERT(false", "continue", "break")


@dataclass(frozen=True)
class Definition:
    stmt: int
    value: Node | None  # None: the new value is not known (an increment, a compound assignment)
    op: str = "="
    rhs: Node | None = None  # a compound assignment's right-hand side (`i += 4`: `4`)


def _block_terminates(fn: Function, idx: int) -> bool:
    """The statements nested under ``idx`` end in a jump (the last one at depth one is a return/throw)."""
    last = None
    for k in range(idx + 1, len(fn.stmts)):
        s = fn.stmts[k]
        if idx not in s.parents:
            break
        if s.parents and s.parents[-1] == idx:
            last = s
    return last is not None and last.text.lstrip().startswith(_TERMINATORS)


def runs_after(fn: Function, u: int, j: int) -> bool:
    """Statement ``j`` can run after statement ``u``: it comes later and no block that holds ``u`` but not ``j``
    ends in a jump (`if (cpu) { ...u...; return; } ...j...` cannot reach ``j``). Loops are not followed."""
    st = fn.stmts
    if not (0 <= u < j < len(st)):
        return False
    pj = set(st[j].parents) | {j}
    return not any(_block_terminates(fn, p) for p in st[u].parents if p not in pj)


def runs_before(fn: Function, j: int, u: int) -> bool:
    """Statement ``j`` runs before statement ``u`` on every path through both (it comes earlier, in a block that
    encloses ``u``); an early exit between them is not looked for."""
    st = fn.stmts
    return 0 <= j < u < len(st) and set(st[j].parents) <= set(st[u].parents)


def _increments(update: Node | None, name: str) -> bool:
    """A `for` header's update only increases ``name``: `i++`, `++i`, `i += 4`."""
    if update is None:
        return False
    n = update
    while n.kind == "other" and len(n.kids) == 1:  # a parenthesised update
        n = n.kids[0]
    if n.kind in ("unary", "postfix") and n.op == "++" and n.kids and n.kids[0].kind == "id" and n.kids[0].op == name:
        return True
    if n.kind == "assign" and n.op == "+=" and len(n.kids) == 2 and n.kids[0].kind == "id" and n.kids[0].op == name:
        r = n.kids[1]
        return r.kind == "int" and not r.op.startswith("-")
    return False


class Definitions:
    def __init__(self, fn: Function):
        self.fn = fn
        self._assigns: dict[str, list[Definition]] = {}
        for a in fn.assigns:
            name = a.lhs.strip()
            if name.isidentifier():
                self._assigns.setdefault(name, []).append(Definition(a.stmt, a.rhs.tree if a.op == "=" else None, a.op, a.rhs.tree))
        for d in fn.decls:
            # a `for` header's variable is stepped by the header's update: inside the loop its value is not known
            if 0 <= d.stmt < len(fn.stmts) and fn.stmts[d.stmt].parents:
                loop = fn.stmts[d.stmt].parents[-1]
                if fn.stmts[loop].kind == "for_statement" and fn.stmts[d.stmt].text in fn.stmts[loop].text:
                    up = getattr(fn.stmts[loop], "update", None)
                    self._assigns.setdefault(d.name, []).append(Definition(d.stmt, None, "step+" if _increments(up, d.name) else "step"))
        for i, s in enumerate(fn.stmts):
            if s.tree is None:
                continue
            for n in walk(s.tree):
                if n.kind in ("unary", "postfix") and n.op in ("++", "--") and n.kids and n.kids[0].kind == "id":
                    self._assigns.setdefault(n.kids[0].op, []).append(Definition(i, None, n.op))

    def assigned(self, name: str) -> bool:
        return name in self._assigns

    def reaching(self, name: str, decl_stmt: int, use_stmt: int) -> list[Definition]:
        """Assignments of ``name`` (declared at ``decl_stmt``) that may reach ``use_stmt``; the declaration's own
        initialiser is not included."""
        out = []
        stmts = self.fn.stmts
        use_chain = set(stmts[use_stmt].parents) | {use_stmt} if 0 <= use_stmt < len(stmts) else set()
        loops_around_use = {p for p in use_chain if 0 <= p < len(stmts) and stmts[p].kind in _LOOPS}
        for d in self._assigns.get(name, ()):
            if d.stmt < 0 or (d.stmt <= decl_stmt and not d.op.startswith("step")):
                continue
            if d.stmt == use_stmt and not d.op.startswith("step"):
                continue  # `x = f(x)`: the use reads the old value
            d_chain = set(stmts[d.stmt].parents) if d.stmt < len(stmts) else set()
            in_loop = bool(d_chain & loops_around_use)
            if d.stmt > use_stmt and not in_loop:
                continue
            # the branches of d not shared with the use: each must fall through for d to reach the use
            private = [p for p in stmts[d.stmt].parents if p not in use_chain] + [d.stmt]
            if not in_loop and any(_block_terminates(self.fn, p) for p in private[:-1]):
                continue
            out.append(d)
        return out
