// Paged causal attention over the runner's KV cache, read in place (no gather, no concat).
//
// Why native: onnxruntime-node can neither keep a tensor between runs nor alias an output to an
// input, so an ONNX graph reads the past only after gathering it into a fresh tensor (and
// attention ops concat again): at long contexts those copies dominate a decode step. This kernel
// reads each sequence's K/V rows straight from the cache blocks the block table names.
//
// Layout (the same as the runner's PagedKvCache): per layer one K and one V array of
// [numBlocks * blockSize, kvHeads * headDim] rows, float32 or IEEE half (Uint16Array). Queries
// and outputs are the packed rows of a step: [numTokens, heads * headDim]; sequence s owns rows
// [first, first + count) at positions past .. past + count - 1 and attends to positions 0..its own.
//
// Each work item is (sequence, KV head, tile of query rows): the query heads sharing that KV
// head (GQA group) and the tile's rows all consume each K/V row once it is loaded (flash-style
// online softmax, fp32 accumulation). Items are spread over a small pool of threads that sleep
// between calls.

#include <node_api.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define ORTLLM_X86 1
#endif

namespace {

struct Shape {
  int numHeads;
  int numKvHeads;
  int headDim;
  int blockSize;
  float scale;
};

// What the cache arrays hold: float32, IEEE half, or bfloat16 (the upper half of a float32).
enum KvType { kF32 = 0, kF16 = 1, kBF16 = 2 };

struct Call {
  const float* q;
  float* out;
  const void* k;
  const void* v;
  KvType kvType;
  const int32_t* seqs;  // per sequence: first row, row count, past length, offset into tables
  const int32_t* tables;
  Shape shape;
};

struct Item {
  int seq;
  int kvHead;
  int row0;
  int rows;
};

constexpr int kMaxQueries = 32;  // query vectors (group heads x tile rows) per work item
constexpr int kMaxHeadDim = 256;
constexpr int kKeyChunk = 16;    // keys scored together before the softmax update

// ---------------------------------------------------------------- half <-> float (portable)
inline float halfToFloat(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t man = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {
      int e = -1;
      do {
        e++;
        man <<= 1;
      } while ((man & 0x400) == 0);
      bits = sign | ((uint32_t)(127 - 15 - e) << 23) | ((man & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000 | (man << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t floatToHalf(float f) {  // round to nearest even
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = (int32_t)((x >> 23) & 0xff) - 127 + 15;
  uint32_t man = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return (uint16_t)(sign | 0x7c00 | (man ? 0x200 : 0));
  if (exp >= 31) return (uint16_t)(sign | 0x7c00);
  if (exp <= 0) {
    if (exp < -10) return (uint16_t)sign;
    man |= 0x800000;
    uint32_t shift = (uint32_t)(14 - exp);
    uint32_t half = man >> shift;
    uint32_t rem = man & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) half++;
    return (uint16_t)(sign | half);
  }
  uint32_t half = sign | ((uint32_t)exp << 10) | (man >> 13);
  uint32_t rem = man & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) half++;
  return (uint16_t)half;
}

// ---------------------------------------------------------------- generic kernel
// Each query vector of a work item: its row in q, the last key it may see (causal), and the
// online-softmax state (running max, sum, accumulator) reset.
inline void startQueries(const Call& c, const Item& it, int group, int past, const float** qp, int* limit, float* m,
                         float* l, float (*acc)[kMaxHeadDim]) {
  const Shape& s = c.shape;
  const int hd = s.headDim;
  const size_t qStride = (size_t)s.numHeads * hd;
  const int first = c.seqs[4 * it.seq];
  for (int i = 0; i < group * it.rows; i++) {
    int r = it.row0 + i / group, g = i % group;
    qp[i] = c.q + (size_t)(first + r) * qStride + (size_t)(it.kvHead * group + g) * hd;
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
  for (int j0 = 0; j0 < keys; j0 += kKeyChunk) {
    const int n = keys - j0 < kKeyChunk ? keys - j0 : kKeyChunk;
    for (int jj = 0; jj < n; jj++) {
      int pos = j0 + jj;
      size_t row = (size_t)table[pos / s.blockSize] * s.blockSize + pos % s.blockSize;
      load(c.k, row * kvStride + (size_t)it.kvHead * hd, hd, kv);
      for (int i = 0; i < nq; i++) {
        float dot = 0;
        for (int d = 0; d < hd; d++) dot += qp[i][d] * kv[d];
        score[i][jj] = pos <= limit[i] ? dot * s.scale : -INFINITY;
      }
    }
    for (int i = 0; i < nq; i++) {
      float mx = m[i];
      for (int jj = 0; jj < n; jj++) mx = score[i][jj] > mx ? score[i][jj] : mx;
      if (mx == -INFINITY) continue;
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
    float inv = l[i] > 0 ? 1.0f / l[i] : 0.0f;
    for (int d = 0; d < hd; d++) o[d] = acc[i][d] * inv;
  }
}

inline float bf16ToFloat(uint16_t h) {
  uint32_t bits = (uint32_t)h << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t floatToBf16(float f) {  // round to nearest even; NaN stays NaN
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffff) > 0x7f800000) return (uint16_t)((x >> 16) | 0x40);
  return (uint16_t)((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

void loadF32(const void* base, size_t at, int n, float* dst) { std::memcpy(dst, (const float*)base + at, n * sizeof(float)); }
void loadF16(const void* base, size_t at, int n, float* dst) {
  const uint16_t* p = (const uint16_t*)base + at;
  for (int i = 0; i < n; i++) dst[i] = halfToFloat(p[i]);
}
void loadBF16(const void* base, size_t at, int n, float* dst) {
  const uint16_t* p = (const uint16_t*)base + at;
  for (int i = 0; i < n; i++) dst[i] = bf16ToFloat(p[i]);
}

#ifdef ORTLLM_X86
// ---------------------------------------------------------------- AVX2 + FMA + F16C kernel
#define AVX2_FN __attribute__((target("avx2,fma,f16c")))

AVX2_FN inline __m256 exp256(__m256 x) {
  // exp(x) = 2^n * p(r), x = n ln2 + r, |r| <= ln2/2; degree-6 polynomial (rel. err ~2e-7).
  const __m256 lo = _mm256_set1_ps(-87.3f);
  __m256 underflow = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  x = _mm256_max_ps(x, lo);
  x = _mm256_min_ps(x, _mm256_set1_ps(88.3f));
  __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), _mm256_add_ps(r, _mm256_set1_ps(1.0f)));
  __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  __m256 y = _mm256_mul_ps(p, _mm256_castsi256_ps(e));
  return _mm256_andnot_ps(underflow, y);
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

template <KvType T>
AVX2_FN inline void rowsToFloat(const uint16_t* src, size_t stride, int rows, int hd, float* dst) {
  for (int r = 0; r < rows; r++)
    for (int d = 0; d < hd; d += 8) {
      __m128i raw = _mm_loadu_si128((const __m128i*)(src + r * stride + d));
      __m256 f = T == kF16 ? _mm256_cvtph_ps(raw) : _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
      _mm256_store_ps(dst + r * hd + d, f);
    }
}

// Scores of IB query vectors against a chunk of 16 keys stored transposed (kt[d * 16 + key]):
// broadcast one query element, two key vectors, 2 * IB multiply-adds per step, no reductions.
template <int IB>
AVX2_FN inline void scoresTransposed(const float* const* qp, const float* kt, int hd, float scale, float (*score)[kKeyChunk]) {
  __m256 a0[IB], a1[IB];
  for (int b = 0; b < IB; b++) a0[b] = a1[b] = _mm256_setzero_ps();
  for (int d = 0; d < hd; d++) {
    const __m256 k0 = _mm256_load_ps(kt + d * kKeyChunk), k1 = _mm256_load_ps(kt + d * kKeyChunk + 8);
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

// acc[b] += sum_j p[b][j] * V[j] for IB query vectors over W (1 or 2) eight-float columns at v0.
template <int IB, int W>
AVX2_FN inline void accumulateValues(float (*acc)[kMaxHeadDim], const float (*p)[kKeyChunk], const float* vRows, size_t stride, int n, int v0) {
  __m256 r[IB][W];
  for (int b = 0; b < IB; b++)
    for (int w = 0; w < W; w++) r[b][w] = _mm256_load_ps(acc[b] + 8 * (v0 + w));
  for (int j = 0; j < n; j++) {
    __m256 v[W];
    for (int w = 0; w < W; w++) v[w] = _mm256_loadu_ps(vRows + (size_t)j * stride + 8 * (v0 + w));
    for (int b = 0; b < IB; b++) {
      const __m256 pb = _mm256_broadcast_ss(p[b] + j);
      for (int w = 0; w < W; w++) r[b][w] = _mm256_fmadd_ps(pb, v[w], r[b][w]);
    }
  }
  for (int b = 0; b < IB; b++)
    for (int w = 0; w < W; w++) _mm256_store_ps(acc[b] + 8 * (v0 + w), r[b][w]);
}

template <int IB>
AVX2_FN inline void accumulateBlock(float (*acc)[kMaxHeadDim], const float (*p)[kKeyChunk], const float* vRows, size_t stride, int n, int vecs) {
  int v0 = 0;
  for (; v0 + 2 <= vecs; v0 += 2) accumulateValues<IB, 2>(acc, p, vRows, stride, n, v0);
  if (v0 < vecs) accumulateValues<IB, 1>(acc, p, vRows, stride, n, v0);
}

template <KvType T>
AVX2_FN void attendAvx2(const Call& c, const Item& it) {
  const Shape& s = c.shape;
  const int hd = s.headDim;
  const int vecs = hd / 8;
  const int group = s.numHeads / s.numKvHeads;
  const size_t kvStride = (size_t)s.numKvHeads * hd;
  const int qStride = s.numHeads * hd;
  const int32_t* info = c.seqs + 4 * it.seq;
  const int first = info[0], past = info[2];
  const int32_t* table = c.tables + info[3];
  const int nq = group * it.rows;
  alignas(32) float m[kMaxQueries], l[kMaxQueries];
  alignas(32) float acc[kMaxQueries][kMaxHeadDim];
  alignas(32) float score[kMaxQueries][kKeyChunk];
  constexpr bool Half = T != kF32;
  alignas(32) float kbuf[Half ? kKeyChunk * kMaxHeadDim : 1], vbuf[Half ? kKeyChunk * kMaxHeadDim : 1];
  alignas(32) float kt[kMaxHeadDim * kKeyChunk];
  const float* qp[kMaxQueries];
  int limit[kMaxQueries];
  startQueries(c, it, group, past, qp, limit, m, l, acc);
  const int keys = past + it.row0 + it.rows;
  for (int j0 = 0; j0 < keys;) {
    // A chunk of keys inside one block: their cache rows are consecutive.
    const int inBlock = j0 % s.blockSize;
    int n = std::min(std::min(kKeyChunk, s.blockSize - inBlock), keys - j0);
    const size_t at = ((size_t)table[j0 / s.blockSize] * s.blockSize + inBlock) * kvStride + (size_t)it.kvHead * hd;
    const float* kRows;
    const float* vRows;
    size_t rowStride;
    if constexpr (Half) {
      rowsToFloat<T>((const uint16_t*)c.k + at, kvStride, n, hd, kbuf);
      rowsToFloat<T>((const uint16_t*)c.v + at, kvStride, n, hd, vbuf);
      kRows = kbuf;
      vRows = vbuf;
      rowStride = hd;
    } else {
      kRows = (const float*)c.k + at;
      vRows = (const float*)c.v + at;
      rowStride = kvStride;
    }
    // Scores. Many query vectors (prefill tiles, wide GQA groups): transpose the chunk's keys once
    // and run the broadcast micro-kernel four queries at a time. The rest: eight keys per dot
    // product pass with one reduction (each K row is read once per query vector).
    int i = 0;
    if (nq >= 4) {
      for (int d = 0; d < hd; d++) {
        for (int jj = 0; jj < n; jj++) kt[d * kKeyChunk + jj] = kRows[(size_t)jj * rowStride + d];
        for (int jj = n; jj < kKeyChunk; jj++) kt[d * kKeyChunk + jj] = 0;
      }
      for (; i + 4 <= nq; i += 4) scoresTransposed<4>(qp + i, kt, hd, s.scale, score + i);
    }
    for (; i < nq; i++) {
      for (int jj = 0; jj < n; jj += 8) {
        const float* kr[8];
        for (int t = 0; t < 8; t++) kr[t] = kRows + (size_t)std::min(jj + t, n - 1) * rowStride;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        for (int v = 0; v < vecs; v++) {
          __m256 qv = _mm256_loadu_ps(qp[i] + 8 * v);
          a0 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[0] + 8 * v), a0);
          a1 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[1] + 8 * v), a1);
          a2 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[2] + 8 * v), a2);
          a3 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[3] + 8 * v), a3);
          a4 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[4] + 8 * v), a4);
          a5 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[5] + 8 * v), a5);
          a6 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[6] + 8 * v), a6);
          a7 = _mm256_fmadd_ps(qv, _mm256_loadu_ps(kr[7] + 8 * v), a7);
        }
        _mm256_store_ps(score[i] + jj, _mm256_mul_ps(reduce8(a0, a1, a2, a3, a4, a5, a6, a7), _mm256_set1_ps(s.scale)));
      }
    }
    // Online softmax update per query vector; masked keys (future or past n) get weight 0.
    const int padded = (n + 7) & ~7;
    for (int i = 0; i < nq; i++) {
      float* sc = score[i];
      const int valid = std::min(n, limit[i] - j0 + 1);
      for (int jj = std::max(valid, 0); jj < padded; jj++) sc[jj] = -INFINITY;
      if (valid <= 0) {
        for (int jj = 0; jj < padded; jj++) sc[jj] = 0;
        continue;
      }
      float mx = m[i];
      for (int jj = 0; jj < valid; jj++) mx = sc[jj] > mx ? sc[jj] : mx;
      const float corr = m[i] == -INFINITY ? 0.0f : std::exp(m[i] - mx);
      m[i] = mx;
      __m256 mv = _mm256_set1_ps(mx), sum = _mm256_setzero_ps();
      for (int jj = 0; jj < padded; jj += 8) {
        __m256 p = exp256(_mm256_sub_ps(_mm256_load_ps(sc + jj), mv));
        _mm256_store_ps(sc + jj, p);
        sum = _mm256_add_ps(sum, p);
      }
      l[i] = l[i] * corr + hsum256(sum);
      if (corr != 1.0f) {
        __m256 cv = _mm256_set1_ps(corr);
        for (int v = 0; v < vecs; v++) _mm256_store_ps(acc[i] + 8 * v, _mm256_mul_ps(_mm256_load_ps(acc[i] + 8 * v), cv));
      }
    }
    // Values: four query vectors x two eight-float columns of accumulators held in registers.
    int b = 0;
    for (; b + 4 <= nq; b += 4) accumulateBlock<4>(acc + b, score + b, vRows, rowStride, n, vecs);
    for (; b < nq; b++) accumulateBlock<1>(acc + b, score + b, vRows, rowStride, n, vecs);
    j0 += n;
  }
  for (int i = 0; i < nq; i++) {
    int r = it.row0 + i / group, g = i % group;
    float* o = c.out + (size_t)(first + r) * qStride + (size_t)(it.kvHead * group + g) * hd;
    __m256 inv = _mm256_set1_ps(l[i] > 0 ? 1.0f / l[i] : 0.0f);
    for (int v = 0; v < vecs; v++) _mm256_storeu_ps(o + 8 * v, _mm256_mul_ps(_mm256_load_ps(acc[i] + 8 * v), inv));
  }
}
#endif

bool useAvx2() {
#ifdef ORTLLM_X86
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
  return ok;
#else
  return false;
#endif
}

void attendItem(const Call& c, const Item& it) {
#ifdef ORTLLM_X86
  if (useAvx2() && c.shape.headDim % 8 == 0) {
    if (c.kvType == kF16)
      attendAvx2<kF16>(c, it);
    else if (c.kvType == kBF16)
      attendAvx2<kBF16>(c, it);
    else
      attendAvx2<kF32>(c, it);
    return;
  }
#endif
  if (c.kvType == kF16)
    attendGeneric(c, it, loadF16);
  else if (c.kvType == kBF16)
    attendGeneric(c, it, loadBF16);
  else
    attendGeneric(c, it, loadF32);
}

// ---------------------------------------------------------------- a small thread pool
class Pool {
 public:
  ~Pool() { resize(0); }

  void resize(int helpers) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      stop_ = true;
      cv_.notify_all();
    }
    for (auto& t : threads_) t.join();
    threads_.clear();
    stop_ = false;
    for (int i = 0; i < helpers; i++) threads_.emplace_back([this] { loop(); });
  }

  int helpers() const { return (int)threads_.size(); }

  // Runs fn(i) for i in [0, n), on the caller and the helpers; returns when all are done.
  void run(int n, const std::function<void(int)>& fn, int maxHelpers) {
    int use = std::min(maxHelpers, helpers());
    if (use <= 0 || n <= 1) {
      for (int i = 0; i < n; i++) fn(i);
      return;
    }
    {
      std::unique_lock<std::mutex> lock(mu_);
      fn_ = &fn;
      next_.store(0);
      total_ = n;
      active_ = use;
      generation_++;
      wanted_ = use;
      cv_.notify_all();
    }
    drain();
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return active_ == 0; });
    fn_ = nullptr;
  }

 private:
  void drain() {
    for (int i = next_.fetch_add(1); i < total_; i = next_.fetch_add(1)) (*fn_)(i);
  }

  void loop() {
    uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || (generation_ != seen && wanted_ > 0); });
        if (stop_) return;
        seen = generation_;
        wanted_--;
      }
      drain();
      std::unique_lock<std::mutex> lock(mu_);
      if (--active_ == 0) done_.notify_one();
    }
  }

  std::vector<std::thread> threads_;
  std::mutex mu_;
  std::condition_variable cv_, done_;
  const std::function<void(int)>* fn_ = nullptr;
  std::atomic<int> next_{0};
  int total_ = 0;
  int active_ = 0;
  int wanted_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

Pool pool;
int threads = 1;

// ---------------------------------------------------------------- N-API glue
struct Typed {
  void* data = nullptr;
  size_t length = 0;
  napi_typedarray_type type = napi_int8_array;
};

bool typed(napi_env env, napi_value v, Typed* out) {
  bool is = false;
  if (napi_is_typedarray(env, v, &is) != napi_ok || !is) return false;
  napi_value buffer;
  size_t offset;
  return napi_get_typedarray_info(env, v, &out->type, &out->length, &out->data, &buffer, &offset) == napi_ok;
}

napi_value fail(napi_env env, const char* message) {
  napi_throw_type_error(env, nullptr, message);
  return nullptr;
}

// The cache's element type: a Float32Array holds float32; a Uint16Array holds half or bfloat16 as `code` says.
bool kvTypeOf(const Typed& t, int32_t code, KvType* out) {
  if (t.type == napi_float32_array && code == kF32) *out = kF32;
  else if (t.type == napi_uint16_array && (code == kF16 || code == kBF16)) *out = (KvType)code;
  else return false;
  return true;
}

// attention(q, out, kCache, vCache, seqs, tables, dims[numHeads, numKvHeads, headDim, blockSize, kvType], scale)
napi_value Attention(napi_env env, napi_callback_info info) {
  size_t argc = 8;
  napi_value argv[8];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 8) return fail(env, "attention: expected 8 arguments");
  Typed q, out, k, v, seqs, tables, dims;
  if (!typed(env, argv[0], &q) || q.type != napi_float32_array) return fail(env, "attention: q must be a Float32Array");
  if (!typed(env, argv[1], &out) || out.type != napi_float32_array) return fail(env, "attention: out must be a Float32Array");
  if (!typed(env, argv[2], &k)) return fail(env, "attention: kCache must be a Float32Array or Uint16Array");
  if (!typed(env, argv[3], &v) || v.type != k.type || v.length != k.length) return fail(env, "attention: vCache must match kCache");
  if (!typed(env, argv[4], &seqs) || seqs.type != napi_int32_array || seqs.length % 4) return fail(env, "attention: seqs must be an Int32Array of 4 per sequence");
  if (!typed(env, argv[5], &tables) || tables.type != napi_int32_array) return fail(env, "attention: tables must be an Int32Array");
  if (!typed(env, argv[6], &dims) || dims.type != napi_int32_array || dims.length != 5)
    return fail(env, "attention: dims must be Int32Array [numHeads, numKvHeads, headDim, blockSize, kvType]");
  KvType kvType;
  if (!kvTypeOf(k, ((const int32_t*)dims.data)[4], &kvType)) return fail(env, "attention: kvType does not match the cache arrays");
  double scale;
  if (napi_get_value_double(env, argv[7], &scale) != napi_ok) return fail(env, "attention: scale must be a number");
  const int32_t* d = (const int32_t*)dims.data;
  Shape shape{d[0], d[1], d[2], d[3], (float)scale};
  if (shape.numKvHeads <= 0 || shape.numHeads % shape.numKvHeads || shape.headDim <= 0 || shape.headDim > kMaxHeadDim || shape.blockSize <= 0)
    return fail(env, "attention: bad dims");
  const int group = shape.numHeads / shape.numKvHeads;
  if (group > kMaxQueries) return fail(env, "attention: more than 32 query heads per KV head");
  const size_t qStride = (size_t)shape.numHeads * shape.headDim;
  const size_t kvStride = (size_t)shape.numKvHeads * shape.headDim;
  const size_t slots = k.length / kvStride;
  if (q.length % qStride || out.length != q.length) return fail(env, "attention: q/out sizes do not match numHeads * headDim rows");
  const size_t rowsTotal = q.length / qStride;
  const int numSeqs = (int)(seqs.length / 4);
  const int32_t* si = (const int32_t*)seqs.data;
  const int32_t* tb = (const int32_t*)tables.data;
  // Validate every index the kernel will touch, so a bad call throws instead of reading wild memory.
  std::vector<Item> items;
  const int tileRows = std::max(1, kMaxQueries / group);
  for (int s = 0; s < numSeqs; s++) {
    const int first = si[4 * s], count = si[4 * s + 1], past = si[4 * s + 2], toff = si[4 * s + 3];
    if (first < 0 || count < 1 || past < 0 || (size_t)first + count > rowsTotal) return fail(env, "attention: a sequence's rows are out of range");
    const int nblocks = (past + count + shape.blockSize - 1) / shape.blockSize;
    if (toff < 0 || (size_t)toff + nblocks > tables.length) return fail(env, "attention: a block table is out of range");
    for (int b = 0; b < nblocks; b++) {
      if (tb[toff + b] < 0 || (size_t)(tb[toff + b] + 1) * shape.blockSize > slots) return fail(env, "attention: a block id is out of range");
    }
    for (int r = 0; r < count; r += tileRows)
      for (int h = 0; h < shape.numKvHeads; h++) items.push_back({s, h, r, std::min(tileRows, count - r)});
  }
  Call call{(const float*)q.data, (float*)out.data, k.data, v.data, kvType, si, tb, shape};
  // Threads only pay off for enough work: estimate multiply-adds.
  double work = 0;
  for (int s = 0; s < numSeqs; s++) work += (double)si[4 * s + 1] * (si[4 * s + 2] + si[4 * s + 1]);
  work *= shape.numHeads * shape.headDim * 2.0;
  std::function<void(int)> fn = [&](int i) { attendItem(call, items[i]); };
  pool.run((int)items.size(), fn, work > 2e5 ? threads - 1 : 0);
  return nullptr;
}

// writeKv(newK, newV, kCache, vCache, slots, kvType): rows of [n, kvDim] into cache rows slots[i].
napi_value WriteKv(napi_env env, napi_callback_info info) {
  size_t argc = 6;
  napi_value argv[6];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc != 6) return fail(env, "writeKv: expected 6 arguments");
  Typed nk, nv, k, v, slots;
  int32_t code = 0;
  if (!typed(env, argv[0], &nk) || nk.type != napi_float32_array) return fail(env, "writeKv: newK must be a Float32Array");
  if (!typed(env, argv[1], &nv) || nv.type != napi_float32_array || nv.length != nk.length) return fail(env, "writeKv: newV must match newK");
  if (!typed(env, argv[2], &k)) return fail(env, "writeKv: kCache must be a Float32Array or Uint16Array");
  if (!typed(env, argv[3], &v) || v.type != k.type || v.length != k.length) return fail(env, "writeKv: vCache must match kCache");
  KvType kvType;
  if (napi_get_value_int32(env, argv[5], &code) != napi_ok || !kvTypeOf(k, code, &kvType)) return fail(env, "writeKv: kvType does not match the cache arrays");
  if (!typed(env, argv[4], &slots) || slots.type != napi_int32_array || slots.length == 0 || nk.length % slots.length)
    return fail(env, "writeKv: slots must be an Int32Array, one per new row");
  const size_t n = slots.length, row = nk.length / n, numSlots = k.length / row;
  const int32_t* sl = (const int32_t*)slots.data;
  for (size_t i = 0; i < n; i++)
    if (sl[i] < 0 || (size_t)sl[i] >= numSlots) return fail(env, "writeKv: a slot is out of range");
  const float* a = (const float*)nk.data;
  const float* b = (const float*)nv.data;
  if (kvType == kF32) {
    for (size_t i = 0; i < n; i++) {
      std::memcpy((float*)k.data + (size_t)sl[i] * row, a + i * row, row * 4);
      std::memcpy((float*)v.data + (size_t)sl[i] * row, b + i * row, row * 4);
    }
  } else {
    uint16_t (*narrow)(float) = kvType == kF16 ? floatToHalf : floatToBf16;
    for (size_t i = 0; i < n; i++) {
      uint16_t* kd = (uint16_t*)k.data + (size_t)sl[i] * row;
      uint16_t* vd = (uint16_t*)v.data + (size_t)sl[i] * row;
      for (size_t j = 0; j < row; j++) {
        kd[j] = narrow(a[i * row + j]);
        vd[j] = narrow(b[i * row + j]);
      }
    }
  }
  return nullptr;
}

// setThreads(n): threads used for attention (the caller plus n - 1 helpers).
napi_value SetThreads(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  int32_t n = 1;
  if (argc != 1 || napi_get_value_int32(env, argv[0], &n) != napi_ok || n < 1 || n > 256) return fail(env, "setThreads: n must be an integer in 1..256");
  threads = n;
  if (pool.helpers() != n - 1) pool.resize(n - 1);
  return nullptr;
}

napi_value Init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"attention", nullptr, Attention, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"writeKv", nullptr, WriteKv, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"setThreads", nullptr, SetThreads, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
  napi_value simd;
  napi_get_boolean(env, useAvx2(), &simd);
  napi_set_named_property(env, exports, "simd", simd);
  return exports;
}

}  // namespace

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
