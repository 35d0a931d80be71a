// Scalar bfloat16 conversions shared by the attention kernel (bfloat16 caches) and the bfloat16
// GEMM (packed weights, row tails).
#pragma once
#include <cstdint>
#include <cstring>

namespace ortllm {

// float -> bfloat16, round to nearest even (as VCVTNE2PS2BF16 rounds); NaN stays a quiet NaN.
inline uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40);
  return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

inline float bf16ToFloat(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace ortllm
