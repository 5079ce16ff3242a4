// A persistent pool of worker threads. parallel_for(n, f) calls f(i) for every
// i in [0, n) across the pool's threads (the calling thread is one of them) and
// returns when all calls are done, rethrowing the first exception. The threads
// live as long as the pool, so a leapfrog step pays no thread start-up.
#ifndef LOCKSTEP_THREAD_POOL_HPP
#define LOCKSTEP_THREAD_POOL_HPP

#include <atomic>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace lockstep {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
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
    run(n, std::function<void(long)>(std::ref(f)));
  }

 private:
  void run(long n, const std::function<void(long)>& f);
  void work(long generation);
  void drain();

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_, done_;
  long generation_ = 0;
  bool stopping_ = false;
  int busy_ = 0;
  // the current job
  const std::function<void(long)>* job_ = nullptr;
  long n_ = 0;
  std::atomic<long> next_{0};
  std::exception_ptr error_;
};

}  // namespace lockstep

#endif
