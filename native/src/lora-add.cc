// The adapters' low-rank products on the native backends (lora-delta.ts): per slot and linear,
// t = x_s Aᵀ [rows, rank], then y_s += t Bᵀ straight into the linear's output (no delta buffer),
// both spread over the pool (thread-pool.h). The first product splits by (block of rows, four
// ranks), the second by 64-column chunks of B that walk every row: each output is one thread's
// whole sum in a fixed order, so neither the split nor the batch changes a result. Builds:
// AVX-512 F/VL, AVX2 + FMA, portable, the best chosen at run time.
#include "lora-add.h"

#include "thread-pool.h"

#ifdef ORTLLM_CPU_X86
#include <immintrin.h>
#endif

#include <algorithm>
#include <vector>

namespace ortllm {
namespace {

struct LoraCall {
  const float* x;
  const int32_t* rows;
  int m;
  const float* a;
  const float* bp;  // B packed (lora-add.h)
  int in, out, rank;
  float* y;
  size_t yStride, yOffset;
  float* t;  // [m, rank]
};

constexpr int kLoraRanks = 4;  // ranks per first-product item

#define LORA_TARGET
#define LORA_NS portable
#define LORA_DOT_ROWS 1
#define LORA_ROWS 1
#define LoraVec float
#define LORA_W 1
#define LORA_ZERO 0.0f
#define LORA_LOAD(p) (*(p))
#define LORA_STORE(p, v) (*(p) = (v))
#define LORA_SET1(s) (s)
#define LORA_FMA(a, b, c) ((a) * (b) + (c))
#define LORA_ADD(a, b) ((a) + (b))
#define LORA_REDUCE(v) (v)
#include "lora-add-simd.inc"

#ifdef ORTLLM_CPU_X86
#define AVX2_FN __attribute__((target("avx2,fma")))
AVX2_FN inline float hsum256(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

#define LORA_TARGET AVX2_FN
#define LORA_NS avx2
#define LORA_DOT_ROWS 2
#define LORA_ROWS 1
#define LoraVec __m256
#define LORA_W 8
#define LORA_ZERO _mm256_setzero_ps()
#define LORA_LOAD(p) _mm256_loadu_ps(p)
#define LORA_STORE(p, v) _mm256_storeu_ps(p, v)
#define LORA_SET1(s) _mm256_set1_ps(s)
#define LORA_FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define LORA_ADD(a, b) _mm256_add_ps(a, b)
#define LORA_REDUCE(v) hsum256(v)
#include "lora-add-simd.inc"

#define LORA_TARGET __attribute__((target("avx512f,avx512vl")))
#define LORA_NS avx512
#define LORA_DOT_ROWS 4
#define LORA_ROWS 4
#define LoraVec __m512
#define LORA_W 16
#define LORA_ZERO _mm512_setzero_ps()
#define LORA_LOAD(p) _mm512_loadu_ps(p)
#define LORA_STORE(p, v) _mm512_storeu_ps(p, v)
#define LORA_SET1(s) _mm512_set1_ps(s)
#define LORA_FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define LORA_ADD(a, b) _mm512_add_ps(a, b)
#define LORA_REDUCE(v) _mm512_reduce_add_ps(v)
#include "lora-add-simd.inc"
#endif

// Helpers from this many multiply-adds (m * rank * (in + out)): below it (a decode row or two)
// the pool's hand-off costs more than the products.
constexpr double kHelpersFrom = 5e4;

// Runs items [0, n) as up to parallelThreads() contiguous ranges.
template <class F>
void spread(int n, bool helpers, F&& range) {
  const int tasks = helpers ? std::min(n, parallelThreads()) : 1;
  if (tasks <= 1) return range(0, n);
  parallelFor(tasks, [&](int task) { range((int)((long)n * task / tasks), (int)((long)n * (task + 1) / tasks)); });
}

template <int DotRows, void (*First)(const LoraCall&, int, int), void (*Second)(const LoraCall&, int, int)>
void run(const LoraCall& c) {
  const int blocks = (c.m + DotRows - 1) / DotRows;
  const bool helpers = (double)c.m * c.rank * (c.in + c.out) >= kHelpersFrom;
  spread(blocks * ((c.rank + kLoraRanks - 1) / kLoraRanks), helpers, [&](int b, int e) { First(c, b, e); });
  spread((c.out + kLoraCols - 1) / kLoraCols, helpers, [&](int b, int e) { Second(c, b, e); });
}

}  // namespace

cpu::SimdLevel loraBestSimd() {
#ifdef ORTLLM_CPU_X86
  if (cpu::avx512FVl()) return cpu::kAvx512;
  if (cpu::avx2Fma()) return cpu::kAvx2;
#endif
  return cpu::kPortable;
}

void loraAdd(cpu::SimdLevel level, const float* x, const int32_t* rows, int m, const float* a, const float* bp, int in, int out,
             int rank, float* y, size_t yStride, size_t yOffset) {
  // Scratch kept per thread: a pass calls this ~7 times a layer, per adapter.
  thread_local std::vector<float> t;
  t.resize((size_t)m * rank);
  const LoraCall c{x, rows, m, a, bp, in, out, rank, y, yStride, yOffset, t.data()};
  level = std::min(level, loraBestSimd());
#ifdef ORTLLM_CPU_X86
  if (level >= cpu::kAvx512) return run<avx512::kDotRows, avx512::firstProduct, avx512::secondProduct>(c);
  if (level == cpu::kAvx2) return run<avx2::kDotRows, avx2::firstProduct, avx2::secondProduct>(c);
#endif
  run<portable::kDotRows, portable::firstProduct, portable::secondProduct>(c);
}

}  // namespace ortllm
