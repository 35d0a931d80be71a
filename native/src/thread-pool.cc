// The addon's one thread pool: helpers that sleep between jobs (or spin a while, see spinMicros),
// shared by every kernel that splits its work. One job at a time, whoever calls.
#include "thread-pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(_M_X64)
#include <immintrin.h>
#define ORTLLM_X86 1
#endif

namespace ortllm {
namespace {

// Helpers, and the caller waiting for them, spin this long before they block on a condition
// variable: a batch-1 decode step is ~100 parallel calls tens of microseconds apart, and a futex
// wake-up per call cost about what splitting a call saved. The spin yields the core each turn, so
// other processes waiting for it run first. Only the runner whose whole step is addon calls spins
// (onnxruntime's own threads need the cores otherwise); docs/perf/thread-pool.md has the figures.
std::atomic<int> spinMicros{0};

class Pool {
 public:
  ~Pool() { resize(0); }

  void resize(int helpers) {
    std::lock_guard<std::mutex> caller(callers_);
    {
      std::unique_lock<std::mutex> lock(mu_);
      stop_ = true;
      cv_.notify_all();
    }
    for (auto& t : threads_) t.join();
    threads_.clear();
    stop_ = false;
    for (int i = 0; i < helpers; i++) threads_.emplace_back([this] { loop(); });
  }

  int helpers() const { return (int)threads_.size(); }

  // Runs fn(i) for i in [0, n), on the caller and the helpers; returns when all are done.
  // The caller waits only for helpers that took part: one that wakes after the caller has
  // claimed every item (the helper's core was busy: the HTTP thread, the load) finds the job
  // closed and goes back to sleep, instead of the caller waiting for its wake-up.
  void run(int n, const std::function<void(int)>& fn, int maxHelpers) {
    int use = std::min(maxHelpers, helpers());
    if (use <= 0 || n <= 1) {
      for (int i = 0; i < n; i++) fn(i);
      return;
    }
    // One job at a time: runners in two worker threads of one process (two engines, or a test
    // that starts two servers) share this pool, and a second job would overwrite the first's
    // fn_/next_/total_ while its helpers still read them.
    std::lock_guard<std::mutex> caller(callers_);
    {
      std::unique_lock<std::mutex> lock(mu_);
      fn_ = &fn;
      next_.store(0);
      total_ = n;
      open_ = true;
      generation_++;
      wanted_ = use;
      cv_.notify_all();
    }
    drain();
    {
      // Every item is claimed: no helper joins from here on, and the caller waits for those inside.
      std::lock_guard<std::mutex> lock(mu_);
      open_ = false;
      wanted_ = 0;
    }
    spinWhile([this] { return inside_.load(std::memory_order_acquire) != 0; });
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return inside_.load() == 0; });
    fn_ = nullptr;
  }

 private:
  void drain() {
    for (int i = next_.fetch_add(1); i < total_; i = next_.fetch_add(1)) (*fn_)(i);
  }

  void loop() {
    uint64_t seen = 0;
    for (;;) {
      // Awake for a while after a job: the next one (a decode step's calls come tens of
      // microseconds apart) then starts without the futex wake-up.
      spinWhile([&] { return !stop_.load(std::memory_order_relaxed) && generation_.load(std::memory_order_acquire) == seen; });
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        if (wanted_ <= 0) continue;  // enough helpers took this job
        wanted_--;
        if (!open_) continue;
        inside_++;
      }
      drain();
      std::unique_lock<std::mutex> lock(mu_);
      if (--inside_ == 0) done_.notify_one();
    }
  }

  // Spins while `busy()` for at most the spin time (then the caller blocks on its condition variable).
  template <typename Busy>
  static void spinWhile(Busy busy) {
    if (!busy()) return;
    const int micros = spinMicros.load(std::memory_order_relaxed);
    if (micros <= 0) return;
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(micros);
    for (int i = 0; busy(); i++) {
#ifdef ORTLLM_X86
      _mm_pause();
#endif
      // A thread of another process waiting for this core runs first (returns at once when none).
      std::this_thread::yield();
      if ((i & 15) == 15 && std::chrono::steady_clock::now() >= until) return;
    }
  }

  std::vector<std::thread> threads_;
  std::mutex callers_;  // held by the thread whose job the pool runs
  std::mutex mu_;
  std::condition_variable cv_, done_;
  const std::function<void(int)>* fn_ = nullptr;
  std::atomic<int> next_{0};
  int total_ = 0;
  std::atomic<int> inside_{0};  // helpers draining the current job (changed under mu_; read spinning without it)
  bool open_ = false;  // helpers may still join the current job
  int wanted_ = 0;
  std::atomic<uint64_t> generation_{0};
  std::atomic<bool> stop_{false};
};

Pool pool;
int threads = 1;

}  // namespace

void parallelFor(int n, const std::function<void(int)>& fn, bool helpers) { pool.run(n, fn, helpers ? threads - 1 : 0); }

int parallelThreads() { return threads; }

bool poolSpins() { return spinMicros.load(std::memory_order_relaxed) > 0; }

void setParallelThreads(int n, int spin) {
  spinMicros.store(spin, std::memory_order_relaxed);
  threads = n;
  if (pool.helpers() != n - 1) pool.resize(n - 1);
}

}  // namespace ortllm
