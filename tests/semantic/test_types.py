"""Types of expressions by C++ and MSL rules: literals, promotions, usual arithmetic conversions, ?:, casts,
typedefs, containers, struct fields, auto, and the PyTorch API's return types."""

from __future__ import annotations

import pytest

from ._build import fn_model, host_model, metal_model

_T = {
    "bool": ("bool", 1, False), "i8": ("int", 8, True), "u8": ("int", 8, False), "i16": ("int", 16, True),
    "u16": ("int", 16, False), "i32": ("int", 32, True), "u32": ("int", 32, False), "i64": ("int", 64, True),
    "u64": ("int", 64, False), "f16": ("float", 16, True), "f32": ("float", 32, True), "f64": ("float", 64, True),
}

HOST_PRELUDE = """
typedef uint32_t myidx_t;
using big_t = int64_t;
struct Params { uint32_t size; int64_t stride; float scale; uint32_t dims[4]; };
void f(const Tensor& t, TensorIteratorBase& iter, int64_t n64, int32_t n32, uint32_t u32, size_t sz, bool flag,
       uint8_t u8, int16_t i16, uint16_t u16, long lg, unsigned long ul, NSUInteger nsu, NSInteger nsi, float f32,
       double f64, const std::vector<int64_t>& v64, std::vector<uint32_t> v32, std::array<int, 4> arr, int carr[3],
       Params p, const std::vector<std::vector<int32_t>>& nested) {
  auto a1 = t.numel();
  const auto a2 = u32;
  auto a3 = a1 * 2;
  auto a4 = static_cast<int>(a1);
  auto a5 = flag ? 1 : 2;
  auto a6 = std::numeric_limits<uint32_t>::max();
  auto a7 = sizeof(int);
  auto a8 = t.size(0) - 1;
  auto a9 = u8;
  auto a10 = u8 + 0;
"""

HOST = [
    ("1", "i32"), ("1u", "u32"), ("1l", "i64"), ("1ul", "u64"), ("1ll", "i64"), ("1ull", "u64"),
    ("2147483648", "i64"), ("0x80000000", "u32"), ("0xFFFFFFFF", "u32"), ("0x100000000", "i64"),
    ("4294967296u", "u64"), ("0", "i32"), ("'a'", "i8"), ("true", "bool"), ("1.0", "f64"), ("1.0f", "f32"),
    ("n64", "i64"), ("n32", "i32"), ("u32", "u32"), ("sz", "u64"), ("flag", "bool"), ("u8", "u8"), ("i16", "i16"),
    ("lg", "i64"), ("ul", "u64"), ("nsu", "u64"), ("nsi", "i64"), ("f32", "f32"), ("f64", "f64"),
    ("u8 + u8", "i32"), ("i16 * i16", "i32"), ("u16 + 1", "i32"), ("flag + flag", "i32"), ("u32 + 1", "u32"),
    ("u32 + n32", "u32"), ("n32 + n64", "i64"), ("u32 + n64", "i64"), ("u32 * sz", "u64"), ("n64 + sz", "u64"),
    ("n32 * 2u", "u32"), ("n32 + 1l", "i64"), ("u32 + 1l", "i64"), ("u32 + 1ul", "u64"), ("nsu - 1", "u64"),
    ("f32 + n32", "f32"), ("f32 * f64", "f64"), ("n64 * f32", "f32"), ("n32 / 2", "i32"), ("n64 % 3", "i64"),
    ("u32 >> 2", "u32"), ("u8 << 4", "i32"), ("n64 << 1", "i64"), ("1 << 31", "i32"), ("1u << 31", "u32"),
    ("1ull << 40", "u64"), ("~u8", "i32"), ("-u32", "u32"), ("-u8", "i32"), ("!n64", "bool"), ("n64 < u32", "bool"),
    ("flag && flag", "bool"), ("n32 == n32", "bool"), ("u32 & 0xFF", "u32"), ("n64 | 1", "i64"), ("n32 ^ u32", "u32"),
    ("flag ? 1 : 2", "i32"), ("flag ? n32 : n64", "i64"), ("flag ? u32 : n32", "u32"),
    ("t.numel() > 1024 ? 1 : 2", "i32"), ("flag ? 1.0f : 2", "f32"), ("flag ? sz : 0", "u64"), ("flag ? n64 : 0", "i64"),
    ("t.numel()", "i64"), ("t.size(0)", "i64"), ("t.sizes()[0]", "i64"), ("t.stride(1)", "i64"),
    ("t.strides()[1]", "i64"), ("t.storage_offset()", "i64"), ("t.nbytes()", "u64"), ("t.element_size()", "i64"),
    ("t.itemsize()", "u64"), ("t.dim()", "i64"), ("iter.numel()", "i64"), ("iter.shape()[0]", "i64"),
    ("iter.strides(0)[1]", "i64"), ("iter.ndim()", "i32"), ("iter.ntensors()", "i32"), ("t.item<int64_t>()", "i64"),
    ("t.item<float>()", "f32"), ("t.item<int>()", "i32"), ("t.sizes().size()", "u64"), ("v64.size()", "u64"),
    ("t.numel() * t.element_size()", "i64"), ("t.numel() * sizeof(float)", "u64"), ("t.size(0) * 2", "i64"),
    ("t.size(0) * u32", "i64"), ("t.nbytes() + n64", "u64"), ("std::numeric_limits<uint32_t>::max()", "u32"),
    ("std::numeric_limits<int32_t>::max()", "i32"), ("std::numeric_limits<int64_t>::max()", "i64"),
    ('c10::checked_convert<uint32_t>(t.numel(), "uint32_t")', "u32"), ("std::min<int64_t>(n64, 4)", "i64"),
    ("std::min(u32, u32)", "u32"), ("std::max(n64, n64)", "i64"),
    ("static_cast<uint32_t>(n64)", "u32"), ("(int)n64", "i32"), ("int32_t(n64)", "i32"), ("(uint16_t)n32", "u16"),
    ("static_cast<size_t>(n32)", "u64"), ("(float)n64", "f32"), ("uint(n64)", "u32"), ("static_cast<long>(u32)", "i64"),
    ("(bool)n32", "bool"), ("static_cast<int8_t>(n32)", "i8"), ("static_cast<myidx_t>(n64)", "u32"),
    ("static_cast<big_t>(n32)", "i64"),
    ("v64[0]", "i64"), ("v32[1]", "u32"), ("arr[2]", "i32"), ("carr[0]", "i32"), ("nested[0][1]", "i32"),
    ("p.size", "u32"), ("p.stride", "i64"), ("p.scale", "f32"), ("p.dims[1]", "u32"), ("v64[0] * 2", "i64"),
    ("v32[0] + 1", "u32"), ("p.size * p.size", "u32"), ("p.size * p.stride", "i64"),
    ("a1", "i64"), ("a2", "u32"), ("a3", "i64"), ("a4", "i32"), ("a5", "i32"), ("a6", "u32"), ("a7", "u64"),
    ("a8", "i64"), ("a9", "u8"), ("a10", "i32"),
    ("sizeof(n64)", "u64"), ("sz / 2", "u64"), ("n32 % u32", "u32"), ("(n64 + 1) * 2", "i64"), ("u32 * u32", "u32"),
    ("u16 * u16", "i32"), ("nsu * 2", "u64"), ("nsi + u32", "i64"), ("i16 + u16", "i32"), ("u8 == 0", "bool"),
    ("INT32_MAX", "i32"), ("UINT32_MAX", "u32"), ("n64 > INT32_MAX", "bool"), ("(n64)", "i64"), ("((u32))", "u32"),
    ("1.5 * n32", "f64"), ("0.5f * u8", "f32"), ("t.numel() / 2", "i64"), ("t.numel() >> 1", "i64"),
    ("t.numel() & 0xFFFF", "i64"), ("t.numel() % u32", "i64"), ("a1 + u32", "i64"), ("a2 * a2", "u32"),
    ("static_cast<uint32_t>(a1) * 2", "u32"), ("lg * ul", "u64"), ("ul + 1", "u64"), ("i16 + 1l", "i64"),
    ("static_cast<myidx_t>(n64) * u32", "u32"), ("static_cast<big_t>(u32) * u32", "i64"),
    # C-style casts to names tree-sitter's grammar does not know as types come as calls of a parenthesised name
    ("(NSUInteger)(n32 * 4)", "u64"), ("(NSInteger)(u32)", "i64"), ("(uint)(n64 * 2)", "u32"), ("(uint)n64", "u32"),
]

METAL_PRELUDE = """
#include <metal_stdlib>
using namespace metal;
typedef bfloat bfloat16_t;
struct Params { uint size; long stride; float scale; };
constexpr constant uint kBlock = 256;
kernel void k(constant uint& n [[buffer(0)]], constant long& n64 [[buffer(1)]], device half* out [[buffer(2)]],
              device bfloat* b [[buffer(3)]], device float* f [[buffer(4)]], constant Params& p [[buffer(5)]],
              device bfloat16_t* bt [[buffer(6)]], uint3 tid [[thread_position_in_grid]],
              uint tid1 [[thread_index_in_threadgroup]], ushort lane [[thread_index_in_simdgroup]],
              uint2 pos2 [[threadgroup_position_in_grid]]) {
  const uint k4 = 4;
  auto m1 = tid.x * n;
"""

METAL = [
    ("tid.x", "u32"), ("tid.y", "u32"), ("tid.x * n", "u32"), ("tid.x * n64", "i64"), ("long(tid.x) * n", "i64"),
    ("lane", "u16"), ("lane + lane", "i32"), ("lane * 2u", "u32"), ("tid1 + 1", "u32"), ("out[0]", "f16"),
    ("b[0]", "f16"), ("f[0]", "f32"), ("out[0] + f[0]", "f32"), ("out[0] * out[0]", "f16"), ("tid.x + tid.y", "u32"),
    ("static_cast<ulong>(tid.x)", "u64"), ("ulong(tid.x) * n", "u64"), ("(int)tid.x", "i32"), ("p.size", "u32"),
    ("p.stride", "i64"), ("p.scale", "f32"), ("n64 * n", "i64"), ("n * n", "u32"), ("1.0h", "f16"), ("1.0f", "f32"),
    ("static_cast<bfloat16_t>(f[0])", "f16"), ("bt[0]", "f16"), ("half(1)", "f16"), ("float(n)", "f32"),
    ("int(tid.x)", "i32"), ("uint(n64)", "u32"), ("long(n)", "i64"), ("tid.x < n", "bool"), ("tid.x / 4", "u32"),
    ("tid.x % 32", "u32"), ("tid.x >> 5", "u32"), ("tid.x & 31", "u32"), ("min(tid.x, n)", "u32"),
    ("max(n64, 0l)", "i64"), ("kBlock", "u32"), ("kBlock * tid.x", "u32"), ("k4", "u32"), ("k4 * n", "u32"),
    ("pos2.x", "u32"), ("pos2.y * kBlock", "u32"), ("m1", "u32"), ("m1 + n64", "i64"), ("lane == 0", "bool"),
    ("tid.x * 4", "u32"), ("tid.x * 4l", "i64"), ("ulong(tid.x) * n64", "u64"), ("(n - 1) * p.stride", "i64"),
    ("out[tid.x] * 2.0h", "f16"), ("short(lane)", "i16"), ("uchar(n)", "u8"), ("-lane", "i32"),
]


def _models(prelude, cases, builder, fn):
    body = prelude + "".join(f"  auto __e{i} = {expr};\n" for i, (expr, _t) in enumerate(cases)) + "}\n"
    model, facts = builder(body)
    fm = fn_model(model, facts, fn)
    inits = {d.name: d for d in fm.fn.decls}
    return fm, inits


@pytest.fixture(scope="module")
def host():
    return _models(HOST_PRELUDE, HOST, host_model, "f")


@pytest.fixture(scope="module")
def metal():
    return _models(METAL_PRELUDE, METAL, metal_model, "k")


def _check(fm, inits, i, expr, want):
    d = inits[f"__e{i}"]
    t = fm.type_of(d.init.tree, d.stmt)
    kind, bits, signed = _T[want]
    got = (t.kind, t.bits, t.signed if t.kind != "bool" else False)
    assert got == (kind, bits, signed if kind != "bool" else False), f"{expr}: got {t} {got}, want {want}"


@pytest.mark.parametrize("i,expr,want", [(i, e, t) for i, (e, t) in enumerate(HOST)], ids=[e for e, _ in HOST])
def test_host_expression_type(host, i, expr, want):
    _check(*host, i, expr, want)


@pytest.mark.parametrize("i,expr,want", [(i, e, t) for i, (e, t) in enumerate(METAL)], ids=[e for e, _ in METAL])
def test_metal_expression_type(metal, i, expr, want):
    _check(*metal, i, expr, want)


def test_at_least_200_expressions():
    assert len(HOST) + len(METAL) >= 200


@pytest.mark.parametrize(
    "text,want",
    [
        ("const Tensor&", True), ("at::Tensor", True), ("TensorIteratorBase&", True), ("const Tensor*", True),
        ("std::vector<at::Tensor>", True), ("std::optional<Tensor>", True), ("c10::List<Tensor>", True),
        ("std::tuple<Tensor, Tensor>", True), ("TensorList", True), ("ITensorListRef", True),
        # near-misses: names that start like a tensor, containers of sizes, streams
        ("TensorOptions", False), ("const at::TensorOptions&", False), ("TensorImpl*", False),
        ("IntArrayRef", False), ("std::vector<int64_t>", False), ("MPSStream*", False), ("id<MTLBuffer>", False),
    ],
)
def test_holds_tensor(text, want):
    from mpslint.semantic.types import holds_tensor, parse_type

    assert holds_tensor(parse_type(text)) is want
