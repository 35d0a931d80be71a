// Long-lived buffers (the packed Q8_0 weights) in transparent huge pages, for q8Pack.
//
// Why: a decode step streams every weight once from memory (100M: ~110 MB a step), and on 4 KB
// pages each 4 KB of weights costs a page walk the hardware prefetcher does not cross. With
// 2 MB pages the batch-32 GEMMs got ~15-20% faster (docs/perf/q8-gemm.md). The machine's
// THP setting is `madvise` (the Linux default), so the memory must be asked for explicitly.
//
// How: buffers are cut from slabs of at least kSlabBytes, 2 MB-aligned and madvise(MADV_HUGEPAGE)
// before the first write, so a weight of 442 KB (100M's 768x768) shares huge pages with the next
// instead of rounding each weight up to 2 MB (resident memory grows by at most the partly used
// huge page at each slab's end). A slab is freed when the last buffer cut from it is collected
// (napi finalizer -> release). Where madvise or the aligned allocation is not available,
// allocate() returns nullptr and the caller takes an ordinary ArrayBuffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace ortllm {

class HugePageArena {
 public:
  struct Slab {
    uint8_t* base;
    size_t size;
    size_t used;
    int live;  // buffers cut from this slab and not yet released
  };

  static constexpr size_t kHugePage = size_t(2) << 20;
  static constexpr size_t kSlabBytes = size_t(64) << 20;
  static constexpr size_t kAlign = 64;

  // `bytes` of 64-byte-aligned memory and the slab it came from; nullptr when huge pages cannot be asked for.
  uint8_t* allocate(size_t bytes, Slab** owner) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    bytes = (bytes + kAlign - 1) / kAlign * kAlign;
    std::lock_guard<std::mutex> lock(mu_);
    if (!current_ || current_->size - current_->used < bytes) {
      const size_t size = bytes > kSlabBytes ? (bytes + kHugePage - 1) / kHugePage * kHugePage : kSlabBytes;
      void* base = nullptr;
      if (posix_memalign(&base, kHugePage, size) != 0) return nullptr;
      madvise(base, size, MADV_HUGEPAGE);
      Slab* slab = new Slab{(uint8_t*)base, size, 0, 0};
      if (current_ && current_->live == 0) destroy(current_);
      current_ = slab;
    }
    uint8_t* p = current_->base + current_->used;
    current_->used += bytes;
    current_->live++;
    *owner = current_;
    return p;
#else
    (void)bytes;
    (void)owner;
    return nullptr;
#endif
  }

  // One buffer cut from `slab` is gone; the slab is freed with its last buffer.
  void release(Slab* slab) {
    std::lock_guard<std::mutex> lock(mu_);
    if (--slab->live > 0) return;
    if (slab == current_) current_ = nullptr;
    destroy(slab);
  }

 private:
  static void destroy(Slab* slab) {
    std::free(slab->base);
    delete slab;
  }

  std::mutex mu_;
  Slab* current_ = nullptr;  // the slab new buffers are cut from
};

}  // namespace ortllm
