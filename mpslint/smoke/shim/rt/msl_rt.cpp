// mpslint smoke host runtime: cooperative (fiber) execution of MSL compute grids on one CPU thread,
// guarded buffers and a fault reporter.  Host emulation only.
//
// Each threadgroup runs as N fibers (ucontext); threadgroup_barrier / simd_* calls are yield points.
// A "round" resumes every live fiber once; since all fibers must reach the same sync point before the
// next round starts, a barrier is satisfied at the end of a round.  Threads of a group therefore run in a
// fixed order: races and simdgroup lockstep are NOT emulated.
//
// Buffers handed to kernels are allocated by msl_buf_alloc: the data ends right before a PROT_NONE page
// (an overrun faults at once), the rest of the first data page and the tail padding hold a canary
// (an underrun or a small overrun is found by msl_buf_check), and a PROT_NONE page sits below.
// A fault handler running on an alternate stack writes one "MSL_FAULT ..." line to stderr and _exits.
#include "msl_rt.h"
#include <ucontext.h>
#include <signal.h>
#include <unistd.h>
#include <sys/mman.h>
#include <vector>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <csetjmp>
#include <string>
#include <algorithm>

namespace msl_rt {
namespace {
constexpr size_t kStack = 256 * 1024;
constexpr size_t kPage = 4096;
constexpr unsigned char kCanary = 0xA5;
enum State { RUNNABLE, AT_BARRIER, AT_SIMD, DONE };
struct Fiber { ucontext_t uc; State st = RUNNABLE; unsigned parity = 0; ThreadCtx ctx; };
struct Group {
  ucontext_t sched;
  std::vector<Fiber> fibers;
  int cur = -1;
  std::vector<unsigned char> slots[2];  // double-buffered simd exchange slots (indexed by simdgroup epoch parity)
  std::vector<unsigned> sg_epoch;       // per simdgroup: number of simd releases so far
  std::vector<uint64_t> sg_active[2];   // per simdgroup & parity: active-lane mask of the last release
  TrampFn fn; void** bufs; void** tgbufs;
};
Group* g_group = nullptr;
std::string g_err;
jmp_buf* g_fail_jmp = nullptr;

// ---- guarded buffers (registry read by the signal handler: fixed size, no allocation) ----
struct GBuf { uintptr_t map, maplen, data, n, padded; int id; bool used; bool sparse; };
constexpr int kMaxBufs = 512;
GBuf g_bufs[kMaxBufs];
struct StackRange { uintptr_t lo, hi; };
constexpr int kMaxStacks = 1024;
StackRange g_stacks[kMaxStacks];
int g_nstacks = 0;

// ---- large-index tracking: sparse buffers start PROT_NONE; the first touch of each page is recorded with the
// thread that made it, and the page is opened (read/write) so that the kernel continues ----
struct Touch { int buf; long long off; uint32_t tid[3]; int write; };
constexpr int kMaxTouches = 1 << 16;
Touch g_touch[kMaxTouches];
int g_ntouch = 0;
bool g_track = false;

void fiber_entry(unsigned, unsigned) {
  Group* g = g_group;
  int i = g->cur;
  g->fn(g->bufs, g->tgbufs, &g->fibers[i].ctx);
  g->fibers[i].st = DONE;
  swapcontext(&g->fibers[i].uc, &g->sched);
}
void block(State st) {
  Group* g = g_group;
  g->fibers[g->cur].st = st;
  swapcontext(&g->fibers[g->cur].uc, &g->sched);
}
// Scheduler: run every RUNNABLE fiber until it blocks. When nothing is runnable:
//  1. release simd waiters of each simdgroup (active lanes = those waiting at the simd op; lanes at a
//     barrier or finished count as inactive/diverged),
//  2. otherwise release the threadgroup barrier (all live fibers are waiting on it).
void run_group(Group& g) {
  const unsigned n = g.fibers.size();
  const unsigned nsg = (n + 31) / 32;
  g.sg_epoch.assign(nsg, 0); g.sg_active[0].assign(nsg, 0); g.sg_active[1].assign(nsg, 0);
  while (true) {
    for (unsigned j = 0; j < n; j++) {
      if (g.fibers[j].st != RUNNABLE) continue;
      g.cur = j;
      swapcontext(&g.sched, &g.fibers[j].uc);
    }
    g.cur = -1;
    bool released = false;
    for (unsigned sg = 0; sg < nsg; sg++) {
      uint64_t m = 0;
      for (unsigned l = 0; l < 32 && sg * 32 + l < n; l++)
        if (g.fibers[sg * 32 + l].st == AT_SIMD) m |= 1ull << l;
      if (!m) continue;
      unsigned par = g.sg_epoch[sg]++ & 1;
      g.sg_active[par][sg] = m;
      for (unsigned l = 0; l < 32; l++) if (m >> l & 1) { g.fibers[sg * 32 + l].st = RUNNABLE; g.fibers[sg * 32 + l].parity = par; }
      released = true;
    }
    if (released) continue;
    bool any = false;
    for (auto& f : g.fibers) if (f.st == AT_BARRIER) { f.st = RUNNABLE; any = true; }
    if (!any) break;
  }
}

// ---- async-signal-safe formatting ----
void put(char*& p, const char* s) { while (*s) *p++ = *s++; }
void put_i(char*& p, long long v) {
  char t[24]; int k = 0; bool neg = v < 0; unsigned long long u = neg ? 0ull - (unsigned long long)v : (unsigned long long)v;
  do { t[k++] = char('0' + u % 10); u /= 10; } while (u);
  if (neg) *p++ = '-';
  while (k) *p++ = t[--k];
}
void put_x(char*& p, uintptr_t v) {
  const char* h = "0123456789abcdef"; char t[20]; int k = 0;
  do { t[k++] = h[v & 15]; v >>= 4; } while (v);
  *p++ = '0'; *p++ = 'x'; while (k) *p++ = t[--k];
}

void on_fault(int sig, siginfo_t* si, void* uctx) {
  char buf[512]; char* p = buf;
  uintptr_t a = (uintptr_t)si->si_addr;
  const char* access = "unknown";
#if defined(__x86_64__) && defined(REG_ERR)
  if (sig == SIGSEGV || sig == SIGBUS) access = (((ucontext_t*)uctx)->uc_mcontext.gregs[REG_ERR] & 2) ? "write" : "read";
#else
  (void)uctx;
#endif
  const ThreadCtx* cur = (g_group && g_group->cur >= 0) ? &g_group->fibers[g_group->cur].ctx : nullptr;
  if (g_track && sig == SIGSEGV) {
    for (int i = 0; i < kMaxBufs; i++) {
      const GBuf& b = g_bufs[i];
      if (!b.used || !b.sparse || a < b.data || a >= b.data + b.n) continue;
      if (g_ntouch < kMaxTouches) {
        Touch& t = g_touch[g_ntouch++];
        t.buf = b.id; t.off = (long long)(a - b.data); t.write = access[0] == 'w';
        t.tid[0] = cur ? cur->thread_position_in_grid.x : 0; t.tid[1] = cur ? cur->thread_position_in_grid.y : 0;
        t.tid[2] = cur ? cur->thread_position_in_grid.z : 0;
      }
      mprotect((void*)(a & ~(uintptr_t)(kPage - 1)), kPage, PROT_READ | PROT_WRITE);
      return;   // the access is retried on the opened page
    }
  }
  put(p, "MSL_FAULT signal="); put_i(p, sig);
  if (cur) {
    put(p, " tid="); put_i(p, cur->thread_position_in_grid.x); put(p, ","); put_i(p, cur->thread_position_in_grid.y);
    put(p, ","); put_i(p, cur->thread_position_in_grid.z);
  }
  if (sig == SIGSEGV || sig == SIGBUS) {
    const char* kind = "wild"; int id = -1; long long off = 0;
    for (int i = 0; i < kMaxBufs; i++) {
      const GBuf& b = g_bufs[i];
      if (!b.used) continue;
      if (a >= b.map && a < b.map + b.maplen) {
        id = b.id; off = (long long)(a - b.data);
        kind = a >= b.data ? "overflow" : "underflow";
        break;
      }
    }
    if (id < 0)
      for (int i = 0; i < g_nstacks; i++)
        if (a >= g_stacks[i].lo && a < g_stacks[i].hi) { kind = "stack"; break; }
    put(p, " kind="); put(p, kind); put(p, " buf="); put_i(p, id); put(p, " off="); put_i(p, off);
    put(p, " access="); put(p, access); put(p, " addr="); put_x(p, a);
  } else if (sig == SIGFPE) {
    put(p, " kind=fpe");
  } else {
    put(p, " kind=abort");
  }
  *p++ = '\n';
  ssize_t r = write(2, buf, size_t(p - buf)); (void)r;
  _exit(86);
}
}  // namespace

void barrier() { block(AT_BARRIER); }

const unsigned char* simd_exchange(const void* v, size_t size, int* lane, int* nlanes, uint64_t* active) {
  Group* g = g_group;
  const int i = g->cur;
  const ThreadCtx& c = g->fibers[i].ctx;
  const unsigned sg = c.simdgroup_index_in_threadgroup;
  const unsigned par = g->sg_epoch[sg] & 1;
  std::memcpy(g->slots[par].data() + size_t(i) * kSlot, v, size);
  block(AT_SIMD);
  const unsigned first = sg * 32;
  *lane = c.thread_index_in_simdgroup;
  unsigned n = g->fibers.size() - first;
  *nlanes = n < 32 ? n : 32;
  *active = g->sg_active[par][sg];
  return g->slots[par].data() + size_t(first) * kSlot;
}

const ThreadCtx* current_ctx() {
  if (!g_group || g_group->cur < 0) fail("a kernel-thread builtin was called outside a dispatch");
  return &g_group->fibers[g_group->cur].ctx;
}

void fail(const char* msg) {
  g_err = msg;
  if (g_fail_jmp) longjmp(*g_fail_jmp, 1);
  std::fprintf(stderr, "MSL_FAULT kind=runtime msg=%s\n", msg);
  _exit(86);
}
}  // namespace msl_rt

using namespace msl_rt;
extern "C" const KernelInfo msl_kernels[];
extern "C" const int msl_num_kernels;

extern "C" int msl_count() { return msl_num_kernels; }
extern "C" const KernelInfo* msl_kernel(int i) { return i >= 0 && i < msl_num_kernels ? &msl_kernels[i] : nullptr; }
extern "C" const char* msl_last_error() { return g_err.c_str(); }

extern "C" int msl_install_fault_handler() {
  static unsigned char altstack[64 * 1024];
  stack_t ss; ss.ss_sp = altstack; ss.ss_size = sizeof(altstack); ss.ss_flags = 0;
  if (sigaltstack(&ss, nullptr) != 0) return -1;
  struct sigaction sa; std::memset(&sa, 0, sizeof(sa));
  sa.sa_sigaction = on_fault; sa.sa_flags = SA_SIGINFO | SA_ONSTACK; sigemptyset(&sa.sa_mask);
  for (int s : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP}) sigaction(s, &sa, nullptr);
  return 0;
}

// Allocate n bytes whose (16-byte padded) end touches a PROT_NONE page.  Returns the data pointer.
extern "C" void* msl_buf_alloc(size_t n, int id) {
  int slot = -1;
  for (int i = 0; i < kMaxBufs; i++) if (!g_bufs[i].used) { slot = i; break; }
  if (slot < 0) return nullptr;
  const size_t padded = (std::max<size_t>(n, 1) + 15) / 16 * 16;
  const size_t body = (padded + kPage - 1) / kPage * kPage;
  const size_t total = kPage + body + kPage;
  void* m = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  uintptr_t map = (uintptr_t)m;
  mprotect((void*)map, kPage, PROT_NONE);
  mprotect((void*)(map + total - kPage), kPage, PROT_NONE);
  uintptr_t data = map + total - kPage - padded;
  std::memset((void*)(map + kPage), kCanary, body);
  g_bufs[slot] = GBuf{map, total, data, n, padded, id, true, false};
  return (void*)data;
}

// A large-index buffer: n bytes of address space (MAP_NORESERVE, nothing committed until touched), all
// PROT_NONE so that every first touch of a page is seen, with `below` bytes of PROT_NONE address space before
// the data (a negative 32-bit offset lands there and is reported as an underflow) and one page after it.
extern "C" void* msl_sparse_alloc(size_t n, int id, size_t below) {
  int slot = -1;
  for (int i = 0; i < kMaxBufs; i++) if (!g_bufs[i].used) { slot = i; break; }
  if (slot < 0) return nullptr;
  below = (below + kPage - 1) / kPage * kPage;
  const size_t body = (std::max<size_t>(n, 1) + kPage - 1) / kPage * kPage;
  const size_t total = below + body + kPage;
  void* m = mmap(nullptr, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  uintptr_t map = (uintptr_t)m;
  g_bufs[slot] = GBuf{map, total, map + below, n, n, id, true, true};
  return (void*)(map + below);
}

extern "C" void msl_track(int on) { g_track = on != 0; if (on) g_ntouch = 0; }
extern "C" int msl_touch_count() { return g_ntouch; }
// buf, write, tid x/y/z, offset
extern "C" int msl_touch_get(int i, long long* out6) {
  if (i < 0 || i >= g_ntouch) return -1;
  const Touch& t = g_touch[i];
  out6[0] = t.buf; out6[1] = t.write; out6[2] = t.tid[0]; out6[3] = t.tid[1]; out6[4] = t.tid[2]; out6[5] = t.off;
  return 0;
}

static GBuf* find_buf(void* p) {
  for (int i = 0; i < kMaxBufs; i++) if (g_bufs[i].used && g_bufs[i].data == (uintptr_t)p) return &g_bufs[i];
  return nullptr;
}

// Canary check: returns 0 when intact, else 1 and the byte offset (relative to the data start) of the first
// clobbered canary byte below the data (*first_bad < 0) or past its end (*first_bad >= n).
extern "C" int msl_buf_check(void* p, long long* first_bad) {
  GBuf* b = find_buf(p);
  if (!b) return -1;
  if (b->sparse) return 0;   // no canary: its guards are PROT_NONE
  const unsigned char* lo = (const unsigned char*)(b->map + kPage);
  const unsigned char* d = (const unsigned char*)b->data;
  for (const unsigned char* q = lo; q < d; q++)
    if (*q != kCanary) { *first_bad = (long long)(q - d); return 1; }
  for (size_t i = b->n; i < b->padded; i++)
    if (d[i] != kCanary) { *first_bad = (long long)i; return 1; }
  return 0;
}

extern "C" void msl_buf_free(void* p) {
  GBuf* b = find_buf(p);
  if (!b) return;
  munmap((void*)b->map, b->maplen);
  b->used = false;
}

// mode 0: dispatchThreads(grid = threads), mode 1: dispatchThreadgroups(grid = threadgroups)
extern "C" int msl_dispatch_sel(int k, void** bufs, const uint32_t* grid_in, const uint32_t* tg,
                                const uint64_t* tgmem_sizes, int n_tgmem, int mode, const uint32_t* sel, int nsel);

extern "C" int msl_dispatch(int k, void** bufs, const uint32_t* grid_in, const uint32_t* tg,
                            const uint64_t* tgmem_sizes, int n_tgmem, int mode) {
  return msl_dispatch_sel(k, bufs, grid_in, tg, tgmem_sizes, n_tgmem, mode, nullptr, -1);
}

// nsel >= 0: run only the threadgroups listed in sel (x, y, z triples), for large-index runs
extern "C" int msl_dispatch_sel(int k, void** bufs, const uint32_t* grid_in, const uint32_t* tg,
                                const uint64_t* tgmem_sizes, int n_tgmem, int mode, const uint32_t* sel, int nsel) {
  if (k < 0 || k >= msl_num_kernels) return -1;
  u3 T{tg[0], tg[1], tg[2]};
  if (T.x == 0 || T.y == 0 || T.z == 0) { g_err = "threadgroup size is zero"; return -4; }
  const unsigned tpg = T.x * T.y * T.z;
  if (tpg > (unsigned)kMaxStacks) { g_err = "threadgroup larger than 1024 threads"; return -4; }
  u3 G;  // threadgroups per grid
  u3 N;  // threads per grid
  if (mode == 0) {
    N = {grid_in[0], grid_in[1], grid_in[2]};
    G = {(N.x + T.x - 1) / T.x, (N.y + T.y - 1) / T.y, (N.z + T.z - 1) / T.z};
  } else {
    G = {grid_in[0], grid_in[1], grid_in[2]};
    N = {G.x * T.x, G.y * T.y, G.z * T.z};
  }
  std::vector<std::vector<unsigned char>> tgmem(n_tgmem);
  std::vector<void*> tgptr(n_tgmem + 1, nullptr);
  for (int i = 0; i < n_tgmem; i++) { tgmem[i].assign(tgmem_sizes[i] + 64, 0); tgptr[i] = tgmem[i].data(); }
  Group g;
  g.fn = msl_kernels[k].fn; g.bufs = bufs; g.tgbufs = tgptr.data();
  g.slots[0].assign(size_t(tpg) * kSlot, 0); g.slots[1].assign(size_t(tpg) * kSlot, 0);
  // one stack pool reused across groups; the lowest page of each stack is a guard
  std::vector<void*> stacks(tpg, nullptr);
  g_nstacks = 0;
  for (auto& s : stacks) {
    s = mmap(nullptr, kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (s == MAP_FAILED) { g_err = "cannot map fiber stacks"; return -2; }
    mprotect(s, kPage, PROT_NONE);
    g_stacks[g_nstacks++] = StackRange{(uintptr_t)s, (uintptr_t)s + kPage};
  }
  jmp_buf jb; g_fail_jmp = &jb;
  int rc = 0;
  g_group = &g;
  if (setjmp(jb)) { rc = -3; goto out; }
  {
  const uint64_t ngroups = nsel >= 0 ? uint64_t(nsel) : uint64_t(G.x) * G.y * G.z;
  for (uint64_t q = 0; q < ngroups; q++) {
        uint32_t gx, gy, gz;
        if (nsel >= 0) {
          gx = sel[3 * q]; gy = sel[3 * q + 1]; gz = sel[3 * q + 2];
          if (gx >= G.x || gy >= G.y || gz >= G.z) continue;
        } else {
          gx = uint32_t(q % G.x); gy = uint32_t((q / G.x) % G.y); gz = uint32_t(q / (uint64_t(G.x) * G.y));
        }
        // non-uniform threadgroups at the grid edge (dispatchThreads semantics)
        u3 A{T.x, T.y, T.z};
        if (mode == 0) {
          A.x = std::min(T.x, N.x - gx * T.x); A.y = std::min(T.y, N.y - gy * T.y); A.z = std::min(T.z, N.z - gz * T.z);
        }
        const unsigned n = A.x * A.y * A.z;
        g.fibers.assign(n, Fiber{});
        unsigned i = 0;
        for (uint32_t tz = 0; tz < A.z; tz++)
          for (uint32_t ty = 0; ty < A.y; ty++)
            for (uint32_t tx = 0; tx < A.x; tx++, i++) {
              ThreadCtx& c = g.fibers[i].ctx;
              c.thread_position_in_threadgroup = {tx, ty, tz};
              c.threadgroup_position_in_grid = {gx, gy, gz};
              c.thread_position_in_grid = {gx * T.x + tx, gy * T.y + ty, gz * T.z + tz};
              c.threads_per_threadgroup = A;
              c.threadgroups_per_grid = G;
              c.threads_per_grid = N;
              c.thread_index_in_threadgroup = i;
              c.threads_per_simdgroup = 32;
              c.thread_index_in_simdgroup = i % 32;
              c.simdgroup_index_in_threadgroup = i / 32;
              c.simdgroups_per_threadgroup = (n + 31) / 32;
              Fiber& f = g.fibers[i];
              getcontext(&f.uc);
              f.uc.uc_stack.ss_sp = (char*)stacks[i] + kPage;
              f.uc.uc_stack.ss_size = kStack - kPage;
              f.uc.uc_link = nullptr;
              makecontext(&f.uc, (void (*)())fiber_entry, 2, 0u, 0u);
            }
        for (auto& m : tgmem) std::memset(m.data(), 0, m.size());
        run_group(g);
  }
  }
out:
  g_group = nullptr; g_fail_jmp = nullptr;
  g_nstacks = 0;
  for (auto s : stacks) munmap(s, kStack);
  return rc;
}

// float/double -> bfloat conversions.  clang lowers `(__bf16)x` to calls of compiler-rt's __truncsfbf2 /
// __truncdfbf2; some ziglang releases (0.17) do not link compiler-rt into shared libraries, so kernels.so
// would fail to load with an undefined symbol.  Weak definitions here (round to nearest even, NaN kept
// quiet) make the runtime independent of that; compiler-rt's own, when linked, win.
namespace {
inline unsigned short msl_f32_to_bf16_bits(float f) {
  unsigned int u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);  // NaN: keep it quiet
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}
}  // namespace
extern "C" __attribute__((weak)) __bf16 __truncsfbf2(float f) {
  return __builtin_bit_cast(__bf16, msl_f32_to_bf16_bits(f));
}
extern "C" __attribute__((weak)) __bf16 __truncdfbf2(double d) {
  // round to odd into float first (exact for the 16 bits kept), then to nearest even
  float f = (float)d;
  if (d == d && (double)f != d) {
    unsigned int u;
    std::memcpy(&u, &f, 4);
    if (__builtin_fabs((double)f) > __builtin_fabs(d)) u -= 1;
    u |= 1u;
    std::memcpy(&f, &u, 4);
  }
  return __builtin_bit_cast(__bf16, msl_f32_to_bf16_bits(f));
}
