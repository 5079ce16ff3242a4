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
//                    [--nuts-n 1e5] [--nuts W,S]
// For each N, chains and precision it prints the GPU's milliseconds per
// gradient (median of R timed calls after warm-up, state, lp and gradient in
// device memory, each call synchronised), per chain-gradient, the CPU
// executor's (T threads, tiled observation stage) and their ratio, and checks
// that the GPU's log density agrees with the CPU's. Then a NUTS run of 4
// chains (W warmup and S sampling iterations, default 150,150) on the GPU for
// each --nuts-n N: the sampler on the CPU, every gradient on the GPU through
// the Target interface (state and gradient copied each step), timed as a
// whole, with the engine calls it made.
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
#include "lockstep/sampler/nuts.hpp"

using namespace lockstep;

namespace {

Node leaf_data(std::vector<double> v, std::vector<long> dim) {
  Node n;
  n.op = Op::data;
  n.dim = std::move(dim);
  n.size = n.dim[0] * n.dim[1];
  n.values = std::move(v);
  return n;
}

Node leaf_param(long rows, long cols, long offset, Transform t) {
  Node n;
  n.op = Op::param;
  n.dim = {rows, cols};
  n.size = rows * cols;
  n.offset = offset;
  n.transform = t;
  n.lower = t == Transform::lower ? 0 : -HUGE_VAL;
  return n;
}

Node op_node(Op op, std::vector<int> inputs, std::vector<long> dim) {
  Node n;
  n.op = op;
  n.inputs = std::move(inputs);
  n.dim = std::move(dim);
  n.size = n.dim[0] * n.dim[1];
  return n;
}

int term(Program& p, Family f, std::vector<int> inputs, double lower = -HUGE_VAL) {
  Node n = op_node(Op::density, std::move(inputs), {1, 1});
  n.family = f;
  n.trunc_lower = lower;
  n.trunc_upper = HUGE_VAL;
  const int id = p.add(std::move(n));
  p.terms.push_back(id);
  return id;
}

int scalar(Program& p, double v) { return p.add(leaf_data({v}, {1, 1})); }

// The program R's lowering builds for the seed model (node for node).
Program hlogit(long N, long G, long K, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  std::vector<double> X(N * K);  // column-major N x K
  for (double& x : X) x = z(rng);
  std::vector<long> g(N);
  for (long& v : g) v = static_cast<long>(rng() % G);
  std::vector<double> a_g(G), gam(G * K), beta(K);
  for (double& v : a_g) v = 0.8 * z(rng);
  for (double& v : gam) v = 0.3 * z(rng);
  for (double& v : beta) v = 0.5 * z(rng);
  std::vector<double> y(N);
  std::uniform_real_distribution<double> u(0, 1);
  for (long r = 0; r < N; ++r) {
    double eta = 0.3 + a_g[g[r]];
    for (long j = 0; j < K; ++j) eta += X[j * N + r] * (beta[j] + gam[j * G + g[r]]);
    y[r] = u(rng) < 1 / (1 + std::exp(-eta)) ? 1 : 0;
  }

  Program p;
  const int alpha = p.add(leaf_param(1, 1, 0, Transform::none));
  term(p, Family::normal, {alpha, scalar(p, 0), scalar(p, 1.5)});
  const int b = p.add(leaf_param(K, 1, 1, Transform::none));
  term(p, Family::normal, {b, scalar(p, 0), scalar(p, 1)});
  const int s_a = p.add(leaf_param(1, 1, 1 + K, Transform::lower));
  term(p, Family::normal, {s_a, scalar(p, 0), scalar(p, 1)}, 0);
  const int s_g = p.add(leaf_param(K, 1, 2 + K, Transform::lower));
  term(p, Family::normal, {s_g, scalar(p, 0), scalar(p, 0.5)}, 0);
  const int z_a = p.add(leaf_param(G, 1, 2 + 2 * K, Transform::none));
  term(p, Family::normal, {z_a, scalar(p, 0), scalar(p, 1)});
  const int z_g = p.add(leaf_param(G, K, 2 + 2 * K + G, Transform::none));
  term(p, Family::normal, {z_g, scalar(p, 0), scalar(p, 1)});
  const int alpha_g = p.add(op_node(Op::mul, {s_a, z_a}, {G, 1}));
  const int Xd = p.add(leaf_data(X, {N, K}));
  const int s_gt = p.add(op_node(Op::transpose, {s_g}, {1, K}));
  const int gamma = p.add(op_node(Op::mul, {z_g, s_gt}, {G, K}));
  Node ga = op_node(Op::gather, {alpha_g}, {N, 1});
  ga.index = g;
  const int a_rows = p.add(std::move(ga));
  const int e1 = p.add(op_node(Op::add, {alpha, a_rows}, {N, 1}));
  const int xb = p.add(op_node(Op::matmul, {Xd, b}, {N, 1}));
  const int e2 = p.add(op_node(Op::add, {e1, xb}, {N, 1}));
  Node gr = op_node(Op::gather_rows, {gamma}, {N, K});
  gr.index = g;
  const int g_rows = p.add(std::move(gr));
  const int xg = p.add(op_node(Op::mul, {Xd, g_rows}, {N, K}));
  const int rs = p.add(op_node(Op::rowsum, {xg}, {N, 1}));
  const int eta = p.add(op_node(Op::add, {e2, rs}, {N, 1}));
  const int yd = p.add(leaf_data(y, {N, 1}));
  term(p, Family::bernoulli_logit, {yd, eta});
  p.n_free = 2 + 2 * K + G + G * K;
  plan(p);
  return p;
}

// Counts the engine calls a sampler makes (one per leapfrog step of all chains).
class Counting : public Target {
 public:
  explicit Counting(Target& t) : t_(t) {}
  long dim() const override { return t_.dim(); }
  long chains() const override { return t_.chains(); }
  void log_density(const double* s, double* lp, double* g) override {
    ++calls;
    t_.log_density(s, lp, g);
  }
  long calls = 0;

 private:
  Target& t_;
};

std::vector<double> parse_list(const std::string& s) {
  std::vector<double> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::stod(item));
  return out;
}

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
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--n") ns = parse_list(argv[i + 1]);
    else if (a == "--chains") chain_list = parse_list(argv[i + 1]);
    else if (a == "--threads") threads = std::atoi(argv[i + 1]);
    else if (a == "--reps") reps = std::atoi(argv[i + 1]);
    else if (a == "--nuts-n") nuts_ns = parse_list(argv[i + 1]);
    else if (a == "--nuts") nuts_iters = parse_list(argv[i + 1]);
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
        Counting counted(*gpu);
        std::mt19937_64 rng(11);
        std::uniform_real_distribution<double> u(-0.5, 0.5);
        std::vector<double> init(C * D);
        for (double& v : init) v = u(rng);
        NutsSettings settings;
        auto t0 = std::chrono::steady_clock::now();
        Nuts nuts(counted, settings, init, 1234u, 5678u);
        nuts.begin_warmup(W);
        for (long i = 0; i < W; ++i) nuts.iterate(true);
        const double warm_s = seconds_since(t0);
        const long warm_calls = counted.calls;
        t0 = std::chrono::steady_clock::now();
        long divergent = 0, leapfrog = 0;
        for (long i = 0; i < S; ++i) {
          nuts.iterate(false);
          for (long c = 0; c < C; ++c) {
            divergent += nuts.last().divergent[c];
            leapfrog += nuts.last().n_leapfrog[c];
          }
        }
        const double sample_s = seconds_since(t0);
        const long sample_calls = counted.calls - warm_calls;
        std::printf("NUTS N=%ld, 4 chains, %s: warmup %ld its %.1f s (%ld engine calls), "
                    "sampling %ld its %.1f s (%ld engine calls, %.3f ms each; mean %.1f "
                    "leapfrog steps per chain-iteration; step size %.4f; %ld divergent)\n",
                    N, single ? "single" : "double", W, warm_s, warm_calls, S, sample_s,
                    sample_calls, 1e3 * sample_s / std::max(1L, sample_calls),
                    static_cast<double>(leapfrog) / (C * std::max(1L, S)), nuts.epsilon(),
                    divergent);
        std::fflush(stdout);
      } catch (const std::exception& e) {
        std::printf("NUTS N=%ld %s failed: %s\n", N, single ? "single" : "double", e.what());
        ++bad;
      }
    }
  }
  std::printf("%s\n", bad ? "SOME RUNS FAILED" : "all runs agree with the CPU");
  return bad ? 1 : 0;
}
