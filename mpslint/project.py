"""The facts stage: turn discovered files into per-file facts, then build the dispatch graph from them."""

from __future__ import annotations

import functools
import functools
import hashlib
import re
from dataclasses import dataclass, field

from .discovery import Discovered
from .facts.host import HostFacts, KernelRef, embedded_metal_ranges, host_facts, wrapper_refs
from .facts.metal import MetalFacts, metal_facts
from .facts.native_functions import NativeFunctions, load_native_functions
from .facts.python_src import PythonFacts, python_facts
from .graph import DispatchGraph, mps_route, stub_candidates
from .model import FileError, ParseStats
from .source import SourceFile
from .suppressions import Suppressions

MAX_BYTES = 20 * 1024 * 1024


@dataclass
class Project:
    sources: dict[str, SourceFile] = field(default_factory=dict)
    hosts: dict[str, HostFacts] = field(default_factory=dict)
    metals: dict[str, list[MetalFacts]] = field(default_factory=dict)  # .metal files and embedded Metal
    pythons: dict[str, PythonFacts] = field(default_factory=dict)
    natives: NativeFunctions | None = None
    suppressions: dict[str, Suppressions] = field(default_factory=dict)
    errors: list[FileError] = field(default_factory=list)
    stats: ParseStats = field(default_factory=ParseStats)
    linted: set[str] = field(default_factory=set)  # paths whose findings are reported
    graph: DispatchGraph = field(default_factory=DispatchGraph)
    cache: object = None  # the FactsCache used to load this project (hits/misses), if any
    fs_paths: dict[str, str] = field(default_factory=dict)  # reported path -> path on disk (context detection)
    context_override: str | None = None  # [tool.mpslint] context: every file's context (mpslint.context)
    contexts_cache: object = None  # (override, {path: Detected}), computed once by mpslint.context

    def all_metal(self):
        for path in sorted(self.metals):
            yield from self.metals[path]


def read_source(d: Discovered, override: str | None = None) -> SourceFile | FileError:
    if override is not None:  # text already in memory (a fix being verified)
        kind = d.kind if d.kind != "header" else ("metal" if is_metal_header(override) else "host")
        return SourceFile(d.path, override, kind, hashlib.sha1(override.encode("utf-8")).hexdigest())
    try:
        with open(d.fs_path, "rb") as fh:
            data = fh.read(MAX_BYTES + 1)
    except OSError as e:
        return FileError(d.path, 0, f"cannot read file: {e.strerror or e}", fatal=True)
    return decode_source(d.path, d.kind, data)


def decode_source(path: str, kind: str, data: bytes) -> SourceFile | FileError:
    """A file's bytes (read from disk, or a git blob) as a SourceFile, or why it is not linted."""
    if len(data) > MAX_BYTES:
        return FileError(path, 0, f"file larger than {MAX_BYTES // (1024 * 1024)} MB; skipped", fatal=True)
    if b"\x00" in data[:8192]:
        return FileError(path, 0, "binary file (NUL bytes); skipped", fatal=True)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        return FileError(path, line, f"not valid UTF-8 (byte 0x{data[e.start]:02x}); skipped", fatal=True)
    text = text.replace("\r\n", "\n") if "\r\n" in text else text
    if kind == "header":
        kind = "metal" if is_metal_header(text) else "host"
    return SourceFile(path, text, kind, hashlib.sha1(data).hexdigest())


_METAL_HEADER = re.compile(
    r"#\s*include\s*<metal_\w+>|\busing\s+namespace\s+metal\b|\bkernel\s+void\b|\b(?:device|threadgroup|constant)\s+[\w:<>]+\s*[*&]|\[\[\s*(?:buffer|thread_position_in_grid|host_name)\b|\bmetal::"
)
_HOST_HEADER = re.compile(r"#\s*include\s*<(?:ATen|c10/core|c10/util|torch|Metal/|MetalPerformanceShaders)|\bat::Tensor\b|\bid<MTL|@interface|\bTensorIteratorBase\b")


def is_metal_header(text: str) -> bool:
    """A header under mps/ or c10/metal/ is Metal when it reads like Metal and not like host code (Metal inside a
    raw string literal, ``static char* KERNEL = R"METAL(...)METAL";``, is a host header embedding it)."""
    ranges = embedded_metal_ranges(text)
    if ranges:
        text = "".join(text[a:b] for a, b in zip([0] + [e for _s, e in ranges], [s for s, _e in ranges] + [len(text)]))
    metal = len(_METAL_HEADER.findall(text))
    host = len(_HOST_HEADER.findall(text))
    return metal > 0 and metal >= host


def file_facts(src: SourceFile):
    """The per-file facts for one source (the unit a cache stores)."""
    if src.kind == "metal":
        return metal_facts(src.path, src.text, src.index)
    if src.kind == "host":
        return host_facts(src.path, src.text, src.index)
    if src.kind in ("python", "common_mps"):
        return python_facts(src.path, src.text, src.index)
    if src.kind == "yaml":
        return load_native_functions(src.path, src.text, src.index)
    raise ValueError(src.kind)


def add_facts(project: Project, src: SourceFile, facts, linted: bool) -> None:
    path = src.path
    project.sources[path] = src
    project.suppressions[path] = Suppressions(src.text)
    if linted:
        project.linted.add(path)
    st = project.stats
    if isinstance(facts, MetalFacts):
        project.metals[path] = [facts]
        st.files += 1
        st.bytes += facts.bytes
        st.error_nodes += facts.error_nodes
        st.missing_nodes += facts.missing_nodes
        st.per_file[path] = (facts.bytes, facts.error_nodes)
    elif isinstance(facts, HostFacts):
        project.hosts[path] = facts
        if facts.embedded:
            project.metals[path] = list(facts.embedded)
        st.files += 1
        st.bytes += facts.bytes
        errs = facts.error_nodes + sum(m.error_nodes for m in facts.embedded)
        st.error_nodes += errs
        st.missing_nodes += facts.missing_nodes + sum(m.missing_nodes for m in facts.embedded)
        st.per_file[path] = (facts.bytes, errs)
    elif isinstance(facts, PythonFacts):
        project.pythons[path] = facts
        project.errors.extend(facts.errors)
        if facts.shaders:
            project.metals[path] = [metal_facts(path, src.text[a:b], src.index, base=a, embedded=True) for a, b in facts.shaders]
            for m in project.metals[path]:
                st.error_nodes += m.error_nodes
                st.bytes += m.bytes
    elif isinstance(facts, NativeFunctions):
        if project.natives is None:
            project.natives = facts
        project.errors.extend(facts.errors)


# ---------------------------------------------------------------- graph


class _PrefixIndex:
    """Names sorted once, so the names sharing a prefix are one bisect away (kernel-name resolution stays linear)."""

    def __init__(self, mapping: dict[str, str]):
        self.items = sorted(mapping.items())
        self.keys = [k for k, _ in self.items]

    def with_prefix(self, prefix: str):
        import bisect

        i = bisect.bisect_left(self.keys, prefix)
        while i < len(self.items) and self.keys[i].startswith(prefix):
            yield self.items[i]
            i += 1

_IMPL_NAME = re.compile(r"^[A-Za-z_]\w*$")


_CLASS_HEAD = re.compile(r"\b(?:class|struct)\s+(?:\[\[[^\]]*\]\]\s*)?([A-Za-z_]\w*)[^;{()]*\{")


@functools.lru_cache(maxsize=64)
def _code_only(text: str) -> str:
    """``text`` with comments and string literals blanked (same offsets): "This struct is ..." names no class."""
    return re.sub(r'//[^\n]*|/\*.*?\*/|"(?:[^"\\\n]|\\.)*"', lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)


@functools.lru_cache(maxsize=512)  # a pure function of the text; the language server asks again on every edit
def _enclosing_class(text: str, pos: int) -> str | None:
    """Name of the class/struct whose body contains ``pos`` (None for a free or out-of-line function)."""
    text = _code_only(text)
    best = None
    for m in _CLASS_HEAD.finditer(text, 0, pos):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += text[i] == "{"
            depth -= text[i] == "}"
            i += 1
        if i > pos:
            best = m.group(1)  # the innermost enclosing one is found last
    return best


def _other_class(project: Project, call, target: dict) -> bool:
    """``Foo::getInstance()`` must not resolve to ``Bar::getInstance``: a call qualified by a class name
    (``MPSDevice::getInstance``) does not reach a same-named method defined inside another class."""
    fn = target.get("function")
    if fn is None or fn.kind != "method" or "::" not in call.callee:
        return False
    qual = call.callee.rsplit("::", 1)[0].rsplit("::", 1)[-1].split("<", 1)[0]
    if not qual[:1].isupper():
        return False  # a namespace (`at::`, `mps::`): nothing to compare
    src = project.sources.get(target.get("path"))
    owner = _enclosing_class(src.text, fn.span.start) if src is not None else None
    return owner is not None and owner != qual


def _top_alternatives(pattern: str) -> list[str]:
    out, depth, start = [], 0, 0
    for i, ch in enumerate(pattern):
        if ch == "\\":
            continue
        if ch == "(" and (i == 0 or pattern[i - 1] != "\\"):
            depth += 1
        elif ch == ")" and pattern[i - 1] != "\\":
            depth -= 1
        elif ch == "|" and depth == 0:
            out.append(pattern[start:i])
            start = i + 1
    out.append(pattern[start:])
    return out


def _literal_head(pattern: str, depth: int = 0) -> bool:
    """Every way ``pattern`` can start is a literal of at least three characters (not a run-time ``\\w+``)."""
    if depth > 4:
        return False
    alts = _top_alternatives(pattern)
    for alt in alts:
        if alt.startswith("(?:"):
            close, d = -1, 0
            for i, ch in enumerate(alt):
                if ch == "(" and (i == 0 or alt[i - 1] != "\\"):
                    d += 1
                elif ch == ")" and alt[i - 1] != "\\":
                    d -= 1
                    if d == 0:
                        close = i
                        break
            if close < 0 or not _literal_head(alt[3:close], depth + 1):
                return False
            continue
        if not re.match(r"[A-Za-z0-9]{3}", alt):
            return False
    return True


def build_graph(project: Project) -> DispatchGraph:
    graph = DispatchGraph()
    graph.natives = project.natives
    # host implementations
    by_name: dict[str, list[str]] = {}
    for path in sorted(project.hosts):
        hf = project.hosts[path]
        for fn in hf.functions:
            node = f"impl:{path}:{fn.name}"
            graph.add(
                node, "impl", path=path, name=fn.name, span=fn.name_span, mpsgraph=fn.name in hf.mpsgraph_functions,
                origin=fn.kind, function=fn, dtype_filters=hf.dtype_filters.get(fn.name, []),
            )
            by_name.setdefault(fn.name, []).append(node)
        for im in hf.impl_macros:
            node = f"impl:{path}:{im.name}"
            graph.add(node, "impl", path=path, name=im.name, span=im.span, mpsgraph=im.mpsgraph, origin="macro:" + im.macro, function=None)
            by_name.setdefault(im.name, []).append(node)
    # pipeline wrappers shared through a header (`Create(NSString* shaderName)`): their callers in other files name kernels
    wrappers: dict[str, int] = {}
    for path in sorted(project.hosts):
        for name, k in project.hosts[path].pipeline_wrappers.items():
            wrappers.setdefault(name, k)
    for path in sorted(project.hosts):
        hf = project.hosts[path]
        refs = hf.kernel_refs + (wrapper_refs(hf, wrappers) if wrappers else [])
        for fn in hf.functions:
            node = f"impl:{path}:{fn.name}"
            for call in fn.calls:
                for target in by_name.get(call.name, ()):
                    if target != node and not _other_class(project, call, graph.attrs(target)):
                        graph.link(node, target, "calls")
            for ref in refs:
                if ref.function == fn.name and fn.span.start <= ref.span.start < fn.span.end:
                    kid = f"kref:{path}:{ref.span.start}"
                    graph.add(kid, "kref", ref=ref, path=path)
                    graph.link(node, kid, "launches")
        for reg in hf.stub_registrations:
            sid = graph.add("stub:" + reg.stub, "stub", name=reg.stub)
            targets = by_name.get(reg.function, [])
            if not targets:
                node = graph.add(f"impl:{path}:{reg.function}", "impl", path=path, name=reg.function, span=reg.span, mpsgraph=False, origin="stub-target", function=None)
                targets = [node]
                # a function a registration macro made: its launches were read from the macro's expansion
                for ref in hf.kernel_refs:
                    if ref.function == reg.function and reg.span.start <= ref.span.start < reg.span.end:
                        kid = f"kref:{path}:{ref.span.start}:{ref.literal}"
                        graph.add(kid, "kref", ref=ref, path=path)
                        graph.link(node, kid, "launches")
            for t in targets:
                graph.link(sid, t, "registered_by", span=reg.span, path=path, macro=reg.macro)
    # kernels launched from Python through a torch.mps.compile_shader library
    for path in sorted(project.pythons):
        for sc in project.pythons[path].shader_calls:
            node = graph.add(f"impl:{path}:{sc.function}", "impl", path=path, name=sc.function, span=sc.span, mpsgraph=False, origin="python", function=None)
            kid = f"kref:{path}:{sc.span.start}"
            pattern = sc.pattern or re.escape(sc.kernel)
            graph.add(kid, "kref", ref=KernelRef("host_name", pattern, sc.kernel, not sc.pattern, sc.function, sc.span, "compile_shader"), path=path)
            graph.link(node, kid, "launches")
    # Metal ops and kernels
    for mf in project.all_metal():
        for reg in mf.registrations:
            mid = graph.add("mop:" + reg.op, "mop", name=reg.op)
            graph.attrs(mid).setdefault("registrations", []).append((mf.path, reg))
        for k in mf.kernels:
            mid = graph.add("mop:" + k.name, "mop", name=k.name)
            graph.attrs(mid).setdefault("kernels", []).append((mf.path, k))
    mops = graph.nodes("mop")
    mop_by_name = {graph.attrs(mid)["name"]: mid for mid in mops}
    host_names: dict[str, str] = {}
    for mid in mops:
        for _path, reg in graph.attrs(mid).get("registrations", []):
            for hn in reg.host_names:
                host_names[hn] = mid
    op_index = _PrefixIndex(mop_by_name)
    hn_index = _PrefixIndex(host_names)
    for kid in graph.nodes("kref"):
        ref = graph.attrs(kid)["ref"]
        lit = ref.literal
        if not lit.strip("_") and not _literal_head(ref.pattern):
            # starts with a run-time part (fmt::format("{}_{}", name, type) in a shared launcher): names nothing.
            # Alternatives that each start with a literal ("(?:cummax|cummin)_\w+") are tried against every name.
            continue
        rx = re.compile(ref.pattern + r"\Z")
        # every match starts with the literal prefix, so only names with that prefix are tried
        prefix = lit if ref.pattern.startswith(re.escape(lit)) else ""
        if ref.kind == "op":
            for name, mid in op_index.with_prefix(prefix):
                if rx.match(name):
                    graph.link(kid, mid, "resolves")
        else:
            hits = {mid for hn, mid in hn_index.with_prefix(prefix) if rx.match(hn)}
            hits |= {mid for name, mid in op_index.with_prefix(prefix) if rx.match(name)}  # kernels named directly
            base = lit.rstrip("_")
            for k in range(len(base), len(lit) + 1):  # op families whose host names are generated: "atan2" for "atan2_..."
                mid = mop_by_name.get(lit[:k])
                if mid is not None and k:
                    hits.add(mid)
            for mid in sorted(hits):
                graph.link(kid, mid, "resolves")
    # yaml overloads
    if project.natives is not None:
        natives = project.natives
        for ov in natives.overloads:
            oid = graph.add("op:" + ov.name, "op", overload=ov)
            if ov.structured_delegate:
                graph.link(oid, "op:" + ov.structured_delegate, "delegates")
            r = mps_route(ov, natives.by_name)
            for grp in ov.groups:
                for key in grp.keys:
                    if not key.endswith("MPS"):
                        continue
                    fid = graph.add("fn:" + grp.kernel, "fn", name=grp.kernel)
                    graph.link(oid, fid, "dispatches", dispatch_key=key, shared=len(grp.keys) > 1)
                    for impl in by_name.get(grp.kernel, ()):
                        if impl not in graph.out(fid, "implemented_by"):
                            graph.link(fid, impl, "implemented_by")
            g = ov.group_for("MPS")
            if g is not None and r.kind == "shared":
                fid = "fn:" + g.kernel
                for stub in stub_candidates(g.kernel, ov):
                    if "stub:" + stub in graph.g:
                        graph.link(fid, "stub:" + stub, "uses_stub")
    return graph
