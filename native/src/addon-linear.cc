// ortllm_native's linear-algebra exports: reads the arguments of the Q8_0 and bfloat16 GEMMs, the
// norms, RoPE, SwiGLU and the encoder attention, and wraps q8Pack's weights in huge pages for V8.
#include <node_api.h>

#include "bf16-gemm.h"
#include "huge-page-arena.h"
#include "lora-add.h"
#include "napi-args.h"
#include "q8-gemm.h"
#include "rms-norm.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace ortllm {
namespace {

using namespace ortllm::napi;

HugePageArena weightArena;  // q8Pack's packed weights (huge-page-arena.h)

// The optional last argument of q8Gemm and siluMul: 'avx2' or 'avx512vnni' (tests and benches
// run the AVX2 kernel on a VNNI CPU with it); absent, the best this CPU has. False when it names
// neither or one this CPU lacks.
bool kernelArg(napi_env env, napi_value v, Q8Kernel* out) {
  char name[16];
  size_t len;
  if (napi_get_value_string_utf8(env, v, name, sizeof name, &len) != napi_ok) return false;
  const Q8Kernel best = q8BestKernel();
  if (std::strcmp(name, "avx512vnni") == 0 && best == Q8Kernel::vnni) *out = Q8Kernel::vnni;
  else if (std::strcmp(name, "avx2") == 0 && best != Q8Kernel::none) *out = Q8Kernel::avx2;
  else return false;
  return true;
}

// readArgs for `n` arguments and an optional kernel name after them.
bool readArgsAndKernel(napi_env env, napi_callback_info info, size_t n, napi_value* argv, Q8Kernel* kernel) {
  size_t argc = n + 1;
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  *kernel = q8BestKernel();
  return argc == n || (argc == n + 1 && kernelArg(env, argv[n], kernel));
}

}  // namespace

// q8Pack(codes Uint8Array [n * k] (q + 128, row-major [n, k]), scales Float32Array [n * k / 32], n, k): the packed Uint8Array.
napi_value Q8Pack(napi_env env, napi_callback_info info) {
  napi_value argv[4];
  int32_t dims[2];
  if (!readArgs(env, info, 4, argv) || !ints(env, argv + 2, 2, dims)) return fail(env, "q8Pack: expected (codes, scales, n, k)");
  const int n = dims[0], k = dims[1];
  if (n <= 0 || k <= 0 || k % kQ8Block) return fail(env, "q8Pack: n must be positive and k a positive multiple of 32");
  void *codesData, *scalesData;
  size_t codesLen, scalesLen;
  if (!typed(env, argv[0], napi_uint8_array, &codesData, &codesLen) || codesLen != (size_t)n * k) return fail(env, "q8Pack: codes must be a Uint8Array of n * k");
  if (!typed(env, argv[1], napi_float32_array, &scalesData, &scalesLen) || scalesLen != (size_t)n * (k / kQ8Block))
    return fail(env, "q8Pack: scales must be a Float32Array of n * k / 32");
  const uint8_t* codes = (const uint8_t*)codesData;
  const float* scales = (const float*)scalesData;
  const size_t bytes = q8PackedBytes(n, k);
  void* outData;
  napi_value buffer, out;
  HugePageArena::Slab* slab = nullptr;
  outData = weightArena.allocate(bytes, &slab);
  if (outData) {
    // V8 counts an ordinary ArrayBuffer's bytes as external memory, which paces its collections
    // (the loader's transient copies go sooner); this one is reported by hand, for the same pacing.
    struct Piece {
      HugePageArena::Slab* slab;
      int64_t bytes;
    };
    auto release = [](napi_env finalizing, void*, void* hint) {
      auto* piece = (Piece*)hint;
      int64_t ignored;
      napi_adjust_external_memory(finalizing, -piece->bytes, &ignored);
      weightArena.release(piece->slab);
      delete piece;
    };
    auto* piece = new Piece{slab, (int64_t)bytes};
    if (napi_create_external_arraybuffer(env, outData, bytes, release, piece, &buffer) != napi_ok) {
      weightArena.release(slab);
      delete piece;
      return fail(env, "q8Pack: cannot wrap the packed weights");
    }
    int64_t ignored;
    napi_adjust_external_memory(env, (int64_t)bytes, &ignored);
  } else if (napi_create_arraybuffer(env, bytes, &outData, &buffer) != napi_ok) {
    return fail(env, "q8Pack: out of memory");
  }
  q8Pack(codes, scales, n, k, (uint8_t*)outData);
  napi_create_typedarray(env, napi_uint8_array, bytes, buffer, 0, &out);
  return out;
}

// q8Gemm(packed, x Float32Array [m * k], y Float32Array [m * n], m, n, k): y = x W^T.
napi_value Q8Gemm(napi_env env, napi_callback_info info) {
  napi_value argv[7];
  int32_t dims[3];
  Q8Kernel kernel;
  if (!readArgsAndKernel(env, info, 6, argv, &kernel) || !ints(env, argv + 3, 3, dims))
    return fail(env, "q8Gemm: expected (packed, x, y, m, n, k[, 'avx2' | 'avx512vnni' where this CPU has it])");
  const int m = dims[0], n = dims[1], k = dims[2];
  if (m < 0 || n <= 0 || k <= 0 || k % kQ8Block) return fail(env, "q8Gemm: bad m, n, k");
  void *packed, *x, *y;
  size_t packedLen, xLen, yLen;
  const size_t want = q8PackedBytes(n, k);
  if (!typed(env, argv[0], napi_uint8_array, &packed, &packedLen) || packedLen != want) return fail(env, "q8Gemm: packed does not match n, k");
  if (!typed(env, argv[1], napi_float32_array, &x, &xLen) || xLen != (size_t)m * k) return fail(env, "q8Gemm: x must be a Float32Array of m * k");
  if (!typed(env, argv[2], napi_float32_array, &y, &yLen) || yLen != (size_t)m * n) return fail(env, "q8Gemm: y must be a Float32Array of m * n");
  if (kernel == Q8Kernel::none) return fail(env, "q8Gemm: this CPU has neither AVX512-VNNI nor AVX2");
  q8Gemm(kernel, (const uint8_t*)packed, (const float*)x, (float*)y, m, n, k);
  return nullptr;
}

// siluMul / geluTanhMul(gu Float32Array [rows * 2 * width], out Float32Array [rows * width], width):
// silu(gate) * up (gelu_tanh(gate) * up) per row.
static napi_value GatedMul(napi_env env, napi_callback_info info, const char* name, bool geluTanh) {
  napi_value argv[4];
  int32_t width;
  Q8Kernel kernel;
  const std::string n(name);
  if (!readArgsAndKernel(env, info, 3, argv, &kernel) || !ints(env, argv + 2, 1, &width) || width <= 0)
    return fail(env, (n + ": expected (gu, out, width > 0[, 'avx2' | 'avx512vnni' where this CPU has it])").c_str());
  void *gu, *out;
  size_t guLen, outLen;
  if (!typed(env, argv[0], napi_float32_array, &gu, &guLen) || guLen % (2 * (size_t)width)) return fail(env, (n + ": gu must be a Float32Array of rows * 2 * width").c_str());
  if (!typed(env, argv[1], napi_float32_array, &out, &outLen) || 2 * outLen != guLen) return fail(env, (n + ": out must be a Float32Array of rows * width").c_str());
  if (kernel == Q8Kernel::none) return fail(env, (n + ": this CPU has neither AVX512-VNNI nor AVX2").c_str());
  q8SiluMul(kernel, (const float*)gu, (float*)out, (int)(outLen / width), width, geluTanh);
  return nullptr;
}

napi_value SiluMul(napi_env env, napi_callback_info info) { return GatedMul(env, info, "siluMul", false); }

napi_value GeluTanhMul(napi_env env, napi_callback_info info) { return GatedMul(env, info, "geluTanhMul", true); }

// loraAdd's and loraAddSlots' six arguments and the optional build name after them (the best
// build when it is left out); false for another count or an unknown name.
static bool loraArgs(napi_env env, napi_callback_info info, napi_value* argv, cpu::SimdLevel* level) {
  size_t argc = 7;
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  *level = loraBestSimd();
  if (argc == 6) return true;
  if (argc != 7) return false;
  char name[16] = {0};
  size_t len = 0;
  const int named = napi_get_value_string_utf8(env, argv[6], name, sizeof name, &len) == napi_ok ? cpu::simdLevelNamed(name, 3, *level) : -1;
  if (named < 0) return false;
  *level = (cpu::SimdLevel)named;
  return true;
}

// loraAdd(a Float32Array [rank * in], bp Float32Array (B packed, lora-add.h), x Float32Array, y
// Float32Array, rows Int32Array [m], dims Int32Array [in, out, rank, yStride, yOffset][, simd
// 'portable' | 'avx2' | 'avx512']): y[row * yStride + yOffset + j] += ((x[row] Aᵀ) Bᵀ)[j] for each
// row (lora-add.h); simd picks a lower build than the best (tests compare them).
napi_value LoraAdd(napi_env env, napi_callback_info info) {
  napi_value argv[7];
  cpu::SimdLevel level;
  if (!loraArgs(env, info, argv, &level)) return fail(env, "loraAdd: expected (a, bp, x, y, rows, dims[, 'portable' | 'avx2' | 'avx512'])");
  const int32_t* d = int32s(env, argv[5], 5);
  if (!d || d[0] <= 0 || d[1] <= 0 || d[2] <= 0 || d[4] < 0 || d[3] < d[1] + d[4])
    return fail(env, "loraAdd: dims must be an Int32Array [in, out, rank, yStride >= yOffset + out, yOffset >= 0]");
  const size_t in = d[0], out = d[1], rank = d[2], stride = d[3], offset = d[4];
  const size_t packedLen = (out + kLoraCols - 1) / kLoraCols * kLoraCols * rank;
  void *a, *bp, *x, *y, *rowData;
  size_t aLen, bpLen, xLen, yLen, m;
  if (!typed(env, argv[0], napi_float32_array, &a, &aLen) || aLen != rank * in || !typed(env, argv[1], napi_float32_array, &bp, &bpLen) || bpLen != packedLen)
    return fail(env, "loraAdd: a must be a Float32Array of rank * in and bp of rank * out rounded up to 64 columns");
  if (!typed(env, argv[2], napi_float32_array, &x, &xLen) || !typed(env, argv[3], napi_float32_array, &y, &yLen)) return fail(env, "loraAdd: x and y must be Float32Arrays");
  if (!typed(env, argv[4], napi_int32_array, &rowData, &m) || m == 0) return fail(env, "loraAdd: rows must be a non-empty Int32Array");
  const int32_t* rows = (const int32_t*)rowData;
  for (size_t i = 0; i < m; i++)
    if (rows[i] < 0 || (size_t)(rows[i] + 1) * in > xLen || (size_t)rows[i] * stride + offset + out > yLen) return fail(env, "loraAdd: a row is outside x or y");
  loraAdd(level, (const float*)x, rows, (int)m, (const float*)a, (const float*)bp, (int)in, (int)out, (int)rank, (float*)y, stride, offset);
  return nullptr;
}

// loraAddSlots(as Float32Array[], bps Float32Array[], x, y, rows Int32Array (every slot's rows, slot
// after slot), dims Int32Array [in, out, yStride, yOffset, then per slot rank, row count][, simd]):
// loraAdd for each slot (lora-add.h's loraAddSlots), in one pass over the pool.
napi_value LoraAddSlots(napi_env env, napi_callback_info info) {
  napi_value argv[7];
  cpu::SimdLevel level;
  if (!loraArgs(env, info, argv, &level)) return fail(env, "loraAddSlots: expected (as, bps, x, y, rows, dims[, 'portable' | 'avx2' | 'avx512'])");
  uint32_t n = 0, nb = 0;
  bool isArray = false, bIsArray = false;
  napi_is_array(env, argv[0], &isArray);
  napi_is_array(env, argv[1], &bIsArray);
  if (!isArray || !bIsArray || napi_get_array_length(env, argv[0], &n) != napi_ok || napi_get_array_length(env, argv[1], &nb) != napi_ok || n == 0 || n != nb)
    return fail(env, "loraAddSlots: as and bps must be arrays of as many Float32Arrays, at least one");
  const int32_t* d = int32s(env, argv[5], 4 + 2 * (size_t)n);
  if (!d || d[0] <= 0 || d[1] <= 0 || d[3] < 0 || d[2] < d[1] + d[3])
    return fail(env, "loraAddSlots: dims must be an Int32Array [in, out, yStride >= yOffset + out, yOffset >= 0, then rank and row count per slot]");
  const size_t in = d[0], out = d[1], stride = d[2], offset = d[3];
  void *x, *y, *rowData;
  size_t xLen, yLen, m;
  if (!typed(env, argv[2], napi_float32_array, &x, &xLen) || !typed(env, argv[3], napi_float32_array, &y, &yLen)) return fail(env, "loraAddSlots: x and y must be Float32Arrays");
  if (!typed(env, argv[4], napi_int32_array, &rowData, &m)) return fail(env, "loraAddSlots: rows must be an Int32Array");
  const int32_t* rows = (const int32_t*)rowData;
  std::vector<LoraSlot> slots(n);
  size_t at = 0;
  for (uint32_t s = 0; s < n; s++) {
    const int rank = d[4 + 2 * s], count = d[5 + 2 * s];
    if (rank <= 0 || count <= 0 || at + count > m) return fail(env, "loraAddSlots: each slot needs a rank > 0 and rows > 0, within rows");
    napi_value av, bv;
    void *a, *bp;
    size_t aLen, bpLen;
    const size_t packedLen = (out + kLoraCols - 1) / kLoraCols * kLoraCols * rank;
    if (napi_get_element(env, argv[0], s, &av) != napi_ok || napi_get_element(env, argv[1], s, &bv) != napi_ok ||
        !typed(env, av, napi_float32_array, &a, &aLen) || aLen != (size_t)rank * in || !typed(env, bv, napi_float32_array, &bp, &bpLen) || bpLen != packedLen)
      return fail(env, "loraAddSlots: each a must be a Float32Array of rank * in and each bp of rank * out rounded up to 64 columns");
    slots[s] = {rows + at, count, (const float*)a, (const float*)bp, rank};
    at += count;
  }
  if (at != m) return fail(env, "loraAddSlots: the slots' row counts must add up to rows.length");
  for (size_t i = 0; i < m; i++)
    if (rows[i] < 0 || (size_t)(rows[i] + 1) * in > xLen || (size_t)rows[i] * stride + offset + out > yLen) return fail(env, "loraAddSlots: a row is outside x or y");
  loraAddSlots(level, (const float*)x, slots.data(), (int)n, (int)in, (int)out, (float*)y, stride, offset);
  return nullptr;
}

// rope(x Float32Array [rows * heads * headDim], cos, sin Float32Array [rows * rotaryDim / 2], heads, headDim[, rotaryDim]):
// in place, each head's first rotaryDim values (all by default) rotated as onnxruntime's
// RotaryEmbedding (interleaved 0, rotary_embedding_dim) does with row r's cos/sin:
// x1' = x1 cos - x2 sin, x2' = x2 cos + x1 sin (x1, x2 the halves of those values); the rest pass.
napi_value Rope(napi_env env, napi_callback_info info) {
  napi_value argv[6];
  size_t argc = 6;
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  int32_t dims[3];
  if ((argc != 5 && argc != 6) || !ints(env, argv + 3, (int)argc - 3, dims)) return fail(env, "rope: expected (x, cos, sin, heads, headDim[, rotaryDim])");
  if (argc == 5) dims[2] = dims[1];
  if (dims[0] <= 0 || dims[2] <= 0 || dims[2] % 2 || dims[2] > dims[1]) return fail(env, "rope: expected heads > 0 and an even rotaryDim <= headDim");
  const size_t heads = dims[0], headDim = dims[1], half = dims[2] / 2;
  void *x, *cs, *sn;
  size_t xLen, cosLen, sinLen;
  if (!typed(env, argv[0], napi_float32_array, &x, &xLen) || xLen % (heads * headDim)) return fail(env, "rope: x must be a Float32Array of rows * heads * headDim");
  const size_t rows = xLen / (heads * headDim);
  if (!typed(env, argv[1], napi_float32_array, &cs, &cosLen) || !typed(env, argv[2], napi_float32_array, &sn, &sinLen) || cosLen != rows * half || sinLen != cosLen)
    return fail(env, "rope: cos and sin must be Float32Arrays of rows * rotaryDim / 2");
  ropeRows((float*)x, (const float*)cs, (const float*)sn, rows, heads, headDim, (size_t)dims[2]);
  return nullptr;
}

napi_value Q8Available(napi_env env) {
  napi_value v;
  napi_get_boolean(env, q8BestKernel() != Q8Kernel::none, &v);
  return v;
}

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
  const size_t count = bf16PackedCount(n, k);
  void* outData;
  napi_value buffer, out;
  if (napi_create_arraybuffer(env, count * 2, &outData, &buffer) != napi_ok) return fail(env, "bf16Pack: out of memory");
  bf16Pack(w, n, k, (uint16_t*)outData);
  napi_create_typedarray(env, napi_uint16_array, count, buffer, 0, &out);
  return out;
}

// bf16Gemm(packed, x Float32Array [m * k], bias Float32Array [n] | null, y Float32Array [m * n], m, n, k, act): y = act(x W^T + bias).
napi_value Bf16Gemm(napi_env env, napi_callback_info info) {
  napi_value argv[8];
  int32_t dims[4];
  if (!readArgs(env, info, 8, argv) || !ints(env, argv + 4, 4, dims)) return fail(env, "bf16Gemm: expected (packed, x, bias, y, m, n, k, act)");
  const int m = dims[0], n = dims[1], k = dims[2], act = dims[3];
  if (m < 0 || n <= 0 || k <= 0 || act < 0 || act >= kBf16Activations) return fail(env, "bf16Gemm: bad m, n, k or act");
  void *packed, *x, *y, *bias = nullptr;
  size_t packedLen, xLen, yLen, biasLen;
  const size_t want = bf16PackedCount(n, k);
  if (!typed(env, argv[0], napi_uint16_array, &packed, &packedLen) || packedLen != want) return fail(env, "bf16Gemm: packed does not match n, k");
  if (!typed(env, argv[1], napi_float32_array, &x, &xLen) || xLen != (size_t)m * k) return fail(env, "bf16Gemm: x must be a Float32Array of m * k");
  napi_valuetype biasType;
  napi_typeof(env, argv[2], &biasType);
  if (biasType != napi_null && (!typed(env, argv[2], napi_float32_array, &bias, &biasLen) || biasLen != (size_t)n))
    return fail(env, "bf16Gemm: bias must be null or a Float32Array of n");
  if (!typed(env, argv[3], napi_float32_array, &y, &yLen) || yLen != (size_t)m * n) return fail(env, "bf16Gemm: y must be a Float32Array of m * n");
  if (!bf16Supported()) return fail(env, "bf16Gemm: this CPU has no AVX512-BF16");
  bf16Gemm((const uint16_t*)packed, (const float*)x, (const float*)bias, (float*)y, m, n, k, act);
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
  if (!bf16Supported()) return fail(env, "addLayerNorm: this CPU has no AVX512-BF16");
  bf16AddLayerNorm((const float*)x, (const float*)residual, (const float*)gamma, (const float*)beta, (float*)out, (int)(xLen / gLen), (int)gLen, (float)eps);
  return nullptr;
}

napi_value Bf16Available(napi_env env) {
  napi_value v;
  napi_get_boolean(env, bf16Supported(), &v);
  return v;
}

// bf16EncoderAttention(qkv Float32Array [B*S, 3H], lengths Int32Array [B], context Float32Array [B*S, H], seq, heads, scale).
napi_value Bf16EncoderAttention(napi_env env, napi_callback_info info) {
  napi_value argv[6];
  int32_t dims[2];
  double scale;
  if (!readArgs(env, info, 6, argv) || !ints(env, argv + 3, 2, dims) || napi_get_value_double(env, argv[5], &scale) != napi_ok)
    return fail(env, "bf16EncoderAttention: expected (qkv, lengths, context, seq, heads, scale)");
  const int seq = dims[0], heads = dims[1];
  void *qkv, *lengths, *context;
  size_t qkvLen, batch, contextLen;
  if (!typed(env, argv[0], napi_float32_array, &qkv, &qkvLen) || !typed(env, argv[1], napi_int32_array, &lengths, &batch) ||
      !typed(env, argv[2], napi_float32_array, &context, &contextLen))
    return fail(env, "bf16EncoderAttention: qkv and context must be Float32Arrays, lengths an Int32Array");
  if (seq <= 0 || heads <= 0 || batch == 0 || contextLen % ((size_t)batch * seq) != 0) return fail(env, "bf16EncoderAttention: context must be [batch * seq, hidden]");
  const int hidden = (int)(contextLen / ((size_t)batch * seq));
  if (hidden % heads != 0 || qkvLen != 3 * contextLen) return fail(env, "bf16EncoderAttention: qkv must be [batch * seq, 3 * hidden], hidden a multiple of heads");
  for (size_t b = 0; b < batch; b++)
    if (((const int32_t*)lengths)[b] < 0 || ((const int32_t*)lengths)[b] > seq) return fail(env, "bf16EncoderAttention: lengths must lie in 0..seq");
  if (!bf16Supported()) return fail(env, "bf16EncoderAttention: this CPU has no AVX512-BF16");
  bf16EncoderAttention((const float*)qkv, (const int32_t*)lengths, (int)batch, seq, heads, hidden, (float)scale, (float*)context);
  return nullptr;
}

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
  addRmsNorm(xs, res, (const float*)weight, o, rows, wLen, (float)eps);
  return nullptr;
}

}  // namespace ortllm
