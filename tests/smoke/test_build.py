"""Building: entry points and registration lines, caching, compile errors mapped to the .metal line."""
from __future__ import annotations

import time
from pathlib import Path

from mpslint.smoke import build

from _smoke_helpers import FIXTURES, needs_toolchain, needs_zig

pytestmark = needs_zig


@needs_toolchain
def test_entries_carry_family_types_and_registration_line(smoke_cache):
    res = build.build(FIXTURES / "good" / "unary_ops.metal", cache_dir=smoke_cache)
    assert res.status == "ok"
    by = {e["host_name"]: e for e in res.entries}
    e = by["exp2_dense_float_int"]
    assert e["base"] == "unary_dense" and e["targs"][0] == "int"
    src = (FIXTURES / "good" / "unary_ops.metal").read_text().splitlines()
    assert src[e["line"] - 1].startswith("REGISTER_UNARY_OP(exp2, int, float)")
    assert [(p["role"], p["kind"], p["type"]) for p in e["params"]] == [(0, 1, "float"), (1, 1, "int"),
                                                                       (2, 2, "uint"), (-1, 0, "uint")]
    assert {"silu_strided_castout_half", "neg_dense_scalar_long_long"} <= set(by)


def test_cache_hit_and_invalidation_by_included_header(tmp_path: Path, smoke_cache):
    (tmp_path / "helpers.h").write_text("#pragma once\ninline float twice(float x) { return 2 * x; }\n")
    k = tmp_path / "k.metal"
    k.write_text('#include "helpers.h"\n#include <metal_stdlib>\nusing namespace metal;\n'
                 "kernel void f(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) "
                 "{ o[i] = twice(o[i]); }\n")
    cache = tmp_path / "cache"
    first = build.build(k, cache_dir=cache)
    assert first.status == "ok" and not first.cached
    t0 = time.monotonic()
    again = build.build(k, cache_dir=cache)
    assert again.cached and time.monotonic() - t0 < 1.0 and again.so == first.so
    (tmp_path / "helpers.h").write_text("#pragma once\ninline float twice(float x) { return x + x; }\n")
    third = build.build(k, cache_dir=cache)
    assert not third.cached and third.key != first.key


def test_compile_error_lines(smoke_cache):
    from mpslint.smoke import diagnostics
    for name, line in (("compile_error.metal", 12), ("bad_registration.metal", 16)):
        path = FIXTURES / "bad" / name
        res = build.build(path, cache_dir=smoke_cache)
        assert res.status == "compile-error"
        assert diagnostics.locate(res.diagnostics[0], str(path))[0] == line
