// The RMSNorm with its residual add, as an always-inline body each kernel file compiles for its
// own targets: rms-norm.cc (the addon's addRmsNorm) and f32-decoder.cc (the small-model layers),
// so both sum the squares in the same order.
#pragma once
#include <cmath>
#include <cstddef>

namespace ortllm {

constexpr int kRmsLanes = 16;

// residual += x (when x is not null), then out = RMSNorm(residual) * weight, `rows` rows of `h`.
__attribute__((always_inline)) inline void addRmsNormBody(const float* x, float* residual, const float* weight, float* out, size_t rows, size_t h, float eps) {
  for (size_t r = 0; r < rows; r++) {
    float* res = residual + r * h;
    float* o = out + r * h;
    float lanes[kRmsLanes] = {0};
    size_t j = 0;
    if (x) {
      const float* xr = x + r * h;
      for (; j + kRmsLanes <= h; j += kRmsLanes)
        for (int i = 0; i < kRmsLanes; i++) {
          const float v = res[j + i] + xr[j + i];
          res[j + i] = v;
          lanes[i] += v * v;
        }
      for (; j < h; j++) {
        res[j] += xr[j];
        lanes[0] += res[j] * res[j];
      }
    } else {
      for (; j + kRmsLanes <= h; j += kRmsLanes)
        for (int i = 0; i < kRmsLanes; i++) lanes[i] += res[j + i] * res[j + i];
      for (; j < h; j++) lanes[0] += res[j] * res[j];
    }
    float sum = 0;
    for (int i = 0; i < kRmsLanes; i++) sum += lanes[i];
    const float inv = 1.0f / std::sqrt(sum / (float)h + eps);
    for (size_t k = 0; k < h; k++) o[k] = res[k] * inv * weight[k];
  }
}

}  // namespace ortllm
