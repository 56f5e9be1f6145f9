"""Generate the host translation unit: the rewritten kernel source, one trampoline per entry point and an
exported table (`msl_kernels`) with every parameter's role, kind, element type and size.

Each trampoline is preceded by a `#line` directive naming the entry point's registration line, so that a
compile error in it (an instantiation the host cannot form) is reported at the registration.
"""
from __future__ import annotations

from .analyze import EntryPoint

PRELUDE = r'''
#include <type_traits>
namespace msl_gen {
template <class T> struct tname { static constexpr const char* v = "?"; };
template <> struct tname<void> { static constexpr const char* v = "void"; };
#define MSL_TN(T, S) template <> struct tname<T> { static constexpr const char* v = S; };
MSL_TN(float, "float") MSL_TN(half, "half") MSL_TN(bfloat, "bfloat") MSL_TN(bool, "bool")
MSL_TN(char, "char") MSL_TN(signed char, "char") MSL_TN(unsigned char, "uchar") MSL_TN(short, "short")
MSL_TN(unsigned short, "ushort") MSL_TN(int, "int") MSL_TN(unsigned int, "uint") MSL_TN(long, "long")
MSL_TN(unsigned long, "ulong") MSL_TN(long long, "long") MSL_TN(unsigned long long, "ulong")
#undef MSL_TN
template <class T, int N> struct tname<::metal::vec<T, N>> {
  static constexpr const char* v = N == 2 ? (std::is_same_v<T, float> ? "float2" : std::is_same_v<T, half> ? "half2" :
      std::is_same_v<T, uint> ? "uint2" : std::is_same_v<T, int> ? "int2" : std::is_same_v<T, long> ? "long2" : "vec2")
    : N == 3 ? (std::is_same_v<T, float> ? "float3" : std::is_same_v<T, uint> ? "uint3" : std::is_same_v<T, int> ? "int3" :
      std::is_same_v<T, long> ? "long3" : "vec3")
    : (std::is_same_v<T, float> ? "float4" : std::is_same_v<T, half> ? "half4" : std::is_same_v<T, uint> ? "uint4" :
      std::is_same_v<T, int> ? "int4" : std::is_same_v<T, long> ? "long4" : "vec4");
};
template <class T> struct tname<::metal::atomic<T>> { static constexpr const char* v = "atomic"; };
template <class P> constexpr int size_of() { if constexpr (std::is_void_v<P>) return 0; else return int(sizeof(P)); }
template <class A> constexpr msl_rt::ParamInfo pinfo(int role) {
  using D0 = std::remove_reference_t<A>;
  if constexpr (std::is_pointer_v<D0>) {
    using P = std::remove_cv_t<std::remove_pointer_t<D0>>;
    return msl_rt::ParamInfo{role, 1, tname<P>::v, size_of<P>()};
  } else {
    using P = std::remove_cv_t<D0>;
    return msl_rt::ParamInfo{role, std::is_reference_v<A> ? 2 : 0, tname<P>::v, size_of<P>()};
  }
}
template <class A> A thread_arg(const msl_rt::u3& v) {
  if constexpr (::metal::vtr<A>::n == 0) return A(v.x);
  else if constexpr (::metal::vtr<A>::n == 2) return A(v.x, v.y);
  else return A(v.x, v.y, v.z);
}
template <class A> A thread_arg1(uint32_t v) { return A(v); }
template <class A, int R> decltype(auto) get_arg(void** b, void** tg, const msl_rt::ThreadCtx* c) {
  using D = std::remove_cv_t<std::remove_reference_t<A>>;
  if constexpr (R >= 1000) return (A)tg[R - 1000];
  else if constexpr (R >= 0) {
    if constexpr (std::is_pointer_v<A>) return (A)b[R];
    else if constexpr (std::is_reference_v<A>) return static_cast<A>(*(D*)b[R]);
    else return *(D*)b[R];
  }
  else if constexpr (R == -1) return thread_arg<D>(c->thread_position_in_grid);
  else if constexpr (R == -2) return thread_arg<D>(c->thread_position_in_threadgroup);
  else if constexpr (R == -3) return thread_arg<D>(c->threadgroup_position_in_grid);
  else if constexpr (R == -4) return thread_arg<D>(c->threads_per_threadgroup);
  else if constexpr (R == -5) return thread_arg<D>(c->threadgroups_per_grid);
  else if constexpr (R == -6) return thread_arg<D>(c->threads_per_grid);
  else if constexpr (R == -7) return thread_arg1<D>(c->thread_index_in_threadgroup);
  else if constexpr (R == -8) return thread_arg1<D>(c->thread_index_in_simdgroup);
  else if constexpr (R == -9) return thread_arg1<D>(c->simdgroup_index_in_threadgroup);
  else if constexpr (R == -10) return thread_arg1<D>(c->simdgroups_per_threadgroup);
  else if constexpr (R == -11) return thread_arg1<D>(c->threads_per_simdgroup);
  else if constexpr (R == -12) return thread_arg1<D>(c->thread_index_in_threadgroup % 4);
  else return thread_arg1<D>(c->thread_index_in_threadgroup / 4);
}
// Entry<void(params...), roles...>: the parameter table and the call of one entry point.  The generated
// `struct __msl_T_n : Entry<...> { static void run(...) { ...&kernel...; } }` takes the kernel's address inside
// run(), so an instantiation the host cannot form is one error at its registration line and the launch table
// below still compiles (no cascade of "undeclared __msl_T_n" errors into generated code).
template <class S, int... R> struct Entry;
template <class... A, int... R> struct Entry<void(A...), R...> {
  static_assert(sizeof...(A) == sizeof...(R), "role count mismatch");
  template <void (*F)(A...)>
  static void call(void** b, void** tg, const msl_rt::ThreadCtx* c) { F(get_arg<A, R>(b, tg, c)...); }
  static constexpr int nparams = int(sizeof...(A));
  static inline const msl_rt::ParamInfo info[sizeof...(A) + 1] = {pinfo<A>(R)..., msl_rt::ParamInfo{0, 0, "", 0}};
};
}  // namespace msl_gen
'''


def _c_string(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def generate(include_name: str, entries: list[EntryPoint]) -> str:
    lines = [f'#include "{include_name}"', '#line 1 "<mpslint-smoke-trampolines>"', PRELUDE]
    for n, e in enumerate(entries):
        if e.origin is not None:
            lines.append(f"#line {e.origin.line} {_c_string(e.origin.path)}")
        ptxt = ", ".join(p.text for p in e.params)
        roles = "".join(f", {r}" for r in e.roles)
        # declared in the namespace of the registration, where its parameter types were written
        ns = "::".join(x for x in getattr(e, "ns", ()) if x)
        lines.append((f"namespace {ns} {{ " if ns else "") +
                     f"struct __msl_T_{n} : ::msl_gen::Entry<void({ptxt}){roles}> {{ "
                     "static void run(void** __msl_b, void** __msl_tg, const ::msl_rt::ThreadCtx* __msl_c) { "
                     f"constexpr void (*__msl_fp)({ptxt}) = &{e.fnexpr}; "
                     "call<__msl_fp>(__msl_b, __msl_tg, __msl_c); } };" + (" }" if ns else ""))
    lines.append('#line 1 "<mpslint-smoke-table>"')
    lines.append('extern "C" const msl_rt::KernelInfo msl_kernels[] = {')
    for n, e in enumerate(entries):
        t = "::" + "".join(f"{x}::" for x in getattr(e, "ns", ()) if x) + f"__msl_T_{n}"
        lines.append(f"  {{{_c_string(e.host_name)}, &{t}::run, {t}::nparams, {t}::info}},")
    if not entries:
        lines.append("  {nullptr, nullptr, 0, nullptr},")
    lines.append("};")
    lines.append(f'extern "C" const int msl_num_kernels = {len(entries)};')
    return "\n".join(lines) + "\n"
