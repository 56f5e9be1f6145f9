"""Python sources: ``common_mps.py`` skip/xfail lists, and Metal passed to ``torch.mps.compile_shader``."""

from __future__ import annotations

import ast
import warnings
import re
from dataclasses import dataclass, field

from ..model import FileError, Span
from ..source import LineIndex

_LIST_NAME = re.compile(r"\w*(XFAILLIST|SKIPLIST)\w*")


@dataclass(frozen=True)
class XfailEntry:
    list_name: str
    op: str
    dtypes: tuple[str, ...] | None  # None: every dtype
    span: Span  # the whole "key: value" item


@dataclass(frozen=True)
class ShaderCall:
    """``lib.add_one(x, threads=n)`` on a library from ``torch.mps.compile_shader``: a kernel asked for by name."""

    kernel: str
    function: str  # the enclosing Python function ("<module>" at top level)
    span: Span  # the attribute name


@dataclass
class PythonFacts:
    path: str
    xfails: list[XfailEntry] = field(default_factory=list)
    shaders: list[tuple[int, int]] = field(default_factory=list)  # offsets of compile_shader sources
    shader_calls: list[ShaderCall] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)


def python_facts(path: str, text: str, index: LineIndex) -> PythonFacts:
    facts = PythonFacts(path)
    try:
        with warnings.catch_warnings():  # the linted file's own warnings (invalid escapes) are not ours to print
            warnings.simplefilter("ignore")
            tree = ast.parse(text)
    except SyntaxError as e:
        facts.errors.append(FileError(path, e.lineno or 0, f"Python syntax error: {e.msg}"))
        return facts
    except (MemoryError, RecursionError):  # CPython's parser gives up on very deep nesting
        facts.errors.append(FileError(path, 0, "Python source too deeply nested to parse; skipped"))
        return facts
    except ValueError as e:  # Python 3.10: "source code string cannot contain null bytes"
        facts.errors.append(FileError(path, 0, f"Python source could not be parsed: {e}; skipped"))
        return facts
    # ast numbers lines as Python's tokenizer splits them: a lone "\r" ends a line too (not for LineIndex)
    line_offsets = index.starts if "\r" not in text else [0] + [m.end() for m in re.finditer(r"\r\n?|\n", text)]

    def off(lineno: int, col: int) -> int:
        # ast columns are UTF-8 byte offsets within the line
        start = line_offsets[min(lineno, len(line_offsets)) - 1]
        line = re.split(r"[\r\n]", text[start : start + 100000], maxsplit=1)[0]
        return start + len(line.encode("utf-8")[:col].decode("utf-8", "replace"))

    strings: dict[str, ast.Constant] = {}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if not isinstance(t, ast.Name):
                    continue
                if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
                    strings[t.id] = node.value
                if _LIST_NAME.fullmatch(t.id) and isinstance(node.value, ast.Dict):
                    for k, v in zip(node.value.keys, node.value.values):
                        if not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                            continue
                        dtypes = None
                        if isinstance(v, (ast.List, ast.Tuple, ast.Set)):
                            dtypes = tuple(ast.unparse(e).replace("torch.", "") for e in v.elts)
                        end_node = v if v is not None else k
                        a = off(k.lineno, k.col_offset)
                        b = off(end_node.end_lineno, end_node.end_col_offset)
                        facts.xfails.append(XfailEntry(t.id, k.value, dtypes, index.span(a, b)))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            fname = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if fname != "compile_shader" or not node.args:
                continue
            arg = node.args[0]
            if isinstance(arg, ast.Name) and arg.id in strings:
                arg = strings[arg.id]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                a = off(arg.lineno, arg.col_offset)
                b = off(arg.end_lineno, arg.end_col_offset)
                lit = text[a:b]
                m = re.match(r"[rRbBuUfF]*('''|\"\"\"|'|\")", lit)
                if m:
                    q = m.group(1)
                    facts.shaders.append((a + m.end(), b - len(q)))
    _shader_calls(tree, facts, off, index)
    return facts


def _is_compile_shader(node) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Attribute) and f.attr == "compile_shader") or (isinstance(f, ast.Name) and f.id == "compile_shader")


def _shader_calls(tree, facts: PythonFacts, off, index: LineIndex) -> None:
    """Kernel launches through a ``compile_shader`` library: ``lib = torch.mps.compile_shader(src); lib.k(...)``,
    also ``self.lib = ...`` and ``getattr(lib, "k")``; names are per scope (module or function)."""
    scopes = [("<module>", tree)] + [(n.name, n) for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    libs_module: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _is_compile_shader(node.value):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    libs_module.add(t.id)
                elif isinstance(t, ast.Attribute):
                    libs_module.add("." + t.attr)
    if not libs_module:
        return
    seen: set[tuple[int, int]] = set()
    for name, scope in reversed(scopes):  # innermost functions first: a call belongs to the nearest one
        for node in ast.walk(scope):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            kernel = lib = None
            if isinstance(f, ast.Attribute):
                recv = f.value
                lib = recv.id if isinstance(recv, ast.Name) else ("." + recv.attr if isinstance(recv, ast.Attribute) else None)
                kernel = f.attr
                a = off(f.end_lineno, f.end_col_offset) - len(kernel)
                b = a + len(kernel)
            elif isinstance(f, ast.Name) and f.id == "getattr" and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
                recv = node.args[0]
                lib = recv.id if isinstance(recv, ast.Name) else ("." + recv.attr if isinstance(recv, ast.Attribute) else None)
                kernel = node.args[1].value
                a = off(node.args[1].lineno, node.args[1].col_offset)
                b = off(node.args[1].end_lineno, node.args[1].end_col_offset)
            if kernel is None or lib not in libs_module or (a, b) in seen:
                continue
            seen.add((a, b))
            facts.shader_calls.append(ShaderCall(kernel, name, index.span(a, b)))
