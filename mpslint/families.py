"""Op families of native_functions.yaml and where each overload's MPS path goes.

Shared by the DSP rules and the migration auditor.
"""

from __future__ import annotations

import re as _re
from dataclasses import dataclass

from .facts.native_functions import NativeFunctions, Overload
from .graph import Route, mps_route


@dataclass(frozen=True)
class OverloadRoute:
    overload: Overload
    route: Route

    @property
    def own_mps(self) -> bool:
        """The MPS key is written on this overload itself (not reached through structured_delegate)."""
        return self.overload.group_for("MPS") is not None


_ROUTES: tuple[NativeFunctions, dict] | None = None  # the last yaml's routes (five DSP rules ask for them)


def family_routes(natives: NativeFunctions) -> dict[str, list[OverloadRoute]]:
    """Every family's overloads with their MPS routes; computed once per yaml facts object (read-only)."""
    global _ROUTES
    if _ROUTES is not None and _ROUTES[0] is natives:
        return _ROUTES[1]
    fams: dict[str, list[OverloadRoute]] = {}
    for ov in natives.overloads:
        fams.setdefault(ov.family, []).append(OverloadRoute(ov, mps_route(ov, natives.by_name)))
    _ROUTES = (natives, fams)
    return fams


def shared_non_mps_kernel(ov: Overload) -> str | None:
    """The kernel CPU and CUDA share on this overload, which MPS could join (None for per-device kernels)."""
    cpu, cuda = ov.group_for("CPU"), ov.group_for("CUDA")
    if cpu is None or cuda is None or "MPS" in cpu.keys or cpu.kernel != cuda.kernel:
        return None
    return cpu.kernel


def leftovers(routes: list[OverloadRoute]) -> tuple[list[OverloadRoute], list[OverloadRoute]]:
    """(leftover MPS-specific overloads, migrated siblings) of one family; empty when not half-migrated."""
    shared = [r for r in routes if r.route.kind == "shared"]
    specific = [r for r in routes if r.route.kind == "mps_specific" and r.own_mps and shared_non_mps_kernel(r.overload)]
    if not shared or not specific:
        return [], []
    return specific, shared


# ---------------------------------------------------------------- evidence: what the linted tree holds
# The DSP3xx rules reason about absence ("nothing registers this stub", "no Metal source has this kernel").
# Absence means something only when the kind of source that would hold the thing is in the tree; these
# helpers say which kinds are there.


_MPS_FN_NAME = _re.compile(r"_mps_?$")
_NATIVE_HEADER = _re.compile(r"^ATen/ops/(\w+)_native\.h$")
_METALLIB_HEADER = _re.compile(r"^ATen/native/mps/(\w+)_metallib\.h$")


def is_operation_source(path: str) -> bool:
    """An MPS implementation file (``.mm``, or a ``.cpp`` under an ``mps`` folder), not a header."""
    return path.endswith(".mm") or (path.endswith(".cpp") and "/mps/" in "/" + path)


def operation_sources(project) -> list[str]:
    return sorted(p for p in project.hosts if is_operation_source(p))


def metal_source_files(project) -> set[str]:
    """Paths holding Metal kernels of the tree: ``.metal`` files and host files with embedded Metal."""
    out = set()
    for path, mfs in project.metals.items():
        if path.endswith(".metal") or (path in project.hosts and mfs):
            out.add(path)
    return out


def mps_registered_stubs(project) -> dict[str, list]:
    """stub name -> StubRegistrations in the tree's MPS operation sources."""
    out: dict[str, list] = {}
    for path in operation_sources(project):
        for reg in project.hosts[path].stub_registrations:
            out.setdefault(reg.stub, []).append((path, reg))
    return out


def declared_stubs(project) -> dict[str, list]:
    """stub name -> (path, span) of ``DECLARE_DISPATCH`` in the tree's headers."""
    out: dict[str, list] = {}
    for path, hf in project.hosts.items():
        for decl in getattr(hf, "stub_declarations", ()):
            out.setdefault(decl.stub, []).append((path, decl))
    return out


def has_mps_dispatch(natives) -> bool:
    return natives is not None and any(k.endswith("MPS") for ov in natives.overloads for g in ov.groups for k in g.keys)


def dispatch_kernel_names(natives) -> set[str]:
    """Every function name any dispatch key of the yaml names."""
    return {g.kernel for ov in natives.overloads for g in ov.groups}


def overloads_by_family(natives) -> dict[str, list[Overload]]:
    fams: dict[str, list[Overload]] = {}
    for ov in natives.overloads:
        fams.setdefault(ov.family, []).append(ov)
    return fams


def family_prefix(name: str, fams: dict) -> str | None:
    """The longest yaml family ``name`` is named after (``copysign_Scalar_out_mps`` -> ``copysign``)."""
    parts = name.split("_")
    for k in range(len(parts), 0, -1):
        cand = "_".join(parts[:k])
        if cand in fams:
            return cand
    if name.startswith("_"):
        return family_prefix(name[1:], fams) if not name[1:].startswith("_") else None
    return None


def _device_stem(name: str) -> str:
    return _re.sub(r"_(mps|cpu|cuda)(?=_|$)", "", name).rstrip("_")


def _conventional_stems(overloads: list[Overload]) -> set[str]:
    out = set()
    for ov in overloads:
        out.add(ov.name.replace(".", "_").rstrip("_"))
        out.add(ov.base.rstrip("_"))
        for g in ov.groups:
            out.add(_device_stem(g.kernel))
    return out


def _implements_family(hf, fam: str, dead: set) -> bool:
    root = fam.lstrip("_")
    names = [fn.name for fn in hf.functions if fn.kind == "impl_func" or (fn.kind == "function" and _MPS_FN_NAME.search(fn.name))]
    names += [im.name for im in hf.impl_macros]
    stub_kernels = {reg.function for reg in hf.stub_registrations}  # DispatchStub kernels need no x_native.h
    for name in names:
        if (hf.path, name) in dead or name in stub_kernels:
            continue
        stem = _device_stem(name).lstrip("_")
        if stem == root or stem.startswith(root + "_"):
            return True
    return False


def native_header_family(header: str) -> str | None:
    m = _NATIVE_HEADER.match(header)
    return m.group(1) if m else None


def metallib_sources(hf) -> list[str]:
    """``X.metal`` names a host file's ``#include <ATen/native/mps/X_metallib.h>`` lines point to."""
    out = []
    for inc in hf.includes:
        m = _METALLIB_HEADER.match(inc.header)
        if m:
            out.append(m.group(1) + ".metal")
    return out


def names_declared_for(overloads: list[Overload]) -> set[str]:
    """Names an ``ATen/ops/x_native.h`` header declares (dispatch kernels) plus the op's own names."""
    names = {g.kernel for ov in overloads for g in ov.groups}
    names |= {ov.base for ov in overloads}
    return names


_STRING = _re.compile(r'"(?:[^"\\\n]|\\.)*"')


def code_words(text: str) -> str:
    """``text`` without comments and string literals (offsets kept)."""
    from .facts.macros import strip_comments

    return _STRING.sub(lambda m: " " * len(m.group(0)), strip_comments(text))


def line_range(text: str, start: int, end: int) -> tuple[int, int]:
    """[start of the line holding ``start``, after the line break ending the line holding ``end - 1``)."""
    a = text.rfind("\n", 0, start) + 1
    b = text.find("\n", max(end - 1, start))
    b = len(text) if b < 0 else b + 1
    return a, b


def deletion_range(text: str, start: int, end: int, with_comments: bool = True) -> tuple[int, int]:
    """Whole lines of a definition, with the comment lines right above it, and one blank line if it would double up."""
    a, b = line_range(text, start, end)
    if with_comments:
        while a > 0:
            pa = text.rfind("\n", 0, a - 1) + 1
            line = text[pa : a - 1].strip()
            if line.startswith("//") or line.startswith("*") or line.startswith("/*"):
                a = pa
            else:
                break
    before_blank = a == 0 or text[text.rfind("\n", 0, a - 1) + 1 : a - 1].strip() == ""
    nb = text.find("\n", b)
    after_line = text[b : (len(text) if nb < 0 else nb)]
    if before_blank and b < len(text) and after_line.strip() == "":
        b = len(text) if nb < 0 else nb + 1
    return a, b


# ---------------------------------------------------------------- DSP302: dead MPS implementations


@dataclass(frozen=True)
class DeadImpl:
    path: str
    name: str
    family: str
    kind: str  # "impl_func" | "function" | "macro:<NAME>"
    span: object  # reported span (the name)
    start: int  # offsets of the whole definition (or macro invocation)
    end: int


@dataclass(frozen=True)
class LeftoverInclude:
    path: str
    header: str
    family: str
    span: object


_WORD = _re.compile(r"\w+")


def _mentions(words: set, text: str, name: str) -> bool:
    """``name`` occurs in ``text`` as a whole word (``words``: the set of ``\\w+`` runs of ``text``)."""
    if _WORD.fullmatch(name):
        return name in words
    return bool(_re.search(r"(?<![\w])" + _re.escape(name) + r"(?![\w])", text))


def _mentioned_outside(where: dict, text: str, name: str, skip) -> bool:
    """``name`` occurs as a whole word in ``text`` outside every (start, end) range of ``skip``."""
    if _WORD.fullmatch(name):
        return any(not any(a <= o < b for a, b in skip) for o in where.get(name, ()))
    body = _blank(text, skip)
    return bool(_re.search(r"(?<![\w])" + _re.escape(name) + r"(?![\w])", body))


def _blank(text: str, ranges) -> str:
    """``text`` with every (start, end) range replaced by spaces (offsets and length kept)."""
    out, pos = [], 0
    for a, b in sorted(ranges):
        a = max(a, pos)
        if b <= a:
            continue
        out.append(text[pos:a])
        out.append(" " * (b - a))
        pos = b
    out.append(text[pos:])
    return "".join(out)


def dead_mps_implementations(project, graph) -> tuple[list[DeadImpl], list[LeftoverInclude], dict]:
    """Implementations in MPS sources that no yaml entry (and nothing else in the tree) reaches, and the
    ``ATen/ops/x_native.h`` includes nothing in their file uses any more.

    Returns (dead, leftover includes, {(path, family): include} for includes that die with the dead code).
    """
    natives = project.natives
    if not has_mps_dispatch(natives):
        return [], [], {}
    targets = dispatch_kernel_names(natives)
    fams = overloads_by_family(natives)
    registered = {reg.function for hf in project.hosts.values() for reg in hf.stub_registrations}
    cands: list[tuple[str, str, str, object, int, int]] = []
    for path in operation_sources(project):
        hf = project.hosts[path]
        text = project.sources[path].text
        for fn in hf.functions:
            if fn.kind == "impl_func" or (
                fn.kind == "function" and fn.body_span is not None and _MPS_FN_NAME.search(fn.name) and "static" not in fn.qualifiers.split()
            ):
                cands.append((path, fn.name, fn.kind, fn.name_span, fn.span.start, fn.span.end))
        for im in hf.impl_macros:
            end = im.span.end
            m = _re.match(r"\s*;", text[end:])
            if m:
                end += m.end()
            cands.append((path, im.name, "macro:" + im.macro, im.span, im.span.start, end))
    cands = [c for c in cands if c[1] not in targets and c[1] not in registered and family_prefix(c[1], fams)]
    # a plain function must also carry a name the yaml's own naming would give an MPS kernel of its op
    # (``nonzero_mps`` next to ``nonzero_cpu``, ``x_out_mps`` next to ``CPU, CUDA: x_out``); helpers such as
    # ``nonzero_count_mps`` are not dispatch targets that lost their entry
    cands = [c for c in cands if c[2] != "function" or _device_stem(c[1]) in _conventional_stems(fams[family_prefix(c[1], fams)])]
    dead: list[DeadImpl] = []
    index: dict[str, tuple[str, dict[str, list[int]]]] = {}  # path -> (code words, identifier -> offsets)

    def word_index(path):
        if path not in index:
            words = code_words(project.sources[path].text)
            where: dict[str, list[int]] = {}
            for m in _WORD.finditer(words):
                where.setdefault(m.group(), []).append(m.start())
            index[path] = (words, where)
        return index[path]

    if cands:
        names = {c[1] for c in cands}
        uses: dict[str, list[tuple[str, int]]] = {}
        for path in project.hosts:
            _words, where = word_index(path)
            for n in names & where.keys():
                uses.setdefault(n, []).extend((path, o) for o in where[n])
        for path, name, kind, span, a, b in cands:
            others = [(p, o) for p, o in uses.get(name, []) if not (p == path and a <= o < b)]
            if others:  # called, declared or referenced elsewhere in the tree: not ours to call dead
                continue
            dead.append(DeadImpl(path, name, family_prefix(name, fams), kind, span, a, b))
    # includes
    leftovers_: list[LeftoverInclude] = []
    dying: dict = {}
    for path in operation_sources(project):
        hf = project.hosts[path]
        words = None
        for inc in hf.includes:
            fam = native_header_family(inc.header)
            if fam is None or fam not in fams:
                continue
            if words is None:
                words, where = word_index(path)
                all_words = where.keys()
            here = [d for d in dead if d.path == path]
            declared = names_declared_for(fams[fam])
            # a name of the op outside the include and the dead code keeps the include
            skip = [(d.start, d.end) for d in here] + [(inc.span.start, inc.span.end)]
            if any(_mentioned_outside(where, words, n, skip) for n in declared):
                continue
            # the file still implements something for this op under a name the yaml (of this version) does not
            # use (``TORCH_IMPL_FUNC(x_out_mps)`` registered with ``m.impl``, ``masked_softmax_mps``): not ours
            if _implements_family(hf, fam, {(d.path, d.name) for d in here}):
                continue
            if any(d.family == fam for d in here):
                dying[(path, fam)] = inc
            elif not any(_mentions(all_words, words, n) for n in declared if n) and any(
                mps_route(ov, natives.by_name).kind == "shared" for ov in fams[fam]
            ):  # reported as left behind by a migration only when the op now reaches MPS through a shared kernel
                leftovers_.append(LeftoverInclude(path, inc.header, fam, inc.span))
    return dead, leftovers_, dying
