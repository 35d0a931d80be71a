// The SwiGLU between gate_up and down on AVX-512, out[r, j] = silu(gu[r, j]) * gu[r, width + j],
// shared by q8-gemm.cc (the Q8_0 layers) and f32-decoder.cc (the small float32 layers); with
// kGeluTanh the GeGLU of gemma, gelu_tanh(gate) * up, through the same sigmoid: 0.5 g (1 + tanh(u))
// = g * sigmoid(2u), u = sqrt(2/pi) (g + 0.044715 g^3).
#pragma once
#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>

#include <cstddef>

#include "exp512.h"

namespace ortllm {

template <bool kGeluTanh = false>
__attribute__((target("avx512f"))) inline void siluMul512(const float* gu, float* out, int rows, int width) {
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 cube = _mm512_set1_ps(0.044715f);
  const __m512 twoSqrt2OverPi = _mm512_set1_ps(2.0f * 0.7978845608028654f);
  for (int r = 0; r < rows; r++) {
    const float* gate = gu + (size_t)r * 2 * width;
    const float* up = gate + width;
    float* o = out + (size_t)r * width;
    for (int j = 0; j < width; j += 16) {
      const __mmask16 mask = width - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (width - j)) - 1);
      const __m512 g = _mm512_maskz_loadu_ps(mask, gate + j);
      __m512 arg = g;
      if constexpr (kGeluTanh) arg = _mm512_mul_ps(twoSqrt2OverPi, _mm512_fmadd_ps(_mm512_mul_ps(g, g), _mm512_mul_ps(g, cube), g));
      const __m512 sig = _mm512_div_ps(one, _mm512_add_ps(one, exp512(_mm512_sub_ps(_mm512_setzero_ps(), arg))));
      _mm512_mask_storeu_ps(o + j, mask, _mm512_mul_ps(_mm512_mul_ps(g, sig), _mm512_maskz_loadu_ps(mask, up + j)));
    }
  }
}

}  // namespace ortllm
#endif
