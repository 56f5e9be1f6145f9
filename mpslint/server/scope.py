"""Which files one file's findings can depend on: its neighbourhood in the dispatch graph.

Linting one file against the whole tree runs every rule over every file (most of a second on a large
tree); its findings only depend on the files it is connected to.  ``Neighbourhood`` indexes a graph
built once from the whole tree and answers, for a file and its current facts, the files within
``depth`` edges of the file's own nodes (implementations, kernel references, Metal ops) — not walking
through hubs, the helpers every operation calls, whose other callers say nothing about this file — plus the
files its current facts name that the graph does not know yet (a call or a kernel name typed since the
graph was built), plus a few ``witnesses`` of kinds of files whose mere presence rules test.  The yaml is
always context.
"""

from __future__ import annotations

import bisect
from collections import defaultdict

from ..facts.host import HostFacts
from ..facts.metal import MetalFacts
from ..families import operation_sources

DEPTH = 3
HUB = 16  # a node with more edges is not walked through (mtl_setArgs, getPipelineStateForFunc)
MIN_LITERAL = 3  # shorter kernel-name prefixes ("", "k_") name nothing in particular


def _node_paths(attrs: dict) -> set[str]:
    out = set()
    if attrs.get("path"):
        out.add(attrs["path"])
    for key in ("registrations", "kernels"):
        for path, _ in attrs.get(key, ()):
            out.add(path)
    return out


def witnesses(project) -> set[str]:
    """Files every scope includes because rules test the tree for their kind, not for a link: the smallest
    MPS operation source and ``.metal`` file ("the run includes the operation sources / Metal kernels", so
    an absence means something) and the headers declaring DispatchStubs."""
    size = lambda p: (len(project.sources[p].text), p)  # noqa: E731
    out: set[str] = set()
    ops = operation_sources(project)
    if ops:
        out.add(min(ops, key=size))
    metal = [p for p in project.metals if p.endswith(".metal")]
    if metal:
        out.add(min(metal, key=size))
    out |= {p for p, hf in project.hosts.items() if getattr(hf, "stub_declarations", ())}
    return out


class Neighbourhood:
    def __init__(self, project):
        graph, hosts = project.graph, project.hosts
        self.always = witnesses(project)
        self.graph = graph
        self.nodes_of: dict[str, set[str]] = defaultdict(set)  # file -> its nodes
        self.paths_of: dict[str, set[str]] = {}  # node -> files it belongs to
        self.definers: dict[str, set[str]] = defaultdict(set)  # function name -> files defining it
        self.callers: dict[str, set[str]] = defaultdict(set)  # function name -> files calling it
        self.kernel_names: list[tuple[str, str]] = []  # (Metal op / host name, file)
        self.ref_literals: list[tuple[str, str]] = []  # (kernel-name literal asked for, file)
        for node, attrs in graph.g.nodes(data=True):
            paths = _node_paths(attrs)
            if paths:
                self.paths_of[node] = paths
                for p in paths:
                    self.nodes_of[p].add(node)
            if attrs.get("kind") == "mop":
                for path, reg in attrs.get("registrations", ()):
                    self.kernel_names += [(reg.op, path)] + [(hn, path) for hn in reg.host_names]
                for path, k in attrs.get("kernels", ()):
                    self.kernel_names.append((k.name, path))
        for path, hf in hosts.items():
            for fn in hf.functions:
                self.definers[fn.name].add(path)
                for call in fn.calls:
                    self.callers[call.name].add(path)
            for ref in hf.kernel_refs:
                if len(ref.literal) >= MIN_LITERAL:
                    self.ref_literals.append((ref.literal, path))
        self._kernels = _Names(self.kernel_names)
        self._refs = _Names(self.ref_literals)

    def related(self, path: str, facts, depth: int = DEPTH) -> set[str]:
        """Files (other than ``path``) whose facts the findings on ``path`` may depend on."""
        g = self.graph.g
        seen = set(self.nodes_of.get(path, ()))
        frontier = list(seen)
        for _ in range(depth):
            nxt = []
            for n in frontier:
                for m in (*g.successors(n), *g.predecessors(n)):
                    if m not in seen:
                        seen.add(m)
                        if g.degree(m) <= HUB:  # a helper everything calls: its file counts, not all its callers
                            nxt.append(m)
            frontier = nxt
        out = set()
        for n in seen:
            out |= self.paths_of.get(n, set())
        out |= self._named_by(facts)
        out |= self.always
        out.discard(path)
        return out

    def _named_by(self, facts) -> set[str]:
        """Files the current facts reach by name: callees, callers, kernels asked for, launchers."""
        out: set[str] = set()
        metals: list[MetalFacts] = []
        if isinstance(facts, HostFacts):
            for fn in facts.functions:
                out |= self.callers.get(fn.name, set())
                for call in fn.calls:
                    out |= self.definers.get(call.name, set())
            for ref in facts.kernel_refs:
                if len(ref.literal) >= MIN_LITERAL:
                    out |= self._kernels.related(ref.literal)
            metals = list(facts.embedded)
        elif isinstance(facts, MetalFacts):
            metals = [facts]
        for mf in metals:
            names = [k.name for k in mf.kernels] + [r.op for r in mf.registrations] + [hn for r in mf.registrations for hn in r.host_names]
            for name in names:
                out |= self._refs.related(name)
        return out


class _Names:
    """(name, file) pairs, sorted once: the files of the names that extend ``s`` or that ``s`` extends
    (a kernel-name prefix and the names it can resolve to), by bisection instead of a scan."""

    def __init__(self, pairs: list[tuple[str, str]]):
        self.pairs = sorted(set(pairs))
        self.keys = [k for k, _ in self.pairs]
        self.by_name: dict[str, set[str]] = defaultdict(set)
        for k, p in self.pairs:
            self.by_name[k].add(p)

    def related(self, s: str) -> set[str]:
        out: set[str] = set()
        i = bisect.bisect_left(self.keys, s)
        while i < len(self.keys) and self.keys[i].startswith(s):
            out.add(self.pairs[i][1])
            i += 1
        for k in range(1, len(s)):
            out |= self.by_name.get(s[:k], set())
        return out
