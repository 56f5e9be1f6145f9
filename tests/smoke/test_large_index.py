"""Large-index runs (--large-index, SMK405): threadgroups near 2^31 and 2^32 elements only, big buffers mapped
sparse, page touches checked.  The fixture kernels (fixtures/smoke/large) compute the same offset as an int
(wraps negative at 2^31), a uint (wraps to 0 at 2^32) and a long (clean)."""
from __future__ import annotations

import json

from click.testing import CliRunner

from mpslint.smoke import large

from _smoke_helpers import FIXTURES, needs_toolchain

LARGE = FIXTURES / "large"


class _L:
    def __init__(self, grid, group, mode=0):
        self.grid, self.group, self.mode = grid, group, mode


def test_selection_takes_the_threadgroups_around_each_window():
    groups, first = large.select(_L((65536, 65537, 1), (256, 1, 1)), [2 ** 31, 2 ** 32], 1)
    assert (255, 32767, 0) in groups and (0, 32768, 0) in groups and (0, 65536, 0) in groups
    assert len(groups) <= 6 and first[(0, 65536, 0)] == 2 ** 32 - 256
    # an ILP kernel (4 elements per thread) reaches 2^31 elements at thread 2^29
    groups, _ = large.select(_L((2 ** 30, 1, 1), (256, 1, 1)), [2 ** 31], 4)
    assert (2 ** 29 // 256, 0, 0) in groups


@needs_toolchain
def test_wrapped_32_bit_offsets_are_found_and_a_64_bit_one_is_clean(smoke_cache):
    from mpslint.smoke.cli import smoke_cmd
    r = CliRunner().invoke(smoke_cmd, [str(LARGE / "large_index.metal"), "--specs", str(LARGE), "--large-index",
                                       "--backend", "host", "--no-progress", "--cache-dir", str(smoke_cache),
                                       "--format", "outcomes-json"])
    assert r.exit_code == 1, r.output
    out = {o["kernel"]: o for o in json.loads(r.stdout)["outcomes"]}
    neg, wrap, ok = out["scale_int_offset"], out["scale_uint_offset"], out["scale_long_offset"]
    assert neg["code"] == "SMK405" and "thread (0, 32768, 0)" in neg["message"]
    assert "8589934592 bytes before its start" in neg["message"] and "element 2147483648" in neg["message"]
    assert wrap["code"] == "SMK405" and "at byte 0 (element 0)" in wrap["message"]
    assert "element 4294967296" in wrap["message"]
    assert ok["code"] is None and ok["status"] == "passed" and ok["variant"] == "large-index"
    # each wrapped offset is linked to the MTL204 finding on the same kernel's 32-bit index arithmetic
    assert "MTL204 flags the 32-bit offset arithmetic at" in neg["message"] and "large_index.metal:14:" in neg["message"]
    assert "large_index.metal:28:" in wrap["message"]
