"""Command line: ``mpslint [check] PATHS``, ``rules``, ``rule CODE``, ``graph --op NAME``.

Exit codes: 0 clean, 1 findings, 2 usage or internal error.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from . import __version__
from .reporters import FORMATS as REPORT_FORMATS

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _codes(values: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for v in values:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


# Subcommands that live in their own packages, imported only when invoked (startup stays fast).
LAZY_COMMANDS = {
    "audit": "mpslint.audit.cli:audit_cmd",
    "smoke": "mpslint.smoke.cli:smoke_cmd",
    "review": "mpslint.review.cli:review_cmd",
    "server": "mpslint.server.cli:server_cmd",
}


class DefaultGroup(click.Group):
    """``mpslint PATHS`` means ``mpslint check PATHS``; some subcommands load lazily."""

    def list_commands(self, ctx):
        return sorted(set(self.commands) | {k for k in LAZY_COMMANDS if self._lazy(k) is not None})

    def get_command(self, ctx, name):
        if name in self.commands:
            return self.commands[name]
        return self._lazy(name)

    @staticmethod
    def _lazy(name):
        target = LAZY_COMMANDS.get(name)
        if target is None:
            return None
        import importlib

        mod, _, attr = target.partition(":")
        try:
            return getattr(importlib.import_module(mod), attr)
        except (ImportError, AttributeError):
            return None

    def parse_args(self, ctx, args):
        if not args or (args[0] not in self.commands and args[0] not in LAZY_COMMANDS and args[0] not in ("--help", "-h", "--version")):
            args = ["check", *args]
        return super().parse_args(ctx, args)


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mpslint")
def main():
    """Static linter and migration auditor for PyTorch's MPS (Metal) backend."""


def _load_config(config_path: str | None, paths: list[str], isolated: bool):
    from .config import ConfigError, find_pyproject, load_config, nearest_torch_floor

    if isolated:
        return load_config(None)
    try:
        if config_path:
            return load_config(Path(config_path))
        start = Path(paths[0]) if paths else Path.cwd()
        start = start if start.is_dir() else start.parent
        found = find_pyproject(start) or find_pyproject(Path.cwd())
        cfg = load_config(found)
        if cfg.min_torch is None:
            cfg.min_torch = nearest_torch_floor(start)  # `torch>=2.10` in a pyproject without [tool.mpslint]
        return cfg
    except ConfigError as e:
        raise click.UsageError(str(e)) from e


def lint_options(f):
    opts = [
        click.option("--select", multiple=True, help="Rule codes or prefixes to enable (comma-separated), or ALL."),
        click.option("--extend-select", multiple=True, help="Codes or prefixes to enable on top of the selection."),
        click.option("--ignore", multiple=True, help="Codes or prefixes to disable."),
        click.option("--native-functions", type=click.Path(dir_okay=False), help="Path to native_functions.yaml (default: found by walking up)."),
        click.option("--config", "config_path", type=click.Path(exists=True, dir_okay=False), help="pyproject.toml to read [tool.mpslint] from."),
        click.option("--isolated", is_flag=True, help="Ignore all configuration files."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


class _CheckCommand(click.Command):
    """``check``: with ``--format lintrunner`` a usage error is reported as a path-less LintMessage, exit 0."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except click.UsageError as e:
            if ctx.params.get("fmt") != "lintrunner":
                raise
            from .reporters.lintrunner import failure

            _emit(failure(f"mpslint: {e.format_message()}"), ctx.params.get("output"))
            ctx.exit(EXIT_CLEAN)


def _expand_response_files(paths) -> list[str]:
    """``@FILE`` arguments (lintrunner's ``@{{PATHSFILE}}``) stand for the paths listed in FILE, one per line."""
    out: list[str] = []
    for p in paths:
        if p.startswith("@") and not Path(p).exists() and Path(p[1:]).is_file():
            out.extend(x.strip() for x in Path(p[1:]).read_text(encoding="utf-8").splitlines() if x.strip())
        else:
            out.append(p)
    return out


@main.command(cls=_CheckCommand)
@click.argument("paths", nargs=-1, type=click.Path())
@lint_options
@click.option("--format", "fmt", type=click.Choice(list(REPORT_FORMATS)), default="text", show_default=True, help="Report format (see docs/integrations.md).")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Write the report to a file.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--statistics", is_flag=True, help="Print counts per rule and parse health (on stderr for every format but text).")
@click.option("--fix", "do_fix", is_flag=True, help="Apply safe fixes (verified: re-parse, re-lint) and report what remains.")
@click.option("--unsafe-fixes", is_flag=True, help="With --fix or --diff, also apply unsafe fixes.")
@click.option("--diff", "show_diff", is_flag=True, help="Print the fixes as a unified diff; change no file.")
@click.option("--baseline", "baseline_path", type=click.Path(dir_okay=False), help="Do not report findings recorded in this baseline; report its stale entries.")
@click.option("--write-baseline", "write_baseline", type=click.Path(dir_okay=False, writable=True), help="Record the current findings in a baseline file (with --baseline: only shrink it).")
@click.option("--diff-base", "diff_base", metavar="REF", help="Report only findings the diff since the merge base with REF touches.")
@click.option("--filter", "filter_mode", type=click.Choice(["added", "context", "file", "none"]), default="added", show_default=True, help="With --diff-base: added lines, hunk lines, changed files (and findings new in unchanged files), or everything.")
@click.option("--cache-dir", "cache_dir", type=click.Path(file_okay=False), envvar="MPSLINT_CACHE_DIR", help="Directory of the facts cache [default: .mpslint_cache in the project root; env: MPSLINT_CACHE_DIR].")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the facts cache.")
@click.option("--jobs", "-j", "jobs", type=click.IntRange(min=0), default=None, help="Worker processes for parsing [default: automatic: one per core for large trees, none for small runs; 0 or 1: none].")
@click.option("--smoke", is_flag=True, help="Also compile and smoke-run the checked .metal files (SMK4xx; host-emulated on Linux).")
@click.option("--smoke-backend", type=click.Choice(["auto", "host", "metal"]), default="auto", show_default=True)
def check(paths, select, extend_select, ignore, native_functions, config_path, isolated, fmt, output, exit_zero, statistics, do_fix, unsafe_fixes, show_diff, baseline_path, write_baseline, diff_base, filter_mode, cache_dir, no_cache, jobs, smoke=False, smoke_backend="auto"):
    """Lint PATHS (files or directories; default: the current directory; @FILE reads paths from FILE)."""
    from .engine import LintOptions, lint
    from .reporters import get_reporter

    paths = _expand_response_files(paths) or ["."]
    cfg = _load_config(config_path, paths, isolated)
    opts = LintOptions(
        paths=paths,
        config=cfg,
        native_functions=native_functions,
        select=_codes(select) or None,
        extend_select=_codes(extend_select),
        ignore=_codes(ignore),
    )
    from .cache import resolve_cache_dir

    opts.cache_dir = resolve_cache_dir(cache_dir, no_cache, cfg.path.parent if cfg.path else Path.cwd())
    opts.jobs = jobs
    _check_codes(opts.select or [], opts.extend_select, opts.ignore)
    if smoke:
        from .smoke.check import smoke_outcomes

        try:
            from dataclasses import replace

            graph = lint(replace(opts, select=["DSP301"])).project.graph  # references come from the dispatch graph
            opts.rule_options["smoke_outcomes"] = smoke_outcomes(paths, backend=smoke_backend, graph=graph)
        except Exception as e:  # a missing dependency or a runner error is an error (exit 2), never a skip
            click.echo(f"mpslint: smoke run failed: {type(e).__name__}: {e}", err=True)
            sys.exit(2)
    if do_fix or show_diff:
        _run_fixes(opts, unsafe_fixes, show_diff, fmt, output, exit_zero, statistics)
        return
    try:
        result = lint(opts)
        result = _ci_filters(result, opts, baseline_path, write_baseline, diff_base, filter_mode)
    except Exception as e:  # never a traceback in CI: one line, exit 2
        if fmt == "lintrunner":  # an adapter reports its own failure as a message and exits 0
            from .reporters.lintrunner import failure

            _emit(failure(f"mpslint: {e}" if isinstance(e, click.UsageError) else f"mpslint: internal error: {type(e).__name__}: {e}"), output)
            sys.exit(EXIT_CLEAN)
        if isinstance(e, click.UsageError):
            raise
        click.echo(f"mpslint: internal error: {type(e).__name__}: {e}", err=True)
        sys.exit(EXIT_ERROR)
    report_problems(result)
    color = output is None and sys.stdout.isatty()
    text = get_reporter(fmt)(result, color=color, statistics=statistics)
    if statistics and fmt == "text":
        text += _parse_health(result)
    elif statistics:  # machine formats stay parseable: the counts go to stderr
        from .reporters.text import statistics_text

        click.echo(statistics_text(result) + _parse_health(result), err=True, nl=False)
    _emit(text, output)
    if fmt == "lintrunner":
        sys.exit(EXIT_CLEAN)
    if result.internal_errors or _nothing_linted(result):
        sys.exit(EXIT_ERROR)
    if result.files == 0:
        click.echo("mpslint: warning: no files to lint under the given paths", err=True)
    if result.findings and not exit_zero:
        sys.exit(EXIT_FINDINGS)
    sys.exit(EXIT_CLEAN)


def _emit(text: str, output: str | None) -> None:
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)


def _ci_filters(result, opts, baseline_path, write_baseline, diff_base, filter_mode):
    """``--write-baseline``, ``--baseline`` and ``--diff-base``/``--filter``, in that order (see docs/integrations.md)."""
    ctx = click.get_current_context(silent=True)
    if not diff_base and ctx is not None and ctx.get_parameter_source("filter_mode") == click.core.ParameterSource.COMMANDLINE:
        raise click.UsageError("--filter needs --diff-base REF")
    if baseline_path or write_baseline:
        from . import baseline as bl

        try:
            previous = bl.load(baseline_path) if baseline_path else None
        except bl.BaselineError as e:
            raise click.UsageError(str(e)) from e
        if write_baseline:
            n = bl.write(result, write_baseline, previous)
            click.echo(f"mpslint: wrote {n} baseline entr{'ies' if n != 1 else 'y'} to {write_baseline}", err=True)
            previous = bl.load(write_baseline)
        applied = bl.apply(result, previous)
        result = applied.result
        if applied.stale and not write_baseline:
            for line in bl.describe_stale(applied.stale):
                click.echo(f"mpslint: {line}", err=True)
    if diff_base:
        from .diffs import DiffError, filter_result, load_diff

        try:
            result = filter_result(result, opts, load_diff(diff_base), filter_mode)
        except DiffError as e:
            raise click.UsageError(f"--diff-base {diff_base}: {e}") from e
    return result


def _run_fixes(opts, unsafe, show_diff, fmt, output, exit_zero, statistics):
    """``--fix`` / ``--diff``: exit 1 when findings remain (``--fix``) or the diff is not empty (``--diff``)."""
    from .fixer import fix
    from .reporters import get_reporter

    try:
        outcome = fix(opts, unsafe=unsafe)
    except Exception as e:
        click.echo(f"mpslint: internal error: {type(e).__name__}: {e}", err=True)
        sys.exit(EXIT_ERROR)
    for f, why in outcome.rejected:
        click.echo(f"mpslint: {f.path}:{f.span.line}: fix for {f.code} not applied: {why}", err=True)
    if show_diff:
        diff = outcome.diff()
        if output:
            Path(output).write_text(diff, encoding="utf-8")
        else:
            click.echo(diff, nl=False)
        n = len(outcome.applied)
        click.echo(f"Would fix {n} finding{'s' if n != 1 else ''}.", err=True)
        sys.exit(EXIT_FINDINGS if diff and not exit_zero else EXIT_CLEAN)
    base = Path(opts.cwd or Path.cwd())
    for path, text in sorted(outcome.texts.items()):
        target = Path(path) if Path(path).is_absolute() else base / path
        tmp = target.with_name(target.name + ".mpslint-tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(target)
    n = len(outcome.applied)
    click.echo(f"Fixed {n} finding{'s' if n != 1 else ''} in {len(outcome.texts)} file{'s' if len(outcome.texts) != 1 else ''}.", err=True)
    result = outcome.result
    text = get_reporter(fmt)(result, color=output is None and sys.stdout.isatty(), statistics=statistics)
    if output:
        Path(output).write_text(text, encoding="utf-8")
    else:
        click.echo(text, nl=False)
    if result.internal_errors:
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if result.findings and not exit_zero else EXIT_CLEAN)


def report_problems(result) -> None:
    """Missing paths, unusable files and internal errors: one line each on stderr."""
    for p in result.problems:
        click.echo(f"mpslint: {p}", err=True)
    for e in result.errors:
        click.echo(f"mpslint: {e}", err=True)
    for e in result.internal_errors:
        click.echo(f"mpslint: {e.splitlines()[0]}", err=True)


def _nothing_linted(result) -> bool:
    """Exit 2 only when nothing could be linted: every input failed, or a path did not exist and none did."""
    if result.files == 0:
        return bool(result.problems or result.errors)
    fatal = {e.path for e in result.errors if e.fatal}
    return not (result.project.linted - fatal)


def _check_codes(*groups):
    from .rule import all_rules

    known = [r.code for r in all_rules()]
    for group in groups:
        for c in group:
            u = c.upper()
            if u == "ALL":
                continue
            if not any(k.startswith(u) for k in known) and not any(r.name == c for r in all_rules()):
                raise click.UsageError(f"unknown rule code or prefix: {c!r} (see `mpslint rules`)")


def _parse_health(result) -> str:
    s = result.stats
    lines = ["", "Parse health:"]
    lines.append(f"  files parsed: {s.files}, bytes: {s.bytes}, ERROR nodes left: {s.error_nodes}, MISSING nodes: {s.missing_nodes}")
    worst = sorted(((e, p) for p, (b, e) in s.per_file.items() if e), reverse=True)[:5]
    for e, p in worst:
        lines.append(f"  {e:4d} ERROR nodes in {p}")
    from .context import context_counts

    lines += ["", "Context (where each linted file lives; [tool.mpslint] context overrides):"]
    for name, reasons in sorted(context_counts(result.project).items()):
        why = ", ".join(f"{reason}: {n}" for reason, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])))
        lines.append(f"  {name}: {sum(reasons.values())} files ({why})")
    return "\n".join(lines) + "\n"


@main.command("rules")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "md"]), default="text", show_default=True)
def rules_cmd(fmt):
    """List every rule with its code, severity and whether it is on by default (md: the full reference)."""
    from .rule import all_rules

    rules = all_rules()
    if fmt == "json":
        click.echo(json.dumps([r.metadata() for r in rules], indent=2))
        return
    if fmt == "md":
        click.echo(rules_markdown(rules), nl=False)
        return
    for r in rules:
        on = "" if r.default_enabled else "  (opt-in)"
        fix = " [fix]" if r.fixable else ""
        click.echo(f"{r.code}  {r.name:<36} {r.severity.value:<8} {_applies(r):<10} {r.summary}{on}{fix}")


def _applies(rule) -> str:
    """Where a rule applies (mpslint.context): "pytorch" for PyTorch's conventions, "everywhere" for hazards."""
    return "everywhere" if set(rule.contexts) >= {"pytorch", "extension"} else "/".join(rule.contexts)


def _settings_line(r) -> str:
    """A rule's settings for its page: ``[tool.mpslint.rules.CODE]`` keys, defaults and what they do."""
    items = "; ".join(f"`{k}` (default `{str(v.default).lower() if isinstance(v.default, bool) else v.default}`): {v.doc}" for k, v in sorted(r.settings.items()))
    return f"Settings in `[tool.mpslint.rules.{r.code}]`: {items}."


def rules_markdown(rules) -> str:
    """docs/rules.md: an index table, then every rule's page (its module docstring)."""
    out = ["# mpslint rules", "", "Generated by `mpslint rules --format md`; do not edit by hand.", ""]
    out += ["| Code | Name | Severity | Default | Fix | Applies in | Summary |", "|---|---|---|---|---|---|---|"]
    for r in rules:
        summary = r.summary.replace("|", "\\|")
        default = "on" if r.default_enabled else "opt-in"
        out.append(f"| [{r.code}](#{r.code.lower()}-{r.name}) | {r.name} | {r.severity.value} | {default} | {r.fixable or ''} | {_applies(r)} | {summary} |")
    for r in rules:
        out += ["", f"## {r.code} {r.name}", "", f"*{r.summary}* — severity {r.severity.value}, "
                f"{'enabled by default' if r.default_enabled else 'opt-in (`--select ' + r.code + '`)'}"
                + (f", fix: {r.fixable}" if r.fixable else "") + f", applies in: {_applies(r)}.", ""]
        out += [_settings_line(r), ""] if r.settings else []
        out.append(r.doc().replace("\n## ", "\n### ").replace("## What it does", "### What it does", 1))
    return "\n".join(out) + "\n"


@main.command("rule")
@click.argument("code")
def rule_cmd(code):
    """Print the documentation of one rule."""
    from .rule import rule_by_code

    r = rule_by_code(code)
    if r is None:
        raise click.UsageError(f"unknown rule: {code!r} (see `mpslint rules`)")
    status = "enabled by default" if r.default_enabled else f"opt-in: enable with --select {r.code}"
    click.echo(f"# {r.code} {r.name}\n\nSeverity: {r.severity.value}; {status}" + (f"; fix: {r.fixable}" if r.fixable else "") + f"; applies in: {_applies(r)}\n")
    click.echo(f"{r.summary}\n")
    if r.settings:
        click.echo(_settings_line(r) + "\n")
    click.echo(r.doc())


@main.command("graph")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--op", help="Operator family or overload name (e.g. pow, atan2.out).")
@click.option("--links", is_flag=True, help="List every kernel name host code asks for and the Metal kernels it resolves to (the default without --op).")
@click.option("--native-functions", type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def graph_cmd(paths, op, links, native_functions, fmt):
    """Show what the dispatch graph knows about one op, or every host-to-kernel link (--links)."""
    from .engine import LintOptions, lint
    from .graph_view import describe_links, describe_op, render_links

    paths = list(paths) or ["."]
    result = lint(LintOptions(paths=paths, native_functions=native_functions, select=["DSP"], config=_load_config(None, paths, True)))
    for e in result.errors:
        click.echo(f"mpslint: {e}", err=True)
    if links or op is None:
        found = describe_links(result.project.graph)
        click.echo(json.dumps(found, indent=2)) if fmt == "json" else click.echo(render_links(found), nl=False)
        return
    info = describe_op(result.project.graph, op)
    if info is None:
        click.echo(f"mpslint: no overload named {op!r} in the native functions", err=True)
        sys.exit(EXIT_ERROR)
    if fmt == "json":
        click.echo(json.dumps(info, indent=2, default=str))
    else:
        from .graph_view import render_text

        click.echo(render_text(info), nl=False)


if __name__ == "__main__":  # pragma: no cover
    main()
