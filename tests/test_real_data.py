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


def test_cross_file_rules_need_the_mps_sources(real_tree):
    """The wheel has the yaml, common_mps.py and headers but no MPS operation sources: the DSP rules that
    reason about absence (nothing registers, nothing reaches, no Metal has it) must stay silent on it,
    not report every stub, kernel name or xfail of the real yaml."""
    result = lint(LintOptions(paths=[str(real_tree)], select=["DSP"]))
    assert result.project.natives is not None and len(result.project.natives.overloads) > 2000
    assert result.project.pythons  # common_mps.py was read
    by_code = {}
    for f in result.findings:
        by_code.setdefault(f.code, []).append(f)
    assert set(by_code) <= {"DSP301"}, {c: [f.message[:80] for f in fs[:3]] for c, fs in by_code.items()}


def test_missing_stub_registration_needs_the_host_side_of_the_metal(real_tree, tmp_path):
    """A partial tree: the real yaml, one .metal file registering many ops, and one operations file that
    registers a single stub and does not build its library from that .metal. DSP305 must not read every
    registered Metal op without its host file as a missing stub registration."""
    import shutil

    tree = tmp_path / "t"
    shutil.copytree(real_tree, tree)
    mps = tree / "aten/src/ATen/native/mps"
    (mps / "kernels").mkdir(exist_ok=True)
    (mps / "kernels/UnaryMath.metal").write_text(
        "#include <c10/metal/indexing.h>\nusing namespace metal;\n"
        + "".join(f"REGISTER_UNARY_OP({op}, {t}, {t});\n" for op in ("lgamma", "digamma", "erfinv", "i0") for t in ("float", "half", "bfloat"))
    )
    (mps / "operations").mkdir(exist_ok=True)
    (mps / "operations/Other.mm").write_text(
        "#include <ATen/native/mps/OperationUtils.h>\nnamespace at::native {\n"
        "static void sinc_mps_kernel(TensorIteratorBase& iter) {\n  lib.exec_unary_kernel(iter, \"sinc\");\n}\n"
        "REGISTER_DISPATCH(sinc_stub, &sinc_mps_kernel)\n}\n"
    )
    result = lint(LintOptions(paths=[str(tree)], select=["DSP305"]))
    assert not result.findings
    # once an operations file builds its library from that .metal, the unregistered ops are reported
    (mps / "operations/Other.mm").write_text(
        (mps / "operations/Other.mm").read_text().replace(
            "#include <ATen/native/mps/OperationUtils.h>\n", "#include <ATen/native/mps/OperationUtils.h>\n#include <ATen/native/mps/UnaryMath_metallib.h>\n"
        )
    )
    got = {dict(f.extra)["overload"] for f in lint(LintOptions(paths=[str(tree)], select=["DSP305"])).findings}
    assert {"lgamma.out", "digamma.out", "erfinv.out", "i0.out"} <= got


def test_mtl204_on_wheel_headers_without_operation_sources(real_tree):
    """The wheel has c10/metal and the MPS kernel headers but none of the operation sources that launch them:
    MTL204 cannot judge a launch there, so it reports every unguarded 32-bit product and says why."""
    result = lint(LintOptions(paths=[str(real_tree)], select=["MTL204"]))
    assert not result.internal_errors
    assert result.findings, "the wheel's headers hold 32-bit index products (reduction_utils.h, SortTopK.h)"
    assert all("no MPS operation source was linted" in f.message for f in result.findings)
