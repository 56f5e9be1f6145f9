"""
## What it does
Flags the MPS stream's command buffer (`torch::mps::get_command_buffer()`,
`stream->commandBuffer()`) taken outside the stream's serial queue and then encoded into inside a
`dispatch_sync(queue, ^{ ... })` block: the command buffer is read into a local, with other work (a call
that may run PyTorch ops) between the fetch and the block, or into a member
(`env.commandBuffer = torch::mps::get_command_buffer();`) that a block encodes into later.

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

from mpslint.semantic import extflow
from mpslint.model import Severity
from mpslint.rule import Rule


_TRIVIAL = re.compile(r"get_dispatch_queue|queue|getCurrentMPSStream|get_command_buffer|commandBuffer|MTLSizeMake|TORCH_CHECK\w*|NSLog|device|MTLCreateSystemDefaultDevice")


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
                    else:
                        use = self._used_in_queue(fn, name, span.start)
                        if use is None or not self._work_between(fn, value.span.end, use):
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
    def _used_in_queue(fn, name: str, after: int) -> int | None:
        """Offset of the first statement inside a dispatch-queue block that mentions ``name`` after ``after``."""
        rx = re.compile(r"(?<![\w.>])" + re.escape(name) + r"\b")
        for s in fn.stmts:
            if s.span.start > after and extflow.in_queue(s.blocks) and rx.search(s.text):
                return s.span.start
        return None

    @staticmethod
    def _work_between(fn, start: int, end: int) -> bool:
        """Something that can run PyTorch work (and commit the stream) is called between the fetch and its use:
        not just the queue, the stream or a size being looked up."""
        for c in fn.calls:
            if start <= c.span.start < end and not extflow.in_queue(c.blocks) and not _TRIVIAL.fullmatch(c.name):
                if not (extflow.QUEUE_BLOCK.fullmatch(c.name) and c.span.end >= end):
                    return True
        return False

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
