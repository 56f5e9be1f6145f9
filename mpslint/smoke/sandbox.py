"""Run commands in child processes with a wall-clock timeout and address-space / CPU limits.

Limits are set by a tiny launcher (`python -I -S -c ...`) that calls resource.setrlimit and then execs the
real command, so no preexec_fn runs in mpslint's (possibly threaded) process.  Every child starts a new
session; on timeout the whole process group is killed and reaped, so nothing is left running.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass

_LAUNCHER = (
    "import os,resource,sys\n"
    "mem=int(sys.argv[1]); cpu=int(sys.argv[2])\n"
    "if mem>0: resource.setrlimit(resource.RLIMIT_AS,(mem,mem))\n"
    "if cpu>0: resource.setrlimit(resource.RLIMIT_CPU,(cpu,cpu+5))\n"
    "resource.setrlimit(resource.RLIMIT_CORE,(0,0))\n"
    "os.execvp(sys.argv[3],sys.argv[3:])\n"
)


def limited_command(cmd: list[str], memory_mb: int = 0, cpu_seconds: int = 0) -> list[str]:
    """`cmd` wrapped so that it runs under RLIMIT_AS=memory_mb and RLIMIT_CPU=cpu_seconds (0 = unlimited)."""
    return [sys.executable, "-I", "-S", "-c", _LAUNCHER, str(int(memory_mb) * 1024 * 1024), str(int(cpu_seconds)),
            *cmd]


@dataclass
class Completed:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    seconds: float

    @property
    def signal(self) -> int | None:
        return -self.returncode if self.returncode < 0 else None


def kill_group(proc: subprocess.Popen) -> None:
    """Kill the child's process group (it leads its own session) and reap the child."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        proc.kill()
    except ProcessLookupError:
        pass
    proc.wait()


def run(cmd: list[str], *, timeout: float, memory_mb: int = 0, cpu_seconds: int = 0, cwd: str | None = None,
        env: dict | None = None) -> Completed:
    t0 = time.monotonic()
    proc = subprocess.Popen(limited_command(cmd, memory_mb, cpu_seconds), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, cwd=cwd, env=env,
                            start_new_session=True, text=True, errors="replace")
    try:
        out, err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        kill_group(proc)
        out, err = proc.communicate()
        timed_out = True
    else:
        # the leader exited; make sure no grandchild of its group lingers
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
    return Completed(proc.returncode, out or "", err or "", timed_out, time.monotonic() - t0)


def spawn(cmd: list[str], *, memory_mb: int = 0, cpu_seconds: int = 0, stderr_path: str | None = None,
          cwd: str | None = None) -> subprocess.Popen:
    """Start a streaming child (stdout is a line pipe, stderr goes to a file) in its own session."""
    err = open(stderr_path, "wb") if stderr_path else subprocess.DEVNULL
    try:
        return subprocess.Popen(limited_command(cmd, memory_mb, cpu_seconds), stdout=subprocess.PIPE, stderr=err,
                                stdin=subprocess.DEVNULL, cwd=cwd, start_new_session=True, bufsize=0)
    finally:
        if stderr_path:
            err.close()
