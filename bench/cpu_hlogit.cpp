// The seed model's log density and gradient in the CPU executor alone: no R,
// no copies of the state to and from R, so that a change to the engine can be
// timed in a minute (the package build takes several). bench/hlogit.R times the
// same model through R's API against rstan; this is its engine-only column.
//
//   g++ -std=gnu++17 -O2 -fno-trapping-math -fvect-cost-model=dynamic \
//       -Iinst/include bench/cpu_hlogit.cpp src/core/*.cpp -o build/cpu_hlogit -lpthread
//   build/cpu_hlogit [--n 1e5,1e6] [--chains 1,4] [--threads 1,2] [--reps R] [--single 0,1]
//                    [--tile rows] [--first-writers 0,1] [--devices 1,2]
//
// Prints milliseconds per chain-gradient (the minimum over R timed calls after
// one warm-up call), the CPU milliseconds of all threads per chain-gradient,
// and the first chain's log density, which must not move when only the speed
// of the engine changes. With --first-writers 0,1 the executors with and
// without ExecOptions::first_writers take turns call by call. With --devices,
// the rows are split among that many virtual devices (cpu_only(devices = )),
// and the last column is the bytes their all-reduces carry per gradient.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "lockstep/executor.hpp"

#include "hlogit_program.hpp"

using namespace lockstep;
using hlogit_bench::parse_list;

namespace {

// CPU seconds of the whole process (every thread): on a shared machine a
// steadier measure of work than the wall clock, which counts time spent
// descheduled.
double cpu_seconds() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<double> ns{1e6}, chain_list{4}, thread_list{1, 2}, singles{0}, device_list{1};
  int reps = 5;
  long tile_rows = 0;  // 0: the stage's choice
  std::vector<bool> first_writers{true};  // ExecOptions::first_writers
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--n") ns = parse_list(argv[i + 1]);
    else if (a == "--chains") chain_list = parse_list(argv[i + 1]);
    else if (a == "--threads") thread_list = parse_list(argv[i + 1]);
    else if (a == "--reps") reps = std::atoi(argv[i + 1]);
    else if (a == "--single") singles = parse_list(argv[i + 1]);
    else if (a == "--devices") device_list = parse_list(argv[i + 1]);
    else if (a == "--tile") tile_rows = std::atol(argv[i + 1]);
    else if (a == "--first-writers") {
      first_writers.clear();
      for (double v : parse_list(argv[i + 1])) first_writers.push_back(v != 0);
    }
    else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  std::printf("%10s %6s %7s %7s %9s %14s %14s %22s %12s\n", "N", "chains", "threads", "devices",
              "precision", "ms/chain-grad", "cpu-ms/c-grad", "log density (chain 1)",
              "bytes/grad");
  for (double nd : ns) {
    const long N = static_cast<long>(nd), G = std::max(1L, N / 10), K = 20;
    const Program p = hlogit_bench::hlogit(N, G, K, 20240601u);
    const long D = p.n_free;
    for (double cd : chain_list) {
      const long C = static_cast<long>(cd);
      std::mt19937_64 rng(1);
      std::normal_distribution<double> z(0, 0.5);
      std::vector<double> state(C * D), lp(C), grad(C * D);
      for (double& v : state) v = z(rng);
      for (double td : thread_list)
        for (double dd : device_list)
        for (double single : singles) {
          // one executor per --first-writers value, their calls alternating,
          // so that a machine whose neighbours come and go treats them alike
          std::vector<std::unique_ptr<Target>> ex;
          for (bool fw : first_writers) {
            ExecOptions o;
            o.threads = static_cast<int>(td);
            o.devices = static_cast<int>(dd);
            o.alias_parameters = true;
            o.tile_rows = tile_rows;
            o.first_writers = fw;
            if (single != 0) ex.push_back(std::make_unique<Executor<float>>(p, C, o));
            else ex.push_back(std::make_unique<Executor<double>>(p, C, o));
            ex.back()->log_density(state.data(), lp.data(), grad.data());  // warm-up
          }
          // bytes the shards' all-reduces carry in one gradient
          auto sent = [&](Target& t) {
            if (auto* d = dynamic_cast<Executor<double>*>(&t)) {
              d->reset_shard_stats();
              d->log_density(state.data(), lp.data(), grad.data());
              return d->shard_stats().bytes;
            }
            auto& f = dynamic_cast<Executor<float>&>(t);
            f.reset_shard_stats();
            f.log_density(state.data(), lp.data(), grad.data());
            return f.shard_stats().bytes;
          };
          std::vector<double> best(ex.size(), 1e300), best_cpu(ex.size(), 1e300);
          for (int r = 0; r < reps; ++r)
            for (size_t e = 0; e < ex.size(); ++e) {
              const auto t0 = std::chrono::steady_clock::now();
              const double c0 = cpu_seconds();
              ex[e]->log_density(state.data(), lp.data(), grad.data());
              best_cpu[e] = std::min(best_cpu[e], cpu_seconds() - c0);
              best[e] = std::min(best[e], std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
            }
          for (size_t e = 0; e < ex.size(); ++e)
            std::printf("%10ld %6ld %7d %7d %9s %14.2f %14.2f %22.10f %12ld%s\n", N, C,
                        static_cast<int>(td), static_cast<int>(dd),
                        single != 0 ? "single" : "double", 1e3 * best[e] / C, 1e3 * best_cpu[e] / C,
                        lp[0], sent(*ex[e]),
                        ex.size() > 1 ? (first_writers[e] ? "  first writers" : "  zeroed") : "");
          std::fflush(stdout);
        }
    }
  }
  return 0;
}
