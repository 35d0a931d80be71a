// The float32 linears of a small llama/qwen2 decoder, fused per half layer, for the segmented
// runner's small-model path (src/model/runner/small-decoder.ts has the figures and the policy):
// at stories260K's size (dim 64) a layer's whole compute is a few microseconds, and the cost of a
// step was onnxruntime-node's ~20 us per session run (six a step). Here a layer is two calls,
// with the addon's writeKv and attention between them:
//   f32Qkv: q, k, v = normed W^T, RoPE on q and k (each row's position in the cos/sin tables);
//   f32Mlp: residual += attn Wo^T, normed = RMSNorm(residual) * post; residual += down(SwiGLU(normed
//           Wgu^T)); normed = RMSNorm(residual) * next (the next layer's input norm, or the final one).
// and f32Gemm for the head. Weights are packed once (f32Pack) as [k, n16] (W^T, n rounded up to 16
// columns), so a row's outputs accumulate in registers while k streams, each output summed in k
// order (float32, fused multiply-adds). Single-threaded: this path is for models whose every GEMM
// is microseconds, where a hand-off to another thread costs more than it splits.
//
// A separate addon (ortllm_f32.node) beside ortllm_native.node: the kernels share nothing with
// the attention addon's pool, and its functions are registered here.
//
// Three builds of the kernels, the CPU's best chosen at load (`simd`; f32SetSimd lowers it for
// the tests): AVX-512, AVX2 + FMA, portable loops. One packed layout for all three, so the level
// can change between calls. Each GEMM output is summed in k order with fused multiply-adds at
// every level, the RMSNorm is rms-norm-body.h's 16 partial sums at every level, and the AVX2 SiLU
// (silu-mul-avx2.h, exp-avx2.h) takes silu-mul512.h's steps on exp512.h's polynomial: AVX2 and
// AVX-512 give the same floats (test/unit/model/small-decoder.test.ts checks it where both run);
// the portable SiLU calls std::exp, so its MLP output may differ from theirs in the last bits.
//
// AVX2 (Zen 1, 2 cores, AVX2/FMA/F16C; a single ymm FMA chain peaks at 19.7 G multiply-adds a
// CPU-second, bench/fma-peak): the [k, n16] layout as two 8-float vectors per 16 columns, rows in
// tiles of six (12 accumulators, 2 weight vectors and the broadcast: 15 of the 16 ymm registers),
// a single row 64 columns at a time (8 independent chains against the FMA's 5-cycle latency).
// f32Gemm alone, best of 60 batches (G multiply-adds/s; load 4-7 from other sessions):
//   tiles (rows x columns)   32x344x64  32x64x172  32x512x64  128x344x64
//   4 x 16                      9.0        8.8        9.1        8.9
//   2 x 32                      8.7        8.5        8.9        8.6
//   5 x 16 / 6 x 16          9.1 / 9.2  9.7 / 9.7  9.3 / 9.2  9.0 / 9.1
//   3 x 32                      8.5        8.9        8.6        8.2
//   6 x 16, k, stride and pointers in locals and the store loop unrolled:
//                              17.1       18.6       17.1       17.3
// The last row: with the loop reading `w.k` and `w.np` through the struct and the rolled store
// loop indexing the accumulators, GCC 12 wrote all twelve accumulators to the stack every k
// (the AVX-512 tile, with 32 registers, keeps them in registers: only its stores after the loop).
// One row (batch 1): 64 columns a step 1x344x64 2.2 us, 1x64x172 1.0, 1x512x64 3.4 against 32
// columns 2.3 / 1.4 / 4.4 and 16 columns 3.1 / 1.7 / 5.3 (N-API's call ~0.5 us of each).
// f32Mlp at stories260K's shape (h 64, inter 172), portable -> AVX2: 1 row 100 -> 4.6 us,
// 32 rows 3,237 -> 93 us, 128 rows 17,489 -> 373 us (the portable std::fma is a libm call).
#include <node_api.h>

#include "silu-mul512.h"
#include "silu-mul-avx2.h"
#include "napi-args.h"
#include "rms-norm-body.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

namespace ortllm {
namespace {

using namespace ortllm::napi;

constexpr int kCols = 16;

inline int paddedCols(int n) { return (n + kCols - 1) / kCols * kCols; }

struct Packed {
  const float* w;  // [k, np]
  int n;
  int k;
  int np;
};

// ---------------------------------------------------------------------------------------------
// Portable kernels (any CPU).

void gemmPortable(const float* x, const Packed& w, float* y, int m) {
  for (int r = 0; r < m; r++) {
    const float* xr = x + (size_t)r * w.k;
    float* yr = y + (size_t)r * w.n;
    for (int j0 = 0; j0 < w.n; j0 += kCols) {
      float acc[kCols] = {0};
      const int cols = std::min(kCols, w.n - j0);
      for (int kk = 0; kk < w.k; kk++) {
        const float xv = xr[kk];
        const float* wr = w.w + (size_t)kk * w.np + j0;
        for (int j = 0; j < kCols; j++) acc[j] = std::fma(xv, wr[j], acc[j]);
      }
      std::memcpy(yr + j0, acc, cols * sizeof(float));
    }
  }
}

void siluMulPortable(const float* gu, float* out, int rows, int width) {
  for (int r = 0; r < rows; r++) {
    const float* g = gu + (size_t)r * 2 * width;
    const float* u = g + width;
    float* o = out + (size_t)r * width;
    for (int j = 0; j < width; j++) o[j] = g[j] / (1.0f + std::exp(-g[j])) * u[j];
  }
}

void addRmsNormPortable(const float* x, float* residual, const float* weight, float* out, size_t rows, size_t h, float eps) {
  addRmsNormBody(x, residual, weight, out, rows, h, eps);
}

// ---------------------------------------------------------------------------------------------
// AVX-512 kernels.
#if defined(__x86_64__) || defined(_M_X64)
#define AVX512_FN __attribute__((target("avx512f,avx512vl")))

bool useAvx512() {
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl");
  return ok;
}

inline __mmask16 tailMask(int cols) { return cols >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << cols) - 1); }

// Rows [r0, r0 + R) x columns [j0, j0 + 16 * V): R x V accumulators over all of k.
template <int R, int V>
AVX512_FN inline void gemmTile(const float* x, const Packed& w, float* y, int r0, int j0) {
  __m512 acc[R][V];
  for (int r = 0; r < R; r++)
    for (int v = 0; v < V; v++) acc[r][v] = _mm512_setzero_ps();
  const float* xr = x + (size_t)r0 * w.k;
  for (int kk = 0; kk < w.k; kk++) {
    const float* wr = w.w + (size_t)kk * w.np + j0;
    __m512 wv[V];
    for (int v = 0; v < V; v++) wv[v] = _mm512_loadu_ps(wr + 16 * v);
    for (int r = 0; r < R; r++) {
      const __m512 xb = _mm512_set1_ps(xr[(size_t)r * w.k + kk]);
      for (int v = 0; v < V; v++) acc[r][v] = _mm512_fmadd_ps(xb, wv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; r++) {
    float* yr = y + (size_t)(r0 + r) * w.n;
    for (int v = 0; v < V; v++) {
      const int j = j0 + 16 * v;
      _mm512_mask_storeu_ps(yr + j, tailMask(w.n - j), acc[r][v]);
    }
  }
}

template <int R>
AVX512_FN inline void gemmRows(const float* x, const Packed& w, float* y, int r0) {
  int j0 = 0;
  for (; j0 + 64 <= w.np; j0 += 64) gemmTile<R, 4>(x, w, y, r0, j0);
  for (; j0 < w.np; j0 += 16) gemmTile<R, 1>(x, w, y, r0, j0);
}

AVX512_FN void gemmAvx512(const float* x, const Packed& w, float* y, int m) {
  int r = 0;
  for (; r + 4 <= m; r += 4) gemmRows<4>(x, w, y, r);
  for (; r < m; r++) gemmRows<1>(x, w, y, r);
}

AVX512_FN void siluMulAvx512(const float* gu, float* out, int rows, int width) { siluMul512(gu, out, rows, width); }

AVX512_FN void addRmsNormAvx512(const float* x, float* residual, const float* weight, float* out, size_t rows, size_t h, float eps) {
  addRmsNormBody(x, residual, weight, out, rows, h, eps);
}

// ---------------------------------------------------------------------------------------------
// AVX2 + FMA kernels (Zen 1-4, Intel from Haswell): the same packed [k, n16] layout, 16 columns
// as two 8-float vectors, each output summed in k order with fused multiply-adds as above, so
// the three builds give the same floats (the header's AVX2 section).
#define AVX2_FN __attribute__((target("avx2,fma")))

bool useAvx2() {
  static const bool ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return ok;
}

// Rows [r0, r0 + R) x columns [j0, j0 + 8 * V): R x V accumulators over all of k.
template <int R, int V>
AVX2_FN inline void gemmTileAvx2(const float* x, const Packed& w, float* y, int r0, int j0) {
  // k, the stride and the pointers in locals: read through `w` in the loop, GCC reloaded them and
  // kept every accumulator's copy on the stack up to date each k (twice the time a tile).
  const int k = w.k;
  const size_t np = w.np;
  const float* wr = w.w + j0;
  const float* xr = x + (size_t)r0 * k;
  __m256 acc[R][V];
  for (int r = 0; r < R; r++)
    for (int v = 0; v < V; v++) acc[r][v] = _mm256_setzero_ps();
  for (int kk = 0; kk < k; kk++, wr += np) {
    __m256 wv[V];
    for (int v = 0; v < V; v++) wv[v] = _mm256_loadu_ps(wr + 8 * v);
    for (int r = 0; r < R; r++) {
      const __m256 xb = _mm256_broadcast_ss(xr + (size_t)r * k + kk);
      for (int v = 0; v < V; v++) acc[r][v] = _mm256_fmadd_ps(xb, wv[v], acc[r][v]);
    }
  }
  // Unrolled, so that the accumulators stay in registers (GCC left this loop rolled and indexed
  // them in memory, storing each one every k).
#pragma GCC unroll 16
  for (int r = 0; r < R; r++) {
    float* yr = y + (size_t)(r0 + r) * w.n;
#pragma GCC unroll 16
    for (int v = 0; v < V; v++) {
      const int j = j0 + 8 * v;
      if (j + 8 <= w.n) _mm256_storeu_ps(yr + j, acc[r][v]);
      else _mm256_maskstore_ps(yr + j, tailMaskAvx2(w.n - j), acc[r][v]);
    }
  }
}

// Column blocks of 8 * V floats while they fit the padded width, then 16 (np is a multiple of 16).
template <int R, int V>
AVX2_FN inline void gemmRowsAvx2(const float* x, const Packed& w, float* y, int r0) {
  int j0 = 0;
  for (; j0 + 8 * V <= w.np; j0 += 8 * V) gemmTileAvx2<R, V>(x, w, y, r0, j0);
  for (; j0 < w.np; j0 += 16) gemmTileAvx2<R, 2>(x, w, y, r0, j0);
}

// Six rows x 16 columns (12 accumulators, two weight vectors and the broadcast: 15 of the 16
// ymm registers), a single row 64 columns at a time (eight chains to cover the FMA latency); the
// header's tile figures.
AVX2_FN void gemmAvx2(const float* x, const Packed& w, float* y, int m) {
  int r = 0;
  for (; r + 6 <= m; r += 6) gemmRowsAvx2<6, 2>(x, w, y, r);
  for (; r < m; r++) gemmRowsAvx2<1, 8>(x, w, y, r);
}

AVX2_FN void addRmsNormAvx2(const float* x, float* residual, const float* weight, float* out, size_t rows, size_t h, float eps) {
  addRmsNormBody(x, residual, weight, out, rows, h, eps);
}
#endif

// The kernels in force: the best this CPU runs, or lower after f32SetSimd (tests compare them).
enum SimdLevel { kPortable, kAvx2, kAvx512, kSimdLevels };
const char* const kSimdNames[kSimdLevels] = {"portable", "avx2", "avx512"};

SimdLevel bestSimd() {
#if defined(__x86_64__) || defined(_M_X64)
  if (useAvx512()) return kAvx512;
  if (useAvx2()) return kAvx2;
#endif
  return kPortable;
}

SimdLevel simdLevel = bestSimd();

void gemm(const float* x, const Packed& w, float* y, int m) {
#if defined(__x86_64__) || defined(_M_X64)
  if (simdLevel == kAvx512) return gemmAvx512(x, w, y, m);
  if (simdLevel == kAvx2) return gemmAvx2(x, w, y, m);
#endif
  gemmPortable(x, w, y, m);
}

void siluMul(const float* gu, float* out, int rows, int width) {
#if defined(__x86_64__) || defined(_M_X64)
  if (simdLevel == kAvx512) return siluMulAvx512(gu, out, rows, width);
  if (simdLevel == kAvx2) return siluMulAvx2(gu, out, rows, width);
#endif
  siluMulPortable(gu, out, rows, width);
}

void addRmsNorm(const float* x, float* residual, const float* weight, float* out, size_t rows, size_t h, float eps) {
#if defined(__x86_64__) || defined(_M_X64)
  if (simdLevel == kAvx512) return addRmsNormAvx512(x, residual, weight, out, rows, h, eps);
  if (simdLevel == kAvx2) return addRmsNormAvx2(x, residual, weight, out, rows, h, eps);
#endif
  addRmsNormPortable(x, residual, weight, out, rows, h, eps);
}

// Rotates each head of each row (rotate-half, as the segments' RotaryEmbedding) by its position's cos/sin.
void rope(float* x, const int32_t* positions, const float* cosTable, const float* sinTable, int rows, int heads, int headDim) {
  const int half = headDim / 2;
  for (int r = 0; r < rows; r++) {
    const float* c = cosTable + (size_t)positions[r] * half;
    const float* s = sinTable + (size_t)positions[r] * half;
    for (int h = 0; h < heads; h++) {
      float* v = x + ((size_t)r * heads + h) * headDim;
      for (int i = 0; i < half; i++) {
        const float x1 = v[i], x2 = v[i + half];
        v[i] = x1 * c[i] - x2 * s[i];
        v[i + half] = x2 * c[i] + x1 * s[i];
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Arguments.

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
  float* packed = (float*)data;
  std::fill(packed, packed + (size_t)k * np, 0.0f);
  for (int j = 0; j < n; j++)
    for (int kk = 0; kk < k; kk++) packed[(size_t)kk * np + j] = w[(size_t)j * k + kk];
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
  gemm(x, w, y, m);
  return nullptr;
}

// f32Qkv(normed [m * h], wq, wk, wv, q [m * heads * headDim], k, v [m * kvHeads * headDim], positions Int32Array [m] | null,
//        cos, sin Float32Array [positions * headDim / 2] | null, dims Int32Array [m, h, heads, kvHeads, headDim]):
// the three projections, then RoPE on q and k at each row's position (none when positions is null).
napi_value F32Qkv(napi_env env, napi_callback_info info) {
  napi_value argv[11];
  if (!readArgs(env, info, 11, argv)) return fail(env, "f32Qkv: expected (normed, wq, wk, wv, q, k, v, positions, cos, sin, dims)");
  void* dimsData;
  size_t dimsLen;
  if (!typed(env, argv[10], napi_int32_array, &dimsData, &dimsLen) || dimsLen != 5) return fail(env, "f32Qkv: dims must be an Int32Array [m, h, heads, kvHeads, headDim]");
  const int32_t* d = (const int32_t*)dimsData;
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
  gemm(normed, wq, q, m);
  gemm(normed, wk, k, m);
  gemm(normed, wv, v, m);
  if (positions) {
    rope(q, positions, cosTable, sinTable, m, heads, headDim);
    rope(k, positions, cosTable, sinTable, m, kvHeads, headDim);
  }
  return nullptr;
}

// f32Mlp(attn [m * qDim], wo, residual [m * h], post [h], wGateUp, wDown, next [h], normed [m * h], dims Int32Array [m, h, qDim, inter], eps):
// the rest of a layer after attention (see the header), leaving the residual and the next norm's output.
napi_value F32Mlp(napi_env env, napi_callback_info info) {
  napi_value argv[10];
  if (!readArgs(env, info, 10, argv)) return fail(env, "f32Mlp: expected (attn, wo, residual, post, wGateUp, wDown, next, normed, dims, eps)");
  void* dimsData;
  size_t dimsLen;
  if (!typed(env, argv[8], napi_int32_array, &dimsData, &dimsLen) || dimsLen != 4) return fail(env, "f32Mlp: dims must be an Int32Array [m, h, qDim, inter]");
  const int32_t* d = (const int32_t*)dimsData;
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
  // Scratch kept across calls: this thread's (the engine worker's) one step at a time.
  static thread_local std::vector<float> projected, gateUp, act;
  projected.resize((size_t)m * h);
  gateUp.resize((size_t)m * 2 * inter);
  act.resize((size_t)m * inter);
  gemm(attn, wo, projected.data(), m);
  addRmsNorm(projected.data(), residual, post, normed, m, h, (float)eps);
  gemm(normed, wGateUp, gateUp.data(), m);
  siluMul(gateUp.data(), act.data(), m, inter);
  gemm(act.data(), wDown, projected.data(), m);
  addRmsNorm(projected.data(), residual, next, normed, m, h, (float)eps);
  return nullptr;
}

// f32SetSimd(level 'portable' | 'avx2' | 'avx512'): the kernels to run from now on, clamped to the
// best this CPU has; returns the level in force. For tests: every level gives the same floats.
napi_value F32SetSimd(napi_env env, napi_callback_info info) {
  napi_value argv[1];
  char name[16] = {0};
  size_t len = 0;
  if (!readArgs(env, info, 1, argv) || napi_get_value_string_utf8(env, argv[0], name, sizeof(name), &len) != napi_ok)
    return fail(env, "f32SetSimd: expected 'portable', 'avx2' or 'avx512'");
  int wanted = -1;
  for (int i = 0; i < kSimdLevels; i++)
    if (std::strcmp(name, kSimdNames[i]) == 0) wanted = i;
  if (wanted < 0) return fail(env, "f32SetSimd: expected 'portable', 'avx2' or 'avx512'");
  simdLevel = (SimdLevel)std::min(wanted, (int)bestSimd());
  napi_value out;
  napi_create_string_utf8(env, kSimdNames[simdLevel], NAPI_AUTO_LENGTH, &out);
  return out;
}

napi_value Init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"f32Pack", nullptr, F32Pack, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"f32Gemm", nullptr, F32Gemm, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"f32Qkv", nullptr, F32Qkv, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"f32Mlp", nullptr, F32Mlp, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"f32SetSimd", nullptr, F32SetSimd, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
  // The best kernels this CPU runs (what the runner's size policy reads).
  napi_value simd;
  napi_create_string_utf8(env, kSimdNames[bestSimd()], NAPI_AUTO_LENGTH, &simd);
  napi_set_named_property(env, exports, "simd", simd);
  return exports;
}

}  // namespace
}  // namespace ortllm

NAPI_MODULE(NODE_GYP_MODULE_NAME, ortllm::Init)
