"""Which host code launches a Metal function, and what that host code says about 32-bit index ranges.

A query helper for rules that need both sides of a launch (like ``hostflow`` for host code and ``metalflow``
for Metal code); it decides nothing itself.

- ``MetalCallIndex`` follows Metal calls upwards: a device helper (``gemm_tile`` in a kernel header) to the
  kernels and kernel templates that call it, and those to the dispatch graph's ``mop:`` nodes (a kernel by
  name, a template through the registrations that instantiate it).
- ``launchers`` walks the graph from those nodes to the host functions that ask for them by name
  (``mop <-resolves- kref <-launches- impl``).
- ``index_range_evidence`` asks the semantic model what, in a launching host function, the helpers it calls and
  its callers (two calls either way), keeps element offsets within 32 bits: a ``with_32bit_indexing()`` split, or
  a check whose condition the model proves to bound a size below 2^32 -- ``can_use_32bit_indexing()``,
  ``canUse32BitIndexMath(t)``, a boolean helper that compares, or a comparison of
  a size (``numel()``, ``size(d)``, ``num_indices * D``) with any value the model bounds by 2^32
  (``std::numeric_limits<int32_t>::max()``, ``INT_MAX``, ``constexpr int64_t kMaxRowNumel = 1L << 30``). A bound
  on what the host dispatches (the grid) bounds no offset and does not count, nor does ``!isTooLargeForMPSGraph(t)``
  (each dimension below 2^31, not the element count).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .hostflow import DISPATCHERS, dispatch_size_args, short_name
from .expressions import walk
from .ranges import UINT32_MAX

# calls that split a launch into 32-bit pieces, or test for it
_SPLITS = {"with_32bit_indexing"}
_INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


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


def launched_elsewhere(graph, mops, path: str) -> bool:
    """Every host function that asks for one of ``mops`` by name lives in a file that embeds its own copy of that
    kernel (`newLibraryWithSource:` of a string in the same `.mm`), and ``path`` is another file: this copy (a
    `kernels/*.metal` left beside the embedded source) is not what runs."""
    impls = launchers(graph, mops)
    if not impls:
        return False
    for impl in impls:
        host = graph.attrs(impl).get("path")
        if host is None or host == path:
            return False
        if not any(kp == host for mop in mops for kp, _k in graph.attrs(mop).get("kernels", [])):
            return False
    return True


def index_range_evidence(graph, model, hosts, impl: str, depth: int = 2) -> Evidence | None:
    """What keeps the launch in ``impl`` within 32 bits (or None): a ``with_32bit_indexing()`` split in it or a
    helper it calls, or a check the model proves to bound a size below 2^32 that holds where it matters -- at the
    launch in ``impl``, at the end of a helper it calls (an unconditional check there), or at the call into
    ``impl``'s chain in a caller (two calls either way)."""
    down = graph.reachable_within(impl, depth)
    up = graph.reachable_within(impl, depth, callers=True)
    for node in down:
        fn = graph.attrs(node).get("function")
        if fn is not None and any(c.name in _SPLITS for c in fn.calls):
            return Evidence(fn.name, graph.attrs(node).get("path", ""), "calls `with_32bit_indexing()`")
    chain = {short_name(graph.attrs(n).get("function").name) for n in up if graph.attrs(n).get("function") is not None}
    for node in dict.fromkeys(down + up):
        attrs = graph.attrs(node)
        fn = attrs.get("function")
        if fn is None or not fn.stmts:
            continue
        fm = model.function(fn, hosts.get(attrs.get("path", "")))
        if node == impl:
            at = [c.stmt for c in fn.calls if c.name in DISPATCHERS and c.stmt >= 0][:1] or [len(fn.stmts) - 1]
        elif node in up:
            at = [c.stmt for c in fn.calls if c.stmt >= 0 and short_name(c.name) in chain and c.name != short_name(fn.name)]
        else:
            top = [i for i, st in enumerate(fn.stmts) if not st.parents]
            at = top[-1:]
        grid = {fm.key(a.tree, c.stmt) for c in fn.calls for a in dispatch_size_args(c) if a.tree is not None}
        flag = _width_flag(fm, fn)
        if flag is not None:
            return Evidence(fn.name, attrs.get("path", ""), flag)
        for stmt in at:
            got = _bounded_size(fm, stmt, grid)
            if got is not None:
                return Evidence(fn.name, attrs.get("path", ""), got)
    return None


def _width_flag(fm, fn) -> str | None:
    """A call that is handed a flag the model knows is a 32-bit test (`use_u32 = offsetsFitIn<uint32_t>(a, b)`,
    `iter.can_use_32bit_indexing()`): the launch picks its kernel or index type by the width
    (`mtlDispatchByIndexWidth<uint32_t, uint64_t>(use_u32, ...)`, `mtlIdxSuffix(use_u32)`)."""
    for c in fn.calls:
        for a in c.args:
            n = a.tree
            if n is None or n.kind not in ("id", "call", "unary"):
                continue
            if any(k.endswith("#32bit") for k in fm.prove(n, True, c.stmt)):
                return f"picks the index width by `{a.text}` (line {c.span.line})"
    return None


def _bounded_size(fm, stmt: int, grid: set[str]) -> str | None:
    """A dominating check at ``stmt`` that the model proves to bound a size (a numel, a dimension's size or
    stride, a product of them) below 2^32, or to test a tensor for 32-bit indexing; None if there is none."""
    for key, b in sorted(fm.bounds(stmt).items()):
        if key in grid or b.condition is None:
            continue
        if key.endswith("#32bit"):
            return f"tests `{key[: -len('#32bit')]}` for 32-bit indexing (line {b.condition.line})"
        iv = b.interval
        if iv.hi is None or iv.hi > UINT32_MAX + 1 or (iv.lo is not None and iv.lo > 0 and iv.lo == iv.hi):
            continue
        cond = b.condition
        sizes = {fm.key(n, cond.stmt) for n in walk(cond.node) if n.kind in ("call", "id", "binary") and fm.extent(n, cond.stmt) is not None}
        if key in sizes or key.endswith(".numel()"):
            return f"bounds `{key}` below 2^32 (line {cond.line})"
    return None
