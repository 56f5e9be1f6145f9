"""``mpslint review --base REF [PATHS]``: review comments for a pull request's changed lines.

Without ``--post`` it prints the GitHub "create a review" payload (JSON). With ``--post`` it reads
the pull request's existing review comments (so a re-run never repeats one), then creates one review
holding every new comment in a single API call: GitHub applies it whole or not at all, so a failed post
leaves nothing half-posted. When the token may not write (a pull request from a fork gets a read-only
token: HTTP 403), the review goes to ``$GITHUB_STEP_SUMMARY`` instead.

Environment for ``--post``: ``GITHUB_TOKEN``, ``GITHUB_REPOSITORY`` (owner/name), ``GITHUB_API_URL``
(default https://api.github.com), ``GITHUB_EVENT_PATH`` (the pull request number and head commit).
Exit codes: 0 done (also when the review fell back to the step summary), 2 usage or internal error.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click

from mpslint.cli import EXIT_ERROR, _check_codes, _codes, _load_config, lint_options


def _head(cwd=None) -> str:
    out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=cwd, capture_output=True, text=True)
    if out.returncode != 0:
        raise click.UsageError("not in a git repository (git rev-parse HEAD failed)")
    return out.stdout.strip()


def _summary_fallback(text: str) -> str:
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if path:
        try:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(text + "\n")
            return f"the review was written to the step summary ({path})"
        except OSError:
            pass
    click.echo(text)
    return "the review was printed above"


@click.command("review")
@click.argument("paths", nargs=-1, type=click.Path())
@lint_options
@click.option("--base", "base_ref", required=True, metavar="REF", help="Review the diff since the merge base with REF (e.g. origin/main).")
@click.option("--baseline", "baseline_path", type=click.Path(dir_okay=False, exists=True), help="Do not comment on findings recorded in this baseline.")
@click.option("--post", is_flag=True, help="Post the review to GitHub (GITHUB_TOKEN, GITHUB_REPOSITORY, GITHUB_EVENT_PATH).")
@click.option("--pr", "pr_number", type=int, help="Pull request number (default: from $GITHUB_EVENT_PATH).")
@click.option("--commit", "commit_id", help="Commit the comments refer to (default: the pull request head, else HEAD).")
@click.option("--max-comments", type=int, default=50, show_default=True, help="At most this many inline comments; the rest are listed in the summary.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, writable=True), help="Also write the payload JSON to this file.")
def review_cmd(paths, select, extend_select, ignore, native_functions, config_path, isolated, base_ref, baseline_path, post, pr_number, commit_id, max_comments, output):
    """Build (and with --post, post) a GitHub review of the lines a pull request changes."""
    from mpslint.diffs import DiffError, base_keys, load_diff
    from mpslint.engine import LintOptions, lint

    from .github import GitHub, GitHubError, pr_from_event
    from .payload import build_review, markdown_report, markers_in

    paths = list(paths) or ["."]
    cfg = _load_config(config_path, paths, isolated)
    opts = LintOptions(
        paths=paths, config=cfg, native_functions=native_functions, select=_codes(select) or None,
        extend_select=_codes(extend_select), ignore=_codes(ignore),
    )
    _check_codes(opts.select or [], opts.extend_select, opts.ignore)
    client = pr = None
    event_pr, event_head = pr_from_event(os.environ.get("GITHUB_EVENT_PATH"))
    if post:
        token = os.environ.get("GITHUB_TOKEN", "")
        repo = os.environ.get("GITHUB_REPOSITORY", "")
        pr = pr_number or event_pr
        missing = [n for n, v in (("GITHUB_TOKEN", token), ("GITHUB_REPOSITORY", repo), ("a pull request number (--pr or GITHUB_EVENT_PATH)", pr)) if not v]
        if missing:
            raise click.UsageError("--post needs " + ", ".join(missing))
        client = GitHub(os.environ.get("GITHUB_API_URL") or "https://api.github.com", token, repo)
    try:
        result = lint(opts)
        if baseline_path:
            from mpslint import baseline as bl

            result = bl.apply(result, bl.load(baseline_path)).result
        diff = load_diff(base_ref)
        try:
            at_base = base_keys(opts, diff)
        except DiffError as e:  # e.g. a path outside the repository: list findings of changed files instead
            click.echo(f"mpslint review: cannot lint the merge base ({e}); listing findings of changed files only", err=True)
            at_base = None
    except DiffError as e:
        raise click.UsageError(f"--base {base_ref}: {e}") from e
    except Exception as e:
        click.echo(f"mpslint review: internal error: {type(e).__name__}: {e}", err=True)
        sys.exit(EXIT_ERROR)
    for e in result.errors:
        click.echo(f"mpslint: {e}", err=True)
    commit = commit_id or event_head or _head()
    if not commit_id and event_head and _head() != event_head:
        click.echo(
            "mpslint review: warning: HEAD is not the pull request head; line numbers may not match it "
            "(check out `github.event.pull_request.head.sha`)",
            err=True,
        )
    existing: set[str] = set()
    if client is not None:
        try:
            for c in client.review_comments(pr) + client.reviews(pr):
                existing |= markers_in(c.get("body") or "")
        except GitHubError as e:
            click.echo(f"mpslint review: cannot read existing review comments ({e}); nothing posted", err=True)
            click.echo(f"mpslint review: {_summary_fallback(markdown_report(build_review(result, diff, commit, existing, max_comments=max_comments, base_keys=at_base)))}", err=True)
            sys.exit(EXIT_ERROR if e.status not in (403, 404) else 0)
    review = build_review(result, diff, commit, existing, max_comments=max_comments, base_keys=at_base)
    payload_json = json.dumps(review.payload, indent=2, ensure_ascii=False) + "\n"
    if output:
        Path(output).write_text(payload_json, encoding="utf-8")
    if client is None:
        if not output:
            click.echo(payload_json, nl=False)
        return
    n = len(review.payload["comments"])
    if not review.worth_posting:
        click.echo(f"mpslint review: nothing new to post ({review.skipped_existing} finding(s) already commented)", err=True)
        return
    try:
        created = client.create_review(pr, review.payload)
    except GitHubError as e:
        where = _summary_fallback(markdown_report(review))
        if e.status == 403:
            click.echo(f"mpslint review: the token may not write to this pull request (a fork?); {where}", err=True)
            return
        click.echo(f"mpslint review: posting failed, nothing was posted ({e}); {where}", err=True)
        sys.exit(EXIT_ERROR)
    click.echo(f"mpslint review: posted review {created.get('id', '?')} with {n} comment{'s' if n != 1 else ''} on pull request #{pr}", err=True)
