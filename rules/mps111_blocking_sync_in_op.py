"""
## What it does
Flags, inside an op's host code (files under `operations/`), a call that makes the CPU wait for the
GPU: `commit(true)`, `commitAndWait()`, `synchronize(SyncType::COMMIT_AND_WAIT)` or any other call
passed `COMMIT_AND_WAIT` (`runMPSGraph(..., SyncType::COMMIT_AND_WAIT)`),
`[commandBuffer waitUntilCompleted]`, and `.cpu()` copies of tensors not known to be on the CPU.

## Why is this bad?
A blocking commit drains every op queued on the MPS stream, not just this one, and leaves the GPU
idle while Python prepares the next op. An op that synchronises on every call turns a pipelined model
into a serial one. The stream's normal path (`SyncType::COMMIT` or `COMMIT_ADAPTIVE`, and letting the
next op or the user's own `synchronize()` drain it) is what PyTorch ops use; reading results back is
only needed when the host must know a value (an output size), and error checks belong on the device.

## Example
```objc
runMPSGraph(stream, cachedGraph->graph(), feeds, results, SyncType::COMMIT_AND_WAIT);
auto counts = hist.cpu();
```

## Use instead
```objc
runMPSGraph(stream, cachedGraph->graph(), feeds, results);
// keep `hist` on the device; report invalid input with TORCH_REPORT_ERROR in the kernel
```

## How to fix
Drop the explicit wait (use the default `SyncType::COMMIT`/`COMMIT_ADAPTIVE`), keep intermediate
tensors on the device, and if a host value is truly needed (an output shape), read just that value
and say so with `// mpslint: ignore[MPS111]`. Not flagged: a wait followed by a direct CPU read of
GPU memory (`data_ptr`, `[buffer contents]`, `memcpy`, a shared-buffer pointer), as in `.item()`'s own
implementation, where the wait is the point, and a wait under `if (!non_blocking)`, which the caller
asked for. `.cpu()` copies are reported at `info` severity (an op
sometimes needs a host value, such as an output size); those that only feed a check are MPS103's
business and are not reported here twice. Not flagged either: a `.cpu()` handed to an `at::` op (an explicit
CPU fallback, whose result is copied back) and `.cpu().item()` (one value, exactly like `.item()`).

Off by default (`--select MPS111`). On PyTorch's tree (`docs/real-world.md`, fourth run, strict count) its
findings were a wait in a static function nothing calls and a wait right before a data-dependent `.item()`
that waits anyway: a stall worth a look in a performance audit, not a defect to fix in CI.

Guide: *Error Reporting from Kernels* — "NEVER copy results to CPU ...; the stall happens every time the op runs".
"""

from __future__ import annotations

import re

from mpslint.model import Severity
from mpslint.rule import Rule, rule_by_code

_OPS_PATH = re.compile(r"(?:^|/)operations/[^/]+\.(?:mm|cpp|h)$")
# the CPU reads GPU memory itself after the wait (`.item()`'s own implementation, shared-buffer reads): the wait is the point
_HOST_READ = re.compile(r"\b(?:data_ptr|const_data_ptr|contents|memcpy|getSharedBufferPtr|cpu_ptr)\b")


class BlockingSyncInOp(Rule):
    code = "MPS111"
    default_enabled = False  # measured below the default set's bar: see "Off by default" above
    name = "blocking-sync-in-op"
    severity = Severity.WARNING
    scope = "host"
    summary = "`COMMIT_AND_WAIT`, `commit(true)`, `waitUntilCompleted` or `.cpu()` inside an op stalls the MPS stream"
    guide = "Error Reporting from Kernels"

    def check(self, ctx):
        mps103 = rule_by_code("MPS103")
        checker = mps103() if mps103 is not None else None
        for path in sorted(ctx.project.hosts):
            if not _OPS_PATH.search(path):
                continue
            for fn in ctx.project.hosts[path].functions:
                reported_by_103 = set()
                if checker is not None:
                    reported_by_103 = {f.span.start for f in checker._check_fn(ctx, path, fn)}
                for call in fn.calls:
                    what = self._blocking(call)
                    if what is None:
                        continue
                    if call.name != "cpu" and any(_HOST_READ.search(s.text) for s in fn.stmts[call.stmt + 1 :]):
                        continue
                    if call.stmt >= 0 and any("non_blocking" in fn.stmts[a].text for a in fn.stmts[call.stmt].parents):
                        continue  # `if (!non_blocking) wait`: the caller asked for a blocking copy
                    if call.name == "cpu":
                        if call.span.start in reported_by_103 or (checker is not None and checker._cpu_known(fn, call.receiver)):
                            continue
                        if not call.receiver or re.search(r"\.cpu\(\)|\.to\(\s*(at::)?kCPU", call.receiver):
                            continue
                        text = ctx.project.sources[path].text
                        if re.match(r"\s*\.\s*item\b", text[call.span.end : call.span.end + 40]):
                            continue  # `.cpu().item()` reads one value, like `.item()` (MPS103's business)
                        if any(
                            c.callee.startswith("at::") and c.span.start < call.span.start and call.span.end <= c.span.end
                            for c in fn.calls
                        ):
                            continue  # `at::op(x.cpu())`: a deliberate CPU fallback, the copy is the algorithm
                    yield ctx.finding(
                        self,
                        path,
                        call.span,
                        f"{what} blocks the CPU until the whole MPS stream drains, on every call of `{fn.name.split('::')[-1]}`; "
                        f"commit without waiting (`SyncType::COMMIT`/`COMMIT_ADAPTIVE`) and keep values on the device.",
                        # a host copy is sometimes what the op needs (an output size): reported, at a lower severity
                        severity=Severity.INFO if call.name == "cpu" else None,
                    )

    @staticmethod
    def _blocking(call) -> str | None:
        if call.name == "commit" and call.args and call.args[0].text.strip() == "true":
            return "`commit(true)`"
        if call.name in ("commitAndWait", "waitUntilCompleted"):
            return f"`{call.name}()`"
        if any(re.fullmatch(r"\s*(?:[\w]+::)*COMMIT_AND_WAIT\s*", a.text) for a in call.args):
            if call.name == "synchronize":
                return "`synchronize(SyncType::COMMIT_AND_WAIT)`"
            return f"`{call.name}(..., SyncType::COMMIT_AND_WAIT)`"
        if call.name == "cpu" and not call.args:
            return f"`{call.receiver}.cpu()`"
        return None
