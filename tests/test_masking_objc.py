"""Objective-C++ masking: same length and line breaks, and the shapes real MPS host code uses parse cleanly."""

from __future__ import annotations

import pytest

from mpslint.masking import mask_objc
from mpslint.parsing import error_counts, parse

CASES = {
    "message sends as brace-less if/for/while/else bodies": (
        "void f(id<MTLComputeCommandEncoder> enc, const float* p, int n) {\n"
        "  for (int i = 0; i < n; i++) [enc setBytes:&p[i] length:4 atIndex:4 + i];\n"
        "  if (n > 1) [enc setBytes:&p[0] length:4 atIndex:3]; else [enc setBytes:&p[1] length:4 atIndex:3];\n"
        "  while (n-- > 0) [enc setBytes:&p[0] length:4 atIndex:9];\n"
        "  float y = g(p)[2];\n}\n"
    ),
    "message send with ternaries": (
        "void f() {\n  auto* d = [MPSGraphPooling2DOpDescriptor descriptorWithKernelWidth:kW\n"
        "      paddingRight:ceil_mode ? padW * dW : padW\n"
        "      dataLayout:fmt == MemoryFormat::ChannelsLast ? NHWC\n"
        "                                                   : NCHW];\n}\n"
    ),
    "array, dictionary and boxed literals": (
        "void f() {\n  auto t = [g reshapeTensor:t withShape:@[ @-1, @(n) ] name:nil];\n"
        "  NSDictionary* feeds = @{p.getMPSGraphTensor() : p.getMPSGraphTensorData()};\n}\n"
    ),
    "block typedef and blocks with a return type": (
        "typedef MPSGraphTensor* (^UnaryOpBlock)(MPSGraph*, MPSGraphTensor*);\n"
        "void f() {\n  unary_op(self, out, \"trunc\", ^MPSGraphTensor*(MPSGraph* g, MPSGraphTensor* x) {\n"
        "    return [g truncateWithTensor:x name:nil];\n  });\n"
        "  c = cache->CreateCachedGraphAs<G>(key, ^ MPSCachedGraph * () {\n    return new G(nil);\n  });\n}\n"
    ),
    "blocks, autoreleasepool, @available": (
        "void f() {\n  dispatch_sync_with_rethrow(stream->queue(), ^() {\n    @autoreleasepool {\n"
        "      if (@available(macOS 15.0, *)) { x = 1; }\n      [enc setBuffer:b offset:0 atIndex:1];\n    }\n  });\n"
        "  dispatch_sync(q, ^{ y = a ^ (b); });\n}\n"
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_masked_objc_parses_cleanly(name):
    text = CASES[name]
    masked = mask_objc(text)
    assert len(masked) == len(text)
    assert [i for i, c in enumerate(masked) if c == "\n"] == [i for i, c in enumerate(text) if c == "\n"]
    assert error_counts(parse(masked)) == (0, 0), masked


def test_xor_is_not_a_block():
    assert mask_objc("int y = a ^ (b);") == "int y = a ^ (b);"


def test_message_sends_in_brace_less_control_bodies_become_calls():
    from mpslint.facts.host import host_facts
    from mpslint.source import LineIndex

    src = CASES["message sends as brace-less if/for/while/else bodies"]
    fn = host_facts("t.mm", src, LineIndex(src)).functions[0]
    sends = [(c.name, [a.text for a in c.args]) for c in fn.calls if c.message_send]
    assert sends == [
        ("setBytes", ["&p[i]", "4", "4 + i"]),
        ("setBytes", ["&p[0]", "4", "3"]),
        ("setBytes", ["&p[1]", "4", "3"]),
        ("setBytes", ["&p[0]", "4", "9"]),
    ]
    assert [c.name for c in fn.calls if not c.message_send] == ["g"]  # `g(p)[2]` stays a subscript
