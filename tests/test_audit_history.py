"""``mpslint audit --history``: points, changed families and their commits on a git history built from the
fixtures (tests/_history_repo.py), checked against auditing each commit's tree from the file system."""

from __future__ import annotations

import json
import os
import re

import pytest
from click.testing import CliRunner

from mpslint.audit.classify import run_audit
from mpslint.audit.compare import compare
from mpslint.audit.gitread import sample
from mpslint.audit.history import SCHEMA, run_history
from mpslint.audit.model import CLASSES, FAMILY_CLASSES
from mpslint.audit.render_history import render_html, render_md
from mpslint.audit.render_json import render as render_json
from mpslint.cli import main

from ._history_repo import UNARY_REL, build_history_repo, git


@pytest.fixture(scope="module")
def hrepo(tmp_path_factory):
    return build_history_repo(tmp_path_factory.mktemp("history"))


@pytest.fixture(scope="module")
def snapshot_reports(hrepo):
    out = []
    for snap in hrepo.snapshots:
        audit, result = run_audit([str(snap)], cwd=snap)
        assert not result.internal_errors
        out.append(audit.to_dict())
    return out


@pytest.fixture(scope="module")
def cold(hrepo, tmp_path_factory):
    cache = tmp_path_factory.mktemp("hcache")
    report, stats = run_history([str(hrepo.path)], "main", cache_dir=cache, cwd=hrepo.path, jobs=1)
    return report, stats, cache


def test_points_match_auditing_each_commit_from_the_file_system(hrepo, cold, snapshot_reports):
    report, stats, _ = cold
    assert report["schema"] == SCHEMA
    pts = report["points"]
    assert [p["commit"] for p in pts] == hrepo.commits
    assert [p["subject"] for p in pts] == hrepo.subjects
    assert pts[0]["date"].startswith("2026-01-01T12:00:00")
    for p, snap in zip(pts, snapshot_reports):
        t = snap["totals"]
        assert p["families"] == t["ops"] and p["overloads"] == t["overloads"], p["subject"]
        assert p["families_total"] == t["ops_total"] and p["percent_migrated"] == t["percent_migrated"]
        assert set(p["families"]) == set(FAMILY_CLASSES) and set(p["overloads"]) == set(CLASSES)
    # the README-only commit is the first one's state, not audited again
    assert pts[1]["same_as"] == hrepo.commits[0] and pts[2]["same_as"] is None
    assert stats.revisions == 5 and stats.points == 5 and stats.audited == 4
    assert pts[2]["families"]["native"] == pts[0]["families"]["native"] + 1


def test_changed_families_with_the_commit_that_changed_them(hrepo, cold, snapshot_reports):
    report, _, _ = cold
    got = [(m["family"], m["old"], m["new"], m["kind"], m["commit"], m["previous"]) for m in report["changes"]]
    c = hrepo.commits
    assert got == [
        ("copysign", "mixed", "native", "migrated", c[2], c[1]),
        ("sinc", "native", "unknown", "changed", c[3], c[2]),
        ("copysign", "native", "mixed", "regressed", c[4], c[3]),
        ("frobnicate", None, "unknown", "added", c[4], c[3]),
    ]
    # the same moves as --compare between the commits' trees
    for i in range(1, len(snapshot_reports)):
        d = compare(snapshot_reports[i - 1], snapshot_reports[i])
        moved = {m["family"] for k in ("newly_migrated", "regressed", "changed", "new_mixed") for m in d[k]} | set(d["added"]) | set(d["removed"])
        assert moved == {m["family"] for m in report["changes"] if m["commit"] == c[i]}


def test_unchanged_files_are_not_reparsed_and_the_blob_cache_serves_a_warm_run(hrepo, cold):
    report, stats, cache = cold
    files0 = report["points"][0]["files"]
    # cold: every file of the first commit once, then only the changed yaml (twice: commits 3 and 5);
    # the deleted UnaryKernel.mm costs nothing
    assert stats.parsed == files0 + 2
    assert stats.blobs_read == files0 + 2
    assert stats.memo_hits == (files0 - 1) + (files0 - 1) + (files0 - 2)
    warm, wstats = run_history([str(hrepo.path)], "main", cache_dir=cache, cwd=hrepo.path, jobs=1)
    assert render_json(warm) == render_json(report)  # same report, byte for byte
    assert wstats.parsed == 0 and wstats.cache_hits == stats.parsed
    # nothing written into the repository: no checkout, no worktree, a clean status
    assert git(hrepo.path, "status", "--porcelain") == ""
    assert len(git(hrepo.path, "worktree", "list").splitlines()) == 1
    assert git(hrepo.path, "rev-parse", "HEAD") == hrepo.commits[-1]


def test_ranges_sampling_and_paths(hrepo):
    c = hrepo.commits
    r, _ = run_history([str(hrepo.path)], f"{c[1]}..main", cwd=hrepo.path)
    assert [p["commit"] for p in r["points"]] == c[2:]
    assert [m["family"] for m in r["changes"]] == ["sinc", "copysign", "frobnicate"]  # copysign's migration is the first point
    r, _ = run_history([str(hrepo.path)], "main", every=2, cwd=hrepo.path)
    assert [p["commit"] for p in r["points"]] == [c[0], c[2], c[4]]
    assert r["source"]["revisions_in_range"] == 5
    r, _ = run_history([str(hrepo.path)], "main", max_points=2, cwd=hrepo.path)
    assert [p["commit"] for p in r["points"]] == [c[0], c[4]]
    # copysign is mixed at both ends: only sinc and the new family moved between the two points
    assert [(m["family"], m["commit"], m["previous"]) for m in r["changes"]] == [("frobnicate", c[4], c[0]), ("sinc", c[4], c[0])]
    # a sub-directory of the checkout: the yaml is found at the top, as when linting
    sub = hrepo.path / "aten/src/ATen/native/mps/operations"
    r, _ = run_history([str(sub)], "main", cwd=hrepo.path)
    assert r["points"][0]["files"] < run_history([str(hrepo.path)], "main", cwd=hrepo.path)[0]["points"][0]["files"]
    assert r["points"][3]["families"]["unknown"] > r["points"][0]["families"]["unknown"]
    assert UNARY_REL not in json.dumps(r)


def test_reports_validate_against_the_json_schema(hrepo, cold):
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema not installed")
    from mpslint.audit.history import JSON_SCHEMA

    report, _, _ = cold
    jsonschema.validate(json.loads(render_json(report)), JSON_SCHEMA)
    sampled, _ = run_history([str(hrepo.path)], "main", max_points=2, cwd=hrepo.path)
    jsonschema.validate(sampled, JSON_SCHEMA)
    bad = json.loads(render_json(report))
    bad["changes"][0]["kind"] = "sideways"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, JSON_SCHEMA)


def test_sample():
    revs = list(range(10))
    assert sample(revs) == revs
    assert sample(revs, every=3) == [0, 3, 6, 9]
    assert sample(revs, every=4) == [0, 4, 8, 9]  # the newest is always kept
    assert sample(revs, max_points=4) == [0, 3, 6, 9]
    assert sample(revs, max_points=1) == [9]
    assert sample(revs, every=2, max_points=3) == [0, 4, 9]  # of 0, 2, 4, 6, 8, 9
    assert sample(revs, max_points=100) == revs
    assert sample([], every=2) == []


def test_renderers(hrepo, cold):
    report, _, _ = cold
    md = render_md(report)
    short = hrepo.commits[2][:10]
    assert f"| `copysign` | mixed | native | `{short}` | 2026-01-11 | copysign.Scalar_out joins the shared line |" in md
    assert "| `frobnicate` | (none) | unknown |" in md
    assert len(re.findall(r"^\| `[0-9a-f]{10}` \| 2026-", md, re.M)) == len(report["points"])  # one row per point
    html = render_html(report)
    assert html.startswith("<!DOCTYPE html>") and "https://" not in html
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert html.count('<polyline class="line"') == len(FAMILY_CLASSES) + len(CLASSES)
    assert html.count("<tr data-kind=") == len(report["changes"])
    assert re.search(r'<script[^>]*\bsrc=|<link\b|<img\b', html) is None  # self-contained


def test_cli(hrepo, tmp_path):
    runner = CliRunner()
    cwd = os.getcwd()
    os.chdir(hrepo.path)
    try:
        out = tmp_path / "h.json"
        r = runner.invoke(main, ["audit", "--history", "main", "--format", "json", "-o", str(out), "--cache-dir", str(tmp_path / "c")])
        assert r.exit_code == 0, r.output
        data = json.loads(out.read_text())
        assert [p["commit"] for p in data["points"]] == hrepo.commits
        r = runner.invoke(main, ["audit", ".", "--history", "main", "--max-points", "2", "--no-cache"])
        assert r.exit_code == 0, r.output
        assert "## MPS migration history" in r.output and "2 points of 5 revisions" in r.output
        r = runner.invoke(main, ["audit", "--history", "main", "--format", "html", "--every", "2", "--no-cache"])
        assert r.exit_code == 0 and "<svg id=\"history-families\"" in r.output
        assert not (hrepo.path / ".mpslint_cache").exists()
        for args, msg in (
            (["audit", "--history", "no-such-rev", "--no-cache"], "bad revision"),
            (["audit", "--history", "--all", "--no-cache"], "not a revision range"),
            (["audit", "--history", "main", "--compare", str(out)], "--history does not take"),
            (["audit", "--every", "2"], "go with --history"),
            (["audit", "--history", "main..main", "--no-cache"], "has no revisions"),
            (["audit", str(tmp_path), "--history", "main", "--no-cache"], "not a git repository"),
            (["audit", ".", str(tmp_path), "--history", "main", "--no-cache"], "not inside the git repository"),
            (["audit", "--history", "main", "--native-functions", "aten/nope.yaml", "--no-cache"], "no revision of `main` has aten/nope.yaml"),
        ):
            r = runner.invoke(main, args)
            assert r.exit_code == 2 and msg in r.output, (args, r.output)
    finally:
        os.chdir(cwd)
    assert git(hrepo.path, "status", "--porcelain") == ""


def test_one_yaml_per_revision():
    from mpslint.audit.history import _one_yaml

    nf = "aten/src/ATen/native/native_functions.yaml"
    files = [("b.mm", "host", "1", "b.mm"), ("t/x/native_functions.yaml", "yaml", "2", "t/x/native_functions.yaml"), ("n.yaml", "yaml", "3", nf)]
    assert _one_yaml(files, nf) == [("b.mm", "host", "1"), ("n.yaml", "yaml", "3")]
    assert _one_yaml(files[:2], nf) == [("b.mm", "host", "1"), ("t/x/native_functions.yaml", "yaml", "2")]


def test_an_internal_error_is_reported_and_the_other_files_go_on(hrepo, monkeypatch, tmp_path):
    import mpslint.parallel as parallel

    real = parallel.analyse

    def broken(src):
        return ("error", "RuntimeError: boom") if src.path.endswith("BinaryKernel.mm") else real(src)

    monkeypatch.setattr(parallel, "analyse", broken)
    report, stats = run_history([str(hrepo.path)], "main", cwd=hrepo.path, jobs=1)
    assert len(stats.internal_errors) == 1 and "BinaryKernel.mm: internal error" in stats.internal_errors[0]
    assert len(report["points"]) == 5 and all(p["families"] for p in report["points"])
    cwd = os.getcwd()
    os.chdir(hrepo.path)
    try:
        r = CliRunner().invoke(main, ["audit", "--history", "main", "--no-cache", "--format", "json", "-o", str(tmp_path / "h.json")])
    finally:
        os.chdir(cwd)
    assert r.exit_code == 2 and "internal error while reading facts" in r.output
    assert json.loads((tmp_path / "h.json").read_text())["points"]  # the report is still written


def test_a_revision_without_the_yaml_is_a_point_without_counts(tmp_path):
    import shutil

    from ._history_repo import NEW_SCALAR, OLD_SCALAR, YAML_REL
    from .conftest import FIXTURES

    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    shutil.copytree(FIXTURES / "aten", repo / "aten")
    yaml = repo / YAML_REL
    text = yaml.read_text(encoding="utf-8")
    commits = []
    for step in ("import", "yaml removed", "yaml back, copysign migrated"):
        if step == "yaml removed":
            yaml.unlink()
        elif step.startswith("yaml back"):
            yaml.write_text(text.replace(OLD_SCALAR, NEW_SCALAR), encoding="utf-8")
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", step, date=f"2026-03-0{len(commits) + 1}T00:00:00+00:00")
        commits.append(git(repo, "rev-parse", "HEAD"))
    report, _ = run_history([str(repo)], "main", cwd=repo)
    pts = report["points"]
    assert [p["families"] is None for p in pts] == [False, True, False]
    assert pts[1]["error"] == "no native_functions.yaml at this revision"
    # the migration is seen at the third commit; the last state known before it is the first commit's
    assert [(m["family"], m["kind"], m["commit"], m["previous"]) for m in report["changes"]] == [("copysign", "migrated", commits[2], commits[0])]
    md, html = render_md(report), render_html(report)
    assert "no native_functions.yaml at this revision" in md and "no native_functions.yaml at this revision" in html
