"""Large-index runs (`mpslint smoke --large-index`, SMK405 index-overflow).

A kernel whose TOML spec has a `[kernel.large]` table is launched at the sizes the host would pass for a
tensor past 2^31 / 2^32 elements (`vars` there override the spec's), but only the threadgroups whose linear
thread position is near each window (default 2^31 and 2^32 elements; `elements_per_thread` converts for ILP
kernels).  Buffers bigger than 64 MiB are mapped sparse (mmap MAP_NORESERVE, PROT_NONE, with 2^31 elements of
PROT_NONE address space below them): the runtime records the first touch of every page with the thread that
made it and opens the page, so only touched pages ever become memory.

Judgement: a thread whose element position is at or past 2^31 that touches a big buffer below the region the
selected threads of its window start at (byte offset < first element of the window x element size - a page),
or outside the buffer (a fault in the guard space below or past the end), used a wrapped 32-bit offset.
"""
from __future__ import annotations

from .api import SMK403, SMK404, SMK405

PAGE = 4096
TWO31 = 2 ** 31
TWO32 = 2 ** 32


def _linear(pos, n) -> int:
    return pos[0] + pos[1] * n[0] + pos[2] * n[0] * n[1]


def _unlinear(p: int, n) -> tuple:
    return (p % n[0], (p // n[0]) % n[1], p // (n[0] * n[1]))


def threads_per_grid(launch) -> tuple:
    g = (list(launch.grid) + [1, 1, 1])[:3]
    t = (list(launch.group) + [1, 1, 1])[:3]
    return tuple(g) if launch.mode == 0 else tuple(a * b for a, b in zip(g, t))


def select(launch, windows: list, ept: int) -> tuple[list, dict]:
    """The threadgroups around each window ((x, y, z) list) and, per group, the window's first element."""
    n = threads_per_grid(launch)
    t = (list(launch.group) + [1, 1, 1])[:3]
    total = n[0] * n[1] * n[2]
    tpg = t[0] * t[1] * t[2]
    groups: dict = {}
    for w in windows:
        first = None
        picked = []
        for p in (w // ept - 1, w // ept, w // ept + tpg):
            if 0 <= p < total:
                x = _unlinear(p, n)
                g = tuple(x[i] // t[i] for i in range(3))
                if g not in picked:
                    picked.append(g)
        for g in picked:
            lo = _linear(tuple(g[i] * t[i] for i in range(3)), n) * ept
            first = lo if first is None else min(first, lo)
        for g in picked:
            groups.setdefault(g, first)
    return list(groups), groups


def judge(v, res, launch, group_first: dict) -> tuple:
    """(code, status, message) of a large-index launch from its page touches or its fault."""
    info = v.large
    ept = info["elements_per_thread"]
    n = threads_per_grid(launch)
    t = (list(launch.group) + [1, 1, 1])[:3]
    bufs = info["buffers"]

    def where(tid):
        e = _linear(tid, n) * ept
        g = tuple(tid[i] // t[i] for i in range(3))
        return e, group_first.get(g, e)

    if res.status == "crash" and res.fault and res.fault.get("kind") in ("underflow", "overflow"):
        idx = int(res.fault.get("buf", -1))
        if idx in bufs:
            nbytes, esize, name = bufs[idx]
            off = int(res.fault.get("off", 0))
            tid = tuple(int(x) for x in res.fault.get("tid", "0,0,0").split(","))
            e, _first = where(tid)
            access = res.fault.get("access", "access")
            if off < 0:
                should = off + TWO32 * esize
                return SMK405, "failed", (
                    f"thread {tid} (element {e}, past 2^31) {_verb(access)} buffer {idx} `{name}` {-off} bytes before "
                    f"its start (element {off // esize}): a signed 32-bit offset wrapped negative; the 64-bit "
                    f"offset is byte {should} (element {should // esize}); compute the index in 64 bits "
                    "(long / int64_t) before multiplying by a stride")
            return SMK405, "failed", (
                f"thread {tid} (element {e}) {_verb(access)} buffer {idx} `{name}` at byte {off}, past its end "
                f"({nbytes} bytes): the offset is wrong at this size")
    if res.status == "crash":
        f = res.fault or {}
        tid = f.get("tid", "?")
        return SMK403, "failed", (f"the large-index launch crashed in thread ({tid}): {f.get('kind', res.message)} "
                                  f"{f.get('access', '')} at {f.get('addr', '?')}, outside every buffer")
    if res.status == "timeout":
        return SMK404, "failed", "the large-index launch did not finish within the timeout"
    if res.status != "ok":
        return None, "skipped", f"large-index launch not run: {res.message}"
    for buf, write, x, y, z, off in res.touches:
        if buf not in bufs:
            continue
        nbytes, esize, name = bufs[buf]
        tid = (x, y, z)
        e, first = where(tid)
        if e < TWO31:
            continue
        if off < first * esize - PAGE:
            k = (first * esize - off + TWO32 * esize - 1) // (TWO32 * esize)
            should = off + k * TWO32 * esize
            return SMK405, "failed", (
                f"thread {tid} (element {e}, past 2^31) {'writes' if write else 'reads'} buffer {buf} `{name}` at "
                f"byte {off} (element {off // esize}), below the region its threadgroups touch (from element "
                f"{first}): a 32-bit offset wrapped past 2^32; unwrapped it is byte {should} (element "
                f"{should // esize}); compute the index in 64 bits (long / int64_t)")
    touched = len(res.touches)
    if not touched:
        return None, "skipped", ("the threadgroups near the windows touched no big buffer: the [kernel.large] "
                                 "sizes do not reach them")
    mapped = sum(nb for nb, _e, _n in bufs.values())
    reached = [w for w in info["windows"] if w // ept < n[0] * n[1] * n[2]]   # windows inside the grid
    return None, "passed", (f"no wrapped offset: {touched} pages touched by the threadgroups near "
                            f"{' and '.join(_pow(w) for w in reached)} elements stay in their region "
                            f"({mapped / 2 ** 30:.1f} GiB mapped sparse, kernel process peak RSS "
                            f"{res.peak_rss_kb / 1024:.1f} MiB)")


def _verb(access: str) -> str:
    return {"write": "writes", "read": "reads"}.get(access, "accesses")


def _pow(w: int) -> str:
    return f"2^{w.bit_length() - 1}" if w & (w - 1) == 0 else str(w)
