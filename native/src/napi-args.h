// Reading a call's arguments in the addons' N-API functions: typed arrays, int32s, an exact
// argument count, a SIMD level's name, and throwing the TypeError a bad call gets.
#pragma once
#include <node_api.h>

#include "cpu-features.h"

#include <cstddef>
#include <cstdint>

namespace ortllm::napi {

struct Typed {
  void* data = nullptr;
  size_t length = 0;
  napi_typedarray_type type = napi_int8_array;
};

inline bool typed(napi_env env, napi_value v, Typed* out) {
  bool is = false;
  if (napi_is_typedarray(env, v, &is) != napi_ok || !is) return false;
  napi_value buffer;
  size_t offset;
  return napi_get_typedarray_info(env, v, &out->type, &out->length, &out->data, &buffer, &offset) == napi_ok;
}

// A typed array of type `want`: its data and element count.
inline bool typed(napi_env env, napi_value v, napi_typedarray_type want, void** data, size_t* length) {
  Typed t;
  if (!typed(env, v, &t) || t.type != want) return false;
  *data = t.data;
  *length = t.length;
  return true;
}

// An Int32Array of exactly `count` values, or null.
inline const int32_t* int32s(napi_env env, napi_value v, size_t count) {
  void* data;
  size_t length;
  return typed(env, v, napi_int32_array, &data, &length) && length == count ? (const int32_t*)data : nullptr;
}

inline napi_value fail(napi_env env, const char* message) {
  napi_throw_type_error(env, nullptr, message);
  return nullptr;
}

// Exactly `n` arguments into argv.
inline bool readArgs(napi_env env, napi_callback_info info, size_t n, napi_value* argv) {
  size_t argc = n;
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  return argc == n;
}

// `count` int32 arguments from argv into out.
inline bool ints(napi_env env, const napi_value* argv, int count, int32_t* out) {
  for (int i = 0; i < count; i++)
    if (napi_get_value_int32(env, argv[i], &out[i]) != napi_ok) return false;
  return true;
}

// An addon export table's entry: a function under `name`.
inline napi_property_descriptor method(const char* name, napi_callback fn) {
  return {name, nullptr, fn, nullptr, nullptr, nullptr, napi_default, nullptr};
}

// A setSimd-style call's one argument: the level it names among the first `levels`, clamped to
// `best`; -1 (with `usage` thrown as a TypeError) when it names none.
inline int simdArg(napi_env env, napi_callback_info info, int levels, cpu::SimdLevel best, const char* usage) {
  napi_value argv[1];
  char name[16] = {0};
  size_t len = 0;
  const int level = readArgs(env, info, 1, argv) && napi_get_value_string_utf8(env, argv[0], name, sizeof(name), &len) == napi_ok
                        ? cpu::simdLevelNamed(name, levels, best)
                        : -1;
  if (level < 0) fail(env, usage);
  return level;
}

inline napi_value simdName(napi_env env, cpu::SimdLevel level) {
  napi_value out;
  napi_create_string_utf8(env, cpu::kSimdNames[level], NAPI_AUTO_LENGTH, &out);
  return out;
}

}  // namespace ortllm::napi
