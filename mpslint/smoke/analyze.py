"""Find the kernels of a preprocessed (clang -E -DMSL_ANALYZE) translation unit.

Two forms are found: kernel definitions (`kernel void f(...) {`, templates included) and explicit
instantiations (`template [[host_name("x")]] kernel void f<T, F>(...);`, what every REGISTER_* macro and
`instantiate` macro expands to).  Each entry point gets its parameters' roles from the [[buffer(n)]],
[[threadgroup(n)]] and thread-position attributes of its definition, and its source position (the line of
the registration macro or of the kernel) from the preprocessor's line markers.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field

from .textutil import match_paren, skip_string, split_top

# thread attributes -> negative role numbers understood by the trampoline (see trampoline.py)
ROLE = {
    "thread_position_in_grid": -1, "thread_position_in_threadgroup": -2, "threadgroup_position_in_grid": -3,
    "threads_per_threadgroup": -4, "threadgroups_per_grid": -5, "threads_per_grid": -6,
    "thread_index_in_threadgroup": -7, "thread_index_in_simdgroup": -8, "simdgroup_index_in_threadgroup": -9,
    "simdgroups_per_threadgroup": -10, "threads_per_simdgroup": -11, "thread_execution_width": -11,
    "dispatch_threads_per_threadgroup": -4, "thread_index_in_quadgroup": -12, "quadgroup_index_in_threadgroup": -13,
}
_ATTR = re.compile(r"\[\[\s*(\w+)\s*(?:\(\s*(\d+)\s*\))?\s*\]\]")
_KW = re.compile(r"__msl_kernel__\s+void\s+")
_STR = re.compile(r'"((?:[^"\\]|\\.)*)"')
# (one `\s*` between adjacent strings: `(?:\s*"..."\s*)+` backtracks exponentially on long string chains)
_HOST_BACK = re.compile(r"\[\[\s*host_name\s*\((\s*(?:\"(?:[^\"\\]|\\.)*\"\s*)+)\)\s*\]\]\s*$")
_LINEMARK = re.compile(r'^#\s*(?:line\s+)?(\d+)\s+"((?:[^"\\]|\\.)*)"')


@dataclass(frozen=True)
class Param:
    text: str            # declaration without [[attributes]]
    attr: str | None
    idx: int | None


@dataclass(frozen=True)
class SourcePos:
    path: str
    line: int


@dataclass
class KernelDef:
    ns: tuple
    name: str
    params: list
    is_template: bool
    host_name: str | None
    origin: SourcePos


@dataclass
class KernelInst:
    host_name: str
    fnexpr: str
    base: str
    targs: list
    ns: tuple
    params: list
    origin: SourcePos


@dataclass
class EntryPoint:
    """A launchable kernel: what a pipeline state would be made from."""
    host_name: str
    fnexpr: str                    # fully qualified function (with template arguments) to take the address of
    params: list                   # Param list of the declaration used for the function pointer type
    roles: list                    # role per parameter (see roles_for)
    base: str                      # template (or function) name, e.g. "unary_dense"
    targs: list = field(default_factory=list)   # template arguments as written, e.g. ["float", "exp_functor"]
    origin: SourcePos | None = None
    ns: tuple = ()                 # namespace the declaration was written in (its parameter types are named there)


@dataclass
class Analysis:
    entries: list
    problems: list                 # (host_name, message, origin)


class LineMap:
    """Maps offsets in preprocessed text to (file, line) using the line markers."""

    def __init__(self, text: str):
        self.starts = [0]
        self.pos: list[tuple[str, int]] = []
        cur_file, cur_line = "<unknown>", 1
        off = 0
        for raw in text.split("\n"):
            m = _LINEMARK.match(raw) if raw.startswith("#") else None
            if m:
                self.pos.append((cur_file, -1))
                cur_file, cur_line = m.group(2).encode().decode("unicode_escape"), int(m.group(1))
            else:
                self.pos.append((cur_file, cur_line))
                cur_line += 1
            off += len(raw) + 1
            self.starts.append(off)

    def at(self, offset: int) -> SourcePos:
        k = bisect.bisect_right(self.starts, offset) - 1
        f, ln = self.pos[min(k, len(self.pos) - 1)]
        return SourcePos(f, max(ln, 1))


def parse_params(s: str) -> list[Param]:
    ps = []
    for p in split_top(s):
        m = _ATTR.search(p)
        attr, idx = (m.group(1), int(m.group(2)) if m.group(2) else None) if m else (None, None)
        ps.append(Param(_ATTR.sub("", p).strip(), attr, idx))
    return ps


def namespace_map(s: str) -> list[tuple[int, tuple]]:
    """Sorted (offset, namespace tuple) change points."""
    stack, changes, i = [], [(0, ())], 0
    ns_re = re.compile(r"namespace\s*([\w:]*)\s*$")
    n = len(s)
    while i < n:
        ch = s[i]
        if ch in "\"'":
            i = skip_string(s, i)
            continue
        if ch == "{":
            m = ns_re.search(s, max(0, i - 200), i)
            if m and (m.start() == 0 or not (s[m.start() - 1].isalnum() or s[m.start() - 1] == "_")):
                stack.append(tuple(x for x in m.group(1).split("::") if x) or ("",))
            else:
                stack.append(None)
            changes.append((i, tuple(x for fr in stack if fr for x in fr if x)))
        elif ch == "}":
            if stack:
                stack.pop()
            changes.append((i, tuple(x for fr in stack if fr for x in fr if x)))
        i += 1
    return changes


def _ns_at(changes, keys, pos):
    return changes[bisect.bisect_right(keys, pos) - 1][1]


def split_template(fname: str) -> tuple[str, list[str]]:
    """'::c10::metal::unary_dense<float, exp_functor>' -> ('unary_dense', ['float', 'exp_functor'])."""
    lt = fname.find("<")
    if lt < 0:
        return fname.split("::")[-1].strip(), []
    gt = match_paren(fname, lt, "<", ">")
    base = fname[:lt].split("::")[-1].strip()
    return base, split_top(fname[lt + 1:gt if gt > 0 else len(fname)])


def find_kernels(ii: str) -> tuple[list[KernelDef], list[KernelInst]]:
    changes = namespace_map(ii)
    keys = [c[0] for c in changes]
    lines = LineMap(ii)
    defs, insts = [], []
    for m in _KW.finditer(ii):
        start = m.start()
        back = ii[max(0, start - 4000):start]
        host = None
        hb = _HOST_BACK.search(back)
        back_wo = back
        if hb:
            host = "".join(_STR.findall(hb.group(1)))
            back_wo = back[:hb.start()]
        explicit = re.search(r"\btemplate\s*$", back_wo) is not None
        templ_def = re.search(r"\btemplate\s*<[^;{}]*>\s*$", back_wo) is not None
        j = m.end()
        k = j
        while k < len(ii) and ii[k] != "(":
            if ii[k] == "<":
                close_t = match_paren(ii, k, "<", ">")
                if close_t < 0:
                    break
                k = close_t + 1
                continue
            k += 1
        fname = " ".join(ii[j:k].split())
        close = match_paren(ii, k, "(", ")")
        if close < 0:
            continue
        params = parse_params(ii[k + 1:close])
        after = ii[close + 1:close + 200].lstrip()
        is_def = after.startswith("{") or after.startswith("[[")
        ns = _ns_at(changes, keys, start)
        origin = lines.at(start)
        if explicit:
            base, targs = split_template(fname)
            insts.append(KernelInst(host or fname, fname, base, targs, ns, params, origin))
        elif is_def:
            defs.append(KernelDef(ns, fname, params, templ_def, host, origin))
    return defs, insts


class RoleError(ValueError):
    pass


def roles_for(params: list[Param]) -> list[int]:
    """Role per parameter: n >= 0 buffer index, 1000+n threadgroup memory, < 0 thread attribute."""
    used = {p.idx for p in params if p.attr == "buffer"}
    nxt, roles = 0, []
    for p in params:
        if p.attr == "buffer":
            roles.append(p.idx)
        elif p.attr == "msl_threadgroup":
            roles.append(1000 + (p.idx or 0))
        elif p.attr in ROLE:
            roles.append(ROLE[p.attr])
        elif p.attr is None and ("*" in p.text or "&" in p.text):
            while nxt in used:       # Metal assigns unannotated buffers the next free index
                nxt += 1
            roles.append(nxt)
            used.add(nxt)
        else:
            raise RoleError(f"unsupported kernel parameter attribute [[{p.attr}]] in '{p.text}'")
    return roles


def _qualify(name: str, ns: tuple) -> str:
    if name.startswith("::"):
        return name
    return "::" + "::".join(ns + (name,)) if ns else "::" + name


def entry_points(ii: str) -> Analysis:
    defs, insts = find_kernels(ii)
    tdefs: dict[str, list[KernelDef]] = {}
    for d in defs:
        if d.is_template:
            tdefs.setdefault(d.name.split("::")[-1], []).append(d)
    entries, problems = [], []
    for d in defs:
        if d.is_template:
            continue
        try:
            roles = roles_for(d.params)
        except RoleError as e:
            problems.append((d.host_name or d.name, str(e), d.origin))
            continue
        entries.append(EntryPoint(d.host_name or d.name.split("::")[-1], _qualify(d.name, d.ns), d.params, roles,
                                  d.name.split("::")[-1], [], d.origin, d.ns))
    for it in insts:
        cands = [d for d in tdefs.get(it.base, []) if len(d.params) == len(it.params)]
        if not cands:
            problems.append((it.host_name, f"no template kernel definition for {it.base} with "
                                           f"{len(it.params)} parameters", it.origin))
            continue
        d = next((c for c in cands if c.ns == it.ns), cands[0])
        try:
            roles = roles_for(d.params)
        except RoleError as e:
            problems.append((it.host_name, str(e), it.origin))
            continue
        fn = it.fnexpr if it.fnexpr.startswith("::") else _qualify(it.fnexpr, it.ns)
        entries.append(EntryPoint(it.host_name, fn, it.params, roles, it.base, it.targs, it.origin, it.ns))
    seen, uniq = set(), []
    for e in entries:
        if e.host_name in seen:
            problems.append((e.host_name, "duplicate host_name", e.origin))
            continue
        seen.add(e.host_name)
        uniq.append(e)
    return Analysis(uniq, problems)
