"""MPS105-MPS112 on the torch 2.13.0 wheel's real mps and c10/metal headers (skipped without torch).

The host headers (OperationUtils.h with the exec_*_kernel_with_params templates, MultiTensorApply.h)
split, guard empty iterators, rethrow and bind with mtl_setArgs: the host rules must stay silent on
them. The Metal headers hold hand-written ceiling divisions, checked by hand: every one is a real
`(a + b - 1) / b`.
"""

from __future__ import annotations

import re

from mpslint.engine import LintOptions, lint

HOST_CODES = ["MPS105", "MPS106", "MPS107", "MPS108", "MPS110", "MPS111", "MPS112"]

# (file name, line) of every (a + b - 1) / b in the wheel's Metal headers, checked by hand
HAND_CHECKED_MPS109 = {
    ("PrefillAttention.h", 55),
    ("SortRadix.h", 232),
    ("SortRadix.h", 285),
    ("SortRadix.h", 464),
    ("reduction_utils.h", 226),
    ("reduction_utils.h", 253),
    ("reduction_utils.h", 278),
    ("reduction_utils.h", 297),
    ("reduction_utils.h", 316),
    ("reduction_utils.h", 381),
    ("reduction_utils.h", 408),
}


def test_host_rules_silent_on_real_host_headers(real_tree):
    result = lint(LintOptions(paths=[str(real_tree)], select=HOST_CODES))
    assert not result.internal_errors
    hosts = [p for p in result.project.hosts if p.endswith((".h", ".mm"))]
    assert any(p.endswith("OperationUtils.h") for p in hosts) and any(p.endswith("MultiTensorApply.h") for p in hosts)
    assert [f"{f.path}:{f.span.line} {f.code}" for f in result.findings] == []


def test_exec_kernel_templates_are_seen_as_splitting(real_tree):
    """The facts behind the silence: the header's exec_*_with_params recurse over sub-iterators and guard numel()."""
    from mpslint.semantic import hostflow as hf
    from mpslint.semantic.model import semantic_model

    result = lint(LintOptions(paths=[str(real_tree)], select=["MPS105"]))
    utils = next(f for p, f in result.project.hosts.items() if p.endswith("OperationUtils.h"))
    model = semantic_model(result.project)
    fns = {hf.short_name(fn.name): fn for fn in utils.functions}
    for name in ("exec_unary_kernel_with_params", "exec_binary_kernel_with_params"):
        fn = fns[name]
        fm = model.function(fn, utils)
        assert hf.subiter_loops(fn)
        launch = hf.launches(fn)
        assert launch
        for c in launch:
            bounds = fm.bounds(c.stmt)
            # the early return over the split proves the iterator 32-bit, the numel() == 0 return proves it non-empty
            assert "iter#32bit" in bounds, sorted(bounds)
            assert bounds["iter.numel()"].interval.lo >= 1


def test_mps109_on_real_metal_headers_is_the_hand_checked_set(real_tree):
    result = lint(LintOptions(paths=[str(real_tree)], select=["MPS109"]))
    got = {(f.path.rsplit("/", 1)[-1], f.span.line) for f in result.findings}
    assert got == HAND_CHECKED_MPS109
    for f in result.findings:
        # the call, plus <c10/metal/common.h> in the headers that do not include it themselves
        assert f.fix is not None and re.search(r"c10::metal::ceil_div(<\w+>)?\(", f.fix.edits[-1].content)
        # mixed operands (`uint(n)` and `short RTPTG`, `constexpr int SCAN_TPTG`) name the type they compute in
        if "uint(n_entries)" in f.fix.edits[-1].content:
            assert "ceil_div<uint>(" in f.fix.edits[-1].content and f.fix.applicability == "safe"
