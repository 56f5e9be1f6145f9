"""Property-based fuzzing (hypothesis): no input crashes mpslint, the CI-sized sample of bench/fuzz.py.

Arbitrary bytes, truncated fixtures and random mutations of every fixture under ``fixtures/`` (the mutation
operators of bench/fuzz.py: byte flips, line deletion / duplication / swapping, lines spliced from other
fixtures, unbalanced brackets, quotes, raw strings and ``#if``s, odd characters, deep nesting) go through
reading, masking (the masked text keeps the length and every line break), facts, the graph, every rule
(``--select ALL``) and the text and json reporters without an exception, and through ``engine.lint`` on
temporary trees without an ``internal_errors`` entry.  ``derandomize=True``: the same examples every run.
The 100,000-input run is ``python bench/fuzz.py``.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mpslint.discovery import kind_of
from mpslint.engine import LintOptions, lint
from mpslint.masking import mask_metal, mask_objc
from mpslint.reporters import get_reporter

ROOT = Path(__file__).resolve().parents[1]


def _load_bench():
    spec = importlib.util.spec_from_file_location("mpslint_bench_fuzz", ROOT / "bench" / "fuzz.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


fuzz = _load_bench()
CORPUS = fuzz.corpus()
OTHERS = [t for _p, _k, t in CORPUS]
KINDS = sorted({k for _p, k, _t in CORPUS})
WALKED = [c for c in CORPUS if kind_of(Path(c[0]), False) is not None]  # what a directory walk finds

FAST = settings(
    deadline=None, derandomize=True, database=None, max_examples=60,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
SLOW = settings(FAST, max_examples=12)


def test_corpus_covers_every_kind_of_fixture():
    assert len(CORPUS) >= 20
    assert {"metal", "host", "yaml", "common_mps"} <= set(KINDS)
    listed = {p for p, _k, _t in CORPUS}
    assert "aten/src/ATen/native/native_functions.yaml" in listed


def assert_masking_invariants(text: str) -> None:
    breaks = [i for i, c in enumerate(text) if c == "\n"]
    for fn in (mask_metal, mask_objc):
        out = fn(text)
        assert len(out) == len(text), fn.__name__
        assert [i for i, c in enumerate(out) if c == "\n"] == breaks, fn.__name__


def mutated(rng: random.Random, text: str, steps: int) -> str:
    for _ in range(steps):
        text = fuzz.mutate_text(rng, text, OTHERS, max_nest=600)
    return text


# ---------------------------------------------------------------- masking


@FAST
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400))
def test_masking_keeps_length_and_line_breaks_on_any_text(text):
    assert_masking_invariants(text)


@FAST
@given(st.sampled_from(CORPUS), st.randoms(use_true_random=False), st.integers(1, 6))
def test_masking_keeps_length_and_line_breaks_on_mutated_fixtures(item, rng, steps):
    assert_masking_invariants(mutated(rng, item[2], steps))


# ---------------------------------------------------------------- reading + facts (project.file_facts)


@FAST
@given(st.sampled_from(KINDS), st.binary(max_size=3000))
def test_arbitrary_bytes_read_and_facts(kind, data):
    path = next(p for p, k, _t in CORPUS if k == kind)
    fuzz.check_input(path, kind, data)


@FAST
@given(st.sampled_from(KINDS), st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=2000))
def test_arbitrary_text_facts(kind, text):
    path = next(p for p, k, _t in CORPUS if k == kind)
    fuzz.check_input(path, kind, text.encode("utf-8"))


@pytest.mark.parametrize("item", CORPUS, ids=[p for p, _k, _t in CORPUS])
def test_every_fixture_truncated(item):
    """Each fixture cut at 24 points spread over the file (inside tokens, strings, comments, macros)."""
    path, kind, text = item
    data = text.encode("utf-8")
    for k in range(1, 25):
        fuzz.check_input(path, kind, data[: len(data) * k // 25])


@FAST
@given(st.sampled_from(CORPUS), st.randoms(use_true_random=False), st.integers(1, 8))
def test_mutated_fixtures_facts(item, rng, steps):
    path, kind, text = item
    fuzz.check_input(path, kind, mutated(rng, text, steps).encode("utf-8"))


OPENERS = ["(", "{", "[", "<", "if (x) ", "#if 1\n", "- [", "{a: ", "f(", "[[", "^{", "[x y:", 'R"(', "/*", "@available("]


@pytest.mark.parametrize("opener", OPENERS)
def test_deep_nesting_in_every_kind(opener):
    """Deep nesting, balanced and not: facts or the engine's "too deeply nested" skip, never an exception."""
    for path, kind, text in [next(c for c in CORPUS if c[1] == k) for k in KINDS]:
        cut = len(text) // 2
        for body in (opener * 2000, opener * 2000 + "x" + {"(": ")", "{": "}", "[": "]", "<": ">", "f(": ")"}.get(opener, "") * 2000):
            fuzz.check_input(path, kind, (text[:cut] + body + text[cut:]).encode("utf-8"))


# ---------------------------------------------------------------- graph, every rule, reporters


@SLOW
@given(st.sampled_from(CORPUS), st.randoms(use_true_random=False), st.integers(1, 6))
def test_mutated_fixture_in_the_project_every_rule_and_reporter(item, rng, steps):
    """The mutated file replaces the original in the fixtures/aten project: graph, all rules, text + json."""
    path, kind, text = item
    fuzz.check_input(path, kind, mutated(rng, text, steps).encode("utf-8"), full=True)


@pytest.mark.parametrize("path", sorted({p for p, _k, _t in CORPUS if p.startswith("aten/")}))
def test_each_project_file_emptied_or_garbled(path):
    """Dropping (emptying) or garbling any one file of the project leaves the graph and every rule working."""
    kind = next(k for p, k, _t in CORPUS if p == path)
    for data in (b"", b"}{)(][", b"- func:\n  dispatch: {MPS: [\n", b"\xef\xbb\xbf#if 1\n#define X(a) a##\n"):
        fuzz.check_input(path, kind, data, full=True)


# ---------------------------------------------------------------- engine.lint on temporary trees


@settings(FAST, max_examples=8)
@given(st.lists(st.tuples(st.sampled_from(WALKED), st.randoms(use_true_random=False), st.integers(0, 4)), min_size=1, max_size=4, unique_by=lambda t: t[0][0]),
       st.binary(max_size=500))
def test_engine_on_mutated_temp_trees(files, junk):
    """A temporary tree of several mutated fixtures and one file of arbitrary bytes, through discovery, the
    engine (--select ALL) and the text and json reporters: no internal error, every file accounted for."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mpslint-fuzz-") as tmp:
        root = Path(tmp)
        for (path, _kind, text), rng, steps in files:
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(mutated(rng, text, steps).encode("utf-8"))
        junk_path = root / "aten/src/ATen/native/mps/operations/Junk.mm"
        junk_path.parent.mkdir(parents=True, exist_ok=True)
        junk_path.write_bytes(junk)
        result = lint(LintOptions(paths=[str(root)], select=["ALL"], cwd=root, jobs=1))
        assert not result.internal_errors, result.internal_errors
        assert result.files == len(files) + 1
        expected = {p for (p, _k, _t), _r, _s in files} | {"aten/src/ATen/native/mps/operations/Junk.mm"}
        assert result.project.linted | {e.path for e in result.errors} == expected  # linted or reported
        for f in result.findings:
            src = result.project.sources[f.path]
            assert 0 <= f.span.start <= f.span.end <= len(src.text)
        for fmt in ("text", "json"):
            assert get_reporter(fmt)(result, color=False, statistics=True)


def test_bench_driver_runs_and_reports(tmp_path):
    """bench/fuzz.py itself (processes, the full pipeline and engine.lint on some inputs, the summary)."""
    out = tmp_path / "summary.json"
    rc = fuzz.main(["-n", "40", "--jobs", "2", "--chunk", "10", "--full-every", "4", "--engine-every", "20", "--seed", "77", "--json", str(out)])
    import json

    summary = json.loads(out.read_text())
    assert rc == 0 and summary["crashes"] == 0
    assert summary["inputs"] == 40 and summary["full_pipeline_inputs"] == 10 and summary["engine_inputs"] == 2
    assert sum(summary["outcomes"].values()) == 40
