// The persistent thread pool (thread_pool.hpp): every item of every job runs
// exactly once, on jobs that follow each other with no pause (workers still
// spinning, some arriving late for a job) and with pauses longer than the
// spin (workers blocked and woken); exceptions come back to the caller and
// leave the pool usable; jobs larger than one ticket holds are split.
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <thread>
#include <vector>

#include "lockstep/thread_pool.hpp"

using lockstep::ThreadPool;

namespace {

// Runs `jobs` jobs of n items each; every item adds its job's number to its
// own slot, so that an item run twice, skipped, or run for the wrong job
// shows in the totals.
bool every_item_once(ThreadPool& pool, long n, int jobs, std::chrono::microseconds pause) {
  std::vector<long> seen(n, 0);
  long expected = 0;
  for (int j = 1; j <= jobs; ++j) {
    pool.parallel_for(n, [&](long i) { seen[i] += j; });
    expected += j;
    if (pause.count() > 0) std::this_thread::sleep_for(pause);
  }
  for (long i = 0; i < n; ++i)
    if (seen[i] != expected) return false;
  return true;
}

}  // namespace

TEST_CASE("the thread pool runs every item of back-to-back jobs exactly once", "[thread_pool]") {
  for (int threads : {1, 2, 3, 4}) {
    ThreadPool pool(threads);
    CHECK(pool.threads() == threads);
    for (long n : {0L, 1L, 2L, 3L, 7L, 64L, 1001L}) {
      INFO("threads " << threads << ", items " << n);
      CHECK(every_item_once(pool, n, 2000, std::chrono::microseconds(0)));
    }
  }
}

TEST_CASE("the thread pool wakes workers that stopped spinning and blocked", "[thread_pool]") {
  // a spin of 1 microsecond: a pause of 2 ms between jobs leaves every worker
  // blocked on the condition variable when the next job comes
  for (int threads : {2, 4}) {
    ThreadPool pool(threads, 1e-6);
    INFO("threads " << threads);
    CHECK(every_item_once(pool, 16, 50, std::chrono::microseconds(2000)));
    // and jobs that come at about the spin's length
    ThreadPool edge(threads, 50e-6);
    CHECK(every_item_once(edge, 5, 300, std::chrono::microseconds(40)));
  }
}

TEST_CASE("the thread pool's workers take part in the work", "[thread_pool]") {
  // with items that wait for each other, a job of two items completes only if
  // a second thread runs one of them while the first waits
  ThreadPool pool(2);
  for (int rep = 0; rep < 100; ++rep) {
    std::atomic<int> arrived{0};
    std::atomic<bool> timed_out{false};
    pool.parallel_for(2, [&](long) {
      arrived.fetch_add(1);
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      while (arrived.load() < 2)
        if (std::chrono::steady_clock::now() > until) {
          timed_out.store(true);
          break;
        }
    });
    REQUIRE_FALSE(timed_out.load());
  }
}

TEST_CASE("the thread pool rethrows an item's exception and stays usable", "[thread_pool]") {
  ThreadPool pool(3);
  for (int rep = 0; rep < 20; ++rep) {
    std::atomic<long> ran{0};
    CHECK_THROWS_WITH(pool.parallel_for(40,
                                        [&](long i) {
                                          ran.fetch_add(1);
                                          if (i % 7 == 3) throw std::runtime_error("item failed");
                                        }),
                      "item failed");
    // the other items still ran: the job is whole before parallel_for returns
    CHECK(ran.load() == 40);
    CHECK(every_item_once(pool, 33, 10, std::chrono::microseconds(0)));
  }
}

TEST_CASE("the thread pool splits a job larger than one ticket", "[thread_pool]") {
  // a ticket counts at most 2^24 - 1 items
  const long n = (1L << 24) + 3;
  ThreadPool pool(2);
  std::vector<unsigned char> seen(n, 0);
  pool.parallel_for(n, [&](long i) { seen[i] += 1; });
  long wrong = 0;
  for (long i = 0; i < n; ++i) wrong += seen[i] != 1;
  CHECK(wrong == 0);
}
