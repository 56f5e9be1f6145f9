"""Every fixture line annotated ``expect: CODE`` is flagged, and nothing else is."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from mpslint.config import Config
from mpslint.engine import LintOptions, lint
from mpslint.expectations import annotations
from mpslint.rule import all_rules

from .conftest import FIXTURES, ROOT

TREES = ["aten", "ext"]
EXTS = {".metal", ".mm", ".h", ".cpp", ".yaml", ".py"}


def _fixture_files(tree: str) -> list[Path]:
    return sorted(p for p in (FIXTURES / tree).rglob("*") if p.suffix in EXTS and p.is_file())


# every rule at full strength: all rules selected, and the settings that widen a rule turned on
# (the defaults are checked against the same fixtures in tests/test_rule_settings.py)
FULL = Config(rule_settings={"MPS102": {"narrowed-dimensions": True}})


@pytest.fixture(scope="module")
def results():
    out = {}
    for tree in TREES:
        out[tree] = lint(LintOptions(paths=[str(FIXTURES / tree)], select=["ALL"], cwd=ROOT, config=FULL))
    return out


CASES = [(tree, p) for tree in TREES for p in _fixture_files(tree)]


@pytest.mark.parametrize("tree,path", CASES, ids=[str(p.relative_to(FIXTURES)) for _, p in CASES])
def test_fixture_expectations(results, tree, path):
    result = results[tree]
    rel = path.relative_to(ROOT).as_posix()
    expected, ok = annotations(path)
    got = Counter((f.span.line, f.code) for f in result.findings if f.path == rel)
    missing = expected - got
    unexpected = got - expected
    assert not missing and not unexpected, f"{rel}: missing {sorted(missing)}, unexpected {sorted(unexpected)}"
    for (line, code) in ok:
        assert (line, code) not in got, f"{rel}:{line}: near-miss flagged by {code}"


# Python files are linted only when named explicitly (compile_shader sources): one run per file.
PY_FIXTURES = sorted((FIXTURES / "py").glob("*.py"))


@pytest.fixture(scope="module")
def py_results():
    return {p: lint(LintOptions(paths=[str(p)], select=["ALL"], cwd=ROOT)) for p in PY_FIXTURES}


@pytest.mark.parametrize("path", PY_FIXTURES, ids=[str(p.relative_to(FIXTURES)) for p in PY_FIXTURES])
def test_python_fixture_expectations(py_results, path):
    result = py_results[path]
    assert not result.internal_errors and not result.errors
    rel = path.relative_to(ROOT).as_posix()
    expected, ok = annotations(path)
    got = Counter((f.span.line, f.code) for f in result.findings if f.path == rel)
    missing = expected - got
    unexpected = got - expected
    assert not missing and not unexpected, f"{rel}: missing {sorted(missing)}, unexpected {sorted(unexpected)}"
    for (line, code) in ok:
        assert (line, code) not in got, f"{rel}:{line}: near-miss flagged by {code}"


def test_fixtures_lint_without_errors(results):
    for result in results.values():
        assert not result.internal_errors
        assert not result.errors


def test_every_rule_has_positive_and_negative_fixture_lines():
    expected_codes, ok_codes = set(), set()
    for p in [p for tree in TREES for p in _fixture_files(tree)] + PY_FIXTURES:
        e, o = annotations(p)
        expected_codes |= {c for _, c in e}
        ok_codes |= {c for _, c in o}
    missing_pos = [r.code for r in all_rules() if r.scope != "smoke" and r.code not in expected_codes]
    missing_neg = [r.code for r in all_rules() if r.scope != "smoke" and r.code not in ok_codes]
    assert not missing_pos, f"rules with no `expect:` fixture line: {missing_pos}"
    assert not missing_neg, f"rules with no `ok:` near-miss fixture line: {missing_neg}"
