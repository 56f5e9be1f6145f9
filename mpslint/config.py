"""``[tool.mpslint]`` in the nearest ``pyproject.toml``; the command line wins."""

from __future__ import annotations

import fnmatch
import sys
from dataclasses import dataclass, field
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class ConfigError(Exception):
    pass


@dataclass
class Config:
    path: Path | None = None
    select: list[str] | None = None
    extend_select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    native_functions: str | None = None
    smoke_specs: list[str] = field(default_factory=list)  # TOML launch specs for `mpslint smoke` (smoke/specfile.py)
    context: str | None = None  # "pytorch" | "extension": every file's context (mpslint.context); None: detected
    min_macos: str = "14.0"  # the oldest macOS the code must run on: branches only older releases take are dead
    # the oldest PyTorch the code must work with: `min-torch`, else the lower bound of `torch` in the same
    # pyproject's [project] dependencies (as ruff infers target-version from requires-python); None: unknown
    min_torch: str | None = None
    rule_settings: dict[str, dict] = field(default_factory=dict)  # [tool.mpslint.rules.<CODE>]: code -> {name: value}

    def ignored_for(self, path: str) -> set[str]:
        out: set[str] = set()
        for pattern, codes in self.per_file_ignores.items():
            if fnmatch.fnmatch(path, pattern) or fnmatch.fnmatch(Path(path).name, pattern):
                out.update(codes)
        return out

    def excluded(self, path: str) -> bool:
        return any(fnmatch.fnmatch(path, pat) or fnmatch.fnmatch(path, pat.rstrip("/") + "/*") for pat in self.exclude)


_KEYS = {"select", "extend-select", "ignore", "per-file-ignores", "include", "exclude", "native-functions", "context"}

_KEYS.add("smoke-specs")
_KEYS.add("rules")
_KEYS.add("min-macos")
_KEYS.add("min-torch")


def _toml(v) -> str:
    return str(v).lower() if isinstance(v, bool) else repr(v) if isinstance(v, str) else str(v)


def _rule_settings(path: Path, table) -> dict[str, dict]:
    """``[tool.mpslint.rules.<CODE>]`` tables, checked against the settings each rule declares."""
    from .rule import rule_by_code

    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.mpslint] rules must be a table of rule codes")
    out: dict[str, dict] = {}
    for code, values in sorted(table.items()):
        rule = rule_by_code(code)
        if rule is None or rule.code != code.upper():
            raise ConfigError(f"{path}: [tool.mpslint.rules.{code}]: unknown rule code")
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: [tool.mpslint.rules.{code}] must be a table")
        for name, value in values.items():
            setting = rule.settings.get(name)
            if setting is None:
                known = ", ".join(sorted(rule.settings)) or "none"
                raise ConfigError(f"{path}: [tool.mpslint.rules.{code}]: unknown setting {name!r} (settings: {known})")
            if setting.choices:
                if not any(type(value) is type(c) and value == c for c in setting.choices):
                    allowed = ", ".join(_toml(c) for c in setting.choices)
                    raise ConfigError(f"{path}: [tool.mpslint.rules.{code}] {name} must be one of {allowed}, not {_toml(value)}")
            elif type(value) is not type(setting.default):
                raise ConfigError(f"{path}: [tool.mpslint.rules.{code}] {name} must be a {type(setting.default).__name__}, not {value!r}")
        out[rule.code] = dict(values)
    return out


def torch_floor(dependencies) -> str | None:
    """The lowest ``torch`` release a ``[project] dependencies`` list admits (``torch>=2.10`` -> "2.10"), or None."""
    if not isinstance(dependencies, list):
        return None
    # packaging costs ~25 ms to import: only when a dependency can name torch
    named = [d for d in dependencies if isinstance(d, str) and d.strip().lower().startswith("torch")]
    if not named:
        return None
    from packaging.requirements import InvalidRequirement, Requirement

    for dep in named:
        try:
            req = Requirement(dep) if isinstance(dep, str) else None
        except InvalidRequirement:
            continue
        if req is None or req.name.lower() != "torch":
            continue
        floors = [sp.version for sp in req.specifier if sp.operator in (">=", "==", "~=", ">")]
        if floors:
            from packaging.version import Version

            v = max(floors, key=Version)
            return ".".join(v.split(".")[:2])
    return None


def _pyprojects(start: Path, stop_at_repo: bool = False):
    """(path, parsed TOML or None when unreadable) of every ``pyproject.toml`` from ``start`` up; with
    ``stop_at_repo``, none above the directory holding ``.git``."""
    start = start.resolve()
    for anc in [start, *start.parents]:
        cand = anc / "pyproject.toml"
        if cand.is_file():
            try:
                yield cand, tomllib.loads(cand.read_text(encoding="utf-8"))
            except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
                yield cand, None
        if stop_at_repo and (anc / ".git").exists():
            return


def nearest_torch_floor(start: Path) -> str | None:
    """The torch floor of the nearest ``pyproject.toml`` above ``start`` (with or without a [tool.mpslint] table)."""
    for _, data in _pyprojects(start, stop_at_repo=True):
        return torch_floor(data.get("project", {}).get("dependencies", [])) if data else None
    return None


def find_pyproject(start: Path) -> Path | None:
    for cand, data in _pyprojects(start):
        if data is not None and "mpslint" in data.get("tool", {}):
            return cand
    return None


def load_config(path: Path | None) -> Config:
    if path is None:
        return Config()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from e
    section = data.get("tool", {}).get("mpslint", {})
    unknown = set(section) - _KEYS
    if unknown:
        raise ConfigError(f"{path}: unknown [tool.mpslint] keys: {', '.join(sorted(unknown))}")

    def strings(key):
        v = section.get(key, [])
        if isinstance(v, str):
            v = [v]
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise ConfigError(f"{path}: [tool.mpslint] {key} must be a list of strings")
        return v

    pfi = section.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise ConfigError(f"{path}: [tool.mpslint] per-file-ignores must be a table")
    context = section.get("context")
    if context is not None and context not in ("pytorch", "extension"):
        raise ConfigError(f'{path}: [tool.mpslint] context must be "pytorch" or "extension", not {context!r}')
    min_macos = section.get("min-macos", "14.0")
    if isinstance(min_macos, (int, float)) and not isinstance(min_macos, bool):
        min_macos = str(min_macos)
    from .semantic.platform import parse_version

    if not isinstance(min_macos, str) or parse_version(min_macos) is None:
        raise ConfigError(f'{path}: [tool.mpslint] min-macos must be a macOS release such as "14.0", not {min_macos!r}')
    min_torch = section.get("min-torch")
    if min_torch is not None:
        # a string: as a TOML float, 2.10 would read as 2.1
        if not isinstance(min_torch, str) or parse_version(min_torch) is None:
            raise ConfigError(f'{path}: [tool.mpslint] min-torch must be a PyTorch release in quotes such as "2.10", not {min_torch!r}')
    else:
        min_torch = torch_floor(data.get("project", {}).get("dependencies", []))
    cfg = Config(
        path=path,
        select=strings("select") if "select" in section else None,
        extend_select=strings("extend-select"),
        ignore=strings("ignore"),
        per_file_ignores={k: ([v] if isinstance(v, str) else list(v)) for k, v in pfi.items()},
        include=strings("include"),
        exclude=strings("exclude"),
        native_functions=section.get("native-functions"),
        context=context,
        min_macos=min_macos,
        min_torch=min_torch,
        rule_settings=_rule_settings(path, section.get("rules", {})),
    )
    base = path.parent
    cfg.smoke_specs = [str((base / p).resolve()) for p in strings("smoke-specs")]
    if cfg.native_functions:
        cfg.native_functions = str((base / cfg.native_functions).resolve())
    return cfg
