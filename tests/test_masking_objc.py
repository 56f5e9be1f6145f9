"""Objective-C++ masking: same length and line breaks, and the shapes real MPS host code uses parse cleanly."""

from __future__ import annotations

import pytest

from mpslint.masking import mask_objc
from mpslint.parsing import error_counts, parse

CASES = {
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
