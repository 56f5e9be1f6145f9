"""Baselines for adopting mpslint in a large tree: today's findings stop failing CI, new ones still do.

A baseline stores line-free keys ``(rule, repo-relative path, normalised source line, occurrence)``
(see ``reporters._common.finding_keys``), so edits elsewhere in a file, which move lines up or down,
keep every key. Entries that no longer match a finding are *stale*: they are reported so the
baseline only shrinks (``--baseline F --write-baseline F`` drops them and never adds new findings).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from .reporters._common import finding_keys, repo_relative, repo_root

VERSION = 1


class BaselineError(Exception):
    pass


Key = tuple[str, str, str, int]


def load(path: str | Path) -> list[Key]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as e:
        raise BaselineError(f"{path}: cannot read baseline: {e.strerror or e}") from e
    except json.JSONDecodeError as e:
        raise BaselineError(f"{path}:{e.lineno}: not a JSON baseline: {e.msg}") from e
    if not isinstance(data, dict) or data.get("version") != VERSION or not isinstance(data.get("entries"), list):
        raise BaselineError(f"{path}: not an mpslint baseline (version {VERSION})")
    out = []
    for i, e in enumerate(data["entries"]):
        try:
            out.append((str(e["rule"]), str(e["path"]), str(e["source"]), int(e["occurrence"])))
        except (KeyError, TypeError, ValueError) as exc:
            raise BaselineError(f"{path}: entry {i} is malformed ({exc})") from exc
    return out


def dump(keys, path: str | Path) -> None:
    entries = [{"rule": r, "path": p, "source": s, "occurrence": o} for r, p, s, o in sorted(set(keys))]
    doc = {"version": VERSION, "tool": "mpslint", "entries": entries}
    Path(path).write_text(json.dumps(doc, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


@dataclass
class Applied:
    result: object  # the LintResult with baselined findings removed
    matched: int
    stale: list[Key]


def _scope(result, cwd, root) -> tuple[set[str], set[str]]:
    """Repo-relative paths that were linted and codes of the rules that ran: where an entry can go stale."""
    paths = {repo_relative(p, cwd, root) for p in getattr(result.project, "linted", ())}
    codes = {r.code for r in result.rules}
    return paths, codes


def apply(result, entries: list[Key], cwd=None) -> Applied:
    """Drop findings whose key is in the baseline; report entries in scope that matched nothing."""
    root = repo_root(cwd)
    keys = finding_keys(result.findings, cwd, root)
    wanted = set(entries)
    kept = [f for f, k in zip(result.findings, keys) if k not in wanted]
    present = set(keys)
    paths, codes = _scope(result, cwd, root)
    stale = sorted(k for k in wanted if k not in present and k[1] in paths and k[0] in codes)
    return Applied(replace(result, findings=kept), len(result.findings) - len(kept), stale)


def write(result, path: str | Path, previous: list[Key] | None = None, cwd=None) -> int:
    """Write a baseline of the current findings; returns the number of entries.

    With ``previous`` (an existing baseline applied in the same run) the baseline only shrinks: current
    findings are kept only where ``previous`` had them, and entries outside this run's scope (files not
    linted, rules not run) are carried over unchanged.
    """
    root = repo_root(cwd)
    keys = finding_keys(result.findings, cwd, root)
    if previous is None:
        out = set(keys)
    else:
        prev = set(previous)
        paths, codes = _scope(result, cwd, root)
        out = {k for k in keys if k in prev} | {k for k in prev if not (k[1] in paths and k[0] in codes)}
    dump(out, path)
    return len(out)


def describe_stale(stale: list[Key], limit: int = 20) -> list[str]:
    lines = [
        f"baseline: {len(stale)} entr{'ies' if len(stale) != 1 else 'y'} no longer match a finding (fixed?); "
        "shrink it with `--baseline FILE --write-baseline FILE`"
    ]
    for r, p, s, o in stale[:limit]:
        lines.append(f"  stale: {r} {p}: {s[:80]}" + (f" (occurrence {o + 1})" if o else ""))
    if len(stale) > limit:
        lines.append(f"  ... and {len(stale) - limit} more")
    return lines
