"""
## What it does
Flags a host read of a GPU tensor — `.item()`, `.item<T>()`, `.cpu()`, `.to(kCPU)`,
`_local_scalar_dense(...)` — whose value only feeds a `TORCH_CHECK`, an `if` that throws, or an
assert, in the same or a later statement.

## Why is this bad?
Any host read of an MPS tensor forces a full GPU→CPU sync that drains *every* in-flight op on the
stream, not just the one being checked. In a real pipeline this stalls the whole queue on every call,
and the cost dwarfs the check. Guarding the read behind `is_mps()` does not help.

## Example
```objc
const int64_t max_idx = index.max().item<int64_t>();
TORCH_CHECK(max_idx < self.size(dim), "index out of range");
```

## Use instead
Validate on the device: pass `getCurrentMPSStream()->getErrorBuffer()` to the kernel, and in Metal
```metal
if (idx >= size) {
  TORCH_REPORT_ERROR(error_buf, "index ", idx, " out of range for size ", size);
  return;
}
```
The error surfaces as `c10::AcceleratorError` at the next sync the user already does.

## How to fix
Move the check into the kernel with `TORCH_REPORT_ERROR` from `<c10/metal/error.h>`. Not flagged: a
read whose value also sizes an output, drives a host loop or is passed to a kernel (the sync is needed
there), reads of tensors known to be on the CPU, and reads among a check's message arguments
(`TORCH_CHECK(false, "failed with code ", info.item<int>())`), which run only once the check has failed.

Off by default (`--select MPS103` or `extend-select = ["MPS103"]`). On PyTorch's tree (`docs/real-world.md`,
fourth run, strict count) 1 of its 4 findings was a patch a maintainer would merge: the others sync only under
`check_errors=True`, which asks for a host-side check, or read a status the device cannot report through the
error buffer (an MPS kernel's). Run it when auditing an op for stalls.

Guide: *Error Reporting from Kernels* — "NEVER copy results to CPU for the purposes of error checking".
"""

from __future__ import annotations

import re

from mpslint.semantic import hostflow as hf
from mpslint.model import Severity
from mpslint.rule import Rule

_CPU_ARG = re.compile(r"^(?:at::|c10::|torch::)?(?:kCPU|DeviceType::CPU|Device\((?:at::|c10::)?kCPU\)|\"cpu\")$")
_CPU_SOURCE = re.compile(r"\bkCPU\b|\.cpu\(\)|wrapped_scalar_tensor|scalar_to_tensor|scalar_tensor\(|\bat::tensor\(|from_blob")
_OTHER_USE = re.compile(
    r"\b(empty\w*|resize_\w*|resize_output|set_output\w*|zeros\w*|ones\w*|full\w*|narrow|slice|reshape|view|expand|arange|linspace|"
    r"mtl_setArgs|mtl_setBytes|mtl_setBuffer|mtl_dispatch\w*|MTLSizeMake|exec_\w+|select|index_select|new_empty|copy_)\b"
)


class SyncForErrorCheck(Rule):
    code = "MPS103"
    default_enabled = False  # measured below the default set's bar: see "Off by default" above
    name = "sync-for-error-check"
    severity = Severity.WARNING
    scope = "host"
    summary = "GPU->CPU sync (`.item()`, `.cpu()`) used only to validate input; report errors on the device"
    guide = "Error Reporting from Kernels"

    def check(self, ctx):
        for path in sorted(ctx.project.hosts):
            for fn in ctx.project.hosts[path].functions:
                yield from self._check_fn(ctx, path, fn)

    def _sync_calls(self, fn):
        for c in fn.calls:
            if c.name == "item" or c.name == "_local_scalar_dense" or c.name == "cpu" or (
                c.name == "to" and not c.template and c.args and _CPU_ARG.match(c.args[0].text)
            ):
                recv = c.receiver if c.name != "_local_scalar_dense" else (c.args[0].text if c.args else "")
                if not recv or re.search(r"\.cpu\(\)|\.to\(\s*(at::)?kCPU", recv):
                    continue  # the inner read is the one reported
                yield c, recv

    def _cpu_known(self, fn, recv: str) -> bool:
        root = re.match(r"[A-Za-z_]\w*", recv)
        if root is None:
            return False
        name = root.group(0)
        for p in fn.params:
            if p.name == name and re.search(r"\bScalar\b|optional<Scalar>", p.type):
                return True
        for d in fn.decls:
            if d.name == name and d.init is not None and _CPU_SOURCE.search(d.init.text):
                return True
        for c in fn.calls:
            if c.name in ("is_cpu",) and c.receiver.startswith(name):
                return True
            if c.name == "TORCH_CHECK" and c.args and re.search(re.escape(name) + r"\S*\.(is_cpu|device\(\)\.is_cpu)\(\)", c.args[0].text):
                return True
        return False

    def _check_fn(self, ctx, path, fn):
        for call, recv in self._sync_calls(fn):
            if self._cpu_known(fn, recv):
                continue
            stmt = call.stmt
            if stmt < 0:
                continue
            if self._feeds_check_directly(fn, call):
                yield self._report(ctx, path, call, recv, "feeds a check")
                continue
            var = self._assigned_var(fn, call)
            if var is None:
                continue
            wrx = re.compile(r"(?<![\w.])" + re.escape(var) + r"\b")
            check_use = other_use = False
            for k, s in enumerate(fn.stmts):
                if k <= stmt or not wrx.search(s.text):
                    continue
                if s.kind == "if_statement":
                    if hf.then_branch_throws(fn, k):
                        check_use = True
                    else:
                        other_use = True
                    continue
                if re.match(r"^(TORCH_CHECK\w*|TORCH_INTERNAL_ASSERT\w*|AT_ASSERT\w*|assert)\s*\(", s.text):
                    check_use = True
                    continue
                if re.match(r"^(TORCH_WARN\w*|LOG|VLOG)\b", s.text) or hf.THROWING.search(s.text):
                    continue
                other_use = True
            if check_use and not other_use:
                yield self._report(ctx, path, call, recv, f"is read into `{var}` only to validate it")

    @staticmethod
    def _feeds_check_directly(fn, call) -> bool:
        s = fn.stmts[call.stmt]
        for c in fn.calls:
            if c.stmt == call.stmt and hf.CHECK_CALL.fullmatch(c.name) and c.span.start <= call.span.start < c.span.end:
                # a read among the message arguments runs only when the check has already failed
                return not any(a.span.start <= call.span.start < a.span.end for a in c.args[1:])
        if s.kind == "if_statement" and s.span.start <= call.span.start < s.span.start + len(s.text) + 8 and hf.then_branch_throws(fn, call.stmt):
            return True
        return False

    @staticmethod
    def _assigned_var(fn, call) -> str | None:
        for d in fn.decls:
            if d.stmt == call.stmt and d.init is not None and d.init.span.start <= call.span.start < d.init.span.end:
                return d.name
        for a in fn.assigns:
            if a.stmt == call.stmt and a.rhs.span.start <= call.span.start < a.rhs.span.end and re.fullmatch(r"[A-Za-z_]\w*", a.lhs):
                return a.lhs
        return None

    def _report(self, ctx, path, call, recv, how):
        what = f"{recv}.{call.name}{'<' + call.template + '>' if call.template else ''}()" if call.name != "to" else f"{recv}.to({call.args[0].text})"
        return ctx.finding(
            self,
            path,
            call.span,
            f"`{what}` forces a GPU->CPU sync that drains the whole MPS stream, and its value {how}. "
            f"Validate on the device instead: report from the kernel with `TORCH_REPORT_ERROR(error_buf, ...)` "
            f"and bind `getCurrentMPSStream()->getErrorBuffer()`.",
        )
