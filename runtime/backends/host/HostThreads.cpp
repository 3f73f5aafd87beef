//===- HostThreads.cpp - The host backend's thread pool -------------------===//
//
// Part of the FMHA project.
//
//===----------------------------------------------------------------------===//
//
// A cpu bundle's parallel loops (fmha-cpu-parallel-for) call the loader's
// parallel-for through the kernel's `fmha_parallel_for` hook. This one runs
// the n iterations on the calling thread and threads()-1 workers, which
// take one iteration at a time from a shared counter (the iterations are
// q tiles: causal masks make them unequal, so no static split). One
// parallel-for runs at a time; a second one that arrives meanwhile (another
// thread's launch) runs on its own thread alone rather than wait.
//
// The thread count: setHostThreads(n) (fmhaSetHostThreads, fmha-run
// --threads), else FMHA_NUM_THREADS, else the machine's hardware threads.
//
//===----------------------------------------------------------------------===//

#include "Backends.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

namespace fmha::rt {

namespace {

using Body = void (*)(void *, int64_t, int64_t);

/// Calls a kernel's parallel body. The body comes from a bundle, compiled
/// without -fsanitize=function: it has no type signature before its entry
/// (which may start a page), so UBSan's check of indirect calls must not
/// look there (it read the unmapped page before the kernel's .text).
#if defined(__clang__)
__attribute__((no_sanitize("function"), noinline))
#endif
void callBody(Body body, void *ctx, int64_t lo, int64_t hi) {
  body(ctx, lo, hi);
}

int defaultThreads() {
  if (const char *env = std::getenv("FMHA_NUM_THREADS")) {
    char *end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && n >= 1 && n <= kMaxHostThreads)
      return static_cast<int>(n);
  }
  unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 1 : static_cast<int>(std::min<unsigned>(n, kMaxHostThreads));
}

std::atomic<int> &requestedThreads() {
  static std::atomic<int> requested{0}; // 0: defaultThreads()
  return requested;
}

class Pool {
public:
  static Pool &get() {
    // Never destroyed: workers may outlive static destruction order.
    static Pool *pool = new Pool();
    return *pool;
  }

  void run(int64_t n, Body body, void *ctx) {
    const int threads = hostThreads();
    if (threads <= 1 || n <= 1) {
      callBody(body, ctx, 0, n);
      return;
    }
    std::unique_lock<std::mutex> busy(launch_, std::try_to_lock);
    if (!busy.owns_lock()) {
      callBody(body, ctx, 0, n);
      return;
    }
    const int helpers = static_cast<int>(std::min<int64_t>(threads - 1, n - 1));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      // A new worker starts from the generation before this job's, so that
      // it takes this job however late it first runs.
      while (static_cast<int>(workers_.size()) < helpers) {
        int index = static_cast<int>(workers_.size());
        workers_.emplace_back(
            [this, index, seen = generation_] { work(index, seen); });
      }
      body_ = body;
      ctx_ = ctx;
      count_ = n;
      // Chunks of iterations, about 32 a thread: one atomic per chunk, not
      // per iteration (an elementwise loop has millions of cheap ones),
      // still enough chunks to balance uneven ones (attention's tiles).
      grain_ = std::max<int64_t>(1, n / (32 * int64_t(helpers + 1)));
      next_.store(0);
      helpers_ = helpers;
      active_ = helpers;
      ++generation_;
    }
    wake_.notify_all();
    iterate(body, ctx, n, grain_);
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return active_ == 0; });
  }

private:
  void iterate(Body body, void *ctx, int64_t n, int64_t grain) {
    for (int64_t i = next_.fetch_add(grain); i < n; i = next_.fetch_add(grain))
      callBody(body, ctx, i, std::min(i + grain, n));
  }

  void work(int index, uint64_t seen) {
    for (;;) {
      Body body;
      void *ctx;
      int64_t n, grain;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        wake_.wait(lock, [&] { return generation_ != seen; });
        seen = generation_;
        if (index >= helpers_)
          continue; // not needed for this one
        body = body_, ctx = ctx_, n = count_, grain = grain_;
      }
      iterate(body, ctx, n, grain);
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (--active_ == 0)
          done_.notify_one();
      }
    }
  }

  std::mutex launch_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> workers_;
  uint64_t generation_ = 0;
  Body body_ = nullptr;
  void *ctx_ = nullptr;
  int64_t count_ = 0;
  int64_t grain_ = 1;
  int helpers_ = 0, active_ = 0;
  std::atomic<int64_t> next_{0};
};

} // namespace

int hostThreads() {
  int requested = requestedThreads().load();
  static const int fallback = defaultThreads();
  return requested > 0 ? requested : fallback;
}

Status setHostThreads(int threads) {
  if (threads < 0 || threads > kMaxHostThreads)
    return Status::error(
        ErrorCode::InvalidArgument,
        "host threads: " + std::to_string(threads) + " is not in [0, " +
            std::to_string(kMaxHostThreads) +
            "] (0: FMHA_NUM_THREADS or every hardware thread)");
  requestedThreads().store(threads);
  return Status::success();
}

namespace detail {

void hostParallelFor(int64_t n, void (*body)(void *, int64_t, int64_t),
                     void *ctx) {
  if (n > 0)
    Pool::get().run(n, body, ctx);
}

} // namespace detail

} // namespace fmha::rt
