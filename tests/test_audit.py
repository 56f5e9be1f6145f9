"""``mpslint audit``: the classification of every fixture overload, the rollups, the reports and --compare.

The fixture yaml carries the expected class of every entry inline (``# audit: <class>`` at the end of its
``- func:`` line), decided by reading the fixture sources: atan2/copysign.Tensor/hypot/sinc/fill_.Scalar reach
stubs registered in BinaryKernel.mm / UnaryKernel.mm / FillKernel.mm; copysign.Scalar_out and erfinv go to
TORCH_IMPL_FUNCs in BinaryOps.mm that call an MPSGraph helper; fill_.Tensor and index_fill_ are MPS-only functions
that launch ``fill_scalar_*``; square is composite; histc has no MPS key; trace's MPS function is not in the tree.
"""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner

from mpslint.audit.classify import NOT_IN_TREE, run_audit, xfail_keys
from mpslint.audit.compare import compare
from mpslint.audit.model import CLASSES, FAMILY_CLASSES, JSON_SCHEMA, SCHEMA_VERSION, family_class, load_report
from mpslint.audit.render_html import render as render_html
from mpslint.audit.render_json import render as render_json
from mpslint.audit.render_md import LIMIT, render as render_md
from mpslint.cli import main

from .conftest import FIXTURES, ROOT

ATEN = FIXTURES / "aten"
YAML = ATEN / "src/ATen/native/native_functions.yaml"
_FUNC = re.compile(r"^- func:\s*([\w.]+)\s*\(")
_AUDIT = re.compile(r"#\s*audit:\s*([\w-]+)\s*$")


def _annotations(path: Path) -> dict[str, tuple[int, str | None]]:
    out = {}
    for lineno, line in enumerate(path.read_text(encoding="utf-8").split("\n"), start=1):
        m = _FUNC.match(line)
        if m:
            a = _AUDIT.search(line)
            out[m.group(1)] = (lineno, a.group(1) if a else None)
    return out


@pytest.fixture(scope="module")
def fixture_report():
    audit, result = run_audit([str(ATEN)], cwd=ROOT)
    assert not result.internal_errors
    return audit.to_dict()


def _overloads(report):
    return {o["name"]: o for op in report["ops"] for o in op["overloads"]}


def _ops(report):
    return {op["family"]: op for op in report["ops"]}


# ---------------------------------------------------------------- the fixture tree


def test_every_fixture_entry_is_annotated_and_classified_as_written(fixture_report):
    ann = _annotations(YAML)
    assert len(ann) >= 20
    missing = sorted(f"line {line}: {name}" for name, (line, cls) in ann.items() if cls is None)
    assert not missing, f"yaml entries without `# audit: <class>`: {missing}"
    bad = sorted(f"{name}: {cls}" for name, (_, cls) in ann.items() if cls not in CLASSES)
    assert not bad, f"unknown audit classes (use one of {CLASSES}): {bad}"
    got = _overloads(fixture_report)
    assert set(got) == set(ann)
    wrong = {name: (cls, got[name]["class"], got[name]["explanation"]) for name, (_, cls) in ann.items() if got[name]["class"] != cls}
    assert not wrong, wrong
    for name, (line, _) in ann.items():
        assert got[name]["line"] == line


def test_fixture_covers_every_reachable_class(fixture_report):
    seen = {o["class"] for o in _overloads(fixture_report).values()}
    # "mixed" needs an implementation that is both Metal and MPSGraph: covered by the synthetic tree below
    assert set(CLASSES) - {"mixed"} <= seen


def test_fixture_family_rollups(fixture_report):
    ops = _ops(fixture_report)
    assert ops["atan2"]["class"] == "native"
    assert ops["copysign"]["class"] == "mixed"  # Tensor overloads native through the stub, Scalar ones on MPSGraph
    assert ops["erfinv"]["class"] == "mpsgraph"
    assert ops["fill"]["class"] == "native"  # native-stub + native-mps
    assert ops["square"]["class"] == "composite"
    assert ops["histc"]["class"] == "fallback"
    assert ops["trace"]["class"] == "unknown"
    assert ops["copysign"]["dispatch"] == "partly-shared"
    for op in ops.values():
        assert op["class"] == family_class([o["class"] for o in op["overloads"]])


def test_structured_delegate_is_followed(fixture_report):
    ov = _overloads(fixture_report)
    assert ov["atan2_"]["via"] == ["atan2_", "atan2.out"]
    assert ov["copysign.Scalar"]["kernel"] == "copysign_Scalar_out_mps"
    assert "structured_delegate" in ov["copysign.Scalar"]["explanation"]


def test_unknown_says_the_implementation_is_not_in_tree(fixture_report):
    o = _overloads(fixture_report)["trace"]
    assert o["explanation"].startswith(NOT_IN_TREE)
    assert "trace_mps" in o["explanation"]


def test_attachments_kernels_xfails_findings(fixture_report):
    ops = _ops(fixture_report)
    atan2 = {k["name"]: k for k in ops["atan2"]["kernels"]}
    assert {"float", "half", "bfloat", "long", "bool"} <= set(atan2["atan2"]["dtypes"])
    assert atan2["atan2"]["paths"] == ["fixtures/aten/src/ATen/native/mps/kernels/BinaryKernel.metal"]
    assert [k["name"] for k in ops["fill"]["kernels"]] == ["fill_scalar"]
    assert ops["hypot"]["kernels"][0]["dtypes"] == ["float", "half"]
    assert [(x["list"], x["key"]) for x in ops["erfinv"]["xfails"]] == [("UNIMPLEMENTED_XFAILLIST", "erfinv")]
    assert not ops["atan2"]["xfails"]
    dsp = sorted((f["code"], Path(f["path"]).name, f["overload"]) for f in ops["copysign"]["findings"])
    assert dsp == [("DSP301", "BinaryOps.mm", "copysign.Scalar_out"), ("DSP301", "native_functions.yaml", "copysign.Scalar_out")]
    assert not ops["atan2"]["findings"] and not ops["erfinv"]["findings"]


def test_totals_add_up(fixture_report):
    t = fixture_report["totals"]
    ov = _overloads(fixture_report)
    assert t["overloads_total"] == len(ov) == sum(t["overloads"].values())
    assert t["ops_total"] == len(fixture_report["ops"]) == sum(t["ops"].values())
    nat = t["overloads"]["native-stub"] + t["overloads"]["native-mps"]
    known = nat + t["overloads"]["mpsgraph"] + t["overloads"]["mixed"]
    assert t["percent_migrated"]["overloads"] == round(100 * nat / known, 1)
    assert t["percent_migrated"]["ops"] == round(100 * t["ops"]["native"] / (t["ops"]["native"] + t["ops"]["mixed"] + t["ops"]["mpsgraph"]), 1)
    d = t["dispatch"]
    assert d["shared_line"] == sum(1 for o in ov.values() if o["route"] == "shared")
    assert d["mps_only_line"] == sum(1 for o in ov.values() if o["route"] == "mps_specific")


def test_family_class_definition():
    assert family_class(["native-stub", "native-mps", "composite"]) == "native"
    assert family_class(["native-stub", "mpsgraph"]) == "mixed"
    assert family_class(["native-stub", "mixed"]) == "mixed"
    assert family_class(["mpsgraph", "fallback"]) == "mpsgraph"
    assert family_class(["native-stub", "unknown"]) == "unknown"
    assert family_class(["native-stub", "mpsgraph", "unknown"]) == "mixed"
    assert family_class(["fallback", "composite"]) == "fallback"
    assert family_class(["composite"]) == "composite"
    assert set(FAMILY_CLASSES) == {"native", "mixed", "mpsgraph", "unknown", "fallback", "composite"}


def test_xfail_keys_map_opinfo_names_to_yaml_families():
    assert "linalg_eig" in xfail_keys("linalg.eig")
    assert "conv3d" in xfail_keys("nn.functional.conv3d")
    assert "erfinv" in xfail_keys("erfinv")


# ---------------------------------------------------------------- a synthetic tree for the remaining paths

SYN_YAML = """\
- func: foo.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CPU, CUDA: foo_out
    MPS: foo_out_mps

- func: foo(Tensor self) -> Tensor
  structured_delegate: foo.out

- func: bar.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CPU, CUDA, MPS: bar_out

- func: baz.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CPU, CUDA, MPS: baz_out

- func: quux(Tensor self) -> Tensor
  dispatch:
    CPU: quux_cpu
    MPS: quux_mps

- func: qux(Tensor self) -> Tensor

- func: pow.Tensor_Scalar_out(Tensor self, Scalar exponent, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CPU, CUDA, MPS: pow_Tensor_Scalar_out

- func: qexp.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)
  structured: True
  dispatch:
    CPU, CUDA: qexp_out
    MPS: qexp_out_mps
"""

SYN_MM = """\
#include <ATen/native/mps/OperationUtils.h>

namespace at::native {

static auto& lib = mps::MetalShaderLibrary::getBundledLibrary();

static void foo_graph(const Tensor& self, const Tensor& out) {
  @autoreleasepool {
    auto cachedGraph = LookUpOrCreateCachedGraph<MPSUnaryCachedGraph>("foo", [&](auto mpsGraph, auto newCachedGraph) {
      newCachedGraph->inputTensor_ = mpsGraphRankedPlaceHolder(mpsGraph, self);
    });
    runMPSGraph(getCurrentMPSStream(), cachedGraph->graph(), nil, nil);
  }
}

TORCH_IMPL_FUNC(foo_out_mps)(const Tensor& self, const Tensor& out) {
  if (self.scalar_type() == kFloat) {
    auto pso = lib.getPipelineStateForFunc("foo_float");
    return;
  }
  foo_graph(self, out);
}

static void baz_kernel(TensorIteratorBase& iter) {
  MPSGraph* graph = make_mps_graph();
  runMPSGraph(getCurrentMPSStream(), graph, nil, nil);
}

REGISTER_DISPATCH(baz_stub, &baz_kernel)

static void pow_tensor_scalar_kernel(TensorIteratorBase& iter, const Scalar& exp) {
  lib.exec_binary_kernel(iter, "pow_scalar");
}

REGISTER_DISPATCH(pow_tensor_scalar_stub, &pow_tensor_scalar_kernel)

#define CREATE_MPS_UNARY_GRAPH_FUNC(func_out, graph_op)                                   \\
  TORCH_IMPL_FUNC(func_out)(const Tensor& self, const Tensor& output) {                   \\
    mps::unary_op(self, output, #func_out, ^MPSGraphTensor*(MPSGraph* mpsGraph, MPSGraphTensor* t) { \\
      return [mpsGraph graph_op##WithTensor:t name:nil];                                  \\
    });                                                                                   \\
  }

CREATE_MPS_UNARY_GRAPH_FUNC(qexp_out_mps, exponent)

Tensor quux_mps(const Tensor& self) {
  return at::add(self, self);
}

} // namespace at::native
"""


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    base = tmp_path_factory.mktemp("syn")
    native = base / "aten/src/ATen/native"
    (native / "mps/operations").mkdir(parents=True)
    (native / "native_functions.yaml").write_text(SYN_YAML)
    (native / "mps/operations/Ops.mm").write_text(SYN_MM)
    audit, result = run_audit([str(base)], cwd=base)
    assert not result.internal_errors
    return audit.to_dict()


def test_synthetic_mixed_graph_stub_unknown_stub(synthetic):
    ov = _overloads(synthetic)
    assert ov["foo.out"]["class"] == "mixed"
    assert ov["foo"]["class"] == "mixed"
    assert ov["baz.out"]["class"] == "mpsgraph"  # a stub registered for MPS with an MPSGraph kernel
    assert ov["bar.out"]["class"] == "unknown"  # shared line, no MPS registration of bar_stub in the tree
    assert "bar_stub" in ov["bar.out"]["explanation"]
    assert ov["quux"]["class"] == "native-mps"  # host code, neither Metal nor MPSGraph: not MPSGraph
    assert ov["qux"]["class"] == "composite"
    assert ov["qexp.out"]["class"] == "mpsgraph"  # made by a structured-op graph macro
    assert ov["pow.Tensor_Scalar_out"]["class"] == "native-stub"  # PyTorch spells the stub in lower case
    assert ov["pow.Tensor_Scalar_out"]["stubs"] == ["pow_tensor_scalar_stub"]
    ops = _ops(synthetic)
    assert ops["foo"]["class"] == "mixed"
    assert ops["foo"]["unresolved_kernels"] == ["foo_float"]


def test_yaml_alone(tmp_path):
    native = tmp_path / "native_functions.yaml"
    native.write_text(SYN_YAML)
    audit, _ = run_audit([str(native)], cwd=tmp_path)
    ov = _overloads(audit.to_dict())
    assert ov["foo.out"]["class"] == "unknown" and ov["foo.out"]["explanation"].startswith(NOT_IN_TREE)
    assert ov["bar.out"]["class"] == "unknown" and "not in tree" in ov["bar.out"]["explanation"]
    assert ov["qux"]["class"] == "composite"
    assert audit.to_dict()["totals"]["percent_migrated"] == {"ops": None, "overloads": None}


# ---------------------------------------------------------------- the real torch wheel yaml


@pytest.fixture(scope="module")
def real_report(real_tree):
    audit, result = run_audit([str(real_tree)], cwd=real_tree)
    assert not result.internal_errors
    return audit.to_dict()


def test_real_yaml_totals_match_the_yaml(real_tree, real_report):
    import yaml

    data = yaml.load((real_tree / "aten/src/ATen/native/native_functions.yaml").read_text(), Loader=yaml.CSafeLoader)
    names = {e["func"].split("(")[0] for e in data}
    t = real_report["totals"]
    ov = _overloads(real_report)
    assert set(ov) == names
    assert t["overloads_total"] == len(names) == sum(t["overloads"].values())
    assert t["ops_total"] == len({n.split(".")[0].rstrip("_") if not n.split(".")[0].endswith("__") else n.split(".")[0] for n in names})
    own_mps = {e["func"].split("(")[0] for e in data if any("MPS" in [k.strip() for k in keys.split(",")] for keys in (e.get("dispatch") or {}))}
    assert own_mps == {n for n, o in ov.items() if o["route"] in ("shared", "mps_specific") and len(o["via"]) == 1}
    no_dispatch = {e["func"].split("(")[0] for e in data if not e.get("dispatch") and not e.get("structured_delegate")}
    assert all(ov[n]["class"] == "composite" for n in no_dispatch)
    # the wheel has no MPS sources: every overload reaching MPS is unknown, MPS-only ones say so in the words
    assert t["overloads"]["unknown"] == t["overloads_mps"] > 600
    for o in ov.values():
        if o["route"] == "mps_specific":
            assert o["class"] == "unknown" and o["explanation"].startswith(NOT_IN_TREE)
    assert t["percent_migrated"] == {"ops": None, "overloads": None}
    assert t["dispatch"]["ops"]["partly-shared"] >= 2  # pow and isin are half migrated in the yaml (DSP301)
    assert {"pow", "isin"} <= {op["family"] for op in real_report["ops"] if op["dispatch"] == "partly-shared"}
    assert sum(1 for op in real_report["ops"] if op["xfails"]) > 50


def test_real_yaml_reports_render(real_report):
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema not installed")
    jsonschema.validate(json.loads(render_json(real_report)), JSON_SCHEMA)
    md = render_md(real_report)
    assert len(md) < LIMIT and "## MPS migration audit" in md
    html = render_html(real_report)
    p = _check_html(html)
    assert p.rows == len(real_report["ops"])


# ---------------------------------------------------------------- formats


def test_json_is_stable_and_round_trips(fixture_report):
    text = render_json(fixture_report)
    again, _ = run_audit([str(ATEN)], cwd=ROOT)
    assert render_json(again.to_dict()) == text  # byte-identical on the same tree
    loaded = json.loads(text)
    assert loaded == fixture_report
    assert render_json(loaded) == text
    assert load_report(loaded)["schema_version"] == SCHEMA_VERSION
    assert list(loaded) == sorted(loaded)
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema not installed")
    jsonschema.validate(loaded, JSON_SCHEMA)
    with pytest.raises(ValueError):
        load_report(dict(loaded, schema_version=SCHEMA_VERSION + 1))
    with pytest.raises(ValueError):
        load_report({"ops": []})


class _Checker(HTMLParser):
    VOID = {"meta", "input", "br", "col", "img", "link", "hr", "wbr", "source"}

    def __init__(self):
        super().__init__()
        self.stack, self.errors, self.rows, self.svg_rects, self.tags = [], [], 0, 0, set()
        self.external = []
        self.in_tbody = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.add(tag)
        for k in ("src", "href"):
            if a.get(k):
                self.external.append((tag, a[k]))
        if tag == "tbody":
            self.in_tbody = True
        if tag == "tr" and self.in_tbody:
            self.rows += 1
        if tag == "rect" and "svg" in self.stack:
            self.svg_rects += 1
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.add(tag)
        if tag == "rect" and "svg" in self.stack:
            self.svg_rects += 1

    def handle_endtag(self, tag):
        if tag == "tbody":
            self.in_tbody = False
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
            if tag in self.stack:
                while self.stack and self.stack.pop() != tag:
                    pass
            return
        self.stack.pop()


def _check_html(html: str) -> _Checker:
    p = _Checker()
    p.feed(html)
    p.close()
    assert not p.errors, p.errors[:5]
    assert not p.stack, p.stack
    assert html.startswith("<!DOCTYPE html>")
    assert {"svg", "table", "style", "script", "input"} <= p.tags
    assert p.svg_rects >= 6
    assert not p.external, p.external  # self-contained: nothing fetched
    assert "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "") and "https://" not in html
    return p


def test_html_is_well_formed_and_self_contained(fixture_report):
    html = render_html(fixture_report)
    p = _check_html(html)
    assert p.rows == len(fixture_report["ops"])
    assert 'id="chart"' in html
    for c in FAMILY_CLASSES:
        assert f'value="{c}"' in html  # a filter checkbox per family class
    assert 'data-class="mixed"' in html


def test_markdown_fits_a_pr_comment(fixture_report):
    md = render_md(fixture_report)
    assert "| `native-stub` | 11 |" in md or "| `native-stub` |" in md
    assert "`copysign`: native-stub: copysign.out" in md
    assert len(md) < LIMIT


# ---------------------------------------------------------------- --compare and the CLI


def _migrated_copy(tmp_path: Path) -> Path:
    """fixtures/aten with copysign.Scalar_out moved onto the shared line (the guide's migration)."""
    tree = tmp_path / "aten"
    shutil.copytree(ATEN, tree)
    y = tree / "src/ATen/native/native_functions.yaml"
    text = y.read_text()
    old = "    CPU, CUDA: copysign_Scalar_out\n    MPS: copysign_Scalar_out_mps  # expect: DSP301\n"
    assert old in text
    y.write_text(text.replace(old, "    CPU, CUDA, MPS: copysign_Scalar_out\n"))
    return tree


def test_compare_lists_migrated_regressed_and_new_mixed(tmp_path, fixture_report):
    audit, _ = run_audit([str(_migrated_copy(tmp_path))], cwd=tmp_path)
    after = audit.to_dict()
    assert _ops(after)["copysign"]["class"] == "native"
    fwd = compare(fixture_report, after)
    assert [m["family"] for m in fwd["newly_migrated"]] == ["copysign"]
    assert {m["overload"] for m in fwd["overloads_migrated"]} == {"copysign.Scalar_out", "copysign.Scalar"}
    assert not fwd["regressed"] and not fwd["new_mixed"]
    back = compare(after, fixture_report)
    assert [m["family"] for m in back["regressed"]] == ["copysign"]
    assert [m["family"] for m in back["new_mixed"]] == ["copysign"]
    assert {m["overload"] for m in back["overloads_regressed"]} == {"copysign.Scalar_out", "copysign.Scalar"}


def test_cli_formats_output_and_compare(tmp_path):
    runner = CliRunner()
    old = tmp_path / "old.json"
    r = runner.invoke(main, ["audit", str(ATEN), "--format", "json", "-o", str(old)])
    assert r.exit_code == 0, r.output
    assert json.loads(old.read_text())["schema_version"] == SCHEMA_VERSION
    new_tree = _migrated_copy(tmp_path)
    r = runner.invoke(main, ["audit", str(new_tree), "--compare", str(old)])
    assert r.exit_code == 0, r.output
    assert "Newly migrated** (1): `copysign` (mixed → native)" in r.output
    r = runner.invoke(main, ["audit", str(new_tree), "--format", "json", "--compare", str(old)])
    with_diff = json.loads(r.output)
    assert with_diff["compare"]["newly_migrated"][0]["family"] == "copysign"
    load_report(with_diff)  # a report carrying a comparison is still a report
    # the other way round it regressed; --fail-on-regression turns that into exit 1
    newj = tmp_path / "new.json"
    runner.invoke(main, ["audit", str(new_tree), "--format", "json", "-o", str(newj)])
    r = runner.invoke(main, ["audit", str(ATEN), "--format", "html", "--compare", str(newj), "--fail-on-regression"])
    assert r.exit_code == 1
    assert "Regressed (1)" in r.output
    r = runner.invoke(main, ["audit", str(ATEN), "--compare", str(newj)])
    assert r.exit_code == 0


def test_cli_errors(tmp_path):
    runner = CliRunner()
    (tmp_path / "empty").mkdir()
    r = runner.invoke(main, ["audit", str(tmp_path / "empty")])
    assert r.exit_code == 2 and "native_functions.yaml" in r.output
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "something-else"}')
    r = runner.invoke(main, ["audit", str(ATEN), "--compare", str(bad)])
    assert r.exit_code == 2 and "not an mpslint audit report" in r.output
    r = runner.invoke(main, ["audit", str(tmp_path / "empty"), "--native-functions", str(YAML), "--format", "json"])
    assert r.exit_code == 0
    assert json.loads(r.output)["totals"]["overloads"]["unknown"] > 0  # the yaml without its sources
