// The float32 linears of a small llama/qwen2 decoder, fused per half layer, for the segmented
// runner's small-model path: at stories260K's size a layer's whole compute is a few microseconds,
// less than one onnxruntime session run. Free of N-API (f32-addon.cc binds it); figures in
// docs/perf/small-decoder.md.
#include "f32-decoder.h"

#include "cpu-features.h"
#include "rms-norm-body.h"
#include "silu-mul-avx2.h"
#include "silu-mul512.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace ortllm {
namespace {

using f32::kCols;
using f32::Packed;

// A layer is two calls, with ortllm_native's writeKv and attention between them:
//   f32Qkv: q, k, v = normed W^T, RoPE on q and k (each row's position in the cos/sin tables);
//   f32Mlp: residual += attn Wo^T, normed = RMSNorm(residual) * post; residual += down(SwiGLU(normed
//           Wgu^T)); normed = RMSNorm(residual) * next (the next layer's input norm, or the final one).
// and f32Gemm for the head. Weights are packed once (f32Pack) as [k, n16] (W^T, n rounded up to 16
// columns), so a row's outputs accumulate in registers while k streams, each output summed in k
// order (float32, fused multiply-adds). Single-threaded: this path is for models whose every GEMM
// is microseconds, where a hand-off to another thread costs more than it splits.
//
// A separate addon (ortllm_f32.node) beside ortllm_native.node: the kernels share nothing with
// ortllm_native's thread pool; f32-addon.cc registers its functions.
//
// Three builds of the kernels, the CPU's best chosen at load (`simd`; f32SetSimd lowers it for
// the tests): AVX-512, AVX2 + FMA, portable loops. One packed layout for all three, so the level
// can change between calls. Each GEMM output is summed in k order with fused multiply-adds at
// every level, the RMSNorm is rms-norm-body.h's 16 partial sums at every level, and the AVX2 SiLU
// (silu-mul-avx2.h, exp-avx2.h) takes silu-mul512.h's steps on exp512.h's polynomial: AVX2 and
// AVX-512 give the same floats (test/unit/model/small-decoder.test.ts checks it where both run);
// the portable SiLU calls std::exp, so its MLP output may differ from theirs in the last bits.

// ---------------------------------------------------------------------------------------------
// Portable kernels (any CPU).

void gemmPortable(const float* x, const Packed& w, float* y, int m) {
  for (int r = 0; r < m; r++) {
    const float* xr = x + (size_t)r * w.k;
    float* yr = y + (size_t)r * w.n;
    for (int j0 = 0; j0 < w.n; j0 += kCols) {
      float acc[kCols] = {0};
      const int cols = std::min(kCols, w.n - j0);
      for (int kk = 0; kk < w.k; kk++) {
        const float xv = xr[kk];
        const float* wr = w.w + (size_t)kk * w.np + j0;
        for (int j = 0; j < kCols; j++) acc[j] = std::fma(xv, wr[j], acc[j]);
      }
      std::memcpy(yr + j0, acc, cols * sizeof(float));
    }
  }
}

void siluMulPortable(const float* gu, float* out, int rows, int width) {
  for (int r = 0; r < rows; r++) {
    const float* g = gu + (size_t)r * 2 * width;
    const float* u = g + width;
    float* o = out + (size_t)r * width;
    for (int j = 0; j < width; j++) o[j] = g[j] / (1.0f + std::exp(-g[j])) * u[j];
  }
}

void addRmsNormPortable(const float* x, float* residual, const float* weight, float* out, size_t rows, size_t h, float eps) {
  addRmsNormBody(x, residual, weight, out, rows, h, eps);
}

// ---------------------------------------------------------------------------------------------
// AVX-512 kernels.
#if defined(__x86_64__) || defined(_M_X64)
#define AVX512_FN __attribute__((target("avx512f,avx512vl")))

inline __mmask16 tailMask(int cols) { return cols >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << cols) - 1); }

// Rows [r0, r0 + R) x columns [j0, j0 + 16 * V): R x V accumulators over all of k.
template <int R, int V>
AVX512_FN inline void gemmTile(const float* x, const Packed& w, float* y, int r0, int j0) {
  __m512 acc[R][V];
  for (int r = 0; r < R; r++)
    for (int v = 0; v < V; v++) acc[r][v] = _mm512_setzero_ps();
  const float* xr = x + (size_t)r0 * w.k;
  for (int kk = 0; kk < w.k; kk++) {
    const float* wr = w.w + (size_t)kk * w.np + j0;
    __m512 wv[V];
    for (int v = 0; v < V; v++) wv[v] = _mm512_loadu_ps(wr + 16 * v);
    for (int r = 0; r < R; r++) {
      const __m512 xb = _mm512_set1_ps(xr[(size_t)r * w.k + kk]);
      for (int v = 0; v < V; v++) acc[r][v] = _mm512_fmadd_ps(xb, wv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; r++) {
    float* yr = y + (size_t)(r0 + r) * w.n;
    for (int v = 0; v < V; v++) {
      const int j = j0 + 16 * v;
      _mm512_mask_storeu_ps(yr + j, tailMask(w.n - j), acc[r][v]);
    }
  }
}

template <int R>
AVX512_FN inline void gemmRows(const float* x, const Packed& w, float* y, int r0) {
  int j0 = 0;
  for (; j0 + 64 <= w.np; j0 += 64) gemmTile<R, 4>(x, w, y, r0, j0);
  for (; j0 < w.np; j0 += 16) gemmTile<R, 1>(x, w, y, r0, j0);
}

AVX512_FN void gemmAvx512(const float* x, const Packed& w, float* y, int m) {
  int r = 0;
  for (; r + 4 <= m; r += 4) gemmRows<4>(x, w, y, r);
  for (; r < m; r++) gemmRows<1>(x, w, y, r);
}

AVX512_FN void siluMulAvx512(const float* gu, float* out, int rows, int width) { siluMul512(gu, out, rows, width); }

AVX512_FN void addRmsNormAvx512(const float* x, float* residual, const float* weight, float* out, size_t rows, size_t h, float eps) {
  addRmsNormBody(x, residual, weight, out, rows, h, eps);
}

// ---------------------------------------------------------------------------------------------
// AVX2 + FMA kernels (Zen 1-4, Intel from Haswell): the same packed [k, n16] layout, 16 columns
// as two 8-float vectors, each output summed in k order with fused multiply-adds as above, so
// the three builds give the same floats (the design notes above).
#define AVX2_FN __attribute__((target("avx2,fma")))

// Rows [r0, r0 + R) x columns [j0, j0 + 8 * V): R x V accumulators over all of k.
template <int R, int V>
AVX2_FN inline void gemmTileAvx2(const float* x, const Packed& w, float* y, int r0, int j0) {
  // k, the stride and the pointers in locals: read through `w` in the loop, GCC reloaded them and
  // kept every accumulator's copy on the stack up to date each k (twice the time a tile).
  const int k = w.k;
  const size_t np = w.np;
  const float* wr = w.w + j0;
  const float* xr = x + (size_t)r0 * k;
  __m256 acc[R][V];
  for (int r = 0; r < R; r++)
    for (int v = 0; v < V; v++) acc[r][v] = _mm256_setzero_ps();
  for (int kk = 0; kk < k; kk++, wr += np) {
    __m256 wv[V];
    for (int v = 0; v < V; v++) wv[v] = _mm256_loadu_ps(wr + 8 * v);
    for (int r = 0; r < R; r++) {
      const __m256 xb = _mm256_broadcast_ss(xr + (size_t)r * k + kk);
      for (int v = 0; v < V; v++) acc[r][v] = _mm256_fmadd_ps(xb, wv[v], acc[r][v]);
    }
  }
  // Unrolled, so that the accumulators stay in registers (GCC left this loop rolled and indexed
  // them in memory, storing each one every k).
#pragma GCC unroll 16
  for (int r = 0; r < R; r++) {
    float* yr = y + (size_t)(r0 + r) * w.n;
#pragma GCC unroll 16
    for (int v = 0; v < V; v++) {
      const int j = j0 + 8 * v;
      if (j + 8 <= w.n) _mm256_storeu_ps(yr + j, acc[r][v]);
      else _mm256_maskstore_ps(yr + j, tailMaskAvx2(w.n - j), acc[r][v]);
    }
  }
}

// Column blocks of 8 * V floats while they fit the padded width, then 16 (np is a multiple of 16).
template <int R, int V>
AVX2_FN inline void gemmRowsAvx2(const float* x, const Packed& w, float* y, int r0) {
  int j0 = 0;
  for (; j0 + 8 * V <= w.np; j0 += 8 * V) gemmTileAvx2<R, V>(x, w, y, r0, j0);
  for (; j0 < w.np; j0 += 16) gemmTileAvx2<R, 2>(x, w, y, r0, j0);
}

// Six rows x 16 columns (12 accumulators, two weight vectors and the broadcast: 15 of the 16
// ymm registers), a single row 64 columns at a time (eight chains to cover the FMA latency); the
// tile figures are in docs/perf/small-decoder.md.
AVX2_FN void gemmAvx2(const float* x, const Packed& w, float* y, int m) {
  int r = 0;
  for (; r + 6 <= m; r += 6) gemmRowsAvx2<6, 2>(x, w, y, r);
  for (; r < m; r++) gemmRowsAvx2<1, 8>(x, w, y, r);
}

AVX2_FN void addRmsNormAvx2(const float* x, float* residual, const float* weight, float* out, size_t rows, size_t h, float eps) {
  addRmsNormBody(x, residual, weight, out, rows, h, eps);
}
#endif

}  // namespace

namespace f32 {

using cpu::kAvx2;
using cpu::kAvx512;
using cpu::kPortable;
using cpu::SimdLevel;

SimdLevel bestSimd() {
  static const SimdLevel best = cpu::avx512FVl() ? kAvx512 : cpu::avx2Fma() ? kAvx2 : kPortable;
  return best;
}

namespace {

// The kernels in force: the best this CPU runs, or lower after setSimd (tests compare them).
SimdLevel simdLevel = bestSimd();

void gemmAt(const float* x, const Packed& w, float* y, int m) {
#if defined(__x86_64__) || defined(_M_X64)
  if (simdLevel == kAvx512) return gemmAvx512(x, w, y, m);
  if (simdLevel == kAvx2) return gemmAvx2(x, w, y, m);
#endif
  gemmPortable(x, w, y, m);
}

void siluMul(const float* gu, float* out, int rows, int width) {
#if defined(__x86_64__) || defined(_M_X64)
  if (simdLevel == kAvx512) return siluMulAvx512(gu, out, rows, width);
  if (simdLevel == kAvx2) return siluMulAvx2(gu, out, rows, width);
#endif
  siluMulPortable(gu, out, rows, width);
}

void addRmsNorm(const float* x, float* residual, const float* weight, float* out, size_t rows, size_t h, float eps) {
#if defined(__x86_64__) || defined(_M_X64)
  if (simdLevel == kAvx512) return addRmsNormAvx512(x, residual, weight, out, rows, h, eps);
  if (simdLevel == kAvx2) return addRmsNormAvx2(x, residual, weight, out, rows, h, eps);
#endif
  addRmsNormPortable(x, residual, weight, out, rows, h, eps);
}

// Rotates each head of each row (rotate-half, as the segments' RotaryEmbedding) by its position's cos/sin.
void rope(float* x, const int32_t* positions, const float* cosTable, const float* sinTable, int rows, int heads, int headDim) {
  const int half = headDim / 2;
  for (int r = 0; r < rows; r++) {
    const float* c = cosTable + (size_t)positions[r] * half;
    const float* s = sinTable + (size_t)positions[r] * half;
    for (int h = 0; h < heads; h++) {
      float* v = x + ((size_t)r * heads + h) * headDim;
      for (int i = 0; i < half; i++) {
        const float x1 = v[i], x2 = v[i + half];
        v[i] = x1 * c[i] - x2 * s[i];
        v[i + half] = x2 * c[i] + x1 * s[i];
      }
    }
  }
}

}  // namespace

SimdLevel simd() { return simdLevel; }

void setSimd(SimdLevel level) { simdLevel = std::min(level, bestSimd()); }

void pack(const float* w, int n, int k, float* packed) {
  const int np = paddedCols(n);
  std::fill(packed, packed + (size_t)k * np, 0.0f);
  for (int j = 0; j < n; j++)
    for (int kk = 0; kk < k; kk++) packed[(size_t)kk * np + j] = w[(size_t)j * k + kk];
}

void gemm(const float* x, const Packed& w, float* y, int m) { gemmAt(x, w, y, m); }

void qkv(const float* normed, const Packed& wq, const Packed& wk, const Packed& wv, float* q, float* k, float* v, int m,
         const int32_t* positions, const float* cosTable, const float* sinTable, int heads, int kvHeads, int headDim) {
  gemmAt(normed, wq, q, m);
  gemmAt(normed, wk, k, m);
  gemmAt(normed, wv, v, m);
  if (positions) {
    rope(q, positions, cosTable, sinTable, m, heads, headDim);
    rope(k, positions, cosTable, sinTable, m, kvHeads, headDim);
  }
}

void mlp(const float* attn, const Packed& wo, float* residual, const float* post, const Packed& wGateUp, const Packed& wDown,
         const float* next, float* normed, int m, int h, int inter, float eps) {
  // Scratch kept across calls: this thread's (the engine worker's) one step at a time.
  static thread_local std::vector<float> projected, gateUp, act;
  projected.resize((size_t)m * h);
  gateUp.resize((size_t)m * 2 * inter);
  act.resize((size_t)m * inter);
  gemmAt(attn, wo, projected.data(), m);
  addRmsNorm(projected.data(), residual, post, normed, m, h, eps);
  gemmAt(normed, wGateUp, gateUp.data(), m);
  siluMul(gateUp.data(), act.data(), m, inter);
  gemmAt(act.data(), wDown, projected.data(), m);
  addRmsNorm(projected.data(), residual, next, normed, m, h, eps);
}

}  // namespace f32
}  // namespace ortllm
