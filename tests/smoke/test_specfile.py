"""TOML launch specs (mpslint/smoke/specfile.py): parsing, struct layout, patterns, lookup order, the safe
expression subset; end to end through `mpslint smoke` with --specs and [tool.mpslint] smoke-specs, and an
inline `mpslint-smoke:` comment winning over a TOML spec."""
from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner

from mpslint.smoke import specexpr, specfile

from _smoke_helpers import FIXTURES, needs_toolchain, needs_torch

SPECS = FIXTURES / "specs"


def _decl(text, tmp_path, name="k.toml"):
    p = tmp_path / name
    p.write_text(text)
    return specfile.load_file(p)


@needs_torch
def test_struct_fields_are_laid_out_like_metal():
    env = {"N": 5}
    raw = specfile.pack_struct([{"name": "rows", "type": "uint", "value": "N"},
                                {"name": "strides", "type": "long[2]", "value": [3, 1]}], env)
    assert raw == struct.pack("<I4xqq", 5, 3, 1)                            # long[2] aligned to 8
    raw = specfile.pack_struct([{"name": "a", "type": "half", "value": 1},
                                {"name": "v", "type": "uint3", "value": [1, 2, 3]}], env)
    assert len(raw) == 32 and struct.unpack("<4I", raw[16:]) == (1, 2, 3, 0)   # uint3: 16 bytes, 16-aligned


def test_patterns_bind_dtypes_and_exact_names_come_first(tmp_path):
    a = tmp_path / "a.toml"
    a.write_text('[[kernel]]\nname = "scan_{T}_{U}"\ngrid = [1]\n\n[[kernel]]\nname = "scan_float_int"\ngrid = [2]\n')
    b = tmp_path / "b.toml"
    b.write_text('[[kernel]]\nname = "scan_*"\ngrid = [3]\n\n[[kernel]]\nname = "other"\ngrid = [4]\n')
    lib = specfile.SpecLibrary.load([a, b], builtin=False)
    [(d, bind)] = lib.lookup("scan_float_int")
    assert d.grid == [2] and bind == {}
    [(d, bind)] = lib.lookup("scan_half_long")
    assert d.grid == [1] and bind == {"T": "half", "U": "long"}
    assert lib.lookup("scan_x")[0][0].grid == [3]          # the first file with a match wins
    assert lib.lookup("nothing") == []


def test_malformed_tables_become_spec_errors_not_crashes(tmp_path):
    ds = _decl('[[kernel]]\nname = "k"\ngrid = [1]\ngroups = [1]\n\n[[kernel]]\nname = "j"\ngrid = [1]\n'
               '[[kernel.buffer]]\nindex = 0\nname = "x"\ndtype = "float"\n', tmp_path)
    assert "exactly one of `grid`" in ds[0].error
    assert "exactly one of `shape`, `value` or `fields`" in ds[1].error
    with pytest.raises(specfile.SpecFileError, match="invalid TOML"):
        _decl("[[kernel]\n", tmp_path, "bad.toml")


@needs_torch
def test_expressions_are_a_checked_subset():
    assert specexpr.size("ceil_div(N, 4) * 2 + (1 << 3)", {"N": 10}) == 14
    with pytest.raises(specexpr.SpecExprError, match="attributes are not allowed"):
        specexpr.size("x.numel()", {"x": 1})
    for bad in ("torch.load('f')", "x.__class__", "__import__('os')", "torch.hub.list('a')", "(lambda: 1)()"):
        with pytest.raises(specexpr.SpecExprError):
            specexpr.torch_expr(bad, {"x": 1})


def test_config_smoke_specs_are_resolved_next_to_the_pyproject(tmp_path):
    from mpslint.config import load_config
    (tmp_path / "pyproject.toml").write_text('[tool.mpslint]\nsmoke-specs = ["specs"]\n')
    assert load_config(tmp_path / "pyproject.toml").smoke_specs == [str((tmp_path / "specs").resolve())]


def _outcomes(r):
    assert r.exit_code in (0, 1), (r.exit_code, r.output)
    return {o["kernel"]: o for o in json.loads(r.stdout)["outcomes"]}


@needs_toolchain
def test_toml_specs_run_custom_kernels_and_inline_comments_win(tmp_path, monkeypatch, smoke_cache):
    from mpslint.smoke.cli import smoke_cmd
    k = tmp_path / "scan_kernels.metal"
    text = (SPECS / "scan_kernels.metal").read_text()
    # an inline spec for the half variant: it must win over the TOML pattern row_cumsum_{T}
    text += ("\n// mpslint-smoke: row_cumsum_half grid=1 group=1 args=0:half[4]=zeros!out 1:half[4]=ones "
             "2:uint=1\n")
    k.write_text(text)
    proj = tmp_path / "proj"
    proj.mkdir()
    shutil.copy(SPECS / "scan_kernels.toml", proj / "launch.toml")
    (proj / "pyproject.toml").write_text('[tool.mpslint]\nsmoke-specs = ["launch.toml"]\n')
    args = [str(k), "--backend", "host", "--no-progress", "--cache-dir", str(smoke_cache), "--format",
            "outcomes-json", "--no-builtin-specs"]
    monkeypatch.chdir(proj)                                   # found through [tool.mpslint] smoke-specs
    r = CliRunner().invoke(smoke_cmd, args)
    out = _outcomes(r)
    assert r.exit_code == 1
    assert out["row_cumsum_float"]["status"] == "passed" and out["row_cumsum_float"]["variant"] == "spec"
    assert out["row_cummax_float"]["code"] == "SMK402" and "`out`" in out["row_cummax_float"]["message"]
    assert out["row_cumsum_half"]["variant"] == "custom"     # the inline comment's launch
    monkeypatch.chdir(tmp_path)                               # no config: nothing describes the kernels
    out = _outcomes(CliRunner().invoke(smoke_cmd, args))
    assert out["row_cumsum_float"]["status"] == "skipped" and "no launch plan" in out["row_cumsum_float"]["message"]
    out = _outcomes(CliRunner().invoke(smoke_cmd, args + ["--specs", str(SPECS)]))   # --specs PATH
    assert out["row_cumsum_float"]["status"] == "passed"


def test_suggest_spec_writes_a_loadable_skeleton_with_what_the_host_binds(tmp_path):
    from mpslint.smoke.cli import smoke_cmd
    kernel = FIXTURES / "suggest" / "mps" / "kernels" / "RowScan.metal"
    r = CliRunner().invoke(smoke_cmd, ["--suggest-spec", str(kernel)])
    assert r.exit_code == 0, r.output
    p = tmp_path / "skeleton.toml"
    p.write_text(r.stdout)
    [d] = specfile.load_file(p)
    assert d.error == "" and d.name == "row_scan_{T}" and d.match("row_scan_half") == {"T": "half"}
    assert [(b.index, b.name, b.kind) for b in d.buffers] == [(0, "output", "buffer"), (1, "input", "buffer"),
                                                               (2, "params", "struct")]
    assert d.buffers[0].out and not d.buffers[1].out
    assert [f["name"] for f in d.buffers[2].fields] == ["rows", "cols", "strides"]
    assert d.buffers[2].fields[2]["type"] == "long[2]" and len(d.grid) == 2 and len(d.tgmem) == 1
    # from the host code in ../operations/RowScan.mm
    assert "# the host binds: self" in r.stdout and "launched by row_scan_out_mps" in r.stdout
    assert "dispatchThreads(MTLSizeMake(self.size(1), self.size(0), 1)" in r.stdout
    assert "# the host: params.rows = self.size(0)" in r.stdout


@needs_torch
def test_an_unfilled_skeleton_is_a_spec_error_not_a_run(tmp_path):
    p = tmp_path / "k.toml"
    p.write_text('[[kernel]]\nname = "k"\nvars = { N = "TODO" }\ngrid = ["TODO"]\n'
                 '[[kernel.buffer]]\nindex = 0\nname = "x"\ndtype = "float"\nshape = ["N"]\n')
    [d] = specfile.load_file(p)
    entry = {"host_name": "k", "params": [{"role": 0, "kind": 1, "type": "float", "size": 4}]}
    v = specfile.plan(entry, d, {})
    assert v.skip and "spec error" in v.skip and "TODO" in v.skip


def test_word_placeholders_and_cases_bind_more_names(tmp_path):
    [d] = _decl('[[kernel]]\nname = "im2col_{T}_{K:u32|u64}"\ngrid = [1]\n'
                'cases = { K = { u32 = { I = "uint" }, u64 = { I = "ulong" } } }\n', tmp_path)
    assert d.match("im2col_half_u64") == {"T": "half", "K": "u64", "I": "ulong"}
    assert d.match("im2col_half_u16") is None


def test_the_shipped_library_loads_without_errors():
    lib = specfile.SpecLibrary.load([], builtin=True)
    assert not lib.errors and lib.files
    assert all(not d.error for _p, decls in lib.files for d in decls), [d.error for _p, ds in lib.files for d in ds]
    assert lib.lookup("im2col_float_u32") and lib.lookup("col2im_kernel_half")


def test_suggest_spec_patterns_over_dtype_and_word_positions():
    from mpslint.smoke.suggest import _name_pattern
    hosts = ["im2col_float_u32", "im2col_float_u64", "im2col_half_u32", "im2col_half_u64"]
    assert _name_pattern("im2col", hosts) == "im2col_{T}_{K:u32|u64}"
    assert _name_pattern("k", ["k_float", "k_half_extra"]) == "k_float"     # shapes differ: the first name


# ---------------------------------------------------------------- the ReduceOps specs of the shipped library

def test_reduce_ops_specs_cover_every_kernel_shape_the_host_dispatches():
    lib = specfile.SpecLibrary.load([], builtin=True)
    names = {  # one host name per ReduceOps.metal registration macro, with the launches its spec makes
        "sum_reduction_outer_half_float": 2, "nansum_reduction_inner_bfloat_bfloat": 1,
        "count_nonzero_reduction_half2_long": 2, "sum_reduction_float_half": 3,
        "sum_reduction_strided_bool_int": 1, "norm_float2_float": 3, "norm_l2_reduction_inner_half_half": 1,
        "max_reduction_outer_long_long": 1, "all_reduction_inner_bool_uchar": 1, "prod_reduction_float_bfloat": 1,
        "prod_reduction_outer_bucketed_char_long": 1, "prod_reduction_inner_thin_half2_half2": 1,
        "argmin_reduction_outer_uchar_long": 1, "welford_outer_16_bfloat_float": 2,
        "welford_inner_wide_half_half": 2, "welford_pass1_bfloat": 1, "welford_pass2_float": 2,
    }
    for name, launches in names.items():
        found = lib.lookup(name)
        assert len(found) == launches, (name, [d.variant for d, _b in found])
        assert all(Path(d.source.split(":")[0]).name == "reduce_ops.toml" for d, _b in found), name
    (d, b), _std = lib.lookup("welford_outer_8_half_float")
    assert b["GX"] == "128" and b["GY"] == "8" and not d.large


@needs_torch
def test_a_single_comparison_in_an_expression_is_elementwise():
    import torch
    x = torch.tensor([0.0, 2.0, 0.0, -1.0])
    assert specexpr.torch_expr("(x != 0).sum()", {"x": x}).item() == 2
    assert specexpr.torch_expr("1 if 2 > 1 > 0 else 0", {}) == 1


@needs_toolchain
def test_reduce_ops_specs_run_pytorch_style_reductions_and_find_the_bugs(smoke_cache):
    """fixtures/smoke/specs/reduce_ops_style.metal: kernels with PyTorch's host names, launched by the shipped
    reduce_ops.toml only.  A 64-bit max whose second stage runs on a partial simdgroup (idle lanes read as 0)
    fails on all-negative input; its correct twin passes; a 32-bit row base is SMK405 past 2^32 elements."""
    from mpslint.smoke.cli import smoke_cmd
    base = [str(SPECS / "reduce_ops_style.metal"), "--backend", "host", "--no-progress", "--cache-dir",
            str(smoke_cache), "--format", "outcomes-json"]
    r = CliRunner().invoke(smoke_cmd, base)
    assert r.exit_code == 1, r.output
    runs = [(o["kernel"], o["variant"], o["status"], o["code"], o["message"]) for o in json.loads(r.stdout)["outcomes"]]
    status = {(k, v): s for k, v, s, _c, _m in runs}
    assert status == {("sum_reduction_inner_float_float", "spec/last-dim"): "passed",
                      ("sum_reduction_inner_float_float", "spec/mean"): "passed",
                      ("argmax_reduction_inner_float_long", "spec/last-dim"): "passed",
                      ("max_reduction_long_long", "spec/middle-dim"): "failed",
                      ("min_reduction_long_long", "spec/middle-dim"): "passed"}
    [bad] = [(c, m) for k, _v, _s, c, m in runs if k == "max_reduction_long_long"]
    assert bad[0] == "SMK402" and "got 0, expected -2" in bad[1]
    r = CliRunner().invoke(smoke_cmd, base + ["--large-index"])
    assert r.exit_code == 1, r.output
    out = {o["kernel"]: o for o in json.loads(r.stdout)["outcomes"]}
    wrap, ok = out["sum_reduction_inner_float_float"], out["argmax_reduction_inner_float_long"]
    assert wrap["code"] == "SMK405" and "thread (2097152, 0, 0)" in wrap["message"]
    assert "at byte 0 (element 0)" in wrap["message"] and "element 4294967296" in wrap["message"]
    assert ok["status"] == "passed" and ok["variant"] == "large-index/last-dim"


@needs_toolchain
def test_library_specs_for_sort_merge_softmax_backward_scatter_set_and_upsample_backward(smoke_cache):
    """fixtures/smoke/specs/library_style.metal, under PyTorch's host names, launched by the shipped library:
    a merge by ranks (sort.toml's mb_merge spec: sorted runs from `sorted(...)`, permuted indices), a softmax
    backward, a scatter_set with unique indices (`randperm`), and a nearest 3-D backward that rounds where it
    should floor (its autograd reference catches it)."""
    from mpslint.smoke.cli import smoke_cmd
    r = CliRunner().invoke(smoke_cmd, [str(SPECS / "library_style.metal"), "--backend", "host", "--no-progress",
                                       "--cache-dir", str(smoke_cache), "--format", "outcomes-json"])
    assert r.exit_code == 1, r.output
    out = {o["kernel"]: o for o in json.loads(r.stdout)["outcomes"]}
    for k in ("mb_merge_float_tptg32", "softmax_backward_looped_float_u32", "scatter_set_float_int"):
        assert out[k]["status"] == "passed", (k, out[k]["message"])
    bad = out["upsample_nearest_3d_backward_float"]
    assert bad["code"] == "SMK402" and "autograd of interpolate(nearest)" in bad["message"]


@needs_torch
def test_spec_inits_randperm_and_sorted_take_size_expressions():
    import torch
    from mpslint.smoke.spec import SpecArg, make_tensor
    g = torch.Generator().manual_seed(3)
    p = make_tensor(SpecArg(0, "int", 14, specfile._init_args("randperm(B)", {"B": 7})), g)
    assert sorted(p[:7].tolist()) == list(range(7)) and sorted(p[7:].tolist()) == list(range(7))
    s = make_tensor(SpecArg(0, "float", 12, specfile._init_args("sorted(0, 60, 2 * E)", {"E": 3})), g).view(2, 6)
    assert torch.equal(s, s.sort(1).values) and s.min() >= 0 and s.max() <= 60
