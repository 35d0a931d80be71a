// The addon's one thread pool (thread-pool.cc), shared by every kernel that splits its work:
// attention, the Q8_0 and bfloat16 GEMMs, the encoder attention.
#pragma once

#include <functional>

namespace ortllm {

// Runs fn(0 .. n-1) on the calling thread and, with `helpers`, the pool's helpers; returns when
// all are done.
void parallelFor(int n, const std::function<void(int)>& fn, bool helpers = true);

// How many threads parallelFor runs on (the caller included).
int parallelThreads();

// Whether helpers and caller spin between jobs (setParallelThreads' spinMicros > 0).
bool poolSpins();

// n threads (the caller plus n - 1 helpers), spinning spinMicros between jobs before they sleep.
void setParallelThreads(int n, int spinMicros);

}  // namespace ortllm
