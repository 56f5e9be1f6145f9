"""`mpslint check --smoke`: smoke outcomes reach the normal findings and reporters as SMK4xx."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from mpslint.cli import main

from _smoke_helpers import FIXTURES  # fixtures/smoke

pytest.importorskip("ziglang", reason="the host smoke backend needs the ziglang package")
pytest.importorskip("torch", reason="smoke references need torch")


def test_check_smoke_reports_smk_findings_in_json():
    r = CliRunner().invoke(
        main,
        ["check", "--isolated", "--smoke", "--select", "SMK", "--format", "json", str(FIXTURES / "bad")],
        catch_exceptions=False,
    )
    assert r.exit_code == 1
    data = json.loads(r.stdout)
    by_file = {}
    for f in data:
        by_file.setdefault(f["path"].rsplit("/", 1)[-1], set()).add(f["code"])
        assert "host-emulated" in f["message"]
    assert by_file["compile_error.metal"] == {"SMK401"}
    assert by_file["miscompute.metal"] == {"SMK402"}
    assert by_file["oob_write.metal"] == {"SMK403"}
    assert by_file["never_ends.metal"] == {"SMK404"}


def test_check_smoke_clean_kernels_have_no_smk_findings():
    r = CliRunner().invoke(
        main,
        ["check", "--isolated", "--smoke", "--select", "SMK", str(FIXTURES / "good")],
        catch_exceptions=False,
    )
    assert r.exit_code == 0, r.stdout
