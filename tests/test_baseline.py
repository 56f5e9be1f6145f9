"""``--write-baseline`` / ``--baseline``: line-free keys, new findings fail, stale entries reported."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from mpslint import baseline as bl
from mpslint.cli import main

from ._integration_helpers import chdir

BAD = "  const uint32_t n = static_cast<uint32_t>(in.numel());\n"
OTHER = "  const uint32_t m = static_cast<uint32_t>(in.numel());\n"


def source(*body: str) -> str:
    return "void k(const Tensor& in) {\n" + "".join(body) + "}\n"


@pytest.fixture
def proj(tmp_path):
    (tmp_path / "mps").mkdir()
    return tmp_path


def run(proj, *args):
    with chdir(proj):
        return CliRunner().invoke(main, ["check", "--isolated", "--select", "MPS102", *args, "."])


def write(proj, text, name="Op.mm"):
    (proj / "mps" / name).write_text(text)


def test_existing_findings_pass_new_ones_fail(proj):
    write(proj, source(BAD))
    r = run(proj, "--write-baseline", "b.json")
    assert r.exit_code == 0, r.output  # everything is recorded
    data = json.loads((proj / "b.json").read_text())
    assert data["version"] == 1
    (entry,) = data["entries"]
    assert entry == {"rule": "MPS102", "path": "mps/Op.mm", "source": "const uint32_t n = static_cast<uint32_t>(in.numel());", "occurrence": 0}
    assert run(proj, "--baseline", "b.json").exit_code == 0
    # moved down, re-indented: still the same key
    write(proj, "// header\n\n" + source("    " + BAD.strip() + "\n"))
    assert run(proj, "--baseline", "b.json").exit_code == 0
    # a new finding fails, and only it is reported
    write(proj, source(BAD, OTHER))
    r = run(proj, "--baseline", "b.json", "--format", "json")
    assert r.exit_code == 1
    (f,) = json.loads(r.stdout)
    assert f["line"] == 3
    # the same line a second time is a new finding too (occurrence 1)
    write(proj, source(BAD, BAD))
    r = run(proj, "--baseline", "b.json", "--format", "json")
    assert r.exit_code == 1 and [f["line"] for f in json.loads(r.stdout)] == [3]


def test_stale_entries_are_reported_and_the_baseline_only_shrinks(proj):
    write(proj, source(BAD, OTHER))
    assert run(proj, "--write-baseline", "b.json").exit_code == 0
    assert len(bl.load(proj / "b.json")) == 2
    write(proj, source(BAD))  # OTHER was fixed
    r = run(proj, "--baseline", "b.json")
    assert r.exit_code == 0
    assert "baseline: 1 entry no longer match" in r.stderr and "const uint32_t m" in r.stderr
    # rewriting with the old baseline drops the stale entry and does not absorb a new finding
    write(proj, source(BAD, "  const uint32_t z = static_cast<uint32_t>(in.numel());\n"))
    r = run(proj, "--baseline", "b.json", "--write-baseline", "b.json")
    assert r.exit_code == 1  # the new finding still fails
    assert [e[2] for e in bl.load(proj / "b.json")] == ["const uint32_t n = static_cast<uint32_t>(in.numel());"]


def test_entries_outside_the_run_are_neither_stale_nor_dropped(proj):
    write(proj, source(BAD), "A.mm")
    write(proj, source(OTHER), "B.mm")
    assert run(proj, "--write-baseline", "b.json").exit_code == 0
    # a run on A.mm only (a pre-commit run): B.mm's entry is out of scope
    with chdir(proj):
        r = CliRunner().invoke(main, ["check", "--isolated", "--select", "MPS102", "--baseline", "b.json", "--write-baseline", "b.json", "mps/A.mm"])
    assert r.exit_code == 0 and "stale" not in r.stderr
    assert {e[1] for e in bl.load(proj / "b.json")} == {"mps/A.mm", "mps/B.mm"}
    # a rule that did not run: not stale either
    with chdir(proj):
        r = CliRunner().invoke(main, ["check", "--isolated", "--select", "MPS101", "--baseline", "b.json", "."])
    assert "stale" not in r.stderr


def test_baseline_keys_are_relative_to_the_repository_root(proj):
    from ._integration_helpers import init_repo

    init_repo(proj)
    write(proj, source(BAD))
    assert run(proj, "--write-baseline", "b.json").exit_code == 0
    with chdir(proj / "mps"):  # another working directory, the same repository-relative keys
        r = CliRunner().invoke(main, ["check", "--isolated", "--select", "MPS102", "--baseline", "../b.json", "Op.mm"])
        assert r.exit_code == 0, r.output
        write(proj, source(BAD, OTHER))
        r = CliRunner().invoke(main, ["check", "--isolated", "--select", "MPS102", "--baseline", "../b.json", "Op.mm"])
        assert r.exit_code == 1


def test_bad_baseline_is_a_usage_error(proj):
    write(proj, source(BAD))
    (proj / "b.json").write_text("{not json")
    r = run(proj, "--baseline", "b.json")
    assert r.exit_code == 2 and "not a JSON baseline" in r.stderr
    (proj / "b.json").write_text('{"version": 99, "entries": []}')
    assert run(proj, "--baseline", "b.json").exit_code == 2
    assert run(proj, "--baseline", "missing.json").exit_code == 2


def test_baselined_findings_are_absent_from_sarif(proj):
    write(proj, source(BAD, OTHER))
    assert run(proj, "--write-baseline", "b.json").exit_code == 0
    write(proj, source(BAD, OTHER, "  const uint32_t z = static_cast<uint32_t>(in.numel());\n"))
    r = run(proj, "--baseline", "b.json", "--format", "sarif")
    results = json.loads(r.stdout)["runs"][0]["results"]
    assert len(results) == 1 and "suppressions" not in results[0]
