// The decoder's RMSNorm with the residual add before it (rms-norm.cc), free of N-API.
#pragma once

#include <cstddef>

namespace ortllm {

// residual += x in place (x null: no add), then out = residual / sqrt(mean(residual^2) + eps) *
// weight per row of h; out must not overlap x or residual.
void addRmsNorm(const float* x, float* residual, const float* weight, float* out, size_t rows, size_t h, float eps);

}  // namespace ortllm
