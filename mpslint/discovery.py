"""Find the files to lint: Metal, host code under ``mps`` folders, the yaml, ``common_mps.py``."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".tox", ".venv", "venv", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".mpslint_cache"}
HOST_EXT = {".h", ".hpp", ".cpp", ".cc"}
NATIVE_FUNCTIONS_REL = Path("aten/src/ATen/native/native_functions.yaml")


@dataclass(frozen=True)
class Discovered:
    path: str  # as reported
    fs_path: str
    kind: str  # "metal" | "host" | "yaml" | "python" | "common_mps"
    explicit: bool


def kind_of(p: Path, explicit: bool) -> str | None:
    name = p.name
    suffix = p.suffix.lower()
    if suffix == ".metal":
        return "metal"
    if suffix == ".mm":
        return "host"
    if name == "native_functions.yaml":
        return "yaml"
    if name == "common_mps.py":
        return "common_mps"
    if suffix in HOST_EXT and (explicit or "mps" in p.parts[:-1] or (suffix == ".h" and "metal" in p.parts[:-1])):
        return "header" if suffix in (".h", ".hpp") else "host"
    if explicit and suffix == ".py":
        return "python"
    if explicit and suffix in (".yaml", ".yml"):
        return "yaml"
    return None


def _is_build_dir(name: str) -> bool:
    return name in ("build", "dist", "_build", "cmake-build-debug", "cmake-build-release") or name.startswith("build-") or name.endswith(".egg-info")


class _Ignore:
    """``.gitignore`` files met on the way down, through pathspec."""

    def __init__(self):
        self.specs: list[tuple[Path, object]] = []

    def load(self, directory: Path) -> None:
        gi = directory / ".gitignore"
        if gi.is_file():
            try:
                import pathspec

                lines = gi.read_text(encoding="utf-8", errors="replace").splitlines()
                self.specs.append((directory, pathspec.GitIgnoreSpec.from_lines(lines)))
            except Exception:  # a broken .gitignore never stops linting
                pass

    def ignored(self, path: Path, is_dir: bool) -> bool:
        for base, spec in self.specs:
            try:
                rel = path.relative_to(base).as_posix()
            except ValueError:
                continue
            if spec.match_file(rel + ("/" if is_dir else "")):
                return True
        return False


def display_path(p: Path, cwd: Path) -> str:
    try:
        full = p.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        full = Path(os.path.abspath(p))
    try:
        return full.relative_to(cwd).as_posix()
    except ValueError:
        return full.as_posix()


def discover(paths: list[str], cwd: Path | None = None, exclude=None) -> tuple[list[Discovered], list[str]]:
    """Returns (files, problems). Explicit files are always linted; directories are walked."""
    cwd = (cwd or Path.cwd()).resolve()
    out: dict[str, Discovered] = {}
    problems: list[str] = []
    for raw in paths:
        p = Path(raw)
        try:
            p.resolve(strict=True)
        except (OSError, RuntimeError) as e:
            loop = isinstance(e, RuntimeError) or getattr(e, "errno", None) == 40
            problems.append(f"{raw}: {'symlink loop' if loop else 'no such file or directory'}")
            continue
        if p.is_file():
            k = kind_of(p, explicit=True)
            if k is None:
                problems.append(f"{raw}: not a file mpslint lints (.metal, .mm, .h, .cpp, .py, native_functions.yaml)")
                continue
            dp = display_path(p, cwd)
            out[dp] = Discovered(dp, str(p), k, True)
            continue
        ign = _Ignore()
        root = p.resolve()
        # .gitignore files above the root, up to the repository top
        for anc in reversed([root, *root.parents]):
            if (anc / ".git").exists() or anc == root:
                ign.load(anc) if anc != root else None
        seen_dirs: set[tuple[int, int]] = set()
        for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
            d = Path(dirpath)
            try:
                st = d.stat()
                key = (st.st_dev, st.st_ino)
            except OSError:
                continue
            if key in seen_dirs:
                dirnames[:] = []
                continue
            seen_dirs.add(key)
            ign.load(d)
            dirnames[:] = sorted(
                n for n in dirnames if n not in SKIP_DIRS and not _is_build_dir(n) and not ign.ignored(d / n, True)
            )
            for f in sorted(filenames):
                fp = d / f
                k = kind_of(fp.relative_to(root) if fp.is_relative_to(root) else fp, explicit=False)
                if k is None or ign.ignored(fp, False):
                    continue
                if exclude is not None and exclude(display_path(fp, cwd)):
                    continue
                if not fp.is_file():
                    continue
                dp = display_path(fp, cwd)
                out.setdefault(dp, Discovered(dp, str(fp), k, False))
    return [out[k] for k in sorted(out)], problems


def find_native_functions(paths: list[str]) -> Path | None:
    """Walk up from each path to a checkout root holding aten/src/ATen/native/native_functions.yaml."""
    for raw in paths:
        try:
            p = Path(raw).resolve()
        except (OSError, RuntimeError):
            continue
        for anc in [p, *p.parents]:
            cand = anc / NATIVE_FUNCTIONS_REL
            if cand.is_file():
                return cand
            cand2 = anc / "native_functions.yaml"
            if anc.name == "native" and cand2.is_file():
                return cand2
            if (anc / ".git").exists():
                break
    return None


_BINDING_MARKS = (b"PYBIND11_MODULE", b"TORCH_LIBRARY")
_BINDING_EXT = {".cpp", ".cc", ".cxx"}


def binding_siblings(files: list[Discovered], cwd: Path) -> list[Discovered]:
    """C++ files beside the linted ``.mm`` host files that bind operators or Python functions
    (``PYBIND11_MODULE``, ``TORCH_LIBRARY``): read as context, not linted, so the functions they bind are entry
    points. An extension's binding file is rarely under an ``mps`` folder: it sits beside the ``.mm``
    (``csrc/bindings.cpp``) or in a folder beside the ``.mm``'s (``torch-ext/torch_binding.cpp``)."""
    have = {Path(f.fs_path).resolve() for f in files}
    homes = sorted({Path(f.fs_path).resolve().parent for f in files if f.kind == "host" and f.fs_path.endswith(".mm")})
    # PyTorch's own tree binds through native_functions.yaml and REGISTER_DISPATCH; and a folder beside
    # `aten/src/ATen/mps` is `aten/src/ATen/native`, hundreds of C++ files: not read
    homes = [h for h in homes if not ("ATen" in h.parts and "aten" in h.parts)]
    dirs: set[Path] = set(homes)
    for h in homes:  # and the folders beside it: `relu/torch-ext/torch_binding.cpp` for `relu/relu_metal/relu.mm`
        try:
            dirs.update(e for e in h.parent.iterdir() if e.is_dir() and e.name not in SKIP_DIRS)
        except OSError:
            continue
    out: list[Discovered] = []
    for d in sorted(dirs):
        try:
            names = sorted(os.listdir(d))
        except OSError:
            continue
        for name in names:
            fp = d / name
            if fp.suffix.lower() not in _BINDING_EXT or fp in have or not fp.is_file():
                continue
            try:
                with open(fp, "rb") as fh:
                    head = fh.read(1 << 20)
            except OSError:
                continue
            if any(m in head for m in _BINDING_MARKS):
                dp = display_path(fp, cwd)
                out.append(Discovered(dp, str(fp), "host", False))
    return out

