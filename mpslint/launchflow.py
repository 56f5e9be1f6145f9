"""Which host code launches a Metal function, and what that host code says about 32-bit index ranges.

A query helper for rules that need both sides of a launch (like ``hostflow`` for host code and ``metalflow``
for Metal code); it decides nothing itself.

- ``MetalCallIndex`` follows Metal calls upwards: a device helper (``gemm_tile`` in a kernel header) to the
  kernels and kernel templates that call it, and those to the dispatch graph's ``mop:`` nodes (a kernel by
  name, a template through the registrations that instantiate it).
- ``launchers`` walks the graph from those nodes to the host functions that ask for them by name
  (``mop <-resolves- kref <-launches- impl``).
- ``index_range_evidence`` reads a launching host function, the helpers it calls and its callers (two calls
  either way) for what keeps element offsets within 32 bits: a ``with_32bit_indexing()`` split, a
  ``can_use_32bit_indexing()``/``canUse32BitIndexMath()``/``offsetsFitIn<uint32_t>()`` test, a dispatch on the
  index width, or a comparison of a size (``numel()``, ``size(d)``, ``num_indices * D``; not a grid
  dimension) with a 32-bit limit (``std::numeric_limits<int32_t>::max()``, ``INT_MAX``, ``UINT32_MAX``, ...)
  or a named limit (``kMaxFusedLossNumel``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# calls that split a launch or pick the index width: with_32bit_indexing(), can_use_32bit_indexing(),
# canUse32BitIndexMath(), offsetsFitIn<uint32_t>(...), a dispatch on the index width
SPLIT_CALL = re.compile(r"32_?[Bb]it|[Ff]its?_?[Ii]n(?=[_A-Z0-9]|$)|[Ii]ndex_?[Ww]idth")
_LIMIT = re.compile(
    r"numeric_limits\s*<\s*(?:std::)?u?int(?:32_t)?\s*>\s*::\s*max|numeric_limits\s*<\s*unsigned(?:\s+int)?\s*>\s*::\s*max"
    r"|\b(?:U?INT32_MAX|U?INT_MAX|0x[fF]{8}[uU]?[lL]{0,2}|0x7[fF]{7}[uU]?[lL]{0,2})\b|\bkU?Int32Max\b"
)
# a named limit, as MPS102 accepts it: kMaxFusedLossNumel, MAX_GRID_ELEMENTS, kSizeLimit
_NAMED_LIMIT = re.compile(r"\b(?:k[A-Z]\w*(?:Max|Limit)\w*|kMax\w*|[A-Z][A-Z0-9_]*(?:MAX|LIMIT)[A-Z0-9_]*)\b")
# what is compared must be a size (`numel()`, `size(0)`, `num_indices * D`), not a grid dimension
_SIZE = re.compile(r"(?i)\b\w*(?:numel|size|stride|nbytes|len|elem|count|num_)\w*\b")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"')
_GEOMETRY = re.compile(r"(?i)grid|block|thread")
_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)
_COMPARE = re.compile(r"<=|>=|(?<![<-])<(?![<=])|(?<![->])>(?![>=])")


@dataclass(frozen=True)
class Evidence:
    function: str  # host function holding it
    path: str
    what: str  # "splits with with_32bit_indexing()", "compares with a 32-bit limit"


class MetalCallIndex:
    """Callers of every Metal function, and the graph nodes of the kernels at the top.

    Calls are matched by name, within a file or from a file that includes the callee's header
    (``#include <ATen/native/mps/kernels/gemm_simd.h>``); operators (a functor's ``operator()``) are not
    followed: their name says nothing about which kernel calls them.
    """

    def __init__(self, metal_facts, text_of=None):
        self.callers: dict[str, set[tuple[str, str]]] = {}  # callee name -> {(caller name, caller path)}
        self.defined_in: dict[str, set[str]] = {}
        self.entry: dict[str, set[str]] = {}  # function name -> mop node ids
        self.includes: dict[str, set[str]] = {}  # path -> basenames of the headers it includes
        for mf in metal_facts:
            if text_of is not None and mf.path not in self.includes:
                self.includes[mf.path] = {m.rsplit("/", 1)[-1] for m in _INCLUDE.findall(text_of(mf.path))}
            for fn in mf.functions:
                self.defined_in.setdefault(fn.name, set()).add(mf.path)
                for c in fn.calls:
                    if c.name and c.name != fn.name:
                        self.callers.setdefault(c.name, set()).add((fn.name, mf.path))
            for k in mf.kernels:
                self.entry.setdefault(k.function.name, set()).add("mop:" + k.function.name)
            for reg in mf.registrations:
                self.entry.setdefault(reg.op, set()).add("mop:" + reg.op)
                if reg.kernel:
                    self.entry.setdefault(reg.kernel, set()).add("mop:" + reg.op)

    def _sees(self, caller_path: str, callee_paths: set[str]) -> bool:
        if not callee_paths or caller_path in callee_paths:
            return True
        inc = self.includes.get(caller_path)
        if inc is None:  # no text to read includes from: trust the name
            return True
        return any(p.rsplit("/", 1)[-1] in inc for p in callee_paths)

    def ops_reaching(self, name: str, limit: int = 64) -> set[str]:
        """``mop:`` ids of the kernels that are ``name`` or call it, directly or through other helpers."""
        seen, todo, out = {name}, [name], set()
        while todo and len(seen) < limit:
            cur = todo.pop()
            out |= self.entry.get(cur, set())
            if cur.startswith("operator"):
                continue
            where = self.defined_in.get(cur, set())
            for caller, path in self.callers.get(cur, ()):
                if caller not in seen and self._sees(path, where):
                    seen.add(caller)
                    todo.append(caller)
        return out


def launchers(graph, mops) -> list[str]:
    """Host ``impl:`` nodes that ask for one of ``mops`` by name."""
    out: list[str] = []
    for mop in sorted(mops):
        for kref in graph.into(mop, "resolves"):
            for impl in graph.into(kref, "launches"):
                if impl not in out:
                    out.append(impl)
    return out


def index_range_evidence(graph, impl: str, depth: int = 2) -> Evidence | None:
    """What, in ``impl``, its helpers or its callers, keeps the launch's offsets within 32 bits (or None)."""
    for node in dict.fromkeys(graph.reachable_within(impl, depth) + graph.reachable_within(impl, depth, callers=True)):
        attrs = graph.attrs(node)
        fn = attrs.get("function")
        if fn is None:
            continue
        for c in fn.calls:
            if SPLIT_CALL.search(c.name):
                return Evidence(fn.name, attrs.get("path", ""), f"calls `{c.name}()`")
        for s in fn.stmts:
            head = s.text.split("{", 1)[0] if s.kind in ("if_statement", "while_statement", "for_statement") else s.text
            head = _STRING.sub('""', head)  # a TORCH_CHECK message says nothing
            if _GEOMETRY.search(head):  # a check on the launch grid (`grid_x * blocks <= UINT32_MAX`) bounds no offset
                continue
            if _LIMIT.search(head) and _SIZE.search(_LIMIT.sub(" ", head)) and _COMPARE.search(_LIMIT.sub(" ", head)):
                return Evidence(fn.name, attrs.get("path", ""), "compares a size with a 32-bit limit")
            if _NAMED_LIMIT.search(head) and _SIZE.search(head) and _COMPARE.search(_NAMED_LIMIT.sub(" ", head)):
                return Evidence(fn.name, attrs.get("path", ""), "compares a size with a named limit")
    return None
