"""Classify the MPS path of every overload of native_functions.yaml, roll it up per op family, attach what else
the tree says about the op (Metal kernels and dtypes, common_mps.py skip/xfail entries, DSP findings)."""

from __future__ import annotations

import re
from pathlib import Path

from .. import __version__
from ..config import Config
from ..engine import LintOptions, LintResult, lint
from ..facts.native_functions import Overload
from ..graph import DispatchGraph, Route, mps_route, stub_candidates
from .model import Audit, OpAudit, OverloadAudit, family_class

# DSP rules whose findings are attached to ops (picked up only when present in this mpslint).
AUDIT_RULES = ("DSP301", "DSP302", "DSP306")
CALL_DEPTH = 3  # helpers followed from an implementation when looking for Metal launches and MPSGraph
NOT_IN_TREE = "MPSGraph or Metal: implementation not in tree"


class AuditError(Exception):
    """The audit cannot run (no native_functions.yaml)."""


def run_audit(paths: list[str], native_functions: str | None = None, config: Config | None = None, cwd: Path | None = None) -> tuple[Audit, LintResult]:
    from ..rule import all_rules

    codes = [r.code for r in all_rules() if r.code in AUDIT_RULES]
    opts = LintOptions(paths=paths, config=config or Config(), native_functions=native_functions, select=codes or ["NONE"], cwd=cwd)
    result = lint(opts)
    if result.project.natives is None:
        raise AuditError("no native_functions.yaml found: pass it among the paths or with --native-functions")
    audit = build_audit(result, codes)
    audit.source["paths"] = list(paths)
    return audit, result


def build_audit(result: LintResult, rules: list[str]) -> Audit:
    project = result.project
    graph = project.graph
    natives = project.natives
    # MPS host sources (not just headers): without them a missing registration says nothing
    has_host = any(p.endswith((".mm", ".cpp")) or hf.stub_registrations or hf.impl_macros for p, hf in project.hosts.items())
    fams: dict[str, list[Overload]] = {}
    for ov in natives.overloads:
        fams.setdefault(ov.family, []).append(ov)
    xfails = _xfail_index(project)
    findings = _findings_index(result, graph)
    impl_memo: dict = {}  # (impl, role) -> its record: overloads sharing an implementation (structured_delegate) walk it once
    ops: list[OpAudit] = []
    for family in sorted(fams):
        ovs = fams[family]
        records = [_classify(graph, ov, mps_route(ov, natives.by_name), has_host, impl_memo) for ov in ovs]
        op = OpAudit(family, family_class([r.cls for r in records]), records)
        _attach_kernels(graph, op)
        op.xfails = xfails.get(family, [])
        names = {ov.name for ov in ovs}
        impls = {(i["path"], i["name"]) for r in records for i in r.implementations}
        xlines = {(x["path"], x["line"]) for x in op.xfails}
        op.findings = sorted(
            (
                f
                for f in findings
                if f["_family"] == family or f["_overload"] in names or (f["path"], f["_impl"]) in impls or (f["path"], f["line"]) in xlines
            ),
            key=lambda f: (f["path"], f["line"], f["code"]),
        )
        op.findings = [{k: v for k, v in f.items() if not k.startswith("_")} for f in op.findings]
        ops.append(op)
    source = {
        "native_functions": natives.path,
        "host_files": len(project.hosts),
        "metal_files": sum(1 for p in project.metals if project.sources[p].kind == "metal"),
        "python_files": len(project.pythons),
        "rules": list(rules),
    }
    return Audit(ops, source, f"mpslint {__version__}")


# ---------------------------------------------------------------- one overload


def _classify(graph: DispatchGraph, ov: Overload, r: Route, has_host: bool, memo: dict | None = None) -> OverloadAudit:
    rec = OverloadAudit(ov.name, ov.span.line, "unknown", r.kind, r.kernel, list(r.via), "")
    via = f" (via structured_delegate {' -> '.join(r.via[1:])})" if len(r.via) > 1 else ""
    if r.kind == "composite":
        keys = sorted({k for g in ov.groups for k in g.keys})
        rec.cls = "composite"
        rec.explanation = f"no MPS key; {', '.join(keys)}: decomposes" if keys else "no dispatch: decomposes into other ops"
        return rec
    if r.kind == "none":
        keys = sorted({k for g in ov.groups for k in g.keys})
        other_mps = [k for k in keys if k.endswith("MPS")]
        rec.cls = "fallback"
        rec.explanation = f"no MPS key ({', '.join(keys)}): runs on the CPU fallback"
        if other_mps:
            rec.explanation += f"; only {', '.join(other_mps)} for non-dense layouts"
        return rec
    kernel = r.kernel or ""
    if r.kind == "shared":
        stubs = [graph.attrs(s)["name"] for s in graph.out("fn:" + kernel, "uses_stub")]
        if not stubs:  # the fn node is linked to stubs only from the overload owning the MPS key
            stubs = [s for s in _stub_names(kernel, graph.overload(r.via[-1]) or ov) if "stub:" + s in graph.g]
        regs = [(s, i) for s in stubs for i in graph.stub_registrations(s)]
        rec.stubs = stubs
        if regs:
            for s, impl in regs:
                rec.implementations.append(_impl_record_memo(graph, impl, f"registered for {s}", memo))
            g = any(i["mpsgraph"] for i in rec.implementations)
            m = any(i["launches_metal"] for i in rec.implementations)
            names = ", ".join(sorted({f"{i['name']} ({i['path']}:{i['line']})" for i in rec.implementations}))
            if g and m:
                rec.cls = "mixed"
                rec.explanation = f"shared line `{kernel}`{via}; the MPS registration of {', '.join(stubs)} launches Metal and builds an MPSGraph: {names}"
            elif g:
                rec.cls = "mpsgraph"
                rec.explanation = f"shared line `{kernel}`{via}; the MPS registration of {', '.join(stubs)} builds an MPSGraph: {names}"
            else:
                rec.cls = "native-stub"
                rec.explanation = f"shared line `{kernel}`{via}; {', '.join(stubs)} registered for MPS by {names}"
            return rec
        impls = graph.impls_of(kernel)
        if impls:  # a shared name implemented in the MPS sources themselves
            return _by_impls(graph, rec, impls, f"shared line `{kernel}`{via} implemented in the MPS sources", memo)
        cands = ", ".join(stub_candidates(kernel, graph.overload(r.via[-1]) or ov))
        rec.cls = "unknown"
        if has_host:
            rec.explanation = f"shared line `{kernel}`{via}; no MPS REGISTER_DISPATCH of {cands} in the tree"
        else:
            rec.explanation = f"shared line `{kernel}`{via}; stub registration not in tree (no MPS host sources)"
        return rec
    # an MPS-specific function
    impls = graph.impls_of(kernel)
    if not impls:
        rec.cls = "unknown"
        rec.explanation = f"{NOT_IN_TREE} (`{kernel}`{via})"
        return rec
    return _by_impls(graph, rec, impls, f"MPS-only function `{kernel}`{via}", memo)


def _stub_names(kernel: str, ov: Overload) -> list[str]:
    """The graph's stub candidates, plus their lower-case spelling (``pow_Tensor_Scalar_out`` -> ``pow_tensor_scalar_stub``)."""
    names = stub_candidates(kernel, ov)
    return names + [n.lower() for n in names if n.lower() not in names]


def _by_impls(graph: DispatchGraph, rec: OverloadAudit, impls: list[str], what: str, memo: dict | None = None) -> OverloadAudit:
    for impl in impls:
        rec.implementations.append(_impl_record_memo(graph, impl, "implements", memo))
    g = any(i["mpsgraph"] for i in rec.implementations)
    m = any(i["launches_metal"] for i in rec.implementations)
    where = ", ".join(sorted({f"{i['path']}:{i['line']}" for i in rec.implementations}))
    if len({i["path"] for i in rec.implementations}) > 1:
        where = f"defined {len(rec.implementations)} times: {where}"
    if g and m:
        rec.cls, rec.explanation = "mixed", f"{what} launches Metal and builds an MPSGraph ({where})"
    elif g:
        rec.cls, rec.explanation = "mpsgraph", f"{what} builds an MPSGraph ({where})"
    elif m:
        rec.cls, rec.explanation = "native-mps", f"{what} launches Metal ({where})"
    else:
        rec.cls, rec.explanation = "native-mps", f"{what} is host code with neither a Metal launch nor an MPSGraph in reach ({where})"
    return rec


def _impl_record_memo(graph: DispatchGraph, impl: str, role: str, memo: dict | None) -> dict:
    if memo is None:
        return _impl_record(graph, impl, role)
    rec = memo.get((impl, role))
    if rec is None:
        rec = memo[(impl, role)] = _impl_record(graph, impl, role)
    return rec


def _impl_record(graph: DispatchGraph, impl: str, role: str) -> dict:
    a = graph.attrs(impl)
    metal = []
    for i in graph.reachable_within(impl, CALL_DEPTH):
        for kref in graph.out(i, "launches"):
            for mop in graph.out(kref, "resolves"):
                if mop not in metal:
                    metal.append(mop)
    unresolved = []
    for kref in graph.kernel_refs_of(impl, CALL_DEPTH):
        if not graph.out(kref, "resolves"):
            ref = graph.attrs(kref)["ref"]
            unresolved.append(ref.literal + ("" if ref.exact else "*"))
    return {
        "name": a.get("name"),
        "path": a.get("path"),
        "line": a["span"].line if a.get("span") else None,
        "role": role,
        "mpsgraph": graph.builds_mpsgraph(impl, CALL_DEPTH),
        "launches_metal": graph.launches_metal(impl, CALL_DEPTH),
        "metal": sorted(graph.attrs(m)["name"] for m in metal),
        "unresolved_kernels": sorted(set(unresolved)),
    }


# ---------------------------------------------------------------- what else the tree says


def _attach_kernels(graph: DispatchGraph, op: OpAudit) -> None:
    names: set[str] = set()
    unresolved: set[str] = set()
    for o in op.overloads:
        for i in o.implementations:
            names.update(i["metal"])
            unresolved.update(i["unresolved_kernels"])
    for name in sorted(names):
        a = graph.attrs("mop:" + name)
        regs = a.get("registrations", [])
        op.kernels.append(
            {
                "name": name,
                "dtypes": sorted({r.dtype for _, r in regs if r.dtype}),
                "paths": sorted({p for p, _ in regs} | {p for p, _ in a.get("kernels", [])}),
            }
        )
    op.unresolved_kernels = sorted(unresolved)


def xfail_keys(key: str) -> set[str]:
    """yaml family names an OpInfo key of common_mps.py may stand for (``linalg.eig`` -> linalg_eig, ``nn.functional.conv3d`` -> conv3d)."""
    out = {key, key.replace(".", "_")}
    for prefix in ("nn.functional.", "_refs.", "ops.aten."):
        if key.startswith(prefix):
            out.add(key[len(prefix) :].replace(".", "_"))
    return {re.sub(r"_$", "", k) if k.endswith("_") and not k.endswith("__") else k for k in out} | out


def _xfail_index(project) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for path in sorted(project.pythons):
        for x in project.pythons[path].xfails:
            rec = {"list": x.list_name, "key": x.op, "dtypes": list(x.dtypes) if x.dtypes is not None else None, "path": path, "line": x.span.line}
            for fam in sorted(xfail_keys(x.op)):
                out.setdefault(fam, []).append(rec)
    return out


def _findings_index(result: LintResult, graph: DispatchGraph) -> list[dict]:
    impl_at: dict[str, list[tuple[int, int, str]]] = {}
    for n in graph.nodes("impl"):
        a = graph.attrs(n)
        fn = a.get("function")
        span = fn.span if fn is not None else a.get("span")
        if span is not None:
            impl_at.setdefault(a["path"], []).append((span.line, span.end_line, a["name"]))
    natives = result.project.natives
    out = []
    for f in result.findings:
        extra = dict(f.extra)
        family = extra.get("op") or extra.get("family")
        overload = extra.get("overload")
        if overload is None and natives is not None and f.path == natives.path:
            for ov in natives.overloads:
                if ov.span.line <= f.span.line < max(ov.entry_end_line, ov.span.line + 1):
                    overload = ov.name
                    break
        if family is None and overload and natives is not None and overload in natives.by_name:
            family = natives.by_name[overload].family
        impl = next((name for a, b, name in impl_at.get(f.path, ()) if a <= f.span.line <= b), None)
        out.append(
            {
                "code": f.code,
                "path": f.path,
                "line": f.span.line,
                "message": f.message,
                "overload": overload,
                "_family": family,
                "_overload": overload,
                "_impl": impl,
            }
        )
    return out
