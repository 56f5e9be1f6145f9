"""
## What it does
Flags `dispatch_sync(queue, ^{ ... })` whose block can throw a C++ exception: it calls `TORCH_CHECK`
(any of its variants), `TORCH_INTERNAL_ASSERT`, `AT_ERROR`, `throw`s, asks for a pipeline state
(`getPipelineStateForFunc`, `getCPLState`, `getKernelFunction`, any `...PipelineState(...)` helper
such as `lerpTensorPipelineState`, which throw when the kernel is missing or fails to compile), or calls
a function of the project that does one of these.

## Why is this bad?
A C++ exception cannot cross a libdispatch block: when one is thrown inside `dispatch_sync`, the
runtime calls `std::terminate` and the whole Python process dies with `libc++abi: terminating due
to uncaught exception` instead of raising a `RuntimeError` the user could catch. PyTorch's
`dispatch_sync_with_rethrow` (in `OperationUtils.h`) catches the exception inside the block and
rethrows it on the calling thread.

## Example
```objc
dispatch_sync(stream->queue(), ^() {
  auto pso = lib.getPipelineStateForFunc("fill_" + scalarToMetalTypeString(out));
  TORCH_CHECK(out.is_contiguous(), "fill: expected a contiguous output");
  ...
});
```

## Use instead
```objc
dispatch_sync_with_rethrow(stream->queue(), ^() {
  auto pso = lib.getPipelineStateForFunc("fill_" + scalarToMetalTypeString(out));
  ...
});
```

## How to fix
Replace `dispatch_sync` with `dispatch_sync_with_rethrow` (the automatic fix does this; it is safe: the
two take the same arguments and behave the same when nothing throws), or move the throwing calls
before the block. The fix writes the name the file can reach: plain `dispatch_sync_with_rethrow` where
`ATen/native/mps/OperationUtils.h` (which says `using namespace at::mps;`), `using namespace at::mps` or
`namespace at::mps {` makes it visible; elsewhere (an out-of-tree extension that includes only
`<torch/extension.h>`) the qualified `at::mps::dispatch_sync_with_rethrow`, adding
`#include <ATen/mps/MPSStream.h>`, which declares it, when the file does not include it. That declaration exists
from PyTorch 2.10 on (pytorch/pytorch#167445; before it the function was `at::native::mps::` in
`OperationUtils.h`): in an extension that does not require torch >= 2.10 (`min-torch`, or `torch>=2.10` in its
`[project] dependencies`) the message says so and the fix is offered as unsafe. Not flagged: blocks that only encode (bind, dispatch, profile),
`TORCH_INTERNAL_ASSERT_DEBUG_ONLY`, which is compiled out of release builds, and a throw under the
`default:` of a `switch` whose `case` labels name every enumerator of a project enum (a guard against a
corrupt value, such as a profiler's "invalid info type" check, not a path any valid value takes).

Guide: not in the guide; PyTorch's own convention (`dispatch_sync_with_rethrow`, `OperationUtils.h`).
"""

from __future__ import annotations

import re

from mpslint.semantic import hostflow as hf
from mpslint import names
from mpslint.fixedits import include_edit
from mpslint.model import Fix, Severity
from mpslint.rule import Rule

_THROWS = re.compile(
    r"^(?:TORCH_CHECK\w*|TORCH_INTERNAL_ASSERT|AT_ERROR|AT_ASSERT\w*|TORCH_INTERNAL_ASSERT(?!_DEBUG_ONLY)\w*|"
    r"getPipelineStateForFunc|getPipelineState|getCPLState|getKernelFunction|TORCH_CHECK_NOT_IMPLEMENTED|"
    r"(?!set|new)\w*PipelineState)$"  # lerpTensorPipelineState, renormPipelineState: per-file pipeline caches that TORCH_CHECK
)
_THROW_STMT = re.compile(r"^throw\b")
_RETHROW = "at::mps::dispatch_sync_with_rethrow"
# encoding helpers whose only throw is a guard against CPU tensors: not worth an abort report
_QUIET = {"mtl_setArgs", "mtl_setArg", "mtl_setBuffer", "mtl_setBytes", "bind_iter_tensors", "mtl_dispatch1DJob", "mtl_dispatch2DJob", "mtl_dispatch3DJob"}


class DispatchSyncWithoutRethrow(Rule):
    code = "MPS107"
    name = "dispatch-sync-without-rethrow"
    severity = Severity.ERROR
    scope = "host"
    summary = "`dispatch_sync` around a block that can throw; the exception aborts the process, use `dispatch_sync_with_rethrow`"
    fixable = "safe"
    guide = "OperationUtils.h (dispatch_sync_with_rethrow)"

    def check(self, ctx):
        hosts = ctx.project.hosts
        by_name: dict[str, list] = {}
        for path in hosts:
            for fn in hosts[path].functions:
                by_name.setdefault(hf.short_name(fn.name), []).append(fn)
        memo: dict[str, str | None] = {}
        enums = hf.enum_members(ctx.text(path) for path in sorted(hosts))

        def thrower(fn, depth=3, seen=frozenset()) -> str | None:
            """What in ``fn`` can throw (a description), or None."""
            key = f"{id(fn)}"
            if key in memo:
                return memo[key]
            why = None
            for k, s in enumerate(fn.stmts):
                if (s.kind == "throw_statement" or _THROW_STMT.match(s.text)) and not hf.unreachable_default(fn, k, enums):
                    why = "`throw`"
                    break
            if why is None:
                for c in fn.calls:
                    if _THROWS.match(c.name) and not hf.unreachable_default(fn, c.stmt, enums):
                        why = f"`{c.name}`"
                        break
            if why is None and depth > 0:
                for c in fn.calls:
                    if c.name in _QUIET or c.name in seen:
                        continue
                    for callee in by_name.get(c.name, []):
                        if callee is fn:
                            continue
                        inner = thrower(callee, depth - 1, seen | {c.name})
                        if inner:
                            why = f"`{c.name}` (which calls {inner})"
                            break
                    if why:
                        break
            memo[key] = why
            return why

        def old_torch(path) -> bool:
            """An extension that may run on a PyTorch older than 2.10, where `at::mps::dispatch_sync_with_rethrow`
            (<ATen/mps/MPSStream.h>) does not exist yet; PyTorch's own code is always its current release."""
            return ctx.file_context(path) == "extension" and (ctx.min_torch is None or ctx.min_torch < (2, 10))

        for path in sorted(hosts):
            text = ctx.text(path)
            for fn in hosts[path].functions:
                for call in fn.calls:
                    if call.name != "dispatch_sync" or call.callee not in ("dispatch_sync", "::dispatch_sync"):
                        continue
                    why = self._block_throws(fn, call, by_name, thrower, enums)
                    if why is None:
                        continue
                    start = text.find("dispatch_sync", call.span.start, call.span.end)
                    scope = names.scope_of(text, [i.header for i in hosts[path].includes])
                    name = names.spelling(_RETHROW, scope)  # unqualified only where the file reaches it so
                    header = names.DECLARES[_RETHROW]
                    add_include = not scope.declares(_RETHROW)
                    fix = None
                    if start >= 0:
                        end = start + len("dispatch_sync")
                        edits = [ctx.edit(path, start, end, name)]
                        if add_include:
                            edits.insert(0, include_edit(ctx, path, hosts[path].includes, header))
                        note = f" and include <{header}>" if add_include else ""
                        fix = Fix(f"Use `{name}`{note}", tuple(edits), "safe" if not old_torch(path) else "unsafe")
                    where = f" (declared in <{header}>, which this file does not include yet)" if add_include else ""
                    if old_torch(path):
                        where += (" — from PyTorch 2.10 on (pytorch/pytorch#167445); before it the function is "
                                  "`at::native::mps::dispatch_sync_with_rethrow` in <ATen/native/mps/OperationUtils.h>, so the "
                                  "automatic fix is unsafe until the extension requires torch >= 2.10 (`min-torch`)")
                    yield ctx.finding(
                        self,
                        path,
                        call.span if start < 0 else ctx.project.sources[path].index.span(start, start + len("dispatch_sync")),
                        f"the `dispatch_sync` block can throw ({why}); a C++ exception cannot cross the block and "
                        f"terminates the process. Use `{name}`, which rethrows on the caller{where}.",
                        fix=fix,
                    )

    @staticmethod
    def _block_throws(fn, call, by_name, thrower, enums=None) -> str | None:
        inside = [c for c in fn.calls if c is not call and call.span.start < c.span.start and c.span.end <= call.span.end and "dispatch_sync" in c.blocks]
        stmts = [(k, s) for k, s in enumerate(fn.stmts) if call.span.start < s.span.start and s.span.end <= call.span.end and "dispatch_sync" in s.blocks]
        for k, s in stmts:
            if s.kind == "throw_statement" and not hf.unreachable_default(fn, k, enums or {}):
                return "`throw`"
        for c in inside:
            if _THROWS.match(c.name) and not hf.unreachable_default(fn, c.stmt, enums or {}):
                return f"`{c.name}`"
        for c in inside:
            if c.name in _QUIET:
                continue
            for callee in by_name.get(c.name, []):
                if callee is fn:
                    continue
                why = thrower(callee)
                if why:
                    return f"`{c.name}`, which calls {why}"
        return None
