"""Metal backend (macOS with MPS): `xcrun metal -Werror` for compile-only diagnostics, and
`torch.mps.compile_shader` to run the same launch plans as the host backend on the GPU.

NOT RUN ON A MAC: this module was written on Linux.  Its platform-independent parts (include embedding,
parameter parsing, the job protocol it shares with the host runner, the launch plans, references and
judging) are tested on Linux; the parts that call xcrun or MPS have never been executed.  See docs/smoke.md.
Only this backend labels results "metal-compiled".
"""
from __future__ import annotations

import hashlib
import re
import shutil
import sys
import time
from pathlib import Path

from . import analyze, diagnostics, runner, sandbox, toolchain
from .api import METAL_LABEL
from .build import BuildResult

_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"]+)[>"][^\n]*$', re.M)
_TYPE = re.compile(r"^(?:(device|constant|threadgroup|thread)\s+)?(?:const\s+)?([A-Za-z_][\w:]*)\s*(\*|&)?")


def embed_includes(path: Path, roots: list[Path], _seen: set | None = None) -> str:
    """`path` with every #include that resolves under `roots` (or beside the including file) inlined once,
    the way torch embeds c10/metal into its shader sources; <metal_*> and unresolved includes stay."""
    seen = _seen if _seen is not None else set()
    text = Path(path).read_text(errors="replace")

    def repl(m: re.Match) -> str:
        name, quote = m.group(2), m.group(1) == '"'
        cands = ([Path(path).parent / name] if quote else []) + [Path(r) / name for r in roots]
        for c in cands:
            if c.is_file():
                c = c.resolve()
                if c in seen:
                    return f"// (already embedded) {name}"
                seen.add(c)
                body = embed_includes(c, roots, seen)
                body = re.sub(r"^[ \t]*#[ \t]*pragma[ \t]+once[^\n]*$", "", body, flags=re.M)
                return f"// begin {name}\n{body}\n// end {name}"
        return m.group(0)

    return _INCLUDE.sub(repl, text)


def param_info_from_text(text: str, role: int) -> dict:
    """kind/type/size of a kernel parameter from its declaration text (the Metal backend has no host table)."""
    from . import dtypes
    t = " ".join(text.replace("*", " * ").replace("&", " & ").split())
    m = _TYPE.match(t)
    kind, tname = 0, "?"
    if m:
        tname = m.group(2).split("::")[-1]
        kind = 1 if m.group(3) == "*" else 2 if m.group(3) == "&" else 0
    if "*" in t and kind != 1:
        kind = 1
    d = dtypes.lookup(tname)
    size = d.size if d else (0 if tname == "void" else -1)
    return {"role": role, "kind": kind, "type": d.name if d else tname, "size": size, "text": text}


class MetalBackend:
    name = "metal"
    label = METAL_LABEL
    compile_verb = "Metal compile (xcrun metal -Werror)"

    @staticmethod
    def usable() -> str | None:
        if sys.platform != "darwin":
            return "the Metal backend needs macOS (use --backend host on Linux)"
        if shutil.which("xcrun") is None:
            return "the Metal backend needs Xcode's command line tools (xcrun)"
        try:
            import torch
            if not torch.backends.mps.is_available():
                return "torch reports no MPS device"
        except ImportError:
            return "the Metal backend needs torch with MPS"
        return None

    def unavailable(self) -> str | None:
        return self.usable()

    def unsupported_reason(self, d) -> str | None:
        return None

    # ------------------------------------------------------------ compile
    def compile(self, path: Path, options) -> BuildResult:
        t0 = time.monotonic()
        roots = toolchain.include_roots(path, options.headers_root)
        cmd = ["xcrun", "metal", "-Werror", "-c", "-o", "/dev/null", "-fno-color-diagnostics"]
        for r in roots:
            cmd += ["-I", str(r)]
        r = sandbox.run(cmd + [str(path)], timeout=options.build_timeout)
        if r.returncode != 0:
            errs = diagnostics.errors(r.stderr)
            status = "compile-error" if errs else "error"
            return BuildResult(status, str(path), diagnostics=errs, message=r.stderr[-4000:],
                               seconds=time.monotonic() - t0)
        # entry points: analyse Apple's own preprocessor output
        pre = sandbox.run(["xcrun", "metal", "-E", *sum((["-I", str(x)] for x in roots), []), str(path)],
                          timeout=options.build_timeout)
        ana = analyze.entry_points(pre.stdout)
        entries = []
        for e in ana.entries:
            entries.append({"host_name": e.host_name, "base": e.base, "targs": list(e.targs), "fnexpr": e.fnexpr,
                            "path": e.origin.path if e.origin else str(path),
                            "line": e.origin.line if e.origin else 1,
                            "params": [param_info_from_text(p.text, role) for p, role in zip(e.params, e.roles)]})
        src_dir = Path(options.cache_dir or toolchain.default_cache_dir()) / "metal"
        src_dir.mkdir(parents=True, exist_ok=True)
        source = embed_includes(path, roots)
        src_file = src_dir / (hashlib.sha256(source.encode()).hexdigest()[:24] + ".metal")
        src_file.write_text(source)
        problems = [{"host_name": h, "message": m, "path": o.path, "line": o.line} for h, m, o in ana.problems]
        return BuildResult("ok", str(path), so=str(src_file), entries=entries, problems=problems,
                           seconds=time.monotonic() - t0)

    # ------------------------------------------------------------ execute
    def execute(self, compiled: BuildResult, launches: list, options) -> list:
        child = [sys.executable, str(Path(__file__).with_name("_metal_child.py"))]
        # memory_mb=0: the GPU driver maps large address ranges, RLIMIT_AS would break it
        return runner.run_launches(compiled.so, launches, timeout=options.timeout, memory_mb=0,
                                   startup_timeout=120.0, child=child)
