"""End to end: run_smoke over the fixture kernels on the host backend."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from mpslint.smoke.api import SMK401, SMK402, SMK403, SMK404, SmokeOptions, run_smoke

from _smoke_helpers import FIXTURES, needs_toolchain

pytestmark = needs_toolchain


def _line_of(path: Path, needle: str) -> int:
    return next(i for i, l in enumerate(path.read_text().splitlines(), 1) if needle in l)


def test_good_fixtures_all_pass(good_report):
    failed = [o for o in good_report.outcomes if o.status == "failed"]
    assert not failed, failed[:3]
    assert all(o.backend_label == "host-emulated" for o in good_report.outcomes)
    s = good_report.summary()
    assert s.variants_run > 250 and s.passed == s.variants_run
    assert s.skipped == 1   # fill_ones: a custom kernel without a launch spec


def test_every_variant_family_ran(good_report):
    ran = {(o.op, o.variant.split("/")[0]) for o in good_report.outcomes if o.status == "passed"}
    unary = {"dense", "dense_scalar", "strided", "dense_castout", "dense_castout_ilp", "strided_castout"}
    binary = {"strided", "strided_cast", "dense", "dense_ilp", "dense_cast", "dense_broadcast",
              "dense_broadcast_rhs", "dense_broadcast_cast", "dense_broadcast_rhs_cast", "dense_scalar",
              "dense_scalar_lhs", "dense_scalar_cast", "dense_scalar_lhs_cast"}
    assert {("silu", v) for v in unary} <= ran
    assert {("hypot", v) for v in binary} <= ran
    assert ("lt", "strided_castout") in ran
    assert {("add", v) for v in binary - {"dense_ilp"}} <= ran           # binary alpha
    assert {("hardshrink", "dense"), ("hardshrink", "strided")} <= ran  # unary alpha
    assert {("lerp", v) for v in ("strided", "strided_cast", "dense", "dense_cast")} <= ran   # ternary
    cases = {o.variant for o in good_report.outcomes if o.op == "hypot"}
    assert {"strided/broadcast", "strided/transposed"} <= cases
    dtypes = {o.dtype for o in good_report.outcomes if o.op in ("silu", "exp2", "neg", "maximum", "lt")}
    assert {"float", "half", "bfloat", "int", "short", "long", "uchar"} <= dtypes


def test_custom_kernels_threadgroup_simd_atomics(good_report):
    by = {o.kernel: o for o in good_report.outcomes if o.variant == "custom"}
    for k in ("block_sum_float", "block_sum_half", "simd_scan", "row_sum_float", "histogram"):
        assert by[k].status == "passed", by[k]
    skipped = [o for o in good_report.outcomes if o.kernel == "fill_ones"]
    assert skipped[0].status == "skipped" and "launch spec" in skipped[0].message


def test_findings_for_each_failure_kind(bad_report):
    bad = FIXTURES / "bad"
    f = {}
    for o in bad_report.outcomes:
        f.setdefault(Path(o.path).name, []).append(o)
    (ce,) = f["compile_error.metal"]
    assert ce.code == SMK401 and ce.line == 12 and "fabs_value" in ce.message and ce.column > 1
    (reg,) = f["bad_registration.metal"]
    assert reg.code == SMK401 and reg.line == 16 and "Output dtype mismatch" in reg.message
    mis = f["miscompute.metal"]
    assert {o.dtype for o in mis if o.code == SMK402} == {"half"}
    assert all(o.status == "passed" for o in mis if o.dtype == "float")
    half_dense = next(o for o in mis if o.kernel == "sigmoid_dense_half_half")
    assert "max abs error" in half_dense.message and "torch.sigmoid" in half_dense.message
    assert half_dense.line == _line_of(bad / "miscompute.metal", "REGISTER_UNARY_OP(sigmoid, half")
    oob = {o.kernel: o for o in f["oob_write.metal"]}
    assert oob["scale_copy"].code == SMK403 and "guard page" in oob["scale_copy"].message
    assert oob["shift_copy"].code == SMK403 and "canary" in oob["shift_copy"].message
    assert oob["scale_copy"].line == _line_of(bad / "oob_write.metal", "kernel void scale_copy")
    (hang,) = f["never_ends.metal"]
    assert hang.code == SMK404 and "did not finish" in hang.message
    assert all(o.backend_label == "host-emulated" for o in bad_report.outcomes)
    assert all("compiled" not in o.backend_label for o in bad_report.outcomes)


def test_a_wrong_reference_is_reported(smoke_cache):
    """The comparison can fail: feed `silu` the wrong reference through the hook."""
    import torch
    from mpslint.smoke.api import Reference
    wrong = Reference(lambda x, **_: torch.tanh(x), "torch.tanh")
    r = run_smoke([FIXTURES / "good" / "unary_ops.metal"],
                  SmokeOptions(backend="host", cache_dir=smoke_cache,
                               reference_for=lambda op: wrong if op == "silu" else None))
    silu = [o for o in r.outcomes if o.op == "silu"]
    assert silu and all(o.code == SMK402 for o in silu)
    assert all(o.status == "passed" for o in r.outcomes if o.op == "neg")


def test_no_reference_still_runs(smoke_cache):
    r = run_smoke([FIXTURES / "good" / "custom_kernels.metal"], SmokeOptions(backend="host", cache_dir=smoke_cache))
    st = {o.kernel: o.status for o in r.outcomes}
    assert st["block_sum_float"] == "no-reference" and st["histogram"] == "no-reference"


@pytest.mark.skipif(sys.platform == "darwin", reason="the Metal backend is usable on macOS")
def test_metal_backend_on_linux_is_an_error_not_a_skip(tmp_path):
    from mpslint.smoke.preflight import SmokeEnvironmentError
    with pytest.raises(SmokeEnvironmentError, match="macOS"):
        run_smoke([FIXTURES / "good" / "unary_ops.metal"], SmokeOptions(backend="metal", cache_dir=tmp_path))


def test_unreadable_and_missing_files_do_not_crash(tmp_path, smoke_cache):
    r = run_smoke([tmp_path / "missing.metal"], SmokeOptions(backend="host", cache_dir=smoke_cache))
    assert r.outcomes[0].status == "skipped" and "cannot read" in r.outcomes[0].message


def test_smoke_cli_json_and_exit_code(smoke_cache):
    import json
    from click.testing import CliRunner
    from mpslint.smoke.cli import smoke_cmd
    r = CliRunner().invoke(smoke_cmd, [str(FIXTURES / "bad" / "oob_write.metal"), "--backend", "host", "--format",
                                       "outcomes-json", "--cache-dir", str(smoke_cache), "--no-progress"])
    assert r.exit_code == 1, r.output
    data = json.loads(r.stdout)
    assert data["backend"] == "host-emulated"
    assert {o["code"] for o in data["outcomes"]} == {"SMK403"}


def test_smoke_cli_findings_go_through_the_reporters(smoke_cache):
    """`--format json|sarif|...` gives SMK findings in mpslint's usual formats (the summary goes to stderr)."""
    import json
    from click.testing import CliRunner
    from mpslint.smoke.cli import smoke_cmd
    r = CliRunner().invoke(smoke_cmd, [str(FIXTURES / "bad" / "oob_write.metal"), "--backend", "host", "--format",
                                       "sarif", "--cache-dir", str(smoke_cache), "--no-progress"])
    assert r.exit_code == 1, r.output
    run = json.loads(r.stdout)["runs"][0]
    assert {res["ruleId"] for res in run["results"]} == {"SMK403"}
    assert all("host-emulated" in res["message"]["text"] for res in run["results"])
    assert "kernel-crash (SMK403)" in r.stderr
