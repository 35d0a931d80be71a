// The calling thread's Linux scheduling policy (issue 16, single-stream TPOT). The HTTP thread
// sets itself to SCHED_BATCH once the engine worker runs (src/engine/worker/thread-scheduling.ts
// says why and what it measured): a SCHED_BATCH thread that wakes up does not preempt the thread
// running on the CPU it is woken on, so the engine worker's per-step message no longer hands the
// worker's core to the HTTP thread in the middle of the step loop. The policy is per thread on
// Linux (sched_setscheduler with pid 0 is the calling thread) and threads started afterwards
// inherit it; threads started before keep theirs.
#include <node_api.h>

#if defined(__linux__)
#include <sched.h>
#endif

namespace {

// setBatch(): the calling thread to SCHED_BATCH (nice unchanged); true when the kernel took it.
napi_value SetBatch(napi_env env, napi_callback_info) {
#if defined(__linux__) && defined(SCHED_BATCH)
  sched_param param{};
  param.sched_priority = 0;
  bool ok = sched_setscheduler(0, SCHED_BATCH, &param) == 0;
#else
  bool ok = false;
#endif
  napi_value result;
  napi_get_boolean(env, ok, &result);
  return result;
}

// policy(): the calling thread's policy: 'other', 'batch', 'idle', 'fifo', 'rr' or 'unknown'.
napi_value Policy(napi_env env, napi_callback_info) {
  const char* name = "unknown";
#if defined(__linux__)
  switch (sched_getscheduler(0)) {
    case SCHED_OTHER: name = "other"; break;
    case SCHED_BATCH: name = "batch"; break;
    case SCHED_IDLE: name = "idle"; break;
    case SCHED_FIFO: name = "fifo"; break;
    case SCHED_RR: name = "rr"; break;
    default: break;
  }
#endif
  napi_value result;
  napi_create_string_utf8(env, name, NAPI_AUTO_LENGTH, &result);
  return result;
}

napi_value Init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"setBatch", nullptr, SetBatch, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"policy", nullptr, Policy, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
  return exports;
}

}  // namespace

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
