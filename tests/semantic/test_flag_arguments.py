"""``hostflow.flag_arguments``: the value every call in view passes for a helper's ``bool`` parameters."""

from __future__ import annotations

from mpslint.facts.host import host_facts
from mpslint.semantic import hostflow as hf
from mpslint.source import LineIndex

HELPER = "id<MTLBuffer> offsets(id<MTLComputeCommandEncoder> enc, const TensorIteratorBase& iter, bool wide{default}) {{ return nil; }}\n"


def _flags(src: str, name: str = "offsets", registered: frozenset = frozenset()):
    facts = host_facts("t.mm", src, LineIndex(src))
    hosts = {"t.mm": facts}
    fn = next(f for f in facts.functions if f.name == name)
    sites = hf._call_sites(hosts)
    return hf.flag_arguments(fn, "t.mm", sites, set(registered), set(), hosts)


def _caller(*calls: str) -> str:
    return "void user(id<MTLComputeCommandEncoder> enc, TensorIteratorBase& iter, bool b) {\n" + "".join(f"  {c};\n" for c in calls) + "}\n"


def test_literal_false_at_every_call():
    assert _flags(HELPER.format(default="") + _caller("offsets(enc, iter, false)", "offsets(enc, iter, false)")) == {"wide": False}


def test_calls_that_disagree_pin_nothing():
    assert _flags(HELPER.format(default="") + _caller("offsets(enc, iter, false)", "offsets(enc, iter, true)")) == {}


def test_run_time_value_pins_nothing():
    assert _flags(HELPER.format(default="") + _caller("offsets(enc, iter, b)")) == {}


def test_omitted_argument_takes_the_prototype_default():
    proto = "id<MTLBuffer> offsets(id<MTLComputeCommandEncoder> enc, const TensorIteratorBase& iter, bool wide = {v});\n"
    assert _flags(proto.format(v="false") + HELPER.format(default="") + _caller("offsets(enc, iter)")) == {"wide": False}
    assert _flags(proto.format(v="true") + HELPER.format(default="") + _caller("offsets(enc, iter)")) == {"wide": True}


def test_omitted_argument_with_no_default_in_view_pins_nothing():
    assert _flags(HELPER.format(default="") + _caller("offsets(enc, iter)")) == {}


def test_no_call_in_view_takes_the_default_or_false():
    assert _flags(HELPER.format(default="")) == {"wide": False}
    assert _flags(HELPER.format(default=" = true")) == {"wide": True}


def test_entry_points_are_entered_with_any_flag():
    assert _flags(HELPER.format(default=""), registered=frozenset({"offsets"})) == {}


def test_non_bool_parameters_are_not_flags():
    src = "void g(const Tensor& t, int64_t k) { }\n" + "void h() { g(t, 0); }\n"
    assert _flags(src, name="g") == {}
