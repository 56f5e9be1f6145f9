"""``mpslint check --smoke``: smoke-run the ``.metal`` files being checked; outcomes become SMK findings."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

from ..discovery import discover


def smoke_outcomes(paths: list[str], cwd: Path | None = None, backend: str = "auto", timeout: float = 10.0, jobs: int = 1, graph=None):
    from .api import SmokeOptions, run_smoke

    files, _problems = discover(paths, cwd)
    metal = [f for f in files if f.fs_path.endswith(".metal")]
    if not metal:
        return []
    display = {}
    for f in metal:
        display[f.fs_path] = f.path
        display[str(Path(f.fs_path).resolve())] = f.path
    hook = None
    if graph is not None:
        from .graph_refs import graph_reference_for

        hook = graph_reference_for(graph)
    from .cli import configured_specs

    opts = SmokeOptions(backend=backend, timeout=timeout, jobs=jobs, progress=sys.stderr.isatty(), reference_for=hook,
                        specs=configured_specs(cwd or Path.cwd()))
    report = run_smoke([Path(f.fs_path) for f in metal], opts)
    if report.errors:
        from .preflight import SmokeRunError

        raise SmokeRunError("; ".join(report.errors))
    out = []
    for o in report.outcomes:
        p = display.get(o.path) or display.get(str(Path(o.path).resolve()), o.path)
        out.append(dataclasses.replace(o, path=p))
    return out
