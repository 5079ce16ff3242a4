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
//                    [--nuts-precision double,single] [--gpus 1,2,4] [--nuts-gpus 1]
//                    [--tile-kernel 0,1] [--shard-gpus 0,0]
// For each N, chains and precision it prints the GPU's milliseconds per
// gradient (median of R timed calls after warm-up, state, lp and gradient in
// device memory, each call synchronised), per chain-gradient, the CPU
// executor's (T threads, tiled observation stage) and their ratio, and checks
// that the GPU's log density agrees with the CPU's. Then NUTS runs of 4
// chains (W warmup and S sampling iterations, default 150,150) on the GPU for
// each --nuts-n N, twice: with the sampler's vectors in host memory (state
// and gradient copied at every leapfrog step), and device-resident (the
// vectors in GPU memory, only per-chain numbers crossing at each step), each
// timed as a whole, with the leapfrog calls it made, and the bulk effective
// sample size and R-hat of the hyperparameters' and lp's draws (per second
// of sampling), with their posterior means against the simulation's values.
// --gpus times the gradient on the first 1, 2, ... visible GPUs (the
// multi-GPU executor: each GPU a block of the rows, partials summed on the
// first through NCCL where it loads), skipping counts above the GPUs there
// are; --nuts-gpus runs NUTS on that many. --tile-kernel times the gradient
// op by op (0) and with the observation stage as one tile kernel (1,
// ExecOptions::tile_kernel), each on its own line ("tiles" column).
// --shard-gpus lists GPUs (a GPU may repeat: shards taking turns on it) on
// which each N and chain count's double gradient is also timed two ways:
// whole gradients (the multi-GPU executor: every GPU holds the whole state,
// which it receives, and sends its whole gradient) and owned groups
// (device_shards.hpp: each GPU holds its groups' part of the sampler's
// vectors and sends its chains' log densities and the globals' gradient),
// with the bytes each sends per gradient.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "lockstep/backends/cuda.hpp"
#include "lockstep/backends/cuda_executor.hpp"
#include "lockstep/device_shards.hpp"
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

// The median milliseconds of `reps` calls of `call` after `warm` untimed ones.
template <class Call> double median_ms(int warm, int reps, Call&& call) {
  for (int w = 0; w < warm; ++w) call();
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    call();
    t.push_back(seconds_since(t0));
  }
  return 1e3 * median(t);
}

// The standard normal quantile (Acklam's rational approximation, relative
// error under 1.2e-9: plenty for rank-normalised draws).
double qnorm(double p) {
  static const double a[] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                             1.383577518672690e+02, -3.066479806614716e+01, 2.506628277459239e+00};
  static const double b[] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                             6.680131188771972e+01, -1.328068155288572e+01};
  static const double c[] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                             -2.549732539343734e+00, 4.374664141464968e+00, 2.938163982698783e+00};
  static const double d[] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                             3.754408661907416e+00};
  if (p < 0.02425) {
    const double q = std::sqrt(-2 * std::log(p));
    return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
           ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1);
  }
  if (p > 1 - 0.02425) return -qnorm(1 - p);
  const double q = p - 0.5, r = q * q;
  return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
         (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1);
}

// Bulk effective sample size and split R-hat of one quantity's draws
// (draws[c][i], chain c, iteration i), as Stan and the posterior package
// compute them (Vehtari et al. 2021): the draws rank-normalised over all
// chains, each chain split in two, autocorrelations combined across the
// halves and summed by Geyer's initial monotone sequence. The R side
// reports the same diagnostics; this is the C++ bench's copy, since the GPU
// machine has no R.
void bulk_ess_rhat(const std::vector<std::vector<double>>& draws, double& ess, double& rhat) {
  const long C = static_cast<long>(draws.size()), S = static_cast<long>(draws[0].size());
  const long n = S / 2, M = 2 * C;
  std::vector<std::pair<double, long>> all;
  for (long c = 0; c < C; ++c)
    for (long i = 0; i < 2 * n; ++i) all.push_back({draws[c][i + (S - 2 * n)], c * 2 * n + i});
  std::sort(all.begin(), all.end());
  std::vector<double> z(all.size());
  for (size_t k = 0; k < all.size();) {  // average ranks of ties
    size_t e = k;
    while (e < all.size() && all[e].first == all[k].first) ++e;
    const double rank = 0.5 * (k + 1 + e);
    for (size_t t = k; t < e; ++t) z[all[t].second] = qnorm((rank - 0.375) / (all.size() + 0.25));
    k = e;
  }
  std::vector<double> mean(M), var(M);
  std::vector<std::vector<double>> acov(M, std::vector<double>(n));
  for (long m = 0; m < M; ++m) {
    const double* x = z.data() + m * n;
    double mu = 0;
    for (long i = 0; i < n; ++i) mu += x[i];
    mu /= n;
    mean[m] = mu;
    for (long t = 0; t < n; ++t) {
      double s = 0;
      for (long i = 0; i + t < n; ++i) s += (x[i] - mu) * (x[i + t] - mu);
      acov[m][t] = s / n;
    }
    var[m] = acov[m][0] * n / (n - 1.0);
  }
  double W = 0, mbar = 0, B = 0;
  for (long m = 0; m < M; ++m) {
    W += var[m] / M;
    mbar += mean[m] / M;
  }
  for (long m = 0; m < M; ++m) B += (mean[m] - mbar) * (mean[m] - mbar) / (M - 1.0);
  const double var_plus = W * (n - 1.0) / n + B;
  rhat = std::sqrt(var_plus / W);
  auto rho = [&](long t) {
    double a = 0;
    for (long m = 0; m < M; ++m) a += acov[m][t] / M;
    return 1 - (W - a) / var_plus;
  };
  // Geyer's initial positive and monotone sequences, as ess_basic() in
  // R/diagnostics.R (Stan's): rho[t] while adjacent pairs sum to more than 0
  std::vector<double> r(n + 2, 0.0);
  r[0] = 1;
  double even = 1, odd = rho(1);
  r[1] = odd;
  long t = 1;
  while (t < n - 4 && even + odd > 0) {
    even = rho(t + 1);
    odd = rho(t + 2);
    if (even + odd >= 0) {
      r[t + 1] = even;
      r[t + 2] = odd;
    }
    t += 2;
  }
  const long max_t = t;
  if (even > 0) r[max_t + 1] = even;
  for (long k = 1; k + 3 <= max_t; k += 2)
    if (r[k + 1] + r[k + 2] > r[k - 1] + r[k]) r[k + 1] = r[k + 2] = (r[k - 1] + r[k]) / 2;
  double tau = -1 + r[max_t + 1];
  for (long k = 0; k < max_t; ++k) tau += 2 * r[k];
  const double total = static_cast<double>(M * n);
  ess = std::min(total / tau, total * std::log10(total));
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<double> ns = {1e5, 1e6, 1e7}, chain_list = {1, 4, 16};
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int reps = 20;
  std::vector<double> nuts_ns = {1e5}, nuts_iters = {150, 150};
  std::string nuts_vectors = "host,device", nuts_precision = "double,single";
  std::vector<double> gpu_counts = {1};
  int nuts_gpus = 1;
  std::vector<double> tile_kernels = {0, 1};
  std::vector<double> shard_gpus;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--n") ns = parse_list(argv[i + 1]);
    else if (a == "--chains") chain_list = parse_list(argv[i + 1]);
    else if (a == "--threads") threads = std::atoi(argv[i + 1]);
    else if (a == "--reps") reps = std::atoi(argv[i + 1]);
    else if (a == "--nuts-n") nuts_ns = parse_list(argv[i + 1]);
    else if (a == "--nuts") nuts_iters = parse_list(argv[i + 1]);
    else if (a == "--nuts-vectors") nuts_vectors = argv[i + 1];
    else if (a == "--nuts-precision") nuts_precision = argv[i + 1];
    else if (a == "--gpus") gpu_counts = parse_list(argv[i + 1]);
    else if (a == "--nuts-gpus") nuts_gpus = std::atoi(argv[i + 1]);
    else if (a == "--tile-kernel") tile_kernels = parse_list(argv[i + 1]);
    else if (a == "--shard-gpus") shard_gpus = parse_list(argv[i + 1]);
  }
  // the options that run on the first k GPUs
  auto on_gpus = [](long k) {
    ExecOptions go;
    go.backend = Backend::cuda;
    for (long g = 0; g < k && k > 1; ++g) go.gpus.push_back(static_cast<int>(g));
    return go;
  };
  const std::vector<cuda::DeviceInfo> devs = cuda::devices();
  if (devs.empty()) {
    std::printf("no CUDA device is visible\n");
    return 1;
  }
  std::printf("GPU: %s (%d SMs, %.1f GiB); CPU executor: %d threads\n", devs[0].name.c_str(),
              devs[0].multiprocessors, devs[0].memory_gb, threads);
  std::printf("%9s %6s %6s %4s %5s %12s %14s %12s %14s %8s %10s %8s\n", "N", "chains", "prec",
              "gpus", "tiles", "gpu ms/grad", "gpu ms/chgrad", "cpu ms/grad", "cpu ms/chgrad", "cpu/gpu",
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
            cpu_ms = median_ms(1, std::max(3, reps / 4), [&] {
              cpu->log_density(state.data(), lp_cpu.data(), grad_cpu.data());
            });
          }
          for (double kd : gpu_counts)
          for (double tk : tile_kernels) {
            const long k = static_cast<long>(kd);
            if (k < 1 || k > static_cast<long>(devs.size())) continue;
            ExecOptions go = on_gpus(k);
            go.tile_kernel = tk != 0;
            auto gpu = cuda::make_executor(p, C, go, single != 0);
            double* d_state = cuda::device_alloc(C * D);
            double* d_lp = cuda::device_alloc(C);
            double* d_grad = cuda::device_alloc(C * D);
            cuda::copy_to_device(d_state, state.data(), C * D);
            const double gpu_ms = median_ms(3, reps, [&] {
              gpu->log_density_device(d_state, d_lp, d_grad);
              gpu->synchronize();
            });
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
            std::printf("%9ld %6ld %6s %4ld %5s %12.3f %14.4f %12.2f %14.3f %8.1f %10.1e %8.2f%s\n",
                        N, C, single ? "single" : "double", k, tk != 0 ? "yes" : "no", gpu_ms, gpu_ms / C, cpu_ms, cpu_ms / C,
                        cpu_ms / gpu_ms, err, gpu->device_bytes() / 1073741824.0,
                        ok ? "" : "  MISMATCH (gradient or lp)");
            std::fflush(stdout);
            std::fputs(gpu->profile_report().c_str(), stdout);
            cuda::device_free(d_state);
            cuda::device_free(d_lp);
            cuda::device_free(d_grad);
          }
        } catch (const std::exception& e) {
          std::printf("%9ld %6ld %6s failed: %s\n", N, C, single ? "single" : "double", e.what());
          ++bad;
        }
      }
    }
  }
  if (shard_gpus.size() >= 2) {
    ExecOptions so;
    so.backend = Backend::cuda;
    for (double g : shard_gpus) so.gpus.push_back(static_cast<int>(g));
    so.gpu = so.gpus[0];
    const long S = static_cast<long>(so.gpus.size());
    std::printf("\nOn GPUs");
    for (int g : so.gpus) std::printf(" %d", g);
    std::printf(": ms per gradient of all chains (double) and bytes each GPU but the first sends\n");
    std::printf("%9s %6s %16s %16s %16s %16s\n", "N", "chains", "whole grads ms", "whole bytes",
                "owned groups ms", "owned bytes");
    for (double nd : ns) {
      const long N = static_cast<long>(nd), K = 20, G = std::max(1L, N / 10);
      const Program p = hlogit(N, G, K, 20240601u);
      const long D = p.n_free;
      for (double cd : chain_list) {
        const long C = static_cast<long>(cd);
        try {
          std::mt19937_64 rng(7);
          std::normal_distribution<double> z(0, 0.3);
          std::vector<double> state(C * D), lp(C);
          for (double& v : state) v = z(rng);
          auto timed = [&](auto&& call) { return median_ms(3, reps, call); };
          double whole_ms;
          {
            auto multi = cuda::make_executor(p, C, so, false);
            double* d_state = cuda::device_alloc(C * D);
            double* d_lp = cuda::device_alloc(C);
            double* d_grad = cuda::device_alloc(C * D);
            cuda::copy_to_device(d_state, state.data(), C * D);
            whole_ms = timed([&] {
              multi->log_density_device(d_state, d_lp, d_grad);
              multi->synchronize();
            });
            cuda::device_free(d_state);
            cuda::device_free(d_lp);
            cuda::device_free(d_grad);
          }
          std::unique_ptr<DeviceShardsTarget> shards = make_device_shards(p, C, so, false);
          if (!shards) throw std::runtime_error("no groups to own");
          std::unique_ptr<ChainVectors> v = shards->vectors();
          double* x = v->make();
          double* g = v->make();
          v->upload(x, state.data());
          // (log_density waits for every GPU's log density)
          const double owned_ms = timed([&] { v->log_density(x, lp.data(), g); });
          const CommunicatorStats sent = shards->exchanged();
          const double owned_bytes =
              static_cast<double>(sent.bytes) / std::max(1L, sent.calls) / (S - 1);
          // the state to each other GPU, its whole gradient and log density back
          const double whole_bytes = 8.0 * (2 * C * D + C);
          std::printf("%9ld %6ld %16.3f %16.0f %16.3f %16.0f\n", N, C, whole_ms, whole_bytes,
                      owned_ms, owned_bytes);
        } catch (const std::exception& e) {
          std::printf("%9ld %6ld shards failed: %s\n", N, C, e.what());
          ++bad;
        }
        std::fflush(stdout);
      }
    }
  }
  for (double nd : nuts_ns) {
    if (nd <= 0 || nuts_iters.size() < 2) continue;
    const long N = static_cast<long>(nd), K = 20, G = std::max(1L, N / 10), C = 4;
    const long W = static_cast<long>(nuts_iters[0]), S = static_cast<long>(nuts_iters[1]);
    for (int single = 0; single < 2; ++single) {
      if (nuts_precision.find(single ? "single" : "double") == std::string::npos) continue;
      try {
        const Program p = hlogit(N, G, K, 20240601u);
        const long D = p.n_free;
        auto gpu = cuda::make_executor(
            p, C, on_gpus(std::min<long>(std::max(nuts_gpus, 1), static_cast<long>(devs.size()))),
            single != 0);
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
          // draws of the 2K + 2 hyperparameters (alpha, beta, log sigma_alpha,
          // log sigma_gamma: the first free values) and lp, per chain
          const long H = 2 * K + 2;
          std::vector<std::vector<std::vector<double>>> draws(
              H + 1, std::vector<std::vector<double>>(C, std::vector<double>(S)));
          for (long i = 0; i < S; ++i) {
            nuts.iterate(false);
            sample_calls += calls();
            for (long c = 0; c < C; ++c) {
              divergent += nuts.last().divergent[c];
              leapfrog += nuts.last().n_leapfrog[c];
              for (long h = 0; h < H; ++h) draws[h][c][i] = nuts.state()[c * D + h];
              draws[H][c][i] = nuts.log_density()[c];
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
          if (S >= 20) {
            double min_ess = HUGE_VAL, max_rhat = 0, lp_ess = 0, lp_rhat = 0;
            for (long h = 0; h <= H; ++h) {
              double e, r;
              bulk_ess_rhat(draws[h], e, r);
              if (h == H) {
                lp_ess = e;
                lp_rhat = r;
              } else {
                min_ess = std::min(min_ess, e);
                max_rhat = std::max(max_rhat, r);
              }
            }
            // posterior means against the simulation's true values
            // (alpha 0.3, sigma_alpha 0.8, sigma_gamma 0.3)
            double m_alpha = 0, m_sa = 0, m_sg = 0;
            for (long c = 0; c < C; ++c)
              for (long i = 0; i < S; ++i) {
                m_alpha += draws[0][c][i] / (C * S);
                m_sa += std::exp(draws[K + 1][c][i]) / (C * S);
                for (long j = 0; j < K; ++j) m_sg += std::exp(draws[K + 2 + j][c][i]) / (C * S * K);
              }
            std::printf("  draws: bulk ESS of the %ld hyperparameters min %.0f (%.1f per second of "
                        "sampling), max R-hat %.3f; lp bulk ESS %.0f (%.1f/s), R-hat %.3f; means: "
                        "alpha %.3f (true 0.3), sigma_alpha %.3f (0.8), sigma_gamma %.3f (0.3)\n",
                        H, min_ess, min_ess / sample_s, max_rhat, lp_ess, lp_ess / sample_s,
                        lp_rhat, m_alpha, m_sa, m_sg);
          }
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
