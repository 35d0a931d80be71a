// The addon's free(...arrays), registered with the attention functions (attention.cc's Init).
#include <node_api.h>

#include <vector>

namespace ortllm {

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

}  // namespace ortllm
