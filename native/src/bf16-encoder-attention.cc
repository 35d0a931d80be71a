// Bidirectional (encoder) self-attention for the --dtype bfloat16 pooling runner
// (runner/bf16-pooling-runner.ts), in place of onnxruntime's Attention between the addon's GEMMs.
// Input: the fused QKV GEMM's rows [B*S, 3H] (q, k, v side by side, head h at columns h*d of
// each), each sequence's length (its positions 0..L-1 real, the rest padding: keys past L are
// never scored, padded query rows get zeros). Per (sequence, head), on the bf16 GEMM's register
// tiles (bf16-tile.h): K packed as the GEMM packs a weight (keys = output columns), scores = Q K^T
// with Q rounded to bfloat16, a float32 softmax (the 1/sqrt(d) scale inside the exp), the
// probabilities rounded to bfloat16, and context = P V with V packed the same way (its dims =
// output columns), written straight into the context rows [B*S, H]. Sums in float32 throughout,
// the rounding the linears around it already apply to their inputs.
//
// Figures: docs/perf/embeddings.md.
#include "bf16-tile.h"
#include "bf16-gemm.h"
#include "thread-pool.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

namespace ortllm {
namespace {

using namespace ortllm::bf16;

#ifdef ORTLLM_BF16_X86
struct Shape {
  int seq, heads, headDim, hidden;
  float scale;
};

// K [L, d] (row stride ld) packed as bf16Pack packs W [n = L, k = d]: per group of 16 keys, d/2
// vectors of the 16 keys' two consecutive dims.
BF16_FN void packKeys(const float* k, size_t ld, int L, int d, int dPad, uint16_t* out, uint16_t* row) {
  for (int j = 0; j < L; j++) {
    convertRow(k + j * ld, d, row, dPad);
    uint16_t* dst = out + (size_t)(j / kGroup) * kGroup * dPad + (j % kGroup) * 2;
    for (int p = 0; p < dPad / 2; p++) std::memcpy(dst + (size_t)p * 2 * kGroup, row + 2 * p, 4);
  }
}

// V [L, d] (row stride ld) packed as W [n = d, k = L]: per group of 16 dims, per key pair the 16
// dims of both keys interleaved (the second key of an odd L's last pair zero).
BF16_FN void packValues(const float* v, size_t ld, int L, int d, int LPad, uint16_t* out) {
  alignas(64) static const uint16_t interleave[32] = {0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23, 8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i index = _mm512_load_si512(interleave);
  for (int g = 0; g * kGroup < d; g++) {
    const int left = d - g * kGroup;
    const __mmask16 mask = left >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << left) - 1);
    uint16_t* dst = out + (size_t)g * kGroup * LPad;
    for (int p = 0; p < LPad / 2; p++) {
      const __m512 even = _mm512_maskz_loadu_ps(mask, v + (size_t)(2 * p) * ld + g * kGroup);
      const __m512 odd = 2 * p + 1 < L ? _mm512_maskz_loadu_ps(mask, v + (size_t)(2 * p + 1) * ld + g * kGroup) : _mm512_setzero_ps();
      const __m512i pairs = (__m512i)_mm512_cvtne2ps_pbh(odd, even);  // [even 0..15, odd 0..15]
      _mm512_storeu_si512(dst + (size_t)p * 2 * kGroup, _mm512_permutexvar_epi16(index, pairs));
    }
  }
}

// scores [L, L] row r -> probabilities rounded to bfloat16 at p (LPad wide, the pad column zero).
BF16_FN void softmaxRow(float* s, int L, float scale, uint16_t* p, int LPad) {
  __m512 mx = _mm512_set1_ps(-INFINITY);
  for (int j = 0; j < L; j += 16) {
    const __mmask16 m = L - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (L - j)) - 1);
    mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), m, s + j));
  }
  const __m512 max = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
  const __m512 sc = _mm512_set1_ps(scale);
  __m512 sum = _mm512_setzero_ps();
  for (int j = 0; j < L; j += 16) {
    const __mmask16 m = L - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (L - j)) - 1);
    const __m512 e = _mm512_maskz_mov_ps(m, exp512(_mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, s + j), max), sc)));
    _mm512_mask_storeu_ps(s + j, m, e);
    sum = _mm512_add_ps(sum, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
  for (int j = 0; j < L; j += 16) {
    const __mmask16 m = L - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (L - j)) - 1);
    const __m256bh b = _mm512_cvtneps_pbh(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, s + j), inv));
    _mm256_mask_storeu_epi16(p + j, m, (__m256i)b);
  }
  if (LPad > L) p[L] = 0;
}

// C[rows, n] (row stride ldc) = A[rows, kPad] (bfloat16 rows) W^T through the GEMM's tiles.
inline void tiles(const uint16_t* a, int rows, int kPad, const uint16_t* w, int n, float* c, size_t ldc) {
  const size_t groupStride = (size_t)kPad * kGroup;
  const int groups = (n + kGroup - 1) / kGroup;
  for (int r = 0; r < rows; r += kTileRows)
    for (int g0 = 0; g0 < groups; g0 += kTileGroups)
      tileOf(kNone, std::min(kTileRows, rows - r), std::min(kTileGroups, groups - g0))(a + (size_t)r * kPad, kPad, w + g0 * groupStride, groupStride, nullptr,
                                                                                         c + r * ldc, n, ldc, g0 * kGroup);
}

// One sequence's head: context rows [0, L) of that head from qkv; rows [L, seq) zero. Queries go
// in blocks of kQueryBlock rows, so the scores held stay kQueryBlock x L (an 8192-token input's
// whole L x L would be 256 MB per thread) while K and V are packed once. (Runner alone, one thread,
// interleaved, two rounds: 32x128 7.29-7.67 ms per sequence against 7.15-7.48 unblocked, 1x128
// 7.73-8.07 against 8.14-8.46: the same within the noise.)
void attendHead(const float* qkv, int L, const Shape& s, int head, float* context) {
  constexpr int kQueryBlock = 64;
  thread_local std::vector<uint16_t> q, keys, values, probs, row;
  thread_local std::vector<float> scores;
  const int d = s.headDim, dPad = (d + 1) & ~1, LPad = (L + 1) & ~1;
  const size_t ldQkv = (size_t)3 * s.hidden;
  for (int r = L; r < s.seq; r++) std::memset(context + (size_t)r * s.hidden, 0, d * sizeof(float));
  if (L == 0) return;
  const float* qh = qkv + (size_t)head * d;
  const int block = std::min(L, kQueryBlock);
  q.resize((size_t)block * dPad);
  row.resize(dPad);
  keys.resize((size_t)(L + kGroup - 1) / kGroup * kGroup * dPad);
  values.resize((size_t)(d + kGroup - 1) / kGroup * kGroup * LPad);
  probs.resize((size_t)block * LPad);
  scores.resize((size_t)block * L);
  packKeys(qh + s.hidden, ldQkv, L, d, dPad, keys.data(), row.data());
  packValues(qh + 2 * s.hidden, ldQkv, L, d, LPad, values.data());
  for (int r0 = 0; r0 < L; r0 += block) {
    const int rows = std::min(block, L - r0);
    for (int r = 0; r < rows; r++) convertRow(qh + (r0 + r) * ldQkv, d, q.data() + (size_t)r * dPad, dPad);
    tiles(q.data(), rows, dPad, keys.data(), L, scores.data(), L);
    for (int r = 0; r < rows; r++) softmaxRow(scores.data() + (size_t)r * L, L, s.scale, probs.data() + (size_t)r * LPad, LPad);
    tiles(probs.data(), rows, LPad, values.data(), d, context + (size_t)r0 * s.hidden, s.hidden);
  }
}

void encoderAttention(const float* qkv, const int32_t* lengths, int batch, const Shape& s, float* context) {
  double work = 0;  // multiply-adds of QK^T and PV, the GEMM's m * n * k
  for (int b = 0; b < batch; b++) work += 2.0 * lengths[b] * lengths[b] * s.hidden;
  std::function<void(int)> fn = [&](int item) {
    const int b = item / s.heads, head = item % s.heads;
    const size_t row0 = (size_t)b * s.seq;
    attendHead(qkv + row0 * 3 * s.hidden, lengths[b], s, head, context + row0 * s.hidden + (size_t)head * s.headDim);
  };
  // The GEMM's rule (bf16-gemm.cc): helpers only for enough work to pay their wake-up.
  if (work >= 2e7)
    parallelFor(batch * s.heads, fn);
  else
    for (int i = 0; i < batch * s.heads; i++) fn(i);
}
#endif

}  // namespace

void bf16EncoderAttention(const float* qkv, const int32_t* lengths, int batch, int seq, int heads, int hidden, float scale, float* context) {
#ifdef ORTLLM_BF16_X86
  encoderAttention(qkv, lengths, batch, Shape{seq, heads, hidden / heads, hidden, scale}, context);
#endif
}

}  // namespace ortllm
