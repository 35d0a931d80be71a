// The paged attention kernel and the KV cache writer (attention.cc, kv-write.cc), free of N-API:
// addon.cc reads a call's arguments and calls these.
#pragma once

#include "cpu-features.h"
#include "kv-type.h"

#include <cstddef>
#include <cstdint>

namespace ortllm {

struct AttentionCall {
  const float* q;  // [rows, numHeads * headDim]
  size_t qLength;
  float* out;  // as q
  size_t outLength;
  const void* k;  // [slots, numKvHeads * headDim] of kvType each
  const void* v;
  size_t kvLength;
  KvType kvType;
  const int32_t* seqs;  // per sequence: first row, row count, past length, offset into tables (entries sharing an offset: one sequence's rows attended one by one)
  size_t numSeqs;
  const int32_t* tables;
  size_t tablesLength;
  const int32_t* dims;  // numHeads, numKvHeads, headDim, blockSize
  float scale;
  int window = 0;                 // sliding window: a query at position p sees keys p - window + 1 .. p (0: all)
  float softcap = 0;              // > 0: each scaled score becomes softcap * tanh(score / softcap)
  const float* sinks = nullptr;   // [numHeads] or null: one logit per query head joining each softmax's denominator
  size_t sinksLength = 0;
};

// Causal attention of each sequence's query rows over its cache blocks, written to out, with the
// optional sliding window, logit soft-cap and sinks. Every index is checked first: nullptr, or
// why the call is bad (then nothing was read or written).
const char* pagedAttention(const AttentionCall& call);

// Rows i of newK / newV ([n, row] float32) into cache rows slots[i], narrowed to kvType;
// nullptr, or why not (then nothing was written).
const char* writeKvRows(const float* newK, const float* newV, size_t row, void* k, void* v, size_t kvLength, KvType kvType,
                        const int32_t* slots, size_t n);

// The attention kernel's builds: the best this CPU runs, the one in force, and a lower one for
// tests and benchmarks (clamped to the best).
cpu::SimdLevel attentionBestSimd();
cpu::SimdLevel attentionSimd();
void setAttentionSimd(cpu::SimdLevel level);

}  // namespace ortllm
