// Kernels in the style of PyTorch's MMA code (Convolution.metal, GroupedMM.metal) that exercise the host
// shim's simdgroup_matrix emulation: loads from threadgroup and device memory, transposed loads and stores with
// an origin, mixed-precision multiply-accumulate, the diagonal constructor, make_filled_simdgroup_matrix,
// aliasing operands and the per-lane thread_elements() ownership.
#include <metal_simdgroup_matrix>
#include <metal_stdlib>

using namespace metal;

constant constexpr int kFrag = 8;
constant constexpr int kTile = 16;  // one simdgroup computes a 16x16 tile as 2x2 fragments

// C[16, 16] = A[16, K] * B[K, 16] + bias[n]; A is staged through threadgroup memory, B is read directly.
template <typename T>
kernel void sg_gemm(
    constant T* A [[buffer(0)]],
    constant T* B [[buffer(1)]],
    constant float* bias [[buffer(2)]],
    device float* C [[buffer(3)]],
    constant uint& K [[buffer(4)]],
    uint lane [[thread_index_in_simdgroup]]) {
  threadgroup T As[kTile * kFrag];
  simdgroup_matrix<float, kFrag, kFrag> acc[2][2];
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      acc[i][j] = simdgroup_matrix<float, kFrag, kFrag>(0);
    }
  }
  for (uint k0 = 0; k0 < K; k0 += kFrag) {
    for (uint idx = lane; idx < kTile * kFrag; idx += 32) {
      As[idx] = A[(idx / kFrag) * K + k0 + idx % kFrag];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_matrix<T, kFrag, kFrag> a_frag[2];
    simdgroup_matrix<T, kFrag, kFrag> b_frag[2];
    for (int i = 0; i < 2; ++i) {
      simdgroup_load(a_frag[i], As + i * kFrag * kFrag, kFrag);
    }
    for (int j = 0; j < 2; ++j) {
      simdgroup_load(b_frag[j], B + k0 * kTile + j * kFrag, kTile);
    }
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        simdgroup_multiply_accumulate(acc[i][j], a_frag[i], b_frag[j], acc[i][j]);
      }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  // epilogue through thread_elements(): each lane owns (row, col) and (row, col + 1) of every fragment
  const int qid = int(lane) / 4;
  const int fn = (qid & 2) * 2 + (int(lane) % 2) * 2;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      for (int e = 0; e < 2; ++e) {
        acc[i][j].thread_elements()[e] += bias[j * kFrag + fn + e];
      }
      simdgroup_store(acc[i][j], C, kTile, ulong2(j * kFrag, i * kFrag));
    }
  }
}

#define INSTANTIATE_SG_GEMM(DTYPE)                                         \
  template [[host_name("sg_gemm_" #DTYPE)]] kernel void sg_gemm<DTYPE>( \
      constant DTYPE * A,                                                  \
      constant DTYPE * B,                                                  \
      constant float* bias,                                                \
      device float* C,                                                     \
      constant uint& K,                                                    \
      uint lane)

// mpslint-smoke: sg_gemm_float grid=32 group=32 op=sg_gemm args=0:float[384]=rand(-1,1) 1:float[384]=rand(-1,1) 2:float[16]=rand(-1,1) 3:float[256]=zeros!out 4:uint=24
INSTANTIATE_SG_GEMM(float);
// mpslint-smoke: sg_gemm_half grid=32 group=32 op=sg_gemm args=0:half[384]=rand(-1,1) 1:half[384]=rand(-1,1) 2:float[16]=rand(-1,1) 3:float[256]=zeros!out 4:uint=24
INSTANTIATE_SG_GEMM(half);
// mpslint-smoke: sg_gemm_bfloat grid=32 group=32 op=sg_gemm args=0:bfloat[384]=rand(-1,1) 1:bfloat[384]=rand(-1,1) 2:float[16]=rand(-1,1) 3:float[256]=zeros!out 4:uint=24
INSTANTIATE_SG_GEMM(bfloat);

// out[8, 16]: the right half gets 2 * X + 1, built as (X^T * 2I + ones * I) stored transposed at column 8.
kernel void sg_transpose_affine(
    device const float* X [[buffer(0)]],
    device float* out [[buffer(1)]]) {
  simdgroup_float8x8 t;
  simdgroup_load(t, X, 8, ulong2(0), true);
  const simdgroup_float8x8 two_eye = simdgroup_float8x8(2.0f);
  simdgroup_multiply(t, t, two_eye);  // d aliases a
  const simdgroup_float8x8 ones = make_filled_simdgroup_matrix<float, 8>(1.0f);
  const simdgroup_float8x8 eye(1.0f);
  simdgroup_multiply_accumulate(t, ones, eye, t);  // d aliases c
  simdgroup_store(t, out, 16, ulong2(8, 0), true);
}
// mpslint-smoke: sg_transpose_affine grid=32 group=32 op=sg_transpose_affine args=0:float[64]=rand(-4,4) 1:float[128]=zeros!out

// Metal leaves simdgroup matrix operations undefined unless all 32 lanes run them: launched with 16 threads,
// the host reports the launch as skipped instead of inventing values.
kernel void sg_partial_simdgroup(
    device const float* X [[buffer(0)]],
    device float* out [[buffer(1)]]) {
  simdgroup_float8x8 t;
  simdgroup_load(t, X, 8);
  simdgroup_store(t, out, 8);
}
// mpslint-smoke: sg_partial_simdgroup grid=16 group=16 args=0:float[64]=rand(0,1) 1:float[64]=zeros!out
