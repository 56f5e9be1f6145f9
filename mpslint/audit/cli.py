"""``mpslint audit [PATHS] [--format md|json|html] [-o FILE] [--compare OLD.json] [--native-functions PATH]``,
and ``mpslint audit [PATHS] --history REV_RANGE [--every N] [--max-points M]`` (history.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

EXIT_OK, EXIT_REGRESSED, EXIT_ERROR = 0, 1, 2


@click.command("audit")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["md", "json", "html"]), default="md", show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write the report to a file.")
@click.option("--compare", "compare_to", type=click.Path(exists=True, dir_okay=False), help="A previous `--format json` report: list what moved since.")
@click.option("--native-functions", type=click.Path(dir_okay=False), help="Path to native_functions.yaml (default: found among PATHS or by walking up).")
@click.option("--fail-on-regression", is_flag=True, help="With --compare, exit 1 when an op family or overload regressed.")
@click.option("--history", "history", metavar="REV_RANGE", help="The state at each revision of REV_RANGE (e.g. v2.10.0..HEAD) of the git checkout holding PATHS, read with git (no checkout).")
@click.option("--every", type=click.IntRange(min=1), help="With --history: every N-th revision (the newest is always kept).")
@click.option("--max-points", type=click.IntRange(min=1), help="With --history: at most M revisions, evenly spaced (the oldest and newest kept).")
@click.option("--cache-dir", "cache_dir", type=click.Path(file_okay=False), envvar="MPSLINT_CACHE_DIR", help="With --history: the facts cache [default: .mpslint_cache in the project root].")
@click.option("--no-cache", is_flag=True, help="With --history: do not read or write the facts cache.")
@click.option("--jobs", "-j", "jobs", type=click.IntRange(min=0), default=None, help="With --history: worker processes for parsing [default: automatic].")
def audit_cmd(paths, fmt, output, compare_to, native_functions, fail_on_regression, history, every, max_points, cache_dir, no_cache, jobs):
    """Classify every op of native_functions.yaml: native Metal, MPSGraph, mixed, CPU fallback, composite or unknown."""
    from ..cli import _load_config

    if history is not None:
        if compare_to or fail_on_regression:
            raise click.UsageError("--history does not take --compare or --fail-on-regression")
        _history(list(paths) or ["."], history, fmt, output, native_functions, every, max_points, cache_dir, no_cache, jobs)
        return
    if every or max_points:
        raise click.UsageError("--every and --max-points go with --history")
    from .classify import AuditError, run_audit
    from .compare import compare, has_regressions
    from .model import load_report

    paths = list(paths) or ["."]
    old = None
    if compare_to:
        try:
            old = load_report(json.loads(Path(compare_to).read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, ValueError) as e:
            click.echo(f"mpslint: {compare_to}: {e}", err=True)
            sys.exit(EXIT_ERROR)
    try:
        audit, result = run_audit(paths, native_functions=native_functions, config=_load_config(None, paths, False))
    except AuditError as e:
        click.echo(f"mpslint: {e}", err=True)
        sys.exit(EXIT_ERROR)
    except click.UsageError:
        raise
    except Exception as e:  # never a traceback in CI: one line, exit 2
        click.echo(f"mpslint: internal error: {type(e).__name__}: {e}", err=True)
        sys.exit(EXIT_ERROR)
    from ..cli import report_problems

    report_problems(result)
    report = audit.to_dict()
    diff = compare(old, report) if old is not None else None
    if fmt == "json":
        from .render_json import render

        if diff is not None:
            report = dict(report, compare=diff)
        text = render(report)
    elif fmt == "html":
        from .render_html import render

        text = render(report, diff)
    else:
        from .render_md import render

        text = render(report, diff)
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)
    if result.internal_errors:
        sys.exit(EXIT_ERROR)
    if fail_on_regression and diff is not None and has_regressions(diff):
        sys.exit(EXIT_REGRESSED)
    sys.exit(EXIT_OK)


def _history(paths, rev_range, fmt, output, native_functions, every, max_points, cache_dir, no_cache, jobs):
    from ..cache import resolve_cache_dir
    from ..cli import _load_config
    from .history import HistoryError, run_history

    cfg = _load_config(None, paths, False)
    try:
        report, stats = run_history(
            paths, rev_range, every=every, max_points=max_points, native_functions=native_functions, config=cfg,
            cache_dir=resolve_cache_dir(cache_dir, no_cache, cfg.path.parent if cfg.path else Path.cwd()), jobs=jobs,
        )
    except HistoryError as e:
        click.echo(f"mpslint: {e}", err=True)
        sys.exit(EXIT_ERROR)
    except Exception as e:  # never a traceback in CI: one line, exit 2
        click.echo(f"mpslint: internal error: {type(e).__name__}: {e}", err=True)
        sys.exit(EXIT_ERROR)
    if fmt == "json":
        from .render_json import render

        text = render(report)
    elif fmt == "html":
        from .render_history import render_html

        text = render_html(report)
    else:
        from .render_history import render_md

        text = render_md(report)
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)
    for msg in stats.internal_errors:
        click.echo(f"mpslint: {msg}", err=True)
    sys.exit(EXIT_ERROR if stats.internal_errors else EXIT_OK)
