"""The rule API: each rule module under ``rules/`` defines one ``Rule`` subclass; its docstring is its docs page."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .model import Edit, Finding, Fix, Severity, Span

if TYPE_CHECKING:
    from .graph import DispatchGraph
    from .project import Project


@dataclass(frozen=True)
class Setting:
    """One option of a rule, set in ``[tool.mpslint.rules.<CODE>]``: a value of the default's type, or one of
    ``choices`` when the setting lists them."""

    default: bool | int | str
    doc: str
    choices: tuple = ()


class Rule:
    code: str = ""
    name: str = ""
    severity: Severity = Severity.WARNING
    summary: str = ""
    scope: str = "host"  # "host" | "metal" | "dispatch" | "smoke"
    default_enabled: bool = True
    fixable: str | None = None  # "safe" | "unsafe" | None
    guide: str = ""  # the guide section the rule comes from
    # Where the rule applies (mpslint.context): PyTorch's conventions only in "pytorch", hazards in both.
    # One mechanism: the engine keeps a rule's findings only in files whose context is in ``contexts``;
    # a rule never checks the context itself to decide whether to report, only to shape its message or fix
    # (``RuleContext.file_context``).
    contexts: tuple[str, ...] = ("pytorch", "extension")
    # host rules: whether a finding inside a `static` function nothing calls is kept (the engine drops them
    # otherwise: a patch to code that never runs fixes nothing). DSP302-style rules about dead code itself keep them.
    reports_dead_code: bool = False
    # the rule's options: name -> Setting; the configuration checks names and types (config.py)
    settings: dict[str, Setting] = {}

    def check(self, ctx: "RuleContext") -> Iterable[Finding]:
        raise NotImplementedError

    @classmethod
    def applies_in(cls, context: str) -> bool:
        return context in cls.contexts

    @classmethod
    def doc(cls) -> str:
        return inspect.cleandoc(inspect.getmodule(cls).__doc__ or cls.__doc__ or "")

    @classmethod
    def metadata(cls) -> dict:
        return {
            "code": cls.code,
            "name": cls.name,
            "severity": cls.severity.value,
            "summary": cls.summary,
            "scope": cls.scope,
            "default_enabled": cls.default_enabled,
            "fixable": cls.fixable,
            "guide": cls.guide,
            "settings": {k: v.default for k, v in cls.settings.items()},
            "contexts": list(cls.contexts),
        }


class RuleContext:
    """What a rule may look at: the facts of every file, the dispatch graph, and nothing on disk."""

    def __init__(self, project: "Project", graph: "DispatchGraph", options: dict | None = None, settings: dict | None = None):
        self.project = project
        self.graph = graph
        self.options = options or {}
        self.settings = settings or {}  # code -> {name: value}, validated by the configuration
        self.smoke_outcomes = self.options.get("smoke_outcomes", [])
        self.min_torch: tuple[int, int] | None = None  # the oldest PyTorch the code must work with, when known
        self._scopes: dict = {}  # per file: the names it reaches (fixcheck.complete)

    def setting(self, rule: "Rule | type[Rule]", name: str):
        """The configured value of one of ``rule``'s settings, else its default."""
        return self.settings.get(rule.code, {}).get(name, rule.settings[name].default)

    def file_context(self, path: str) -> str:
        """"pytorch" or "extension": where ``path`` lives (mpslint.context), to shape messages and fixes."""
        from .context import file_context

        return file_context(self.project, path)

    def text(self, path: str) -> str:
        return self.project.sources[path].text

    def source(self, path: str, span: Span) -> str:
        return self.project.sources[path].text[span.start : span.end]

    def finding(self, rule: Rule, path: str, span: Span, message: str, fix: Fix | None = None, severity: Severity | None = None, **extra) -> Finding:
        if fix is not None:
            from .fixcheck import complete

            # the includes its names need are added; a fix no include can make reachable is not offered
            fix = complete(self, fix, self._scopes)
        src = self.project.sources.get(path)
        line = src.index.line_text(src.text, span.line) if src is not None else ""
        return Finding(
            code=rule.code,
            name=rule.name,
            severity=severity or rule.severity,
            message=message,
            path=path,
            span=span,
            fix=fix,
            source_line=line,
            extra=tuple(sorted((k, str(v)) for k, v in extra.items())),
        )

    def span(self, path: str, start: int, end: int) -> Span:
        """The span of ``start``..``end`` (character offsets) in ``path``: where an expression tree node sits."""
        idx = self.project.sources[path].index
        l1, c1 = idx.position(start)
        l2, c2 = idx.position(end)
        return Span(start, end, l1, c1, l2, c2)

    def edit(self, path: str, start: int, end: int, content: str) -> Edit:
        idx = self.project.sources[path].index
        l1, c1 = idx.position(start)
        l2, c2 = idx.position(end)
        return Edit(path, start, end, content, l1, c1, l2, c2)


_RULES: list[type[Rule]] | None = None


def all_rules() -> list[type[Rule]]:
    global _RULES
    if _RULES is None:
        import mpslint.rules as pkg

        found = []
        for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
            mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
            for obj in vars(mod).values():
                if inspect.isclass(obj) and issubclass(obj, Rule) and obj is not Rule and obj.code and obj.__module__ == mod.__name__:
                    found.append(obj)
        found.sort(key=lambda r: r.code)
        codes = [r.code for r in found]
        dupes = {c for c in codes if codes.count(c) > 1}
        if dupes:
            raise RuntimeError(f"duplicate rule codes: {sorted(dupes)}")
        _RULES = found
    return _RULES


def rule_by_code(code: str) -> type[Rule] | None:
    for r in all_rules():
        if r.code == code.upper() or r.name == code:
            return r
    return None


def select_rules(select: Iterable[str] | None, extend_select: Iterable[str] = (), ignore: Iterable[str] = ()) -> list[type[Rule]]:
    """ruff-style selection: codes, prefixes or ALL. Without ``select``, the rules enabled by default."""
    rules = all_rules()

    def matches(rule, sel):
        s = sel.strip().upper()
        return s == "ALL" or rule.code.startswith(s) or rule.name == sel.strip()

    if select:
        sel = list(select)
        chosen = [r for r in rules if any(matches(r, s) for s in sel)]
        # opt-in rules come only when named by exact code or a prefix longer than the family
        chosen = [r for r in chosen if r.default_enabled or any(s.strip().upper() in (r.code, "ALL") or (len(s.strip()) > 3 and r.code.startswith(s.strip().upper())) for s in sel)]
    else:
        chosen = [r for r in rules if r.default_enabled]
    for s in extend_select:
        chosen += [r for r in rules if matches(r, s) and r not in chosen]
    chosen = [r for r in chosen if not any(matches(r, s) for s in ignore)]
    return sorted(chosen, key=lambda r: r.code)


def run_rules(rules: list[type[Rule]], ctx: RuleContext) -> Iterator[Finding]:
    for cls in rules:
        yield from cls().check(ctx)
