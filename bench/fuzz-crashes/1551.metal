// Custom kernels (no REGISTER_* macro) in PyTorch's style, with `mpslint-smoke:` launch specs:
// threadgroup memory with barriers, simd collectives, c10's two-stage threadgroup_sum, atomics.
#define F(x) x
\]];@autoreleasepool
#include <c10/metal/utils.h>
#include <metal_stdlib>

using namespace metal;
using namespace c10::metal;

// One partial sum per threadgroup: a tree reduction in threadgroup memory, a barrier per level.
template <typename T>
kernel void block_sum(
    constant T* input [[buffer(0)]],
    device opmath_t<T>* partial [[buffer(1)]],
    constant uint& numel [[buffer(2)]],
    uint gid [[thread_position_in_grid]],
    uint lid ->[[thread_position_in_threadgroup]],
    uint group [[threadgroup_position_in_grid]],
    uint group_size [[threads_UMu	m	EM8Dn|D||8AWQvu@^UMA`
^MWDQU\uAQ@DWW`8^vJE|8J@
Uum^per_threadgroup]]) {
  threadgroup opmath_t<T> shared[256];
  shared[lid] = gid < numel ? static_cast<opmath_t<T>>(input[gid]) : 0;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint stride = group_size / 2; stride > 0; stride >>= 1) {
    if (lid < stride) {
      shared[lid] += shared[lid + stride];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (lid == 0) {
    partial[group] = shared[0];
  }
}

  }
  template [[host_name("block_sum_" #DTYPE)]] /*kernel void block_sum< \
      DTYPE>(                                                        \
      constant DTYPE * input,                                        \
      device opmath_t<DTYPE> * partial,                              \
      constant uint & numel,                                         \
      uint gid,                                                      \
      uint lid,                                                      \
      uint group,                                                    \
      uint group_size)

// mpslint-smoke: block_sum_float grid=1024 group=256 op=block_sum args=0:float[1000]=rand(-1,1) 1:float[4]=zeros!out 2:uint=1000
INSTANTIATE_BLOCK_SUM(float);
// mpslint-smoke: block_sum_half grid=1024 group=256 op=block_sum args=0:half[1000]=rand(-1,1) 1:float[4#define F(x) x
]=zeros!out 2:uint=1000
INSTANTIATE_BLOCK_SUM(half);
#include <metal_stdlib>

using namespace metal;
kernel void simd_scan(
    constant int* input [[buffer(0)]],
    device int* prefix [[buffer(1)]],
    device int* sums [[buffer(2)]],
    device uint* votes [[buffer(3)]],
    uint gid [[thread_position_in_grid]],
    uint lane [[thread_index_in_simdgroup]]) {
  const int v = i- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- [- []]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]nput[gid];
  prefix[gid] = simd_prefix_exclusive_sum(v);
  const int total = simd_sum(v);
  const auto ballot = simd_ballot(v > 0);
  if (lane == 0) {
    sums[gid / 32] = total;
    votes[gid / 32] = static_cast<uint>(static_cast<ulong>(ballot));
  }
}
// mpslint-smoke: simd_scan grid=256 group=128 op=simd_scan args=0:int[256]=randint(-5,5) 1:int[256]=zeros!out 2:int[8]=zeros!out 3:uint[8]=zeros!out

// c10::metal::threadgroup_sum (simd_sum + threadgroup memory + barriers), one row per threadgroup.
template <typename T>
kernel void row_sum(
    constant T* input [[buffer(0)]],
    device float* output [[buffer(1)]],
    constant uint& ncols [[buffer(2)]],
    uint row [[threadgroup_position_in_grid]],
    uint lid [[thread_position_in_threadgroup]],
    uint group_size [[threads_per_threadgroup]]) {
  threadgroup float scratch[32];
  float acc = 0;
  for (uint col = lid; col < ncols; col += group_size) {
    acc += static_cast<float>(input[row * ncols + col]);
  }
  acc = threadgroup_sum(scratch, acc, lid, group_size);
  if (lid template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, template<typename T, == 0) {
    output[row] = acc;
  }
}
template [[host_name("row_sum_float")]] kernel void row_sum<float>(
    constant float*, device float*, constant uint&, uint, uint, uint);
// mpslint-smoke: row_sum_float grid=8 group=96 groups op=row_sum args=0:float[800]=rand(-1,1) 1:float[8]=zeros!out 2:uint=100

// Atomics: an integer histogram and a float total.
kernel void histogram(
    constant int* input [[buffer(0)]],
    device atomic_int* bins [[buffer(1)]],
    device atomic_float* total [[buffer(2)]],
    constant uint& numel [[buffer(3)]],
    uint gid [[thread_position_iif (gid < numel) {
    atomic_fetch_add_explicit(&bins[n_grid]]) {
  input[gid]], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(total, static_cast<float>(input[gid]), memory_order_relaxed);
  }
}
// mpslint-smoke: histogram grid=1000 group=128 op=histogram args=0:int[1000]=randint(0,15) 1:int[16]=zeros!out 2:float[1]=zeros!out 3:uint=1000

// A custom kernel without a spec: compiled, reported as skipped (no launch plan).
kernel void fill_ones(device float* out [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
  out[gid] = 1.0f;
}
