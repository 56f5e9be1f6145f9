"""Locate the host compiler (clang from the `ziglang` PyPI package) and the c10/metal headers."""
from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
SHIM_DIR = PACKAGE_DIR / "shim"
SHIM_INCLUDE = SHIM_DIR / "include"
RT_SOURCE = SHIM_DIR / "rt" / "msl_rt.cpp"
SHIM_VERSION = "1"      # bump when the shim or the runtime protocol changes in a way file hashes do not show


class ToolchainMissing(RuntimeError):
    pass


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):     # a blocked or half-removed module
        return False


def have_ziglang() -> bool:
    return _importable("ziglang")


def have_torch() -> bool:
    return _importable("torch")


def compiler_command() -> list[str]:
    if not have_ziglang():
        raise ToolchainMissing("the host backend needs clang from the `ziglang` package: pip install ziglang")
    return [sys.executable, "-m", "ziglang", "c++"]


def compiler_version() -> str:
    try:
        from importlib.metadata import version
        return "ziglang-" + version("ziglang")
    except Exception:   # pragma: no cover - metadata missing in odd installs
        return "ziglang-unknown"


def torch_include_dir() -> Path | None:
    """The wheel's include dir (holds c10/metal), found without importing torch."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        inc = Path(loc) / "include"
        if (inc / "c10" / "metal").is_dir():
            return inc
    return None


def find_tree_root(path: Path) -> Path | None:
    """Walk up from `path` to a directory containing c10/metal (a PyTorch checkout)."""
    for parent in [path.parent, *path.parents]:
        if (parent / "c10" / "metal").is_dir():
            return parent
    return None


def include_roots(metal_file: Path, headers_root: Path | None = None) -> list[Path]:
    """Include directories for one .metal file: the c10/metal provider first, then aten/src in a checkout."""
    roots: list[Path] = []
    if headers_root is not None:
        roots.append(Path(headers_root))
    else:
        tree = find_tree_root(metal_file.resolve())
        if tree is not None:
            roots.append(tree)
        else:
            inc = torch_include_dir()
            if inc is not None:
                roots.append(inc)
    for parent in metal_file.resolve().parents:   # a checkout (or a partial mirror) of aten/src
        if (parent / "aten" / "src" / "ATen").is_dir():
            roots.append(parent / "aten" / "src")
            break
    out, seen = [], set()
    for r in roots:
        key = str(r.resolve())
        if key not in seen:
            seen.add(key)
            out.append(r.resolve())
    return out


def shim_digest() -> str:
    h = hashlib.sha256(SHIM_VERSION.encode())
    for p in sorted(SHIM_DIR.rglob("*")):
        if p.is_file() and p.suffix not in (".py", ".pyc"):
            h.update(str(p.relative_to(SHIM_DIR)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def default_cache_dir() -> Path:
    base = os.environ.get("MPSLINT_CACHE_DIR")
    if base:
        return Path(base) / "smoke"
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "mpslint" / "smoke"
