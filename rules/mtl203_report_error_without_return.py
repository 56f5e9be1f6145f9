"""
## What it does
Flags a `TORCH_REPORT_ERROR(...)` in Metal code after which the thread goes on with the work the
check was guarding: on the path from the report there is no `return`, `continue`, `break` (or `goto`)
before execution leaves the `if` that detected the problem and reaches the statements that follow it.

Not flagged: a report followed (after any clean-up such as writing a sentinel or setting an error
flag) by `return`/`continue`/`break`; a report whose guard has an `else` branch holding the normal
path with nothing after it; a report at the end of the kernel or of a loop body; a guard that clamps
the value it tested (`if (idx >= n) { TORCH_REPORT_ERROR(...); idx = n - 1; }`). Barriers
(`threadgroup_barrier(...)`) on the way are ignored: every thread must reach them.

## Why is this bad?
`TORCH_REPORT_ERROR` only records a message; the host raises it as `c10::AcceleratorError` at the next
synchronization. The reporting thread keeps running, so an out-of-bounds index it just reported is
then used to read or write memory: the kernel corrupts other tensors (or faults the GPU) before the
error ever reaches Python.

## Example
```metal
long idx = indices[tid];
if (idx < 0 || idx >= long(self_numel)) {
  TORCH_REPORT_ERROR(error_buf, "index ", idx, " out of bounds for size ", long(self_numel));
}
self[idx] = values[tid];
```

## Use instead
```metal
long idx = indices[tid];
if (idx < 0 || idx >= long(self_numel)) {
  TORCH_REPORT_ERROR(error_buf, "index ", idx, " out of bounds for size ", long(self_numel));
  return;
}
self[idx] = values[tid];
```

## How to fix
End the error branch with `return;` (or `continue;` in a loop over elements), so the offending
element is skipped; put the normal path in an `else` if the kernel must do more afterwards.

Guide: *Error Reporting from Kernels* — "Skip the offending element afterwards so you don't also
corrupt memory".
"""

from __future__ import annotations

import re

from mpslint.model import Severity
from mpslint.rule import Rule

_JUMPS = {"return_statement", "continue_statement", "break_statement", "goto_statement", "throw_statement"}
_LOOPS = {"for_statement", "for_range_loop", "while_statement", "do_statement"}
_IDENT = re.compile(r"[A-Za-z_]\w*")
_BARRIER = re.compile(r"^(?:(?:::)?metal::)?(?:threadgroup_barrier|simdgroup_barrier)\s*\(")


class ReportErrorWithoutReturn(Rule):
    code = "MTL203"
    name = "report-error-without-return"
    severity = Severity.ERROR
    scope = "metal"
    summary = "TORCH_REPORT_ERROR not followed on its path by return/continue/break: the kernel goes on"
    guide = "Error Reporting from Kernels"

    def check(self, ctx):
        for mf in ctx.project.all_metal():
            for fn in mf.functions:
                for call in fn.calls:
                    if call.name != "TORCH_REPORT_ERROR" or call.stmt < 0 or call.stmt >= len(fn.stmts):
                        continue
                    after = _falls_through(fn, call.stmt)
                    if after is None:
                        continue
                    nxt = fn.stmts[after]
                    yield ctx.finding(
                        self,
                        mf.path,
                        call.span,
                        f"after `TORCH_REPORT_ERROR` the thread goes on to `{_short(nxt.text)}` (line {nxt.span.line}); "
                        "the report is only delivered at the next sync, so end the error branch with `return;` "
                        "(or `continue;` in a loop) to skip the offending element.",
                    )


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


def _followers(fn, i: int) -> list[int]:
    """Statements after ``i`` in the same block (same parents and branch), in order."""
    s = fn.stmts[i]
    out = []
    for j in range(i + 1, len(fn.stmts)):
        t = fn.stmts[j]
        if len(t.parents) < len(s.parents) or t.parents[: len(s.parents)] != s.parents:
            break  # left the block
        if t.parents == s.parents and t.branch == s.branch:
            out.append(j)
    return out


def _falls_through(fn, i: int) -> int | None:
    """Index of the first statement outside the report's guard that runs after the report, or None."""
    report = fn.stmts[i]
    guard_depth = None  # depth of the innermost enclosing if: statements inside it are the error branch
    for d in range(len(report.parents) - 1, -1, -1):
        if fn.stmts[report.parents[d]].kind == "if_statement":
            guard_depth = d
            break
    if guard_depth is None:
        return None  # an unconditional report (an assert-like kernel): nothing to skip
    guard = fn.stmts[report.parents[guard_depth]]
    tested = set(_IDENT.findall(guard.text)) - {"if", "constexpr", "IF_CONSTEXPR"}
    cur = i
    outside = False
    while True:
        for j in _followers(fn, cur):
            t = fn.stmts[j]
            if t.kind in _JUMPS:
                return None
            if _BARRIER.match(t.text):
                continue  # every thread must reach a barrier; it touches no element
            if not outside:
                # clean-up inside the error branch; a clamp of the tested value makes the element safe
                m = re.match(r"([A-Za-z_]\w*)\s*=[^=]", t.text)
                if m and m.group(1) in tested:
                    return None
                continue
            return j
        s = fn.stmts[cur]
        if not s.parents:
            return None  # end of the function
        parent_idx = s.parents[-1]
        parent = fn.stmts[parent_idx]
        if parent.kind in _LOOPS:
            if not outside:
                return None  # end of a loop body inside the error branch: the next element
            return None
        if parent_idx == report.parents[guard_depth]:
            outside = True
        cur = parent_idx
