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

// Items [b, e) of the slots' items laid end to end (slot s owns [ends[s - 1], ends[s])), each
// slot's part given to `part` in its own numbering.
template <class F>
void slotParts(const int* ends, int n, int b, int e, F&& part) {
  for (int s = 0, start = 0; s < n && start < e; start = ends[s++])
    if (ends[s] > b) part(s, std::max(b, start) - start, std::min(e, ends[s]) - start);
}

template <int DotRows, void (*First)(const LoraCall&, int, int), void (*Second)(const LoraCall&, int, int)>
void run(const LoraCall* calls, int n) {
  thread_local std::vector<int> firstEnds, secondEnds;
  firstEnds.resize(n);
  secondEnds.resize(n);
  double work = 0;
  for (int s = 0, first = 0, second = 0; s < n; s++) {
    const LoraCall& c = calls[s];
    first += (c.m + DotRows - 1) / DotRows * ((c.rank + kLoraRanks - 1) / kLoraRanks);
    second += (c.out + kLoraCols - 1) / kLoraCols;
    firstEnds[s] = first;
    secondEnds[s] = second;
    work += (double)c.m * c.rank * (c.in + c.out);
  }
  const bool helpers = work >= kHelpersFrom;
  const int* fe = firstEnds.data();
  const int* se = secondEnds.data();
  spread(fe[n - 1], helpers, [&](int b, int e) { slotParts(fe, n, b, e, [&](int s, int sb, int sEnd) { First(calls[s], sb, sEnd); }); });
  spread(se[n - 1], helpers, [&](int b, int e) { slotParts(se, n, b, e, [&](int s, int sb, int sEnd) { Second(calls[s], sb, sEnd); }); });
}

}  // namespace

cpu::SimdLevel loraBestSimd() {
#ifdef ORTLLM_CPU_X86
  if (cpu::avx512FVl()) return cpu::kAvx512;
  if (cpu::avx2Fma()) return cpu::kAvx2;
#endif
  return cpu::kPortable;
}

void loraAddSlots(cpu::SimdLevel level, const float* x, const LoraSlot* slots, int n, int in, int out, float* y, size_t yStride,
                  size_t yOffset) {
  if (n <= 0) return;
  // Scratch kept per thread: a pass calls this ~7 times a layer.
  thread_local std::vector<float> t;
  thread_local std::vector<LoraCall> calls;
  size_t total = 0;
  for (int s = 0; s < n; s++) total += (size_t)slots[s].m * slots[s].rank;
  t.resize(total);
  calls.clear();
  for (int s = 0, at = 0; s < n; at += slots[s].m * slots[s].rank, s++)
    calls.push_back({x, slots[s].rows, slots[s].m, slots[s].a, slots[s].bp, in, out, slots[s].rank, y, yStride, yOffset, t.data() + at});
  level = std::min(level, loraBestSimd());
#ifdef ORTLLM_CPU_X86
  if (level >= cpu::kAvx512) return run<avx512::kDotRows, avx512::firstProduct, avx512::secondProduct>(calls.data(), n);
  if (level == cpu::kAvx2) return run<avx2::kDotRows, avx2::firstProduct, avx2::secondProduct>(calls.data(), n);
#endif
  run<portable::kDotRows, portable::firstProduct, portable::secondProduct>(calls.data(), n);
}

void loraAdd(cpu::SimdLevel level, const float* x, const int32_t* rows, int m, const float* a, const float* bp, int in, int out,
             int rank, float* y, size_t yStride, size_t yOffset) {
  const LoraSlot slot{rows, m, a, bp, rank};
  loraAddSlots(level, x, &slot, 1, in, out, y, yStride, yOffset);
}

}  // namespace ortllm
