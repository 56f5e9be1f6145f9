"""``mpslint audit [PATHS] [--format md|json|html] [-o FILE] [--compare OLD.json] [--native-functions PATH]``."""

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
def audit_cmd(paths, fmt, output, compare_to, native_functions, fail_on_regression):
    """Classify every op of native_functions.yaml: native Metal, MPSGraph, mixed, CPU fallback, composite or unknown."""
    from ..cli import _load_config
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
