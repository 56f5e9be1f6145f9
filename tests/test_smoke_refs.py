"""Smoke references found through the dispatch graph (Metal op -> host launch -> stub -> yaml op -> torch)."""

from __future__ import annotations

import pytest

from mpslint.engine import LintOptions, lint
from mpslint.smoke.graph_refs import torch_ops_for

from .conftest import FIXTURES


@pytest.fixture(scope="module")
def graph():
    return lint(LintOptions(paths=[str(FIXTURES / "aten")], select=["DSP301"])).project.graph


def test_ops_found_through_stubs(graph):
    assert torch_ops_for(graph, "hypot") == {"hypot"}
    assert torch_ops_for(graph, "copysign") == {"copysign"}
    assert torch_ops_for(graph, "sinc") == {"sinc"}


def test_op_without_a_yaml_path_is_unknown(graph):
    # erfinv's kernel is launched by a helper no stub or yaml entry reaches
    assert torch_ops_for(graph, "erfinv") == set()
    assert torch_ops_for(graph, "no_such_kernel") == set()


def test_hook_builds_torch_references(graph):
    pytest.importorskip("torch")
    import torch

    from mpslint.smoke.graph_refs import graph_reference_for

    hook = graph_reference_for(graph)
    ref = hook("hypot")
    assert ref is not None and ref.name == "torch.hypot"
    a, b = torch.tensor([3.0]), torch.tensor([4.0])
    assert ref.fn(a, b).item() == 5.0
    assert hook("no_such_kernel") is None
