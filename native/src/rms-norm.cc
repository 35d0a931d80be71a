// The decoder's RMSNorm, with the residual add before it (addRmsNorm): what onnxruntime's
// SimplifiedLayerNormalization (no x) and SkipSimplifiedLayerNormalization (x + residual, the sum
// kept) compute, y = r / sqrt(mean(r^2) + eps) * weight per row, sums in float32. The addon's
// Q8_0 path (runner/segmented-runner.ts) calls it between its GEMMs, so a step on that path runs
// no onnxruntime session at all: each session run cost ~20 us of onnxruntime-node's per-run
// overhead (runner/session.ts), 2 x layers + 1 of them a step. Figures in segmented-runner.ts.
//
// One thread: a row is microseconds of work at any batch the runner takes, less than waking the
// pool's helper. Written once for any x86-64 or other CPU (16 partial sums, so the compiler
// vectorizes the reduction) and built twice, with AVX-512 and without, chosen at load.
#include <node_api.h>

#include "napi-args.h"
#include "rms-norm-body.h"

#include <cmath>
#include <cstddef>

namespace ortllm {
namespace {

using namespace ortllm::napi;

#if defined(__x86_64__) || defined(_M_X64)
__attribute__((target("avx512f,avx512vl"))) void addRmsNormAvx512(const float* x, float* residual, const float* weight, float* out, size_t rows, size_t h, float eps) {
  addRmsNormBody(x, residual, weight, out, rows, h, eps);
}
bool useAvx512() {
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
  return ok;
}
#endif

void addRmsNormPortable(const float* x, float* residual, const float* weight, float* out, size_t rows, size_t h, float eps) {
  addRmsNormBody(x, residual, weight, out, rows, h, eps);
}

}  // namespace

// addRmsNorm(x Float32Array | null, residual Float32Array, weight Float32Array [h], out Float32Array, eps):
// residual += x in place (when x is given), then out = residual / sqrt(mean(residual^2) + eps) * weight
// per row of weight's width. x, residual and out of one length; out must not be x or residual.
napi_value AddRmsNorm(napi_env env, napi_callback_info info) {
  napi_value argv[5];
  if (!readArgs(env, info, 5, argv)) return fail(env, "addRmsNorm: expected (x | null, residual, weight, out, eps)");
  void *x = nullptr, *residual, *weight, *out;
  size_t xLen = 0, rLen, wLen, oLen;
  double eps;
  napi_valuetype xType;
  if (napi_typeof(env, argv[0], &xType) != napi_ok) return fail(env, "addRmsNorm: bad x");
  if (xType != napi_null && !typed(env, argv[0], napi_float32_array, &x, &xLen)) return fail(env, "addRmsNorm: x must be a Float32Array or null");
  if (!typed(env, argv[1], napi_float32_array, &residual, &rLen) || !typed(env, argv[2], napi_float32_array, &weight, &wLen) ||
      !typed(env, argv[3], napi_float32_array, &out, &oLen) || napi_get_value_double(env, argv[4], &eps) != napi_ok)
    return fail(env, "addRmsNorm: expected Float32Arrays (residual, weight, out) and a number eps");
  if (wLen == 0 || rLen % wLen || oLen != rLen || (x && xLen != rLen)) return fail(env, "addRmsNorm: x, residual and out must be rows of weight's width");
  const float* xs = (const float*)x;
  float* res = (float*)residual;
  float* o = (float*)out;
  // Overlap would read normed values back as the residual (or the sum).
  const auto overlaps = [&](const float* a, const float* b) { return a && a < b + rLen && b < a + rLen; };
  if (overlaps(o, res) || overlaps(xs, res) || overlaps(xs, o)) return fail(env, "addRmsNorm: out, x and residual must not overlap");
  const size_t rows = rLen / wLen;
#if defined(__x86_64__) || defined(_M_X64)
  if (useAvx512()) {
    addRmsNormAvx512(xs, res, (const float*)weight, o, rows, wLen, (float)eps);
    return nullptr;
  }
#endif
  addRmsNormPortable(xs, res, (const float*)weight, o, rows, wLen, (float)eps);
  return nullptr;
}

}  // namespace ortllm
