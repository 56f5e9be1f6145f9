"""
## What it does
Flags the MPS stream's command buffer (`torch::mps::get_command_buffer()`,
`stream->commandBuffer()`) taken outside the stream's serial queue and then encoded into inside a
`dispatch_sync(queue, ^{ ... })` block: the command buffer is read into a local, or into a member
(`env.commandBuffer = torch::mps::get_command_buffer();`), before the block that uses it runs.

## Why is this bad?
The stream's command buffer changes whenever PyTorch commits (a synchronize, a `.item()`, the
allocator flushing): only code running on the stream's serial queue sees a stable one. A command buffer
fetched outside the queue can be committed by the time the block encodes into it — Metal then aborts
(`encoding on a committed command buffer`) or the kernel silently lands in a buffer PyTorch has already
waited for. PyTorch's own documentation asks for `get_command_buffer()` to be called with the
dispatch queue held.

## Example
```objc
id<MTLCommandBuffer> cb = torch::mps::get_command_buffer();
dispatch_sync(torch::mps::get_dispatch_queue(), ^{
  id<MTLComputeCommandEncoder> enc = [cb computeCommandEncoder];
  ...
});
```

## Use instead
```objc
dispatch_sync(torch::mps::get_dispatch_queue(), ^{
  id<MTLCommandBuffer> cb = torch::mps::get_command_buffer();
  ...
});
```

## How to fix
Fetch the command buffer (and the encoder) inside the block that runs on the stream's queue.

Opt-in (`--select MPS114`): when nothing runs between the fetch and the block the buffer cannot change,
and mpslint does not tell those cases apart.

Guide: *Command buffers and the MPS stream*.
"""

from __future__ import annotations

import re

from mpslint import extflow
from mpslint.model import Severity
from mpslint.rule import Rule


class CommandBufferOutsideQueue(Rule):
    code = "MPS114"
    name = "command-buffer-outside-queue"
    severity = Severity.WARNING
    scope = "host"
    default_enabled = False
    contexts = ("pytorch", "extension")
    summary = "MPS stream command buffer fetched outside the stream's serial queue, encoded into inside a dispatch block"
    guide = "Command buffers and the MPS stream"

    def check(self, ctx):
        hosts = ctx.project.hosts
        used_fields = self._fields_used_in_queue(hosts)
        for path in sorted(hosts):
            for fn in hosts[path].functions:
                fetches = [(d.name, d.init, d.span) for d in fn.decls if d.init is not None] + [(a.lhs, a.rhs, a.span) for a in fn.assigns if a.op == "="]
                for name, value, span in sorted(fetches, key=lambda t: t[2].start):
                    if not extflow.STREAM_CB_CALL.search(value.text) or extflow.in_queue(extflow.stmt_blocks(fn, span.start)):
                        continue
                    fm = re.search(r"(?:\.|->)\s*([A-Za-z_]\w*)$", name)
                    if fm:
                        if fm.group(1) not in used_fields:
                            continue
                    elif not self._used_in_queue(fn, name, span.start):
                        continue
                    yield ctx.finding(
                        self,
                        path,
                        value.span,
                        f"`{name}` takes the MPS stream's command buffer outside the stream's serial queue and a "
                        "`dispatch_sync` block encodes into it later; the stream may commit it in between: fetch it "
                        "inside the block.",
                    )

    @staticmethod
    def _used_in_queue(fn, name: str, after: int) -> bool:
        rx = re.compile(r"(?<![\w.>])" + re.escape(name) + r"\b")
        return any(s.span.start > after and extflow.in_queue(s.blocks) and rx.search(s.text) for s in fn.stmts)

    @staticmethod
    def _fields_used_in_queue(hosts) -> set[str]:
        fields = extflow.stream_fields(hosts)
        out = set()
        for hf in hosts.values():
            for fn in hf.functions:
                for s in fn.stmts:
                    if not extflow.in_queue(s.blocks):
                        continue
                    for f in fields:
                        if re.search(r"(?:\.|->)\s*" + re.escape(f) + r"\b", s.text):
                            out.add(f)
        return out
