// ortllm_f32: registers the small-model float32 kernels (f32-decoder.cc) and reads their calls'
// arguments (packed weights, row counts, RoPE tables), throwing a TypeError on a bad call.
#include <node_api.h>

#include "cpu-features.h"
#include "f32-decoder.h"
#include "napi-args.h"

#include <cstddef>
#include <cstdint>

namespace ortllm {
namespace {

using namespace ortllm::napi;
using f32::Packed;
using f32::paddedCols;

// A packed weight argument: the Float32Array f32Pack returned, with its n and k.
bool packedArg(napi_env env, napi_value v, int n, int k, Packed* out) {
  void* data;
  size_t len;
  if (n <= 0 || k <= 0 || !typed(env, v, napi_float32_array, &data, &len) || len != (size_t)k * paddedCols(n)) return false;
  *out = {(const float*)data, n, k, paddedCols(n)};
  return true;
}

// A Float32Array of exactly `want` floats (want > 0).
bool floats(napi_env env, napi_value v, size_t want, float** out) {
  void* data;
  size_t len;
  if (!typed(env, v, napi_float32_array, &data, &len) || len != want) return false;
  *out = (float*)data;
  return true;
}

// A Float32Array of at least `want` floats.
bool floatsAtLeast(napi_env env, napi_value v, size_t want, float** out) {
  void* data;
  size_t len;
  if (!typed(env, v, napi_float32_array, &data, &len) || len < want) return false;
  *out = (float*)data;
  return true;
}

// f32Pack(w Float32Array [n * k] row-major [n, k], n, k): W^T as [k, n rounded up to 16], zero-padded.
napi_value F32Pack(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  int32_t dims[2];
  if (!readArgs(env, info, 3, argv) || !ints(env, argv + 1, 2, dims) || dims[0] <= 0 || dims[1] <= 0) return fail(env, "f32Pack: expected (w, n > 0, k > 0)");
  const int n = dims[0], k = dims[1], np = paddedCols(n);
  float* w;
  if (!floats(env, argv[0], (size_t)n * k, &w)) return fail(env, "f32Pack: w must be a Float32Array of n * k");
  napi_value buffer, out;
  void* data;
  if (napi_create_arraybuffer(env, (size_t)k * np * sizeof(float), &data, &buffer) != napi_ok) return fail(env, "f32Pack: out of memory");
  f32::pack(w, n, k, (float*)data);
  napi_create_typedarray(env, napi_float32_array, (size_t)k * np, buffer, 0, &out);
  return out;
}

// f32Gemm(packed, x Float32Array [m * k], y Float32Array [m * n], m, n, k): y = x W^T.
napi_value F32Gemm(napi_env env, napi_callback_info info) {
  napi_value argv[6];
  int32_t dims[3];
  if (!readArgs(env, info, 6, argv) || !ints(env, argv + 3, 3, dims) || dims[0] <= 0) return fail(env, "f32Gemm: expected (packed, x, y, m > 0, n, k)");
  const int m = dims[0];
  Packed w;
  float *x, *y;
  if (!packedArg(env, argv[0], dims[1], dims[2], &w)) return fail(env, "f32Gemm: packed must be f32Pack's output for n and k");
  if (!floatsAtLeast(env, argv[1], (size_t)m * w.k, &x) || !floatsAtLeast(env, argv[2], (size_t)m * w.n, &y)) return fail(env, "f32Gemm: x and y must hold m rows");
  f32::gemm(x, w, y, m);
  return nullptr;
}

// f32Qkv(normed [m * h], wq, wk, wv, q [m * heads * headDim], k, v [m * kvHeads * headDim], positions Int32Array [m] | null,
//        cos, sin Float32Array [positions * headDim / 2] | null, dims Int32Array [m, h, heads, kvHeads, headDim]):
// the three projections, then RoPE on q and k at each row's position (none when positions is null).
napi_value F32Qkv(napi_env env, napi_callback_info info) {
  napi_value argv[11];
  if (!readArgs(env, info, 11, argv)) return fail(env, "f32Qkv: expected (normed, wq, wk, wv, q, k, v, positions, cos, sin, dims)");
  const int32_t* d = int32s(env, argv[10], 5);
  if (!d) return fail(env, "f32Qkv: dims must be an Int32Array [m, h, heads, kvHeads, headDim]");
  const int m = d[0], h = d[1], heads = d[2], kvHeads = d[3], headDim = d[4];
  if (m <= 0 || h <= 0 || heads <= 0 || kvHeads <= 0 || headDim <= 0 || headDim % 2) return fail(env, "f32Qkv: bad dims");
  const int qDim = heads * headDim, kvDim = kvHeads * headDim;
  Packed wq, wk, wv;
  float *normed, *q, *k, *v;
  if (!packedArg(env, argv[1], qDim, h, &wq) || !packedArg(env, argv[2], kvDim, h, &wk) || !packedArg(env, argv[3], kvDim, h, &wv))
    return fail(env, "f32Qkv: wq, wk, wv must be f32Pack's outputs for [heads * headDim, h] and [kvHeads * headDim, h]");
  if (!floatsAtLeast(env, argv[0], (size_t)m * h, &normed) || !floatsAtLeast(env, argv[4], (size_t)m * qDim, &q) ||
      !floatsAtLeast(env, argv[5], (size_t)m * kvDim, &k) || !floatsAtLeast(env, argv[6], (size_t)m * kvDim, &v))
    return fail(env, "f32Qkv: normed, q, k and v must hold m rows");
  napi_valuetype posType;
  napi_typeof(env, argv[7], &posType);
  const int32_t* positions = nullptr;
  float *cosTable = nullptr, *sinTable = nullptr;
  if (posType != napi_null) {
    void* p;
    size_t pLen, cLen, sLen;
    void *c, *s;
    if (!typed(env, argv[7], napi_int32_array, &p, &pLen) || pLen < (size_t)m || !typed(env, argv[8], napi_float32_array, &c, &cLen) ||
        !typed(env, argv[9], napi_float32_array, &s, &sLen) || cLen != sLen)
      return fail(env, "f32Qkv: positions must be an Int32Array of m and cos, sin Float32Arrays of one size");
    positions = (const int32_t*)p;
    const size_t tablePositions = cLen / (headDim / 2);
    for (int r = 0; r < m; r++)
      if (positions[r] < 0 || (size_t)positions[r] >= tablePositions) return fail(env, "f32Qkv: a position is outside the cos/sin tables");
    cosTable = (float*)c;
    sinTable = (float*)s;
  }
  f32::qkv(normed, wq, wk, wv, q, k, v, m, positions, cosTable, sinTable, heads, kvHeads, headDim);
  return nullptr;
}

// f32Mlp(attn [m * qDim], wo, residual [m * h], post [h], wGateUp, wDown, next [h], normed [m * h], dims Int32Array [m, h, qDim, inter], eps):
// the rest of a layer after attention (f32-decoder.h), leaving the residual and the next norm's output.
napi_value F32Mlp(napi_env env, napi_callback_info info) {
  napi_value argv[10];
  if (!readArgs(env, info, 10, argv)) return fail(env, "f32Mlp: expected (attn, wo, residual, post, wGateUp, wDown, next, normed, dims, eps)");
  const int32_t* d = int32s(env, argv[8], 4);
  if (!d) return fail(env, "f32Mlp: dims must be an Int32Array [m, h, qDim, inter]");
  const int m = d[0], h = d[1], qDim = d[2], inter = d[3];
  double eps;
  if (m <= 0 || h <= 0 || qDim <= 0 || inter <= 0 || napi_get_value_double(env, argv[9], &eps) != napi_ok) return fail(env, "f32Mlp: bad dims or eps");
  Packed wo, wGateUp, wDown;
  if (!packedArg(env, argv[1], h, qDim, &wo) || !packedArg(env, argv[4], 2 * inter, h, &wGateUp) || !packedArg(env, argv[5], h, inter, &wDown))
    return fail(env, "f32Mlp: wo, wGateUp, wDown must be f32Pack's outputs for [h, qDim], [2 * inter, h], [h, inter]");
  float *attn, *residual, *post, *next, *normed;
  if (!floatsAtLeast(env, argv[0], (size_t)m * qDim, &attn) || !floatsAtLeast(env, argv[2], (size_t)m * h, &residual) || !floats(env, argv[3], h, &post) ||
      !floats(env, argv[6], h, &next) || !floatsAtLeast(env, argv[7], (size_t)m * h, &normed))
    return fail(env, "f32Mlp: attn, residual and normed must hold m rows, post and next h floats");
  f32::mlp(attn, wo, residual, post, wGateUp, wDown, next, normed, m, h, inter, (float)eps);
  return nullptr;
}

// f32SetSimd(level 'portable' | 'avx2' | 'avx512'): the kernels to run from now on, clamped to the
// best this CPU has; returns the level in force. For tests: every level gives the same floats.
napi_value F32SetSimd(napi_env env, napi_callback_info info) {
  const int level = simdArg(env, info, f32::kSimdLevels, f32::bestSimd(), "f32SetSimd: expected 'portable', 'avx2' or 'avx512'");
  if (level < 0) return nullptr;
  f32::setSimd((cpu::SimdLevel)level);
  return simdName(env, f32::simd());
}

napi_value Init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      method("f32Pack", F32Pack),
      method("f32Gemm", F32Gemm),
      method("f32Qkv", F32Qkv),
      method("f32Mlp", F32Mlp),
      method("f32SetSimd", F32SetSimd),
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
  // The best kernels this CPU runs (what the runner's size policy reads).
  napi_set_named_property(env, exports, "simd", simdName(env, f32::bestSimd()));
  return exports;
}

}  // namespace
}  // namespace ortllm

NAPI_MODULE(NODE_GYP_MODULE_NAME, ortllm::Init)
