// The decoder's RMSNorm, with the residual add before it (addRmsNorm): what onnxruntime's
// SimplifiedLayerNormalization (no x) and SkipSimplifiedLayerNormalization (x + residual, the sum
// kept) compute, y = r / sqrt(mean(r^2) + eps) * weight per row, sums in float32. The addon's
// Q8_0 path (runner/segmented-runner.ts) calls it between its GEMMs, so a step on that path runs
// no onnxruntime session at all: each session run cost ~20 us of onnxruntime-node's per-run
// overhead (runner/session.ts), 2 x layers + 1 of them a step. Figures in docs/perf/segmented-runner.md.
//
// One thread: a row is microseconds of work at any batch the runner takes, less than waking the
// pool's helper. Written once for any x86-64 or other CPU (16 partial sums, so the compiler
// vectorizes the reduction) and built twice, with AVX-512 and without, chosen at load.
#include "cpu-features.h"
#include "rms-norm.h"
#include "rms-norm-body.h"

#include <cmath>
#include <cstddef>

namespace ortllm {
namespace {

#if defined(__x86_64__) || defined(_M_X64)
__attribute__((target("avx512f,avx512vl"))) void addRmsNormAvx512(const float* x, float* residual, const float* weight, float* out, size_t rows, size_t h, float eps) {
  addRmsNormBody(x, residual, weight, out, rows, h, eps);
}
#endif

void addRmsNormPortable(const float* x, float* residual, const float* weight, float* out, size_t rows, size_t h, float eps) {
  addRmsNormBody(x, residual, weight, out, rows, h, eps);
}

}  // namespace

void addRmsNorm(const float* x, float* residual, const float* weight, float* out, size_t rows, size_t h, float eps) {
#if defined(__x86_64__) || defined(_M_X64)
  if (cpu::avx512FVl()) return addRmsNormAvx512(x, residual, weight, out, rows, h, eps);
#endif
  addRmsNormPortable(x, residual, weight, out, rows, h, eps);
}

}  // namespace ortllm
