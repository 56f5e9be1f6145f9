"""``--diff-base REF --filter added|context|file|none`` on real git repositories."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from mpslint.cli import main
from mpslint.diffs import parse_diff

from ._integration_helpers import chdir, commit_all, copysign_repo, git, init_repo

BAD = "  const uint32_t n = static_cast<uint32_t>(in.numel());\n"


def check(repo, *args):
    with chdir(repo):
        r = CliRunner().invoke(main, ["check", "--isolated", "--format", "json", *args])
    assert r.exit_code in (0, 1), r.output
    return json.loads(r.stdout)


def where(findings):
    return {(f["path"], f["line"], f["code"]) for f in findings}


@pytest.fixture(scope="module")
def copysign(tmp_path_factory):
    return copysign_repo(tmp_path_factory.mktemp("diff") / "repo")


def test_yaml_change_raises_a_finding_in_an_unchanged_mm(copysign):
    everything = where(check(copysign, "--select", "ALL", "aten"))
    yaml_f = ("aten/src/ATen/native/native_functions.yaml", 45, "DSP301")
    mm_f = ("aten/src/ATen/native/mps/operations/BinaryOps.mm", 34, "DSP301")
    assert {yaml_f, mm_f} <= everything
    by_mode = {m: where(check(copysign, "--select", "ALL", "--diff-base", "main", "--filter", m, "aten")) for m in ("added", "context", "file", "none")}
    # the diff changed line 28 of the yaml only: no finding starts on an added or a hunk line
    assert by_mode["added"] == set() and by_mode["context"] == set()
    # file: the changed yaml's finding, and the new finding in the unchanged BinaryOps.mm, and nothing old
    changed_file = {f for f in everything if f[0] == yaml_f[0]}
    assert yaml_f in changed_file and mm_f[0] != yaml_f[0]
    assert by_mode["file"] == changed_file | {mm_f}
    assert len(everything - by_mode["file"]) > 0  # old findings in unchanged files stay out
    assert by_mode["none"] == everything


def test_added_and_context_lines(tmp_path):
    repo = init_repo(tmp_path / "r")
    (repo / "mps").mkdir()
    lines = ["void k(const Tensor& in) {\n"] + [f"  int pad{i} = {i};\n" for i in range(12)] + [BAD, "}\n"]
    (repo / "mps/Op.mm").write_text("".join(lines))
    (repo / "mps/Old.mm").write_text("void o(const Tensor& in) {\n" + BAD + "}\n")
    commit_all(repo, "base")
    git(repo, "checkout", "-q", "-b", "topic")
    # add a flagged line near the top; the old flagged line (now line 16) is outside the hunk
    lines.insert(2, BAD.replace(" n ", " added "))
    (repo / "mps/Op.mm").write_text("".join(lines))
    commit_all(repo, "topic")
    # an uncommitted change counts too (the diff is against the working tree)
    lines.insert(4, BAD.replace(" n ", " dirty "))
    (repo / "mps/Op.mm").write_text("".join(lines))
    args = ["--select", "MPS102", "--diff-base", "main"]
    assert where(check(repo, *args, "--filter", "added", ".")) == {("mps/Op.mm", 3, "MPS102"), ("mps/Op.mm", 5, "MPS102")}
    ctx = where(check(repo, *args, "--filter", "context", "."))
    assert ctx == {("mps/Op.mm", 3, "MPS102"), ("mps/Op.mm", 5, "MPS102")}
    assert where(check(repo, *args, "--filter", "file", ".")) == {("mps/Op.mm", n, "MPS102") for n in (3, 5, 16)}
    assert len(check(repo, *args, "--filter", "none", ".")) == 4
    # a flagged line right after an added one is a context line: context keeps it, added does not
    lines2 = list(lines)
    lines2.insert(15, "  int extra = 0;\n")
    (repo / "mps/Op.mm").write_text("".join(lines2))
    assert ("mps/Op.mm", 17, "MPS102") in where(check(repo, *args, "--filter", "context", "."))
    assert ("mps/Op.mm", 17, "MPS102") not in where(check(repo, *args, "--filter", "added", "."))


def test_bad_ref_is_a_usage_error(tmp_path):
    repo = init_repo(tmp_path / "r")
    (repo / "mps").mkdir()
    (repo / "mps/Op.mm").write_text("static void f() {}\n")
    commit_all(repo, "base")
    with chdir(repo):
        r = CliRunner().invoke(main, ["check", "--isolated", "--diff-base", "no-such-ref", "."])
    assert r.exit_code == 2 and "no-such-ref" in r.stderr
    with chdir(repo):
        r = CliRunner().invoke(main, ["check", "--isolated", "--filter", "file", "."])
    assert r.exit_code == 2 and "--filter needs --diff-base" in r.stderr


def test_parse_diff_renames_and_deletions():
    text = (
        "diff --git a/x/old.mm b/x/new.mm\nsimilarity index 90%\nrename from x/old.mm\nrename to x/new.mm\n"
        "--- a/x/old.mm\n+++ b/x/new.mm\n@@ -1,3 +1,4 @@\n a\n+b\n c\n d\n"
        "diff --git a/gone.mm b/gone.mm\ndeleted file mode 100644\n--- a/gone.mm\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"
    )
    d = parse_diff(text)
    assert d.files["x/new.mm"].added == {2} and d.files["x/new.mm"].context == {1, 2, 3, 4}
    assert d.files["x/new.mm"].hunks == [(1, 4)]
    assert d.files["gone.mm"].is_removed and not d.changed("gone.mm")
