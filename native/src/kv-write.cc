// Writes a step's new K/V rows into the paged cache, narrowed to the cache's element type: the
// write half of the runner's KV cache, beside attention.cc's read half.
#include "attention.h"
#include "bf16-scalar.h"
#include "fp8-half.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define ORTLLM_X86 1
#endif

namespace ortllm {
namespace {

#ifdef ORTLLM_X86
#define AVX2_FN __attribute__((target("avx2,fma,f16c")))

// New K/V rows narrowed to 16 bits, eight at a time (a prefill chunk writes thousands of rows per
// layer, too many for the scalar conversion: docs/perf/kv-cache.md). Both round to nearest even as the scalar versions do;
// F16C's conversion also handles subnormal halves, infinities and NaN.
AVX2_FN void narrowRowAvx2(const float* src, uint16_t* dst, size_t n, KvType kvType) {
  size_t j = 0;
  if (kvType == kF16) {
    for (; j + 8 <= n; j += 8)
      _mm_storeu_si128((__m128i*)(dst + j), _mm256_cvtps_ph(_mm256_loadu_ps(src + j), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    for (; j < n; j++) dst[j] = floatToHalf(src[j]);
    return;
  }
  const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff), absMask = _mm256_set1_epi32(0x7fffffff);
  const __m256i inf = _mm256_set1_epi32(0x7f800000), quiet = _mm256_set1_epi32(0x40);
  for (; j + 8 <= n; j += 8) {
    __m256i x = _mm256_castps_si256(_mm256_loadu_ps(src + j));
    __m256i high = _mm256_srli_epi32(x, 16);
    __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(x, _mm256_add_epi32(bias, _mm256_and_si256(high, one))), 16);
    __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, absMask), inf);
    __m256i r = _mm256_blendv_epi8(rounded, _mm256_or_si256(high, quiet), nan);
    // Pack the eight 32-bit lanes (each below 2^16) into eight 16-bit values in order.
    __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    _mm_storeu_si128((__m128i*)(dst + j), _mm256_castsi256_si128(packed));
  }
  for (; j < n; j++) dst[j] = floatToBf16(src[j]);
}

// New K/V rows as 8-bit floats, eight at a time: floatToFp8's arithmetic in 32-bit lanes (the
// normal and the subnormal result both computed, the right one picked), then packed to bytes.
template <int M, int B, int MAXCODE>
AVX2_FN void narrowRowFp8Avx2(const float* src, uint8_t* dst, size_t n) {
  constexpr int shift = 23 - M;
  const __m256i absMask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  const __m256i roundBias = _mm256_set1_epi32((1 << (shift - 1)) - 1), one = _mm256_set1_epi32(1);
  const __m256i rebias = _mm256_set1_epi32((127 - B) << M), smallestNormal = _mm256_set1_epi32(((128 - B) << 23) - 1);
  const __m256i maxCode = _mm256_set1_epi32(MAXCODE), nanCode = _mm256_set1_epi32(0x7f), signBit = _mm256_set1_epi32(0x80);
  const __m256 steps = _mm256_set1_ps(std::ldexp(1.0f, B - 1 + M));
  size_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const __m256i x = _mm256_castps_si256(_mm256_loadu_ps(src + j));
    const __m256i abs = _mm256_and_si256(x, absMask);
    const __m256i normal = _mm256_sub_epi32(
        _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(abs, roundBias), _mm256_and_si256(_mm256_srli_epi32(abs, shift), one)), shift), rebias);
    const __m256i subnormal = _mm256_cvtps_epi32(_mm256_mul_ps(_mm256_castsi256_ps(abs), steps));  // MXCSR: nearest even
    __m256i code = _mm256_blendv_epi8(subnormal, normal, _mm256_cmpgt_epi32(abs, smallestNormal));
    code = _mm256_min_epi32(code, maxCode);
    code = _mm256_blendv_epi8(code, nanCode, _mm256_cmpgt_epi32(abs, inf));
    code = _mm256_or_si256(code, _mm256_and_si256(_mm256_srli_epi32(x, 24), signBit));
    // Eight 32-bit lanes (each below 256) to eight bytes in order.
    const __m256i words = _mm256_permute4x64_epi64(_mm256_packus_epi32(code, code), 0x08);
    const __m128i bytes = _mm_packus_epi16(_mm256_castsi256_si128(words), _mm256_castsi256_si128(words));
    _mm_storel_epi64((__m128i*)(dst + j), bytes);
  }
  for (; j < n; j++) dst[j] = floatToFp8<M, B, MAXCODE>(src[j]);
}
#endif

void narrowRow(const float* src, uint16_t* dst, size_t n, KvType kvType) {
#ifdef ORTLLM_X86
  if (cpu::avx2FmaF16c()) return narrowRowAvx2(src, dst, n, kvType);
#endif
  uint16_t (*narrow)(float) = kvType == kF16 ? floatToHalf : floatToBf16;
  for (size_t j = 0; j < n; j++) dst[j] = narrow(src[j]);
}

void narrowRowFp8(const float* src, uint8_t* dst, size_t n, KvType kvType) {
#ifdef ORTLLM_X86
  if (cpu::avx2FmaF16c()) return kvType == kE4M3 ? narrowRowFp8Avx2<3, 7, 0x7e>(src, dst, n) : narrowRowFp8Avx2<2, 15, 0x7b>(src, dst, n);
#endif
  uint8_t (*narrow)(float) = kvType == kE4M3 ? floatToE4M3 : floatToE5M2;
  for (size_t j = 0; j < n; j++) dst[j] = narrow(src[j]);
}

}  // namespace

const char* writeKvRows(const float* newK, const float* newV, size_t row, void* k, void* v, size_t kvLength, KvType kvType,
                        const int32_t* slots, size_t n) {
  const size_t numSlots = kvLength / row;
  for (size_t i = 0; i < n; i++)
    if (slots[i] < 0 || (size_t)slots[i] >= numSlots) return "writeKv: a slot is out of range";
  const float* a = newK;
  const float* b = newV;
  const int32_t* sl = slots;
  if (kvType == kF32) {
    for (size_t i = 0; i < n; i++) {
      std::memcpy((float*)k + (size_t)sl[i] * row, a + i * row, row * 4);
      std::memcpy((float*)v + (size_t)sl[i] * row, b + i * row, row * 4);
    }
  } else if (kvType == kE4M3 || kvType == kE5M2) {
    for (size_t i = 0; i < n; i++) {
      narrowRowFp8(a + i * row, (uint8_t*)k + (size_t)sl[i] * row, row, kvType);
      narrowRowFp8(b + i * row, (uint8_t*)v + (size_t)sl[i] * row, row, kvType);
    }
  } else {
    for (size_t i = 0; i < n; i++) {
      narrowRow(a + i * row, (uint16_t*)k + (size_t)sl[i] * row, row, kvType);
      narrowRow(b + i * row, (uint16_t*)v + (size_t)sl[i] * row, row, kvType);
    }
  }
  return nullptr;
}

}  // namespace ortllm
