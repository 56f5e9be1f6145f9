"""No failure hides as a skip: a missing dependency (numpy, torch, ziglang) or an internal error of the smoke
runner is an error (exit 2, a message naming what to install); `skipped` is only for what a kernel cannot be
run for.  The missing module is simulated in a child interpreter by a meta-path finder that refuses it."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest
from click.testing import CliRunner

from _smoke_helpers import FIXTURES, ROOT, needs_toolchain

BLOCKED = r'''
import sys
blocked = sys.argv.pop(1)
class _Refuse:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == blocked:
            raise ModuleNotFoundError(f"No module named {name!r}")
        return None
sys.meta_path.insert(0, _Refuse())
from mpslint.cli import main
sys.argv[0] = "mpslint"
main()
'''

TINY = """#include <metal_stdlib>
using namespace metal;
kernel void fill_two(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = 2.0f; }
// mpslint-smoke: fill_two grid=8 group=8 args=0:float[8]=zeros!out
"""


@needs_toolchain
@pytest.mark.parametrize("module, install", [("numpy", "pip install numpy"), ("torch", "pip install torch"),
                                             ("ziglang", "pip install ziglang")])
def test_a_missing_dependency_is_an_error_naming_what_to_install(tmp_path, smoke_cache, module, install):
    k = tmp_path / "tiny.metal"
    k.write_text(TINY)
    r = subprocess.run([sys.executable, "-c", BLOCKED, module, "smoke", str(k), "--backend", "host",
                        "--no-progress", "--cache-dir", str(smoke_cache)],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 2, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    assert install in r.stderr and "cannot run" in r.stderr, r.stderr
    assert "skipped:" not in r.stdout


@needs_toolchain
def test_an_internal_error_of_the_runner_is_exit_2_not_a_skip(monkeypatch, smoke_cache):
    from mpslint.smoke import engine
    from mpslint.smoke.cli import smoke_cmd

    def boom(self, path, progress):
        raise RuntimeError("Numpy is not available")

    monkeypatch.setattr(engine.Engine, "_check_file", boom)
    r = CliRunner().invoke(smoke_cmd, [str(FIXTURES / "good" / "unary_ops.metal"), "--backend", "host",
                                       "--no-progress", "--cache-dir", str(smoke_cache), "--format", "outcomes-json"])
    assert r.exit_code == 2, r.output
    assert "internal error in the smoke runner: RuntimeError: Numpy is not available" in r.stderr
    data = json.loads(r.stdout)
    assert data["summary"]["skipped"] == 0 and not data["outcomes"]


@needs_toolchain
def test_check_smoke_exits_2_when_the_runner_fails(monkeypatch):
    from mpslint.cli import main
    from mpslint.smoke import engine

    monkeypatch.setattr(engine.Engine, "_check_file", lambda self, p, pr: (_ for _ in ()).throw(OSError("disk")))
    r = CliRunner().invoke(main, ["check", "--isolated", "--smoke", "--select", "SMK",
                                  str(FIXTURES / "good" / "unary_ops.metal")])
    assert r.exit_code == 2, r.output
    assert "OSError: disk" in r.stderr
