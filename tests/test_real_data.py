"""The torch 2.13.0 wheel's real native_functions.yaml, c10/metal headers and mps headers (skipped without torch)."""

from __future__ import annotations

import yaml

from mpslint.engine import LintOptions, lint

# Checked by hand against the yaml: in each family CPU and CUDA share one structured kernel for the
# overload, MPS still names its own function, and sibling overloads already reach MPS through the
# shared line. (set_ overloads are not here: their CPU and CUDA kernels differ, nothing to join.)
HAND_CHECKED_DSP301 = {
    "isin.Tensor_Tensor_out",
    "isin.Scalar_Tensor_out",
    "pow.Tensor_Tensor_out",
    "pow.Scalar_out",
}


def _mps_entries(path):
    data = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
    out = set()
    for e in data:
        for keys in (e.get("dispatch") or {}):
            if any(k.strip().endswith("MPS") for k in keys.split(",")):  # MPS, SparseMPS, SparseCsrMPS
                out.add(e["func"].split("(")[0])
    return out


def test_graph_holds_every_mps_entry(real_tree):
    result = lint(LintOptions(paths=[str(real_tree)], select=["DSP"]))
    yaml_path = real_tree / "aten/src/ATen/native/native_functions.yaml"
    expected = _mps_entries(yaml_path)
    assert len(expected) > 600
    g = result.project.graph
    dispatching = {n[len("op:"):] for n in g.nodes("op") if g.out(n, "dispatches")}
    assert dispatching == expected
    assert result.project.natives.loader == "CSafeLoader"
    assert not result.internal_errors and not result.errors


def test_dsp301_on_real_yaml_is_the_hand_checked_set(real_tree):
    result = lint(LintOptions(paths=[str(real_tree)], select=["DSP301"]))
    got = {f.message.split("`")[1] for f in result.findings if f.path.endswith("native_functions.yaml")}
    assert got == HAND_CHECKED_DSP301


def test_real_headers_parse_and_lint_without_crash(real_tree):
    result = lint(LintOptions(paths=[str(real_tree)], select=["ALL"]))
    assert not result.internal_errors
    assert not result.errors
    metal_headers = [p for p in result.project.metals if "/c10/metal/" in p]
    assert len(metal_headers) >= 9
    # parse health regression guard: the headers parsed with a bounded number of ERROR nodes
    c10 = {p: e for p, (b, e) in result.stats.per_file.items() if "/c10/metal/" in p}
    assert sum(c10.values()) <= 20, c10


def test_real_mps_headers_are_classified(real_tree):
    result = lint(LintOptions(paths=[str(real_tree)], select=["ALL"]))
    kinds = {p: result.project.sources[p].kind for p in result.project.sources}
    assert kinds[next(p for p in kinds if p.endswith("mps/OperationUtils.h"))] == "host"
    assert kinds[next(p for p in kinds if p.endswith("c10/metal/indexing.h"))] == "metal"
