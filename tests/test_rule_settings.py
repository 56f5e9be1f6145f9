"""``[tool.mpslint.rules.<CODE>]``: rule settings are validated with the file's path, and change what a rule reports."""

from __future__ import annotations

import pytest

from mpslint.config import Config, ConfigError, load_config
from mpslint.engine import LintOptions, lint
from mpslint.rule import rule_by_code

from .conftest import FIXTURES, ROOT


def _write(tmp_path, body: str):
    p = tmp_path / "pyproject.toml"
    p.write_text("[tool.mpslint]\nselect = ['MPS']\n" + body, encoding="utf-8")
    return p


def test_setting_is_read(tmp_path):
    cfg = load_config(_write(tmp_path, "[tool.mpslint.rules.MPS102]\nnarrowed-dimensions = true\n"))
    assert cfg.rule_settings == {"MPS102": {"narrowed-dimensions": True}}


@pytest.mark.parametrize(
    "body,needle",
    [
        ("[tool.mpslint.rules.MPS999]\nx = 1\n", "MPS999]: unknown rule code"),
        ("[tool.mpslint.rules.MPS102]\nnarrow = true\n", "unknown setting 'narrow' (settings: narrowed-dimensions)"),
        ("[tool.mpslint.rules.MPS102]\nnarrowed-dimensions = 'yes'\n", "narrowed-dimensions must be one of 'extension', true, false, not 'yes'"),
        ("[tool.mpslint.rules.MPS102]\nnarrowed-dimensions = 1\n", "narrowed-dimensions must be one of 'extension', true, false, not 1"),
        ("[tool.mpslint.rules.MPS101]\nanything = true\n", "(settings: none)"),
        ("[tool.mpslint]\nrules = 3\n", "rules must be a table"),
    ],
)
def test_bad_settings_name_the_file(tmp_path, body, needle):
    path = tmp_path / "pyproject.toml"
    path.write_text(body if body.startswith("[tool.mpslint]\n") else "[tool.mpslint]\n" + body, encoding="utf-8")
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert str(path) in str(e.value) and needle in str(e.value)


def test_cli_exits_2_on_a_bad_setting(tmp_path):
    from click.testing import CliRunner

    from mpslint.cli import main

    _write(tmp_path, "[tool.mpslint.rules.MPS102]\nnarrowed-dimensions = 1\n")
    (tmp_path / "a.mm").write_text("void f() {}\n", encoding="utf-8")
    res = CliRunner().invoke(main, ["check", str(tmp_path / "a.mm")])
    assert res.exit_code == 2 and "narrowed-dimensions must be one of" in res.output


def test_settings_are_in_the_rule_metadata():
    assert rule_by_code("MPS102").metadata()["settings"] == {"narrowed-dimensions": False}


def _mps102(config: Config, tree: str = "aten"):
    res = lint(LintOptions(paths=[str(FIXTURES / tree)], select=["MPS102"], cwd=ROOT, config=config))
    return {(f.path, f.span.line, f.message) for f in res.findings}


def test_mps102_in_pytorch_reports_linear_extents_by_default_and_dimensions_when_asked():
    default = _mps102(Config())
    wide = _mps102(Config(rule_settings={"MPS102": {"narrowed-dimensions": True}}))
    linear = {f for f in wide if "It is a linear extent" in f[2]}
    # one dimension boxed into an NSNumber for an MPSGraph shape is reported by default (no 32-bit index check
    # bounds a shape); one dimension narrowed by a cast only when asked
    boxed = {f for f in wide - linear if "is boxed with" in f[2]}
    dims = wide - linear - boxed
    assert linear and dims and boxed, "the fixtures must hold all three kinds"
    assert default == linear | boxed
    assert all("one dimension's size or stride" in m for _, _, m in dims | boxed)


def test_mps102_a_dimension_scaled_by_an_argument_is_a_dimension():
    """`dilation_h * (weight_h - 1) + 1` (torchvision's deform_conv2d) is one dimension: reported only with
    narrowed-dimensions, as a dimension; products of sizes and byte counts stay linear extents."""
    rel = "fixtures/aten/src/ATen/native/mps/operations/ScaledDimensions.mm"
    default = sorted(line for path, line, _ in _mps102(Config()) if path == rel)
    wide = {line: m for path, line, m in _mps102(Config(rule_settings={"MPS102": {"narrowed-dimensions": True}})) if path == rel}
    assert default == [12, 13, 20]
    assert sorted(wide) == [9, 10, 11, 12, 13, 20]
    assert all("one dimension's size or stride" in wide[line] for line in (9, 10, 11))


def test_mps102_in_extension_code_reports_dimensions_only_when_asked(tmp_path):
    ext = tmp_path / "myext" / "csrc"
    ext.mkdir(parents=True)
    (tmp_path / "myext" / "setup.py").write_text("from torch.utils.cpp_extension import CppExtension\n")
    (ext / "op.mm").write_text(
        "#include <torch/extension.h>\n"
        "torch::Tensor rows(const torch::Tensor& x) {\n"
        "  const uint32_t m = x.size(0);\n"
        "  const uint32_t n = static_cast<uint32_t>(x.numel());\n"
        "  return x.narrow(0, 0, m);\n"
        "}\n"
    )

    def lines(config):
        res = lint(LintOptions(paths=[str(ext / "op.mm")], select=["MPS102"], cwd=tmp_path, config=config))
        from mpslint.context import file_context

        assert all(file_context(res.project, f.path) == "extension" for f in res.findings)
        return sorted(f.span.line for f in res.findings)

    assert lines(Config()) == [4]  # the default: linear extents only
    assert lines(Config(rule_settings={"MPS102": {"narrowed-dimensions": "extension"}})) == [3, 4]
    assert lines(Config(rule_settings={"MPS102": {"narrowed-dimensions": True}})) == [3, 4]
    assert lines(Config(rule_settings={"MPS102": {"narrowed-dimensions": False}})) == [4]
