"""MTL202's automatic fix: applying its edits yields text that re-lints clean for MTL202 (and still parses)."""

from __future__ import annotations

import ast
import shutil

import pytest

from mpslint.engine import LintOptions, lint

from .conftest import FIXTURES, ROOT

COMMON = "#include <c10/metal/common.h>"


def _lint(path, select, text=None, cwd=ROOT):
    rel = path.relative_to(cwd).as_posix()
    overrides = {rel: text} if text is not None else {}
    result = lint(LintOptions(paths=[str(path)], select=select, cwd=cwd, overrides=overrides))
    assert not result.internal_errors, result.internal_errors
    return rel, result


def _apply(text, findings):
    """Apply every fix's edits from the end of the file backwards (identical edits once, as a fixer would)."""
    edits = {(e.start, e.end, e.content) for f in findings if f.fix is not None for e in f.fix.edits}
    for start, end, content in sorted(edits, key=lambda e: (e[0], e[1]), reverse=True):
        text = text[:start] + content + text[end:]
    return text


def _fix_and_relint(path, cwd=ROOT):
    rel, before = _lint(path, ["MTL202"], cwd=cwd)
    found = [f for f in before.findings if f.path == rel]
    assert found, f"{rel}: expected MTL202 findings to fix"
    assert all(f.fix is not None for f in found)
    fixed = _apply(path.read_text(encoding="utf-8"), found)
    _, after = _lint(path, ["MTL202"], fixed, cwd=cwd)
    assert [f for f in after.findings if f.path == rel] == []
    return found, fixed, after


def test_fix_in_metal_file_adds_the_include_once():
    path = FIXTURES / "aten/src/ATen/native/mps/kernels/Portability.metal"
    found, fixed, after = _fix_and_relint(path)
    assert all(f.fix.applicability == "unsafe" for f in found)  # IF_CONSTEXPR is a plain `if` on Metal 3
    assert fixed.count(COMMON) == 1
    # the include goes after the file's last #include, the keyword is replaced in place
    assert fixed.index(COMMON) > fixed.index("#include <metal_stdlib>")
    assert fixed.count("if IF_CONSTEXPR (") == original_count(path, "if IF_CONSTEXPR (") + len(found)
    # only the keyword changed on the flagged lines: guarded Metal 4 code, comments and strings are untouched
    assert "if constexpr (sizeof(T) < 4) { // ok: MTL202 (Metal 4 only code)" in fixed
    assert '"if constexpr (x) is C++17"' in fixed
    assert after.stats.error_nodes == 0


def original_count(path, s):
    return path.read_text(encoding="utf-8").count(s)


def test_fix_inside_an_mm_raw_string_stays_inside_it():
    path = FIXTURES / "aten/src/ATen/native/mps/operations/Bucketize.mm"
    found, fixed, after = _fix_and_relint(path)
    start = fixed.index('R"BUCKETIZE_METAL(')
    end = fixed.index(')BUCKETIZE_METAL"')
    assert start < fixed.index(COMMON) < end
    # the fixed raw string is still Metal, with the same registrations
    rel = path.relative_to(ROOT).as_posix()
    assert after.project.metals[rel] and after.project.metals[rel][0].registrations


def test_fix_in_compile_shader_sources_keeps_valid_python(tmp_path):
    # MTL202 is PyTorch's convention: the sources are checked as part of a PyTorch checkout's tests
    for d in ("aten/src/ATen", "c10", "test"):
        (tmp_path / d).mkdir(parents=True)
    path = tmp_path / "test" / "shader_debug.py"
    shutil.copy(FIXTURES / "py/shader_debug.py", path)
    found, fixed, after = _fix_and_relint(path, cwd=tmp_path)
    ast.parse(fixed)  # still Python
    assert fixed.count(COMMON) == 2  # the triple-quoted source and the one-line source
    # a one-line string gets an escaped newline, so the directive ends before the code
    assert COMMON + "\\n" + "template <typename T> T twice" in fixed
    lib3 = [s for s in ast.walk(ast.parse(fixed)) if isinstance(s, ast.Constant) and isinstance(s.value, str) and "twice" in s.value]
    assert lib3 and lib3[0].value.startswith(COMMON + "\n")


def test_no_include_when_a_c10_metal_header_brings_it(tmp_path):
    src = tmp_path / "aten/src/ATen/native/mps/kernels/K.metal"
    src.parent.mkdir(parents=True)
    src.write_text(
        "#include <c10/metal/utils.h>\n#include <metal_stdlib>\n\n"
        "template <typename T>\ninline T f(T x) {\n  if constexpr (sizeof(T) == 2) {\n    return x;\n  }\n  return x + x;\n}\n",
        encoding="utf-8",
    )
    result = lint(LintOptions(paths=[str(src)], select=["MTL202"], cwd=tmp_path))
    (f,) = result.findings
    assert [e.content for e in f.fix.edits] == ["IF_CONSTEXPR"]
    assert (f.span.line, f.span.column) == (6, 3)


@pytest.mark.parametrize(
    "guard,flagged",
    [
        ("#if __METAL_VERSION__ >= 400", False),
        ("#if defined(__METAL_VERSION__) && __METAL_VERSION__ >= 400", False),
        ("#if __METAL_VERSION__ >= 310", True),
        ("#if __METAL_VERSION__ < 400", True),
    ],
)
def test_metal4_guards(tmp_path, guard, flagged):
    src = tmp_path / "aten/src/ATen/native/mps/kernels/k.metal"  # MTL202 is PyTorch's convention: a PyTorch path
    src.parent.mkdir(parents=True)
    src.write_text(f"{guard}\ntemplate <typename T>\ninline T f(T x) {{\n  if constexpr (sizeof(T) == 2) {{\n    return x;\n  }}\n  return x;\n}}\n#endif\n", encoding="utf-8")
    result = lint(LintOptions(paths=[str(src)], select=["MTL202"], cwd=tmp_path))
    assert bool(result.findings) is flagged
