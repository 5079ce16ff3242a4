// The seed model's log density and gradient on a CUDA GPU against the CPU
// executor on the same machine: the hierarchical logistic regression of
// ../shared/seeds/004 (N rows, G = N / 10 groups, K = 20 covariates, random
// intercept and K random slopes per group, non-centred), built node by node
// exactly as R's lowering builds it (model() in R/model.R; the planner then
// fuses the linear predictor into one rowdot_rows node), on data simulated
// here with the seed's distributions (X ~ N(0, 1), groups uniform, y from the
// model at fixed true values).
//
// Built and run by bench/gpu_run.sh (the GPU machine has no R, so this is C++):
//   bench/gpu_hlogit [--n 1e5,1e6,1e7] [--chains 1,4,16] [--threads T] [--reps R]
//                    [--nuts-n 1e5] [--nuts W,S] [--nuts-vectors host,device]
// For each N, chains and precision it prints the GPU's milliseconds per
// gradient (median of R timed calls after warm-up, state, lp and gradient in
// device memory, each call synchronised), per chain-gradient, the CPU
// executor's (T threads, tiled observation stage) and their ratio, and checks
// that the GPU's log density agrees with the CPU's. Then NUTS runs of 4
// chains (W warmup and S sampling iterations, default 150,150) on the GPU for
// each --nuts-n N, twice: with the sampler's vectors in host memory (state
// and gradient copied at every leapfrog step), and device-resident (the
// vectors in GPU memory, only per-chain numbers crossing at each step), each
// timed as a whole, with the leapfrog calls it made.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/backends/cuda.hpp"
#include "lockstep/backends/cuda_executor.hpp"
#include "lockstep/executor.hpp"
#include "lockstep/ir.hpp"
#include "lockstep/planner.hpp"
#include "lockstep/sampler/chain_vectors.hpp"
#include "lockstep/sampler/nuts.hpp"

#include "hlogit_program.hpp"

using namespace lockstep;
using hlogit_bench::parse_list;
using hlogit_bench::hlogit;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<double> ns = {1e5, 1e6, 1e7}, chain_list = {1, 4, 16};
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int reps = 20;
  std::vector<double> nuts_ns = {1e5}, nuts_iters = {150, 150};
  std::string nuts_vectors = "host,device";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--n") ns = parse_list(argv[i + 1]);
    else if (a == "--chains") chain_list = parse_list(argv[i + 1]);
    else if (a == "--threads") threads = std::atoi(argv[i + 1]);
    else if (a == "--reps") reps = std::atoi(argv[i + 1]);
    else if (a == "--nuts-n") nuts_ns = parse_list(argv[i + 1]);
    else if (a == "--nuts") nuts_iters = parse_list(argv[i + 1]);
    else if (a == "--nuts-vectors") nuts_vectors = argv[i + 1];
  }
  const std::vector<cuda::DeviceInfo> devs = cuda::devices();
  if (devs.empty()) {
    std::printf("no CUDA device is visible\n");
    return 1;
  }
  std::printf("GPU: %s (%d SMs, %.1f GiB); CPU executor: %d threads\n", devs[0].name.c_str(),
              devs[0].multiprocessors, devs[0].memory_gb, threads);
  std::printf("%9s %6s %6s %12s %14s %12s %14s %8s %10s %8s\n", "N", "chains", "prec",
              "gpu ms/grad", "gpu ms/chgrad", "cpu ms/grad", "cpu ms/chgrad", "cpu/gpu",
              "lp rel err", "GiB");
  int bad = 0;
  for (double nd : ns) {
    const long N = static_cast<long>(nd), K = 20, G = std::max(1L, N / 10);
    const Program p = hlogit(N, G, K, 20240601u);
    const long D = p.n_free;
    for (double cd : chain_list) {
      const long C = static_cast<long>(cd);
      std::mt19937_64 rng(7);
      std::normal_distribution<double> z(0, 0.3);
      std::vector<double> state(C * D);
      for (double& v : state) v = z(rng);
      for (int single = 0; single < 2; ++single) {
        try {
          ExecOptions o;
          o.threads = threads;
          std::vector<double> lp_cpu(C), grad_cpu(C * D);
          double cpu_ms = NAN;
          {
            std::unique_ptr<Target> cpu;
            if (single) cpu = std::make_unique<Executor<float>>(p, C, o);
            else cpu = std::make_unique<Executor<double>>(p, C, o);
            cpu->log_density(state.data(), lp_cpu.data(), grad_cpu.data());
            std::vector<double> t;
            for (int r = 0; r < std::max(3, reps / 4); ++r) {
              auto t0 = std::chrono::steady_clock::now();
              cpu->log_density(state.data(), lp_cpu.data(), grad_cpu.data());
              t.push_back(seconds_since(t0));
            }
            cpu_ms = 1e3 * median(t);
          }
          ExecOptions go;
          go.backend = Backend::cuda;
          auto gpu = cuda::make_executor(p, C, go, single != 0);
          double* d_state = cuda::device_alloc(C * D);
          double* d_lp = cuda::device_alloc(C);
          double* d_grad = cuda::device_alloc(C * D);
          cuda::copy_to_device(d_state, state.data(), C * D);
          for (int w = 0; w < 3; ++w) gpu->log_density_device(d_state, d_lp, d_grad);
          gpu->synchronize();
          std::vector<double> t;
          for (int r = 0; r < reps; ++r) {
            auto t0 = std::chrono::steady_clock::now();
            gpu->log_density_device(d_state, d_lp, d_grad);
            gpu->synchronize();
            t.push_back(seconds_since(t0));
          }
          const double gpu_ms = 1e3 * median(t);
          std::vector<double> lp(C), grad(C * D);
          cuda::copy_to_host(lp.data(), d_lp, C);
          cuda::copy_to_host(grad.data(), d_grad, C * D);
          double err = 0, gerr = 0, gscale = 0;
          for (long c = 0; c < C; ++c)
            err = std::max(err, std::fabs(lp[c] - lp_cpu[c]) / std::fabs(lp_cpu[c]));
          for (long k = 0; k < C * D; ++k) {
            gerr = std::max(gerr, std::fabs(grad[k] - grad_cpu[k]));
            gscale = std::max(gscale, std::fabs(grad_cpu[k]));
          }
          const double tol = single ? 1e-4 : 1e-10;
          const bool ok = err < tol && gerr <= tol * 10 * gscale;
          bad += !ok;
          std::printf("%9ld %6ld %6s %12.3f %14.4f %12.2f %14.3f %8.1f %10.1e %8.2f%s\n", N, C,
                      single ? "single" : "double", gpu_ms, gpu_ms / C, cpu_ms, cpu_ms / C,
                      cpu_ms / gpu_ms, err, gpu->device_bytes() / 1073741824.0,
                      ok ? "" : "  MISMATCH (gradient or lp)");
          std::fflush(stdout);
          std::fputs(gpu->profile_report().c_str(), stdout);
          cuda::device_free(d_state);
          cuda::device_free(d_lp);
          cuda::device_free(d_grad);
        } catch (const std::exception& e) {
          std::printf("%9ld %6ld %6s failed: %s\n", N, C, single ? "single" : "double", e.what());
          ++bad;
        }
      }
    }
  }
  for (double nd : nuts_ns) {
    if (nd <= 0 || nuts_iters.size() < 2) continue;
    const long N = static_cast<long>(nd), K = 20, G = std::max(1L, N / 10), C = 4;
    const long W = static_cast<long>(nuts_iters[0]), S = static_cast<long>(nuts_iters[1]);
    for (int single = 0; single < 2; ++single) {
      try {
        const Program p = hlogit(N, G, K, 20240601u);
        const long D = p.n_free;
        ExecOptions go;
        go.backend = Backend::cuda;
        auto gpu = cuda::make_executor(p, C, go, single != 0);
        // host: the sampler's vectors in host memory, the state and gradient
        // copied to and from the GPU at every step; device: device-resident
        // sampling (the executor's own vectors in GPU memory)
        for (int resident = 0; resident < 2; ++resident) {
          if (nuts_vectors.find(resident ? "device" : "host") == std::string::npos) continue;
          WithHostVectors on_host(*gpu);
          Target& target = resident ? static_cast<Target&>(*gpu) : on_host;
          std::mt19937_64 rng(11);
          std::uniform_real_distribution<double> u(-0.5, 0.5);
          std::vector<double> init(C * D);
          for (double& v : init) v = u(rng);
          NutsSettings settings;
          auto t0 = std::chrono::steady_clock::now();
          Nuts nuts(target, settings, init, 1234u, 5678u);
          nuts.begin_warmup(W);
          long warm_calls = 0, sample_calls = 0;
          // engine calls per iteration: the most leapfrog steps of any chain
          // (the chains still building are never more than those before)
          auto calls = [&] {
            int most = 0;
            for (long c = 0; c < C; ++c) most = std::max(most, nuts.last().n_leapfrog[c]);
            return static_cast<long>(most);
          };
          for (long i = 0; i < W; ++i) {
            nuts.iterate(true);
            warm_calls += calls();
          }
          const double warm_s = seconds_since(t0);
          t0 = std::chrono::steady_clock::now();
          long divergent = 0, leapfrog = 0;
          for (long i = 0; i < S; ++i) {
            nuts.iterate(false);
            sample_calls += calls();
            for (long c = 0; c < C; ++c) {
              divergent += nuts.last().divergent[c];
              leapfrog += nuts.last().n_leapfrog[c];
            }
          }
          const double sample_s = seconds_since(t0);
          std::printf("NUTS N=%ld, 4 chains, %s, %s vectors: warmup %ld its %.1f s (%ld leapfrog "
                      "calls), sampling %ld its %.1f s (%ld leapfrog calls, %.3f ms each; mean "
                      "%.1f leapfrog steps per chain-iteration; step size %.4f; %ld divergent)\n",
                      N, single ? "single" : "double", resident ? "device" : "host", W, warm_s,
                      warm_calls, S, sample_s, sample_calls,
                      1e3 * sample_s / std::max(1L, sample_calls),
                      static_cast<double>(leapfrog) / (C * std::max(1L, S)), nuts.epsilon(),
                      divergent);
          std::fflush(stdout);
        }
      } catch (const std::exception& e) {
        std::printf("NUTS N=%ld %s failed: %s\n", N, single ? "single" : "double", e.what());
        ++bad;
      }
    }
  }
  std::printf("%s\n", bad ? "SOME RUNS FAILED" : "all runs agree with the CPU");
  return bad ? 1 : 0;
}
