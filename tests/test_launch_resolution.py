"""Kernel names the host builds indirectly still reach their kernels in the dispatch graph, and MTL204 judges
a kernel by the host code that launches it (fixtures/aten/.../operations/Offsets.mm and kernels/Offsets.metal).

The fixture's `ok: MTL204` near-misses only test the rule if their kernels are launched by unbounded host
code; this file checks that they are, so a resolution regression cannot make them pass vacuously.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from mpslint.semantic import launchflow
from mpslint.engine import LintOptions, lint
from mpslint.facts.host import _alternation, _split_ternary

ROOT = Path(__file__).resolve().parents[1]
TREE = ROOT / "fixtures" / "aten"


@pytest.fixture(scope="module")
def linted():
    result = lint(LintOptions(paths=[str(TREE)], select=["MTL204"], cwd=ROOT))
    assert not result.internal_errors
    return result


@pytest.fixture(scope="module")
def graph(linted):
    return linted.project.graph


def _launchers(graph, kernel):
    return sorted(graph.attrs(i)["name"] for i in launchflow.launchers(graph, {"mop:" + kernel}))


@pytest.mark.parametrize(
    "kernel,launcher",
    [
        ("copy_rows_narrow", "copy_rows_mps"),  # `narrow ? "a" : "b"` held in a local
        ("copy_rows_wide", "copy_rows_mps"),
        ("layer_norm_rows", "layer_norm_rows_mps"),  # the name is returned by a helper
        ("strided_gather", "strided_gather_mps"),  # a wrapper that hands its argument to the pipeline cache
        ("tiled_sum", "tiled_sum_mps"),
        ("copy_rows_split", "copy_rows_split_mps"),
    ],
)
def test_indirect_kernel_names_resolve(graph, kernel, launcher):
    assert launcher in _launchers(graph, kernel)


def test_unlaunched_kernel_has_no_launcher(graph):
    assert _launchers(graph, "copy_rows_unlaunched") == []


@pytest.mark.parametrize(
    "function,evidence",
    [
        ("copy_rows_split_mps", "with_32bit_indexing"),
        ("copy_rows_checked_mps", "bounds `in.numel()` below 2^32"),
        ("copy_rows_limited_mps", "bounds `in.numel()` below 2^32"),  # a named constexpr limit, by its value
        ("copy_rows_mps", None),
        ("strided_gather_mps", None),
    ],
)
def test_index_range_evidence(linted, graph, function, evidence):
    from mpslint.semantic.model import semantic_model

    impls = [n for n in graph.nodes("impl") if graph.attrs(n).get("name") == function]
    assert impls, function
    project = linted.project
    ev = launchflow.index_range_evidence(graph, semantic_model(project), project.hosts, impls[0])
    if evidence is None:
        assert ev is None, ev
    else:
        assert ev is not None and evidence in ev.what, ev


def test_helper_products_follow_their_callers(graph):
    calls = launchflow.MetalCallIndex(result_metal(graph))
    assert calls.ops_reaching("load_row") == {"mop:row_gather_narrow"}
    assert calls.ops_reaching("load_col") == {"mop:copy_rows_checked"}


def result_metal(graph):
    result = lint(LintOptions(paths=[str(TREE / "src/ATen/native/mps/kernels/Offsets.metal")], select=["MTL204"], cwd=ROOT))
    return result.project.all_metal()


def test_metal_alone_reports_every_product(tmp_path):
    """Without host code in the run there is nothing to judge by: every unguarded product is reported."""
    src = (TREE / "src/ATen/native/mps/kernels/Offsets.metal").read_text(encoding="utf-8")
    (tmp_path / "Offsets.metal").write_text(src, encoding="utf-8")
    result = lint(LintOptions(paths=[str(tmp_path)], select=["MTL204"], cwd=tmp_path))
    lines = {f.span.line for f in result.findings}
    marked = {i for i, line in enumerate(src.splitlines(), 1) if "expect: MTL204" in line}
    assert marked <= lines
    assert len(lines) > len(marked)  # the bounded and unlaunched kernels too
    assert all("no MPS operation source was linted" in f.message for f in result.findings)


def test_split_ternary_and_alternation():
    assert _split_ternary('a ? "x_" + t : "y"') == [' "x_" + t ', ' "y"']
    assert _split_ternary("ns::f(a ? b : c)") is None
    assert _split_ternary("at::kFloat") is None
    rx, lit, exact = _alternation([("gemv_t_", "gemv_t_", True), ("gemv_nt_", "gemv_nt_", True)])
    assert lit == "gemv_" and not exact and rx == "(?:gemv_t_|gemv_nt_)"
    assert _alternation([("a", "a", True), None]) is None


HOST = """\
#include <ATen/native/mps/OperationUtils.h>
namespace at::native::mps {
static auto& lib = MetalShaderLibrary::getBundledLibrary();

static void scan_impl(const Tensor& self, const std::string& op_name) {
  auto pso = lib.getPipelineStateForFunc(fmt::format("{}_rows_{}", op_name, scalarToMetalTypeString(self)));
}
void cumsum_mps(const Tensor& self) { scan_impl(self, "cumsum"); }
void cumprod_mps(const Tensor& self) { scan_impl(self, "cumprod"); }

static void exec_generic(const Tensor& self, const std::string& name) {
  auto pso = lib.getPipelineStateForFunc(fmt::format("{}_{}", name, scalarToMetalTypeString(self)));
}
void use_generic(const Tensor& self, const std::string& n) { exec_generic(self, n); }

void pick(const Tensor& self, int path) {
  switch (path) {
    case 0: {
      const std::string fname = "first_kernel";
      auto pso = lib.getPipelineStateForFunc(fname);
      break;
    }
    case 1: {
      const std::string fname = "second_kernel";
      auto pso = lib.getPipelineStateForFunc(fname);
      break;
    }
  }
}
} // namespace at::native::mps
"""

METAL = """\
#include <metal_stdlib>
using namespace metal;
kernel void first_kernel(device float* o [[buffer(0)]], uint t [[thread_position_in_grid]]) { o[t] = 0; }
kernel void second_kernel(device float* o [[buffer(0)]], uint t [[thread_position_in_grid]]) { o[t] = 1; }
template <typename T>
kernel void scan_rows(device T* o [[buffer(0)]], uint t [[thread_position_in_grid]]) { o[t] = 0; }
#define INSTANTIATE_SCAN(OP, DTYPE) \\
  template [[host_name(#OP "_rows_" #DTYPE)]] kernel void scan_rows<DTYPE>(device DTYPE* o [[buffer(0)]], uint t [[thread_position_in_grid]]);
INSTANTIATE_SCAN(cumsum, float);
INSTANTIATE_SCAN(cumprod, float);
INSTANTIATE_SCAN(logcumsumexp, float);
"""


@pytest.fixture()
def small_graph(tmp_path):
    ops = tmp_path / "aten/src/ATen/native/mps/operations"
    kern = tmp_path / "aten/src/ATen/native/mps/kernels"
    ops.mkdir(parents=True)
    kern.mkdir(parents=True)
    (ops / "Scan.mm").write_text(HOST, encoding="utf-8")
    (kern / "Scan.metal").write_text(METAL, encoding="utf-8")
    result = lint(LintOptions(paths=[str(tmp_path)], select=["MTL204"], cwd=tmp_path))
    assert not result.internal_errors
    return result.project.graph


def _resolved(graph, function):
    out = []
    for kid in graph.nodes("kref"):
        for impl in graph.into(kid, "launches"):
            if graph.attrs(impl)["name"] == function:
                out.append(sorted(graph.attrs(m)["name"] for m in graph.out(kid, "resolves")))
    return out


def test_same_named_locals_in_different_blocks(small_graph):
    assert _resolved(small_graph, "pick") == [["first_kernel"], ["second_kernel"]]


def test_parameter_named_by_callers(small_graph):
    # "cumsum"/"cumprod" from the two callers; the host name of logcumsumexp is not asked for
    refs = _resolved(small_graph, "scan_impl")
    assert refs == [["scan_rows"]]
    kid = [k for k in small_graph.nodes("kref") if small_graph.attrs(small_graph.into(k, "launches")[0])["name"] == "scan_impl"][0]
    pattern = small_graph.attrs(kid)["ref"].pattern
    import re

    assert re.fullmatch(pattern, "cumprod_rows_float") and not re.fullmatch(pattern, "logcumsumexp_rows_float")


def test_run_time_names_in_shared_launchers_name_nothing(small_graph):
    # `{}_{}` with a name its caller does not know either: no guess (it would match every kernel)
    assert _resolved(small_graph, "exec_generic") in ([], [[]])


@pytest.mark.parametrize(
    "pattern,head",
    [
        (r"\w+_\w+", False),
        (r"(?:cumsum|cumprod)_\w+", True),
        (r"\w+_(?:innermost|outer)_\w+", False),
        (r"(?:(?:cummax|cummin)_contiguous_\w+|(?:cummax|cummin)_strided_\w+)", True),
        (r"(?:\w+_cast_\w+|abs_\w+)", False),
    ],
)
def test_literal_head(pattern, head):
    from mpslint.project import _literal_head

    assert _literal_head(pattern) is head


def test_kernels_are_entered_with_what_their_hosts_bind(linted, graph):
    """`launch_param_ranges`: the model's range of each value a host binds, by the kernel parameter it lands in."""
    from mpslint.semantic.launch_bindings import launch_param_ranges
    from mpslint.semantic.model import semantic_model
    from mpslint.semantic.ranges import Interval

    project = linted.project
    got = launch_param_ranges(graph, semantic_model(project), project.hosts)
    by_name = {graph.attrs(i)["name"]: list(v.values())[0] for i, v in got.items()}
    assert by_name["small_walk_mps"] == {"ndim": Interval(0, 64), "tid": Interval(0, 1023)}  # `in.dim()`, `min(numel, 1024)` threads
    assert by_name["diagonal_walk_mps"]["count"] == Interval(0, (1 << 32) - 1)  # a narrowed size: any uint
    assert "copy_rows_mps" not in by_name  # binds in a helper (`launch_rows`): nothing is known
    # a parameter struct filled field by field: each field lands in `p.<field>`
    assert by_name["param_walk_mps"]["p.ndim"] == Interval(0, 64)
    assert by_name["param_walk_mps"]["p.rows"] == Interval(0, (1 << 32) - 1)


def test_a_kernel_parameter_takes_the_range_it_is_entered_with(linted):
    from mpslint.semantic.expressions import walk
    from mpslint.semantic.model import semantic_model
    from mpslint.semantic.ranges import Interval

    project = linted.project
    model = semantic_model(project)
    path = next(p for p in project.metals if p.endswith("kernels/Offsets.metal"))
    facts = project.metals[path][0]
    fn = next(f for f in facts.functions if f.name == "small_walk")
    sub = next(s for s in fn.subscripts if s.array == "out" and "ndim" in s.index.text)
    product = next(n for n in walk(sub.index.tree) if n.kind == "binary" and n.op == "*")
    plain = model.function(fn, facts)
    entered = model.function(fn, facts, params={"ndim": Interval(0, 64)})
    assert plain.range(product, sub.stmt) == Interval(0, (1 << 32) - 1)  # any uint times any uint: it wraps
    assert entered.range(product, sub.stmt) == Interval(0, 63 * 64)  # the counter stays below `ndim`
