// The element types of the runner's paged KV cache, shared by the attention kernel and the cache
// writer (codes as src/model/runner/kv-dtype.ts's nativeCode).
#pragma once

#include <cstddef>

namespace ortllm {

// What the cache arrays hold: float32, IEEE half, bfloat16 (the upper half of a float32), or one of
// the two OCP 8-bit floats (--kv-cache-dtype fp8_e4m3 / fp8_e5m2, vLLM's fp8 caches at scale 1.0):
// E4M3FN (bias 7, no infinities, NaN = S.1111.111, max finite 448) and E5M2 (bias 15, IEEE-like,
// max finite 57344; the upper byte of an IEEE half).
enum KvType { kF32 = 0, kF16 = 1, kBF16 = 2, kE4M3 = 3, kE5M2 = 4 };

// Bytes per cache element.
template <KvType T>
constexpr size_t kvBytes() {
  return T == kF32 ? 4 : T == kF16 || T == kBF16 ? 2 : 1;
}

}  // namespace ortllm
