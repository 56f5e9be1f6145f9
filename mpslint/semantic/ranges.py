"""Intervals: a small range arithmetic the model evaluates expressions with.

``Interval(lo, hi)`` holds Python integers; ``None`` means unbounded on that side. Operations are sound for the
integers they model (they never claim a bound the operands do not give); a product of two unbounded values is
unbounded, the product of bounded values is bounded by the corner products.
"""

from __future__ import annotations

from dataclasses import dataclass

INT32_MAX = (1 << 31) - 1
UINT32_MAX = (1 << 32) - 1


@dataclass(frozen=True)
class Interval:
    lo: int | None = None
    hi: int | None = None

    @staticmethod
    def point(v: int) -> "Interval":
        return Interval(v, v)

    @property
    def bounded(self) -> bool:
        return self.lo is not None and self.hi is not None

    def meet(self, other: "Interval") -> "Interval":
        lo = self.lo if other.lo is None else (other.lo if self.lo is None else max(self.lo, other.lo))
        hi = self.hi if other.hi is None else (other.hi if self.hi is None else min(self.hi, other.hi))
        return Interval(lo, hi)

    def join(self, other: "Interval") -> "Interval":
        lo = None if self.lo is None or other.lo is None else min(self.lo, other.lo)
        hi = None if self.hi is None or other.hi is None else max(self.hi, other.hi)
        return Interval(lo, hi)

    def within(self, lo: int, hi: int) -> bool:
        return self.lo is not None and self.hi is not None and lo <= self.lo and self.hi <= hi

    def __str__(self) -> str:
        return f"[{'-inf' if self.lo is None else self.lo}, {'+inf' if self.hi is None else self.hi}]"


TOP = Interval()
NONNEG = Interval(0, None)


def add(a: Interval, b: Interval) -> Interval:
    return Interval(None if a.lo is None or b.lo is None else a.lo + b.lo, None if a.hi is None or b.hi is None else a.hi + b.hi)


def neg(a: Interval) -> Interval:
    return Interval(None if a.hi is None else -a.hi, None if a.lo is None else -a.lo)


def sub(a: Interval, b: Interval) -> Interval:
    return add(a, neg(b))


def mul(a: Interval, b: Interval) -> Interval:
    if a == Interval(0, 0) or b == Interval(0, 0):
        return Interval(0, 0)
    if not (a.bounded and b.bounded):
        # non-negative times non-negative stays non-negative
        if (a.lo is not None and a.lo >= 0) and (b.lo is not None and b.lo >= 0):
            return Interval(a.lo * b.lo, None)
        return TOP
    c = [a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi]
    return Interval(min(c), max(c))


def div(a: Interval, b: Interval) -> Interval:
    """Integer division truncating toward zero, for a divisor known positive; otherwise |a| bounds it."""
    if b.lo is not None and b.lo > 0 and a.lo is not None and a.lo >= 0:
        return Interval(0 if a.hi is None else a.lo // (b.hi if b.hi is not None else a.lo + 1), None if a.hi is None else a.hi // b.lo)
    if a.bounded:
        m = max(abs(a.lo), abs(a.hi))
        return Interval(-m, m)
    return TOP


def mod(a: Interval, b: Interval) -> Interval:
    if b.hi is not None and b.lo is not None and b.lo > 0:
        if a.lo is not None and a.lo >= 0:
            return Interval(0, b.hi - 1 if a.hi is None else min(a.hi, b.hi - 1))
        return Interval(-(b.hi - 1), b.hi - 1)
    if a.lo is not None and a.lo >= 0:
        return Interval(0, a.hi)
    return TOP


def bit_and(a: Interval, b: Interval) -> Interval:
    his = [m.hi for m in (a, b) if m.lo is not None and m.lo >= 0 and m.hi is not None]
    return Interval(0, min(his)) if his else TOP


def shift_left(a: Interval, b: Interval) -> Interval:
    if a.bounded and b.bounded and a.lo >= 0 and 0 <= b.lo and b.hi < 128:
        return Interval(a.lo << b.lo, a.hi << b.hi)
    return TOP


def shift_right(a: Interval, b: Interval) -> Interval:
    if a.lo is not None and a.lo >= 0 and b.lo is not None and b.lo >= 0:
        return Interval(0, None if a.hi is None else a.hi >> b.lo)
    return TOP


def minimum(a: Interval, b: Interval) -> Interval:
    lo = None if a.lo is None or b.lo is None else min(a.lo, b.lo)
    his = [x for x in (a.hi, b.hi) if x is not None]
    return Interval(lo, min(his) if his else None)


def maximum(a: Interval, b: Interval) -> Interval:
    los = [x for x in (a.lo, b.lo) if x is not None]
    hi = None if a.hi is None or b.hi is None else max(a.hi, b.hi)
    return Interval(max(los) if los else None, hi)


BINARY = {"+": add, "-": sub, "*": mul, "/": div, "%": mod, "&": bit_and, "<<": shift_left, ">>": shift_right}
