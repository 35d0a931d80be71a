// ortllm_native: registers every export of the addon, and reads the arguments of the attention,
// cache-writer, pool, argmax and free calls (addon-linear.cc reads the linear algebra's). The
// kernels themselves know nothing of Node.
#include <node_api.h>

#include "argmax.h"
#include "attention.h"
#include "cpu-features.h"
#include "napi-args.h"
#include "thread-pool.h"

#include <climits>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace ortllm {
// addon-linear.cc: the linear-algebra exports.
napi_value Q8Pack(napi_env env, napi_callback_info info);
napi_value Q8Gemm(napi_env env, napi_callback_info info);
napi_value SiluMul(napi_env env, napi_callback_info info);
napi_value GeluTanhMul(napi_env env, napi_callback_info info);
napi_value Rope(napi_env env, napi_callback_info info);
napi_value LoraAdd(napi_env env, napi_callback_info info);
napi_value LoraAddSlots(napi_env env, napi_callback_info info);
napi_value Q8Available(napi_env env);
napi_value Bf16Pack(napi_env env, napi_callback_info info);
napi_value Bf16Gemm(napi_env env, napi_callback_info info);
napi_value AddLayerNorm(napi_env env, napi_callback_info info);
napi_value Bf16EncoderAttention(napi_env env, napi_callback_info info);
napi_value Bf16Available(napi_env env);
napi_value AddRmsNorm(napi_env env, napi_callback_info info);
}  // namespace ortllm

namespace {

using namespace ortllm::napi;
using ortllm::KvType;

// The K and V cache arguments: typed arrays of one type and length. Null when they are, else why not.
const char* readCachePair(napi_env env, napi_value kArg, napi_value vArg, Typed* k, Typed* v) {
  if (!typed(env, kArg, k)) return "kCache must be a Float32Array, Uint16Array or Uint8Array";
  if (!typed(env, vArg, v) || v->type != k->type || v->length != k->length) return "vCache must match kCache";
  return nullptr;
}

// The cache's element type: a Float32Array holds float32; a Uint16Array half or bfloat16, a
// Uint8Array E4M3 or E5M2, as `code` says.
bool kvTypeOf(const Typed& t, int32_t code, KvType* out) {
  if (t.type == napi_float32_array && code == ortllm::kF32) *out = ortllm::kF32;
  else if (t.type == napi_uint16_array && (code == ortllm::kF16 || code == ortllm::kBF16)) *out = (KvType)code;
  else if (t.type == napi_uint8_array && (code == ortllm::kE4M3 || code == ortllm::kE5M2)) *out = (KvType)code;
  else return false;
  return true;
}

// An optional argument: absent or undefined.
bool absent(napi_env env, napi_value v) {
  napi_valuetype t;
  return napi_typeof(env, v, &t) != napi_ok || t == napi_undefined;
}

// attention(q, out, kCache, vCache, seqs, tables, dims[numHeads, numKvHeads, headDim, blockSize, kvType], scale,
//           window = 0, softcap = 0, sinks: Float32Array | null = null)
napi_value Attention(napi_env env, napi_callback_info info) {
  napi_value argv[11];
  size_t argc = 11;
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc < 8 || argc > 11) return fail(env, "attention: expected 8 to 11 arguments");
  Typed q, out, k, v, seqs, tables, dims;
  if (!typed(env, argv[0], &q) || q.type != napi_float32_array) return fail(env, "attention: q must be a Float32Array");
  if (!typed(env, argv[1], &out) || out.type != napi_float32_array) return fail(env, "attention: out must be a Float32Array");
  if (const char* why = readCachePair(env, argv[2], argv[3], &k, &v)) return fail(env, (std::string("attention: ") + why).c_str());
  if (!typed(env, argv[4], &seqs) || seqs.type != napi_int32_array || seqs.length % 4) return fail(env, "attention: seqs must be an Int32Array of 4 per sequence");
  if (!typed(env, argv[5], &tables) || tables.type != napi_int32_array) return fail(env, "attention: tables must be an Int32Array");
  if (!typed(env, argv[6], &dims) || dims.type != napi_int32_array || dims.length != 5)
    return fail(env, "attention: dims must be Int32Array [numHeads, numKvHeads, headDim, blockSize, kvType]");
  KvType kvType;
  if (!kvTypeOf(k, ((const int32_t*)dims.data)[4], &kvType)) return fail(env, "attention: kvType does not match the cache arrays");
  double scale;
  if (napi_get_value_double(env, argv[7], &scale) != napi_ok) return fail(env, "attention: scale must be a number");
  int32_t window = 0;
  double softcap = 0;
  Typed sinks;
  if (argc > 8 && !absent(env, argv[8])) {
    double w;
    if (napi_get_value_double(env, argv[8], &w) != napi_ok || w != std::floor(w) || w < 0 || w > INT32_MAX)
      return fail(env, "attention: window must be an integer >= 0");
    window = (int32_t)w;
  }
  if (argc > 9 && !absent(env, argv[9]) && (napi_get_value_double(env, argv[9], &softcap) != napi_ok || !std::isfinite(softcap) || softcap < 0))
    return fail(env, "attention: softcap must be a finite number >= 0");
  if (argc > 10 && !absent(env, argv[10])) {
    napi_valuetype t;
    napi_typeof(env, argv[10], &t);
    if (t != napi_null && (!typed(env, argv[10], &sinks) || sinks.type != napi_float32_array))
      return fail(env, "attention: sinks must be a Float32Array or null");
    if (t != napi_null && sinks.length != (size_t)((const int32_t*)dims.data)[0])
      return fail(env, "attention: sinks must hold one value per query head (numHeads)");
  }
  ortllm::AttentionCall call{(const float*)q.data, q.length, (float*)out.data, out.length, k.data, v.data, k.length, kvType,
                             (const int32_t*)seqs.data, seqs.length / 4, (const int32_t*)tables.data, tables.length,
                             (const int32_t*)dims.data, (float)scale};
  call.window = window;
  call.softcap = (float)softcap;
  call.sinks = (const float*)sinks.data;
  call.sinksLength = sinks.length;
  if (const char* why = ortllm::pagedAttention(call)) return fail(env, why);
  return nullptr;
}

// writeKv(newK, newV, kCache, vCache, slots, kvType): rows of [n, kvDim] into cache rows slots[i].
napi_value WriteKv(napi_env env, napi_callback_info info) {
  napi_value argv[6];
  if (!readArgs(env, info, 6, argv)) return fail(env, "writeKv: expected 6 arguments");
  Typed nk, nv, k, v, slots;
  int32_t code = 0;
  if (!typed(env, argv[0], &nk) || nk.type != napi_float32_array) return fail(env, "writeKv: newK must be a Float32Array");
  if (!typed(env, argv[1], &nv) || nv.type != napi_float32_array || nv.length != nk.length) return fail(env, "writeKv: newV must match newK");
  if (const char* why = readCachePair(env, argv[2], argv[3], &k, &v)) return fail(env, (std::string("writeKv: ") + why).c_str());
  KvType kvType;
  if (napi_get_value_int32(env, argv[5], &code) != napi_ok || !kvTypeOf(k, code, &kvType)) return fail(env, "writeKv: kvType does not match the cache arrays");
  if (!typed(env, argv[4], &slots) || slots.type != napi_int32_array || slots.length == 0 || nk.length % slots.length)
    return fail(env, "writeKv: slots must be an Int32Array, one per new row");
  const size_t n = slots.length;
  if (const char* why = ortllm::writeKvRows((const float*)nk.data, (const float*)nv.data, nk.length / n, k.data, v.data, k.length, kvType,
                                            (const int32_t*)slots.data, n))
    return fail(env, why);
  return nullptr;
}

// setThreads(n, spinMicros = 0): threads used for attention and the addon's other kernels (the
// caller plus n - 1 helpers), and how long helpers and caller spin between calls (thread-pool.cc).
napi_value SetThreads(napi_env env, napi_callback_info info) {
  napi_value argv[2];
  size_t argc = 2;
  int32_t n = 1, spin = 0;
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  if (argc < 1 || napi_get_value_int32(env, argv[0], &n) != napi_ok || n < 1 || n > 256) return fail(env, "setThreads: n must be an integer in 1..256");
  if (argc >= 2 && (napi_get_value_int32(env, argv[1], &spin) != napi_ok || spin < 0 || spin > 10000))
    return fail(env, "setThreads: spinMicros must be an integer in 0..10000");
  ortllm::setParallelThreads(n, spin);
  return nullptr;
}

// setSimd(name): the kernel attention runs ('portable', 'avx2', 'avx512' or 'avx512bf16'), at most the best this
// CPU has; returns the one now in use. For tests and benchmarks: each level against the others.
napi_value SetSimd(napi_env env, napi_callback_info info) {
  const int level = simdArg(env, info, 4, ortllm::attentionBestSimd(), "setSimd: expected 'portable', 'avx2', 'avx512' or 'avx512bf16'");
  if (level < 0) return nullptr;
  ortllm::setAttentionSimd((ortllm::cpu::SimdLevel)level);
  return simdName(env, ortllm::attentionSimd());
}

// argmax(values, offset, count): the index (from offset) of the largest of values[offset .. offset + count).
napi_value Argmax(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  bool isTyped = false;
  napi_typedarray_type type;
  size_t length = 0;
  void* data = nullptr;
  napi_value buffer;
  size_t byteOffset = 0;
  int64_t offset = 0, count = 0;
  if (argc != 3 || napi_is_typedarray(env, argv[0], &isTyped) != napi_ok || !isTyped ||
      napi_get_typedarray_info(env, argv[0], &type, &length, &data, &buffer, &byteOffset) != napi_ok || type != napi_float32_array) {
    napi_throw_type_error(env, nullptr, "argmax: expected (values: Float32Array, offset, count)");
    return nullptr;
  }
  if (napi_get_value_int64(env, argv[1], &offset) != napi_ok || napi_get_value_int64(env, argv[2], &count) != napi_ok || offset < 0 || count < 1 ||
      count > INT32_MAX || (uint64_t)(offset + count) > length) {
    napi_throw_range_error(env, nullptr, "argmax: offset and count must name a non-empty range of values");
    return nullptr;
  }
  const float* row = (const float*)data + offset;
  const int32_t best = ortllm::argmaxRow(row, (int32_t)count);
  napi_value result;
  napi_create_int32(env, best, &result);
  return result;
}

// free(...arrays): detaches each typed array's ArrayBuffer, which frees its memory now instead of
// when V8 next collects it. A step's activations (ORT copies every output into a new buffer) are
// tens of MB each at prefill and dead after the step; left to the collector they pile up across
// layers. The caller holds no other view of these buffers; other arguments are ignored.
napi_value FreeBuffers(napi_env env, napi_callback_info info) {
  size_t argc = 0;
  napi_get_cb_info(env, info, &argc, nullptr, nullptr, nullptr);
  std::vector<napi_value> argv(argc);
  napi_get_cb_info(env, info, &argc, argv.data(), nullptr, nullptr);
  for (napi_value value : argv) {
    bool isTyped = false;
    if (napi_is_typedarray(env, value, &isTyped) != napi_ok || !isTyped) continue;
    napi_value buffer;
    if (napi_get_typedarray_info(env, value, nullptr, nullptr, nullptr, &buffer, nullptr) != napi_ok) continue;
    bool detached = true;
    if (napi_is_detached_arraybuffer(env, buffer, &detached) == napi_ok && !detached) napi_detach_arraybuffer(env, buffer);
  }
  return nullptr;
}

napi_value Init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      method("attention", Attention),
      method("writeKv", WriteKv),
      method("setThreads", SetThreads),
      method("setSimd", SetSimd),
      method("free", FreeBuffers),
      method("argmax", Argmax),
      method("q8Pack", ortllm::Q8Pack),
      method("q8Gemm", ortllm::Q8Gemm),
      method("siluMul", ortllm::SiluMul),
      method("geluTanhMul", ortllm::GeluTanhMul),
      method("rope", ortllm::Rope),
      method("loraAdd", ortllm::LoraAdd),
      method("loraAddSlots", ortllm::LoraAddSlots),
      method("bf16Pack", ortllm::Bf16Pack),
      method("bf16Gemm", ortllm::Bf16Gemm),
      method("addLayerNorm", ortllm::AddLayerNorm),
      method("addRmsNorm", ortllm::AddRmsNorm),
      method("bf16EncoderAttention", ortllm::Bf16EncoderAttention),
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
  napi_value simd;
  napi_get_boolean(env, ortllm::attentionBestSimd() >= ortllm::cpu::kAvx2, &simd);
  napi_set_named_property(env, exports, "simd", simd);
  napi_set_named_property(env, exports, "q8Available", ortllm::Q8Available(env));
  napi_set_named_property(env, exports, "bf16Available", ortllm::Bf16Available(env));
  return exports;
}

}  // namespace

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
