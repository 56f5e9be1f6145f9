"""The questions the stream-protocol and contract rules ask: tensor origins, buffer bindings, stream buffers."""

from __future__ import annotations

from mpslint.semantic import extflow
from mpslint.facts.host import host_facts
from mpslint.source import LineIndex

SRC = """
void op(const at::Tensor& a, const at::Tensor& b) {
  auto ac = a.contiguous();
  auto fresh = at::empty({4}, a.options());
  auto typed = torch::zeros({4}, torch::TensorOptions().dtype(torch::kFloat));
  auto conv = b.to(at::kFloat).contiguous();
  id<MTLCommandBuffer> cb = torch::mps::get_command_buffer();
  id<MTLCommandBuffer> mine = [queue commandBuffer];
  TORCH_CHECK(b.scalar_type() == at::kHalf, "half");
  env.commandBuffer = stream->commandBuffer();
}
"""


def _fn():
    hf = host_facts("x/mps/op.mm", SRC, LineIndex(SRC))
    return hf, hf.functions[0]


def test_tensor_origin():
    _, fn = _fn()
    end = fn.span.end
    ac = extflow.tensor_origin(fn, "ac", end)
    assert ac.names == ("ac", "a") and ac.root == "a" and ac.contiguous and not ac.fresh
    fresh = extflow.tensor_origin(fn, "fresh", end)
    assert fresh.fresh and fresh.follows == "a" and not fresh.converted
    typed = extflow.tensor_origin(fn, "typed", end)
    assert typed.fresh and typed.converted
    conv = extflow.tensor_origin(fn, "conv", end)
    assert conv.converted and conv.contiguous and conv.root == "b"
    assert extflow.mentions_test(fn, "b", "dtype") and not extflow.mentions_test(fn, "a", "dtype")


def test_stream_command_buffers():
    hf, fn = _fn()
    fields = extflow.stream_fields({"x": hf})
    assert fields == {"commandBuffer"}
    assert extflow.stream_command_buffer(fn, "cb", fields)
    assert extflow.stream_command_buffer(fn, "mine", fields) is None
    assert extflow.stream_command_buffer(fn, "env.commandBuffer", fields)
    assert extflow.stream_command_buffer(fn, "stream->commandBuffer()", fields)


def test_buffer_storage_arg():
    assert extflow.buffer_storage_arg("getMTLBufferStorage(out)") == "out"
    assert extflow.buffer_storage_arg("at::native::mps::getMTLBufferStorage(x)") == "x"
    assert extflow.buffer_storage_arg("__builtin_bit_cast(id<MTLBuffer>, t.storage().data())") == "t"
    assert extflow.buffer_storage_arg("(__bridge id<MTLBuffer>)t.storage().data()") == "t"
    assert extflow.buffer_storage_arg("someBuffer") is None


def test_queue_blocks():
    assert extflow.in_queue(("dispatch_sync",)) and extflow.in_queue(("at::mps::dispatch_sync_with_rethrow",))
    assert not extflow.in_queue(("dispatch_once",)) and not extflow.in_queue(())


def test_launched_kernels_prefers_the_copy_the_host_file_embeds():
    # the host compiles the kernel from a string in its own file; a `.metal` copy beside it is not what runs
    from pathlib import Path

    from mpslint.engine import LintOptions, lint

    root = Path(__file__).resolve().parent.parent / "fixtures" / "ext" / "embed_ext"
    res = lint(LintOptions(paths=[str(root)], select=["MTL204"], cwd=root))
    graph = res.project.graph
    (impl,) = [n for n in graph.nodes("impl") if n.endswith(":ee_pipeline")]  # asks for `ee_rows` by name
    kernels = extflow.launched_kernels(graph, impl)
    host = graph.attrs(impl)["path"]
    copies = [p for mop in graph.nodes("mop") for p, _k in graph.attrs(mop).get("kernels", []) if graph.attrs(mop)["name"] == "ee_rows"]
    assert len(copies) == 2 and host in copies  # both copies are in the tree
    assert len(kernels) == 1 and kernels[0] in [k for mop in graph.nodes("mop") for p, k in graph.attrs(mop).get("kernels", []) if p == host]


def test_allocating_ops_called_as_namespace_functions_are_fresh():
    src = "void op(const at::Tensor& a) {\n  auto order = at::argsort(a);\n  auto sums = torch::cumsum(a, 0);\n  auto kept = a.view({-1});\n}\n"
    fn = host_facts("x/mps/op.mm", src, LineIndex(src)).functions[0]
    end = fn.span.end
    assert extflow.tensor_origin(fn, "order", end).fresh
    assert extflow.tensor_origin(fn, "sums", end).fresh
    assert not extflow.tensor_origin(fn, "kept", end).fresh
