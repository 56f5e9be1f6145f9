"""`--fix` and `--diff`: expected fixed text, idempotence, overlapping fixes, verification, exit codes."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from mpslint.cli import main
from mpslint.engine import LintOptions
from mpslint.fixer import apply_edits, fix
from mpslint.model import Edit

from .conftest import FIXTURES

CASES = sorted(p for p in (FIXTURES / "fixes").glob("*.before.*"))
TREE_CASES = sorted(p for p in (FIXTURES / "fixes").glob("*.before") if p.is_dir())


def _place(case: Path, tmp_path: Path) -> Path:
    name = case.name.replace(".before", "")
    d = tmp_path / "mps"
    d.mkdir()
    target = d / name
    shutil.copy(case, target)
    return target


def _run(args):
    return CliRunner().invoke(main, args, catch_exceptions=False)


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_fix_produces_expected_text(case, tmp_path):
    target = _place(case, tmp_path)
    expected = case.with_name(case.name.replace(".before", ".after")).read_text()
    flags = ["--unsafe-fixes"] if case.name.startswith("unsafe_") else []
    original = target.read_text()
    diff = _run(["check", "--isolated", "--select", "ALL", "--diff", *flags, str(tmp_path)])
    assert diff.exit_code == 1
    assert target.read_text() == original, "--diff must not change files"
    _run(["check", "--isolated", "--select", "ALL", "--fix", *flags, str(tmp_path)])
    assert target.read_text() == expected
    # idempotent: a second --fix changes nothing and --diff is empty
    _run(["check", "--isolated", "--select", "ALL", "--fix", *flags, str(tmp_path)])
    assert target.read_text() == expected
    again = _run(["check", "--isolated", "--select", "ALL", "--diff", *flags, str(tmp_path)])
    assert again.exit_code == 0 and again.stdout.strip() == ""


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.name)
def test_fixed_text_parses_no_worse_and_is_clean_for_fixed_rules(case, tmp_path):
    target = _place(case, tmp_path)
    out = fix(LintOptions(paths=[str(tmp_path)], select=["ALL"]), unsafe=case.name.startswith("unsafe_"))
    assert out.applied and not out.rejected
    path = next(iter(out.texts))
    fixed_codes = {f.code for f in out.applied}
    remaining = [f for f in out.result.findings if f.code in fixed_codes and f.fix is not None]
    assert not remaining
    before_errors = out.result.stats.per_file[path][1]
    assert before_errors == 0
    del target


def test_fix_exit_code_reports_what_remains(tmp_path):
    target = _place(FIXTURES / "fixes" / "narrowing.before.mm", tmp_path)
    # the one-dimension narrowings too (`rows`, `implicit`): MPS102's setting, read from the tree's pyproject.toml
    (tmp_path / "pyproject.toml").write_text("[tool.mpslint.rules.MPS102]\nnarrowed-dimensions = true\n")
    r = _run(["check", "--fix", str(tmp_path)])
    # `uint32_t implicit = in.size(1);` has no automatic fix: it remains, so exit 1
    assert r.exit_code == 1
    # three casts of int64 values (the outer cast of `nested` narrows a uint32_t: not a finding)
    assert "Fixed 3 findings in 1 file" in r.output
    assert "checked_convert<int32_t>(in.size(0)" in target.read_text()
    assert re.search(r"narrowing\.mm:\d+:\d+: MPS102 `implicit`", r.output)
    assert "checked_convert<uint32_t>(in.numel()" in target.read_text()


def test_fix_refused_when_it_would_break_the_parse(tmp_path, monkeypatch):
    """A fix whose edit breaks the file is refused and reported; the file is left as it was."""
    target = _place(FIXTURES / "fixes" / "subiter_numel.before.mm", tmp_path)
    original = target.read_text()
    from mpslint import fixer as fixer_mod

    real_apply = fixer_mod.apply_edits

    def broken(text, edits):
        return real_apply(text, [Edit(e.path, e.start, e.end, e.content + ") {{ ((", e.line, e.column, e.end_line, e.end_column) for e in edits])

    monkeypatch.setattr(fixer_mod, "apply_edits", broken)
    out = fix(LintOptions(paths=[str(tmp_path)], select=["MPS101"]))
    assert not out.applied and out.rejected
    assert "parse" in out.rejected[0][1]
    assert target.read_text() == original


def test_apply_edits_dedupes_identical_insertions():
    e = Edit("f", 0, 0, "#include <x>\n")
    assert apply_edits("a", [e, e]) == "#include <x>\na"


def _tree_files(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*")) if p.is_file() and ".mpslint_cache" not in p.parts}


@pytest.mark.parametrize("case", TREE_CASES, ids=lambda p: p.name)
def test_fix_tree_produces_expected_tree(case, tmp_path):
    """Cross-file fixes on a small tree: DSP301 rewrites the yaml, which leaves the .mm implementation dead
    (DSP302 deletes it and its include), which leaves the xfail entry stale (DSP306 removes it)."""
    tree = tmp_path / "tree"
    shutil.copytree(case, tree)
    expected = _tree_files(case.with_name(case.name.replace(".before", ".after")))
    flags = ["--unsafe-fixes"] if case.name.startswith("unsafe_") else []
    args = ["check", "--isolated", "--select", "ALL", "--no-cache"]
    before = _tree_files(tree)
    assert _run([*args, "--diff", *flags, str(tree)]).exit_code == 1
    assert _tree_files(tree) == before
    _run([*args, "--fix", *flags, str(tree)])
    assert _tree_files(tree) == expected
    _run([*args, "--fix", *flags, str(tree)])
    assert _tree_files(tree) == expected
    again = _run([*args, "--diff", *flags, str(tree)])
    assert again.exit_code == 0 and again.stdout.strip() == ""
    if flags:  # without --unsafe-fixes nothing of it is applied
        fresh = tmp_path / "fresh"
        shutil.copytree(case, fresh)
        _run([*args, "--fix", str(fresh)])
        assert _tree_files(fresh) == _tree_files(case)
