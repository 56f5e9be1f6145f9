// Kernels in PyTorch's style for <metal_stdlib> features the host shim had to learn: matrix types, frexp with
// an integer out-pointer, constexpr numeric_limits of half/bfloat, packed-vector and swizzle conversions,
// scalar/vector min/max, address-space-only template specialisations, threadgroup array parameters,
// [[max_total_threads_per_threadgroup]] on a template kernel, user-defined 64-bit simd_shuffle.
#include <c10/metal/utils.h>
#include <metal_stdlib>

using namespace metal;

// --- matrices: out[i] = (x[i..i+4] * M) + (N * y) + transpose(M)[1] ; M = float4x4 with columns from w
kernel void matrix_ops(
    device const float4* x [[buffer(0)]],
    device const float4* w [[buffer(1)]],
    device const float2* y [[buffer(2)]],
    device float4* out [[buffer(3)]],
    uint i [[thread_position_in_grid]]) {
  float4x4 m;
  for (int c = 0; c < 4; ++c) {
    m[c] = w[c];
  }
  float2x4 n(0.f);  // two float4 columns
  n[0] = float4(1, 2, 3, 4);
  n[1] = float4(-1, 0.5, 0, 2);
  threadgroup float2x4 staged[1];
  *((threadgroup float2x4*)staged) = float2x4(0.f);
  staged[0][1] = n[1];
  const float4 row_times = x[i] * m;          // row vector: component c = dot(x, m[c])
  const float4 col_times = staged[0] * y[i];  // matrix * column vector
  out[i] = row_times + col_times + transpose(m)[1] + (2.0f * float4x4(1.0f) * m)[0];
}
// mpslint-smoke: matrix_ops grid=8 group=8 op=matrix_ops args=0:float[32]=rand(-2,2) 1:float[16]=rand(-2,2) 2:float[16]=rand(-2,2) 3:float[32]=zeros!out

// --- frexp(x, &exp) as in Frexp.metal
template <typename T>
kernel void frexp_ptr(
    device const T* input [[buffer(0)]],
    device T* mantissa [[buffer(1)]],
    device int* exponent [[buffer(2)]],
    uint index [[thread_position_in_grid]]) {
  int e;
  mantissa[index] = frexp(input[index], &e);
  exponent[index] = e;
}
#define REGISTER_FREXP_PTR(DTYPE)                                                    \
  template [[host_name("frexp_ptr_" #DTYPE)]] kernel void frexp_ptr<DTYPE>( \
      device const DTYPE* input,                                                     \
      device DTYPE* mantissa,                                                        \
      device int* exponent,                                                          \
      uint index)
// mpslint-smoke: frexp_ptr_float grid=100 group=32 op=frexp args=0:float[100]=rand(-1000,1000) 1:float[100]=zeros!out 2:int[100]=zeros!out
REGISTER_FREXP_PTR(float);
// mpslint-smoke: frexp_ptr_half grid=100 group=32 op=frexp args=0:half[100]=rand(-1000,1000) 1:half[100]=zeros!out 2:int[100]=zeros!out
REGISTER_FREXP_PTR(half);

// --- constexpr limits (attention-header style) used as a reduction identity
template <typename T>
struct Limits {
  static constexpr constant T lowest = -metal::numeric_limits<T>::infinity();
  static constexpr constant T finite_max = metal::numeric_limits<T>::max();
};
template <typename T>
kernel void clamped_row_max(
    device const T* input [[buffer(0)]],
    device T* output [[buffer(1)]],
    constant uint& ncols [[buffer(2)]],
    uint row [[thread_position_in_grid]]) {
  T best = Limits<T>::lowest;
  for (uint c = 0; c < ncols; ++c) {
    best = max(best, input[row * ncols + c]);
  }
  output[row] = min(best, Limits<T>::finite_max);
}
#define REGISTER_ROW_MAX(DTYPE)                                                          \
  template [[host_name("clamped_row_max_" #DTYPE)]] kernel void clamped_row_max<DTYPE>( \
      device const DTYPE* input,                                                         \
      device DTYPE* output,                                                              \
      constant uint& ncols,                                                              \
      uint row)
// mpslint-smoke: clamped_row_max_half grid=8 group=8 op=row_max args=0:half[80]=rand(-50,50) 1:half[8]=zeros!out 2:uint=10
REGISTER_ROW_MAX(half);
// mpslint-smoke: clamped_row_max_bfloat grid=8 group=8 op=row_max args=0:bfloat[80]=rand(-50,50) 1:bfloat[8]=zeros!out 2:uint=10
REGISTER_ROW_MAX(bfloat);

// --- packed vectors and swizzles converted to vectors of another element type (Indexing/Im2Col style)
kernel void packed_conversions(
    device const packed_uint3* sizes [[buffer(0)]],
    device const packed_half4* h [[buffer(1)]],
    device const uint4* dil [[buffer(2)]],
    device long* out [[buffer(3)]],
    device float* fout [[buffer(4)]],
    uint i [[thread_position_in_grid]]) {
  const vec<ulong, 3> s = vec<ulong, 3>(sizes[i]);
  const vec<int, 2> d = vec<int, 2>(dil[i].zw);
  out[i] = long(s.x * 1000000 + s.y * 1000 + s.z) - d.x + d.y;
  const float4 f = float4(h[i]);
  fout[i] = max(1.0, f.xy).x + f.z * f.w;  // max(scalar, vector)
}
// mpslint-smoke: packed_conversions grid=6 group=6 op=packed_conversions args=0:uint[18]=randint(0,999) 1:half[24]=rand(-3,3) 2:uint[24]=randint(0,50) 3:long[6]=zeros!out 4:float[6]=zeros!out

// --- address-space-only partial specialisations (PrefillAttention.h style) collapse to one on the host
template <typename T>
struct pointee {};
template <typename T>
struct pointee<thread T*> {
  using type = remove_cv_t<T>;
};
template <typename T>
struct pointee<device T*> {
  using type = remove_cv_t<T>;
};
template <typename T>
struct pointee<constant T*> {
  using type = remove_cv_t<T>;
};
template <typename T>
struct pointee<threadgroup T*> {
  using type = remove_cv_t<T>;
};

// a helper taking a threadgroup 2-D array parameter (LinearAlgebra.metal style)
template <typename T>
inline T tile_dot(threadgroup T tile[4][4], uint r, uint c) {
  T s = 0;
  for (uint k = 0; k < 4; ++k) {
    s += tile[r][k] * tile[k][c];
  }
  return s;
}

// out = X * X for a 4x4 matrix staged in threadgroup memory; a template kernel with a function attribute
// between `template <...>` and [[kernel]] (SoftMax.metal style)
template <typename T>
[[max_total_threads_per_threadgroup(16)]] [[kernel]] void tile_square(
    device const T* x [[buffer(0)]],
    device typename pointee<device T*>::type* out [[buffer(1)]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup T tile[4][4];
  tile[tid / 4][tid % 4] = x[tid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[tid] = tile_dot(tile, tid / 4, tid % 4);
}
template [[host_name("tile_square_float")]] [[kernel]] void tile_square<float>(
    device const float* x,
    device float* out,
    uint tid);
// mpslint-smoke: tile_square_float grid=16 group=16 op=tile_square args=0:float[16]=rand(-1,1) 1:float[16]=zeros!out

// --- 64-bit simd_shuffle built from uint2 (ScanKernel.metal style) next to `using namespace metal`
inline long simd_shuffle(long data, ushort lane) {
  return as_type<long>(metal::simd_shuffle(as_type<uint2>(data), lane));
}
inline bool simd_shuffle(bool data, ushort lane) {
  return metal::simd_shuffle(static_cast<uint>(data), lane) != 0;
}
kernel void shuffle_wide(
    device const long* x [[buffer(0)]],
    device long* out [[buffer(1)]],
    device bool* flags [[buffer(2)]],
    uint i [[thread_position_in_grid]],
    uint lane [[thread_index_in_simdgroup]]) {
  out[i] = simd_shuffle(x[i], ushort(31 - lane));
  flags[i] = simd_shuffle(x[i] > 0, ushort(0));
  static_assert(is_same_v<make_unsigned_t<bool>, bool>, "c10 instantiates make_unsigned for bool kernels");
}
// mpslint-smoke: shuffle_wide grid=64 group=64 op=shuffle_wide args=0:long[64]=randint(-100000000000,100000000000) 1:long[64]=zeros!out 2:bool[64]=zeros!out

// --- a registration inside a namespace whose parameter types are named without qualification (Gemm.metal
// style): the generated trampoline must live in that namespace too
namespace shim_ns {
struct AffineParams {
  float scale;
  float shift;
};
template <typename T>
kernel void affine_ns(
    device T* x [[buffer(0)]],
    constant AffineParams& p [[buffer(1)]],
    uint i [[thread_position_in_grid]]) {
  x[i] = static_cast<T>(float(x[i]) * p.scale + p.shift);
}
template [[host_name("affine_ns_float")]] kernel void affine_ns<float>(device float*, constant AffineParams&, uint);
// mpslint-smoke: affine_ns_float grid=40 group=8 op=affine_ns args=0:float[40]=rand(-3,3)!out 1:float[2]=fill(0.5)
} // namespace shim_ns
