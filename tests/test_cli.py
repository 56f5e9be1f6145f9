"""The command line: exit codes, formats, selection, suppressions, configuration, rule docs."""

from __future__ import annotations

import json
import textwrap

import pytest
from click.testing import CliRunner

from mpslint.cli import main
from mpslint.rule import all_rules

from .conftest import FIXTURES


def run(args, cwd=None):
    runner = CliRunner()
    if cwd is not None:
        with runner.isolated_filesystem(temp_dir=cwd):
            return runner.invoke(main, args, catch_exceptions=False)
    return runner.invoke(main, args, catch_exceptions=False)


BAD_MM = """\
void k(const Tensor& in) {
  const uint32_t n = static_cast<uint32_t>(in.numel());
}
"""


@pytest.fixture
def tree(tmp_path):
    d = tmp_path / "proj" / "mps"
    d.mkdir(parents=True)
    (d / "Op.mm").write_text(BAD_MM)
    return tmp_path / "proj"


def test_exit_codes(tree, tmp_path):
    assert run(["check", "--isolated", str(tree)]).exit_code == 1
    assert run([str(tree), "--isolated"]).exit_code == 1  # bare `mpslint PATH` means check
    assert run(["check", "--isolated", "--exit-zero", str(tree)]).exit_code == 0
    clean = tmp_path / "clean" / "mps"
    clean.mkdir(parents=True)
    (clean / "Ok.mm").write_text("static void f() {}\n")
    assert run(["check", "--isolated", str(clean.parent)]).exit_code == 0
    assert run(["check", "--isolated", str(tmp_path / "nope")]).exit_code == 2
    assert run(["check", "--isolated", "--select", "XYZ9", str(tree)]).exit_code == 2


def test_json_format(tree):
    r = run(["check", "--isolated", "--format", "json", str(tree)])
    data = json.loads(r.output)
    assert len(data) == 1
    f = data[0]
    for key in ("code", "name", "severity", "message", "path", "line", "column", "end_line", "end_column", "fix"):
        assert key in f
    assert (f["code"], f["line"], f["column"]) == ("MPS102", 2, 22)
    assert f["fix"]["applicability"] == "safe"


def test_text_format_and_output_file(tree, tmp_path):
    out = tmp_path / "report.txt"
    r = run(["check", "--isolated", "-o", str(out), str(tree)])
    assert r.exit_code == 1
    text = out.read_text()
    assert "Op.mm:2:22: MPS102" in text
    assert "Found 1 finding" in text


def test_select_ignore(tree):
    assert run(["check", "--isolated", "--ignore", "MPS102", str(tree)]).exit_code == 0
    assert run(["check", "--isolated", "--ignore", "MPS", str(tree)]).exit_code == 0
    assert run(["check", "--isolated", "--select", "DSP", str(tree)]).exit_code == 0
    assert run(["check", "--isolated", "--select", "ALL", str(tree)]).exit_code == 1
    assert run(["check", "--isolated", "--select", "DSP", "--extend-select", "MPS102", str(tree)]).exit_code == 1


@pytest.mark.parametrize(
    "comment,where,flagged",
    [
        ("  // mpslint: ignore[MPS102]", "same", False),
        ("  // mpslint: ignore[MPS1]", "same", False),
        ("  // mpslint: ignore[MPS101]", "same", True),
        ("// mpslint: ignore-next-line[MPS102]", "above", False),
        ("// mpslint: ignore-next-line[MPS102]", "two-above", True),
    ],
)
def test_suppressions(tmp_path, comment, where, flagged):
    lines = BAD_MM.splitlines()
    if where == "same":
        lines[1] += comment
    elif where == "above":
        lines.insert(1, comment)
    else:
        lines.insert(0, comment)
    d = tmp_path / "mps"
    d.mkdir()
    (d / "Op.mm").write_text("\n".join(lines) + "\n")
    assert run(["check", "--isolated", str(tmp_path)]).exit_code == (1 if flagged else 0)


def test_pyproject_config(tree):
    (tree / "pyproject.toml").write_text(
        textwrap.dedent(
            """
            [tool.mpslint]
            ignore = ["MPS102"]
            """
        )
    )
    assert run(["check", str(tree)]).exit_code == 0
    # the command line wins over the file
    assert run(["check", "--select", "MPS102", str(tree)]).exit_code == 1
    (tree / "pyproject.toml").write_text('[tool.mpslint]\nper-file-ignores = { "*/Op.mm" = ["MPS102"] }\n')
    assert run(["check", str(tree)]).exit_code == 0
    (tree / "pyproject.toml").write_text('[tool.mpslint]\nbogus = 1\n')
    r = run(["check", str(tree)])
    assert r.exit_code == 2 and "bogus" in r.output


def test_rules_listing():
    r = run(["rules", "--format", "json"])
    data = json.loads(r.output)
    codes = [d["code"] for d in data]
    assert codes == sorted(codes) and len(codes) == len(all_rules())
    for d in data:
        assert set(d) >= {"code", "name", "severity", "summary", "default_enabled"}
    assert {"MPS101", "MPS102", "MPS103", "MPS104", "DSP301", "MTL201"} <= set(codes)


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rule_docs(rule):
    r = run(["rule", rule.code])
    assert r.exit_code == 0
    doc = r.output
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead", "## How to fix"):
        assert section in doc, f"{rule.code} docs lack {section!r}"
    assert rule.summary and rule.name


def test_graph_command():
    r = run(["graph", str(FIXTURES / "aten"), "--op", "copysign"])
    assert r.exit_code == 0, r.output
    assert "copysign.Scalar_out" in r.output
    assert "copysign_Scalar_out_mps" in r.output and "[MPSGraph]" in r.output
    assert "stub copysign_stub" in r.output
    assert "Metal copysign" in r.output
    r = run(["graph", str(FIXTURES / "aten"), "--op", "nosuchop"])
    assert r.exit_code == 2


def test_bad_files_do_not_stop_the_others(tmp_path):
    d = tmp_path / "mps"
    d.mkdir()
    (d / "Bad.mm").write_bytes(b"static void f() { \xff\xfe }\n")
    (d / "Bin.metal").write_bytes(b"\x00\x01\x02")
    (d / "Op.mm").write_text(BAD_MM)
    r = run(["check", "--isolated", str(tmp_path)])
    assert r.exit_code == 1
    assert "Bad.mm:1: not valid UTF-8" in r.output
    assert "Bin.metal: binary file" in r.output
    assert "MPS102" in r.output
