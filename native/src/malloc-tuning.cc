// glibc malloc tuning for the server process (its peak RSS). onnxruntime runs without its
// CPU arena (src/model/runner/session.ts), so each step's activations come from malloc. glibc
// serves blocks above its mmap threshold with mmap and returns them to the OS on free, but the
// threshold starts at 128 KiB and rises to the largest block freed so far (up to 32 MiB): after
// the first large step, activations of every size land in the heap arenas of ORT's and the
// kernel's threads, where freed memory stays resident. A fixed threshold (mallopt) stops it rising.
// Fixing it also fixes the trim threshold (free memory an arena keeps at its top) at 128 KiB,
// which glibc would have raised with it, to twice the mmap threshold: set that too, so small
// buffers freed and taken again every step are not handed back and faulted in each time.
#include <node_api.h>

#include <cstdlib>  // defines __GLIBC__ on glibc

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace {

// setMmapThreshold(bytes): mmap threshold `bytes`, trim threshold 2 * bytes; true when the
// allocator took them (glibc), false elsewhere.
napi_value SetMmapThreshold(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr);
  int64_t bytes = 0;
  bool ok = argc == 1 && napi_get_value_int64(env, argv[0], &bytes) == napi_ok && bytes > 0 && bytes <= (int64_t)1 << 30;
#if defined(__GLIBC__)
  ok = ok && mallopt(M_MMAP_THRESHOLD, (int)bytes) == 1 && mallopt(M_TRIM_THRESHOLD, (int)(2 * bytes)) == 1;
#else
  ok = false;
#endif
  napi_value result;
  napi_get_boolean(env, ok, &result);
  return result;
}

// trim(): hands the free pages of every malloc arena back to the OS; true when some were.
napi_value Trim(napi_env env, napi_callback_info) {
#if defined(__GLIBC__)
  bool released = malloc_trim(0) == 1;
#else
  bool released = false;
#endif
  napi_value result;
  napi_get_boolean(env, released, &result);
  return result;
}

napi_value Init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"setMmapThreshold", nullptr, SetMmapThreshold, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"trim", nullptr, Trim, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
  return exports;
}

}  // namespace

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
