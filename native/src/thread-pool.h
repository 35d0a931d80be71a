// The addon's one thread pool (defined in attention.cc), shared by every kernel that splits its
// work: attention, the Q8_0 and bfloat16 GEMMs, the encoder attention.
#pragma once

#include <functional>

namespace ortllm {

// Runs fn(0 .. n-1) on the calling thread and the pool's helpers; returns when all are done.
void parallelFor(int n, const std::function<void(int)>& fn);

// How many threads parallelFor runs on (the caller included).
int parallelThreads();

}  // namespace ortllm
