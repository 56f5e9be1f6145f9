"""
## What it does
Flags a compute encoder opened directly on the MPS stream's command buffer —
`[stream->commandBuffer() computeCommandEncoder]`, or `[cb computeCommandEncoder]` where `cb` is
`torch::mps::get_command_buffer()`, `getCurrentMPSStream()->commandBuffer()`, a local initialised from
one of them, or a member that code assigns one of them to — when the function does not end PyTorch's
kernel coalescing (`stream->endKernelCoalescing()`) first. The stream's own implementation of
`commandEncoder()` is not flagged.

## Why is this bad?
PyTorch keeps one compute encoder open on the stream's command buffer across kernels (kernel
coalescing). Metal allows one encoder at a time per command buffer, so opening a second one while
PyTorch's is still encoding aborts the process with `failed assertion 'A command encoder is already
encoding to this command buffer'` — typically only after a PyTorch op ran just before the custom one,
so simple tests pass and models crash. (pytorch/pytorch#163721; newer PyTorch releases end the pending
encoder inside `torch::mps::get_command_buffer()`, older ones do not.)

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
`stream->endKernelCoalescing()` before opening your own encoder on the stream's command buffer.

Guide: *Command buffers and the MPS stream*.
"""

from __future__ import annotations

from mpslint import extflow
from mpslint.model import Severity
from mpslint.rule import Rule


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
