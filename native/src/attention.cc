// Paged causal attention over the runner's KV cache, read in place (no gather, no concat): an
// ONNX graph can only read the past after gathering it into a fresh tensor (onnxruntime-node keeps
// no tensor between runs), and at long contexts those copies dominated a decode step. Free of
// N-API (addon.cc binds it); figures and the variants measured in docs/perf/attention.md.
#include "attention.h"
#include "bf16-scalar.h"
#include "cpu-features.h"
#include "exp-poly.h"
#include "exp512.h"
#include "fp8-half.h"
#include "thread-pool.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define ORTLLM_X86 1
#endif

namespace ortllm {
namespace {

using cpu::kAvx2;
using cpu::kAvx512;
using cpu::kAvx512Bf16;
using cpu::kPortable;
using cpu::SimdLevel;

// Layout (the same as the runner's PagedKvCache): per layer one K and one V array of
// [numBlocks * blockSize, kvHeads * headDim] rows, float32, IEEE half or bfloat16 (Uint16Array),
// or 8-bit floats E4M3FN / E5M2 (Uint8Array; --kv-cache-dtype fp8 = fp8_e4m3, fp8_e5m2).
// Queries and outputs are the packed rows of a step: [numTokens, heads * headDim]; sequence s
// owns rows [first, first + count) at positions past .. past + count - 1 and attends to
// positions 0..its own.
//
// Each work item is (sequence, KV head, tile of query rows): the query heads sharing that KV
// head (GQA group) and the tile's rows all consume each K/V row once it is loaded (flash-style
// online softmax, fp32 accumulation). A decode step of a large batch (at least 4 sequences per
// thread, fewer than 4 query vectors per KV head, not a GQA decode that attend-prefill.inc takes)
// gives each item every KV head of its sequence instead, so whole cache rows are read in order.
// Either way a decode gets the same bits (its spans, its kernel: decodeSpan, itemHeads), which
// the speculative decoding tests need: the int8 inputs of Q8_0 linears magnify any difference.
// A verification step's rows (one-row entries sharing a block table) are taken together where
// their decodes run the SIMD item code (decodeRun): one item per KV head reads each span of K and
// V once for all the rows, each row summed over its own keys as its decode sums them.
// Items are spread over a small pool of threads that sleep between calls.
//
// The SIMD kernel (attend-simd.inc, built for AVX2/FMA/F16C and for AVX-512 F/BW/DQ/VL, the
// best the CPU has chosen at run time; setSimd picks a lower one) takes keys in spans of 256 whatever the
// block size: the span's cache rows are looked up once by walking the block table, every query
// vector scores the whole span, one online-softmax update per query and span (exp vectorised
// over the span, one rescale of the accumulator), then V is accumulated a few keys at a time,
// eight accumulator vectors per pass, so a pass reads each row's head slice whole (a 64-float
// slice in one pass at one query vector). Half and bfloat16 rows are widened in registers as
// they are loaded, each widened vector consumed at once (no accumulator spilled to the stack).
// Decodes (one query row per item) prefetch: each span's V rows while its K pass runs, the next
// span's K rows while its V pass runs, in spans of about 16 KB of K rows (16 to 256 keys), except
// float32 rows of 1 KB or more per item. At head size 8 with two or more query vectors per KV
// head, a decode scores eight keys per vector: their slices transposed in registers, shared by
// the group's query vectors, no horizontal sums. The AVX-512 build scores and accumulates head
// sizes 16-64 sixteen columns per instruction (a 64-column slice in four vectors, sixteen 16-bit
// values widened at once); elsewhere it runs the AVX2 code. On CPUs with AVX512-BF16 and VBMI,
// decodes of bfloat16 and 8-bit caches take attend-bf16.inc's kernels: keys scored with VDPBF16PS
// on the rows' bfloat16 words (8-bit codes looked up as bfloat16, exactly), the query split into
// three bfloat16 terms so scores keep float32 precision; at head size 8 four KV heads per vector
// (E4M3 only: bfloat16 and E5M2 rows run faster in attend-hd8.inc's float32 kernel). On AVX-512,
// head size 8 takes attend-hd8.inc: decodes of KV heads in fours four heads per float32 vector
// pair, prefill tiles with the item's query vectors across lanes.
// Prefill tiles (several query rows) and GQA decodes (several query heads per KV head) at head
// sizes that are multiples of 16 take attend-prefill.inc's AVX-512 kernel instead (register-blocked
// GEMMs, each K and V row loaded once for all the item's query vectors).
// The sliding window, logit soft-cap and sinks live in the portable kernel, attend-simd.inc and
// attend-prefill.inc; items that need them skip the other fast paths (docs/attention-features.md).

struct Shape {
  int numHeads;
  int numKvHeads;
  int headDim;
  int blockSize;
  float scale;
};

struct Call {
  const float* q;
  float* out;
  const void* k;
  const void* v;
  KvType kvType;
  const int32_t* seqs;  // per sequence: first row, row count, past length, offset into tables
  const int32_t* tables;
  Shape shape;
  int window;           // sliding window (0: none), softcap (0: none), sinks (null: none): AttentionCall's
  float softcap;
  const float* sinks;
};

struct Item {
  int seq;
  int kvHead;  // the first of `heads` consecutive KV heads
  int row0;
  int rows;
  int heads;
  // The rows are entries attended one by one (a verification step's), taken together so each
  // span of K and V is read once for all of them, but each row summed as its own decode.
  bool decodeRows = false;
};

constexpr int kMaxQueries = 32;  // query vectors (group heads x tile rows) per work item
constexpr int kMaxHeadDim = 256;
constexpr int kKeyChunk = 16;    // portable kernel: keys scored together before the softmax update
constexpr int kSpan = 256;       // SIMD kernels: keys scored together before the softmax update
constexpr int kPrefetchSpanBytes = 16 * 1024;  // SIMD kernels, prefetching decodes: K bytes per span

// A SIMD work item's buffers (about 100 KB): one set per thread, kept between calls.
struct Scratch {
  alignas(64) float acc[kMaxQueries][kMaxHeadDim];
  alignas(64) float score[kMaxQueries][kSpan];
  alignas(64) float kt[kMaxHeadDim * 16];
  alignas(64) float rows[16 * kMaxHeadDim];
  alignas(64) float m[kMaxQueries];
  alignas(64) float l[kMaxQueries];
  size_t at[kSpan + 16];
  size_t atNext[kSpan + 16];
};

Scratch& scratch() {
  thread_local std::unique_ptr<Scratch> s(new Scratch());
  return *s;
}

// ---------------------------------------------------------------- window, soft-cap, sinks
// The first key a query at `pos` sees: the sliding window's start (0 without one).
inline int windowStart(const Call& c, int pos) { return c.window > 0 ? std::max(0, pos - c.window + 1) : 0; }

// Whether an item needs the window, soft-cap or sinks: the head-size-8 kernels lack them, so such
// items take attend-simd.inc instead. A window that starts at key 0 for every row of the item
// (short contexts) changes nothing, and leaves them their fast paths.
inline bool plainItem(const Call& c, const Item& it) {
  const int lastRow = c.seqs[4 * it.seq + 2] + it.row0 + it.rows - 1;
  return c.softcap == 0 && !c.sinks && windowStart(c, lastRow) == 0;
}

// What a query vector's accumulator is multiplied by at the end: 1 / l, or with a sink logit s
// for its head the denominator gains exp(s - m) (no value), computed against max(m, s) so neither
// term overflows. m and l: the running max and sum of the online softmax.
inline float outputScale(const Call& c, int head, float m, float l) {
  if (!c.sinks) return l > 0 ? 1.0f / l : 0.0f;
  const float sink = c.sinks[head], top = std::max(m, sink);
  const float kept = m == -INFINITY ? 0.0f : std::exp(m - top);
  return kept / (l * kept + std::exp(sink - top));
}

// ---------------------------------------------------------------- generic kernel
// Each query vector of a work item (head-major, then row, then group member): its row in q, the last key it may see (causal), and the
// online-softmax state (running max, sum, accumulator) reset.
inline void startQueries(const Call& c, const Item& it, int group, int past, const float** qp, int* limit, float* m,
                         float* l, float (*acc)[kMaxHeadDim]) {
  const Shape& s = c.shape;
  const int hd = s.headDim;
  const size_t qStride = (size_t)s.numHeads * hd;
  const int first = c.seqs[4 * it.seq];
  const int qh = group * it.rows;
  for (int i = 0; i < qh * it.heads; i++) {
    int r = it.row0 + i % qh / group, g = i % group;
    qp[i] = c.q + (size_t)(first + r) * qStride + (size_t)((it.kvHead + i / qh) * group + g) * hd;
    limit[i] = past + r;
    m[i] = -INFINITY;
    l[i] = 0;
    for (int d = 0; d < hd; d++) acc[i][d] = 0;
  }
}

template <typename Load>
void attendGeneric(const Call& c, const Item& it, Load load) {
  const Shape& s = c.shape;
  const int hd = s.headDim;
  const int group = s.numHeads / s.numKvHeads;
  const int kvStride = s.numKvHeads * hd;
  const int qStride = s.numHeads * hd;
  const int32_t* info = c.seqs + 4 * it.seq;
  const int first = info[0], past = info[2];
  const int32_t* table = c.tables + info[3];
  const int nq = group * it.rows;
  float m[kMaxQueries], l[kMaxQueries], acc[kMaxQueries][kMaxHeadDim], kv[kMaxHeadDim];
  float score[kMaxQueries][kKeyChunk];
  const float* qp[kMaxQueries];
  int limit[kMaxQueries];
  startQueries(c, it, group, past, qp, limit, m, l, acc);
  const int keys = past + it.row0 + it.rows;
  for (int j0 = windowStart(c, past + it.row0); j0 < keys; j0 += kKeyChunk) {
    const int n = keys - j0 < kKeyChunk ? keys - j0 : kKeyChunk;
    for (int jj = 0; jj < n; jj++) {
      int pos = j0 + jj;
      size_t row = (size_t)table[pos / s.blockSize] * s.blockSize + pos % s.blockSize;
      load(c.k, row * kvStride + (size_t)it.kvHead * hd, hd, kv);
      for (int i = 0; i < nq; i++) {
        float dot = 0;
        for (int d = 0; d < hd; d++) dot += qp[i][d] * kv[d];
        const float scaled = c.softcap > 0 ? c.softcap * std::tanh(dot * s.scale / c.softcap) : dot * s.scale;
        score[i][jj] = pos <= limit[i] && pos >= windowStart(c, limit[i]) ? scaled : -INFINITY;
      }
    }
    for (int i = 0; i < nq; i++) {
      float mx = m[i];
      for (int jj = 0; jj < n; jj++) mx = score[i][jj] > mx ? score[i][jj] : mx;
      if (mx == -INFINITY) {  // every key masked (before the window, or after the row)
        for (int jj = 0; jj < n; jj++) score[i][jj] = 0;
        continue;
      }
      float corr = std::exp(m[i] - mx);
      m[i] = mx;
      l[i] *= corr;
      for (int d = 0; d < hd; d++) acc[i][d] *= corr;
      for (int jj = 0; jj < n; jj++) {
        float p = std::exp(score[i][jj] - mx);
        score[i][jj] = p;
        l[i] += p;
      }
    }
    for (int jj = 0; jj < n; jj++) {
      int pos = j0 + jj;
      size_t row = (size_t)table[pos / s.blockSize] * s.blockSize + pos % s.blockSize;
      load(c.v, row * kvStride + (size_t)it.kvHead * hd, hd, kv);
      for (int i = 0; i < nq; i++) {
        float p = score[i][jj];
        if (p == 0) continue;
        for (int d = 0; d < hd; d++) acc[i][d] += p * kv[d];
      }
    }
  }
  for (int i = 0; i < nq; i++) {
    int r = it.row0 + i / group, g = i % group;
    float* o = c.out + (size_t)(first + r) * qStride + (size_t)(it.kvHead * group + g) * hd;
    const float inv = outputScale(c, it.kvHead * group + g, m[i], l[i]);
    for (int d = 0; d < hd; d++) o[d] = acc[i][d] * inv;
  }
}

void loadF32(const void* base, size_t at, int n, float* dst) { std::memcpy(dst, (const float*)base + at, n * sizeof(float)); }
// n elements of a 16- or 8-bit cache from element `at`, widened to float32 by Decode.
template <typename T, float (*Decode)(T)>
void loadDecoded(const void* base, size_t at, int n, float* dst) {
  const T* p = (const T*)base + at;
  for (int i = 0; i < n; i++) dst[i] = Decode(p[i]);
}

#ifdef ORTLLM_X86
// ---------------------------------------------------------------- AVX2 + FMA + F16C kernel
#define AVX2_FN __attribute__((target("avx2,fma,f16c")))

AVX2_FN inline __m256 exp256(__m256 x) {
  // exp-poly.h's exp: 2^n built in the exponent bits, 0 below kMin.
  using namespace ortllm::expPoly;
  const __m256 lo = _mm256_set1_ps(kMin);
  __m256 underflow = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  x = _mm256_max_ps(x, lo);
  x = _mm256_min_ps(x, _mm256_set1_ps(kMax));
  __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kCoeffs[0]);
  for (int i = 1; i < 6; i++) p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kCoeffs[i]));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  return _mm256_andnot_ps(underflow, y);
}

// In place, n (a multiple of 8) scores x -> cap * tanh(x / cap). tanh |t| = 1 - 2 / (exp(2|t|) + 1)
// from 1/4 up; below, where that difference cancels, its odd series to t^11 (the next term is
// under 1e-8 relative there).
AVX2_FN inline void capScores(float* sc, int n, float cap) {
  const __m256 capv = _mm256_set1_ps(cap), inv = _mm256_set1_ps(1.0f / cap), one = _mm256_set1_ps(1.0f), two = _mm256_set1_ps(2.0f);
  const __m256 signBit = _mm256_set1_ps(-0.0f);
  for (int j = 0; j < n; j += 8) {
    const __m256 t = _mm256_mul_ps(_mm256_load_ps(sc + j), inv);
    const __m256 a = _mm256_andnot_ps(signBit, t);
    const __m256 far = _mm256_sub_ps(one, _mm256_div_ps(two, _mm256_add_ps(exp256(_mm256_add_ps(a, a)), one)));
    const __m256 a2 = _mm256_mul_ps(a, a);
    __m256 p = _mm256_set1_ps(-1382.0f / 155925.0f);
    p = _mm256_fmadd_ps(p, a2, _mm256_set1_ps(62.0f / 2835.0f));
    p = _mm256_fmadd_ps(p, a2, _mm256_set1_ps(-17.0f / 315.0f));
    p = _mm256_fmadd_ps(p, a2, _mm256_set1_ps(2.0f / 15.0f));
    p = _mm256_fmadd_ps(p, a2, _mm256_set1_ps(-1.0f / 3.0f));
    const __m256 near = _mm256_fmadd_ps(_mm256_mul_ps(p, a2), a, a);
    const __m256 mag = _mm256_blendv_ps(far, near, _mm256_cmp_ps(a, _mm256_set1_ps(0.25f), _CMP_LT_OQ));
    _mm256_store_ps(sc + j, _mm256_mul_ps(capv, _mm256_or_ps(mag, _mm256_and_ps(signBit, t))));
  }
}

AVX2_FN inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Eight dot products a[k] . b (lanes summed) as one vector [sum a0, ..., sum a7].
AVX2_FN inline __m256 reduce8(__m256 a0, __m256 a1, __m256 a2, __m256 a3, __m256 a4, __m256 a5, __m256 a6, __m256 a7) {
  __m256 s01 = _mm256_hadd_ps(a0, a1), s23 = _mm256_hadd_ps(a2, a3);
  __m256 s45 = _mm256_hadd_ps(a4, a5), s67 = _mm256_hadd_ps(a6, a7);
  __m256 s0123 = _mm256_hadd_ps(s01, s23), s4567 = _mm256_hadd_ps(s45, s67);
  // s0123 = [a0lo a1lo a2lo a3lo | a0hi a1hi a2hi a3hi] (each a half-sum); same for s4567.
  __m256 lo = _mm256_permute2f128_ps(s0123, s4567, 0x20), hi = _mm256_permute2f128_ps(s0123, s4567, 0x31);
  return _mm256_add_ps(lo, hi);
}

// Eight 8-bit floats as IEEE halves (eight 16-bit lanes). E5M2 is a half's upper byte. E4M3FN's
// fields move one bit right inside the upper byte (S.EEEE.MMM -> S.0EEEE.MMM0000000): the half then
// holds the value times 2^-8 (normal and subnormal alike), which the kernel folds into its score
// scale and output (fp8Factor), and its NaN S.1111.111 (which would read as 1.875) is replaced by
// a half NaN (the sign of a NaN carries nothing).
template <KvType T>
AVX2_FN inline __m128i fp8ToHalves(__m128i bytes) {
  const __m128i h = _mm_unpacklo_epi8(_mm_setzero_si128(), bytes);
  if constexpr (T == kE5M2) return h;
  const __m128i moved = _mm_and_si128(_mm_srai_epi16(h, 1), _mm_set1_epi16((short)0xbfff));
  const __m128i nan = _mm_cmpeq_epi16(_mm_slli_epi16(moved, 1), _mm_set1_epi16(0x7f00));  // the magnitude, shifted past the sign
  return _mm_blendv_epi8(moved, _mm_set1_epi16(0x7e00), nan);
}

// What the SIMD kernels' widened values are short of the stored ones by (see fp8ToHalves).
template <KvType T>
constexpr float fp8Factor() {
  return T == kE4M3 ? 256.0f : 1.0f;
}

template <KvType T>
AVX2_FN inline __m256 load8(const void* base, size_t at) {
  if constexpr (T == kF32) {
    return _mm256_loadu_ps((const float*)base + at);
  } else if constexpr (T == kE4M3 || T == kE5M2) {
    return _mm256_cvtph_ps(fp8ToHalves<T>(_mm_loadl_epi64((const __m128i*)((const uint8_t*)base + at))));
  } else {
    const __m128i raw = _mm_loadu_si128((const __m128i*)((const uint16_t*)base + at));
    if constexpr (T == kF16) return _mm256_cvtph_ps(raw);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
  }
}

AVX2_FN inline float hmax256(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Scores of IB query vectors against 16 keys stored transposed (kt[d * 16 + key]): broadcast one
// query element, two key vectors, 2 * IB multiply-adds per step, no reductions.
template <int IB>
AVX2_FN inline void scoresTransposed(const float* const* qp, const float* kt, int hd, float scale, float* const* score) {
  __m256 a0[IB], a1[IB];
  for (int b = 0; b < IB; b++) a0[b] = a1[b] = _mm256_setzero_ps();
  for (int d = 0; d < hd; d++) {
    const __m256 k0 = _mm256_load_ps(kt + d * 16), k1 = _mm256_load_ps(kt + d * 16 + 8);
    for (int b = 0; b < IB; b++) {
      const __m256 q = _mm256_broadcast_ss(qp[b] + d);
      a0[b] = _mm256_fmadd_ps(q, k0, a0[b]);
      a1[b] = _mm256_fmadd_ps(q, k1, a1[b]);
    }
  }
  const __m256 sc = _mm256_set1_ps(scale);
  for (int b = 0; b < IB; b++) {
    _mm256_store_ps(score[b], _mm256_mul_ps(a0[b], sc));
    _mm256_store_ps(score[b] + 8, _mm256_mul_ps(a1[b], sc));
  }
}

// The cache viewed from `elements` further on (another KV head's columns).
template <KvType T>
inline const void* shifted(const void* base, size_t elements) {
  return (const char*)base + elements * kvBytes<T>();
}

// Eight keys' scores for one query vector: eight dot products, one reduction.
template <KvType T>
AVX2_FN inline __m256 scores8(const float* q, const void* k, const size_t* at, int vecs) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  for (int v = 0; v < vecs; v++) {
    const __m256 qv = _mm256_loadu_ps(q + 8 * v);
    a0 = _mm256_fmadd_ps(qv, load8<T>(k, at[0] + 8 * v), a0);
    a1 = _mm256_fmadd_ps(qv, load8<T>(k, at[1] + 8 * v), a1);
    a2 = _mm256_fmadd_ps(qv, load8<T>(k, at[2] + 8 * v), a2);
    a3 = _mm256_fmadd_ps(qv, load8<T>(k, at[3] + 8 * v), a3);
    a4 = _mm256_fmadd_ps(qv, load8<T>(k, at[4] + 8 * v), a4);
    a5 = _mm256_fmadd_ps(qv, load8<T>(k, at[5] + 8 * v), a5);
    a6 = _mm256_fmadd_ps(qv, load8<T>(k, at[6] + 8 * v), a6);
    a7 = _mm256_fmadd_ps(qv, load8<T>(k, at[7] + 8 * v), a7);
  }
  return reduce8(a0, a1, a2, a3, a4, a5, a6, a7);
}

// acc[b] += sum_j p[b][j] * V[j] for IB query vectors over W (1 or 2) eight-float columns at v0.
// U independent sums over alternating keys: with few columns and queries a single chain of
// multiply-adds would wait on its own latency every key.
template <KvType T, int IB, int W, int U>
AVX2_FN inline void accumulateValues(float (*acc)[kMaxHeadDim], float* const* p, const void* vCache, const size_t* at, int n, int v0) {
  __m256 r[U][IB][W];
  for (int b = 0; b < IB; b++)
    for (int w = 0; w < W; w++) {
      r[0][b][w] = _mm256_load_ps(acc[b] + 8 * (v0 + w));
      for (int u = 1; u < U; u++) r[u][b][w] = _mm256_setzero_ps();
    }
  int j = 0;
  for (; j + U <= n; j += U)
    for (int u = 0; u < U; u++) {
      if constexpr (IB == 1) {  // widen and consume each column at once: no temporaries live
        const __m256 pb = _mm256_broadcast_ss(p[0] + j + u);
        for (int w = 0; w < W; w++) r[u][0][w] = _mm256_fmadd_ps(pb, load8<T>(vCache, at[j + u] + 8 * (v0 + w)), r[u][0][w]);
        continue;
      }
      __m256 v[W];
      for (int w = 0; w < W; w++) v[w] = load8<T>(vCache, at[j + u] + 8 * (v0 + w));
      for (int b = 0; b < IB; b++) {
        const __m256 pb = _mm256_broadcast_ss(p[b] + j + u);
        for (int w = 0; w < W; w++) r[u][b][w] = _mm256_fmadd_ps(pb, v[w], r[u][b][w]);
      }
    }
  for (; j < n; j++) {
    __m256 v[W];
    for (int w = 0; w < W; w++) v[w] = load8<T>(vCache, at[j] + 8 * (v0 + w));
    for (int b = 0; b < IB; b++) {
      const __m256 pb = _mm256_broadcast_ss(p[b] + j);
      for (int w = 0; w < W; w++) r[0][b][w] = _mm256_fmadd_ps(pb, v[w], r[0][b][w]);
    }
  }
  for (int b = 0; b < IB; b++)
    for (int w = 0; w < W; w++) {
      for (int u = 1; u < U; u++) r[0][b][w] = _mm256_add_ps(r[0][b][w], r[u][b][w]);
      _mm256_store_ps(acc[b] + 8 * (v0 + w), r[0][b][w]);
    }
}

// Keys j0 .. j0 + n (a few, so their V rows stay in L1 while each column group reads them); about
// eight independent multiply-add chains whatever the number of query vectors (IB) and columns.
template <KvType T, int IB>
AVX2_FN inline void accumulateBlock(float (*acc)[kMaxHeadDim], float* const* p, int j0, const void* vCache, const size_t* at, int n, int vecs) {
  constexpr int W = 8 / IB;  // columns per pass: eight chains, each row's slice read whole
  float* pj[IB];
  for (int b = 0; b < IB; b++) pj[b] = p[b] + j0;
  int v0 = 0;
  for (; v0 + W <= vecs; v0 += W) accumulateValues<T, IB, W, 1>(acc, pj, vCache, at + j0, n, v0);
  if constexpr (W >= 4)
    if (v0 + W / 2 <= vecs) accumulateValues<T, IB, W / 2, 2>(acc, pj, vCache, at + j0, n, v0), v0 += W / 2;
  if constexpr (W >= 2)
    if (v0 + 2 <= vecs) accumulateValues<T, IB, 2, W / 2>(acc, pj, vCache, at + j0, n, v0), v0 += 2;
  if (v0 < vecs) accumulateValues<T, IB, 1, W>(acc, pj, vCache, at + j0, n, v0);
}

// Head size 8: scores of the `qn` query vectors qp[0..qn) against eight keys, the keys' slices
// transposed in registers (one vector per dimension, keys across lanes), so the group's queries
// share one transpose and no horizontal reduction runs.
template <KvType T>
AVX2_FN inline void scores8x8(const float* const* qp, int qn, const void* k, const size_t* at, __m256 scale, float* const* score, int jj) {
  const __m256 r0 = load8<T>(k, at[0]), r1 = load8<T>(k, at[1]), r2 = load8<T>(k, at[2]), r3 = load8<T>(k, at[3]);
  const __m256 r4 = load8<T>(k, at[4]), r5 = load8<T>(k, at[5]), r6 = load8<T>(k, at[6]), r7 = load8<T>(k, at[7]);
  const __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
  const __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5), t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
  const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE), u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
  const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE), u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
  const __m256 d0 = _mm256_permute2f128_ps(u0, u4, 0x20), d1 = _mm256_permute2f128_ps(u1, u5, 0x20), d2 = _mm256_permute2f128_ps(u2, u6, 0x20), d3 = _mm256_permute2f128_ps(u3, u7, 0x20);
  const __m256 d4 = _mm256_permute2f128_ps(u0, u4, 0x31), d5 = _mm256_permute2f128_ps(u1, u5, 0x31), d6 = _mm256_permute2f128_ps(u2, u6, 0x31), d7 = _mm256_permute2f128_ps(u3, u7, 0x31);
  for (int b = 0; b < qn; b++) {
    const float* q = qp[b];
    __m256 a = _mm256_mul_ps(_mm256_broadcast_ss(q), d0), c = _mm256_mul_ps(_mm256_broadcast_ss(q + 1), d1);
    a = _mm256_fmadd_ps(_mm256_broadcast_ss(q + 2), d2, a);
    c = _mm256_fmadd_ps(_mm256_broadcast_ss(q + 3), d3, c);
    a = _mm256_fmadd_ps(_mm256_broadcast_ss(q + 4), d4, a);
    c = _mm256_fmadd_ps(_mm256_broadcast_ss(q + 5), d5, c);
    a = _mm256_fmadd_ps(_mm256_broadcast_ss(q + 6), d6, a);
    c = _mm256_fmadd_ps(_mm256_broadcast_ss(q + 7), d7, c);
    _mm256_store_ps(score[b] + jj, _mm256_mul_ps(_mm256_add_ps(a, c), scale));
  }
}

// Where the rows of keys j0 .. j0 + n (n > 0) start in the cache, walking the block table (no
// division per key: it costs more than a key's dot product at head size 8); the padding keys up
// to a multiple of 8 (and 8 more) re-read the last row.
inline void spanRows(const Shape& s, const int32_t* table, size_t kvStride, size_t head, int j0, int n, size_t* at) {
  for (int jj = 0, blk = j0 / s.blockSize, in = j0 % s.blockSize; jj < n; blk++, in = 0) {
    const int end = jj + std::min(s.blockSize - in, n - jj);
    size_t row = ((size_t)table[blk] * s.blockSize + in) * kvStride + head;
    for (; jj < end; jj++, row += kvStride) at[jj] = row;
  }
  const int padded = (n + 7) & ~7;
  for (int jj = n; jj < padded + 8; jj++) at[jj] = at[n - 1];
}

// Asks for the cache lines of rows at[0 .. n) (`bytes` from each row's start) ahead of use. The
// T1 hint: into L2 (measured against T0: equal at head size 8, better for 16-bit rows of the 100M
// shape, where T0's lines were pushed out of L1 before their pass read them).
template <KvType T>
AVX2_FN inline void prefetchRows(const void* base, const size_t* at, int n, size_t bytes, size_t offset = 0) {
  for (int j = 0; j < n; j++) {
    const char* p = (const char*)base + (at[j] + offset) * kvBytes<T>();
    const char* end = p + bytes;
    for (p = (const char*)((uintptr_t)p & ~(uintptr_t)63); p < end; p += 64) _mm_prefetch(p, _MM_HINT_T1);
  }
}

int decodeHeads(const Shape& s, int group, int rows);

// Keys per span of every decode item of a call (attend-simd.inc, attend-hd8-avx2.inc): sized by
// the row bytes of a wide batch's decode item (decodeHeads), whatever the item holds. The spans
// set where the online softmax rescales, and a decode must sum in the same order alone and in a
// wide batch: the Q8_0 linears' int8 inputs downstream turn a last-bit difference into one a
// logprob shows. Whether an item prefetches stays its own (that changes no sum).
template <KvType T>
int decodeSpan(const Shape& s) {
  const size_t row = (size_t)decodeHeads(s, s.numHeads / s.numKvHeads, 1) * s.headDim * kvBytes<T>();
  if (T == kF32 && row >= 1024) return kSpan;  // the rows the hardware prefetcher streams alone
  return std::max(16, std::min(kSpan, (int)(kPrefetchSpanBytes / row) & ~15));
}

#define ATTEND_TARGET AVX2_FN
#define ATTEND_NAME attendAvx2
#define ATTEND_512 0
#define ATTEND_DOT 0
#include "attend-simd.inc"
#undef ATTEND_TARGET
#undef ATTEND_NAME
#undef ATTEND_512
#include "attend-hd8-avx2.inc"

// ---------------------------------------------------------------- AVX-512 (F, BW, DQ, VL) passes
// Sixteen columns per instruction: a 64-column head slice is four vectors, and sixteen 16-bit
// values are widened per instruction, so 16-bit rows take float32's instructions per byte under
// AVX2. Chosen at run time like the AVX2 kernel (attendAvx512 compiles the same item code for
// this target, adding these passes at head sizes 16, 32, 48 and 64).
#define AVX512_FN __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c")))

template <KvType T>
AVX512_FN inline __m512 load16(const void* base, size_t at) {
  if constexpr (T == kF32) {
    return _mm512_loadu_ps((const float*)base + at);
  } else if constexpr (T == kE4M3 || T == kE5M2) {
    // Sixteen bytes into the upper bytes of sixteen 16-bit lanes with one in-lane shuffle of the
    // bytes loaded into both halves (lane 0 takes bytes 0-7, lane 1 bytes 8-15).
    const __m256i spread = _mm256_setr_epi8(-1, 0, -1, 1, -1, 2, -1, 3, -1, 4, -1, 5, -1, 6, -1, 7, -1, 8, -1, 9, -1, 10, -1, 11, -1, 12, -1, 13, -1, 14, -1, 15);
    const __m256i h = _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i*)((const uint8_t*)base + at))), spread);
    if constexpr (T == kE5M2) return _mm512_cvtph_ps(h);
    // fp8ToHalves' E4M3 move, its NaN found as a mask (the magnitude shifted past the sign) and
    // replaced by a half NaN.
    const __m256i moved = _mm256_and_si256(_mm256_srai_epi16(h, 1), _mm256_set1_epi16((short)0xbfff));
    const __mmask16 nan = _mm256_cmpeq_epi16_mask(_mm256_slli_epi16(moved, 1), _mm256_set1_epi16(0x7f00));
    return _mm512_cvtph_ps(_mm256_mask_blend_epi16(nan, moved, _mm256_set1_epi16(0x7e00)));
  } else {
    const __m256i raw = _mm256_loadu_si256((const __m256i*)((const uint16_t*)base + at));
    if constexpr (T == kF16) return _mm512_cvtph_ps(raw);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(raw), 16));
  }
}

AVX512_FN inline __m256 foldHalves(__m512 a) { return _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1)); }

// scores8 with sixteen columns per step (vecs16 = head size / 16).
template <KvType T>
AVX512_FN inline __m256 scores8x16(const float* q, const void* k, const size_t* at, int vecs16) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  for (int v = 0; v < vecs16; v++) {
    const __m512 qv = _mm512_loadu_ps(q + 16 * v);
    a0 = _mm512_fmadd_ps(qv, load16<T>(k, at[0] + 16 * v), a0);
    a1 = _mm512_fmadd_ps(qv, load16<T>(k, at[1] + 16 * v), a1);
    a2 = _mm512_fmadd_ps(qv, load16<T>(k, at[2] + 16 * v), a2);
    a3 = _mm512_fmadd_ps(qv, load16<T>(k, at[3] + 16 * v), a3);
    a4 = _mm512_fmadd_ps(qv, load16<T>(k, at[4] + 16 * v), a4);
    a5 = _mm512_fmadd_ps(qv, load16<T>(k, at[5] + 16 * v), a5);
    a6 = _mm512_fmadd_ps(qv, load16<T>(k, at[6] + 16 * v), a6);
    a7 = _mm512_fmadd_ps(qv, load16<T>(k, at[7] + 16 * v), a7);
  }
  return reduce8(foldHalves(a0), foldHalves(a1), foldHalves(a2), foldHalves(a3), foldHalves(a4), foldHalves(a5), foldHalves(a6),
                 foldHalves(a7));
}

// scores8x16 of two query vectors against the same eight keys: each key vector widened once for
// both, each query's sums in scores8x16's order (a verification step's rows, decodeRows).
template <KvType T>
AVX512_FN inline void scores8x16Pair(const float* qa, const float* qb, const void* k, const size_t* at, int vecs16, __m256* outA, __m256* outB) {
  __m512 a[8], b[8];
  for (int j = 0; j < 8; j++) a[j] = b[j] = _mm512_setzero_ps();
  for (int v = 0; v < vecs16; v++) {
    const __m512 qav = _mm512_loadu_ps(qa + 16 * v), qbv = _mm512_loadu_ps(qb + 16 * v);
    for (int j = 0; j < 8; j++) {
      const __m512 kv = load16<T>(k, at[j] + 16 * v);
      a[j] = _mm512_fmadd_ps(qav, kv, a[j]);
      b[j] = _mm512_fmadd_ps(qbv, kv, b[j]);
    }
  }
  *outA = reduce8(foldHalves(a[0]), foldHalves(a[1]), foldHalves(a[2]), foldHalves(a[3]), foldHalves(a[4]), foldHalves(a[5]), foldHalves(a[6]), foldHalves(a[7]));
  *outB = reduce8(foldHalves(b[0]), foldHalves(b[1]), foldHalves(b[2]), foldHalves(b[3]), foldHalves(b[4]), foldHalves(b[5]), foldHalves(b[6]), foldHalves(b[7]));
}

// accumulateOne16 of two query vectors over the same n keys: each value vector widened once for
// both, each accumulator's chains (alternate keys) in accumulateOne16's order.
template <KvType T, int C>
AVX512_FN inline void accumulatePair16(float* accA, float* accB, const float* pA, const float* pB, const void* v, const size_t* at, int n) {
  __m512 ra[C], sa[C], rb[C], sb[C];
  for (int c = 0; c < C; c++) {
    ra[c] = _mm512_load_ps(accA + 16 * c);
    rb[c] = _mm512_load_ps(accB + 16 * c);
    sa[c] = sb[c] = _mm512_setzero_ps();
  }
  int j = 0;
  for (; j + 2 <= n; j += 2) {
    const __m512 a0 = _mm512_set1_ps(pA[j]), b0 = _mm512_set1_ps(pB[j]), a1 = _mm512_set1_ps(pA[j + 1]), b1 = _mm512_set1_ps(pB[j + 1]);
    for (int c = 0; c < C; c++) {
      const __m512 x = load16<T>(v, at[j] + 16 * c);
      ra[c] = _mm512_fmadd_ps(a0, x, ra[c]);
      rb[c] = _mm512_fmadd_ps(b0, x, rb[c]);
    }
    for (int c = 0; c < C; c++) {
      const __m512 x = load16<T>(v, at[j + 1] + 16 * c);
      sa[c] = _mm512_fmadd_ps(a1, x, sa[c]);
      sb[c] = _mm512_fmadd_ps(b1, x, sb[c]);
    }
  }
  if (j < n) {
    const __m512 a0 = _mm512_set1_ps(pA[j]), b0 = _mm512_set1_ps(pB[j]);
    for (int c = 0; c < C; c++) {
      const __m512 x = load16<T>(v, at[j] + 16 * c);
      ra[c] = _mm512_fmadd_ps(a0, x, ra[c]);
      rb[c] = _mm512_fmadd_ps(b0, x, rb[c]);
    }
  }
  for (int c = 0; c < C; c++) {
    _mm512_store_ps(accA + 16 * c, _mm512_add_ps(ra[c], sa[c]));
    _mm512_store_ps(accB + 16 * c, _mm512_add_ps(rb[c], sb[c]));
  }
}

template <KvType T>
AVX512_FN inline void accumulatePair16(float* accA, float* accB, const float* pA, const float* pB, const void* v, const size_t* at, int n, int vecs16) {
  if (vecs16 == 4) return accumulatePair16<T, 4>(accA, accB, pA, pB, v, at, n);
  if (vecs16 == 3) return accumulatePair16<T, 3>(accA, accB, pA, pB, v, at, n);
  if (vecs16 == 2) return accumulatePair16<T, 2>(accA, accB, pA, pB, v, at, n);
  accumulatePair16<T, 1>(accA, accB, pA, pB, v, at, n);
}

// acc += sum_j p[j] * V[j] for one query vector of 16 * C columns (C = 1..4): the slice's C
// vectors in registers, two sets over alternate keys (eight multiply-add chains at 64 columns).
template <KvType T, int C>
AVX512_FN inline void accumulateOne16(float* acc, const float* p, const void* v, const size_t* at, int n) {
  __m512 r[C], s[C];
  for (int c = 0; c < C; c++) {
    r[c] = _mm512_load_ps(acc + 16 * c);
    s[c] = _mm512_setzero_ps();
  }
  int j = 0;
  for (; j + 2 <= n; j += 2) {
    const __m512 pa = _mm512_set1_ps(p[j]), pb = _mm512_set1_ps(p[j + 1]);
    for (int c = 0; c < C; c++) r[c] = _mm512_fmadd_ps(pa, load16<T>(v, at[j] + 16 * c), r[c]);
    for (int c = 0; c < C; c++) s[c] = _mm512_fmadd_ps(pb, load16<T>(v, at[j + 1] + 16 * c), s[c]);
  }
  if (j < n) {
    const __m512 pa = _mm512_set1_ps(p[j]);
    for (int c = 0; c < C; c++) r[c] = _mm512_fmadd_ps(pa, load16<T>(v, at[j] + 16 * c), r[c]);
  }
  for (int c = 0; c < C; c++) _mm512_store_ps(acc + 16 * c, _mm512_add_ps(r[c], s[c]));
}

template <KvType T>
AVX512_FN inline void accumulateOne16(float* acc, const float* p, const void* v, const size_t* at, int n, int vecs16) {
  if (vecs16 == 4) return accumulateOne16<T, 4>(acc, p, v, at, n);
  if (vecs16 == 3) return accumulateOne16<T, 3>(acc, p, v, at, n);
  if (vecs16 == 2) return accumulateOne16<T, 2>(acc, p, v, at, n);
  accumulateOne16<T, 1>(acc, p, v, at, n);
}

#define ATTEND_TARGET AVX512_FN
#define ATTEND_NAME attendAvx512
#define ATTEND_512 1
#include "attend-simd.inc"
#undef ATTEND_TARGET
#undef ATTEND_NAME
#undef ATTEND_DOT

#include "attend-prefill.inc"

#include "attend-hd8.inc"

#include "attend-bf16.inc"

#define ATTEND_TARGET BF16_FN
#define ATTEND_NAME attendDotWide
#define ATTEND_DOT 1
#include "attend-simd.inc"
#undef ATTEND_TARGET
#undef ATTEND_NAME
#undef ATTEND_512
#undef ATTEND_DOT
#endif

// The build attention runs: the best this CPU has, unless setAttentionSimd asked for less (the
// tests run every level against the same reference).
SimdLevel bestSimd() {
  static const SimdLevel best = [] {
    if (!cpu::avx2FmaF16c()) return kPortable;
    if (!cpu::avx512Core()) return kAvx2;
    return cpu::avx512Bf16() && cpu::avx512Vbmi() ? kAvx512Bf16 : kAvx512;
  }();
  return best;
}

SimdLevel simdLevel = bestSimd();

#ifdef ORTLLM_X86
// Whether a decode at head size 8 takes the four-heads-per-vector kernels (attend-hd8.inc,
// attend-bf16.inc): its items then hold KV heads in fours, in narrow batches as in wide ones.
// Groups of 4 and more stay one KV head per item (decodeHeads gives them no more).
bool quadDecodes(const Shape& s, int rows) {
  const int group = s.numHeads / s.numKvHeads;
  return simdLevel >= kAvx512 && rows == 1 && s.headDim == 8 && s.numKvHeads % 4 == 0 && group < 4;
}

// Whether a decode (`rows` 1) takes attendPrefill as a GQA group's tile: AVX-512, head sizes of
// multiples of 16.
inline bool gqaTileDecode(const Shape& s, int group, int rows) {
  return rows == 1 && group > 1 && simdLevel >= kAvx512 && s.headDim % 16 == 0;
}

// KV heads per decode item of a wide batch's GQA sequences (attendPrefillTile takes them block by
// block): as many as its scratch holds, one head's queries (hd / P rows of qt) and accumulators
// (nq4 x hd) each. Alone or in a narrow batch a decode's item holds one head; each head's sums are
// the same either way.
inline int gqaDecodeHeads(const Shape& s, int group) {
  if (group > 16) return 1;  // two query vectors (QV = 2): one head per item
  const int nq4 = (group + 3) & ~3;
  const int room = kMaxHeadDim * kMaxQueries;  // floats in PrefillScratch's qt and acc
  const int fit = std::min(room / (s.headDim / prefillLaneDims(group) * kMaxQueries), room / (nq4 * s.headDim));
  return std::max(1, std::min({s.numKvHeads, kMaxItemHeads, fit}));
}

// Whether decodes of this cache type and shape score with bfloat16 dot products (attendDotWide):
// AVX512-BF16, one query vector per KV head at head size 32 or 64, bfloat16 or E4M3 rows.
template <KvType T>
bool dotWideDecodes(const Shape& s) {
  return (T == kBF16 || T == kE4M3) && simdLevel == kAvx512Bf16 && s.numHeads == s.numKvHeads && (s.headDim == 32 || s.headDim == 64);
}

// Decode rows taken together (decodeRun chose them): the kernel each row's own decode item
// would run, which then sums each row in that item's order.
template <KvType T>
void attendDecodeRows(const Call& c, const Item& it) {
  if constexpr (T == kBF16 || T == kE4M3) {
    if (dotWideDecodes<T>(c.shape)) return attendDotWide<T>(c, it);
  }
  if (simdLevel >= kAvx512)
    attendAvx512<T>(c, it);
  else
    attendAvx2<T>(c, it);
}

template <KvType T>
void attendSimd(const Call& c, const Item& it) {
  // The window, soft-cap and sinks live in attend-prefill.inc and attend-simd.inc's kernels
  // (attendDotWide included); the others take plain items only.
  if (it.decodeRows) return attendDecodeRows<T>(c, it);
  if (simdLevel >= kAvx512 && prefillItem(c.shape, it)) return attendPrefill<T>(c, it);
  const bool plain = plainItem(c, it);
  const Shape& s = c.shape;
  const int group = s.numHeads / s.numKvHeads;
  // Decodes at head size 8 with KV heads in fours: four heads per float32 vector pair
  // (attend-hd8.inc), E4M3 rows on AVX512-BF16 four heads per bfloat16 vector (attend-bf16.inc:
  // its table lookup widens E4M3 in fewer operations; bfloat16 and E5M2 rows ran faster in the float32
  // kernel, docs/perf/attention.md).
  const bool quads = plain && quadDecodes(s, it.rows) && it.heads % 4 == 0;
  if constexpr (T == kBF16 || T == kE4M3 || T == kE5M2) {
    // AVX512-BF16 decodes: one query vector per KV head at head size 32 or 64 (attend-bf16.inc).
    if (simdLevel == kAvx512Bf16 && it.rows == 1) {
      if (dotWideDecodes<T>(s)) return attendDotWide<T>(c, it);
      if (T == kE4M3 && quads) return attendQuads<T>(c, it);
    }
  }
  if (quads) return attendQuads32<T>(c, it);
  // Prefill tiles at head size 8 of at least half a vector of query vectors: queries across lanes.
  if (plain && simdLevel >= kAvx512 && s.headDim == 8 && it.rows > 1 && it.heads == 1 && group * it.rows >= 8)
    return group * it.rows > 16 ? attendRows8<T, 2>(c, it) : attendRows8<T, 1>(c, it);
  if (plain && simdLevel == kAvx2 && attendHd8Avx2Item<T>(c, it)) return;  // head size 8 decodes without AVX-512 (attend-hd8-avx2.inc)
  if (simdLevel >= kAvx512)
    attendAvx512<T>(c, it);
  else
    attendAvx2<T>(c, it);
}
#endif

// KV heads per work item for the decodes of a large batch (rows query rows each, one for a
// decode): every head of the sequence, so whole cache rows are read in order, where few query
// vectors share a KV head; one where attendPrefill takes the decode (GQA groups on AVX-512: what
// sizes decodeSpan there; wide batches' items take gqaDecodeHeads heads).
int decodeHeads(const Shape& s, int group, int rows) {
#ifdef ORTLLM_X86
  if (gqaTileDecode(s, group, rows)) return 1;
#endif
  return group * rows < 4 ? std::min(s.numKvHeads, kMaxQueries / (group * rows)) : 1;
}

// KV heads per work item of a sequence's `rows`-row tiles. Head size 8 decodes on AVX-512 take
// them in fours whatever the batch (the quad kernels sum in another order than the one-head
// kernel, so a batch's width must not choose between them); wide batches in multiples of four.
int itemHeads(const Shape& s, int group, int rows, bool wide) {
#ifdef ORTLLM_X86
  if (quadDecodes(s, rows)) return wide ? std::max(4, decodeHeads(s, group, rows) & ~3) : 4;
  if (wide && gqaTileDecode(s, group, rows)) return gqaDecodeHeads(s, group);
#endif
  return wide ? decodeHeads(s, group, rows) : 1;
}

void attendItem(const Call& c, const Item& it) {
#ifdef ORTLLM_X86
  if (simdLevel >= kAvx2 && c.shape.headDim % 8 == 0) {
    switch (c.kvType) {
      case kF16: return attendSimd<kF16>(c, it);
      case kBF16: return attendSimd<kBF16>(c, it);
      case kE4M3: return attendSimd<kE4M3>(c, it);
      case kE5M2: return attendSimd<kE5M2>(c, it);
      default: return attendSimd<kF32>(c, it);
    }
  }
#endif
  for (int h = 0; h < it.heads; h++) {
    const Item one{it.seq, it.kvHead + h, it.row0, it.rows, 1};
    switch (c.kvType) {
      case kF16: attendGeneric(c, one, loadDecoded<uint16_t, halfToFloat>); break;
      case kBF16: attendGeneric(c, one, loadDecoded<uint16_t, bf16ToFloat>); break;
      case kE4M3: attendGeneric(c, one, loadDecoded<uint8_t, e4m3ToFloat>); break;
      case kE5M2: attendGeneric(c, one, loadDecoded<uint8_t, e5m2ToFloat>); break;
      default: attendGeneric(c, one, loadF32);
    }
  }
}

// How many entries from `s` on are the one-row entries of one sequence at consecutive rows and
// positions (a verification step's rows, attended one by one) that one item may take together:
// where each row's decode runs attend-simd.inc's item code with one query vector per KV head (no
// GQA group, head sizes the SIMD kernels take but 8) and every row's sliding window starts at key
// 0, so the item's spans are the decodes' spans. 1 where they may not.
int decodeRun(const Shape& s, int window, const int32_t* si, int first, int numSeqs) {
#ifdef ORTLLM_X86
  if (simdLevel < kAvx2 || s.numHeads != s.numKvHeads || s.headDim % 8 || s.headDim == 8) return 1;
  const int32_t* e = si + 4 * first;
  int run = 1;
  while (first + run < numSeqs && run < kMaxQueries) {
    const int32_t* n = si + 4 * (first + run);
    if (e[1] != 1 || n[1] != 1 || n[3] != e[3] || n[0] != e[0] + run || n[2] != e[2] + run) break;
    run++;
  }
  if (window > 0) run = std::max(1, std::min(run, window - e[2]));  // rows at positions below the window only
  return run;
#else
  (void)s, (void)window, (void)si, (void)first, (void)numSeqs;
  return 1;
#endif
}

}  // namespace

const char* pagedAttention(const AttentionCall& a) {
  Shape shape{a.dims[0], a.dims[1], a.dims[2], a.dims[3], a.scale};
  if (shape.numKvHeads <= 0 || shape.numHeads % shape.numKvHeads || shape.headDim <= 0 || shape.headDim > kMaxHeadDim || shape.blockSize <= 0)
    return "attention: bad dims";
  const int group = shape.numHeads / shape.numKvHeads;
  if (group > kMaxQueries) return "attention: more than 32 query heads per KV head";
  if (a.window < 0) return "attention: window must be >= 0";
  if (!std::isfinite(a.softcap) || a.softcap < 0) return "attention: softcap must be a finite number >= 0";
  if (a.sinks && a.sinksLength != (size_t)shape.numHeads) return "attention: sinks must hold one value per query head (numHeads)";
  const size_t qStride = (size_t)shape.numHeads * shape.headDim;
  const size_t kvStride = (size_t)shape.numKvHeads * shape.headDim;
  const size_t slots = a.kvLength / kvStride;
  if (a.qLength % qStride || a.outLength != a.qLength) return "attention: q/out sizes do not match numHeads * headDim rows";
  const size_t rowsTotal = a.qLength / qStride;
  const int numSeqs = (int)a.numSeqs;
  const int32_t* si = a.seqs;
  const int32_t* tb = a.tables;
  const int threads = parallelThreads();
  // Validate every index the kernel will touch, so a bad call fails instead of reading wild memory.
  std::vector<Item> items;
  const int tileRows = std::max(1, kMaxQueries / group);
  // Enough sequences to keep every thread busy. The rows of a sequence attended one by one
  // (speculative verification) are entries with one block table: they count once, so verifying
  // drafts does not change how the batch's decodes are split, nor the kernels they run.
  int distinctSeqs = 0;
  for (int s = 0; s < numSeqs; s++) distinctSeqs += s == 0 || si[4 * s + 3] != si[4 * (s - 1) + 3];
  const bool wide = distinctSeqs >= 4 * threads;
  for (int s = 0; s < numSeqs; s++) {
    const int first = si[4 * s], count = si[4 * s + 1], past = si[4 * s + 2], toff = si[4 * s + 3];
    if (first < 0 || count < 1 || past < 0 || (size_t)first + count > rowsTotal) return "attention: a sequence's rows are out of range";
    const int nblocks = (past + count + shape.blockSize - 1) / shape.blockSize;
    if (toff < 0 || (size_t)toff + nblocks > a.tablesLength) return "attention: a block table is out of range";
    for (int b = 0; b < nblocks; b++) {
      if (tb[toff + b] < 0 || (size_t)(tb[toff + b] + 1) * shape.blockSize > slots) return "attention: a block id is out of range";
    }
  }
  for (int s = 0; s < numSeqs;) {
    const int run = decodeRun(shape, a.window, si, s, numSeqs);
    if (run > 1) {
      for (int h = 0; h < shape.numKvHeads; h++) items.push_back({s, h, 0, run, 1, true});
      s += run;
      continue;
    }
    const int count = si[4 * s + 1];
    // Decodes of a large batch (few query vectors per KV head): one item takes every KV head of
    // the sequence, so it streams whole cache rows instead of a head's slice a row apart.
    const int rows = std::min(tileRows, count);
    const int heads = itemHeads(shape, group, rows, wide);
    for (int r = 0; r < count; r += tileRows)
      for (int h = 0; h < shape.numKvHeads; h += heads)
        items.push_back({s, h, r, std::min(tileRows, count - r), std::min(heads, shape.numKvHeads - h)});
    s++;
  }
  Call call{a.q, a.out, a.k, a.v, a.kvType, si, tb, shape, a.window, a.softcap, a.sinks};
  // Threads only pay off for enough work: estimate multiply-adds (a window bounds the keys per row).
  double work = 0;
  for (int s = 0; s < numSeqs; s++) {
    const int keys = si[4 * s + 2] + si[4 * s + 1];
    work += (double)si[4 * s + 1] * (a.window > 0 ? std::min(keys, a.window) : keys);
  }
  work *= shape.numHeads * shape.headDim * 2.0;
  std::function<void(int)> fn = [&](int i) { attendItem(call, items[i]); };
  // Helpers from 2e4 multiply-adds when the pool's helpers spin between calls (a batch-1 decode's
  // attention at context 128 halves on two threads), from 2e5 when each call pays a futex wake-up.
  const double helperFrom = poolSpins() ? 2e4 : 2e5;
  parallelFor((int)items.size(), fn, work > helperFrom);
  return nullptr;
}

SimdLevel attentionBestSimd() { return bestSimd(); }

SimdLevel attentionSimd() { return simdLevel; }

void setAttentionSimd(SimdLevel level) { simdLevel = std::min(level, bestSimd()); }

}  // namespace ortllm
