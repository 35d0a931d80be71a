// bfloat16 GEMM on AVX512-BF16: y[M, N] = act(x[M, K] W[N, K]^T + b), W rounded to bfloat16 once
// (bf16Pack, round to nearest even), x rounded to bfloat16 per call (VCVTNE2PS2BF16, the same
// rounding), products summed in float32 by VDPBF16PS (two bf16 pairs per lane per instruction).
// The bias starts the accumulators; GELU (erf or tanh form) or ReLU is applied before the store.
// Also the encoder's residual add + LayerNorm (addLayerNorm); with the encoder attention on the
// same tiles (bf16-encoder-attention.cc, bf16-tile.h) the pooling runner's bfloat16 path
// (runner/bf16-pooling-runner.ts) leaves onnxruntime only the embeddings and the pooling.
//
// Packing: columns in groups of 16; per group, K/2 vectors of 64 bytes, each the 16 columns' two
// consecutive K values (the pair VDPBF16PS multiplies with a broadcast pair of the row). K is
// padded to even with a zero, N to 16 with zero columns. Register tile: 4 rows x 4 column groups
// (16 accumulators). Work items are (up to 64 rows) x (4 column groups), on the attention thread
// pool when the call has enough work.
//
// Measured (issue 15), a shared 2-core AMD EPYC Zen 5 (AVX-512 at full width, AVX512-BF16): this
// kernel against onnxruntime 1.30's float32 Gemm (transB, bias: the encoder graph's linear) in a
// one-op session, `node dist/bench/bf16-gemm.js --ms 300 --rounds 2` (random weights and rows,
// KxN = inputs x outputs, interleaved, load average ~2.9). Microseconds per call Gemm / this
// kernel, speed-up, one thread, the better of two rounds:
//                  M=16              128               512                2048
//   384x384     26/10 2.6x       161/76 2.1x      658/309 2.1x     3340/1311 2.5x
//   384x1536    89/41 2.2x       651/301 2.2x     2928/1230 2.4x   13900/5431 2.6x
//   1536x384    84/39 2.2x       578/291 2.0x     2444/1229 2.0x   11228/5370 2.1x
// This kernel 440-520 GFLOP/s on one thread (the fp32 FMA peak is 264-268 per core, so ~95% of
// VDPBF16PS's twice that), onnxruntime 180-260. With two threads the second core was mostly held
// by other sessions (CPU time = wall time for both but 384x1536 at 512 and 2048 rows: 737-759 us
// against 1769-2883, 3151-3161 against 8356-8620, 764-819 GFLOP/s). Outputs differ from float32's
// by 2.0-2.5e-3 of the output's largest magnitude: bfloat16's 8-bit significand.
// Whole runner: runner/bf16-pooling-runner.ts.
#include <node_api.h>

#include "bf16-tile.h"
#include "napi-args.h"
#include "thread-pool.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <vector>

namespace ortllm {
namespace {

using namespace ortllm::napi;
using namespace ortllm::bf16;

#ifdef ORTLLM_BF16_X86
void gemm(const uint16_t* packed, const float* x, const float* bias, float* y, int m, int n, int k, int act) {
  thread_local std::vector<uint16_t> rows;  // the calling thread's bfloat16 rows, reused between calls
  const int kPad = (k + 1) & ~1;
  rows.resize((size_t)m * kPad);
  for (int r = 0; r < m; r++) convertRow(x + (size_t)r * k, k, rows.data() + (size_t)r * kPad, kPad);
  const uint16_t* a = rows.data();  // the helpers read the caller's rows
  const int groups = (n + kGroup - 1) / kGroup;
  const size_t groupStride = (size_t)kPad * kGroup;
  const int colItems = (groups + kTileGroups - 1) / kTileGroups;
  const int rowItems = (m + kChunkRows - 1) / kChunkRows;
  std::function<void(int)> fn = [&](int item) {
    const int g0 = (item % colItems) * kTileGroups, c = std::min(kTileGroups, groups - g0);
    const int r0 = (item / colItems) * kChunkRows, r1 = std::min(m, r0 + kChunkRows);
    for (int r = r0; r < r1; r += kTileRows) {
      const int tr = std::min(kTileRows, r1 - r);
      tileOf(act, tr, c)(a + (size_t)r * kPad, kPad, packed + g0 * groupStride, groupStride, bias ? bias + g0 * kGroup : nullptr, y + (size_t)r * n, n,
                         (size_t)n, g0 * kGroup);
    }
  };
  // Helpers only for enough work: waking one costs more than a small GEMM saves. (Measured: q8-gemm.cc's
  // 4M, which split every GEMM of a 16-token MiniLM forward (2.4-9.4M, 10-40 us on one thread), ran
  // that forward in 2.09-2.22 ms best of 40 against 1.84-1.88 with them on one thread, two threads,
  // interleaved; 128-row forwards the same either way.) Lowering this one to 1e6, so that a lone
  // 16-token MiniLM forward's GEMMs (2.4-9.4M) use the idle second core at concurrency 1: served
  // 16 tokens c1, bfloat16, three 400-request rounds each, interleaved: 301, 323, 311 -> 320, 315,
  // 326 embeddings/s (+3%, within the load's noise) for 2.60-2.75 -> 2.85-3.33 ms of server CPU
  // each (+17%); runner alone 1x16, two threads, mean of 400: 1.55, 1.92 -> 1.31, 1.49 ms (0: 1.47,
  // 1.48), the helper's core mostly held by other sessions. Not taken.
  if ((double)m * n * k >= 2e7)
    parallelFor(rowItems * colItems, fn);
  else
    for (int i = 0; i < rowItems * colItems; i++) fn(i);
}

// out[r] = LayerNorm(x[r] + residual[r]) * gamma + beta over rows of width h (mean and variance in float32).
BF16_FN void addLayerNorm(const float* x, const float* residual, const float* gamma, const float* beta, float* out, int rows, int h, float eps) {
  for (int r = 0; r < rows; r++) {
    const float* xr = x + (size_t)r * h;
    const float* rr = residual + (size_t)r * h;
    float* o = out + (size_t)r * h;
    __m512 sum = _mm512_setzero_ps();
    for (int j = 0; j < h; j += 16) {
      const __mmask16 mask = h - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (h - j)) - 1);
      const __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(mask, xr + j), _mm512_maskz_loadu_ps(mask, rr + j));
      _mm512_mask_storeu_ps(o + j, mask, v);
      sum = _mm512_add_ps(sum, v);
    }
    const __m512 mean = _mm512_set1_ps(_mm512_reduce_add_ps(sum) / h);
    __m512 sq = _mm512_setzero_ps();
    for (int j = 0; j < h; j += 16) {
      const __mmask16 mask = h - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (h - j)) - 1);
      const __m512 d = _mm512_maskz_sub_ps(mask, _mm512_maskz_loadu_ps(mask, o + j), mean);
      sq = _mm512_fmadd_ps(d, d, sq);
    }
    const __m512 inv = _mm512_set1_ps(1.0f / std::sqrt(_mm512_reduce_add_ps(sq) / h + eps));
    for (int j = 0; j < h; j += 16) {
      const __mmask16 mask = h - j >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (h - j)) - 1);
      const __m512 d = _mm512_mul_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(mask, o + j), mean), inv);
      _mm512_mask_storeu_ps(o + j, mask, _mm512_fmadd_ps(d, _mm512_maskz_loadu_ps(mask, gamma + j), _mm512_maskz_loadu_ps(mask, beta + j)));
    }
  }
}
#endif

}  // namespace

// bf16Pack(w Float32Array [n * k] row-major [n, k], n, k): the packed Uint16Array (bfloat16, round to nearest even).
napi_value Bf16Pack(napi_env env, napi_callback_info info) {
  napi_value argv[3];
  int32_t dims[2];
  if (!readArgs(env, info, 3, argv) || !ints(env, argv + 1, 2, dims)) return fail(env, "bf16Pack: expected (w, n, k)");
  const int n = dims[0], k = dims[1];
  if (n <= 0 || k <= 0) return fail(env, "bf16Pack: n and k must be positive");
  void* wData;
  size_t wLen;
  if (!typed(env, argv[0], napi_float32_array, &wData, &wLen) || wLen != (size_t)n * k) return fail(env, "bf16Pack: w must be a Float32Array of n * k");
  const float* w = (const float*)wData;
  const int kPad = (k + 1) & ~1, groups = (n + kGroup - 1) / kGroup;
  const size_t count = (size_t)groups * kGroup * kPad;
  void* outData;
  napi_value buffer, out;
  if (napi_create_arraybuffer(env, count * 2, &outData, &buffer) != napi_ok) return fail(env, "bf16Pack: out of memory");
  uint16_t* p = (uint16_t*)outData;
  for (int g = 0; g < groups; g++)
    for (int pair = 0; pair < kPad / 2; pair++)
      for (int col = 0; col < kGroup; col++)
        for (int j = 0; j < 2; j++) {
          const int row = g * kGroup + col, kk = 2 * pair + j;  // a row of W = an output column
          p[(size_t)g * kGroup * kPad + (size_t)pair * 32 + col * 2 + j] = row < n && kk < k ? floatToBf16(w[(size_t)row * k + kk]) : 0;
        }
  napi_create_typedarray(env, napi_uint16_array, count, buffer, 0, &out);
  return out;
}

// bf16Gemm(packed, x Float32Array [m * k], bias Float32Array [n] | null, y Float32Array [m * n], m, n, k, act): y = act(x W^T + bias).
napi_value Bf16Gemm(napi_env env, napi_callback_info info) {
  napi_value argv[8];
  int32_t dims[4];
  if (!readArgs(env, info, 8, argv) || !ints(env, argv + 4, 4, dims)) return fail(env, "bf16Gemm: expected (packed, x, bias, y, m, n, k, act)");
  const int m = dims[0], n = dims[1], k = dims[2], act = dims[3];
  if (m < 0 || n <= 0 || k <= 0 || act < kNone || act > kRelu) return fail(env, "bf16Gemm: bad m, n, k or act");
  void *packed, *x, *y, *bias = nullptr;
  size_t packedLen, xLen, yLen, biasLen;
  const size_t want = (size_t)((n + kGroup - 1) / kGroup) * kGroup * ((k + 1) & ~1);
  if (!typed(env, argv[0], napi_uint16_array, &packed, &packedLen) || packedLen != want) return fail(env, "bf16Gemm: packed does not match n, k");
  if (!typed(env, argv[1], napi_float32_array, &x, &xLen) || xLen != (size_t)m * k) return fail(env, "bf16Gemm: x must be a Float32Array of m * k");
  napi_valuetype biasType;
  napi_typeof(env, argv[2], &biasType);
  if (biasType != napi_null && (!typed(env, argv[2], napi_float32_array, &bias, &biasLen) || biasLen != (size_t)n))
    return fail(env, "bf16Gemm: bias must be null or a Float32Array of n");
  if (!typed(env, argv[3], napi_float32_array, &y, &yLen) || yLen != (size_t)m * n) return fail(env, "bf16Gemm: y must be a Float32Array of m * n");
  if (!bf16Available()) return fail(env, "bf16Gemm: this CPU has no AVX512-BF16");
#ifdef ORTLLM_BF16_X86
  if (m > 0) gemm((const uint16_t*)packed, (const float*)x, (const float*)bias, (float*)y, m, n, k, act);
#endif
  return nullptr;
}

// addLayerNorm(x, residual, gamma, beta, out, eps): out = LayerNorm(x + residual) * gamma + beta,
// rows of gamma's width; x, residual and out Float32Arrays of equal length (out may be either input).
napi_value AddLayerNorm(napi_env env, napi_callback_info info) {
  napi_value argv[6];
  if (!readArgs(env, info, 6, argv)) return fail(env, "addLayerNorm: expected (x, residual, gamma, beta, out, eps)");
  void *x, *residual, *gamma, *beta, *out;
  size_t xLen, rLen, gLen, bLen, oLen;
  double eps;
  if (!typed(env, argv[0], napi_float32_array, &x, &xLen) || !typed(env, argv[1], napi_float32_array, &residual, &rLen) ||
      !typed(env, argv[2], napi_float32_array, &gamma, &gLen) || !typed(env, argv[3], napi_float32_array, &beta, &bLen) ||
      !typed(env, argv[4], napi_float32_array, &out, &oLen) || napi_get_value_double(env, argv[5], &eps) != napi_ok)
    return fail(env, "addLayerNorm: expected Float32Arrays (x, residual, gamma, beta, out) and a number eps");
  if (gLen == 0 || bLen != gLen || xLen % gLen || rLen != xLen || oLen != xLen) return fail(env, "addLayerNorm: x, residual, out must be rows of gamma's (= beta's) width");
  if (!bf16Available()) return fail(env, "addLayerNorm: this CPU has no AVX512-BF16");
#ifdef ORTLLM_BF16_X86
  addLayerNorm((const float*)x, (const float*)residual, (const float*)gamma, (const float*)beta, (float*)out, (int)(xLen / gLen), (int)gLen, (float)eps);
#endif
  return nullptr;
}

napi_value Bf16Available(napi_env env) {
  napi_value v;
  napi_get_boolean(env, bf16Available(), &v);
  return v;
}

}  // namespace ortllm
