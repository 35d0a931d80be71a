// Reading a call's arguments in the addon's N-API functions (attention.cc, q8-gemm.cc): typed
// arrays, int32s and an exact argument count, and throwing the TypeError a bad call gets.
#pragma once
#include <node_api.h>

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

}  // namespace ortllm::napi
