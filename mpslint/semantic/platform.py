"""What the supported macOS releases make unreachable.

PyTorch asks which macOS it runs on with ``is_macos_13_or_newer(MacOSVersion::MACOS_VER_X_Y_PLUS)``
(``ATen/mps/MPSDevice.h``), newer sources with ``is_macos_at_least(MacOSVersion::MACOS_X_Y)``; older ones also
call ``MPSDevice::getInstance()->isMacOS13Plus(...)``. On every
system the project still supports (``[tool.mpslint] min-macos``, default 14.0: PyTorch refuses the MPS device
below macOS 14 since 2.8, and its wheels from 2.12 on need 14.0) a check for a release at or below that floor is
true. A branch that runs only when such a check is false (the fallback for macOS 13 kept beside a native
kernel) is code no user runs; a patch to it fixes nothing.

The conditions are evaluated in three-valued logic over the expression tree (``!``, ``&&``, ``||``, parentheses):
a condition the floor does not decide (a check for a newer release, anything else) decides nothing.
"""

from __future__ import annotations

import re

from ..facts.cpp import Function
from .expressions import Node, strip_parens
from .guards import dominating_conditions
from .hostflow import is_static, short_name, visible_sites

DEFAULT_MIN_MACOS = "14.0"
VERSION_CHECKS = frozenset({"is_macos_13_or_newer", "is_macos_at_least", "isMacOS13Plus"})
_ENUM = re.compile(r"MACOS_(?:VER_)?(\d+)_(\d+)(?:_PLUS)?$")  # an enumerator's name, not statement text
_FORM = re.compile(r"(\d+)(?:\.(\d+))?$")


def parse_version(text: str) -> tuple[int, int] | None:
    """``"14"`` / ``"14.0"`` -> (14, 0); anything else -> None."""
    m = _FORM.fullmatch(text.strip())
    return (int(m.group(1)), int(m.group(2) or 0)) if m else None


def _checked_release(call: Node) -> tuple[int, int] | None:
    """The release a version check asks for: its ``MacOSVersion`` enumerator; (13, 0) for the default argument."""
    if not call.args:
        return (13, 0)
    arg = strip_parens(call.args[0])
    if arg.kind == "id":
        m = _ENUM.search(arg.op)
        if m:
            return (int(m.group(1)), int(m.group(2)))
    return None


def value_on_supported(node: Node, floor: tuple[int, int]) -> bool | None:
    """``node``'s value on every supported macOS (``floor`` and newer), or None when the floor does not decide it."""
    n = strip_parens(node)
    if n.kind == "unary" and n.op == "!" and n.kids:
        v = value_on_supported(n.kids[0], floor)
        return None if v is None else not v
    if n.kind == "binary" and n.op in ("&&", "||") and len(n.kids) == 2:
        a, b = value_on_supported(n.kids[0], floor), value_on_supported(n.kids[1], floor)
        if n.op == "&&":
            return False if (a is False or b is False) else (True if (a and b) else None)
        return True if (a is True or b is True) else (False if (a is False and b is False) else None)
    if n.kind == "call" and n.op in VERSION_CHECKS:
        release = _checked_release(n)
        if release is not None and release <= floor:
            return True
    return None


def has_version_check(fn: Function) -> bool:
    return any(c.name in VERSION_CHECKS for c in fn.calls)


def unsupported_condition(fn: Function, stmt: int, floor: tuple[int, int]):
    """The dominating condition of ``stmt`` that no supported macOS satisfies (its line is in the ``Condition``),
    or None: ``stmt`` runs only on releases older than ``floor``."""
    for cond in dominating_conditions(fn, stmt):
        v = value_on_supported(cond.node, floor)
        if v is not None and v != cond.truth:
            return cond
    return None


def unsupported_spans(fn: Function, floor: tuple[int, int]) -> list[tuple[int, int]]:
    """Source spans of the statements of ``fn`` that run only on macOS releases older than ``floor``."""
    if not has_version_check(fn):
        return []
    out: list[tuple[int, int]] = []
    for k, s in enumerate(fn.stmts):
        if out and out[-1][0] <= s.span.start < out[-1][1]:
            continue  # inside a statement already known unreachable
        if unsupported_condition(fn, k, floor) is not None:
            out.append((s.span.start, s.span.end))
    return out


def unsupported_code(hosts, floor: tuple[int, int], sites, registered: set[str], escaping: set[str]) -> dict[str, list[tuple[int, int]]]:
    """Per host file, the spans of code that runs only on macOS releases older than ``floor``: statements under a
    version check no supported release fails, and the ``static`` functions whose every call in view sits in such
    code (to a fixpoint: a helper of a macOS 13 fallback is as dead as the fallback)."""
    out: dict[str, list[tuple[int, int]]] = {}
    for path in sorted(hosts):
        for fn in hosts[path].functions:
            spans = unsupported_spans(fn, floor)
            if spans:
                out.setdefault(path, []).extend(spans)
    if not out:
        return out

    def dead_at(path: str, offset: int) -> bool:
        return any(a <= offset < b for a, b in out.get(path, ()))

    changed = True
    while changed:
        changed = False
        for path in sorted(hosts):
            for fn in hosts[path].functions:
                if fn.kind == "impl_func" or not is_static(fn) or dead_at(path, fn.span.start):
                    continue
                name = short_name(fn.name)
                if name in registered or name in escaping:
                    continue
                calls = visible_sites(sites, fn, path)
                if calls and all(dead_at(p, c.span.start) for p, _, c in calls):
                    out.setdefault(path, []).append((fn.span.start, fn.span.end))
                    changed = True
    return {p: sorted(v) for p, v in out.items()}
