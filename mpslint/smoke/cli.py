"""`mpslint smoke PATHS` (loaded lazily by mpslint.cli).  Text and JSON output of its own; the lead's
reporters (SARIF, review bot ...) can consume `outcome_dict` / SmokeOutcome directly.

Exit codes: 0 no finding, 1 findings (SMK401-405), 2 usage error, a missing dependency or an internal error
of the runner (never reported as `skipped`)."""
from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import click

from .api import CODES, SmokeOptions, run_smoke
from .preflight import SmokeEnvironmentError
from .specfile import SpecFileError


def configured_specs(start: Path) -> list[Path]:
    """`[tool.mpslint] smoke-specs` of the nearest pyproject.toml (paths relative to it)."""
    from ..config import find_pyproject, load_config
    return [Path(p) for p in load_config(find_pyproject(start)).smoke_specs]


def collect(paths: tuple[str, ...]) -> list[Path]:
    out: list[Path] = []
    for p in paths:
        q = Path(p)
        if q.is_dir():
            out.extend(sorted(q.rglob("*.metal")))
        else:
            out.append(q)
    return out


def outcome_dict(o) -> dict:
    d = dataclasses.asdict(o)
    d["title"] = CODES.get(o.code or "", o.status)
    return d


@click.command("smoke")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--backend", type=click.Choice(["auto", "host", "metal"]), default="auto", show_default=True)
@click.option("--format", "fmt", type=click.Choice(["text", "json", "outcomes-json", "sarif", "lintrunner", "github", "rdjson", "rdjsonl", "jsonl", "junit"]), default="text", show_default=True,
              help="text: per-variant lines and the summary table; outcomes-json: every outcome with its status; "
                   "json/sarif/...: SMK findings through mpslint's reporters (the summary goes to stderr)")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write the report to a file.")
@click.option("--jobs", "-j", type=int, default=1, show_default=True)
@click.option("--timeout", type=float, default=10.0, show_default=True, help="seconds per kernel launch")
@click.option("--memory-mb", type=int, default=2048, show_default=True)
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None)
@click.option("--headers-root", type=click.Path(file_okay=False), default=None,
              help="directory containing c10/metal (default: the linted tree, else the torch wheel)")
@click.option("--show-passed", is_flag=True, help="also list passed and skipped variants")
@click.option("--progress/--no-progress", default=True)
@click.option("--specs", "spec_paths", multiple=True, type=click.Path(exists=True),
              help="TOML launch spec file or directory (repeatable); looked up before [tool.mpslint] smoke-specs "
                   "and the spec library shipped with mpslint; inline `mpslint-smoke:` comments win")
@click.option("--no-builtin-specs", is_flag=True, help="do not use the spec library shipped with mpslint")
@click.option("--large-index", is_flag=True,
              help="run only the [kernel.large] launches of TOML specs: the threadgroups near 2^31 and 2^32 "
                   "elements, big buffers mapped sparse, every page touch checked (SMK405 index-overflow)")
@click.option("--suggest-spec", "suggest_file", type=click.Path(exists=True, dir_okay=False),
              help="print a TOML launch-spec skeleton for every kernel of FILE.metal (PATHS: host code that "
                   "launches them, besides a PyTorch-style ../operations folder) and exit")
def smoke_cmd(paths, backend, fmt, output, jobs, timeout, memory_mb, cache_dir, headers_root, show_passed, progress,
              spec_paths, no_builtin_specs, suggest_file, large_index):
    """Compile and smoke-run the kernels of .metal files (host-emulated on Linux)."""
    if suggest_file:
        from .suggest import skeleton
        _emit(skeleton(Path(suggest_file), [Path(p) for p in paths]), output)
        sys.exit(0)
    if not paths:
        raise click.UsageError("give the .metal files or directories to smoke-run (or --suggest-spec FILE)")
    files = collect(paths)
    if not files:
        click.echo("mpslint smoke: no .metal files", err=True)
        sys.exit(2)
    try:
        specs = [Path(p) for p in spec_paths] + configured_specs(Path.cwd())
    except Exception as e:   # ConfigError: a broken [tool.mpslint] is a usage error
        click.echo(f"mpslint: {e}", err=True)
        sys.exit(2)
    opts = SmokeOptions(backend=backend, jobs=jobs, timeout=timeout, memory_mb=memory_mb,
                        cache_dir=Path(cache_dir) if cache_dir else None,
                        headers_root=Path(headers_root) if headers_root else None, progress=progress,
                        specs=specs, builtin_specs=not no_builtin_specs, large_index=large_index)
    try:
        report = run_smoke(files, opts)
    except (SmokeEnvironmentError, SpecFileError) as e:
        click.echo(f"mpslint: {e}", err=True)
        sys.exit(2)
    if fmt == "outcomes-json":
        s = report.summary()
        _emit(json.dumps({"backend": report.backend_label, "summary": dataclasses.asdict(s),
                          "outcomes": [outcome_dict(o) for o in report.outcomes]}, indent=2) + "\n", output)
    elif fmt == "text":
        lines = []
        for o in report.outcomes:
            if o.code is None and not show_passed:
                continue
            tag = o.code or o.status
            what = " ".join(x for x in (o.kernel, f"[{o.variant}]" if o.variant else "") if x)
            lines.append(f"{o.path}:{o.line}:{o.column}: {tag} {what}: {o.message}")
        lines.append(report.format_summary())
        _emit("\n".join(lines) + "\n", output)
    else:  # the findings, through the same reporters as `mpslint check`
        from ..engine import LintOptions, lint
        from ..reporters import get_reporter

        result = lint(LintOptions(paths=[str(f) for f in files], select=["SMK"],
                                  rule_options={"smoke_outcomes": _display_paths(report.outcomes, files)}))
        _emit(get_reporter(fmt)(result, color=False), output)
        click.echo(report.format_summary(), err=True)
    for err in report.errors:
        click.echo(f"mpslint: error: {err}", err=True)
    if report.errors:
        sys.exit(2)
    sys.exit(1 if report.findings else 0)


def _emit(text: str, output) -> None:
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)


def _display_paths(outcomes, files):
    """Outcomes name files as given; findings use mpslint's reported paths (relative to the cwd)."""
    from ..discovery import display_path

    cwd = Path.cwd().resolve()
    return [dataclasses.replace(o, path=display_path(Path(o.path), cwd)) for o in outcomes]
