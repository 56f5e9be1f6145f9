"""``native_functions.yaml``: every overload with its dispatch table and the lines it sits on."""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field

from ..model import FileError, Span
from ..source import LineIndex

_ENTRY = re.compile(r"^- func:", re.M)
_KEYLINE = re.compile(r"^(\s+)([A-Za-z][\w]*(?:\s*,\s*[A-Za-z][\w]*)*)\s*:\s*([A-Za-z_][\w:]*)\s*(#.*)?$")


@dataclass(frozen=True)
class DispatchGroup:
    keys: tuple[str, ...]
    kernel: str
    span: Span  # the "CPU, CUDA, MPS: x" line


@dataclass
class Overload:
    func: str  # the schema
    name: str  # "atan2.out"
    base: str  # "atan2"
    overload_name: str  # "out"
    family: str  # "atan2" (inplace/out stripped)
    span: Span  # the "- func:" line
    structured: bool = False
    structured_delegate: str | None = None
    structured_inherits: str | None = None
    groups: list[DispatchGroup] = field(default_factory=list)
    entry_end_line: int = 0

    @property
    def dispatch(self) -> dict[str, str]:
        return {k: g.kernel for g in self.groups for k in g.keys}

    def group_for(self, key: str) -> DispatchGroup | None:
        for g in self.groups:
            if key in g.keys:
                return g
        return None

    @property
    def is_inplace(self) -> bool:
        return self.base.endswith("_") and not self.base.endswith("__")

    @property
    def is_out(self) -> bool:
        return self.overload_name == "out" or self.overload_name.endswith("_out") or "(a!)" in self.func.split("->")[0] and not self.is_inplace


@dataclass
class NativeFunctions:
    path: str
    overloads: list[Overload]
    by_name: dict[str, Overload]
    errors: list[FileError]
    loader: str  # "CSafeLoader" or "SafeLoader"


def family_of(base: str) -> str:
    b = base
    if b.endswith("_") and not b.endswith("__"):
        b = b[:-1]
    return b


def load_native_functions(path: str, text: str, index: LineIndex) -> NativeFunctions:
    import yaml

    errors: list[FileError] = []
    loader = getattr(yaml, "CSafeLoader", None)
    loader_name = "CSafeLoader"
    if loader is None:
        warnings.warn("PyYAML has no C loader (libyaml); loading native_functions.yaml with the slow pure-Python loader")
        loader, loader_name = yaml.SafeLoader, "SafeLoader"
    try:
        data = yaml.load(text, Loader=loader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 0
        msg = str(getattr(e, "problem", None) or e).strip().splitlines()[0]
        errors.append(FileError(path, line, f"invalid YAML: {msg}", fatal=True))
        return NativeFunctions(path, [], {}, errors, loader_name)
    if data is None:
        data = []
    if not isinstance(data, list):
        errors.append(FileError(path, 1, f"expected a list of entries, got {type(data).__name__}", fatal=True))
        return NativeFunctions(path, [], {}, errors, loader_name)
    starts = [m.start() for m in _ENTRY.finditer(text)]
    items = [m.start() for m in re.finditer(r"^-(?:\s|$)", text, re.M)]  # every top-level list item
    item_line = (lambda i: index.position(items[i])[0]) if len(items) == len(data) else (lambda i: 0)
    entries = [e for e in data]
    aligned = len(starts) == sum(1 for e in entries if isinstance(e, dict) and "func" in e)
    lines = text.split("\n")
    overloads: list[Overload] = []
    by_name: dict[str, Overload] = {}
    k = 0
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or "func" not in entry:
            errors.append(FileError(path, item_line(i), f"entry {i + 1} is not a mapping with a 'func' key; skipped"))
            continue
        func = entry.get("func")
        if not isinstance(func, str):
            errors.append(FileError(path, item_line(i), f"entry {i + 1}: 'func' is not a string; skipped"))
            k += 1
            continue
        start = starts[k] if aligned and k < len(starts) else _find_func(text, func)
        end = starts[k + 1] if aligned and k + 1 < len(starts) else len(text)
        k += 1
        m = re.match(r"\s*([\w.]+)\s*\(", func)
        if not m:
            line = index.position(start)[0] if start >= 0 else 0
            errors.append(FileError(path, line, f"cannot read the operator name in {func[:60]!r}; skipped"))
            continue
        name = m.group(1)
        base, _, ov = name.partition(".")
        span = index.span(start, text.find("\n", start) if start >= 0 and text.find("\n", start) >= 0 else len(text)) if start >= 0 else index.span(0, 0)
        o = Overload(
            func=func,
            name=name,
            base=base,
            overload_name=ov,
            family=family_of(base),
            span=span,
            structured=entry.get("structured") is True,
            structured_delegate=entry.get("structured_delegate") if isinstance(entry.get("structured_delegate"), str) else None,
            structured_inherits=entry.get("structured_inherits") if isinstance(entry.get("structured_inherits"), str) else None,
        )
        o.entry_end_line = index.position(end)[0]
        dispatch = entry.get("dispatch")
        if dispatch is not None and not isinstance(dispatch, dict):
            errors.append(FileError(path, _key_line(text, start, end, "dispatch", index, span.line), f"{name}: 'dispatch' is not a mapping; ignored"))
            dispatch = None
        for dup_line, dup_key in _duplicate_keys(text, start, end, index):
            errors.append(FileError(path, dup_line, f"{name}: duplicate key {dup_key!r} (YAML keeps only the last one)"))
        if dispatch:
            key_lines = _dispatch_lines(text, start, end, index)
            for keys, kernel in dispatch.items():
                if not isinstance(keys, str) or not isinstance(kernel, str):
                    line = _key_line(text, start, end, str(keys), index, span.line)
                    errors.append(FileError(path, line, f"{name}: malformed dispatch entry {keys!r}: {kernel!r}; ignored"))
                    continue
                key_tuple = tuple(x.strip() for x in keys.split(",") if x.strip())
                kspan = key_lines.get(key_tuple, span)
                o.groups.append(DispatchGroup(key_tuple, kernel, kspan))
        if name in by_name:
            errors.append(FileError(path, span.line, f"duplicate entry for {name} (first at line {by_name[name].span.line}); the later one wins"))
        by_name[name] = o
        overloads.append(o)
    del lines
    return NativeFunctions(path, overloads, by_name, errors, loader_name)


def _duplicate_keys(text: str, start: int, end: int, index: LineIndex) -> list[tuple[int, str]]:
    """Keys written twice in one entry, or twice in one nested block such as ``dispatch:``.

    PyYAML keeps the last value silently, so ``CPU: a`` then ``CPU: b`` would hide a kernel.
    """
    if start < 0:
        return []
    out: list[tuple[int, str]] = []
    top: set[str] = set()
    nested: set[str] = set()
    for m in re.finditer(r"^(- |[ \t]*)([A-Za-z_][\w, ]*?)[ \t]*:(?=\s|$)", text[start:end], re.M):
        lead, key = m.group(1), m.group(2).strip()
        indent = 2 if lead == "- " else len(lead)
        if indent < 2:
            continue
        if indent == 2:
            nested = set()
            bucket = top
        else:
            bucket = nested
        if key in bucket:
            out.append((index.position(start + m.start(2))[0], key))
        bucket.add(key)
    return out


def _key_line(text: str, start: int, end: int, key: str, index: LineIndex, default: int) -> int:
    if start < 0:
        return default
    m = re.search(r"^[ \t]+" + re.escape(key) + r"[ \t]*:", text[start:end], re.M)
    return index.position(start + m.start())[0] if m else default


def _find_func(text: str, func: str) -> int:
    m = re.search(r"^- func:\s*" + re.escape(func[:40]), text, re.M)
    return m.start() if m else -1


def _dispatch_lines(text: str, start: int, end: int, index: LineIndex) -> dict[tuple[str, ...], Span]:
    out: dict[tuple[str, ...], Span] = {}
    if start < 0:
        return out
    block = text[start:end]
    d = re.search(r"^\s+dispatch:\s*$", block, re.M)
    if not d:
        return out
    pos = start + d.end() + 1
    indent = None
    while pos < end:
        nl = text.find("\n", pos)
        nl = end if nl < 0 or nl > end else nl
        line = text[pos:nl]
        if not line.strip() or line.strip().startswith("#"):
            pos = nl + 1
            continue
        m = _KEYLINE.match(line)
        if not m:
            break
        if indent is None:
            indent = len(m.group(1))
        elif len(m.group(1)) != indent:
            break
        keys = tuple(x.strip() for x in m.group(2).split(","))
        out[keys] = index.span(pos + len(m.group(1)), nl)
        pos = nl + 1
    return out
