"""Helpers shared by reporters, the baseline and the review bot: repository-relative paths, stable
finding keys and fingerprints, rule metadata, and applying a fix's edits to a file's text.

Nothing here decides what is a finding; it only describes findings that exist.
"""

from __future__ import annotations

import hashlib
import re
import subprocess
from collections import defaultdict
from functools import lru_cache
from pathlib import Path, PurePosixPath
from urllib.parse import quote

SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}
LINTRUNNER_SEVERITY = {"error": "error", "warning": "warning", "info": "advice"}


@lru_cache(maxsize=32)
def _git_toplevel(directory: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--show-toplevel"], cwd=directory, capture_output=True, text=True, timeout=20
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0 or not out.stdout.strip():
        return None
    return str(Path(out.stdout.strip()).resolve())


def repo_root(cwd: Path | str | None = None) -> Path:
    """The git work tree holding ``cwd``, else ``cwd`` itself."""
    c = Path(cwd or Path.cwd()).resolve()
    top = _git_toplevel(str(c))
    return Path(top) if top else c


def repo_relative(path: str, cwd: Path | str | None = None, root: Path | None = None) -> str:
    """``path`` (as reported, relative to ``cwd`` or absolute) relative to the repository root, in POSIX form.

    Never absolute and never escaping the root: a file outside the root is made relative to its own git
    work tree, else to the PyTorch-shaped checkout holding it (``aten/src/ATen/native/native_functions.yaml``),
    or failing both reported by its name alone.
    """
    c = Path(cwd or Path.cwd()).resolve()
    root = (root or repo_root(c)).resolve()
    p = Path(path)
    absolute = (p if p.is_absolute() else c / p).resolve()
    try:
        return absolute.relative_to(root).as_posix()
    except ValueError:
        pass
    own = _git_toplevel(str(absolute.parent)) if absolute.parent.is_dir() else None
    if own:
        try:
            return absolute.relative_to(own).as_posix()
        except ValueError:
            pass
    for anc in absolute.parents:
        if (anc / "aten/src/ATen/native/native_functions.yaml").is_file():
            return absolute.relative_to(anc).as_posix()
    return absolute.name


def uri_for(rel: str) -> str:
    """A relative URI reference for a repository-relative POSIX path (percent-encoded, no scheme)."""
    parts = [quote(part, safe="!$&'()*+,;=@-._~") for part in PurePosixPath(rel).parts if part not in ("", ".", "..")]
    return "/".join(parts)


_WS = re.compile(r"\s+")


def normalise_line(text: str) -> str:
    """Whitespace-insensitive form of a source line (indentation and spacing changes keep the key)."""
    return _WS.sub(" ", text).strip()


def finding_keys(findings, cwd=None, root=None) -> list[tuple[str, str, str, int]]:
    """Line-free keys ``(rule, repo-relative path, normalised line, occurrence)``, in the order of ``findings``.

    The occurrence counts earlier findings with the same rule, path and line text in source order, so two
    identical lines in a file stay distinct and moving code up or down keeps every key.
    """
    seen: dict[tuple[str, str, str], int] = defaultdict(int)
    rel_cache: dict[str, str] = {}
    order = sorted(range(len(findings)), key=lambda i: findings[i].sort_key())
    keys: list = [None] * len(findings)
    for i in order:
        f = findings[i]
        rel = rel_cache.get(f.path)
        if rel is None:
            rel = rel_cache[f.path] = repo_relative(f.path, cwd, root)
        base = (f.code, rel, normalise_line(f.source_line))
        keys[i] = (*base, seen[base])
        seen[base] += 1
    return keys


def line_hash(key: tuple[str, str, str, int]) -> str:
    """``partialFingerprints.primaryLocationLineHash``: our own hash of rule, path and line text, ``:occurrence``."""
    code, rel, text, occ = key
    digest = hashlib.sha256(f"{code}\0{rel}\0{text}".encode()).hexdigest()[:16]
    return f"{digest}:{occ + 1}"


def rule_index(result) -> dict[str, type]:
    """Every rule that ran, plus any rule named by a finding (by code)."""
    from mpslint.rule import all_rules

    known = {r.code: r for r in all_rules()}
    out = {r.code: r for r in getattr(result, "rules", [])}
    for f in result.findings:
        if f.code not in out and f.code in known:
            out[f.code] = known[f.code]
    return dict(sorted(out.items()))


def first_paragraph(doc: str, heading: str = "## What it does") -> str:
    """The first paragraph under ``heading`` of a rule's docs page, joined into one line."""
    lines = doc.splitlines()
    try:
        i = next(k for k, ln in enumerate(lines) if ln.strip() == heading) + 1
    except StopIteration:
        i = 0
    para: list[str] = []
    for ln in lines[i:]:
        if ln.startswith("#"):
            break
        if not ln.strip():
            if para:
                break
            continue
        para.append(ln.strip())
    return " ".join(para)


def markdown_to_text(doc: str) -> str:
    """A plain-text rendering of a rule's markdown docs (headings without ``#``, code fences dropped)."""
    out = []
    for ln in doc.splitlines():
        if ln.startswith("```"):
            continue
        out.append(ln.lstrip("#").strip() if ln.startswith("#") else ln)
    return "\n".join(out).strip() + "\n"


def _overlap(a, b) -> bool:
    if a.start == a.end and b.start == b.end:
        return a.start == b.start
    if a.start == a.end:
        return b.start < a.start < b.end
    if b.start == b.end:
        return a.start < b.start < a.end
    return a.start < b.end and b.start < a.end


def apply_fixes(text: str, fixes) -> tuple[str, int]:
    """Apply whole fixes (each a sequence of edits, character offsets) to ``text``.

    A fix is taken whole or not at all; one overlapping an already taken fix is skipped (a later run
    picks it up). Returns (new text, number of fixes applied).
    """
    taken: list = []
    n = 0
    for edits in sorted((tuple(f) for f in fixes), key=lambda es: min((e.start for e in es), default=0)):
        if not edits or any(e.start < 0 or e.end > len(text) or e.end < e.start for e in edits):
            continue
        # an edit identical to one already taken (two fixes adding the same #include) is shared, not a conflict
        fresh = [e for e in edits if not any((e.start, e.end, e.content) == (t.start, t.end, t.content) for t in taken)]
        if any(_overlap(e, t) for e in fresh for t in taken) or any(_overlap(a, b) for i, a in enumerate(fresh) for b in fresh[i + 1 :]):
            continue
        taken.extend(fresh)
        n += 1
    out = text
    for e in sorted(taken, key=lambda e: (e.start, e.end), reverse=True):
        out = out[: e.start] + e.content + out[e.end :]
    return out, n


def safe_fixes_for(result, path: str) -> list[tuple]:
    """The safe fixes reported for ``path`` whose edits all touch ``path``, in finding order."""
    out = []
    for f in result.findings:
        if f.path == path and f.fix is not None and f.fix.applicability == "safe" and f.fix.edits:
            if all(e.path == path for e in f.fix.edits):
                out.append(tuple(f.fix.edits))
    return out


def utf16_col(line_text: str, column: int) -> int:
    """1-based character column -> 1-based UTF-16 code unit column."""
    prefix = line_text[: max(0, column - 1)]
    return len(prefix.encode("utf-16-le")) // 2 + 1 + max(0, column - 1 - len(prefix))


def utf8_col(line_text: str, column: int) -> int:
    """1-based character column -> 1-based UTF-8 byte column."""
    prefix = line_text[: max(0, column - 1)]
    return len(prefix.encode("utf-8")) + 1 + max(0, column - 1 - len(prefix))


def line_of(result, path: str, line: int) -> str:
    src = result.project.sources.get(path) if getattr(result, "project", None) is not None else None
    if src is None:
        return ""
    return src.index.line_text(src.text, line)
