// The bfloat16 GEMM's register tile (bf16-gemm.cc describes the packing), shared by the GEMM and
// the encoder attention (bf16-encoder-attention.cc), which runs QK^T and PV through the same tiles.
#pragma once
#include "bf16-scalar.h"
#include "exp512.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define ORTLLM_BF16_X86 1
#endif

namespace ortllm {
namespace bf16 {

constexpr int kGroup = 16;  // output columns per vector
constexpr int kTileRows = 4;
constexpr int kTileGroups = 4;
constexpr int kChunkRows = 64;
// Weight pairs a tile prefetches ahead in each column group's stream (2 KB). A small-row call
// streams its weights from memory once; the hardware prefetcher alone left it short of bandwidth.
// Measured (the MiniLM runner alone, one thread, interleaved, two rounds): 1x16 forward 1.42-1.47
// ms against 1.55-1.64 without, 1x128 8.30-8.36 against 8.46-8.52; 64 or 128 ahead no better.
constexpr int kPrefetch = 32;

enum Activation { kNone = 0, kGeluErf = 1, kGeluTanh = 2, kRelu = 3 };

#ifdef ORTLLM_BF16_X86
#define BF16_FN __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))

// Row of k floats -> kPad bfloat16 (kPad even, the tail zero).
BF16_FN inline void convertRow(const float* x, int k, uint16_t* out, int kPad) {
  int i = 0;
  for (; i + 32 <= k; i += 32) {
    __m512bh v = _mm512_cvtne2ps_pbh(_mm512_loadu_ps(x + i + 16), _mm512_loadu_ps(x + i));
    _mm512_storeu_si512(out + i, (__m512i)v);
  }
  for (; i < k; i++) out[i] = floatToBf16(x[i]);
  for (; i < kPad; i++) out[i] = 0;
}

// erf(x) by Abramowitz & Stegun 7.1.26 (absolute error < 1.5e-7), odd-extended.
BF16_FN inline __m512 erf512(__m512 x) {
  const __m512 sign = _mm512_and_ps(x, _mm512_castsi512_ps(_mm512_set1_epi32(0x80000000)));
  const __m512 a = _mm512_abs_ps(x);
  const __m512 t = _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_fmadd_ps(_mm512_set1_ps(0.3275911f), a, _mm512_set1_ps(1.0f)));
  __m512 p = _mm512_set1_ps(1.061405429f);
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-1.453152027f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(1.421413741f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(-0.284496736f));
  p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(0.254829592f));
  p = _mm512_mul_ps(p, t);
  const __m512 e = exp512(_mm512_mul_ps(_mm512_sub_ps(_mm512_setzero_ps(), a), a));
  const __m512 y = _mm512_fnmadd_ps(p, e, _mm512_set1_ps(1.0f));
  return _mm512_or_ps(y, sign);
}

template <int Act>
BF16_FN inline __m512 activate(__m512 v) {
  if (Act == kRelu) return _mm512_max_ps(v, _mm512_setzero_ps());
  if (Act == kGeluErf) {
    const __m512 half = _mm512_mul_ps(v, _mm512_set1_ps(0.5f));
    return _mm512_fmadd_ps(half, erf512(_mm512_mul_ps(v, _mm512_set1_ps(0.70710678118654752f))), half);
  }
  if (Act == kGeluTanh) {
    // 0.5 v (1 + tanh(u)) = v / (1 + exp(-2u)), u = sqrt(2/pi) (v + 0.044715 v^3)
    const __m512 u = _mm512_mul_ps(_mm512_set1_ps(0.7978845608028654f), _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(0.044715f), v), _mm512_mul_ps(v, v), v));
    return _mm512_div_ps(v, _mm512_add_ps(_mm512_set1_ps(1.0f), exp512(_mm512_mul_ps(_mm512_set1_ps(-2.0f), u))));
  }
  return v;
}

// Rows [0, R) x groups [0, C) of one tile: a = bfloat16 rows (stride kPad), w = the first group's
// packed pairs (groups `groupStride` uint16 apart), bias = the first group's bias (or null),
// y = output rows (stride ldy) from column col0; columns from n on are not written.
template <int R, int C, int Act>
BF16_FN void tile(const uint16_t* a, int kPad, const uint16_t* w, size_t groupStride, const float* bias, float* y, int n, size_t ldy, int col0) {
  __m512 acc[R][C];
  __mmask16 masks[C];
  for (int c = 0; c < C; c++) {
    const int left = n - (col0 + c * kGroup);
    masks[c] = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
    const __m512 b = bias ? _mm512_maskz_loadu_ps(masks[c], bias + c * kGroup) : _mm512_setzero_ps();
    for (int r = 0; r < R; r++) acc[r][c] = b;
  }
  const int pairs = kPad / 2;
  for (int p = 0; p < pairs; p++) {
    __m512bh wv[C];
    for (int c = 0; c < C; c++) {
      _mm_prefetch((const char*)(w + c * groupStride + (size_t)(p + kPrefetch) * 32), _MM_HINT_T0);
      wv[c] = (__m512bh)_mm512_loadu_si512(w + c * groupStride + (size_t)p * 32);
    }
    for (int r = 0; r < R; r++) {
      int32_t pair;
      std::memcpy(&pair, a + (size_t)r * kPad + 2 * p, 4);
      const __m512bh av = (__m512bh)_mm512_set1_epi32(pair);
      for (int c = 0; c < C; c++) acc[r][c] = _mm512_dpbf16_ps(acc[r][c], wv[c], av);
    }
  }
  for (int c = 0; c < C; c++)
    for (int r = 0; r < R; r++) _mm512_mask_storeu_ps(y + r * ldy + col0 + c * kGroup, masks[c], activate<Act>(acc[r][c]));
}

using TileFn = void (*)(const uint16_t*, int, const uint16_t*, size_t, const float*, float*, int, size_t, int);

template <int R, int Act>
constexpr TileFn tileFor(int c) {
  return c == 1 ? tile<R, 1, Act> : c == 2 ? tile<R, 2, Act> : c == 3 ? tile<R, 3, Act> : tile<R, 4, Act>;
}

template <int Act>
TileFn tileOf(int rows, int groups) {
  switch (rows) {
    case 1: return tileFor<1, Act>(groups);
    case 2: return tileFor<2, Act>(groups);
    case 3: return tileFor<3, Act>(groups);
    default: return tileFor<4, Act>(groups);
  }
}

inline TileFn tileOf(int act, int rows, int groups) {
  switch (act) {
    case kGeluErf: return tileOf<kGeluErf>(rows, groups);
    case kGeluTanh: return tileOf<kGeluTanh>(rows, groups);
    case kRelu: return tileOf<kRelu>(rows, groups);
    default: return tileOf<kNone>(rows, groups);
  }
}

#endif

}  // namespace bf16
}  // namespace ortllm
