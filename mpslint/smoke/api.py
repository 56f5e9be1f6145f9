"""Public interface of the smoke runner: options, outcomes, report, `run_smoke`.

    from mpslint.smoke.api import run_smoke, SmokeOptions
    report = run_smoke([Path("UnaryKernel.metal")], SmokeOptions(backend="auto", jobs=2))

Outcome codes: SMK401 does-not-compile, SMK402 result-mismatch, SMK403 kernel-crash (out-of-bounds access,
abort, fault), SMK404 kernel-timeout; None for passed / skipped / no-reference.  Results of the host backend are
labelled "host-emulated"; only the Metal backend labels its results "metal-compiled".
"""
from __future__ import annotations

import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from .reference import Reference

SMK401 = "SMK401"   # does-not-compile
SMK402 = "SMK402"   # result-mismatch
SMK403 = "SMK403"   # kernel-crash
SMK404 = "SMK404"   # kernel-timeout
SMK405 = "SMK405"   # index-overflow (large-index runs)
CODES = {SMK401: "does-not-compile", SMK402: "result-mismatch", SMK403: "kernel-crash", SMK404: "kernel-timeout",
         SMK405: "index-overflow"}

HOST_LABEL = "host-emulated"
METAL_LABEL = "metal-compiled"

__all__ = ["run_smoke", "SmokeOptions", "SmokeReport", "SmokeOutcome", "SmokeSummary", "Reference", "CODES",
           "SMK401", "SMK402", "SMK403", "SMK404", "SMK405", "HOST_LABEL", "METAL_LABEL"]


@dataclass
class SmokeOptions:
    backend: str = "auto"                 # "auto" | "host" | "metal"
    jobs: int = 1                         # files built and run in parallel
    timeout: float = 10.0                 # seconds per kernel launch
    memory_mb: int = 2048                 # address-space limit of each kernel process
    cache_dir: Optional[Path] = None      # build cache (default: ~/.cache/mpslint/smoke)
    headers_root: Optional[Path] = None   # directory holding c10/metal (default: the linted tree, else torch)
    reference_for: Optional[Callable[[str], Optional[Reference]]] = None
    progress: bool = False                # show progress on stderr when it is a terminal
    build_timeout: float = 900.0          # seconds per compiler step
    specs: list = field(default_factory=list)   # TOML spec files or directories (before the shipped library)
    builtin_specs: bool = True            # also look kernels up in the spec library shipped with mpslint
    large_index: bool = False             # run only the [kernel.large] launches of specs (SMK405), see large.py


@dataclass(frozen=True)
class SmokeOutcome:
    code: Optional[str]
    status: str                           # "passed" | "failed" | "skipped" | "no-reference"
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    kernel: str
    op: str
    dtype: str
    variant: str
    message: str
    backend_label: str

    @property
    def title(self) -> str:
        return CODES.get(self.code or "", self.status)


@dataclass
class SmokeSummary:
    files: int = 0
    kernels: int = 0
    variants_run: int = 0
    passed: int = 0
    failed: int = 0
    no_reference: int = 0
    skipped: int = 0
    skipped_reasons: dict = field(default_factory=dict)   # reason -> count
    by_code: dict = field(default_factory=dict)           # code -> count


@dataclass
class SmokeReport:
    outcomes: list
    backend_label: str
    files: list = field(default_factory=list)             # per-file dicts: path, kernels, cached, seconds, status
    errors: list = field(default_factory=list)            # internal errors of the runner (exit 2), one line each

    @property
    def findings(self) -> list:
        return [o for o in self.outcomes if o.code is not None]

    def summary(self) -> SmokeSummary:
        s = SmokeSummary(files=len(self.files))
        s.kernels = len({(o.path, o.kernel) for o in self.outcomes if o.kernel})
        reasons: Counter = Counter()
        codes: Counter = Counter()
        for o in self.outcomes:
            if o.status == "skipped":
                s.skipped += 1
                reasons[_reason_key(o.message)] += 1
                continue
            if o.code == SMK401:
                s.failed += 1
                codes[o.code] += 1
                continue
            s.variants_run += 1
            if o.status == "passed":
                s.passed += 1
            elif o.status == "no-reference":
                s.no_reference += 1
            elif o.status == "failed":
                s.failed += 1
                codes[o.code] += 1
        s.skipped_reasons = dict(reasons.most_common())
        s.by_code = dict(codes)
        return s

    def format_summary(self) -> str:
        s = self.summary()
        rows = [("backend", self.backend_label), ("files", s.files), ("kernels", s.kernels),
                ("variants run", s.variants_run), ("passed", s.passed), ("failed", s.failed),
                ("no reference", s.no_reference), ("skipped", s.skipped)]
        rows += [(f"  {CODES[c]} ({c})", n) for c, n in sorted(s.by_code.items())]
        rows += [(f"  skipped: {r}", n) for r, n in s.skipped_reasons.items()]
        w = max(len(str(r[0])) for r in rows)
        return "\n".join(f"{str(k).ljust(w)}  {v}" for k, v in rows)


def _reason_key(msg: str) -> str:
    import re
    return re.sub(r"`[^`]*`", "`…`", msg.split(";")[0].split(" (")[0])[:90]


def choose_backend(name: str):
    """The backend object for `name` ("auto" picks Metal on a Mac with MPS, else the host backend)."""
    from .host_backend import HostBackend
    from .metal_backend import MetalBackend
    if name == "host":
        return HostBackend()
    if name == "metal":
        return MetalBackend()
    if name != "auto":
        raise ValueError(f"unknown smoke backend {name!r} (auto, host, metal)")
    if sys.platform == "darwin" and MetalBackend.usable() is None:
        return MetalBackend()
    return HostBackend()


def run_smoke(paths: list, options: Optional[SmokeOptions] = None) -> SmokeReport:
    """Compile and smoke-run every registered kernel variant of the given .metal files."""
    from .engine import Engine
    options = options or SmokeOptions()
    backend = choose_backend(options.backend)
    report = Engine(backend, options).run([Path(p) for p in paths])
    if options.large_index:
        from .links import link_mtl204
        try:
            report.outcomes = link_mtl204(report.outcomes)
        except Exception as e:   # the lint behind the link failed: an error of the run, reported, not hidden
            report.errors.append(f"linking SMK405 to MTL204 failed: {type(e).__name__}: {e}")
    return report
