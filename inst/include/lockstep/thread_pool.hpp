// A persistent pool of worker threads. parallel_for(n, f) calls f(i) for every
// i in [0, n) across the pool's threads (the calling thread is one of them) and
// returns when all calls are done, rethrowing the first exception. The threads
// live as long as the pool, so a leapfrog step pays no thread start-up.
//
// A small model hands the pool a job every few microseconds (NUTS: a vector
// operation, the gradient's global stage forward and backward, the
// observation stage, per leapfrog step). Waking a thread blocked on a
// condition variable costs tens of microseconds, more than such a job, so
// between jobs the workers spin, watching for the next one, for up to
// spin_seconds; only after that long without work do they block (a pool
// idle between mcmc() calls uses no CPU). The caller waits for the last
// items the same way.
//
// Items are handed out from one 64-bit ticket, the job's number and the count
// of its items not yet handed out packed together, taken by compare-and-swap
// (item count - 1 first, item 0 last): a worker that looked at the last job
// but comes late can never take an item of the next one under the old job's
// number, and needs to know nothing else of the job to take one.
#ifndef LOCKSTEP_THREAD_POOL_HPP
#define LOCKSTEP_THREAD_POOL_HPP

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lockstep {

class ThreadPool {
 public:
  // spin_seconds: how long an idle worker watches for the next job before it
  // blocks.
  explicit ThreadPool(int threads, double spin_seconds = 200e-6);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int threads() const { return static_cast<int>(workers_.size()) + 1; }
  // With one thread (or one item) f runs inline, never wrapped in a
  // std::function, whose copy of a lambda's captures may be allocated: a
  // one-thread executor comes here several times per leapfrog step. The pool
  // sees f through a reference.
  template <class F> void parallel_for(long n, F&& f) {
    if (workers_.empty() || n <= 1) {
      for (long i = 0; i < n; ++i) f(i);
      return;
    }
    // A job has at most max_items items (what a ticket's item field counts); more are
    // handed out as several jobs.
    for (long start = 0; start < n; start += max_items) {
      const long count = n - start < max_items ? n - start : max_items;
      run(count, std::function<void(long)>([&f, start](long i) { f(start + i); }));
    }
  }

 private:
  // A ticket: the job's number in the high 40 bits, the items left to hand
  // out in the low 24.
  static constexpr int item_bits = 24;
  static constexpr long max_items = (1L << item_bits) - 1;
  static constexpr uint64_t item_mask = (uint64_t(1) << item_bits) - 1;

  void run(long n, const std::function<void(long)>& f);
  void worker();
  // Takes and runs items of job number `job` until none are left to take.
  void drain(uint64_t job);

  std::vector<std::thread> workers_;
  double spin_seconds_;
  std::atomic<uint64_t> ticket_{0};
  // the current job's function, written before its ticket is published and
  // read only by a thread holding one of its items
  std::atomic<const std::function<void(long)>*> job_{nullptr};
  std::atomic<long> remaining_{0};  // items of the current job not yet done
  std::atomic<bool> stopping_{false};
  std::atomic<int> sleeping_{0};
  std::mutex mutex_;  // for sleeping workers and error_
  std::condition_variable wake_;
  std::exception_ptr error_;
};

}  // namespace lockstep

#endif
