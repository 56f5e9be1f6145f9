"""The dispatch graph: yaml overloads -> dispatch names -> host implementations -> kernel names -> Metal registrations.

Node ids are strings with a kind prefix; every node has a ``kind`` attribute and every edge a ``type``:

  op:NAME          an overload of native_functions.yaml          (attrs: overload)
  fn:NAME          a dispatch function name (``atan2_out_mps``)   (attrs: name)
  impl:PATH:NAME   a host function or macro-made implementation   (attrs: path, name, span, mpsgraph, origin)
  stub:NAME        a DispatchStub                                  (attrs: name)
  kref:PATH:OFF    a kernel name asked for by host code            (attrs: ref, path)
  mop:NAME         a Metal op or kernel template                   (attrs: name, registrations)

  op  -delegates->   op     structured_delegate
  op  -dispatches->  fn     the MPS key (attr shared=True when CPU/CUDA share the name)
  fn  -implemented_by-> impl
  fn  -uses_stub->   stub   a shared structured kernel reaches its DispatchStub (by PyTorch's naming)
  stub -registered_by-> impl  REGISTER_DISPATCH / REGISTER_MPS_DISPATCH in MPS sources
  impl -calls->      impl   a call to another function of the tree
  impl -launches->   kref
  kref -resolves->   mop
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import networkx as nx

from .facts.native_functions import NativeFunctions, Overload


@dataclass(frozen=True)
class Route:
    kind: str  # "shared" | "mps_specific" | "composite" | "none"
    kernel: str | None
    via: tuple[str, ...]  # overload names followed through structured_delegate


def mps_route(ov: Overload, by_name: dict[str, Overload], _depth: int = 0) -> Route:
    g = ov.group_for("MPS")
    if g is not None:
        shared = len(g.keys) > 1 or any(k != "MPS" and other.kernel == g.kernel for other in ov.groups for k in other.keys)
        return Route("shared" if shared else "mps_specific", g.kernel, (ov.name,))
    if ov.structured_delegate and _depth < 8:
        target = by_name.get(ov.structured_delegate)
        if target is not None:
            r = mps_route(target, by_name, _depth + 1)
            return Route(r.kind, r.kernel, (ov.name,) + r.via)
    keys = {k for g in ov.groups for k in g.keys}
    if not keys or any(k.startswith("Composite") for k in keys):
        return Route("composite", None, (ov.name,))
    return Route("none", None, (ov.name,))


def stub_candidates(kernel: str, ov: Overload | None = None) -> list[str]:
    """DispatchStub names a shared structured kernel conventionally calls (``atan2_out`` -> ``atan2_stub``)."""
    names = []
    k = kernel
    for suffix in ("_out", "_impl", "_kernel"):
        if k.endswith(suffix):
            k = k[: -len(suffix)]
            break
    names.append(k + "_stub")
    if ov is not None:
        names.append(ov.family + "_stub")
    k2 = re.sub(r"_(Tensor|Scalar|tensor|scalar)$", "", k)
    names.append(k2 + "_stub")
    out = []
    for n in names:
        if n not in out:
            out.append(n)
    return out


class DispatchGraph:
    def __init__(self):
        self.g = nx.MultiDiGraph()
        self.natives: NativeFunctions | None = None
        self._by_kind: dict[str, list[str]] | None = None  # nodes() index, in the graph's node order; reset by add()

    # ---------------------------------------------------------------- building
    def add(self, node: str, kind: str, **attrs) -> str:
        self._by_kind = None
        if node not in self.g:
            self.g.add_node(node, kind=kind, **attrs)
        else:  # may have been created by an edge first
            self.g.nodes[node].update(attrs)
            self.g.nodes[node]["kind"] = kind
        return node

    def link(self, a: str, b: str, type: str, **attrs) -> None:
        self.g.add_edge(a, b, type=type, **attrs)

    # ---------------------------------------------------------------- queries
    def nodes(self, kind: str):
        if self._by_kind is None:  # one pass for every kind (rules ask for impl, kref, mop, fn ... nodes)
            index: dict[str, list[str]] = {}
            for n, d in self.g.nodes(data=True):
                index.setdefault(d.get("kind"), []).append(n)
            self._by_kind = index
        return list(self._by_kind.get(kind, ()))

    def out(self, node: str, type: str) -> list[str]:
        if node not in self.g:
            return []
        return [v for _, v, d in self.g.out_edges(node, data=True) if d.get("type") == type]

    def into(self, node: str, type: str) -> list[str]:
        if node not in self.g:
            return []
        return [u for u, _, d in self.g.in_edges(node, data=True) if d.get("type") == type]

    def attrs(self, node: str) -> dict:
        return self.g.nodes[node] if node in self.g else {}

    def overload(self, name: str) -> Overload | None:
        return self.attrs("op:" + name).get("overload")

    def route(self, name: str) -> Route | None:
        ov = self.overload(name)
        if ov is None or self.natives is None:
            return None
        return mps_route(ov, self.natives.by_name)

    def impls_of(self, fn_name: str) -> list[str]:
        return self.out("fn:" + fn_name, "implemented_by")

    def dispatched_functions(self) -> set[str]:
        """The functions native_functions.yaml dispatches MPS to (``dispatch: MPS: name``): operators, entry points."""
        return {self.attrs(n).get("name", "") for n in self.nodes("fn")}

    def stub_registrations(self, stub: str) -> list[str]:
        return self.out("stub:" + stub, "registered_by")

    def reachable_impls(self, impl: str, limit: int = 200) -> list[str]:
        seen = [impl]
        k = 0
        while k < len(seen) and len(seen) < limit:
            for nxt in self.out(seen[k], "calls"):
                if nxt not in seen:
                    seen.append(nxt)
            k += 1
        return seen

    def uses_mpsgraph(self, impl: str) -> bool:
        """The implementation, or a function it calls in the tree, builds an MPSGraph."""
        return any(self.attrs(i).get("mpsgraph") for i in self.reachable_impls(impl))

    def metal_ops_of(self, impl: str) -> list[str]:
        ops: list[str] = []
        for i in self.reachable_impls(impl):
            for kref in self.out(i, "launches"):
                for mop in self.out(kref, "resolves"):
                    if mop not in ops:
                        ops.append(mop)
        return ops

    # ---------------------------------------------------------------- audit queries (bounded call depth)
    METAL_LAUNCH_CALLS = frozenset(
        {"mtl_dispatch1DJob", "dispatchThreads", "dispatchThreadgroups", "exec_unary_kernel", "exec_binary_kernel", "exec_ternary_kernel"}
    )

    def reachable_within(self, impl: str, depth: int = 3, callers: bool = False) -> list[str]:
        """``impl`` and the tree functions it calls (``callers=True``: that call it), at most ``depth`` calls
        away (breadth first)."""
        step = self.into if callers else self.out
        seen, frontier = [impl], [impl]
        for _ in range(depth):
            nxt = []
            for i in frontier:
                for j in step(i, "calls"):
                    if j not in seen:
                        seen.append(j)
                        nxt.append(j)
            frontier = nxt
        return seen

    def launches_metal(self, impl: str, depth: int = 3) -> bool:
        """The implementation, or a helper at most ``depth`` calls away, launches a Metal kernel."""
        for i in self.reachable_within(impl, depth):
            if self.out(i, "launches"):
                return True
            fn = self.attrs(i).get("function")
            if fn is not None and any(c.name in self.METAL_LAUNCH_CALLS for c in fn.calls):
                return True
        return False

    def builds_mpsgraph(self, impl: str, depth: int = 3) -> bool:
        """The implementation, or a helper at most ``depth`` calls away, builds an MPSGraph."""
        return any(self.attrs(i).get("mpsgraph") for i in self.reachable_within(impl, depth))

    def kernel_refs_of(self, impl: str, depth: int = 3) -> list[str]:
        """``kref`` nodes (kernel names asked for) of the implementation and its helpers."""
        out: list[str] = []
        for i in self.reachable_within(impl, depth):
            for k in self.out(i, "launches"):
                if k not in out:
                    out.append(k)
        return out

    def families(self) -> dict[str, list[Overload]]:
        fams: dict[str, list[Overload]] = {}
        if self.natives is None:
            return fams
        for ov in self.natives.overloads:
            fams.setdefault(ov.family, []).append(ov)
        return fams
