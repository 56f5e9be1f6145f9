"""Fix verification (mpslint.fixcheck): a fix that introduces an undeclared name, or makes a .metal file stop
compiling with the smoke host toolchain, is refused; the names table and the include/qualification fixes add."""

from __future__ import annotations

import shutil

import pytest

from mpslint import fixcheck, names
from mpslint.config import Config
from mpslint.engine import LintOptions, lint
from mpslint.fixer import fix

from .conftest import FIXTURES

import mpslint.rules.mps107_dispatch_sync_without_rethrow as mps107



# the extension requires torch >= 2.10, where `at::mps::dispatch_sync_with_rethrow` exists: MPS107's fix is safe
TORCH_2_10 = Config(min_torch="2.10")

def _place(tmp_path, fixture: str, name: str):
    d = tmp_path / "mps"
    d.mkdir(parents=True, exist_ok=True)
    target = d / name
    shutil.copy(FIXTURES / fixture, target)
    return target


def test_extension_fix_qualifies_and_includes(tmp_path):
    _place(tmp_path, "fixes/unsafe_ext_rethrow.before.mm", "op.mm")
    out = fix(LintOptions(paths=[str(tmp_path)], select=["MPS107"], cwd=tmp_path, config=TORCH_2_10))
    assert [f.code for f in out.applied] == ["MPS107"] and not out.rejected
    (text,) = out.texts.values()
    assert "at::mps::dispatch_sync_with_rethrow(queue" in text and "#include <ATen/mps/MPSStream.h>" in text


def test_a_missing_include_is_added_for_any_rule(tmp_path, monkeypatch):
    """A fix that forgets the header its name needs gets it from the generic completion (RuleContext.finding)."""
    _place(tmp_path, "fixes/unsafe_ext_rethrow.before.mm", "op.mm")
    monkeypatch.setattr(mps107, "include_edit", lambda ctx, path, includes, header, *a: ctx.edit(path, 0, 0, ""))
    out = fix(LintOptions(paths=[str(tmp_path)], select=["MPS107"], cwd=tmp_path, config=TORCH_2_10))
    assert [f.code for f in out.applied] == ["MPS107"] and not out.rejected
    (text,) = out.texts.values()
    assert "#include <ATen/mps/MPSStream.h>" in text and "at::mps::dispatch_sync_with_rethrow(queue" in text


def _unqualified(monkeypatch):
    """MPS107 made to write the plain name whatever the file's namespaces (and to add no include)."""
    monkeypatch.setattr(mps107.names, "spelling", lambda qualified, scope: qualified.rpartition("::")[2])
    monkeypatch.setattr(mps107, "include_edit", lambda ctx, path, includes, header, *a: ctx.edit(path, 0, 0, ""))


def test_fix_writing_an_unreachable_name_is_not_offered(tmp_path, monkeypatch):
    """Plain `dispatch_sync_with_rethrow` in a file with no `using namespace at::mps`: no include makes it
    visible, so the finding stays and its fix is not offered."""
    _place(tmp_path, "fixes/unsafe_ext_rethrow.before.mm", "op.mm")
    _unqualified(monkeypatch)
    result = lint(LintOptions(paths=[str(tmp_path)], select=["MPS107"], cwd=tmp_path, config=TORCH_2_10))
    (finding,) = result.findings
    assert finding.code == "MPS107" and finding.fix is None


def test_fix_introducing_an_undeclared_name_is_refused(tmp_path, monkeypatch):
    """Offered anyway (the completion bypassed), the fixer refuses it itself: nothing is written."""
    _place(tmp_path, "fixes/unsafe_ext_rethrow.before.mm", "op.mm")
    _unqualified(monkeypatch)
    monkeypatch.setattr(fixcheck, "complete", lambda ctx, fix, scopes: fix)
    out = fix(LintOptions(paths=[str(tmp_path)], select=["MPS107"], cwd=tmp_path, config=TORCH_2_10))
    assert not out.applied and not out.texts
    ((finding, why),) = out.rejected
    assert finding.code == "MPS107"
    assert why.startswith("the fix writes `at::mps::dispatch_sync_with_rethrow`, which the file cannot reach")


KERNEL = """\
#include <metal_stdlib>
using namespace metal;

template <typename T>
kernel void pick(device float* out [[buffer(0)]], constant T* in [[buffer(1)]], uint i [[thread_position_in_grid]]) {
  if constexpr (sizeof(T) == 8) {
    out[i] = in[i].x + in[i].y;
  } else {
    out[i] = float(in[i]);
  }
}

template [[host_name("pick_float")]] kernel void pick<float>(device float*, constant float*, uint);
template [[host_name("pick_float2")]] kernel void pick<float2>(device float*, constant float2*, uint);
"""


def _kernel(tmp_path, text):
    d = tmp_path / "aten/src/ATen/native/mps/kernels"  # MTL202 is PyTorch's convention: a PyTorch path
    d.mkdir(parents=True)
    p = d / "Pick.metal"
    p.write_text(text, encoding="utf-8")
    return p


@pytest.mark.skipif(not fixcheck.toolchain_available(), reason="the smoke host toolchain (ziglang) is not installed")
def test_metal_fix_that_would_not_compile_is_refused(tmp_path):
    """MTL202's rewrite makes the branch a plain `if` on Metal 3: `in[i].x` is then compiled for `float` too."""
    p = _kernel(tmp_path, KERNEL)
    out = fix(LintOptions(paths=[str(p)], select=["MTL202"], cwd=tmp_path), unsafe=True)
    assert not out.applied and not out.texts
    ((finding, why),) = out.rejected
    assert finding.code == "MTL202"
    assert why.startswith("the fixed file would not compile: ") and "float" in why
    assert p.read_text(encoding="utf-8") == KERNEL


@pytest.mark.skipif(not fixcheck.toolchain_available(), reason="the smoke host toolchain (ziglang) is not installed")
def test_metal_fix_that_compiles_is_kept(tmp_path):
    ok = KERNEL.replace("in[i].x + in[i].y", "float(in[i])")  # both arms compile for every T
    p = _kernel(tmp_path, ok)
    out = fix(LintOptions(paths=[str(p)], select=["MTL202"], cwd=tmp_path), unsafe=True)
    assert [f.code for f in out.applied] == ["MTL202"] and not out.rejected


def test_without_the_toolchain_the_compile_check_is_skipped(tmp_path, monkeypatch):
    monkeypatch.setattr(fixcheck, "toolchain_available", lambda: False)
    p = _kernel(tmp_path, KERNEL)
    assert fixcheck.compile_errors(KERNEL, str(p)) is None
    out = fix(LintOptions(paths=[str(p)], select=["MTL202"], cwd=tmp_path), unsafe=True)
    assert [f.code for f in out.applied] == ["MTL202"]


@pytest.mark.parametrize(
    "text,qualified,unqualified",
    [
        ("#include <torch/extension.h>\n", False, False),
        ("#include <ATen/mps/MPSStream.h>\n", True, False),
        ("#include <ATen/mps/MPSStream.h>\nusing namespace at::mps;\n", True, True),
        ("#include <ATen/mps/MPSStream.h>\nnamespace at::mps {\n}\n", True, True),
        ("#include <ATen/native/mps/OperationUtils.h>\n", True, True),  # it says `using namespace at::mps;`
        ("// #include <ATen/mps/MPSStream.h>\n", False, False),
    ],
)
def test_scope_of_a_file(text, qualified, unqualified):
    scope = names.scope_of(text)
    q = "at::mps::dispatch_sync_with_rethrow"
    assert scope.declares(q) is qualified
    assert scope.reaches_unqualified(q) is unqualified


def test_undeclared_names():
    host = "#include <torch/extension.h>\nint f(int64_t n) { return at::ceil_div(n, int64_t(8)); }\n"
    assert fixcheck.undeclared_names(host.replace("at::ceil_div(n, int64_t(8))", "(n + 7) / 8"), [], host, "host") == []
    assert names.undeclared([("(n + 7) / 8", "at::ceil_div(n, int64_t(8))")], host) == ["at::ceil_div"]
    assert names.undeclared([("(n + 7) / 8", "at::ceil_div(n, int64_t(8))")], "#include <ATen/ceil_div.h>\n" + host) == []
    # a file with no include at all relies on its includer: not checked
    assert names.undeclared([("(n + 7) / 8", "at::ceil_div(n, int64_t(8))")], "int f(int64_t n);\n") == []
    # c10::checked_convert comes with <torch/extension.h> (through c10/util/TypeCast.h)
    assert names.undeclared([("static_cast<uint32_t>(n)", 'c10::checked_convert<uint32_t>(n, "uint32_t")')], host) == []
    metal = "#include <metal_stdlib>\nuint g(uint k) { return c10::metal::ceil_div(k, 4u); }\n"
    assert names.undeclared([("(k + 3) / 4", "c10::metal::ceil_div(k, 4u)")], metal, metal=True) == ["c10::metal::ceil_div"]
    assert names.undeclared([("(k + 3) / 4", "c10::metal::ceil_div(k, 4u)")], "#include <c10/metal/utils.h>\n" + metal, metal=True) == []
