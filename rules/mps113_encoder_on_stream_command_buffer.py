"""
## What it does
Flags a compute encoder opened directly on the MPS stream's command buffer —
`[stream->commandBuffer() computeCommandEncoder]`, or `[cb computeCommandEncoder]` where `cb` is
`torch::mps::get_command_buffer()`, `getCurrentMPSStream()->commandBuffer()`, a local initialised from
one of them, a member that code assigns one of them to, or a parameter every visible caller passes one of
them for — when the function does not end PyTorch's
kernel coalescing (`stream->endKernelCoalescing()`) first. The stream's own implementation of
`commandEncoder()` is not flagged. A function that opens several encoders on the same buffer is reported at
the first: the `endKernelCoalescing()` that fixes it comes before all of them.

Also flags the stream's shared encoder taken outside the stream's serial queue: `stream->commandEncoder()`
called outside a `dispatch_sync(stream->queue(), ^{ ... })` block (or `dispatch_sync_with_rethrow`), in a
function no caller of which calls it from inside such a block.

## Why is this bad?
PyTorch keeps one compute encoder open on the stream's command buffer across kernels (kernel
coalescing). Metal allows one encoder at a time per command buffer, so opening a second one while
PyTorch's is still encoding aborts the process with `failed assertion 'A command encoder is already
encoding to this command buffer'` — typically only after a PyTorch op ran just before the custom one,
so simple tests pass and models crash (pytorch/pytorch#163721, huggingface/kernels#307). A fix in
PyTorch (pytorch/pytorch#164093, in 2.10) ends the pending encoder inside `torch::mps::get_command_buffer()`:
when the code needs torch >= 2.10 (`torch>=2.10` in the `pyproject.toml`'s `[project] dependencies`, or
`min-torch = "2.10"` in `[tool.mpslint]`), a buffer fetched right before the encoder is opened (only tensor
accessors, the MPS queue helpers, checks and Metal calls in between) is not flagged; one fetched earlier is
(a PyTorch op in between opens a new coalesced encoder, and the message names it). Without that floor the
message says which release makes the pattern safe. `stream->commandBuffer()` never ends it.

`commandEncoder()` returns the encoder every coalesced kernel shares, and `endKernelCoalescing()` (run by
PyTorch on the stream's queue: commits, synchronizes, blits) ends and releases it: fetched outside the
queue, it can be released while the op still encodes with it (SIGSEGV, or the assertion above). PyTorch
moved every such fetch of its own inside the queue (pytorch/pytorch#197836) and asserts it
(pytorch/pytorch#198039).

## Example
```objc
id<MTLCommandBuffer> cb = torch::mps::get_command_buffer();
dispatch_sync(torch::mps::get_dispatch_queue(), ^{
  id<MTLComputeCommandEncoder> enc = [cb computeCommandEncoder];
  ...
  [enc endEncoding];
});
```

## Use instead
```objc
auto* stream = at::mps::getCurrentMPSStream();  // <ATen/mps/MPSStream.h>
dispatch_sync(stream->queue(), ^{
  id<MTLComputeCommandEncoder> enc = stream->commandEncoder();  // PyTorch's coalesced encoder: do not end it
  ...
});
```

## How to fix
Encode with the stream's encoder (`stream->commandEncoder()`; it is ended by PyTorch), or call
`stream->endKernelCoalescing()` before opening your own encoder on the stream's command buffer. Fetch
`stream->commandEncoder()` inside the block that runs on `stream->queue()`.

Guide: *Command buffers and the MPS stream*.
"""

from __future__ import annotations

import re

from mpslint.semantic import extflow
from mpslint.semantic.hostflow import call_sites, visible_sites
from mpslint.semantic.hostflow import short_name as hf_short
from mpslint.semantic.model import semantic_model
from mpslint.model import Severity
from mpslint.rule import Rule

_STREAM = re.compile(r"(?i)stream|getCurrentMPSStream")
_PUBLIC_FETCH = re.compile(r"(?:\b|::)get_command_buffer\s*\(")  # over the resolved call text extflow returns
_FETCH_ENDS_ENCODER = (2, 10)
# what may run between the fetch and the encoder without launching a PyTorch op: tensor accessors, the MPS
# queue and buffer helpers, checks, Metal object calls
_ACCESSORS = frozenset({
    "numel", "size", "sizes", "stride", "strides", "storage_offset", "element_size", "itemsize", "nbytes", "dim",
    "ndimension", "scalar_type", "dtype", "device", "is_contiguous", "data_ptr", "storage", "data", "options",
    "is_mps", "is_cpu", "defined", "get", "value", "has_value",
})
_QUIET_FREE = frozenset({
    "get_dispatch_queue", "get_command_buffer", "getCurrentMPSStream", "getMTLBufferStorage", "dispatch_sync",
    "dispatch_sync_with_rethrow", "MTLSizeMake", "min", "max", "ceil_div", "static_cast", "TORCH_CHECK",
    "TORCH_INTERNAL_ASSERT", "TORCH_CHECK_VALUE", "queue", "commandBuffer",
})


def _fetch_end(fn, op) -> int:
    """Where the command buffer ``op`` opens its encoder on was fetched: the end of the last declaration or
    assignment of that local before the open (the open itself for an inline fetch)."""
    name = op.receiver.strip()
    best = None
    for d in fn.decls:
        if d.name == name and d.init is not None and d.span.start < op.span.start:
            best = max(best or 0, d.span.end)
    for a in fn.assigns:
        if a.lhs == name and a.op == "=" and a.span.start < op.span.start:
            best = max(best or 0, a.span.end)
    return best if best is not None else op.span.start


def _op_between(model, fn, facts, start: int, end: int, names: set[str]) -> str | None:
    """A call between ``start`` and ``end`` that may launch a PyTorch op (and so open a new coalesced encoder):
    a tensor method other than an accessor, an `at::`/`torch::` function, a function of the project. None when
    only accessors, the MPS queue/buffer helpers, checks and Metal calls run there."""
    fm = None
    for c in fn.calls:
        if not (start <= c.span.start < end) or c.message_send or c.name in _QUIET_FREE:
            continue
        if c.receiver:
            if c.name in _ACCESSORS or c.tree is None or c.tree.receiver is None:
                continue
            fm = fm or model.function(fn, facts)
            if fm.type_of(c.tree.receiver, c.stmt).kind == "tensor":
                return c.callee
            continue
        if c.callee.startswith(("at::", "torch::")) or c.name in names:
            return c.callee
    return None


class EncoderOnStreamCommandBuffer(Rule):
    code = "MPS113"
    name = "encoder-on-stream-command-buffer"
    severity = Severity.ERROR
    scope = "host"
    contexts = ("pytorch", "extension")  # a hazard wherever the MPS stream is used
    summary = "Compute encoder opened on the MPS stream's command buffer without ending PyTorch's coalesced encoder"
    guide = "Command buffers and the MPS stream"

    def check(self, ctx):
        hosts = ctx.project.hosts
        fields = extflow.stream_fields(hosts)
        model = semantic_model(ctx.project)
        names = {hf_short(f.name) for facts in hosts.values() for f in facts.functions}
        sites = call_sites(hosts)
        for path in sorted(hosts):
            hf = hosts[path]
            funcs = {f.name: f for f in hf.functions}
            reported: set[tuple[int, str]] = set()
            for op in hf.encoder_opens:
                fn = next((f for f in hf.functions if f.name == op.function and f.span.start <= op.span.start < f.span.end), None)
                if fn is None or fn.name in ("commandEncoder", "computeCommandEncoder") or funcs.get(op.function) is None:
                    continue  # the stream's own encoder
                how = extflow.stream_command_buffer(fn, op.receiver, fields, op.span.start)
                passed = how is None
                if passed:
                    how = self._passed_in(fn, path, op.receiver.strip(), fields, sites)
                if how is None:
                    continue
                if any(c.name == "endKernelCoalescing" and c.span.start < op.span.start for c in fn.calls):
                    continue
                if (fn.span.start, op.receiver.strip()) in reported:
                    continue  # a later encoder on the same buffer: the fix before the first one covers it
                reported.add((fn.span.start, op.receiver.strip()))
                note = ""
                if _PUBLIC_FETCH.search(how) and not passed:
                    # `torch::mps::get_command_buffer()` ends PyTorch's encoder itself from 2.10 on (#164093)
                    fetched = _fetch_end(fn, op)
                    between = _op_between(model, fn, hosts[path], fetched, op.span.start, names)
                    if between is None and ctx.min_torch is not None and ctx.min_torch >= _FETCH_ENDS_ENCODER:
                        continue  # fetched right before, on a PyTorch that ends the coalesced encoder in the fetch
                    if between is None:
                        note = (" `torch::mps::get_command_buffer()` ends that encoder itself only from PyTorch 2.10 on "
                                "(pytorch/pytorch#164093): if the extension requires torch >= 2.10, say so (`torch>=2.10` in "
                                "its [project] dependencies, or `min-torch = \"2.10\"` in [tool.mpslint]) and this is safe.")
                    else:
                        note = (f" `{between}` runs between fetching the buffer and opening the encoder: a PyTorch op there "
                                "opens a new coalesced encoder that the fetch did not end; fetch the buffer right before the "
                                "encoder, or call `stream->endKernelCoalescing()`.")
                yield ctx.finding(
                    self,
                    path,
                    op.span,
                    f"a new compute encoder is opened on the MPS stream's command buffer (`{op.receiver}`) while PyTorch's "
                    "coalesced encoder may still be encoding on it (Metal aborts: 'A command encoder is already encoding "
                    "to this command buffer'); encode with `stream->commandEncoder()` (at::mps::getCurrentMPSStream(), "
                    "<ATen/mps/MPSStream.h>) or call `stream->endKernelCoalescing()` first." + note,
                )
        yield from self._encoder_outside_queue(ctx)

    @staticmethod
    def _passed_in(fn, path, name, fields, sites) -> str | None:
        """A command-buffer parameter every visible caller fills with the stream's command buffer
        (`call_kernel(device, stream->commandBuffer(), ...)`, or a local of the caller holding it): that call."""
        idx = next((i for i, p in enumerate(fn.params) if p.name == name), None)
        if idx is None:
            return None
        calls = visible_sites(sites, fn, path)
        got = None
        for _p, caller, call in calls:
            if len(call.args) <= idx:
                return None
            how = extflow.stream_command_buffer(caller, call.args[idx].text, fields, call.span.start)
            if how is None:
                return None
            got = got or how
        return got

    def _encoder_outside_queue(self, ctx):
        graph = ctx.graph
        for path in sorted(ctx.project.hosts):
            for fn in ctx.project.hosts[path].functions:
                if fn.name in ("commandEncoder", "computeCommandEncoder"):
                    continue
                for c in fn.calls:
                    if c.name != "commandEncoder" or not _STREAM.search(c.receiver) or extflow.in_queue(c.blocks):
                        continue
                    if self._callers_in_queue(graph, f"impl:{path}:{fn.name}", fn.name):
                        continue
                    yield ctx.finding(
                        self,
                        path,
                        c.span,
                        f"`{c.callee}()` takes the stream's shared encoder outside the stream's serial queue: PyTorch may end "
                        "and release it (a commit, a synchronize) while this op still encodes with it; call it inside "
                        "`dispatch_sync(stream->queue(), ^{ ... })`.",
                    )
                    break

    @staticmethod
    def _callers_in_queue(graph, impl: str, name: str) -> bool:
        """Some caller calls the function from inside a dispatch-queue block (a helper encoding for its caller)."""
        for caller in graph.into(impl, "calls"):
            cf = graph.attrs(caller).get("function")
            if cf is not None and any(c.name == name and extflow.in_queue(c.blocks) for c in cf.calls):
                return True
        return False
