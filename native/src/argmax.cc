// argmax(values, offset, count): the index (from offset) of the largest of values[offset ..
// offset + count), the first one on ties, NaN never chosen unless it is the first value — the
// engine's greedy sampler's JS loop (src/engine/sampling/argmax.ts), exactly, in AVX2.
//
// Why native: a greedy decode step samples one row of vocabSize logits per sequence, and V8's
// loop reads ~1 float per ns: at vocab 32000 and 32 sequences that is ~0.9 ms of the engine
// thread per step (ORT's ArgMax op measured the same, 1.05 ms for [32, 32000]). Two passes here:
// the row's maximum eight lanes at a time, then the first index holding it.
#include "argmax.h"
#include "cpu-features.h"

#include <cmath>
#include <cstdint>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define ORTLLM_ARGMAX_X86 1
#endif

namespace ortllm {

namespace {

// The scalar loop (the reference: the JS one).
int32_t argmaxScalar(const float* v, int32_t n) {
  int32_t best = 0;
  float bestValue = v[0];
  for (int32_t i = 1; i < n; i++)
    if (v[i] > bestValue) bestValue = v[i], best = i;
  return best;
}

#ifdef ORTLLM_ARGMAX_X86
__attribute__((target("avx2"))) int32_t argmaxAvx2(const float* v, int32_t n) {
  if (std::isnan(v[0]) || n < 16) return argmaxScalar(v, n);
  // max_ps(x, m) returns m when x is NaN, so NaNs never enter the running maxima (m starts at v[0]).
  __m256 m0 = _mm256_set1_ps(v[0]), m1 = m0;
  int32_t i = 0;
  for (; i + 16 <= n; i += 16) {
    m0 = _mm256_max_ps(_mm256_loadu_ps(v + i), m0);
    m1 = _mm256_max_ps(_mm256_loadu_ps(v + i + 8), m1);
  }
  m0 = _mm256_max_ps(m0, m1);
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(m0), _mm256_extractf128_ps(m0, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  float best = _mm_cvtss_f32(s);
  for (; i < n; i++)
    if (v[i] > best) best = v[i];
  // The first index holding the maximum (NaN compares unequal; +0 and -0 compare equal, as the
  // scalar loop keeps the first of them).
  const __m256 target = _mm256_set1_ps(best);
  int32_t j = 0;
  for (; j + 8 <= n; j += 8) {
    const int mask = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(v + j), target, _CMP_EQ_OQ));
    if (mask) return j + __builtin_ctz((unsigned)mask);
  }
  for (; j < n; j++)
    if (v[j] == best) return j;
  return 0;  // unreachable: best is one of the values
}

#endif

}  // namespace

int32_t argmaxRow(const float* row, int32_t count) {
#ifdef ORTLLM_ARGMAX_X86
  return cpu::avx2() ? argmaxAvx2(row, count) : argmaxScalar(row, count);
#else
  return argmaxScalar(row, count);
#endif
}

}  // namespace ortllm
