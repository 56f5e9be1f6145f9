"""`mpslint smoke --suggest-spec FILE.metal [HOST ...]`: a TOML launch-spec skeleton for every kernel of a file.

From the kernel's parameters (Metal facts): one `[[kernel.buffer]]` per `[[buffer(n)]]` with its name and
dtype (a template parameter becomes `{T}` and the name a `{T}` pattern when the host names differ only in a
dtype), `device` pointers marked as outputs, `constant` structs with their fields by name (from the file's
own struct definitions), `tgmem` for `[[threadgroup(n)]]` arguments, the grid's rank from the thread-position
attribute.  Where mpslint sees the host code that launches the kernel (HOST paths, or the `operations/`
folder beside a PyTorch `kernels/` folder), the comments say what the host binds to each slot and how it
dispatches.  What only a person can say (sizes, the reference) is left as `TODO` values, so the skeleton
loads but every launch of it reports `spec error` until they are filled in.
"""
from __future__ import annotations

import re
from pathlib import Path

from . import dtypes

_PTR = re.compile(r"\b(device|constant)\b")
_DISPATCH = re.compile(r"^(dispatchThreads|dispatchThreadgroups|mtl_dispatch\w*)$")
_GRID_ATTRS = ("thread_position_in_grid", "threadgroup_position_in_grid")


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _base_type(type_text: str) -> str:
    t = re.sub(r"\b(device|constant|threadgroup|thread|const|volatile|struct)\b", " ", type_text)
    t = t.replace("*", " ").replace("&", " ")
    return " ".join(t.split()).split("::")[-1]


def _host_names(facts_list, kernel: str) -> list[str]:
    out = []
    for mf in facts_list:
        for r in mf.registrations:
            if r.kernel == kernel or r.op == kernel:
                out.extend(h for h in r.host_names if h not in out)
    return out


def _name_pattern(kernel: str, hosts: list[str]) -> str:
    """The [[kernel]] name: the one host name, or a pattern over all of them (`im2col_{T}_{K:u32|u64}`):
    token positions that hold dtype names become {T}, {U}; other varying positions {K:a|b}."""
    if not hosts:
        return kernel
    if len(hosts) == 1:
        return hosts[0]
    rows = [h.split("_") for h in hosts]
    if len({len(r) for r in rows}) != 1:
        return hosts[0]
    parts, dtype_names, words = [], iter(("T", "U", "V")), iter(("K", "L", "M"))
    for col in zip(*rows):
        vals = list(dict.fromkeys(col))
        if len(vals) == 1:
            parts.append(vals[0])
        elif all(v in dtypes.BY_NAME for v in vals):
            parts.append("{" + next(dtype_names, "T") + "}")
        else:
            parts.append("{" + next(words, "K") + ":" + "|".join(vals) + "}")
    return "_".join(parts)


_VECTOR = re.compile(r"^(?:metal::)?(u?int|u?long|u?short|u?char|float|half|bfloat|bool)([234])$")
_TEMPLATE_VEC = re.compile(r"^vec<\s*(.+?)\s*,\s*([234])\s*>$")
_SIZE = re.compile(r"MTLSizeMake\(([^)]*)\)")


def host_launches(graph, kernel: str) -> list[dict]:
    out = []
    from mpslint.semantic.launch_bindings import bindings
    for impl in sorted(graph.nodes("impl")):
        a = graph.attrs(impl)
        fn = a.get("function")
        if fn is None:
            continue
        for kref in graph.out(impl, "launches"):
            if not any(graph.attrs(m).get("name") == kernel for m in graph.out(kref, "resolves")):
                continue
            ref = graph.attrs(kref)["ref"]
            got = bindings(fn, ref.span.start)
            slots = {k: t for k, (t, _c) in got[0].items()} if got else {}
            dispatch = [f"{c.name}({', '.join(x.text for x in c.args)})" for c in fn.calls
                        if _DISPATCH.match(c.name) and c.span.start >= ref.span.start][:2]
            # `params.rows = self.size(0);`: what the host puts in each field of a struct it binds
            fields = {x.lhs.replace(" ", ""): x.rhs.text for x in fn.assigns if "." in x.lhs and x.op == "="}
            out.append({"fn": fn.name, "path": a.get("path", ""), "slots": slots, "dispatch": dispatch,
                        "fields": fields})
    return out


def skeleton(path: Path, host_paths: list[Path] | None = None) -> str:
    """The TOML skeleton for every kernel of `path` (a .metal file)."""
    from ..engine import LintOptions, lint
    paths = [str(path)] + [str(p) for p in host_paths or []]
    ops = path.resolve().parent.parent / "operations"
    if path.resolve().parent.name == "kernels" and ops.is_dir():
        paths += [str(p) for p in sorted(ops.glob("*.mm"))]
    result = lint(LintOptions(paths=paths, select=["DSP308"]))
    project = result.project
    key = next((k for k in project.metals if Path(k).resolve() == path.resolve()), None)
    facts_list = project.metals.get(key, []) if key else []
    text = project.sources[key].text if key in project.sources else path.read_text(errors="replace")
    structs: dict = {}
    for mf in facts_list:
        for sname, fields in mf.structs.items():
            structs[sname] = {f: _array_extent(text, sname, f, t) for f, t in fields.items()}
    lines = [f"# Launch-spec skeleton for {path.name}, written by `mpslint smoke --suggest-spec`.",
             "# Fill in every TODO (sizes in `vars`, the grid, `expect`), then run",
             f"#   mpslint smoke --specs THIS.toml {path}",
             "# The format is documented in mpslint/smoke/specfile.py and docs/smoke.md.", ""]
    kernels = [k for mf in facts_list for k in mf.kernels]
    if not kernels:
        lines.append(f"# no kernel functions found in {path}")
    for k in kernels:
        lines += _kernel_table(k, facts_list, structs, host_launches(project.graph, k.name), text)
    return "\n".join(lines) + "\n"


def _array_extent(text: str, struct: str, fname: str, ftype: str) -> str:
    """`long[]` -> `long[2]`: the facts keep an array field's element type; its extent is in the source."""
    if not ftype.endswith("[]"):
        return ftype
    body = re.search(r"\bstruct\s+" + re.escape(struct) + r"\s*\{(.*?)\}", text, re.S)
    m = re.search(r"\b" + re.escape(fname) + r"\s*\[\s*(\w+)\s*\]", body.group(1)) if body else None
    return f"{ftype[:-2]}[{m.group(1)}]" if m else ftype


def _kernel_table(k, facts_list, structs, launches, text: str) -> list[str]:
    hosts = _host_names(facts_list, k.name)
    name = _name_pattern(k.name, hosts)
    templated = k.function.template or "{T}" in name
    out = ["[[kernel]]", f"name = {_toml_str(name)}"]
    if hosts and name != hosts[0] or len(hosts) > 1:
        out.append(f"# host names: {', '.join(hosts[:8])}{' ...' if len(hosts) > 8 else ''}")
    for L in launches:
        out.append(f"# launched by {L['fn']} ({Path(L['path']).name})" +
                   (f"; dispatch: {'; '.join(L['dispatch'])}" if L["dispatch"] else ""))
    rank = 1
    for pname, attr in k.attributes.items():
        if attr in _GRID_ATTRS:
            p = next((q for q in k.function.params if q.name == pname), None)
            m = re.search(r"(\d)\s*$", _base_type(p.type)) if p else None
            rank = max(rank, int(m.group(1)) if m else 1)
    out.append('vars = { N = "TODO" }')
    out.append(f"grid = {_toml_list(['TODO'] * rank)}         # threads (or `groups = [...]` for threadgroups)")
    group = [32] + [1] * (rank - 1)
    for L in launches:   # the host's threadsPerThreadgroup, when it is literal
        sizes = _SIZE.findall(" ".join(L["dispatch"]))
        lit = [int(x) for x in sizes[-1].split(",") if x.strip().isdigit()] if len(sizes) >= 2 else []
        if len(lit) == len(sizes[-1].split(",")) and lit:
            group = (lit + [1, 1])[:max(rank, 1)]
            break
    out.append(f"group = {_toml_list(group)}")
    if k.threadgroup_params:
        out.append(f"tgmem = {_toml_list(['TODO'] * len(k.threadgroup_params))}   # bytes of " +
                   ", ".join(f"`{n}` [[threadgroup({i})]]" for i, n, _s in sorted(k.threadgroup_params)))
    bound, host_fields = {}, {}
    for L in launches:
        for slot, arg in L["slots"].items():
            bound.setdefault(slot, arg)
        for lhs, rhs in L.get("fields", {}).items():
            host_fields.setdefault(lhs, rhs)
    for b in sorted(k.buffers, key=lambda b: b.index):
        lo = max(text.rfind(",", 0, b.span.start), text.rfind("(", 0, b.span.start)) + 1   # with its address space
        decl = text[lo:b.span.end] if b.span.end <= len(text) else b.type
        out += [""] + _buffer_table(b, decl, templated, structs, bound.get(b.index), host_fields)
    out.append("")
    return out


def _toml_list(xs) -> str:
    return "[" + ", ".join(_toml_str(x) if isinstance(x, str) else str(x) for x in xs) + "]"


def _buffer_table(b, decl: str, templated: bool, structs: dict, host_text: str | None,
                  host_fields: dict | None = None) -> list[str]:
    base = _base_type(b.type)
    pointer = "*" in b.type
    writable = bool(re.search(r"\bdevice\b", decl)) and not re.search(r"\bconst\b", decl.split("*")[0])
    d = dtypes.lookup(base)
    dtype = d.name if d else ("{T}" if templated and len(base) <= 2 else base)
    out = ["[[kernel.buffer]]", f"index = {b.index}", f"name = {_toml_str(b.name)}"]
    if host_text:
        out.append(f"# the host binds: {host_text}")
    if d is None and not pointer and base in structs:
        fields = structs[base]
        out.append("fields = [")
        for fname, ftype in fields.items():
            set_by = (host_fields or {}).get(f"{host_text}.{fname}") if host_text else None
            note = f"   # the host: {host_text}.{fname} = {set_by}" if set_by else ""
            out.append(f"  {{ name = {_toml_str(fname)}, type = {_toml_str(_field_type(ftype))}, value = \"TODO\" }},{note}")
        out.append("]")
        return out
    vec = _VECTOR.match(base) or _TEMPLATE_VEC.match(base)
    if d is None and not pointer and vec:
        scalar = dtypes.lookup(vec.group(1))
        elem = scalar.name if scalar else "{I}"
        note = "" if scalar else f"   # `{base}`: give {{I}} (e.g. with `cases`) or write the element type"
        out.append(f"fields = [{{ name = {_toml_str(b.name)}, type = {_toml_str(elem + vec.group(2))}, "
                   f"value = {_toml_list(['TODO'] * int(vec.group(2)))} }}]{note}")
        return out
    if d is None and not pointer and dtype != "{T}":
        out.append(f"# `{b.type}`: a struct mpslint did not find in this file: list its fields in order")
        out.append('fields = [{ name = "TODO", type = "uint", value = "TODO" }]')
        return out
    out.append(f"dtype = {_toml_str(dtype)}")
    if pointer:
        out.append('shape = ["N"]')
        if writable:
            out += ["out = true", 'expect = "TODO"                     # a torch expression over the buffers']
        else:
            out.append('init = "rand(-1, 1)"')
    else:
        out.append('value = "N"')
    return out


def _field_type(t: str) -> str:
    t = " ".join(t.split())
    m = re.match(r"^(?:const\s+)?(\w+)\s*\[(\w+)\]$", t)
    if m:
        return f"{dtypes.lookup(m.group(1)).name if dtypes.lookup(m.group(1)) else m.group(1)}[{m.group(2)}]"
    d = dtypes.lookup(t.replace("const ", ""))
    return d.name if d else t
