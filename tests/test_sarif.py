"""``--format sarif``: valid against the official SARIF 2.1.0 schema and what GitHub code scanning requires."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
from click.testing import CliRunner

from mpslint.cli import main
from mpslint.engine import LintOptions, lint
from mpslint.reporters import sarif
from mpslint.reporters._common import repo_relative
from mpslint.rule import all_rules

from ._integration_helpers import chdir, commit_all, init_repo
from .conftest import FIXTURES

SCHEMA = json.loads((Path(__file__).parent / "data/sarif-schema-2.1.0.json").read_text())

BAD_MM = """\
void k(const Tensor& in) {
  const uint32_t n = static_cast<uint32_t>(in.numel());
}
"""


def validate(doc):
    jsonschema.Draft4Validator(SCHEMA).validate(doc)


def check_uri(uri: str):
    assert uri and "://" not in uri and not uri.startswith("/") and ".." not in uri.split("/"), uri
    assert ":" not in uri.split("/")[0], uri  # not a drive letter or scheme either


@pytest.fixture(scope="module")
def fixture_sarif(tmp_path_factory):
    repo = init_repo(tmp_path_factory.mktemp("sarifrepo") / "repo")
    import shutil

    shutil.copytree(FIXTURES / "aten", repo / "aten")
    commit_all(repo, "init")
    sub = repo / "aten" / "src"
    with chdir(sub):  # run from a subdirectory: URIs must still be relative to the repository root
        result = lint(LintOptions(paths=["."], select=["ALL"]))
        doc = json.loads(sarif.render(result))
    return result, doc


def test_validates_against_official_schema(fixture_sarif):
    result, doc = fixture_sarif
    assert result.findings, "the fixture tree has findings on purpose"
    validate(doc)
    assert doc["version"] == "2.1.0"


def test_schema_rejects_a_broken_log(fixture_sarif):
    # the validation above can fail: drop a required property and it does
    _, doc = fixture_sarif
    broken = json.loads(json.dumps(doc))
    del broken["runs"][0]["tool"]["driver"]["name"]
    with pytest.raises(jsonschema.ValidationError):
        validate(broken)


def test_github_code_scanning_requirements(fixture_sarif):
    result, doc = fixture_sarif
    (run,) = doc["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "mpslint" and driver["version"] and driver["semanticVersion"]
    assert run["automationDetails"]["id"].startswith("mpslint/")
    rules = driver["rules"]
    ids = [r["id"] for r in rules]
    for r in rules:
        assert r["shortDescription"]["text"]
        assert r["fullDescription"]["text"]
        assert r["help"]["text"] and r["help"]["markdown"]
        assert r["defaultConfiguration"]["level"] in ("error", "warning", "note")
    assert len(run["results"]) == len(result.findings)
    for res, f in zip(run["results"], result.findings):
        assert res["ruleId"] == f.code and ids[res["ruleIndex"]] == f.code
        assert res["level"] in ("error", "warning", "note") and res["message"]["text"] == f.message
        assert len(res["locations"]) == 1
        phys = res["locations"][0]["physicalLocation"]
        uri = phys["artifactLocation"]["uri"]
        check_uri(uri)
        assert uri.startswith("aten/src/ATen/native/"), uri  # relative to the git root, not the cwd
        region = phys["region"]
        for k in ("startLine", "startColumn", "endLine", "endColumn"):
            assert isinstance(region[k], int) and region[k] >= 1
        assert (region["startLine"], region["startColumn"]) == (f.span.line, f.span.column)  # ASCII: UTF-16 == chars
        assert "suppressions" not in res
        assert res["partialFingerprints"]["primaryLocationLineHash"]
    fps = [r["partialFingerprints"]["primaryLocationLineHash"] for r in run["results"]]
    assert len(set(fps)) == len(fps)


def test_rule_help_comes_from_the_rule_docs(fixture_sarif):
    _, doc = fixture_sarif
    by_id = {r["id"]: r for r in doc["runs"][0]["tool"]["driver"]["rules"]}
    for rule in all_rules():
        if rule.code in by_id:
            assert rule.doc() in by_id[rule.code]["help"]["markdown"]
            assert by_id[rule.code]["shortDescription"]["text"] == rule.summary


def test_safe_fix_becomes_a_sarif_fix(fixture_sarif):
    result, doc = fixture_sarif
    fixed = [(f, r) for f, r in zip(result.findings, doc["runs"][0]["results"]) if f.fix is not None]
    assert fixed, "the fixture tree has fixable findings"
    for f, r in fixed:
        (fx,) = r["fixes"]
        change = fx["artifactChanges"][0]
        check_uri(change["artifactLocation"]["uri"])
        rep = change["replacements"][0]
        e = f.fix.edits[0]
        assert rep["insertedContent"]["text"] == e.content
        assert (rep["deletedRegion"]["startLine"], rep["deletedRegion"]["startColumn"]) == (e.line, e.column)


def _lint_text(tmp_path, text, name="Op.mm"):
    d = tmp_path / "mps"
    d.mkdir(parents=True, exist_ok=True)
    (d / name).write_text(text)
    with chdir(tmp_path):
        result = lint(LintOptions(paths=["."], select=["MPS102"]))
        return result, json.loads(sarif.render(result, cwd=tmp_path))


def test_fingerprint_survives_moving_code(tmp_path):
    _, a = _lint_text(tmp_path / "a", BAD_MM)
    _, b = _lint_text(tmp_path / "b", "// a new header comment\n\n" + BAD_MM.replace("  const", "      const"))
    fa = [r["partialFingerprints"]["primaryLocationLineHash"] for r in a["runs"][0]["results"]]
    fb = [r["partialFingerprints"]["primaryLocationLineHash"] for r in b["runs"][0]["results"]]
    assert fa and fa == fb
    assert a["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 2
    assert b["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 4
    # the same line twice: two findings, two fingerprints; another rule text: another fingerprint
    twice = BAD_MM.replace("}\n", "  const uint32_t n = static_cast<uint32_t>(in.numel());\n}\n")
    _, c = _lint_text(tmp_path / "c", twice)
    fc = [r["partialFingerprints"]["primaryLocationLineHash"] for r in c["runs"][0]["results"]]
    assert len(fc) == 2 and len(set(fc)) == 2 and fc[0] == fa[0]


def test_columns_are_utf16_code_units(tmp_path):
    text = BAD_MM.replace("  const uint32_t", "  /* \U0001F600 */ const uint32_t")
    result, doc = _lint_text(tmp_path, text)
    (f,) = result.findings
    region = doc["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["region"]
    assert doc["runs"][0]["columnKind"] == "utf16CodeUnits"
    assert region["startColumn"] == f.span.column + 1  # the emoji is one character, two UTF-16 units
    validate(doc)


def test_uris_never_absolute_or_escaping(tmp_path):
    root = init_repo(tmp_path / "repo")
    (root / "sub").mkdir()
    outside = tmp_path / "elsewhere" / "Op.mm"
    outside.parent.mkdir()
    outside.write_text(BAD_MM)
    assert repo_relative("sub/x.mm", root / "sub", root) == "sub/sub/x.mm"
    assert repo_relative(str(root / "sub" / "x.mm"), root, root) == "sub/x.mm"
    assert repo_relative(str(outside), root, root) == "Op.mm"
    assert repo_relative("../elsewhere/Op.mm", root, root) == "Op.mm"
    other = init_repo(tmp_path / "other")
    (other / "mps").mkdir()
    assert repo_relative(str(other / "mps" / "A.mm"), root, root) == "mps/A.mm"
    # outside any git repository, a PyTorch-shaped checkout is the base
    tree = tmp_path / "tree"
    (tree / "aten/src/ATen/native/mps").mkdir(parents=True)
    (tree / "aten/src/ATen/native/native_functions.yaml").write_text("")
    assert repo_relative(str(tree / "aten/src/ATen/native/mps/B.mm"), root, root) == "aten/src/ATen/native/mps/B.mm"
    # a file with spaces and a '#' is percent-encoded
    weird = root / "mps dir"
    weird.mkdir()
    (weird / "a#b.mm").write_text(BAD_MM)
    with chdir(root):
        result = lint(LintOptions(paths=[str(weird / "a#b.mm"), str(outside)], select=["MPS102"]))
        doc = json.loads(sarif.render(result, cwd=root))
    uris = sorted(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in doc["runs"][0]["results"])
    assert uris == ["Op.mm", "mps%20dir/a%23b.mm"]
    for u in uris:
        check_uri(u)
    validate(doc)


def test_cli_sarif_output_file_and_exit_code(tmp_path):
    (tmp_path / "mps").mkdir()
    (tmp_path / "mps" / "Op.mm").write_text(BAD_MM)
    out = tmp_path / "out.sarif"
    with chdir(tmp_path):
        r = CliRunner().invoke(main, ["check", "--isolated", "--format", "sarif", "-o", str(out), "--statistics", "."])
    assert r.exit_code == 1
    doc = json.loads(out.read_text())
    validate(doc)
    assert doc["runs"][0]["results"][0]["ruleId"] == "MPS102"
    assert "MPS102" in r.stderr  # --statistics goes to stderr for machine formats


def test_internal_and_file_errors_are_notifications(tmp_path):
    (tmp_path / "mps").mkdir()
    (tmp_path / "mps" / "Bad.mm").write_bytes(b"int x = 1;\n\xff\xfe\n")
    with chdir(tmp_path):
        result = lint(LintOptions(paths=["."]))
    result.internal_errors.append("rule X crashed: boom\ntraceback")
    doc = json.loads(sarif.render(result, cwd=tmp_path))
    validate(doc)
    inv = doc["runs"][0]["invocations"][0]
    assert inv["executionSuccessful"] is False
    notes = inv["toolExecutionNotifications"]
    assert any(n["level"] == "warning" and "UTF-8" in n["message"]["text"] for n in notes)
    assert any(n["level"] == "error" and n["message"]["text"] == "rule X crashed: boom" for n in notes)
