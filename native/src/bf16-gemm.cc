// bfloat16 GEMM on AVX512-BF16: y[M, N] = act(x[M, K] W[N, K]^T + b), W rounded to bfloat16 once
// (bf16Pack, round to nearest even), x rounded to bfloat16 per call (VCVTNE2PS2BF16, the same
// rounding), products summed in float32 by VDPBF16PS (two bf16 pairs per lane per instruction).
// The bias starts the accumulators; GELU (erf or tanh form) or ReLU is applied before the store.
// Also the encoder's residual add + LayerNorm (addLayerNorm); with the encoder attention on the
// same tiles (bf16-encoder-attention.cc, bf16-tile.h) the pooling runner's bfloat16 path
// (runner/bf16-pooling-runner.ts) leaves onnxruntime only the embeddings and the pooling.
// Figures against onnxruntime's Gemm: docs/perf/embeddings.md.
#include "bf16-tile.h"
#include "bf16-gemm.h"
#include "cpu-features.h"
#include "thread-pool.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

// Packing: columns in groups of 16; per group, K/2 vectors of 64 bytes, each the 16 columns' two
// consecutive K values (the pair VDPBF16PS multiplies with a broadcast pair of the row). K is
// padded to even with a zero, N to 16 with zero columns. Register tile: 4 rows x 4 column groups
// (16 accumulators). Work items are (up to 64 rows) x (4 column groups), on the addon's thread
// pool when the call has enough work.

namespace ortllm {
namespace {

using namespace ortllm::bf16;

#ifdef ORTLLM_BF16_X86
void gemm(const uint16_t* packed, const float* x, const float* bias, float* y, int m, int n, int k, int act) {
  thread_local std::vector<uint16_t> rows;  // the calling thread's bfloat16 rows, reused between calls
  const int kPad = (k + 1) & ~1;
  rows.resize((size_t)m * kPad);
  for (int r = 0; r < m; r++) convertRow(x + (size_t)r * k, k, rows.data() + (size_t)r * kPad, kPad);
  const uint16_t* a = rows.data();  // the helpers read the caller's rows
  const int groups = (n + kGroup - 1) / kGroup;
  const size_t groupStride = (size_t)kPad * kGroup;
  const int colItems = (groups + kTileGroups - 1) / kTileGroups;
  const int rowItems = (m + kChunkRows - 1) / kChunkRows;
  std::function<void(int)> fn = [&](int item) {
    const int g0 = (item % colItems) * kTileGroups, c = std::min(kTileGroups, groups - g0);
    const int r0 = (item / colItems) * kChunkRows, r1 = std::min(m, r0 + kChunkRows);
    for (int r = r0; r < r1; r += kTileRows) {
      const int tr = std::min(kTileRows, r1 - r);
      tileOf(act, tr, c)(a + (size_t)r * kPad, kPad, packed + g0 * groupStride, groupStride, bias ? bias + g0 * kGroup : nullptr, y + (size_t)r * n, n,
                         (size_t)n, g0 * kGroup);
    }
  };
  // Helpers only for enough work: waking one costs more than a small GEMM saves. (Measured: q8-gemm.cc's
  // 4M, which split every GEMM of a 16-token MiniLM forward (2.4-9.4M, 10-40 us on one thread), ran
  // that forward in 2.09-2.22 ms best of 40 against 1.84-1.88 with them on one thread, two threads,
  // interleaved; 128-row forwards the same either way.) Lowering this one to 1e6, so that a lone
  // 16-token MiniLM forward's GEMMs (2.4-9.4M) use the idle second core at concurrency 1: served
  // 16 tokens c1, bfloat16, three 400-request rounds each, interleaved: 301, 323, 311 -> 320, 315,
  // 326 embeddings/s (+3%, within the load's noise) for 2.60-2.75 -> 2.85-3.33 ms of server CPU
  // each (+17%); runner alone 1x16, two threads, mean of 400: 1.55, 1.92 -> 1.31, 1.49 ms (0: 1.47,
  // 1.48), the helper's core mostly held by other sessions. Not taken.
  if ((double)m * n * k >= 2e7)
    parallelFor(rowItems * colItems, fn);
  else
    for (int i = 0; i < rowItems * colItems; i++) fn(i);
}

// out[r] = LayerNorm(x[r] + residual[r]) * gamma + beta over rows of width h (mean and variance in float32).
BF16_FN void addLayerNorm(const float* x, const float* residual, const float* gamma, const float* beta, float* out, int rows, int h, float eps) {
  for (int r = 0; r < rows; r++) {
    const float* xr = x + (size_t)r * h;
    const float* rr = residual + (size_t)r * h;
    float* o = out + (size_t)r * h;
    __m512 sum = _mm512_setzero_ps();
    for (int j = 0; j < h; j += 16) {
      const __mmask16 mask = h - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (h - j)) - 1);
      const __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, xr + j), _mm512_maskz_loadu_ps(mask, rr + j));
      _mm512_mask_storeu_ps(o + j, mask, v);
      sum = _mm512_add_ps(sum, v);
    }
    const __m512 mean = _mm512_set1_ps(_mm512_reduce_add_ps(sum) / h);
    __m512 sq = _mm512_setzero_ps();
    for (int j = 0; j < h; j += 16) {
      const __mmask16 mask = h - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (h - j)) - 1);
      const __m512 d = _mm512_maskz_sub_ps(mask, _mm512_maskz_loadu_ps(mask, o + j), mean);
      sq = _mm512_fmadd_ps(d, d, sq);
    }
    const __m512 inv = _mm512_set1_ps(1.0f / std::sqrt(_mm512_reduce_add_ps(sq) / h + eps));
    for (int j = 0; j < h; j += 16) {
      const __mmask16 mask = h - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (h - j)) - 1);
      const __m512 d = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, o + j), mean), inv);
      _mm512_mask_storeu_ps(o + j, mask, _mm512_fmadd_ps(d, _mm512_maskz_loadu_ps(mask, gamma + j), _mm512_maskz_loadu_ps(mask, beta + j)));
    }
  }
}
#endif

}  // namespace

size_t bf16PackedCount(int n, int k) { return (size_t)((n + kGroup - 1) / kGroup) * kGroup * ((k + 1) & ~1); }

void bf16Pack(const float* w, int n, int k, uint16_t* p) {
  const int kPad = (k + 1) & ~1, groups = (n + kGroup - 1) / kGroup;
  for (int g = 0; g < groups; g++)
    for (int pair = 0; pair < kPad / 2; pair++)
      for (int col = 0; col < kGroup; col++)
        for (int j = 0; j < 2; j++) {
          const int row = g * kGroup + col, kk = 2 * pair + j;  // a row of W = an output column
          p[(size_t)g * kGroup * kPad + (size_t)pair * 32 + col * 2 + j] = row < n && kk < k ? floatToBf16(w[(size_t)row * k + kk]) : 0;
        }
}

bool bf16Supported() { return cpu::avx512Bf16(); }

void bf16Gemm(const uint16_t* packed, const float* x, const float* bias, float* y, int m, int n, int k, int act) {
#ifdef ORTLLM_BF16_X86
  if (m > 0) gemm(packed, x, bias, y, m, n, k, act);
#endif
}

void bf16AddLayerNorm(const float* x, const float* residual, const float* gamma, const float* beta, float* out, int rows, int h, float eps) {
#ifdef ORTLLM_BF16_X86
  addLayerNorm(x, residual, gamma, beta, out, rows, h, eps);
#endif
}

}  // namespace ortllm
