// The persistent thread pool (thread_pool.hpp).
#include "lockstep/thread_pool.hpp"

#include <stdexcept>

namespace lockstep {

ThreadPool::ThreadPool(int threads) {
  if (threads < 1) throw std::invalid_argument("threads must be at least 1");
  for (int t = 1; t < threads; ++t) {
    workers_.emplace_back([this] {
      long seen = 0;
      for (;;) {
        {
          std::unique_lock<std::mutex> lock(mutex_);
          wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
          if (stopping_) return;
          seen = generation_;
          ++busy_;
        }
        drain();
        {
          std::lock_guard<std::mutex> lock(mutex_);
          if (--busy_ == 0) done_.notify_all();
        }
      }
    });
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

// Takes items until none are left; the first exception is kept.
void ThreadPool::drain() {
  for (;;) {
    const long i = next_.fetch_add(1);
    if (i >= n_) return;
    try {
      (*job_)(i);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }
}

// parallel_for's work on the pool's threads (n > 1, more than one thread).
void ThreadPool::run(long n, const std::function<void(long)>& f) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &f;
    n_ = n;
    next_.store(0);
    error_ = nullptr;
    ++generation_;
  }
  wake_.notify_all();
  drain();
  std::exception_ptr error;
  {
    // Every worker that woke for this job must be done with it before the job
    // (a reference to the caller's f) goes out of scope.
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [&] { return busy_ == 0; });
    job_ = nullptr;
    error = error_;
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace lockstep
