// Scalar IEEE half and OCP 8-bit float (E4M3FN, E5M2) conversions: the portable attention
// kernel's reads of 16- and 8-bit caches and the cache writer's row tails.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace ortllm {

inline float halfToFloat(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {
      int e = -1;
      do {
        e++;
        man <<= 1;
      } while ((man & 0x400) == 0);
      bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000 | (man << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t floatToHalf(float f) {  // round to nearest even
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
  uint32_t man = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
  if (exp >= 31) return (uint16_t)(sign | 0x7c00);
  if (exp <= 0) {
    if (exp < -10) return (uint16_t)sign;
    man |= 0x800000;
    uint32_t shift = (uint32_t)(14 - exp);
    uint32_t half = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) half++;
    return (uint16_t)(sign | half);
  }
  uint32_t half = sign | ((uint32_t)exp << 10) | (man >> 13);
  uint32_t rem = man & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++;
  return (uint16_t)half;
}

// Decoding: exact (every 8-bit value is a float32). E4M3FN has no infinities: S.1111.111 is NaN.
inline float e4m3ToFloat(uint8_t b) {
  const int e = (b >> 3) & 0xf, m = b & 7;
  float mag = e == 15 && m == 7 ? NAN : e == 0 ? std::ldexp((float)m, -9) : std::ldexp((float)(8 + m), e - 10);
  return b & 0x80 ? -mag : mag;
}

inline float e5m2ToFloat(uint8_t b) { return halfToFloat((uint16_t)(b << 8)); }

// Encoding as vLLM's CUDA caches do (__nv_cvt_float_to_fp8 with __NV_SATFINITE): round to nearest
// even, magnitudes past the largest finite value (infinities included) saturate to it, NaN stays
// NaN (0x7f: a NaN in both formats), the sign is kept (-0 included). M mantissa bits, exponent
// bias B, MAXCODE the largest finite magnitude's code. Normal results round on the float32 bits
// (carries run into the exponent); subnormal ones (uniform steps of 2^(1-B-M)) as an integer
// count of steps, which may round up to the smallest normal (code 2^M). kv-write.cc's AVX2
// version computes the same thing eight at a time.
template <int M, int B, int MAXCODE>
inline uint8_t floatToFp8(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint8_t sign = (uint8_t)((x >> 24) & 0x80);
  const uint32_t abs = x & 0x7fffffff;
  if (abs > 0x7f800000) return 0x7f;
  int32_t code;
  if (abs >= (uint32_t)(128 - B) << 23) {
    constexpr int shift = 23 - M;
    code = (int32_t)((abs + (1u << (shift - 1)) - 1 + ((abs >> shift) & 1)) >> shift) - ((127 - B) << M);
  } else {
    float a;
    std::memcpy(&a, &abs, 4);
    code = (int32_t)std::nearbyint(a * std::ldexp(1.0f, B - 1 + M));
  }
  return (uint8_t)(sign | std::min(code, MAXCODE));
}

inline uint8_t floatToE4M3(float f) { return floatToFp8<3, 7, 0x7e>(f); }
inline uint8_t floatToE5M2(float f) { return floatToFp8<2, 15, 0x7b>(f); }

}  // namespace ortllm
