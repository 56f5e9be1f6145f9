"""The Metal masking pre-pass: offset-preserving, and it leaves tree-sitter no ERROR nodes on Metal idioms."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mpslint.masking import mask_metal
from mpslint.parsing import error_counts, parse

from .conftest import FIXTURES


def _same_shape(a: str, b: str) -> bool:
    return len(a) == len(b) and [i for i, c in enumerate(a) if c == "\n"] == [i for i, c in enumerate(b) if c == "\n"]


def _errors(text: str) -> int:
    return error_counts(parse(mask_metal(text)))[0]


IDIOMS = {
    "if IF_CONSTEXPR": "template <typename T>\ninline T f(T x) {\n  if IF_CONSTEXPR (sizeof(T) == 8) {\n    return x;\n  } else {\n    return x + 1;\n  }\n}\n",
    "file-scope registrations": "REGISTER_UNARY_OP(abs, float, float);\nREGISTER_UNARY_OP(abs, half, half);\n"
    "namespace {\nREGISTER_BINARY_ALPHA_OP(add_alpha, float, float, float);\n}\n"
    "DEFINE_COMPARISON(lt, <);\nkernel void k(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n  o[i] = 0;\n}\n",
    "lower-case instantiation macros": "#define instantiate_norm(T) template [[host_name(\"norm_\" #T)]] kernel void norm<T>(device T*);\n"
    "template <typename T>\nkernel void norm(device T* x) {}\n"
    "instantiate_norm(float) instantiate_norm(half)\n#if __METAL_VERSION__ >= 310\n    instantiate_norm(bfloat)\n#endif\n",
    "pragma macros": "#define UNROLL _Pragma(\"clang loop unroll(full)\")\nkernel void k(device float* o [[buffer(0)]]) {\n  UNROLL\n"
    "  for (short i = 0; i < 4; i++) {\n    o[i] = 0;\n  }\n  _Pragma(\"unroll\") for (short j = 0; j < 4; j++) {\n    o[j] = 1;\n  }\n}\n",
    "qualifier macros": "#define MY_CONST static constant constexpr const\nstruct Frag {\n  MY_CONST int kRows = 8;\n};\n"
    "C10_METAL_CONSTEXPR uint32_t N = 8;\n",
    "__has_include": "#if __METAL_VERSION__ >= 400 && \\\n    __has_include(<MetalPerformancePrimitives/MetalPerformancePrimitives.h>)\n"
    "#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>\n#endif\nkernel void k(device float* o [[buffer(0)]]) {}\n",
}


@pytest.mark.parametrize("name", sorted(IDIOMS))
def test_metal_idioms_parse_without_errors(name):
    text = IDIOMS[name]
    assert _same_shape(text, mask_metal(text))
    assert _errors(text) == 0


def test_statement_macros_without_semicolons_leave_no_missing_nodes():
    text = (
        "#define CASE(X, A) \\\n  case X: \\\n    return A;\n"
        "inline float pick(int i) {\n  switch (i) {\n    CASE(0, 1.0f)\n    CASE(\n        1,\n        2.0f)\n  }\n"
        "  float y = CASE_LIKE(i) + 1;\n  return y;\n}\n"
    )
    masked = mask_metal(text)
    assert _same_shape(text, masked)
    assert error_counts(parse(masked)) == (0, 0)
    assert "CASE_LIKE(i) + 1" in masked  # part of an expression: kept


def test_a_macro_opening_a_definition_is_left_alone():
    text = "C10_METAL_FUNC(add)\n{\n  return 1;\n}\n#define M(x) \\\n  REGISTER_X(x, float);\nstruct S {\n  DEFINE_MEMBER(a, b);\n};\n"
    masked = mask_metal(text)
    assert "C10_METAL_FUNC(add)" in masked  # followed by a body: kept
    assert "REGISTER_X(x, float);" in masked  # inside a #define: kept
    assert "DEFINE_MEMBER(a, b);" in masked  # inside a struct: kept


def test_strings_and_comments_are_never_rewritten():
    text = '// REGISTER_UNARY_OP(abs, float, float);\nchar* s = "IF_CONSTEXPR (x) _Pragma(1)";\n'
    assert mask_metal(text) == text


_TOKENS = st.sampled_from(
    [
        "REGISTER_UNARY_OP(a, float, float);", "instantiate_x(float)", "#define instantiate_x(T) T\n", "IF_CONSTEXPR (",
        "if ", "{", "}", "namespace n ", "struct S ", "(", ")", ";", "\n", " ", "\\\n", '"str"', "'c'", "// c\n", "/* c */",
        "_Pragma(\"x\")", "#define P _Pragma(\"x\")\n", "P", "#define Q static constant\n", "Q", "kernel", "device",
        "[[buffer(0)]]", "__has_include(<a/b.h>)", "#if 1\n", "#endif\n", "x", "R\"(raw)\"",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TOKENS, max_size=40))
def test_masking_preserves_length_and_line_breaks(tokens):
    text = "".join(tokens)
    assert _same_shape(text, mask_metal(text))


def _metal_files():
    return sorted(p for p in FIXTURES.rglob("*.metal"))


@pytest.mark.parametrize("path", _metal_files(), ids=lambda p: p.name)
def test_fixture_metal_parses_cleanly(path):
    text = path.read_text(encoding="utf-8")
    assert _same_shape(text, mask_metal(text))
    if "smoke/bad" not in path.as_posix():
        assert _errors(text) == 0


def test_wheel_metal_headers_parse_cleanly(torch_site):
    headers = sorted((torch_site / "torch/include/c10/metal").glob("*.h"))
    assert headers
    total = 0
    for h in headers:
        text = h.read_text(encoding="utf-8")
        assert _same_shape(text, mask_metal(text)), h
        total += _errors(text)
    # before the file-scope-macro / IF_CONSTEXPR / qualifier-macro masks these headers left 8 ERROR nodes
    assert total <= 1, total
