// The small-model float32 layer kernels (f32-decoder.cc), free of N-API: f32-addon.cc reads a
// call's arguments and calls these. Weights are packed once (pack) as W^T, [k, n rounded up to 16].
#pragma once

#include "cpu-features.h"

#include <cstddef>
#include <cstdint>

namespace ortllm::f32 {

constexpr int kCols = 16;

inline int paddedCols(int n) { return (n + kCols - 1) / kCols * kCols; }

struct Packed {
  const float* w;  // [k, np]
  int n;
  int k;
  int np;
};

// w [n, k] row-major into packed [k, paddedCols(n)], zero-padded.
void pack(const float* w, int n, int k, float* packed);

// y[m, n] = x[m, k] W^T.
void gemm(const float* x, const Packed& w, float* y, int m);

// q, k, v = normed W^T, then RoPE (rotate-half) on q and k at each row's position, unless
// positions is null.
void qkv(const float* normed, const Packed& wq, const Packed& wk, const Packed& wv, float* q, float* k, float* v, int m,
         const int32_t* positions, const float* cosTable, const float* sinTable, int heads, int kvHeads, int headDim);

// The rest of a layer after attention: residual += attn Wo^T, normed = RMSNorm(residual) * post;
// residual += down(SwiGLU(normed Wgu^T)); normed = RMSNorm(residual) * next.
void mlp(const float* attn, const Packed& wo, float* residual, const float* post, const Packed& wGateUp, const Packed& wDown,
         const float* next, float* normed, int m, int h, int inter, float eps);

// The builds: the best this CPU runs (portable, avx2, avx512), the one in force, and a lower one
// for tests (every level gives the same floats, the portable SiLU aside).
constexpr int kSimdLevels = 3;
cpu::SimdLevel bestSimd();
cpu::SimdLevel simd();
void setSimd(cpu::SimdLevel level);

}  // namespace ortllm::f32
