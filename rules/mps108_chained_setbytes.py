"""
## What it does
Flags two or more consecutive `mtl_setBytes(encoder, value, slot)` statements on the same encoder.

## Why is this bad?
Each `mtl_setBytes` names its slot by hand, so adding, removing or reordering a kernel argument means
renumbering every call, and a slot that no longer matches the kernel's `[[buffer(n)]]` binds a value
to the wrong parameter silently. `mtl_setArgs<N>(encoder, a, b, c)` binds `a`/`b`/`c` at slots
`N`/`N+1`/`N+2` with the same overload resolution as the individual calls (`std::array<long, 2>` →
`constant long2&`, `double` → `float`), in one line that reads like the kernel's signature.

## Example
```objc
mtl_setBytes(encoder, numel, 2);
mtl_setBytes(encoder, stride, 3);
mtl_setBytes(encoder, alpha, 4);
```

## Use instead
```objc
mtl_setArgs<2>(encoder, numel, stride, alpha);
```

## How to fix
Merge the run into one `mtl_setArgs<first slot>(encoder, values...)`. The automatic fix (safe) does
this when the slots are integer literals that increase by one and nothing but white space separates
the calls (a trailing `// comment` on a merged line is kept after the merged call); other runs are
reported without a fix.

Guide: *Working with TensorIterators* — "Prefer `mtl_setArgs<N>` over chained `mtl_setBytes`".
"""

from __future__ import annotations

import re

from mpslint.model import Fix, Severity
from mpslint.rule import Rule

_INT = re.compile(r"^(\d+)[uU]?$")


class ChainedSetBytes(Rule):
    code = "MPS108"
    name = "chained-setbytes"
    severity = Severity.INFO
    scope = "host"
    summary = "Consecutive `mtl_setBytes` calls on one encoder; bind them with one `mtl_setArgs<N>`"
    fixable = "safe"
    guide = "Working with TensorIterators"
    contexts = ("pytorch",)  # a PyTorch convention (mpslint.context)

    def check(self, ctx):
        for path in sorted(ctx.project.hosts):
            text = ctx.text(path)
            for fn in ctx.project.hosts[path].functions:
                for run in self._runs(fn):
                    yield self._report(ctx, path, text, fn, run)

    @staticmethod
    def _runs(fn):
        """Maximal runs of adjacent statements that are each exactly one `mtl_setBytes` call on one encoder."""
        single: dict[int, object] = {}
        for c in fn.calls:
            if c.name != "mtl_setBytes" or c.template or len(c.args) != 3 or c.stmt < 0:
                continue
            s = fn.stmts[c.stmt]
            if s.kind == "expression_statement" and re.match(r"(?:\w+::)*mtl_setBytes\s*\(", s.text) and s.text.count("mtl_setBytes") == 1:
                single[c.stmt] = c
        runs, cur = [], []
        for idx in sorted(single):
            c = single[idx]
            if cur:
                prev = cur[-1]
                ps, s = fn.stmts[prev.stmt], fn.stmts[idx]
                if idx == prev.stmt + 1 and ps.parents == s.parents and ps.blocks == s.blocks and prev.args[0].text == c.args[0].text:
                    cur.append(c)
                    continue
                if len(cur) > 1:
                    runs.append(cur)
            cur = [c]
        if len(cur) > 1:
            runs.append(cur)
        return runs

    def _report(self, ctx, path, text, fn, run):
        enc = run[0].args[0].text
        slots = [_INT.match(c.args[2].text) for c in run]
        fix = None
        first_stmt, last_stmt = fn.stmts[run[0].stmt], fn.stmts[run[-1].stmt]
        if all(slots):
            nums = [int(m.group(1)) for m in slots]
            raw = [text[fn.stmts[a.stmt].span.end : fn.stmts[b.stmt].span.start] for a, b in zip(run, run[1:])]
            gaps = [g.strip() for g in raw]
            # blank, or one trailing `// comment` on a call's line: the comment is kept after the merged call
            movable = all(not g or (g.startswith("//") and "\n" not in g and "\n" not in r.split("//", 1)[0]) for g, r in zip(gaps, raw))
            if nums == list(range(nums[0], nums[0] + len(nums))) and movable:
                values = ", ".join(ctx.source(path, c.args[1].span) for c in run)
                comments = " ".join(g for g in gaps if g)
                qual = run[0].callee[: -len("mtl_setBytes")]
                new = f"{qual}mtl_setArgs<{nums[0]}>({ctx.source(path, run[0].args[0].span)}, {values});" + (f" {comments}" if comments else "")
                fix = Fix(f"Merge into `mtl_setArgs<{nums[0]}>`", (ctx.edit(path, first_stmt.span.start, last_stmt.span.end, new),), "safe")
        slot_txt = ", ".join(c.args[2].text for c in run)
        how = (
            f"use `mtl_setArgs<{run[0].args[2].text}>({enc}, {', '.join(c.args[1].text for c in run)})`"
            if fix
            else "bind them with `mtl_setArgs<N>` (reorder the kernel's arguments so the slots are consecutive)"
        )
        return ctx.finding(
            self,
            path,
            run[0].span,
            f"{len(run)} consecutive `mtl_setBytes` calls on `{enc}` (slots {slot_txt}); {how}.",
            fix=fix,
        )
