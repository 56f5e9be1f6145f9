"""Facts and a semantic model for a snippet of host or Metal code (for the model's unit tests)."""

from __future__ import annotations

from types import SimpleNamespace

from mpslint.facts.host import host_facts
from mpslint.facts.metal import metal_facts
from mpslint.semantic.model import SemanticModel
from mpslint.source import LineIndex


def host_model(src: str, path: str = "t.mm"):
    facts = host_facts(path, src, LineIndex(src))
    return SemanticModel(SimpleNamespace(hosts={path: facts}, metals={})), facts


def metal_model(src: str, path: str = "t.metal"):
    facts = metal_facts(path, src, LineIndex(src))
    return SemanticModel(SimpleNamespace(hosts={}, metals={path: [facts]})), facts


def fn_model(model, facts, name: str):
    fn = next(f for f in facts.functions if f.name == name)
    return model.function(fn, facts)


def decl(fm, name: str):
    """(init tree, stmt) of the last declaration of ``name``."""
    d = [x for x in fm.fn.decls if x.name == name][-1]
    return d.init.tree, d.stmt
