// A LoRA pair's product added into a linear's output over one slot's rows (lora-add.cc), free of
// N-API: addon-linear.cc reads a call's arguments and calls this.
#pragma once

#include "cpu-features.h"

#include <cstddef>
#include <cstdint>

namespace ortllm {

// B's packing for loraAdd: output columns in chunks of kLoraCols, each chunk [rank, kLoraCols]
// contiguous (the last zero-padded), so the second product reads a chunk from consecutive lines
// (B transposed whole, ranks kLoraCols apart, thrashes one L1 set at out = 2048).
constexpr int kLoraCols = 64;

// The best build this CPU runs: AVX-512 F/VL, AVX2 + FMA, or portable.
cpu::SimdLevel loraBestSimd();

// y[rows[i] * yStride + yOffset + j] += sum_r (x[rows[i]] . a[r]) * B[j, r] for i < m, j < out:
// a [rank, in] row-major, bp B (scaled) packed as above at bp[((j / kLoraCols) * rank + r) *
// kLoraCols + j % kLoraCols], x [·, in]. Each output's sums run in one order whatever the rows,
// the batch or the threads (batch-invariant).
void loraAdd(cpu::SimdLevel level, const float* x, const int32_t* rows, int m, const float* a, const float* bp, int in, int out,
             int rank, float* y, size_t yStride, size_t yOffset);

// One slot of loraAddSlots: an adapter's pair (a, bp as loraAdd's, its rank) and its m rows.
struct LoraSlot {
  const int32_t* rows;
  int m;
  const float* a;
  const float* bp;
  int rank;
};

// loraAdd for several slots of one linear (same in, out and layout; rows of different slots
// distinct) in one pass over the pool: each product's items of every slot spread at once, so a
// pass with four adapters pays two hand-offs per linear, not eight. Each output's sums are
// loraAdd's, in its order.
void loraAddSlots(cpu::SimdLevel level, const float* x, const LoraSlot* slots, int n, int in, int out, float* y, size_t yStride,
                  size_t yOffset);

}  // namespace ortllm
