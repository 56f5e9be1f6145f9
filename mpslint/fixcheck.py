"""Checks a fix must pass before the fixer keeps it, beyond "re-parses" and "the finding is gone"
(``complete`` runs the names check when a rule builds its finding: a fix gets the includes its names
need, or is not offered when no include can make them reachable):

- **names** (every file): the fix's new text introduces no name (of mpslint.names' table) that nothing the
  fixed file includes declares, nor an unqualified one its namespaces and ``using`` directives do not reach;
- **compiles** (``.metal`` files, when ``mpslint smoke``'s host toolchain, clang from ``ziglang``, is
  installed): the fixed file compiled with that toolchain (the smoke shim of ``<metal_stdlib>``, the
  c10/metal headers of the checkout or the torch wheel; compiled to an object, so explicit instantiations are
  checked) has no error the original did not have. Errors are compared by message, not by line (a fix
  that adds an include moves every line). Without the toolchain this check is skipped, not failed.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from pathlib import Path

from . import names

COMPILE_TIMEOUT = 120.0


def undeclared_names(before: str, edits, after: str, kind: str, includes=None) -> list[str]:
    """Names ``edits`` (applied to ``before``, giving ``after``) introduce that ``after`` cannot reach."""
    pairs = [(before[e.start : e.end], e.content) for e in edits]
    return names.undeclared(pairs, after, includes, metal=kind == "metal")


def complete(ctx, fix, scopes: dict):
    """``fix`` as a rule may offer it: with the ``#include`` lines added that the names it writes need
    (mpslint.names), or None when that cannot make them reachable (Metal embedded in a string, an
    unqualified name whose namespace the file does not open or use). ``scopes`` caches one
    ``names.Scope`` per file (and Metal piece) for a run."""
    from dataclasses import replace

    from .fixedits import include_edit

    project = ctx.project
    by_piece: dict[tuple, list] = {}
    for e in fix.edits:
        src = project.sources.get(e.path)
        if src is None or src.kind not in ("host", "metal"):
            continue
        piece = next(((m.base, m.end) for m in project.metals.get(e.path, ()) if m.embedded and m.base <= e.start < m.end), None)
        by_piece.setdefault((e.path, piece), []).append(e)
    added = []
    for (path, piece), edits in by_piece.items():
        src = project.sources[path]
        hf = project.hosts.get(path)
        key = (path, piece)
        if key not in scopes:
            text = src.text if piece is None else src.text[piece[0] : piece[1]]
            includes = [i.header for i in hf.includes] if hf is not None and piece is None else None
            scopes[key] = names.scope_of(text, includes)
        pairs = [(src.text[e.start : e.end], e.content) for e in edits]
        metal = src.kind == "metal" or piece is not None
        scope = names.with_added(scopes[key], pairs)
        missing = names.undeclared_in(pairs, scope, metal)
        if not missing:
            continue
        if piece is not None:
            return None  # no include is added inside a string by this generic step
        headers = sorted({names.DECLARES[n] for n in missing})
        extra = [(None, f"#include <{h}>") for h in headers]
        if names.undeclared_in(pairs, names.with_added(scope, extra), metal):
            return None  # an unqualified name the header alone does not make visible
        added += [include_edit(ctx, path, hf.includes if hf is not None else None, h) for h in headers]
    if not added:
        return fix
    return replace(fix, edits=tuple(added) + tuple(fix.edits), message=fix.message + " (and add " + ", ".join(e.content.strip() for e in added) + ")")


def toolchain_available() -> bool:
    try:
        from .smoke import toolchain
    except Exception:  # the smoke extra is not installed
        return False
    return toolchain.have_ziglang()


def compile_errors(text: str, fs_path: str, timeout: float = COMPILE_TIMEOUT) -> list[str] | None:
    """The error messages of compiling ``text`` as if it were the Metal file at ``fs_path`` (its includes
    resolved from there), or None when it cannot be compiled here (no toolchain, a timeout)."""
    if not toolchain_available():
        return None
    from .smoke import build, diagnostics, sandbox, toolchain
    from .smoke.rewrite import rewrite_source

    original = Path(fs_path).resolve()
    roots = toolchain.include_roots(original) + [original.parent]
    work = Path(tempfile.mkdtemp(prefix="mpslint-fixcheck-"))
    try:
        main = work / "src" / original.name
        main.parent.mkdir(parents=True)
        main.write_text(rewrite_source(text, str(original)))
        for h in build.scan_includes(main, roots):
            for target in build.mirror_targets(h, main, roots):
                dst = work / target
                if not dst.exists():
                    dst.parent.mkdir(parents=True, exist_ok=True)
                    dst.write_text(rewrite_source(h.read_text(errors="replace"), str(h)))
        incs = ["-I", str(toolchain.SHIM_INCLUDE), "-I", str(main.parent)]
        for i, r in enumerate(roots):
            incs += ["-I", str(work / f"inc{i}"), "-idirafter", str(r)]
        cmd = toolchain.compiler_command() + build.KERNEL_FLAGS + ["-O0", "-c", "-o", str(work / "out.o")] + incs + ["-x", "c++", str(main)]
        res = sandbox.run(cmd, timeout=timeout)
        if res.timed_out:
            return None
        return [d.message for d in diagnostics.errors(res.stderr)]
    except (OSError, toolchain.ToolchainMissing):
        return None
    finally:
        shutil.rmtree(work, ignore_errors=True)


def new_compile_errors(before: str, after: str, fs_path: str) -> list[str] | None:
    """Errors compiling ``after`` has that compiling ``before`` does not (None: not checked)."""
    old = compile_errors(before, fs_path)
    if old is None:
        return None
    new = compile_errors(after, fs_path)
    if new is None:
        return None
    return list((Counter(new) - Counter(old)).elements())
