"""The machine formats: github, junit, rdjson, rdjsonl, jsonl; --statistics with every format."""

from __future__ import annotations

import dataclasses
import json
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

from mpslint.cli import check, main
from mpslint.engine import LintOptions, lint
from mpslint.model import Severity
from mpslint.reporters import FORMATS, get_reporter, github, junit

from ._integration_helpers import chdir

BAD_MM = """\
void k(const Tensor& in) {
  const uint32_t n = static_cast<uint32_t>(in.numel());
}
"""


@pytest.fixture
def result(tmp_path):
    (tmp_path / "mps").mkdir()
    (tmp_path / "mps" / "Op.mm").write_text(BAD_MM)
    with chdir(tmp_path):
        return lint(LintOptions(paths=["."], select=["MPS102"]))


def with_findings(result, findings):
    return dataclasses.replace(result, findings=findings)


def test_every_format_is_a_cli_choice():
    fmt = next(p for p in check.params if p.name == "fmt")
    assert set(fmt.type.choices) == set(FORMATS)
    assert {"text", "json", "sarif", "lintrunner", "github", "rdjson", "rdjsonl", "jsonl", "junit"} <= set(FORMATS)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_format_renders_a_clean_and_a_dirty_result(result, fmt):
    render = get_reporter(fmt)
    assert isinstance(render(result), str)
    assert isinstance(render(with_findings(result, [])), str)


def test_github_escaping():
    assert github.escape_data("100% done\r\nnext") == "100%25 done%0D%0Anext"
    assert github.escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"
    line = github.command("error", "bad: 50%,\nreally", file="dir,x/a:b.mm", line=3, title="T, t: x")
    assert line == "::error file=dir%2Cx/a%3Ab.mm,line=3,title=T%2C t%3A x::bad: 50%25,%0Areally"


def test_github_most_severe_first_and_step_summary(result, tmp_path, monkeypatch):
    (f,) = result.findings
    many = [dataclasses.replace(f, severity=Severity.INFO, message=f"info {i}") for i in range(12)]
    many += [dataclasses.replace(f, severity=Severity.WARNING, message="warn | pipe\nnewline")]
    many += [f]
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    out = github.render(with_findings(result, many), cwd=tmp_path).splitlines()
    assert out[0].startswith("::error file=mps/Op.mm,line=2,endLine=2,col=22,")
    assert out[1].startswith("::warning ") and out[1].endswith("::warn | pipe%0Anewline")
    assert all(x.startswith("::notice ") for x in out[2:]) and len(out) == 14
    text = summary.read_text()
    assert text.startswith("earlier step\n")  # appended, not overwritten
    assert text.count("| info |") == 12 and "warn \\| pipe newline" in text  # every finding, table-safe
    assert "14 findings: 1 error, 1 warning, 12 info" in text


def test_github_without_summary_env_writes_nothing(result, tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    assert github.render(result, cwd=tmp_path).count("::error ") == 1


def test_junit_escapes_and_parses(result):
    (f,) = result.findings
    nasty = dataclasses.replace(f, message='<tag> & "quotes" \'apos\' \x1b[31m \x00 end')
    xml = junit.render(with_findings(result, [nasty]))
    root = ET.fromstring(xml.encode())
    assert root.tag == "testsuites" and root.get("failures") == "1"
    (case,) = root.iter("testcase")
    fail = case.find("failure")
    assert fail.get("type") == "MPS102"
    assert fail.get("message").startswith('<tag> & "quotes" \'apos\' \ufffd[31m \ufffd end')
    clean = junit.render(with_findings(result, []))
    root = ET.fromstring(clean.encode())
    assert root.get("failures") == "0" and root.get("tests") == "1"  # the linted file passes


def test_rdjson_and_rdjsonl(result):
    doc = json.loads(get_reporter("rdjson")(result))
    assert doc["source"]["name"] == "mpslint"
    (d,) = doc["diagnostics"]
    assert d["code"]["value"] == "MPS102" and d["severity"] == "ERROR"
    assert d["location"]["path"] == "mps/Op.mm"
    assert d["location"]["range"]["start"] == {"line": 2, "column": 22}
    (s,) = d["suggestions"]
    assert "checked_convert" in s["text"]
    lines = get_reporter("rdjsonl")(result).splitlines()
    assert [json.loads(x) for x in lines] == doc["diagnostics"]


def test_rdjson_columns_are_utf8_bytes(tmp_path):
    (tmp_path / "mps").mkdir()
    (tmp_path / "mps" / "Op.mm").write_text(BAD_MM.replace("  const", "  /* é */ const"))
    with chdir(tmp_path):
        res = lint(LintOptions(paths=["."], select=["MPS102"]))
    (d,) = json.loads(get_reporter("rdjson")(res))["diagnostics"]
    assert d["location"]["range"]["start"]["column"] == res.findings[0].span.column + 1


def test_jsonl_matches_json(result):
    assert [json.loads(x) for x in get_reporter("jsonl")(result).splitlines()] == json.loads(get_reporter("json")(result))


@pytest.mark.parametrize("fmt", ["json", "jsonl", "sarif", "rdjson", "junit", "github"])
def test_statistics_go_to_stderr_for_machine_formats(tmp_path, fmt):
    (tmp_path / "mps").mkdir()
    (tmp_path / "mps" / "Op.mm").write_text(BAD_MM)
    with chdir(tmp_path):
        r = CliRunner().invoke(main, ["check", "--isolated", "--format", fmt, "--statistics", "."])
    assert r.exit_code == 1
    assert "MPS102\tunchecked-narrowing" in r.stderr
    assert "unchecked-narrowing\n" not in r.stdout.replace("\r", "")
    if fmt in ("json", "sarif", "rdjson"):
        json.loads(r.stdout)  # stdout stays parseable


def test_statistics_text_stays_on_stdout(tmp_path):
    (tmp_path / "mps").mkdir()
    (tmp_path / "mps" / "Op.mm").write_text(BAD_MM)
    with chdir(tmp_path):
        r = CliRunner().invoke(main, ["check", "--isolated", "--statistics", "."])
    assert "MPS102\tunchecked-narrowing" in r.stdout
