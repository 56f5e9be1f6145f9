"""The unsafe fixes of the dispatch rules (DSP301, DSP302, DSP306): apply each one to a copy of the fixture
tree, edits from the end backwards, and check the fixed text re-lints without that finding."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from mpslint.engine import LintOptions, lint
from mpslint.model import Finding

from .conftest import FIXTURES

YAML = "src/ATen/native/native_functions.yaml"


@pytest.fixture()
def tree(tmp_path: Path) -> Path:
    dst = tmp_path / "aten"
    shutil.copytree(FIXTURES / "aten", dst)
    return dst


def _lint(root: Path, codes: list[str]):
    return lint(LintOptions(paths=[str(root)], select=codes, cwd=root.parent))


def _apply(root: Path, finding: Finding) -> dict[str, str]:
    """Apply one finding's fix (edits sorted from the end backwards); returns the fixed texts by path."""
    by_path: dict[str, list] = {}
    for e in finding.fix.edits:
        by_path.setdefault(e.path, []).append(e)
    out = {}
    for path, edits in by_path.items():
        p = root.parent / path
        text = p.read_text(encoding="utf-8")
        last = len(text) + 1
        for e in sorted(edits, key=lambda e: (e.start, e.end), reverse=True):
            assert e.end <= last, f"overlapping edits in one fix: {finding.fix}"
            text = text[: e.start] + e.content + text[e.end :]
            last = e.start
        p.write_text(text, encoding="utf-8")
        out[path] = text
    return out


def _key(f: Finding):
    return (f.code, f.path, f.message)


def _fixable(result, code):
    return [f for f in result.findings if f.code == code and f.fix is not None]


def test_dsp301_fix_joins_the_shared_line_and_drops_the_mps_line(tree):
    before = _lint(tree, ["DSP301"])
    fixes = _fixable(before, "DSP301")
    assert len(fixes) == 1 and fixes[0].fix.applicability == "unsafe"
    (yaml_path,) = [p for p in _apply(tree, fixes[0])]
    text = (tree.parent / yaml_path).read_text()
    data = yaml.safe_load(text)  # still loads
    entry = next(e for e in data if e["func"].startswith("copysign.Scalar_out("))
    assert entry["dispatch"] == {"CPU, CUDA, MPS": "copysign_Scalar_out"}
    assert "copysign_Scalar_out_mps" not in text
    after = _lint(tree, ["DSP301", "DSP302"])
    assert _key(fixes[0]) not in {_key(f) for f in after.findings}
    assert not [f for f in after.findings if f.code == "DSP301"]  # the .mm leftover report goes with it
    # ... and the implementation left behind is now dead code, which DSP302 reports
    assert any(f.code == "DSP302" and "copysign_Scalar_out_mps" in f.message for f in after.findings)


def test_dsp301_offers_no_fix_without_an_mps_stub_registration(tree):
    (tree / "src/ATen/native/mps/operations/BinaryKernel.mm").unlink()  # takes copysign_stub's registration away
    result = _lint(tree, ["DSP301"])
    yaml_findings = [f for f in result.findings if f.path.endswith("native_functions.yaml")]
    assert yaml_findings and all(f.fix is None for f in yaml_findings)


def test_dsp302_fixes_delete_the_dead_code_and_its_include(tree):
    before = _lint(tree, ["DSP302"])
    fixes = _fixable(before, "DSP302")
    assert len(fixes) == len([f for f in before.findings if f.code == "DSP302"]) >= 3
    for f in fixes:
        assert f.fix.applicability == "unsafe"
    with_include = [f for f in fixes if any(e.content == "" and "ATen/ops/logaddexp_native.h" in (tree.parent / e.path).read_text()[e.start : e.end] for e in f.fix.edits)]
    assert len(with_include) == 1
    for f in sorted(fixes, key=lambda f: f.span.start, reverse=True):  # one at a time, each on a fresh lint
        current = {_key(x): x for x in _lint(tree, ["DSP302"]).findings}
        g = current.get(_key(f))
        assert g is not None, f.message
        texts = _apply(tree, g)
        after = {_key(x) for x in _lint(tree, ["DSP302"]).findings}
        assert _key(f) not in after
        for text in texts.values():
            assert "\n\n\n" not in text  # no doubled blank lines left behind
    legacy = (tree / "src/ATen/native/mps/operations/LegacySpecialOps.mm").read_text()
    assert "logaddexp_out_mps" not in legacy and "logaddexp_mps_" not in legacy
    assert "ATen/ops/logaddexp_native.h" not in legacy and "ATen/ops/logaddexp2_native.h" not in legacy
    assert "TORCH_IMPL_FUNC(expm1_out_mps)" in legacy and "ATen/ops/expm1_native.h" in legacy
    assert "logaddexp_scaled_mps" in (tree / "src/ATen/native/mps/operations/SpecialKernel.mm").read_text()
    assert not [x for x in _lint(tree, ["ALL"]).findings if x.code == "DSP302"]


def test_dsp306_fix_removes_the_entry_line(tree):
    before = _lint(tree, ["DSP306"])
    fixes = _fixable(before, "DSP306")
    assert len(fixes) == 1
    path = tree.parent / fixes[0].path
    old = path.read_text()
    _apply(tree, fixes[0])
    new = path.read_text()
    assert len(new.splitlines()) == len(old.splitlines()) - 1
    assert '"logaddexp":' not in new and '"logaddexp2": None' in new
    compile(new, str(path), "exec")  # still Python
    assert _key(fixes[0]) not in {_key(f) for f in _lint(tree, ["DSP306"]).findings}


def test_dsp306_entry_sharing_a_line_keeps_its_neighbours(tree):
    path = tree / "testing/common_mps.py"
    text = path.read_text().replace(
        '        "logaddexp": [torch.float16, torch.bfloat16],  # expect: DSP306\n',
        '        "hypot": [torch.int32], "logaddexp": [torch.float16], "expm1": None,\n',
    ).replace('        "hypot": [torch.int32],  # ok: DSP306 (hypot has no int registration)\n', "")
    path.write_text(text)
    fixes = _fixable(_lint(tree, ["DSP306"]), "DSP306")
    assert len(fixes) == 1
    _apply(tree, fixes[0])
    new = path.read_text()
    assert '        "hypot": [torch.int32], "expm1": None,\n' in new
    compile(new, str(path), "exec")
    assert not _lint(tree, ["DSP306"]).findings


def test_dsp308_severity_follows_what_the_binding_does():
    """A stale trailing argument is a cleanup (info); a shifted argument list and a missing slot are errors."""
    res = lint(LintOptions(paths=[str(FIXTURES / "aten")], select=["DSP308"], cwd=FIXTURES.parent))
    by_line = {}
    for f in res.findings:
        if f.path.endswith("SpecialKernel.mm") or f.path.endswith("operations/Indexing.mm"):
            text = (FIXTURES.parent / f.path).read_text(encoding="utf-8").splitlines()[f.span.line - 1]
            by_line[text.strip().split(";")[0]] = f
    stale = by_line["mtl_setArgs(encoder, out, input, mask, scale, numel)"]
    assert stale.severity.value == "info" and "ignores the extra argument" in stale.message
    shifted = by_line["mtl_setArgs(encoder, self, index, value)"]
    assert shifted.severity.value == "error" and "`value` is bound at slot 2 but the kernel's `value` is [[buffer(1)]]" in shifted.message
    missing = by_line["mtl_setArgs(encoder, out, input, scale)"]
    assert missing.severity.value == "error" and "nothing binds" in missing.message


def test_dsp304_rejected_dtypes_follow_the_logic():
    """Only a conjunction of `!=` tests (or `!(... == ...)`) proves a dtype absent; `||` proves nothing."""
    import importlib

    from mpslint.facts.host import host_facts
    from mpslint.source import LineIndex

    rule = importlib.import_module("rules.dsp304_dtype_gap")
    cases = {
        "t.scalar_type() != kBool": {"bool"},
        "kBool != iter.common_dtype()": {"bool"},
        "t.scalar_type() != at::kHalf && t.scalar_type() != ScalarType::BFloat16": {"half", "bfloat"},
        "!(t.dtype() == c10::kLong)": {"long"},
        "t.scalar_type() != kBool || n == 0": set(),
        "t.numel() != 0": set(),
        "t.scalar_type() != other.scalar_type()": set(),
        "!(t.scalar_type() != kBool)": set(),
    }
    for cond, want in cases.items():
        src = f"void f(const Tensor& t, const Tensor& other, TensorIteratorBase& iter, int n) {{ TORCH_CHECK({cond}); }}"
        fn = host_facts("t.mm", src, LineIndex(src)).functions[0]
        call = next(c for c in fn.calls if c.name == "TORCH_CHECK")
        assert rule._rejected(call.args[0].tree) == want, cond
