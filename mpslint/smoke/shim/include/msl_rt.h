// mpslint smoke host runtime: interface shared by the <metal_stdlib> shim, the generated trampolines and
// msl_rt.cpp. Host emulation only: nothing here says anything about Apple's Metal compiler or GPU.
#pragma once
#include <cstdint>
#include <cstddef>
namespace msl_rt {
struct u3 { uint32_t x, y, z; };
struct ThreadCtx {
  u3 thread_position_in_grid, thread_position_in_threadgroup, threadgroup_position_in_grid;
  u3 threads_per_threadgroup, threadgroups_per_grid, threads_per_grid;
  uint32_t thread_index_in_threadgroup, thread_index_in_simdgroup, simdgroup_index_in_threadgroup;
  uint32_t simdgroups_per_threadgroup, threads_per_simdgroup;
};
using TrampFn = void (*)(void** bufs, void** tgbufs, const ThreadCtx* ctx);
// One kernel parameter as the trampoline binds it.
//   role >= 1000: [[threadgroup(role-1000)]] memory; role >= 0: [[buffer(role)]]; role < 0: a thread attribute
//   kind: 0 = by value, 1 = pointer, 2 = reference
struct ParamInfo { int role; int kind; const char* type; int size; };
struct KernelInfo { const char* host_name; TrampFn fn; int nparams; const ParamInfo* params; };
// provided by msl_rt.cpp
void barrier();
// write v (size bytes) into my slot, sync the simdgroup, return pointer to lane 0's slot of my simdgroup.
// *lane, *nlanes filled.  stride between lanes = kSlot bytes
constexpr int kSlot = 64;
// *active: bitmask of lanes that reached a simd exchange in the same scheduling round (Metal "active lanes")
const unsigned char* simd_exchange(const void* v, size_t size, int* lane, int* nlanes, uint64_t* active);
[[noreturn]] void fail(const char* msg);
// the calling kernel thread's context (thread/simdgroup indices); fail()s outside a dispatch
const ThreadCtx* current_ctx();
}  // namespace msl_rt
