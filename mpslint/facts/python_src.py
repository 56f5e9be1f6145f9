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


@dataclass
class PythonFacts:
    path: str
    xfails: list[XfailEntry] = field(default_factory=list)
    shaders: list[tuple[int, int]] = field(default_factory=list)  # offsets of compile_shader sources
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
    return facts
