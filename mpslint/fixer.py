"""Apply fixes: choose non-overlapping edits, verify each fix, iterate to a fixpoint (as ruff does).

A fix is kept only if, after it is applied in memory,
  - the file re-parses with no more ERROR nodes than before,
  - it introduces no name the fixed file cannot reach (mpslint.fixcheck / mpslint.names),
  - a ``.metal`` file still compiles with the smoke host toolchain, when installed (no new errors),
  - re-linting no longer reports that finding,
and the loop repeats until no fix applies, so a second ``--fix`` run changes nothing.
Nothing is written here: the caller writes ``FixOutcome.texts`` (or prints a diff).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from . import fixcheck
from .engine import LintOptions, LintResult, lint
from .model import Edit, Finding

MAX_ROUNDS = 10


@dataclass
class FixOutcome:
    original: dict[str, str] = field(default_factory=dict)  # path -> text before any fix
    texts: dict[str, str] = field(default_factory=dict)  # path -> fixed text (only changed files)
    applied: list[Finding] = field(default_factory=list)
    rejected: list[tuple[Finding, str]] = field(default_factory=list)
    result: LintResult | None = None  # the lint of the fixed texts

    def diff(self) -> str:
        out = []
        for path in sorted(self.texts):
            a = self.original[path].splitlines(keepends=True)
            b = self.texts[path].splitlines(keepends=True)
            out.extend(difflib.unified_diff(a, b, fromfile=f"a/{path}", tofile=f"b/{path}"))
        return "".join(out)


def _fixable(f: Finding, unsafe: bool) -> bool:
    return f.fix is not None and (f.fix.applicability == "safe" or unsafe)


def apply_edits(text: str, edits: list[Edit]) -> str:
    """Apply non-overlapping edits (character offsets) from the end backwards."""
    for e in sorted(set(edits), key=lambda e: (e.start, e.end), reverse=True):
        text = text[: e.start] + e.content + text[e.end :]
    return text


def _compatible(chosen: list[Edit], edits: tuple[Edit, ...]) -> bool:
    for e in edits:
        for c in chosen:
            if e == c:
                continue  # the same edit twice (two fixes adding one include) is fine
            if e.start < c.end and c.start < e.end:
                return False
            if e.start == e.end == c.start == c.end:
                return False  # two different insertions at one point: order would matter
    return True


def _key(f: Finding, text: str) -> tuple:
    """A position-free identity for a finding: code, message, and the text it points at."""
    return (f.code, f.message, text[f.span.start : f.span.end])


def _parse_errors(result: LintResult, path: str) -> int:
    return result.stats.per_file.get(path, (0, 0))[1]


def fix(opts: LintOptions, unsafe: bool = False) -> FixOutcome:
    outcome = FixOutcome()
    texts: dict[str, str] = dict(opts.overrides)
    refused: set[tuple] = set()
    result = lint(_with(opts, texts))
    for _ in range(MAX_ROUNDS):
        sources = result.project.sources
        by_path: dict[str, list[Finding]] = {}
        for f in result.findings:
            if _fixable(f, unsafe) and _key(f, sources[f.path].text) not in refused and all(e.path == f.path for e in f.fix.edits):
                by_path.setdefault(f.path, []).append(f)
        if not by_path:
            break
        changed = False
        for path in sorted(by_path):
            before = sources[path].text
            outcome.original.setdefault(path, before)
            chosen: list[Edit] = []
            picked: list[Finding] = []
            for f in sorted(by_path[path], key=lambda f: (min(e.start for e in f.fix.edits), f.code)):
                if _compatible(chosen, f.fix.edits):
                    chosen.extend(f.fix.edits)
                    picked.append(f)
            base_errors = _error_nodes(sources[path], before)
            for f in list(picked):  # a fix that breaks the parse on its own is refused
                alone = apply_edits(before, list(f.fix.edits))
                why = None
                if _error_nodes(sources[path], alone) > base_errors:
                    why = "the fixed file would not parse cleanly"
                else:
                    missing = fixcheck.undeclared_names(before, f.fix.edits, alone, sources[path].kind)
                    if missing:
                        why = f"the fix writes {', '.join(f'`{n}`' for n in missing)}, which the file cannot reach (no include declares it, or it is written unqualified outside its namespace)"
                if why:
                    picked.remove(f)
                    refused.add(_key(f, before))
                    outcome.rejected.append((f, why))
            if picked and sources[path].kind == "metal" and path in result.project.fs_paths:
                for f, why in _compile_regressions(before, picked, result.project.fs_paths[path]):
                    picked.remove(f)
                    refused.add(_key(f, before))
                    outcome.rejected.append((f, why))
            if not picked:
                continue
            new_text = apply_edits(before, [e for f in picked for e in f.fix.edits])
            trial = lint(_with(opts, {**texts, path: new_text}))
            bad = _still_reported(picked, result, trial, path)
            if bad:
                for f in bad:
                    refused.add(_key(f, before))
                    outcome.rejected.append((f, "re-linting still reports it"))
                continue  # this file is retried next round without the refused fixes
            texts[path] = new_text
            outcome.applied.extend(picked)
            result = trial
            changed = True
        if not changed:
            result = lint(_with(opts, texts))
            if not any(_fixable(f, unsafe) and _key(f, result.project.sources[f.path].text) not in refused for f in result.findings):
                break
    outcome.texts = {p: t for p, t in texts.items() if p in outcome.original and t != outcome.original[p]}
    outcome.result = result
    return outcome


def _compile_regressions(before: str, picked: list[Finding], fs_path: str) -> list[tuple[Finding, str]]:
    """The fixes of one Metal file whose result adds a compile error (mpslint.fixcheck; nothing when the
    host toolchain is missing): all of them applied first, then one by one only when that fails."""
    combined = fixcheck.new_compile_errors(before, apply_edits(before, [e for f in picked for e in f.fix.edits]), fs_path)
    if not combined:
        return []
    out = []
    for f in picked:
        alone = fixcheck.new_compile_errors(before, apply_edits(before, list(f.fix.edits)), fs_path)
        if alone:
            out.append((f, f"the fixed file would not compile: {alone[0]}"))
    return out or [(f, f"the fixed file would not compile: {combined[0]}") for f in picked]


def _error_nodes(src, text: str) -> int:
    from .parsing import error_counts, parse
    from .masking import mask_metal, mask_objc

    if src.kind == "metal":
        return error_counts(parse(mask_metal(text)))[0]
    if src.kind == "host":
        return error_counts(parse(mask_objc(text)))[0]
    if src.kind == "yaml":
        import yaml

        try:
            yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError:
            return 1 << 30
    return 0


def _still_reported(picked: list[Finding], old: LintResult, new: LintResult, path: str) -> list[Finding]:
    """Fixes whose finding re-linting still reports: a (code, message) must lose one finding per fix applied."""
    from collections import Counter

    def counts(res):
        return Counter((g.code, g.message) for g in res.findings if g.path == path)

    before, after, want = counts(old), counts(new), Counter((f.code, f.message) for f in picked)
    return [f for f in picked if after[(f.code, f.message)] > before[(f.code, f.message)] - want[(f.code, f.message)]]


def _with(opts: LintOptions, texts: dict[str, str]) -> LintOptions:
    from dataclasses import replace

    return replace(opts, overrides=dict(texts))
