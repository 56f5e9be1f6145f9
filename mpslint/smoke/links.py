"""Link SMK405 (a wrapped offset seen in a large-index run) to the MTL204 finding of the same kernel: the static
rule names the 32-bit expression, the run shows that it wraps.  Lints only the files with SMK405 outcomes."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from .api import SMK405


def _kernel_lines(project, path: str) -> dict[str, tuple[int, int]]:
    """host name (or kernel name) -> (first, last) line of the kernel function in `path`."""
    out: dict[str, tuple[int, int]] = {}
    for mf in project.metals.get(path, []):
        spans = {k.name: (k.function.span.line, k.function.span.end_line) for k in mf.kernels}
        out.update(spans)
        for reg in mf.registrations:
            if reg.kernel in spans:
                for h in reg.host_names:
                    out.setdefault(h, spans[reg.kernel])
    return out


def link_mtl204(outcomes: list) -> list:
    """`outcomes` with every SMK405 message naming the MTL204 finding(s) inside the same kernel, when any."""
    paths = sorted({o.path for o in outcomes if o.code == SMK405})
    if not paths:
        return outcomes
    from ..engine import LintOptions, lint
    result = lint(LintOptions(paths=paths, select=["MTL204"]))
    by_file: dict = {}
    for f in result.findings:
        by_file.setdefault(str(Path(f.path).resolve()), []).append(f)
    keys = {str(Path(k).resolve()): k for k in result.project.metals}
    out = []
    for o in outcomes:
        if o.code != SMK405:
            out.append(o)
            continue
        full = str(Path(o.path).resolve())
        lines = _kernel_lines(result.project, keys.get(full, "")).get(o.kernel)
        near = [f for f in by_file.get(full, []) if lines and lines[0] <= f.span.line <= lines[1]]
        if near:
            where = ", ".join(f"{o.path}:{f.span.line}:{f.span.column}" for f in near[:3])
            o = dataclasses.replace(o, message=o.message + f"; MTL204 flags the 32-bit offset arithmetic at {where}")
        out.append(o)
    return out
