// The addon's AVX2 exp for the kernels outside attention.cc (the SiLU of f32-decoder.cc and q8-gemm.cc, via
// silu-mul-avx2.h): exp-poly.h's polynomial with 2^n built in the exponent bits, exactly 0 below
// kMin, as attention.cc's exp256. Every step is exp512.h's in the same order (the polynomial's
// fused multiply-adds, then p * 2^n, which scalef and this multiply both round once), so the two
// give the same float for the same input.
#pragma once
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include "exp-poly.h"

namespace ortllm {

__attribute__((target("avx2,fma"))) inline __m256 expAvx2(__m256 x) {
  using namespace ortllm::expPoly;
  const __m256 lo = _mm256_set1_ps(kMin);
  const __m256 inRange = _mm256_cmp_ps(x, lo, _CMP_NLT_UQ);  // NaN passes, as exp512
  x = _mm256_max_ps(_mm256_min_ps(x, _mm256_set1_ps(kMax)), lo);
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kCoeffs[0]);
  for (int i = 1; i < 6; i++) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kCoeffs[i]));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  // n is in [-126, 127] after the clamp: 2^n is a normal float.
  const __m256i pow2n = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_and_ps(inRange, _mm256_mul_ps(p, _mm256_castsi256_ps(pow2n)));
}

}  // namespace ortllm
#endif
