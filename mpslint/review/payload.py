"""Build a GitHub "create a review" payload from findings and a diff.

GitHub rejects the whole review (HTTP 422) when one comment names a line outside the diff's hunks,
so a comment is made only for a finding whose line lies inside a hunk of the new side; a multi-line
``suggestion`` must also lie inside one hunk. Each comment carries a hidden marker with the finding's
line-free fingerprint, so a re-run can skip comments that already exist.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from mpslint.diffs import Diff
from mpslint.reporters._common import finding_keys, line_hash, repo_relative, repo_root

SUMMARY_MARKER = "<!-- mpslint-review -->"
_MARK = "<!-- mpslint:{} -->"
MARK_RE = re.compile(r"<!-- mpslint:([0-9a-f]{16}:\d+) -->")


def marker(fingerprint: str) -> str:
    return _MARK.format(fingerprint)


def markers_in(text: str) -> set[str]:
    return set(MARK_RE.findall(text or ""))


@dataclass
class Review:
    payload: dict
    commented: list = field(default_factory=list)  # findings with a comment
    outside: list = field(default_factory=list)  # (rel path, finding, fingerprint): new, but not on a diff line
    skipped_existing: int = 0
    new_outside: int = 0  # outside findings not reported by an earlier review

    @property
    def worth_posting(self) -> bool:
        return bool(self.payload["comments"]) or self.new_outside > 0


def _hunk_of(diff: Diff, rel: str, line: int):
    fd = diff.files.get(rel)
    if fd is None:
        return None
    for first, last in fd.hunks:
        if first <= line <= last:
            return (first, last)
    return None


def suggestion(result, finding, diff: Diff, rel: str):
    """(start_line, end_line, replacement text) for a safe fix that GitHub can show as a suggestion, else None.

    Only safe fixes whose edits are all in the finding's file and whose lines form one contiguous range
    inside a single hunk (a suggestion replaces whole lines).
    """
    fx = finding.fix
    if fx is None or fx.applicability != "safe" or not fx.edits:
        return None
    if any(e.path != finding.path or not e.line for e in fx.edits):
        return None
    src = result.project.sources.get(finding.path)
    if src is None:
        return None
    first = min(e.line for e in fx.edits)
    last = max(e.end_line - 1 if (e.end_column == 1 and e.end_line > e.line) else e.end_line for e in fx.edits)
    hunk = _hunk_of(diff, rel, first)
    fd = diff.files.get(rel)
    if hunk is None or not (hunk[0] <= last <= hunk[1]) or any(n not in fd.context for n in range(first, last + 1)):
        return None
    idx = src.index
    seg_start = idx.starts[first - 1]
    seg_end = idx.starts[last] - 1 if last < len(idx.starts) else idx.length
    text = src.text
    out = text[seg_start:seg_end]
    for e in sorted(fx.edits, key=lambda e: e.start, reverse=True):
        if e.start < seg_start or e.end > seg_end:
            return None
        out = out[: e.start - seg_start] + e.content + out[e.end - seg_start :]
    if out == text[seg_start:seg_end]:
        return None
    return first, last, out


def _fence(text: str) -> str:
    n = 3
    while "`" * n in text:
        n += 1
    return "`" * n


def comment_body(finding, fingerprint: str, sugg_text: str | None) -> str:
    f = finding
    body = [f"**{f.code}** `{f.name}` ({f.severity.value}): {f.message}"]
    if sugg_text is not None:
        fence = _fence(sugg_text)
        body += ["", f"{fence}suggestion", sugg_text, fence]
    body += ["", f"<sub>`mpslint rule {f.code}` explains this rule; silence one line with `// mpslint: ignore[{f.code}]`.</sub>", marker(fingerprint)]
    return "\n".join(body)


def summary_body(review: Review, total_in_diff: int, max_listed: int = 20) -> str:
    by_sev = Counter(f.severity.value for f in review.commented)
    by_rule = Counter(f.code for f in review.commented)
    n_sugg = sum(1 for c in review.payload["comments"] if "suggestion\n" in c["body"])
    lines = [SUMMARY_MARKER, "### mpslint"]
    if total_in_diff == 0 and not review.outside:
        lines.append("No findings on the lines this pull request changes.")
    else:
        sev = ", ".join(f"{by_sev[s]} {s}" for s in ("error", "warning", "info") if by_sev[s])
        lines.append(
            f"{len(review.commented)} new finding{'s' if len(review.commented) != 1 else ''} on changed lines"
            + (f" ({sev})" if sev else "")
            + (f", {n_sugg} with a suggested fix" if n_sugg else "")
            + (f"; {review.skipped_existing} already commented earlier" if review.skipped_existing else "")
            + "."
        )
        if by_rule:
            lines.append("")
            lines.append("| Rule | Count |")
            lines.append("|---|---|")
            lines += [f"| {code} | {n} |" for code, n in sorted(by_rule.items())]
    if review.outside:
        n = len(review.outside)
        lines += ["", f"{n} finding{'s' if n != 1 else ''} this change brings outside the diff's lines (GitHub takes inline comments on diff lines only):"]
        for rel, f, fp in review.outside[:max_listed]:
            lines.append(f"- `{rel}:{f.span.line}` {f.code}: {f.message} {marker(fp)}")
        if n > max_listed:
            lines.append(f"- ... and {n - max_listed} more (run `mpslint check --diff-base ... --filter file` locally)")
    return "\n".join(lines) + "\n"


def build_review(
    result, diff: Diff, commit_id: str, existing: set[str] = frozenset(), cwd=None, max_comments: int = 50, base_keys: set | None = None
) -> Review:
    """The review for ``result``'s findings on the diff.

    ``existing`` holds fingerprints already posted (inline or in an earlier summary). ``base_keys`` are the
    line-free keys of the findings at the merge base: a finding off the diff's lines is listed in the
    summary when it is new (a yaml change can raise one in an unchanged ``.mm``). Without ``base_keys``,
    findings off the diff's lines in changed files are listed.
    """
    root = repo_root(cwd)
    keys = finding_keys(result.findings, cwd, root)
    comments = []
    review = Review({"commit_id": commit_id, "event": "COMMENT", "body": "", "comments": comments})
    in_diff = 0

    def off_diff(rel, f, key, fp, changed):
        if (key not in base_keys) if base_keys is not None else changed:
            review.outside.append((rel, f, fp))
            review.new_outside += fp not in existing

    for f, key in zip(result.findings, keys):
        rel = repo_relative(f.path, cwd, root)
        fp = line_hash(key)
        fd = diff.files.get(rel)
        if fd is None or fd.is_removed:
            off_diff(rel, f, key, fp, False)
            continue
        if f.span.line not in fd.context or _hunk_of(diff, rel, f.span.line) is None:
            off_diff(rel, f, key, fp, True)
            continue
        in_diff += 1
        if fp in existing:
            review.skipped_existing += 1
            continue
        if len(comments) >= max_comments:
            review.outside.append((rel, f, fp))
            review.new_outside += 1
            continue
        sugg = suggestion(result, f, diff, rel)
        c = {"path": rel, "side": "RIGHT", "body": comment_body(f, fp, sugg[2] if sugg else None)}
        if sugg and sugg[0] != sugg[1]:
            c.update(start_line=sugg[0], start_side="RIGHT", line=sugg[1])
        elif sugg:
            c["line"] = sugg[0]
        else:
            c["line"] = f.span.line
        comments.append(c)
        review.commented.append(f)
    review.payload["body"] = summary_body(review, in_diff)
    return review


def markdown_report(review: Review) -> str:
    """The review as Markdown for the step summary (when the token may not post)."""
    out = [MARK_RE.sub("", review.payload["body"])]
    for c in review.payload["comments"]:
        where = f"{c['path']}:{c.get('start_line', c['line'])}" + (f"-{c['line']}" if "start_line" in c else "")
        body = MARK_RE.sub("", c["body"]).strip()
        out.append(f"#### `{where}`\n\n{body}\n")
    return "\n".join(out)
