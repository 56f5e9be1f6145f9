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
# checks that always fail: a jump out of the function, as a throw is
_FAILING = ("TORCH_CHECK(false", "TORCH_CHECK_NOT_IMPLEMENTED(false", "AT_ERROR", "TORCH_INTERNAL_ASSERT(false", "TORCH_CHECK_VALUE(false", "TORCH_CHECK_INDEX(false")
_LOOPS = {"for_statement", "while_statement"}


@dataclass(frozen=True)
class Condition:
    """A condition known to hold (``truth``) at a statement, and where it comes from."""

    node: Node
    truth: bool
    stmt: int  # the statement holding the check
    how: str  # "check" | "if" | "early-exit" | "loop"
    line: int


_JUMP_KINDS = {"return_statement", "throw_statement", "continue_statement", "break_statement", "goto_statement"}


def _jumps(s) -> bool:
    """The statement leaves the block: a return, throw, break, continue or goto, or a check that always fails."""
    if s.kind in _JUMP_KINDS:
        return True
    text = s.text.lstrip()
    if text.startswith("{"):
        text = text[1:].lstrip()
    head = text.split("(", 1)[0].split(None, 1)  # `(void)x;` has no word before its parenthesis
    word = head[0].rstrip(";") if head else ""
    if word in ("return", "throw", "continue", "break", "goto"):
        return True  # a statement kind the parser left as an expression (`throw std::runtime_error(...)`)
    return text.startswith(_FAILING)


def _terminates(fn: Function, idx: int, branch: str = "then") -> bool:
    """The ``branch`` of the if at ``idx`` jumps: one of its own statements is a jump (what follows one in the
    branch, an empty `;` included, never runs)."""
    for k in range(idx + 1, len(fn.stmts)):
        s = fn.stmts[k]
        if idx not in s.parents:
            break
        if s.parents[-1] == idx and s.branch == branch and _jumps(s):
            return True
    return False


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
            out.extend(_fall_through(fn, k))
    return out


def _else_if(fn: Function, idx: int) -> int | None:
    """The if statement that is the whole else branch of the if at ``idx`` (`} else if (...) {`), or None."""
    inner = []
    for k in range(idx + 1, len(fn.stmts)):
        s = fn.stmts[k]
        if idx not in s.parents:
            break  # past the if's statements
        if s.parents[-1] == idx and s.branch == "else":
            inner.append(k)
    if len(inner) == 1 and fn.stmts[inner[0]].kind == "if_statement" and fn.stmts[inner[0]].tree is not None:
        return inner[0]
    return None


def _fall_through(fn: Function, idx: int, depth: int = 0) -> list[Condition]:
    """What holds after the if at ``idx`` for control that leaves it at its end: the negation of a condition whose
    then branch jumps (with or without an else), the condition itself when only the else branch jumps, and along
    an `else if` chain each arm's in turn (`if (a.numel() == 0) { return; } else if (a.numel() == 1) { return; }`
    leaves both false). When every arm jumps, nothing falls through and nothing is claimed."""
    s = fn.stmts[idx]
    then_jumps, has_else = _terminates(fn, idx, "then"), _has_else(fn, idx)
    if then_jumps:
        nested = _else_if(fn, idx) if has_else and depth < 16 else None
        if has_else and nested is None and _terminates(fn, idx, "else"):
            return []  # both arms jump: the end of the if is not reached
        rest = _fall_through(fn, nested, depth + 1) if nested is not None else []
        if nested is not None and not rest and _chain_all_jump(fn, nested, depth + 1):
            return []
        return [Condition(s.tree, False, idx, "early-exit", s.span.line)] + rest
    if has_else and _terminates(fn, idx, "else"):
        return [Condition(s.tree, True, idx, "early-exit", s.span.line)]
    return []


def _chain_all_jump(fn: Function, idx: int, depth: int = 0) -> bool:
    """Every arm of the if (or `else if` chain) at ``idx`` jumps, a final else included."""
    if not _terminates(fn, idx, "then") or not _has_else(fn, idx) or depth > 16:
        return False
    nested = _else_if(fn, idx)
    return _chain_all_jump(fn, nested, depth + 1) if nested is not None else _terminates(fn, idx, "else")
