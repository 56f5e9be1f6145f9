"""Build one .metal file into a host shared library (clang from ziglang), cached by content hash.

Steps: scan the includes -> mirror the file and its headers, rewritten (rewrite.py) -> preprocess with
-DMSL_ANALYZE and find the entry points (analyze.py) -> generate trampolines (trampoline.py) -> compile and
link with the fiber runtime -> ask a sandboxed child for the parameter table.  The cache key covers the
source, every header it includes (transitively), the shim and runtime, the compiler version and the flags;
a hit costs one directory lookup.  Failures are cached too.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import analyze, diagnostics, sandbox, toolchain, trampoline
from .rewrite import rewrite_source

BASE_FLAGS = ["-std=c++20", "-fPIC", "-w", "-Wno-unknown-attributes", "-Xclang", "-ffloat16-excess-precision=none",
              "-g0", "-fno-strict-aliasing", "-D__METAL__=1", "-D__METAL_VERSION__=310", "-fno-color-diagnostics",
              "-fno-caret-diagnostics", "-ferror-limit=50"]
# PyTorch's shared headers use `constant`/`device` before anything includes <metal_stdlib>: force it first.
KERNEL_FLAGS = BASE_FLAGS + ["-include", "metal_stdlib"]
DEFAULT_OPT = "-O1"
_INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
_HEADER_EXT = (".h", ".hpp", ".inc", ".metal", ".hh", ".cuh")
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


@dataclass
class BuildResult:
    status: str                       # "ok" | "compile-error" | "unloadable" (the kernel's own statics) | "error"
    source: str                       # the .metal path as given
    so: str | None = None
    entries: list = field(default_factory=list)        # dicts: host_name, base, targs, line, path, params
    diagnostics: list = field(default_factory=list)    # diagnostics.Diagnostic (errors)
    problems: list = field(default_factory=list)       # dicts: host_name, message, line
    message: str = ""
    cached: bool = False
    seconds: float = 0.0
    key: str = ""


# ---------------------------------------------------------------- include scan / mirror
def _resolve(name: str, quote: bool, including: Path, roots: list[Path]) -> Path | None:
    cands = ([including.parent / name] if quote else []) + [r / name for r in roots]
    for c in cands:
        if c.is_file():
            return c.resolve()
    return None


def scan_includes(metal_file: Path, roots: list[Path]) -> list[Path]:
    """Every file under the include roots (or beside the source) that `metal_file` includes, transitively.
    Conditional compilation is ignored: the result may over-approximate, which is safe for a cache key."""
    seen: dict[Path, None] = {}
    todo = [metal_file.resolve()]
    while todo:
        f = todo.pop()
        try:
            text = f.read_text(errors="replace")
        except OSError:
            continue
        for m in _INCLUDE.finditer(text):
            name = m.group(2)
            if name.startswith("metal_") or (toolchain.SHIM_INCLUDE / name).exists():
                continue
            p = _resolve(name, m.group(1) == '"', f, roots)
            if p is not None and p not in seen and p != metal_file.resolve():
                seen[p] = None
                todo.append(p)
    return list(seen)


def _src_anchor(metal_file: Path) -> Path:
    parts = metal_file.resolve().parent.parts[-3:]
    return Path("src", *[p.strip("/") or "_" for p in parts])


def mirror_targets(h: Path, metal_file: Path, roots: list[Path]) -> list[Path]:
    """Every place inside the build directory where header `h` must appear so that each way of including it
    finds the rewritten copy before the original (which stays reachable only through -idirafter): under every
    include root that contains it (`<ATen/native/mps/kernels/X.h>` with roots /tree and /tree/aten/src needs
    inc1/ATen/...), and beside the mirrored source when it lives in the source's directory ("X.h")."""
    out = []
    for i, r in enumerate(roots):
        try:
            out.append(Path(f"inc{i}") / h.relative_to(r))
        except ValueError:
            continue
    try:
        out.append(_src_anchor(metal_file) / h.relative_to(metal_file.resolve().parent))
    except ValueError:
        pass
    return out or [Path("extra") / h.name]


def mirror_plan(metal_file: Path, roots: list[Path], headers: list[Path]) -> dict[Path, Path]:
    """original file -> (first) path inside the build directory; see mirror_targets for all of them."""
    plan = {metal_file.resolve(): _src_anchor(metal_file) / metal_file.name}
    for h in headers:
        plan[h] = mirror_targets(h, metal_file, roots)[0]
    return plan


# the Python that turns a source into the built library: a change in any of them changes what a build means
_GENERATORS = ("build.py", "rewrite.py", "analyze.py", "trampoline.py", "textutil.py")


def generator_digest() -> str:
    h = hashlib.sha256()
    for name in _GENERATORS:
        h.update(name.encode())
        h.update((Path(__file__).parent / name).read_bytes())
    return h.hexdigest()


def cache_key(metal_file: Path, plan: dict[Path, Path], flags: list[str]) -> str:
    h = hashlib.sha256()
    h.update(toolchain.shim_digest().encode())
    h.update(generator_digest().encode())
    h.update(toolchain.compiler_version().encode())
    h.update(json.dumps(flags).encode())
    h.update(str(metal_file.resolve()).encode())
    for orig, rel in sorted(plan.items(), key=lambda kv: str(kv[1])):
        h.update(str(rel).encode())
        h.update(str(orig).encode())
        h.update(orig.read_bytes())
    return h.hexdigest()[:24]


# ---------------------------------------------------------------- runtime object (shared by all builds)
def _runtime_object(cache_dir: Path, opt: str, timeout: float) -> tuple[Path | None, str]:
    key = hashlib.sha256((toolchain.shim_digest() + toolchain.compiler_version() + opt).encode()).hexdigest()[:16]
    obj = cache_dir / f"msl_rt-{key}.o"
    with _lock_for(str(obj)):
        if obj.exists():
            return obj, ""
        tmp = obj.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp.o")
        cmd = toolchain.compiler_command() + BASE_FLAGS + [opt, "-c", "-I", str(toolchain.SHIM_INCLUDE),
                                                            "-o", str(tmp), str(toolchain.RT_SOURCE)]
        r = sandbox.run(cmd, timeout=timeout)
        if r.returncode != 0 or not tmp.exists():
            return None, r.stderr or ("timeout" if r.timed_out else "runtime build failed")
        os.replace(tmp, obj)
        return obj, ""


def _lock_for(key: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


# ---------------------------------------------------------------- build
def build(metal_file: Path, *, cache_dir: Path | None = None, headers_root: Path | None = None,
          opt: str = DEFAULT_OPT, timeout: float = 600.0, memory_mb: int = 0) -> BuildResult:
    t0 = time.monotonic()
    metal_file = Path(metal_file)
    cache_dir = Path(cache_dir) if cache_dir else toolchain.default_cache_dir()
    cache_dir.mkdir(parents=True, exist_ok=True)
    try:
        cxx = toolchain.compiler_command()
    except toolchain.ToolchainMissing as e:
        return BuildResult("error", str(metal_file), message=str(e))
    roots = toolchain.include_roots(metal_file, headers_root)
    headers = scan_includes(metal_file, roots)
    plan = mirror_plan(metal_file, roots, headers)
    flags = KERNEL_FLAGS + [opt]
    key = cache_key(metal_file, plan, flags)
    final = cache_dir / key
    with _lock_for(key):
        if (final / "manifest.json").exists():
            res = _load_manifest(final, metal_file)
            res.cached = True
            res.seconds = time.monotonic() - t0
            return res
        work = Path(tempfile.mkdtemp(prefix=f"{key}.", dir=cache_dir))
        try:
            res = _build_in(work, metal_file, roots, plan, cxx, flags, cache_dir, opt, timeout, memory_mb)
            res.key = key
            if res.status in ("error", "unloadable"):   # not cached: toolchain trouble, or limits that may change
                res.seconds = time.monotonic() - t0
                return res
            _save_manifest(work, res)
            try:
                os.replace(work, final)
            except OSError:                     # another process won the race: use its result
                shutil.rmtree(work, ignore_errors=True)
            res = _load_manifest(final, metal_file)
        finally:
            if work.exists():
                shutil.rmtree(work, ignore_errors=True)
    res.seconds = time.monotonic() - t0
    return res


def _build_in(work: Path, metal_file: Path, roots: list[Path], plan: dict[Path, Path], cxx: list[str],
              flags: list[str], cache_dir: Path, opt: str, timeout: float, memory_mb: int) -> BuildResult:
    src_path = str(metal_file)
    main_rel = plan[metal_file.resolve()]
    for orig, rel in plan.items():
        text = rewrite_source(orig.read_text(errors="replace"), str(orig))
        for target in [rel] if rel == main_rel else mirror_targets(orig, metal_file, roots):
            dst = work / target
            if dst.exists():
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            dst.write_text(text)
    incs = ["-I", str(toolchain.SHIM_INCLUDE), "-I", str((work / main_rel).parent)]
    for i, r in enumerate(roots):
        incs += ["-I", str(work / f"inc{i}")]
        incs += ["-idirafter", str(r)]        # headers the scan missed (macro includes) still resolve
    incs += ["-idirafter", str(metal_file.resolve().parent)]
    main = work / main_rel
    # 1. preprocess for analysis
    pre = sandbox.run(cxx + flags + ["-E", "-DMSL_ANALYZE"] + incs + ["-x", "c++", str(main)],
                      timeout=timeout, memory_mb=memory_mb)
    if pre.timed_out:
        return BuildResult("error", src_path, message=f"preprocessing timed out after {timeout:.0f}s")
    if pre.returncode != 0:
        return BuildResult("compile-error", src_path, diagnostics=diagnostics.errors(pre.stderr),
                           message=pre.stderr[-4000:])
    ana = analyze.entry_points(pre.stdout)
    problems = [{"host_name": h, "message": m, "path": o.path, "line": o.line} for h, m, o in ana.problems]
    gen = work / "trampolines.cpp"
    gen.write_text(trampoline.generate(str(main), ana.entries))
    # 2. compile + link
    rt_obj, rt_err = _runtime_object(cache_dir, opt, timeout)
    if rt_obj is None:
        return BuildResult("error", src_path, message="host runtime failed to build:\n" + rt_err[-4000:])
    so = work / "kernels.so"
    cc = sandbox.run(cxx + flags + ["-shared", "-o", str(so)] + incs + ["-x", "c++", str(gen), "-x", "none",
                                                                       str(rt_obj)],
                     timeout=timeout, memory_mb=memory_mb)
    if cc.timed_out:
        return BuildResult("error", src_path, message=f"compile timed out after {timeout:.0f}s")
    if cc.returncode != 0 or not so.exists():
        errs = drop_trampoline_cascades(diagnostics.errors(cc.stderr))
        if not errs:
            return BuildResult("error", src_path, message=cc.stderr[-4000:] or "compiler failed")
        return BuildResult("compile-error", src_path, diagnostics=errs, message=cc.stderr[-4000:])
    # 3. parameter table, read by a sandboxed child (a broken static initializer cannot hurt us)
    table_path = work / "table.json"
    d = sandbox.run(child_command("describe", str(so), str(table_path)), timeout=60, memory_mb=2048)
    if d.returncode != 0 or not table_path.exists():
        # the library's static data and initializers are the file's: a load failing under the kernel process's
        # limits is what this file cannot be run for (a "skipped" reason), not an error of the toolchain
        return BuildResult("unloadable", src_path, message="loading the built library failed:\n" + d.stderr[-2000:])
    table = {t["host_name"]: t["params"] for t in json.loads(table_path.read_text())}
    entries = []
    for e in ana.entries:
        ps = table.get(e.host_name, [])
        entries.append({
            "host_name": e.host_name, "base": e.base, "targs": list(e.targs), "fnexpr": e.fnexpr,
            "path": e.origin.path if e.origin else src_path, "line": e.origin.line if e.origin else 1,
            "params": [dict(p, text=e.params[i].text) for i, p in enumerate(ps)],
        })
    return BuildResult("ok", src_path, so="kernels.so", entries=entries, problems=problems)


_TRAMPOLINE_MISMATCH = re.compile(r"address of overloaded function '([^']+)' does not match required type")


def drop_trampoline_cascades(errs: list) -> list:
    """A kernel template whose instantiation failed also fails to bind in its trampoline ("address of overloaded
    function 'k' does not match required type ..."): drop that echo when another error already names `k`.  Alone,
    it stays (a registration whose parameter list matches no template)."""
    others = [d for d in errs if not _TRAMPOLINE_MISMATCH.search(d.message)]
    if not others:
        return errs
    text = " ".join(d.message + " " + " ".join(n.message for n in d.notes) for d in others)
    return [d for d in errs if not (m := _TRAMPOLINE_MISMATCH.search(d.message)) or m.group(1) not in text]


def child_command(*args: str) -> list[str]:
    import sys
    return [sys.executable, "-I", "-S", str(Path(__file__).with_name("_child.py")), *args]


def _save_manifest(work: Path, res: BuildResult) -> None:
    data = {
        "status": res.status, "so": res.so, "entries": res.entries, "problems": res.problems,
        "message": res.message, "key": res.key,
        "diagnostics": [_diag_to_json(d) for d in res.diagnostics],
    }
    (work / "manifest.json").write_text(json.dumps(data))


def _diag_to_json(d: diagnostics.Diagnostic) -> dict:
    return {"path": d.path, "line": d.line, "column": d.column, "severity": d.severity, "message": d.message,
            "notes": [_diag_to_json(n) for n in d.notes], "included_from": [list(x) for x in d.included_from]}


def _diag_from_json(j: dict) -> diagnostics.Diagnostic:
    return diagnostics.Diagnostic(j["path"], j["line"], j["column"], j["severity"], j["message"],
                                  [_diag_from_json(n) for n in j["notes"]],
                                  [tuple(x) for x in j["included_from"]])


def _load_manifest(final: Path, metal_file: Path) -> BuildResult:
    j = json.loads((final / "manifest.json").read_text())
    so = str(final / j["so"]) if j.get("so") else None
    return BuildResult(j["status"], str(metal_file), so=so, entries=j["entries"],
                       diagnostics=[_diag_from_json(d) for d in j["diagnostics"]], problems=j["problems"],
                       message=j["message"], key=j.get("key", final.name))
