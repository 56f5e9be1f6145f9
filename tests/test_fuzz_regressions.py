"""Inputs the fuzzer (bench/fuzz.py, tests/test_fuzz.py) found to crash or hang mpslint, minimised.

Each was a hang (an input taking minutes: the CI job would time out) or an exception escaping the facts
stage.  The time bounds are generous (the fixed code takes well under a second on each; the old code took
from 15 s to several minutes), so a loaded CI machine does not make them flaky.
"""

from __future__ import annotations

import time

import pytest

from mpslint.engine import LintOptions, lint
from mpslint.masking import mask_metal, mask_objc
from mpslint.project import file_facts
from mpslint.source import SourceFile

BOUND = 10.0  # seconds


def facts_in_time(kind: str, text: str, path: str = "fixtures/x"):
    t0 = time.monotonic()
    try:
        facts = file_facts(SourceFile(path, text, kind))
    except RecursionError:  # the engine's "too deeply nested" skip: allowed, never a crash
        facts = None
    took = time.monotonic() - t0
    assert took < BOUND, f"{kind} facts of a {len(text)}-character input took {took:.1f}s"
    return facts


@pytest.mark.parametrize(
    "text",
    [
        # seed 54 (BinaryOps.mm, 2 mutations): 3000 unmatched `[` inserted; every `[` scanned to the end of
        # the file for its `]` (quadratic: 15 s for 6000 brackets)
        "[" * 6000,
        "void f() {\n  id<MTLBuffer> b = " + "[" * 4000 + "\n}\n",
        # seed 138 (FillKernel.mm): nested sends, each one re-scanned its whole inside (80 s)
        "[" * 4000 + "a b" + "]" * 4000,
        "void f() { x = " + "[a b:" * 2000 + " c" + "]" * 2000 + "; }\n",
        # seed 2043739 (narrowing.before.mm): nested keyword sends, each one re-scanned for ternary colons (40 s)
        "void f() { x = " + "[a b:c ? d : " * 3000 + " e" + "]" * 3000 + "; }\n",
        # many `@available(` without a closing parenthesis
        "@available(" * 5000,
    ],
    ids=["unmatched-brackets", "unmatched-in-function", "nested-sends", "nested-keyword-sends", "nested-ternary-sends", "unclosed-available"],
)
def test_objc_masking_is_linear_in_nesting(text):
    facts_in_time("host", text)
    masked = mask_objc(text)
    assert len(masked) == len(text) and masked.count("\n") == text.count("\n")


def test_nested_sends_are_still_rewritten():
    """The linear bracket matching finds the same sends as before."""
    text = "void f() { [[enc a] setBuffer:[x y] offset:0 atIndex:[z w]]; }\n"
    masked = mask_objc(text)
    assert len(masked) == len(text)
    assert ".setBuffer(" in masked and ".a" in masked and ".y" in masked and ".w" in masked


def test_metal_host_name_regex_does_not_backtrack_on_whitespace():
    """seed 1551 (custom_kernels.metal, 10 mutations): a `template [[host_name(...)]]` inside a #define whose
    body the mutation left as a long run of blanks; three adjacent whitespace repetitions in the instantiation
    regex backtracked for minutes."""
    text = 'template [[host_name("x")]]' + " " * 20000 + "kernel void f<"
    facts_in_time("metal", text)
    text = 'template [[host_name("x")]]\n' + (" " * 70 + "\n") * 300 + "kernel void f<float>(device float*);\n"
    facts_in_time("metal", text)


def test_metal_host_name_instantiation_still_found():
    text = (
        "#include <metal_stdlib>\nusing namespace metal;\n"
        "template <typename T> kernel void fill(device T* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = 1; }\n"
        'template [[host_name("fill_float")]] kernel void fill<float>(device float*, uint);\n'
        'template [[host_name("fill_half")]]\n  [[kernel]]   void   fill<half>(device half*, uint);\n'
        'template [[host_name("fill_int")]] kernel device int* fill2<int>(device int*, uint);\n'
    )
    facts = facts_in_time("metal", text)
    names = sorted(hn for r in facts.registrations for hn in r.host_names)
    assert names == ["fill_float", "fill_half", "fill_int"]
    assert sorted(r.dtype for r in facts.registrations) == ["float", "half", "int"]


@pytest.mark.parametrize(
    "text",
    [
        "x = " + "-" * 100000 + "1\n",  # seeds 102193, 102700, 102717: MemoryError from CPython's parser
        "MPS_XFAILLIST = {" + "(" * 300 + "}\n",  # a SyntaxError (too many nested parentheses)
    ],
    ids=["memory-error", "too-many-parentheses"],
)
def test_python_too_deep_for_cpython_is_an_error_not_a_crash(tmp_path, text):
    facts = facts_in_time("common_mps", text)
    assert facts.errors and facts.errors[0].path == "fixtures/x"
    (tmp_path / "common_mps.py").write_text(text)
    result = lint(LintOptions(paths=[str(tmp_path / "common_mps.py")], select=["ALL"], cwd=tmp_path))
    assert not result.internal_errors
    assert [e.path for e in result.errors] == ["common_mps.py"]


@pytest.mark.parametrize("masker", [mask_metal, mask_objc])
def test_masking_keeps_length_and_breaks_on_the_crash_inputs(masker):
    for text in ["[" * 3000, 'template [[host_name("x")]]' + " \n" * 5000, 'R"x(' * 100 + "\r\u2028\x00" + "[[" * 500]:
        out = masker(text)
        assert len(out) == len(text)
        assert [i for i, c in enumerate(out) if c == "\n"] == [i for i, c in enumerate(text) if c == "\n"]


def test_python_lone_carriage_returns_keep_spans_right():
    """seed 1039320 (shader_debug.py, 3 mutations): a lone CR is a line break to Python's tokenizer but not
    to LineIndex, so ast line numbers ran past the file's lines (IndexError) or pointed at the wrong place."""
    text = "import torch\r\r\rMPS_XFAILLIST = {\n    'add': [torch.float16],\r}\rlib = torch.mps.compile_shader(\r'kernel void f() {}')\n"
    facts = facts_in_time("python", text)
    (x,) = facts.xfails
    assert x.op == "add" and text[x.span.start : x.span.end].startswith("'add'")
    ((a, b),) = facts.shaders
    assert text[a:b] == "kernel void f() {}"


def test_metal_attribute_scan_is_linear_without_closing_brackets():
    """seed 1045194 (alpha_ternary_ops.metal, mutated to 60 KB): 29,000 `[[` and no `]]`; the attribute regex
    scanned to the end of the file from each of them (over a minute)."""
    t0 = time.monotonic()
    for text in ["[[" * 30000, "[[ buffer(0) " * 10000, "[[" + "x]" * 30000]:
        assert len(mask_metal(text)) == len(text)
    assert time.monotonic() - t0 < BOUND
    text = "kernel void f(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) { a[i] = b[c[i]]; }\n"
    masked = mask_metal(text)
    assert "[[" not in masked and "b[c[i]]" in masked
