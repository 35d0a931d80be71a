// What this CPU runs, probed once per feature set, for both addons (ortllm_native, ortllm_f32):
// every kernel picks its build from these, and the SIMD levels tests and benches can lower.
#pragma once

#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#define ORTLLM_CPU_X86 1
#endif

namespace ortllm::cpu {

#ifdef ORTLLM_CPU_X86
#define ORTLLM_HAS(feature) __builtin_cpu_supports(feature)
#else
#define ORTLLM_HAS(feature) false
#endif

inline bool avx2() {
  static const bool ok = ORTLLM_HAS("avx2");
  return ok;
}

inline bool avx2Fma() {
  static const bool ok = ORTLLM_HAS("avx2") && ORTLLM_HAS("fma");
  return ok;
}

inline bool avx2FmaF16c() {
  static const bool ok = avx2Fma() && ORTLLM_HAS("f16c");
  return ok;
}

// AVX-512 F and VL: the float32 kernels' masked loads and stores.
inline bool avx512FVl() {
  static const bool ok = ORTLLM_HAS("avx512f") && ORTLLM_HAS("avx512vl");
  return ok;
}

// AVX-512 F, BW and VL: the base of the integer and bfloat16 kernels.
inline bool avx512FBwVl() {
  static const bool ok = avx512FVl() && ORTLLM_HAS("avx512bw");
  return ok;
}

// AVX-512 F, BW, DQ and VL: the attention kernel's AVX-512 build.
inline bool avx512Core() {
  static const bool ok = avx512FBwVl() && ORTLLM_HAS("avx512dq");
  return ok;
}

inline bool avx512Vnni() {
  static const bool ok = avx512FBwVl() && ORTLLM_HAS("avx512vnni");
  return ok;
}

inline bool avx512Bf16() {
  static const bool ok = avx512FBwVl() && ORTLLM_HAS("avx512bf16");
  return ok;
}

inline bool avx512Vbmi() {
  static const bool ok = ORTLLM_HAS("avx512vbmi");
  return ok;
}

#undef ORTLLM_HAS

// The builds a kernel family may run, lowest first; a family runs a prefix of them (ortllm_f32
// stops at kAvx512). setSimd / f32SetSimd lower the level so tests compare every build.
enum SimdLevel { kPortable = 0, kAvx2 = 1, kAvx512 = 2, kAvx512Bf16 = 3 };
constexpr const char* kSimdNames[] = {"portable", "avx2", "avx512", "avx512bf16"};

// The level named `name` among the first `levels`, clamped to `best`; -1 for an unknown name.
inline int simdLevelNamed(const char* name, int levels, SimdLevel best) {
  for (int i = 0; i < levels; i++)
    if (std::strcmp(name, kSimdNames[i]) == 0) return i < best ? i : best;
  return -1;
}

}  // namespace ortllm::cpu
