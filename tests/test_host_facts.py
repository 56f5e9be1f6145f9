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
