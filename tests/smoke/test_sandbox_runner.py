"""The sandbox (timeouts, limits, no stray processes) and the guarded kernel runner."""
from __future__ import annotations

import os
import struct
import sys
import time
from pathlib import Path

import pytest

from mpslint.smoke import sandbox

from _smoke_helpers import FIXTURES, needs_zig


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:   # a zombie still answers kill(0): look at its state
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except OSError:
        return False


def test_timeout_kills_the_whole_group(tmp_path: Path):
    pidfile = tmp_path / "grandchild.pid"
    code = (f"import subprocess,sys,time\np=subprocess.Popen([sys.executable,'-c','import time; time.sleep(60)'])\n"
            f"open({str(pidfile)!r},'w').write(str(p.pid))\ntime.sleep(60)\n")
    t0 = time.monotonic()
    r = sandbox.run([sys.executable, "-c", code], timeout=2)
    assert r.timed_out and time.monotonic() - t0 < 10
    deadline = time.monotonic() + 5
    gpid = int(pidfile.read_text())
    while _alive(gpid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(gpid), "the grandchild outlived the timeout"


def test_memory_limit_applies():
    r = sandbox.run([sys.executable, "-c", "x = bytearray(600 * 1024 * 1024)"], timeout=30, memory_mb=300)
    assert r.returncode != 0 and "MemoryError" in r.stderr


@pytest.fixture(scope="module")
def bad_lib(smoke_cache):
    from mpslint.smoke import build
    res = build.build(FIXTURES / "bad" / "oob_write.metal", cache_dir=smoke_cache)
    assert res.status == "ok", res.message
    return res


@needs_zig
def test_guard_page_canary_and_recovery_after_a_crash(bad_lib, smoke_cache):
    from mpslint.smoke import build, runner
    never = build.build(FIXTURES / "bad" / "never_ends.metal", cache_dir=smoke_cache)
    x = struct.pack("<1001f", *([1.0] * 1001))

    def launch(kernel, n, grid):
        return runner.LaunchSpec(kernel, [runner.BufferSpec(0, x[:4 * n], 4 * n),
                                          runner.BufferSpec(1, bytes(4 * n), 4 * n, read_back=True),
                                          runner.BufferSpec(2, struct.pack("<I", n), 4)], (grid,), (128,))
    res = runner.run_launches(bad_lib.so, [launch("scale_copy", 1000, 1024), launch("shift_copy", 1001, 1001),
                                           launch("scale_copy", 1000, 1000)], timeout=5)
    assert res[0].status == "crash" and res[0].fault["kind"] == "overflow" and res[0].fault["buf"] == "1"
    assert res[0].fault["access"] == "write" and int(res[0].fault["off"]) == 4000
    assert res[1].status == "ok" and res[1].canary == [(1, 4004)]
    # the third launch stays in bounds (grid == n) and runs in a fresh process after the crash
    assert res[2].status == "ok" and struct.unpack("<1000f", res[2].outputs[1])[:2] == (2.0, 2.0)
    t0 = time.monotonic()
    hang = runner.LaunchSpec("wait_for_flag", [runner.BufferSpec(0, bytes(4), 4),
                                               runner.BufferSpec(1, bytes(256), 256, read_back=True)], (64,), (64,))
    r = runner.run_launches(never.so, [hang], timeout=1.0)
    assert r[0].status == "timeout" and time.monotonic() - t0 < 15
