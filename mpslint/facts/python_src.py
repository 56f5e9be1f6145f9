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
    """``lib.add_one(x, threads=n)`` / ``getattr(lib, "add_" + suffix)`` on a library from
    ``torch.mps.compile_shader``: a kernel asked for by name."""

    kernel: str  # the literal name, or its literal prefix
    function: str  # the enclosing Python function ("<module>" at top level)
    span: Span  # the attribute name, or the name expression
    pattern: str = ""  # regex over kernel names ("" when ``kernel`` is the whole name)


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
    # Metal kept in module-level strings for another module to compile (`from ._shaders import SRC`;
    # `torch.mps.compile_shader(SRC)`): a string that reads like Metal is linted as Metal too
    for node in tree.body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            if not _LOOKS_METAL.search(node.value.value):
                continue
            arg = node.value
            a = off(arg.lineno, arg.col_offset)
            b = off(arg.end_lineno, arg.end_col_offset)
            m = _QUOTE.match(text, a, b)
            if m and (m.end(), b - len(m.group(1))) not in facts.shaders:
                facts.shaders.append((m.end(), b - len(m.group(1))))
    _shader_calls(tree, facts, off, index)
    return facts


_LOOKS_METAL = re.compile(r"\bkernel\s+void\b[^;{]*\[\[|#include\s*<metal_stdlib>")
_QUOTE = re.compile(r"[rRbBuUfF]*('''|\"\"\"|'|\")")


def _is_compile_shader(node) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Attribute) and f.attr == "compile_shader") or (isinstance(f, ast.Name) and f.id == "compile_shader")


def _name_pattern(node) -> tuple[str, str] | None:
    """A kernel-name expression -> (literal prefix, regex): ``"k_" + suffix(t)``, ``f"k_{t}"``, a constant."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value, re.escape(node.value)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _name_pattern(node.left), _name_pattern(node.right)
        if left is None:
            return None
        return left[0], left[1] + (right[1] if right is not None and right[1] == re.escape(right[0]) else r"\w*")
    if isinstance(node, ast.JoinedStr) and node.values:
        lit, rx, head = "", "", True
        for v in node.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                rx += re.escape(v.value)
                lit += v.value if head else ""
            else:
                rx += r"\w*"
                head = False
        return lit, rx
    return None


def _target_name(t) -> str | None:
    if isinstance(t, ast.Name):
        return t.id
    if isinstance(t, ast.Attribute):
        return "." + t.attr
    return None


def _shader_libraries(tree) -> tuple[set[str], set[str]]:
    """Names holding a ``compile_shader`` library (``_LIB = torch.mps.compile_shader(src)``, ``self.lib = ...``)
    and the functions returning one (``def _get_library(): ...; return _LIB``)."""
    libs: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and _is_compile_shader(node.value):
            libs.update(n for n in map(_target_name, node.targets) if n)
    getters: set[str] = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for r in ast.walk(fn):
                if isinstance(r, ast.Return) and r.value is not None and (_is_compile_shader(r.value) or _target_name(r.value) in libs):
                    getters.add(fn.name)
    return libs, getters


def _shader_calls(tree, facts: PythonFacts, off, index: LineIndex) -> None:
    """Kernel launches through a ``compile_shader`` library: ``lib = torch.mps.compile_shader(src); lib.k(...)``,
    also ``self.lib = ...``, a function returning the library (``lib = _get_library()``) and
    ``getattr(lib, "k" + suffix)``; names are per scope (module or function)."""
    scopes = [("<module>", tree)] + [(n.name, n) for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    libs_module, getters = _shader_libraries(tree)
    if not libs_module and not getters:
        return

    def is_lib(node, local: set[str]) -> bool:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in getters:
            return True
        n = _target_name(node)
        return n is not None and (n in libs_module or n in local)

    seen: set[tuple[int, int]] = set()
    for name, scope in reversed(scopes):  # innermost functions first: a call belongs to the nearest one
        local = {n for node in ast.walk(scope) if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                 and isinstance(node.value.func, ast.Name) and node.value.func.id in getters for n in map(_target_name, node.targets) if n}
        for node in ast.walk(scope):
            if not isinstance(node, ast.Call):
                continue
            f = node.func
            got = None
            if isinstance(f, ast.Attribute) and is_lib(f.value, local):
                a = off(f.end_lineno, f.end_col_offset) - len(f.attr)
                got = (f.attr, "", a, a + len(f.attr))
            elif isinstance(f, ast.Name) and f.id == "getattr" and len(node.args) >= 2 and is_lib(node.args[0], local):
                np_ = _name_pattern(node.args[1])
                if np_ is not None and np_[0]:
                    a = off(node.args[1].lineno, node.args[1].col_offset)
                    b = off(node.args[1].end_lineno, node.args[1].end_col_offset)
                    got = (np_[0], "" if np_[1] == re.escape(np_[0]) else np_[1], a, b)
            if got is None or (got[2], got[3]) in seen:
                continue
            seen.add((got[2], got[3]))
            facts.shader_calls.append(ShaderCall(got[0], name, index.span(got[2], got[3]), got[1]))
