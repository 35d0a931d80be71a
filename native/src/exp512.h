// The addon's AVX-512 exp (exp-poly.h's polynomial, 2^n applied by scalef; exactly 0 below kMin,
// as exp256, so a softmax term of a -inf score or a -inf running max is 0), for every kernel that
// needs it on 16 floats: the attention kernels' softmax, silu-mul512.h's SiLU, bf16-tile.h's GELU.
#pragma once
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include "exp-poly.h"

namespace ortllm {

__attribute__((target("avx512f"))) inline __m512 exp512(__m512 x) {
  using namespace ortllm::expPoly;
  const __m512 lo = _mm512_set1_ps(kMin);
  const __mmask16 inRange = _mm512_cmp_ps_mask(x, lo, _CMP_NLT_UQ);  // NaN passes, as exp256
  x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(kMax)), lo);
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kCoeffs[0]);
  for (int i = 1; i < 6; i++) p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kCoeffs[i]));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_maskz_scalef_ps(inRange, p, n);
}

}  // namespace ortllm
#endif
