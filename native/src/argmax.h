// The greedy sampler's argmax over one logits row (argmax.cc), free of N-API.
#pragma once

#include <cstdint>

namespace ortllm {

// The index of the largest of row[0 .. count), the first on ties, NaN never chosen unless first.
int32_t argmaxRow(const float* row, int32_t count);

}  // namespace ortllm
