"""``mpslint graph --op NAME``: everything the dispatch graph knows about one op family, as plain data."""

from __future__ import annotations

from .graph import DispatchGraph


def describe_op(graph: DispatchGraph, op: str) -> dict | None:
    if graph.natives is None:
        return None
    fams = graph.families()
    family = op.split(".")[0]
    family = family[:-1] if family.endswith("_") and not family.endswith("__") else family
    overloads = fams.get(family, [])
    if "." in op:
        overloads = [o for o in overloads if o.name == op] or overloads
    if not overloads:
        return None
    out = {"family": family, "overloads": []}
    for ov in overloads:
        r = graph.route(ov.name)
        entry = {
            "name": ov.name,
            "line": ov.span.line,
            "structured": ov.structured,
            "structured_delegate": ov.structured_delegate,
            "dispatch": {", ".join(g.keys): g.kernel for g in ov.groups},
            "mps_route": r.kind if r else None,
            "mps_kernel": r.kernel if r else None,
            "via": list(r.via) if r else [],
            "implementations": [],
            "stubs": [],
        }
        if r and r.kernel:
            for impl in graph.impls_of(r.kernel):
                a = graph.attrs(impl)
                entry["implementations"].append(_impl(graph, impl, a))
            for stub in graph.out("fn:" + r.kernel, "uses_stub"):
                s = {"stub": graph.attrs(stub)["name"], "registered_by": []}
                for impl in graph.out(stub, "registered_by"):
                    s["registered_by"].append(_impl(graph, impl, graph.attrs(impl)))
                entry["stubs"].append(s)
        out["overloads"].append(entry)
    return out


def _impl(graph: DispatchGraph, impl: str, a: dict) -> dict:
    kernels = []
    for mop in graph.metal_ops_of(impl):
        m = graph.attrs(mop)
        regs = m.get("registrations", [])
        kernels.append(
            {
                "name": m["name"],
                "dtypes": sorted({r.dtype for _, r in regs if r.dtype}),
                "registered_in": sorted({p for p, _ in regs} | {p for p, _ in m.get("kernels", [])}),
            }
        )
    return {
        "path": a.get("path"),
        "name": a.get("name"),
        "line": a["span"].line if a.get("span") else None,
        "origin": a.get("origin"),
        "mpsgraph": graph.uses_mpsgraph(impl),
        "metal": kernels,
    }


def render_text(info: dict) -> str:
    lines = [f"op family {info['family']}:"]
    for e in info["overloads"]:
        lines.append(f"  {e['name']}  (line {e['line']})")
        for keys, k in e["dispatch"].items():
            lines.append(f"    dispatch {keys}: {k}")
        if e["structured_delegate"]:
            lines.append(f"    structured_delegate: {e['structured_delegate']}")
        lines.append(f"    MPS route: {e['mps_route']}" + (f" -> {e['mps_kernel']}" if e["mps_kernel"] else ""))
        for impl in e["implementations"]:
            lines.append(_impl_line(impl, "implemented by"))
        for s in e["stubs"]:
            lines.append(f"    stub {s['stub']}")
            for impl in s["registered_by"]:
                lines.append(_impl_line(impl, "  registered"))
            if not s["registered_by"]:
                lines.append("      (no MPS registration found)")
    return "\n".join(lines) + "\n"


def _impl_line(impl: dict, label: str) -> str:
    kind = "MPSGraph" if impl["mpsgraph"] else "host"
    s = f"    {label} {impl['name']} at {impl['path']}:{impl['line']} [{kind}]"
    for k in impl["metal"]:
        s += f"\n      -> Metal {k['name']} ({', '.join(k['dtypes']) or 'dtypes unknown'}) in {', '.join(k['registered_in'])}"
    return s


def describe_links(graph: DispatchGraph) -> list[dict]:
    """Every kernel name host code asks for (``newFunctionWithName:``, pipeline getters and wrappers,
    ``exec_*_kernel``, ``compile_shader`` libraries) and the Metal kernels it resolves to, as plain data."""
    out = []
    for impl in sorted(graph.nodes("impl")):
        a = graph.attrs(impl)
        for kid in graph.out(impl, "launches"):
            ref = graph.attrs(kid)["ref"]
            kernels = []
            for mop in graph.out(kid, "resolves"):
                m = graph.attrs(mop)
                files = sorted({p for p, _ in m.get("registrations", [])} | {p for p, _ in m.get("kernels", [])})
                kernels.append({"name": m["name"], "files": files})
            out.append(
                {
                    "path": a.get("path"),
                    "function": a.get("name"),
                    "line": ref.span.line,
                    "call": ref.call,
                    "name": ref.literal + ("" if ref.exact else "…"),
                    "pattern": ref.pattern,
                    "kernels": sorted(kernels, key=lambda k: k["name"]),
                }
            )
    return sorted(out, key=lambda e: (e["path"] or "", e["line"], e["pattern"]))


def render_links(links: list[dict]) -> str:
    if not links:
        return "no host code in these paths asks for a Metal kernel by name\n"
    lines = []
    for e in links:
        lines.append(f"{e['path']}:{e['line']} {e['function']} -> {e['call']}({e['name']!r})")
        for k in e["kernels"]:
            lines.append(f"    -> Metal {k['name']} in {', '.join(k['files'])}")
        if not e["kernels"]:
            lines.append(f"    (no kernel of these paths matches /{e['pattern']}/)")
    return "\n".join(lines) + "\n"
