"""Context detection (mpslint.context): pytorch vs extension per file, the config override, --statistics."""

from __future__ import annotations

import shutil

import pytest
from click.testing import CliRunner

from mpslint.cli import main
from mpslint.config import ConfigError, load_config
from mpslint.context import context_counts, detect_context, file_context, project_contexts
from mpslint.engine import LintOptions, lint
from mpslint.rule import all_rules

from .conftest import FIXTURES, ROOT


def _contexts(paths, cwd=ROOT, **kw):
    result = lint(LintOptions(paths=[str(p) for p in paths], select=["ALL"], cwd=cwd, **kw))
    return result, {p: file_context(result.project, p) for p in result.project.linted}


def test_pytorch_fixtures_are_pytorch():
    _, ctx = _contexts([FIXTURES / "aten"])
    assert ctx and set(ctx.values()) == {"pytorch"}, ctx


def test_extension_fixtures_are_extension():
    result, ctx = _contexts([FIXTURES / "ext"])
    assert ctx and set(ctx.values()) == {"extension"}, ctx
    why = {p: d.reason for p, d in project_contexts(result.project).items()}
    assert why["fixtures/ext/my_ext/csrc/ctx_ops.mm"] == "includes <torch/extension.h>"
    # the .metal file has no signal of its own: it takes the project's context
    assert why["fixtures/ext/my_ext/csrc/ctx_kernels.metal"].startswith("no signal; the project's files are mostly extension")


@pytest.mark.parametrize(
    "text,expected",
    [
        ("#include <torch/extension.h>\n#include <ATen/native/mps/OperationUtils.h>\n", "extension"),  # torchao's aten op
        ("#include <ATen/native/mps/OperationUtils.h>\n", "pytorch"),  # a copy of a PyTorch op
        ("#include <torch/library.h>\n", "extension"),
        # torchvision's MPS ops: PyTorch's internal helpers, operators of a library of its own
        ("#include <ATen/native/mps/OperationUtils.h>\nTORCH_LIBRARY_IMPL(torchvision, MPS, m) {\n  m.impl(\"torchvision::nms\", TORCH_FN(nms_kernel));\n}\n", "extension"),
        ("#include <ATen/native/mps/OperationUtils.h>\nSTABLE_TORCH_LIBRARY_IMPL(myext, MPS, m) {\n  m.impl(\"op\", TORCH_BOX(&op));\n}\n", "extension"),
        # PyTorch's own registrations of aten kernels stay PyTorch's
        ("#include <ATen/native/mps/OperationUtils.h>\nTORCH_LIBRARY_IMPL(aten, MPS, m) {\n  m.impl(\"_foo\", TORCH_FN(foo));\n}\n", "pytorch"),
        # kernels-community's mlx-rmsnorm: PyTorch's internal helpers, but a public torch header says extension
        ("#include <torch/version.h>\n#include <ATen/native/mps/OperationUtils.h>\n", "extension"),
        ("#include <ATen/ATen.h>\nvoid f() { auto s = at::mps::getCurrentMPSStream(); }\n", "extension"),
        ("#include <ATen/ATen.h>\nvoid f() { id l = [dev newLibraryWithSource:src options:nil error:nil]; }\n", "extension"),
        ("#include <vector>\n", "extension"),  # no signal, no project: the default
    ],
)
def test_host_signals(tmp_path, text, expected):
    p = tmp_path / "op.mm"
    p.write_text(text, encoding="utf-8")
    _, ctx = _contexts([p], cwd=tmp_path)
    assert ctx == {"op.mm": expected}


def test_metal_signals_and_inheritance(tmp_path):
    (tmp_path / "a.metal").write_text("#include <c10/metal/utils.h>\nkernel void k() {}\n", encoding="utf-8")
    (tmp_path / "b.metal").write_text("#include <metal_stdlib>\nkernel void j() {}\n", encoding="utf-8")
    _, ctx = _contexts([tmp_path], cwd=tmp_path)
    assert ctx == {"a.metal": "pytorch", "b.metal": "pytorch"}  # b has no signal and inherits the project's
    (tmp_path / "a.metal").unlink()
    _, ctx = _contexts([tmp_path], cwd=tmp_path)
    assert ctx == {"b.metal": "extension"}  # alone, with no signal anywhere: the default


def test_path_inside_a_checkout(tmp_path):
    """Every file in a PyTorch checkout is pytorch, also outside aten/ (test/, torch/), whatever it includes;
    a tree holding only aten/src/ATen (mpslint's fixtures) is not a checkout."""
    (tmp_path / "aten/src/ATen").mkdir(parents=True)
    t = tmp_path / "test" / "mps"
    t.mkdir(parents=True)
    (t / "k.metal").write_text("#include <metal_stdlib>\n", encoding="utf-8")
    _, ctx = _contexts([t], cwd=tmp_path)
    assert ctx == {"test/mps/k.metal": "extension"}
    (tmp_path / "c10").mkdir()
    _, ctx = _contexts([t], cwd=tmp_path)
    assert ctx == {"test/mps/k.metal": "pytorch"}


def test_detect_context_on_one_file():
    assert detect_context("aten/src/ATen/native/mps/kernels/X.metal", None) == "pytorch"
    assert detect_context("c10/metal/utils.h", None) == "pytorch"
    assert detect_context("csrc/x.metal", None) == "extension"
    assert detect_context("aten/src/ATen/native/mps/kernels/X.metal", None, "extension") == "extension"


def test_config_override(tmp_path):
    shutil.copytree(FIXTURES / "ext", tmp_path / "ext")
    (tmp_path / "pyproject.toml").write_text('[tool.mpslint]\ncontext = "pytorch"\n', encoding="utf-8")
    cfg = load_config(tmp_path / "pyproject.toml")
    assert cfg.context == "pytorch"
    result, ctx = _contexts([tmp_path / "ext"], cwd=tmp_path, config=cfg)
    assert set(ctx.values()) == {"pytorch"}
    # PyTorch's conventions now apply: the ceil-div near-misses of the extension fixture are flagged
    assert any(f.code == "MPS109" for f in result.findings)
    detected, _ = _contexts([tmp_path / "ext"], cwd=tmp_path)
    assert not any(f.code == "MPS109" for f in detected.findings)


def test_config_rejects_unknown_context(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[tool.mpslint]\ncontext = "cuda"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="context must be"):
        load_config(tmp_path / "pyproject.toml")


def test_statistics_say_what_was_detected(tmp_path):
    for name in ("ctx_ops.mm", "ctx_kernels.metal"):
        shutil.copy(FIXTURES / "ext/my_ext/csrc" / name, tmp_path / name)
    r = CliRunner().invoke(main, ["check", "--isolated", "--no-cache", "--select", "ALL", "--statistics", str(tmp_path)], catch_exceptions=False)
    assert "Context (where each linted file lives" in r.output
    assert "extension: 2 files (includes <torch/extension.h>: 1, no signal; the project's files are mostly extension: 1)" in r.output
    assert "pytorch:" not in r.output.split("Context (")[1]
    result = lint(LintOptions(paths=[str(FIXTURES / "aten")], select=["ALL"], cwd=ROOT))
    counts = context_counts(result.project)
    assert set(counts) == {"pytorch"} and sum(counts["pytorch"].values()) == len(result.project.linted)


def test_rules_declare_where_they_apply():
    by_code = {r.code: r for r in all_rules()}
    for code in ("MPS109", "MTL202", "DSP301", "DSP306"):
        assert by_code[code].contexts == ("pytorch",), code
    for code in ("MPS102", "MPS107", "MTL208", "SMK401"):
        assert set(by_code[code].contexts) == {"pytorch", "extension"}, code
    r = CliRunner().invoke(main, ["rules"])
    line = next(ln for ln in r.output.splitlines() if ln.startswith("MPS109"))
    assert " pytorch " in line
    line = next(ln for ln in r.output.splitlines() if ln.startswith("MPS102"))
    assert " everywhere " in line
