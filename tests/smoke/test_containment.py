"""Containment of hostile kernels: a kernel that segfaults, spins forever or allocates without bound is
stopped by the sandbox's limits, reported as an outcome, and leaves no process behind; mpslint's own
process never allocates what a launch spec asks for beyond a fixed limit.

(test_sandbox_runner.py covers the sandbox's wall-clock timeout, the killing of a grandchild and the
address-space limit on a Python child, and the guard page / canary of the runtime; test_run_fixtures.py
the fixture kernels.  This file adds the hostile kernels, the CPU-time limit and the stray-process check.)
"""
from __future__ import annotations

import os
import sys
import textwrap
import time

import pytest

from mpslint.smoke import sandbox, spec

from _smoke_helpers import needs_toolchain

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n\n"

KERNELS = {
    # a wild write far from any buffer (not the guard page right after it): SIGSEGV
    "wild_write": """
        kernel void wild_write(device float* output [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
          output[(gid + 1) * 268435456u] = 1.0f;
        }
        // mpslint-smoke: wild_write grid=64 group=64 args=0:float[64]=zeros!out
    """,
    # spins on arithmetic alone: no barrier, no atomic, never yields
    "spin_forever": """
        kernel void spin_forever(device float* output [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
          volatile uint spins = 0;
          while (spins != 0xffffffffu || gid < 1000000u) {
            spins = spins + 1;
          }
          output[gid] = float(spins);
        }
        // mpslint-smoke: spin_forever grid=64 group=64 args=0:float[64]=zeros!out
    """,
    # 256 MB of thread-local memory: overflows the thread's stack
    "hog_stack": """
        kernel void hog_stack(device float* output [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
          float local[1u << 26];
          for (uint i = 0; i < (1u << 26); ++i) {
            local[i] = float(i ^ gid);
          }
          output[gid] = local[gid * 1000];
        }
        // mpslint-smoke: hog_stack grid=64 group=64 args=0:float[64]=zeros!out
    """,
    # 64 GB of threadgroup memory asked for through a [[threadgroup(0)]] argument
    "hog_tgmem": """
        kernel void hog_tgmem(device float* output [[buffer(0)]], threadgroup float* scratch [[threadgroup(0)]],
                              uint gid [[thread_position_in_grid]]) {
          scratch[gid] = 1.0f;
          output[gid] = scratch[gid];
        }
        // mpslint-smoke: hog_tgmem grid=64 group=64 tgmem=68719476736 args=0:float[64]=zeros!out
    """,
    # 1 GB of static threadgroup memory: the library cannot even be loaded under the memory limit
    "hog_static": """
        kernel void hog_static(device float* output [[buffer(0)]], uint gid [[thread_position_in_grid]],
                               uint lid [[thread_position_in_threadgroup]]) {
          threadgroup float scratch[1u << 28];
          for (uint i = lid; i < (1u << 28); i += 64) {
            scratch[i] = float(i);
          }
          output[gid] = scratch[gid * 4096];
        }
        // mpslint-smoke: hog_static grid=64 group=64 args=0:float[64]=zeros!out
    """,
    # a spec asking mpslint to make a 16 GB buffer (in its own process, before any child runs)
    "huge_buffer": """
        kernel void huge_buffer(device float* output [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
          output[gid] = 1.0f;
        }
        // mpslint-smoke: huge_buffer grid=64 group=64 args=0:float[4294967296]=zeros!out
    """,
}


def _proc_table() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, state, command line) of every process, from /proc."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        out[int(d)] = (int(fields[1]), fields[0], cmd)
    return out


def _descendants(table, root: int) -> set[int]:
    kids: dict[int, list[int]] = {}
    for pid, (ppid, _s, _c) in table.items():
        kids.setdefault(ppid, []).append(pid)
    out, todo = set(), [root]
    while todo:
        for k in kids.get(todo.pop(), []):
            if k not in out:
                out.add(k)
                todo.append(k)
    return out


def strays(before: set[int], marker: str, grace: float = 5.0) -> list[str]:
    """Processes started since ``before`` that are still descendants of this one (zombies included: an
    unreaped child is a leak too), or anywhere whose command line names ``marker`` (a grandchild
    re-parented to init when its group was not killed)."""
    deadline = time.monotonic() + grace
    while True:
        table = _proc_table()
        mine = _descendants(table, os.getpid())
        left = [f"{pid} [{table[pid][1]}] {table[pid][2][:160]}" for pid in sorted(table)
                if pid != os.getpid() and pid not in before
                and (pid in mine or (marker in table[pid][2] and table[pid][1] != "Z"))]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """Run every hostile kernel once (one file each) under tight limits; collect outcomes and strays."""
    pytest.importorskip("ziglang", reason="the host smoke backend needs the ziglang package")
    pytest.importorskip("torch", reason="launch specs build their buffers with torch")
    from mpslint.smoke.api import SmokeOptions, run_smoke

    root = tmp_path_factory.mktemp("hostile")
    cache = root / "cache"
    files = []
    for name, body in KERNELS.items():
        p = root / f"{name}.metal"
        p.write_text(HEADER + textwrap.dedent(body))
        files.append(p)
    before = set(_proc_table())
    t0 = time.monotonic()
    report = run_smoke(files, SmokeOptions(backend="host", jobs=2, timeout=1.5, memory_mb=512, cache_dir=cache))
    took = time.monotonic() - t0
    return {o.kernel: o for o in report.outcomes}, strays(before, str(cache)), took


@needs_toolchain
def test_segfault_is_contained_and_reported(hostile):
    outcomes, _left, _t = hostile
    o = outcomes["wild_write"]
    assert o.code == "SMK403" and o.status == "failed"
    assert "out-of-bounds" in o.message and "host-emulated" in o.message


@needs_toolchain
def test_spin_is_killed_at_the_timeout_and_reported(hostile):
    outcomes, _left, took = hostile
    o = outcomes["spin_forever"]
    assert o.code == "SMK404" and o.status == "failed" and "did not finish within 1.5s" in o.message
    assert took < 120  # the whole run, compilation of six files included; the spin alone is cut at 1.5 s


@needs_toolchain
@pytest.mark.parametrize("kernel", ["hog_stack", "hog_tgmem"])
def test_unbounded_allocation_in_the_kernel_process_is_a_crash(hostile, kernel):
    outcomes, _left, _t = hostile
    o = outcomes[kernel]
    assert o.code == "SMK403" and o.status == "failed", o


@needs_toolchain
def test_a_library_too_big_to_load_is_reported_not_run(hostile):
    o = hostile[0]["hog_static"]
    assert o.status in ("skipped", "failed") and o.message, o
    assert o.status == "skipped" or o.code == "SMK403"


@needs_toolchain
def test_a_huge_spec_buffer_is_refused_before_anything_is_allocated(hostile):
    o = hostile[0]["huge_buffer"]
    assert o.status == "skipped" and "exceed the smoke run's limit" in o.message


@needs_toolchain
def test_no_process_is_left_behind(hostile):
    _outcomes, left, _t = hostile
    assert not left, "processes left after the smoke run:\n" + "\n".join(left)


def test_spec_buffer_limit_counts_every_buffer():
    ok = "// mpslint-smoke: k grid=1 group=1 args=0:float[1000]=zeros!out 1:uint=3\n"
    assert spec.parse(ok)["k"].error == ""
    half = spec.MAX_SPEC_BYTES // 2
    two = f"// mpslint-smoke: k grid=1 group=1 args=0:uchar[{half}]=zeros 1:uchar[{half + 1}]=zeros!out\n"
    assert "exceed" in spec.parse(two)["k"].error


def test_cpu_time_limit_stops_a_busy_child_before_the_wall_clock_timeout():
    t0 = time.monotonic()
    r = sandbox.run([sys.executable, "-c", "while True: pass"], timeout=60, cpu_seconds=1)
    assert not r.timed_out and r.returncode < 0  # SIGXCPU (or SIGKILL at the hard limit)
    assert time.monotonic() - t0 < 30


def test_sandboxed_fork_bomb_leaves_nothing(tmp_path):
    """A child that keeps forking sleepers, killed at the timeout: its whole session goes with it."""
    marker = f"mpslint-containment-{os.getpid()}-{tmp_path.name}"
    code = ("import os,time,sys\n"
            "for _ in range(8):\n"
            "    if os.fork() == 0:\n"
            f"        os.execvp(sys.executable, [sys.executable, '-c', 'import time; time.sleep(120)', {marker!r}])\n"
            "time.sleep(120)\n")
    before = set(_proc_table())
    r = sandbox.run([sys.executable, "-c", code], timeout=2)
    assert r.timed_out
    assert not strays(before, marker), "a forked sleeper outlived the sandbox"
