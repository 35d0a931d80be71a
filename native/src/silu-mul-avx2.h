// The SwiGLU between gate_up and down on AVX2 + FMA, out[r, j] = silu(gu[r, j]) * gu[r, width + j]:
// silu-mul512.h's steps on 8 floats (expAvx2 gives exp512's floats), for f32-decoder.cc and q8-gemm.cc's AVX2 path;
// kGeluTanh: gelu_tanh(gate) * up, as there.
#pragma once
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstddef>

#include "exp-avx2.h"

namespace ortllm {

__attribute__((target("avx2,fma"))) inline __m256i tailMaskAvx2(int lanes) {
  const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes), index);
}

template <bool kGeluTanh = false>
__attribute__((target("avx2,fma"))) inline void siluMulAvx2(const float* gu, float* out, int rows, int width) {
  const __m256 one = _mm256_set1_ps(1.0f);
  const __m256 cube = _mm256_set1_ps(0.044715f);
  const __m256 twoSqrt2OverPi = _mm256_set1_ps(2.0f * 0.7978845608028654f);
  for (int r = 0; r < rows; r++) {
    const float* gate = gu + (size_t)r * 2 * width;
    const float* up = gate + width;
    float* o = out + (size_t)r * width;
    for (int j = 0; j < width; j += 8) {
      const __m256i mask = tailMaskAvx2(width - j);
      const __m256 g = _mm256_maskload_ps(gate + j, mask);
      __m256 arg = g;
      if constexpr (kGeluTanh) arg = _mm256_mul_ps(twoSqrt2OverPi, _mm256_fmadd_ps(_mm256_mul_ps(g, g), _mm256_mul_ps(g, cube), g));
      const __m256 sig = _mm256_div_ps(one, _mm256_add_ps(one, expAvx2(_mm256_sub_ps(_mm256_setzero_ps(), arg))));
      _mm256_maskstore_ps(o + j, mask, _mm256_mul_ps(_mm256_mul_ps(g, sig), _mm256_maskload_ps(up + j, mask)));
    }
  }
}

}  // namespace ortllm
#endif
