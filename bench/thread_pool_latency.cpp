// What handing a job to the thread pool costs: parallel_for over 4 items that
// each busy-wait for a given time, on 2 threads, against running them in turn.
//
//   g++ -std=gnu++17 -O2 -Iinst/include bench/thread_pool_latency.cpp \
//       src/core/thread_pool.cpp -o build/thread_pool_latency -lpthread
//   build/thread_pool_latency 0.5 2 10        # item lengths in microseconds
//
// Prints microseconds per job (4 items) and the serial time; results in
// bench/RESULTS.md ("Small models: three kernels on the CPU, and a thread pool
// that spins").
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "lockstep/thread_pool.hpp"

int main(int argc, char** argv) {
  using Clock = std::chrono::steady_clock;
  lockstep::ThreadPool pool(2);
  for (int a = 1; a < argc; ++a) {
    const double us = std::atof(argv[a]);
    for (int rep = 0; rep < 3; ++rep) {
      const int jobs = 20000;
      const auto t0 = Clock::now();
      for (int j = 0; j < jobs; ++j)
        pool.parallel_for(4, [&](long) {
          const auto s = Clock::now();
          while (std::chrono::duration<double, std::micro>(Clock::now() - s).count() < us) {
          }
        });
      const double per_job = std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / jobs;
      std::printf("items of %5.1f us: %7.2f us per job of 4 on 2 threads (serial %5.1f us)\n", us,
                  per_job, 4 * us);
    }
  }
}
