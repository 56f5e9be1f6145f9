"""The language server's analysis (``mpslint.server.workspace``) gives what ``mpslint check`` gives.

Linting one file in its dispatch-graph neighbourhood must report exactly the whole tree's findings for
that file, for every fixture file, with the default and with every rule selected.
"""

from __future__ import annotations

import pytest

from mpslint.engine import LintOptions, lint
from mpslint.server.workspace import Settings, Workspace

from .conftest import FIXTURES


@pytest.mark.parametrize("select", [None, ["ALL"]], ids=["default", "ALL"])
def test_every_fixture_file_linted_alone_matches_check(select, tmp_path):
    root = FIXTURES / "aten"
    full = lint(LintOptions(paths=[str(root)], cwd=root, select=select))
    for scope in ("neighbourhood", "tree") if select is None else ("neighbourhood",):
        ws = Workspace(root, Settings(select=select, scope=scope, no_cache=True))
        assert len(ws.entries) >= 25 and not ws.problems
        for path, entry in sorted(ws.entries.items()):
            want = [f for f in full.findings if f.path == path]
            got = ws.lint(entry.discovered.fs_path)
            assert got.findings == want, f"{scope}: {path}"
            assert not got.internal


def test_buffer_update_reanalyses_only_that_file(tmp_path):
    import shutil

    root = tmp_path / "aten"
    shutil.copytree(FIXTURES / "aten", root)
    ws = Workspace(root, Settings(no_cache=True))
    shape = root / "src/ATen/native/mps/operations/Shape.mm"
    before = {p: e.facts for p, e in ws.entries.items()}
    changed, internal = ws.update(str(shape), shape.read_text(encoding="utf-8"))
    assert (changed, internal) == (False, [])  # the same text: nothing recomputed
    text = shape.read_text(encoding="utf-8").replace("static_cast<uint32_t>(in.numel())", "in.numel()")
    changed, internal = ws.update(str(shape), text)
    assert changed and not internal
    rel = ws.path_of(str(shape))
    assert [p for p, e in ws.entries.items() if e.facts is not before[p]] == [rel]
    assert shape.read_text(encoding="utf-8") != text  # the buffer is never written
    changed, _ = ws.update(str(shape), "\x00binary")
    assert changed and rel not in ws.entries and ws.lint(str(shape)).errors[0].fatal
    changed, _ = ws.update(str(shape), None)  # closed: the file on disk again
    assert changed and ws.entries[rel].source.text == shape.read_text(encoding="utf-8")


def test_compile_shader_python_is_linted_and_dropped_when_closed():
    from collections import Counter
    from pathlib import Path

    from mpslint.expectations import annotations

    ws = Workspace(FIXTURES / "aten", Settings(select=["ALL"], no_cache=True))
    for py in sorted((FIXTURES / "py").glob("*.py")):
        assert ws.update(str(py), py.read_text(encoding="utf-8"))[0]
        got = Counter((f.span.line, f.code) for f in ws.lint(str(py)).findings)
        assert got == annotations(Path(py))[0], py.name
        changed, _ = ws.update(str(py), None)  # closed: not part of the tree, so no longer context
        assert changed and ws.path_of(str(py)) not in ws.entries


def test_tool_mpslint_configuration_applies(tmp_path):
    import shutil

    root = tmp_path / "aten"
    shutil.copytree(FIXTURES / "aten", root)
    shape = root / "src/ATen/native/mps/operations/Shape.mm"
    before = {f.code for f in Workspace(root, Settings(no_cache=True)).lint(str(shape)).findings}
    assert {"MPS102", "MPS110"} <= before
    (root / "pyproject.toml").write_text(
        '[tool.mpslint]\nignore = ["MPS102"]\nper-file-ignores = { "*/Shape.mm" = ["MPS110"] }\n', encoding="utf-8")
    ws = Workspace(root, Settings(no_cache=True))
    after = {f.code for f in ws.lint(str(shape)).findings}
    assert after == before - {"MPS102", "MPS110"}
    # the client's selection replaces the file's, as --select does on the command line
    only = Workspace(root, Settings(no_cache=True, select=["MPS102"]))
    assert {f.code for f in only.lint(str(shape)).findings} == {"MPS102"}
    (root / "pyproject.toml").write_text("[tool.mpslint]\nbogus = 1\n", encoding="utf-8")
    broken = Workspace(root, Settings(no_cache=True))
    assert broken.problems and "unknown [tool.mpslint] keys" in broken.problems[0]
    assert {f.code for f in broken.lint(str(shape)).findings} == before


def test_wheel_tree_with_fixture_sources_matches_check(real_tree, tmp_path):
    """The torch wheel's real yaml and MPS headers (helpers every operation calls, DispatchStub
    declarations) with the fixtures' operations and kernels in it: the neighbourhood of every file with a
    finding gives that file's findings of the whole-tree run."""
    import shutil

    root = tmp_path / "tree"
    shutil.copytree(real_tree, root)
    native = root / "aten/src/ATen/native/mps"
    for sub in ("operations", "kernels"):
        (native / sub).mkdir(parents=True, exist_ok=True)
        for f in (FIXTURES / "aten/src/ATen/native/mps" / sub).iterdir():
            shutil.copy(f, native / sub / f.name)
    full = lint(LintOptions(paths=[str(root)], cwd=root, select=["ALL"]))
    flagged = {f.path for f in full.findings}
    ws = Workspace(root, Settings(select=["ALL"], no_cache=True))
    paths = sorted(p for p in ws.entries if p in flagged)
    assert len(paths) >= 15
    for path in paths:
        want = [f for f in full.findings if f.path == path]
        assert ws.lint(ws.entries[path].discovered.fs_path).findings == want, path
