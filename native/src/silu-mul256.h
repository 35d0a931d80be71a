// The SwiGLU between gate_up and down on AVX2 + FMA (silu-mul512.h's 8-wide twin, for CPUs
// without AVX-512: q8-gemm.cc's AVX2 path), out[r, j] = silu(gu[r, j]) * gu[r, width + j], with
// exp-poly.h's exp: the same polynomial as exp512 and attention.cc's exp256, so the three agree
// to float rounding. The tail of a row (width not a multiple of 8) is masked, not scalar.
#pragma once
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstddef>

#include "exp-poly.h"

namespace ortllm {
namespace silu256 {

// exp(x) = 2^n p(r); exactly 0 below kMin (2^n built in the exponent bits).
__attribute__((target("avx2,fma"))) inline __m256 expAvx2(__m256 x) {
  using namespace ortllm::expPoly;
  const __m256 lo = _mm256_set1_ps(kMin);
  const __m256 underflow = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  x = _mm256_min_ps(_mm256_max_ps(x, lo), _mm256_set1_ps(kMax));
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kCoeffs[0]);
  for (int i = 1; i < 6; i++) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kCoeffs[i]));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_andnot_ps(underflow, _mm256_mul_ps(p, _mm256_castsi256_ps(e)));
}

}  // namespace silu256

__attribute__((target("avx2,fma"))) inline void siluMul256(const float* gu, float* out, int rows, int width) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  for (int r = 0; r < rows; r++) {
    const float* gate = gu + (size_t)r * 2 * width;
    const float* up = gate + width;
    float* o = out + (size_t)r * width;
    int j = 0;
    for (; j + 8 <= width; j += 8) {
      const __m256 g = _mm256_loadu_ps(gate + j);
      const __m256 sig = _mm256_div_ps(one, _mm256_add_ps(one, silu256::expAvx2(_mm256_sub_ps(_mm256_setzero_ps(), g))));
      _mm256_storeu_ps(o + j, _mm256_mul_ps(_mm256_mul_ps(g, sig), _mm256_loadu_ps(up + j)));
    }
    if (j < width) {
      const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(width - j), lane);
      const __m256 g = _mm256_maskload_ps(gate + j, mask);
      const __m256 sig = _mm256_div_ps(one, _mm256_add_ps(one, silu256::expAvx2(_mm256_sub_ps(_mm256_setzero_ps(), g))));
      _mm256_maskstore_ps(o + j, mask, _mm256_mul_ps(_mm256_mul_ps(g, sig), _mm256_maskload_ps(up + j, mask)));
    }
  }
}

}  // namespace ortllm
#endif
