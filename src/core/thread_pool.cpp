// The persistent thread pool (thread_pool.hpp).
#include "lockstep/thread_pool.hpp"

#include <chrono>
#include <stdexcept>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace lockstep {

namespace {

// One step of a spin-wait: tells the core that this is a wait loop (lets the
// other hyperthread run, and costs less power).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

using Clock = std::chrono::steady_clock;

}  // namespace

ThreadPool::ThreadPool(int threads, double spin_seconds) : spin_seconds_(spin_seconds) {
  if (threads < 1) throw std::invalid_argument("threads must be at least 1");
  for (int t = 1; t < threads; ++t) workers_.emplace_back([this] { worker(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_.store(true);
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::worker() {
  // Job 0 is no job. Not the ticket's job when this thread starts: the first
  // job may have been published before it ran, and still need it.
  uint64_t seen = 0;
  const auto spin_for = std::chrono::duration<double>(spin_seconds_);
  for (;;) {
    // Watch for a new job for a while, then block until one is published.
    auto since = Clock::now();
    unsigned spins = 0;
    uint64_t job;
    while ((job = ticket_.load() >> item_bits) == seen) {
      if (stopping_.load()) return;
      cpu_relax();
      if ((++spins & 63) != 0 || Clock::now() - since < spin_for) continue;
      std::unique_lock<std::mutex> lock(mutex_);
      sleeping_.fetch_add(1);
      wake_.wait(lock, [&] { return stopping_.load() || (ticket_.load() >> item_bits) != seen; });
      sleeping_.fetch_sub(1);
      since = Clock::now();
    }
    seen = job;
    drain(job);
  }
}

void ThreadPool::drain(uint64_t job) {
  for (;;) {
    uint64_t t = ticket_.load();
    long item;
    for (;;) {
      if ((t >> item_bits) != job || (t & item_mask) == 0) return;
      // on failure t is reloaded; a successful exchange makes this thread
      // the owner of item (left - 1) of this job, which keeps it running
      if (ticket_.compare_exchange_weak(t, t - 1)) {
        item = static_cast<long>(t & item_mask) - 1;
        break;
      }
    }
    try {
      (*job_.load())(item);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
    remaining_.fetch_sub(1);
  }
}

// parallel_for's work on the pool's threads (1 < n <= max_items, more than
// one thread).
void ThreadPool::run(long n, const std::function<void(long)>& f) {
  // No thread holds an item of the last job (it was finished), so none reads
  // job_ or remaining_ until the new ticket is out.
  job_.store(&f);
  remaining_.store(n);
  error_ = nullptr;
  const uint64_t job = (ticket_.load() >> item_bits) + 1;
  ticket_.store((job << item_bits) | static_cast<uint64_t>(n));
  // A worker that is about to block counts itself in sleeping_ before it
  // looks at the ticket a last time (both sequentially consistent): it either
  // sees this job or is seen here and woken.
  if (sleeping_.load() > 0) {
    { std::lock_guard<std::mutex> lock(mutex_); }
    wake_.notify_all();
  }
  drain(job);
  // The last items may still be running on workers. Spin for them, yielding
  // after a while in case a worker holding one was descheduled.
  for (unsigned spins = 0; remaining_.load() != 0; ++spins) {
    if (spins < 4096) cpu_relax();
    else std::this_thread::yield();
  }
  std::exception_ptr error;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    error = error_;
    error_ = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace lockstep
