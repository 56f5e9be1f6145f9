"""On-disk cache of per-file facts, keyed by content.

An entry holds what ``project.file_facts(src)`` returned for one file.  Its key is a SHA-256 over

- a fingerprint of the code that computes facts: mpslint's version, ``FACTS_SCHEMA``, the bytes of
  mpslint's own modules (``mpslint/*.py``, ``mpslint/facts/*.py``) and the installed tree-sitter,
  tree-sitter-cpp and PyYAML (their module files' size and mtime), so editing the analysis or
  upgrading a parser never serves stale facts;
- the file's kind, its reported path (facts carry it) and the SHA-1 of its bytes.

Layout: ``<cache dir>/facts/<key[:2]>/<key>.pkl``; each file is a pickle of
``(MAGIC, FACTS_SCHEMA, key, facts)``.  Entries are written to a temporary file in the same
directory and moved into place with ``os.replace``, so two runs sharing the directory only ever
see whole entries (the last writer wins; both wrote the same facts).  Anything unreadable (a
truncated or corrupt file, another version's entry, a wrong type) is a cache miss, never an
error; failing to write (read-only directory, full disk) only costs the speed-up.

Only point ``--cache-dir`` at a directory you own: entries are pickles, and loading a pickle
runs code chosen by whoever wrote it.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from pathlib import Path

from . import __version__

FACTS_SCHEMA = 1  # bump when the shape of the facts dataclasses changes without a source change
MAGIC = "mpslint-facts"
ENV_VAR = "MPSLINT_CACHE_DIR"
DEFAULT_DIR_NAME = ".mpslint_cache"

_FINGERPRINT: str | None = None


def code_fingerprint() -> str:
    """Hash of everything that decides what the facts of a file are (computed once per process)."""
    global _FINGERPRINT
    if _FINGERPRINT is not None:
        return _FINGERPRINT
    import importlib.util

    h = hashlib.sha256()
    h.update(f"{__version__}\0{FACTS_SCHEMA}\0".encode())
    pkg = Path(__file__).resolve().parent
    for p in sorted([*pkg.glob("*.py"), *(pkg / "facts").glob("*.py"), *(pkg / "semantic").glob("*.py")]):
        try:
            h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
        except OSError:
            h.update(p.name.encode() + b"\0?\0")
    for mod in ("tree_sitter", "tree_sitter_cpp", "yaml"):
        try:
            spec = importlib.util.find_spec(mod)  # finds, does not import
            st = os.stat(spec.origin) if spec is not None and spec.origin else None
            h.update(f"{mod}:{st.st_size}:{st.st_mtime_ns}\0".encode() if st else f"{mod}:-\0".encode())
        except (ImportError, ValueError, OSError):
            h.update(f"{mod}:?\0".encode())
    _FINGERPRINT = h.hexdigest()
    return _FINGERPRINT


def resolve_cache_dir(option: str | None, no_cache: bool, root: Path) -> Path | None:
    """``--cache-dir`` wins, then ``$MPSLINT_CACHE_DIR``, then ``<root>/.mpslint_cache``; None with ``--no-cache``."""
    if no_cache:
        return None
    if option:
        return Path(option)
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    return Path(root) / DEFAULT_DIR_NAME


def _expected_types(kind: str) -> tuple[type, ...]:
    from .facts.host import HostFacts
    from .facts.metal import MetalFacts
    from .facts.native_functions import NativeFunctions
    from .facts.python_src import PythonFacts

    return {
        "metal": (MetalFacts,),
        "host": (HostFacts,),
        "python": (PythonFacts,),
        "common_mps": (PythonFacts,),
        "yaml": (NativeFunctions,),
    }.get(kind, ())


def facts_key(fingerprint: str, path: str, kind: str, sha: str) -> str:
    return hashlib.sha256(f"{fingerprint}\0{kind}\0{path}\0{sha}".encode()).hexdigest()


def dumps_entry(key: str, facts) -> bytes:
    return pickle.dumps((MAGIC, FACTS_SCHEMA, key, facts), protocol=pickle.HIGHEST_PROTOCOL)


def loads_entry(data: bytes, key: str, kind: str):
    """The facts in a serialized entry, or None when it is not a valid entry for ``key``."""
    try:
        obj = pickle.loads(data)
    except Exception:  # truncated, corrupt, written by another version: a miss
        return None
    if not (isinstance(obj, tuple) and len(obj) == 4 and obj[0] == MAGIC and obj[1] == FACTS_SCHEMA and obj[2] == key):
        return None
    facts = obj[3]
    types = _expected_types(kind)
    if not types or type(facts) not in types:
        return None
    return facts


def atomic_write(path: Path, data: bytes) -> bool:
    """Write ``data`` to ``path`` through a temporary file and ``os.replace``; False on any failure."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".part")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
        return True
    except Exception:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
        return False


class FactsCache:
    """Per-file facts by content hash in ``directory`` (created on first write)."""

    def __init__(self, directory: str | os.PathLike):
        self.dir = Path(directory)
        self.fingerprint = code_fingerprint()
        self.hits = 0
        self.misses = 0
        self.writes = 0
        self.write_failures = 0
        self._prepared = False

    def key(self, src) -> str:
        return facts_key(self.fingerprint, src.path, src.kind, src.sha)

    def entry_path(self, key: str) -> Path:
        return self.dir / "facts" / key[:2] / f"{key}.pkl"

    def get(self, src):
        """Cached facts of ``src`` or None (a miss: absent, unreadable, corrupt or stale)."""
        if not src.sha:
            self.misses += 1
            return None
        key = self.key(src)
        try:
            with open(self.entry_path(key), "rb") as fh:
                data = fh.read()
        except OSError:
            self.misses += 1
            return None
        facts = loads_entry(data, key, src.kind)
        if facts is None:
            self.misses += 1
        else:
            self.hits += 1
        return facts

    def put(self, src, facts) -> None:
        if not src.sha:
            return
        key = self.key(src)
        try:
            data = dumps_entry(key, facts)
        except Exception:  # an unpicklable fact is a bug elsewhere; the run goes on uncached
            self.write_failures += 1
            return
        self.put_bytes(key, data)

    def put_bytes(self, key: str, data: bytes) -> None:
        self.prepare()
        if atomic_write(self.entry_path(key), data):
            self.writes += 1
        else:
            self.write_failures += 1

    def prepare(self) -> None:
        """Create the directory with a ``.gitignore`` and a ``CACHEDIR.TAG`` (as ruff does)."""
        if self._prepared:
            return
        self._prepared = True
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
            gi = self.dir / ".gitignore"
            if not gi.exists():
                atomic_write(gi, b"# Automatically created by mpslint.\n*\n")
            tag = self.dir / "CACHEDIR.TAG"
            if not tag.exists():
                atomic_write(tag, b"Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by mpslint.\n")
        except OSError:
            pass
