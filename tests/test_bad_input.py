"""Bad input: a clear one-line error naming the file and line, the other files still linted, never a crash."""

from __future__ import annotations

import builtins
import os

import pytest
from click.testing import CliRunner

from mpslint.cli import main
from mpslint.engine import LintOptions, lint

BAD_MM = "void k(const Tensor& in) {\n  const uint32_t n = static_cast<uint32_t>(in.numel());\n}\n"


def run(args):
    return CliRunner().invoke(main, ["check", "--isolated", *args], catch_exceptions=False)


@pytest.fixture
def tree(tmp_path):
    d = tmp_path / "t" / "mps"
    d.mkdir(parents=True)
    (d / "Op.mm").write_text(BAD_MM)
    return tmp_path / "t"


def test_unreadable_file(tree, monkeypatch):
    bad = tree / "mps" / "Secret.mm"
    bad.write_text(BAD_MM)
    real_open = builtins.open

    def guarded(path, *a, **kw):
        if str(path).endswith("Secret.mm"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *a, **kw)

    monkeypatch.setattr(builtins, "open", guarded)
    r = run([str(tree)])
    assert r.exit_code == 1
    assert "Secret.mm: cannot read file: Permission denied" in r.stderr
    assert "Op.mm:2:22: MPS102" in r.stdout


def test_binary_and_non_utf8_and_huge(tree):
    (tree / "mps" / "Blob.metal").write_bytes(b"kernel\x00void")
    (tree / "mps" / "Latin.mm").write_bytes(b"// caf\xe9\nstatic void f() {}\n")
    with open(tree / "mps" / "Huge.mm", "wb") as fh:
        fh.truncate(50 * 1024 * 1024)
    r = run([str(tree)])
    assert r.exit_code == 1
    err = r.stderr
    assert "Blob.metal: binary file" in err
    assert "Latin.mm:1: not valid UTF-8 (byte 0xe9)" in err
    assert "Huge.mm: file larger than 20 MB" in err
    assert "MPS102" in r.stdout


def test_only_bad_files_exit_2(tmp_path):
    d = tmp_path / "mps"
    d.mkdir()
    (d / "Blob.metal").write_bytes(b"\x00\x00")
    r = run([str(tmp_path)])
    assert r.exit_code == 2
    assert "could not be linted" in r.stdout


@pytest.mark.parametrize(
    "yaml_text,message",
    [
        ("x: 1\n", "native_functions.yaml:1: expected a list of entries, got dict"),
        ("- func: [unclosed\n", "native_functions.yaml:2: invalid YAML"),
    ],
)
def test_yaml_that_cannot_be_used(tmp_path, yaml_text, message):
    (tmp_path / "native_functions.yaml").write_text(yaml_text)
    r = run([str(tmp_path / "native_functions.yaml")])
    assert r.exit_code == 2
    assert message in r.stderr


def test_malformed_yaml_entries_are_skipped_with_their_lines(tmp_path):
    (tmp_path / "native_functions.yaml").write_text(
        "- func: a(Tensor self) -> Tensor\n"
        "  dispatch:\n"
        "    CPU: a_cpu\n"
        "    CPU: a_other\n"
        "    MPS: a_mps\n"
        "- func: b(Tensor self) -> Tensor\n"
        "  dispatch: [1, 2]\n"
        "- 42\n"
        "- func: c(Tensor self) -> Tensor\n"
        "  dispatch:\n"
        "    MPS: 7\n"
        "- func: d(Tensor self) -> Tensor\n"
        "  func: d2(Tensor self) -> Tensor\n"
    )
    result = lint(LintOptions(paths=[str(tmp_path / "native_functions.yaml")]))
    msgs = sorted(str(e).split("native_functions.yaml", 1)[1] for e in result.errors)
    assert msgs == [
        ":11: c: malformed dispatch entry 'MPS': 7; ignored",
        ":13: d2: duplicate key 'func' (YAML keeps only the last one)",
        ":4: a: duplicate key 'CPU' (YAML keeps only the last one)",
        ":7: b: 'dispatch' is not a mapping; ignored",
        ":8: entry 3 is not a mapping with a 'func' key; skipped",
    ]
    assert set(result.project.natives.by_name) == {"a", "b", "c", "d2"}


def test_symlink_loop_and_missing_path(tree):
    os.symlink("loop", tree / "mps" / "loop")
    os.symlink("..", tree / "mps" / "up")  # a directory cycle: never followed
    r = run([str(tree), str(tree / "mps" / "loop"), str(tree / "nope.mm")])
    assert r.exit_code == 1
    assert "mps/loop: symlink loop" in r.stderr
    assert "nope.mm: no such file or directory" in r.stderr
    assert r.stdout.count("MPS102") == 1


def test_empty_directory(tmp_path):
    r = run([str(tmp_path)])
    assert r.exit_code == 0
    assert "no files to lint" in r.stderr


def test_path_outside_the_cwd(tree, tmp_path, monkeypatch):
    elsewhere = tmp_path / "cwd"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    r = run([str(tree / "mps" / "Op.mm"), "--format", "json"])
    assert r.exit_code == 1
    assert str(tree / "mps" / "Op.mm") in r.stdout
