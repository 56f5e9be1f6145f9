"""Guards as predicates on values: which checks dominate a statement, and the bounds each one proves.

A check bounds only the value it compares (or one equal to it through reaching definitions): ``A && B`` proves
what either proves, ``A || B`` only what both prove, ``!A`` negates; a check protects only the statements it
dominates (earlier in an enclosing block, or the branch it selects). ``TORCH_CHECK``/``TORCH_INTERNAL_ASSERT``,
``if (...) { throw / return / TORCH_CHECK(false) }``, loop conditions and ``if`` conditions count; so do
``can_use_32bit_indexing()``, ``canUse32BitIndexMath(t)`` and boolean helpers (summarised by the model).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..facts.cpp import Function
from .expressions import Node, strip_parens

CHECKS = {
    "TORCH_CHECK", "TORCH_CHECK_VALUE", "TORCH_CHECK_INDEX", "TORCH_CHECK_TYPE", "TORCH_CHECK_NOT_IMPLEMENTED",
    "TORCH_INTERNAL_ASSERT", "TORCH_INTERNAL_ASSERT_DEBUG_ONLY", "AT_ASSERT", "assert", "TORCH_DCHECK",
    "TORCH_CHECK_LE", "TORCH_CHECK_LT", "TORCH_CHECK_GE", "TORCH_CHECK_GT", "TORCH_CHECK_EQ",
}
_JUMPS = ("return", "throw", "continue", "break", "TORCH_CHECK(false", "TORCH_CHECK_NOT_IMPLEMENTED(false", "AT_ERROR", "TORCH_INTERNAL_ASSERT(false", "TORCH_CHECK_VALUE(false", "TORCH_CHECK_INDEX(false", "goto")
_LOOPS = {"for_statement", "while_statement"}


@dataclass(frozen=True)
class Condition:
    """A condition known to hold (``truth``) at a statement, and where it comes from."""

    node: Node
    truth: bool
    stmt: int  # the statement holding the check
    how: str  # "check" | "if" | "early-exit" | "loop"
    line: int


def _terminates(fn: Function, idx: int, branch: str = "then") -> bool:
    """The ``branch`` of the if at ``idx`` ends in a jump."""
    last = None
    for k in range(idx + 1, len(fn.stmts)):
        s = fn.stmts[k]
        if idx not in s.parents:
            break
        if s.parents and s.parents[-1] == idx and s.branch == branch:
            last = s
    if last is None:
        return False
    text = last.text.lstrip()
    if text.startswith("{"):
        text = text[1:].lstrip()
    return text.startswith(_JUMPS)


def _has_else(fn: Function, idx: int) -> bool:
    for k in range(idx + 1, len(fn.stmts)):
        s = fn.stmts[k]
        if idx not in s.parents:
            break
        if s.parents and s.parents[-1] == idx and s.branch == "else":
            return True
    return False


def _branch_under(fn: Function, stmt: int, anc: int) -> str:
    """Which branch of the if at ``anc`` holds ``stmt``."""
    chain = fn.stmts[stmt].parents + (stmt,)
    if anc not in chain:
        return ""
    i = chain.index(anc)
    if i + 1 < len(chain):
        return fn.stmts[chain[i + 1]].branch
    return ""


def dominating_conditions(fn: Function, stmt: int, checkers: frozenset = frozenset()) -> list[Condition]:
    """Every condition that holds when ``stmt`` runs, nearest first. A call statement to one of ``checkers``
    (validating void functions the model summarises) is a condition too: the call itself, proved true."""
    if not (0 <= stmt < len(fn.stmts)):
        return []
    out: list[Condition] = []
    target = fn.stmts[stmt]
    chain = target.parents
    chain_set = set(chain)
    for anc in reversed(chain):
        a = fn.stmts[anc]
        if a.tree is None:
            continue
        if a.kind == "if_statement":
            br = _branch_under(fn, stmt, anc)
            if br in ("then", "else"):
                out.append(Condition(a.tree, br == "then", anc, "if", a.span.line))
        elif a.kind in _LOOPS:
            out.append(Condition(a.tree, True, anc, "loop", a.span.line))
    for k in range(stmt - 1, -1, -1):
        s = fn.stmts[k]
        if k in chain_set:
            continue
        # dominates only if it sits in a block that encloses stmt
        if tuple(chain[: len(s.parents)]) != tuple(s.parents):
            continue
        if s.kind == "expression_statement" and s.tree is not None:
            n = strip_parens(s.tree)
            if n.kind == "call" and n.op in CHECKS and n.args:
                out.append(Condition(n.args[0], True, k, "check", s.span.line))
            elif n.kind == "call" and n.op in checkers and n.receiver is None:
                out.append(Condition(n, True, k, "call", s.span.line))
        elif s.kind == "if_statement" and s.tree is not None:
            if _terminates(fn, k, "then") and not _has_else(fn, k):
                out.append(Condition(s.tree, False, k, "early-exit", s.span.line))
            elif _has_else(fn, k) and _terminates(fn, k, "else") and not _terminates(fn, k, "then"):
                out.append(Condition(s.tree, True, k, "early-exit", s.span.line))
    return out
