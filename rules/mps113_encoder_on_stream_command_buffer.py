"""
## What it does
Flags a compute encoder opened directly on the MPS stream's command buffer —
`[stream->commandBuffer() computeCommandEncoder]`, or `[cb computeCommandEncoder]` where `cb` is
`torch::mps::get_command_buffer()`, `getCurrentMPSStream()->commandBuffer()`, a local initialised from
one of them, or a member that code assigns one of them to — when the function does not end PyTorch's
kernel coalescing (`stream->endKernelCoalescing()`) first. The stream's own implementation of
`commandEncoder()` is not flagged.

Also flags the stream's shared encoder taken outside the stream's serial queue: `stream->commandEncoder()`
called outside a `dispatch_sync(stream->queue(), ^{ ... })` block (or `dispatch_sync_with_rethrow`), in a
function no caller of which calls it from inside such a block.

## Why is this bad?
PyTorch keeps one compute encoder open on the stream's command buffer across kernels (kernel
coalescing). Metal allows one encoder at a time per command buffer, so opening a second one while
PyTorch's is still encoding aborts the process with `failed assertion 'A command encoder is already
encoding to this command buffer'` — typically only after a PyTorch op ran just before the custom one,
so simple tests pass and models crash (pytorch/pytorch#163721, huggingface/kernels#307). A fix in
PyTorch (pytorch/pytorch#164093) ends the pending encoder inside `torch::mps::get_command_buffer()`;
where it is in the installed PyTorch, a buffer fetched right before the encoder is opened is safe, one
fetched earlier is not (PyTorch ops in between open a new coalesced encoder). `stream->commandBuffer()`
never ends it.

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
from mpslint.model import Severity
from mpslint.rule import Rule

_STREAM = re.compile(r"(?i)stream|getCurrentMPSStream")


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
        for path in sorted(hosts):
            hf = hosts[path]
            funcs = {f.name: f for f in hf.functions}
            for op in hf.encoder_opens:
                fn = next((f for f in hf.functions if f.name == op.function and f.span.start <= op.span.start < f.span.end), None)
                if fn is None or fn.name in ("commandEncoder", "computeCommandEncoder") or funcs.get(op.function) is None:
                    continue  # the stream's own encoder
                how = extflow.stream_command_buffer(fn, op.receiver, fields, op.span.start)
                if how is None:
                    continue
                if any(c.name == "endKernelCoalescing" and c.span.start < op.span.start for c in fn.calls):
                    continue
                yield ctx.finding(
                    self,
                    path,
                    op.span,
                    f"a new compute encoder is opened on the MPS stream's command buffer (`{op.receiver}`) while PyTorch's "
                    "coalesced encoder may still be encoding on it (Metal aborts: 'A command encoder is already encoding "
                    "to this command buffer'); encode with `stream->commandEncoder()` (at::mps::getCurrentMPSStream(), "
                    "<ATen/mps/MPSStream.h>) or call `stream->endKernelCoalescing()` first.",
                )
        yield from self._encoder_outside_queue(ctx)

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
