"""Host facts of calls: callee, name and template arguments however the call is qualified."""

from __future__ import annotations

import pytest

from mpslint.facts.host import host_facts
from mpslint.source import LineIndex


def _calls(body: str):
    src = "void f(const Tensor& out) {\n" + body + "\n}\n"
    facts = host_facts("t.mm", src, LineIndex(src))
    return [(c.callee, c.name, c.template) for c in facts.functions[0].calls]


@pytest.mark.parametrize(
    "call, expected",
    [
        ("impl<int32_t>(out);", ("impl", "impl", "int32_t")),
        ("mps::impl<int32_t>(out);", ("mps::impl", "impl", "int32_t")),
        ("at::native::mps::impl<int64_t, 2>(out);", ("at::native::mps::impl", "impl", "int64_t, 2")),
        ("c10::checked_convert<uint32_t>(out.numel(), \"uint32_t\");", ("c10::checked_convert", "checked_convert", "uint32_t")),
        ("mps::impl(out);", ("mps::impl", "impl", "")),
    ],
)
def test_qualified_template_calls_keep_their_name_and_arguments(call, expected):
    assert _calls(call)[0] == expected


def _fn(body: str):
    src = "void f(const Tensor& t, int64_t n) {\n" + body + "\n}\n"
    return host_facts("t.mm", src, LineIndex(src)).functions[0]


def test_negative_literal_in_a_brace_list_is_a_negated_integer():
    # tree-sitter folds the sign into the literal inside `{...}`; the tree is the negation of 1, as elsewhere
    fn = _fn("auto r = t.reshape({-1, t.size(-1)});")
    shape = next(c for c in fn.calls if c.name == "reshape").args[0].tree
    first = shape.kids[0]
    assert (first.kind, first.op) == ("unary", "-")
    assert (first.kids[0].kind, first.kids[0].op) == ("int", "1")
    assert first.text == "-1" and first.kids[0].text == "1"


@pytest.mark.parametrize("expr, ty", [("(NSUInteger)(n * 4)", "NSUInteger"), ("(uint)(n)", "uint"), ("(NSInteger)(n)", "NSInteger")])
def test_c_style_cast_to_a_name_the_grammar_does_not_know(expr, ty):
    fn = _fn(f"auto x = {expr};")
    assert [(k.kind, k.type) for k in fn.casts] == [("c_style", ty)]
    tree = fn.decls[0].init.tree
    assert (tree.kind, tree.op, tree.extra) == ("cast", "c_style", ty)
