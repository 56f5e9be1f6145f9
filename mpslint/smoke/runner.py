"""Parent side of kernel execution on the host backend: feed launches to sandboxed `_child.py` processes.

A child runs many launches in order and announces each ("S i") before running it, so the parent can give every
launch its own deadline: a launch that does not finish in time has its process group killed (SMK404), a child
that dies mid-launch (fault, abort, memory limit) is blamed for that launch only (SMK403), and a fresh child
carries on with the launches after it.
"""
from __future__ import annotations

import json
import os
import re
import selectors
import tempfile
import time
from dataclasses import dataclass, field

from . import sandbox
from .build import child_command

_FAULT = re.compile(r"MSL_FAULT (.*)")


@dataclass
class BufferSpec:
    index: int                 # [[buffer(index)]]
    data: bytes | None         # initial contents (None: zero-filled)
    nbytes: int
    read_back: bool = False
    sparse_below: int = -1     # >= 0: a large-index buffer, mapped sparse with this much guard space below it


@dataclass
class LaunchSpec:
    kernel: str
    buffers: list
    grid: tuple                # threads (mode 0, dispatchThreads) or threadgroups (mode 1)
    group: tuple
    mode: int = 0
    tgmem: list = field(default_factory=list)   # byte sizes of [[threadgroup(n)]] arguments
    select: list | None = None  # large-index runs: only these threadgroups [(x, y, z)], with page tracking


@dataclass
class LaunchResult:
    status: str                # "ok" | "crash" | "timeout" | "error"
    outputs: dict = field(default_factory=dict)   # buffer index -> bytes
    message: str = ""
    fault: dict | None = None  # parsed MSL_FAULT fields
    canary: list = field(default_factory=list)    # [(buffer index, first clobbered byte offset)]
    ms: float = 0.0
    internal: bool = False     # "error" of the runner itself (the kernel process failed), not of the kernel
    touches: list = field(default_factory=list)   # large-index runs: [buf, write, x, y, z, byte offset] per page
    peak_rss_kb: int = 0       # the kernel process's peak resident memory after this launch (Linux)


def parse_fault(stderr: str) -> dict | None:
    for line in stderr.splitlines():
        m = _FAULT.search(line)
        if m:
            return dict(kv.split("=", 1) for kv in m.group(1).split() if "=" in kv)
    return None


def _pad3(v) -> list[int]:
    v = [int(x) for x in v] + [1, 1, 1]
    return v[:3]


def run_launches(so: str, launches: list[LaunchSpec], *, timeout: float = 10.0, memory_mb: int = 2048,
                 startup_timeout: float = 30.0, child: list[str] | None = None) -> list[LaunchResult]:
    """Run `launches` against the library `so`.  `child` is the command prefix of the kernel process
    (default: the host runtime's `_child.py run`; the Metal backend passes its own); it receives
    SO JOB_JSON IN_BLOB OUT_BLOB START and speaks the same S/D line protocol."""
    results: list[LaunchResult | None] = [None] * len(launches)
    if not launches:
        return []
    with tempfile.TemporaryDirectory(prefix="mpslint-smoke-run-") as tmp:
        blob = bytearray()
        out_size = 0
        job = []
        for L in launches:
            bufs = []
            for b in L.buffers:
                in_off = -1
                if b.data is not None:
                    in_off = len(blob)
                    blob += b.data
                out_off = -1
                if b.read_back:
                    out_off = out_size
                    out_size += b.nbytes
                bufs.append({"index": b.index, "nbytes": int(b.nbytes), "in_off": in_off, "out_off": out_off,
                             "sparse": int(b.sparse_below)})
            jl = {"kernel": L.kernel, "grid": _pad3(L.grid), "group": _pad3(L.group), "mode": L.mode,
                  "tgmem": [int(x) for x in L.tgmem], "buffers": bufs}
            if L.select is not None:
                jl["select"] = [([int(x) for x in g] + [0, 0, 0])[:3] for g in L.select]
            job.append(jl)
        job_path, in_path, out_path = (os.path.join(tmp, n) for n in ("job.json", "in.bin", "out.bin"))
        with open(job_path, "w") as f:
            json.dump({"launches": job}, f)
        with open(in_path, "wb") as f:
            f.write(bytes(blob))
        with open(out_path, "wb") as f:
            f.truncate(out_size)
        start = 0
        while start < len(launches):
            start = _run_child(child or child_command("run"), so, job_path, in_path, out_path, start, results,
                               timeout, memory_mb, startup_timeout, tmp)
        with open(out_path, "rb") as f:
            out = f.read()
    for i, L in enumerate(launches):
        r = results[i]
        if r is not None and r.status == "ok":
            for b, jb in zip(L.buffers, job[i]["buffers"]):
                if b.read_back:
                    r.outputs[b.index] = out[jb["out_off"]:jb["out_off"] + b.nbytes]
    return [r if r is not None else LaunchResult("error", message="not run", internal=True) for r in results]


def _run_child(prefix, so, job_path, in_path, out_path, start, results, timeout, memory_mb, startup_timeout,
               tmp) -> int:
    """Run launches from `start`; return the index to continue from."""
    err_path = os.path.join(tmp, f"stderr-{start}.txt")
    cpu_budget = int(timeout * (len(results) - start) + startup_timeout + 10)
    proc = sandbox.spawn([*prefix, so, job_path, in_path, out_path, str(start)], memory_mb=memory_mb,
                         cpu_seconds=cpu_budget, stderr_path=err_path)
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    current = None
    deadline = time.monotonic() + startup_timeout
    pending = b""
    t_start = time.monotonic()
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                sandbox.kill_group(proc)
                if current is None:
                    results[start] = LaunchResult("error", message=f"kernel process did not start in "
                                                                   f"{startup_timeout:.0f}s", internal=True)
                    return start + 1
                results[current] = LaunchResult("timeout", message=f"did not finish within {timeout:g}s",
                                                ms=timeout * 1e3)
                return current + 1
            events = sel.select(timeout=min(left, 1.0))
            if not events:
                continue
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                parts = line.decode(errors="replace").split(" ", 2)
                if parts[0] == "S":
                    current = int(parts[1])
                    t_start = time.monotonic()
                    deadline = t_start + timeout
                elif parts[0] == "D":
                    i = int(parts[1])
                    info = json.loads(parts[2])
                    status = "ok" if info["rc"] == 0 else "error"
                    results[i] = LaunchResult(status, message=info.get("err", ""),
                                              canary=[tuple(c) for c in info.get("canary", [])], ms=info["ms"],
                                              touches=info.get("touch", []), peak_rss_kb=info.get("hwm_kb", 0))
                    current = None
                    deadline = time.monotonic() + timeout + 5.0
        proc.wait()
    finally:
        sel.close()
        if proc.poll() is None:
            sandbox.kill_group(proc)
        proc.stdout.close()
    stderr = open(err_path, errors="replace").read() if os.path.exists(err_path) else ""
    done = [i for i in range(start, len(results)) if results[i] is not None]
    if current is None:
        if len(done) == len(results) - start:
            return len(results)
        nxt = next(i for i in range(start, len(results)) if results[i] is None)
        if "MSL_LOAD_FAILED" in stderr:   # the library's own static data exceed the kernel process's limits
            results[nxt] = LaunchResult("error", message="the built library does not load under the kernel "
                                        "process's limits: " + stderr.split("MSL_LOAD_FAILED", 1)[1].strip()[:300])
            return nxt + 1
        results[nxt] = LaunchResult("error", message="kernel process failed before the launch: " + stderr[-1500:],
                                    internal=True)
        return nxt + 1
    fault = parse_fault(stderr)
    rc = proc.returncode
    if fault is None:
        msg = f"kernel process ended (exit status {rc})"
        if "MemoryError" in stderr or "bad_alloc" in stderr:
            msg = "kernel process ran out of its memory limit"
        tail = stderr.strip().splitlines()[-1:] if stderr.strip() else []
        results[current] = LaunchResult("crash", message=msg + (": " + tail[0] if tail else ""),
                                        ms=(time.monotonic() - t_start) * 1e3)
    else:
        results[current] = LaunchResult("crash", message="fault", fault=fault,
                                        ms=(time.monotonic() - t_start) * 1e3)
    return current + 1
