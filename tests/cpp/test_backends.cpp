// The emulated backend (the CUDA execution model run lane by lane on the CPU)
// against the cpu backend on nontrivial programs: same log density, gradient
// and node values, for several launch geometries and chain counts (ggml's TEST
// mode). The geometries include one lane, odd lane counts, and more lanes than
// work items.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "lockstep/executor.hpp"
#include "lockstep/ir.hpp"

using namespace lstest;

namespace {

// Eight schools, non-centred:
//   mu ~ normal(0, 5), tau ~ cauchy(0, 5) truncated to (0, Inf), tau > 0,
//   theta_tilde ~ normal(0, 1), theta = mu + tau * theta_tilde,
//   y ~ normal(theta, sigma).
Program eight_schools() {
  Program p;
  const int mu = p.add(param_node(1, 0));
  const int tau = p.add(param_node(1, 1, Transform::lower, 0));
  const int tt = p.add(param_node(8, 2));
  const int scaled = p.add(binary_node(Op::mul, tau, tt, p));
  const int theta = p.add(binary_node(Op::add, mu, scaled, p));
  const int y = p.add(data_node({28, 8, -3, 7, -1, 1, 18, 12}));
  const int sigma = p.add(data_node({15, 10, 16, 11, 9, 11, 10, 18}));
  const int zero = p.add(data_node({0}));
  const int one = p.add(data_node({1}));
  const int five = p.add(data_node({5}));
  add_term(p, density_node(Family::normal, {mu, zero, five}));
  add_term(p, density_node(Family::cauchy, {tau, zero, five}, 0, inf));
  add_term(p, density_node(Family::normal, {tt, zero, one}));
  add_term(p, density_node(Family::normal, {y, theta, sigma}));
  p.n_free = 10;
  lockstep::plan(p);
  return p;
}

// Hierarchical logistic regression on N = 37 rows (not a multiple of any lane
// count used): eta = X beta + alpha[group], y ~ bernoulli(ilogit(eta)),
// beta ~ normal(0, 2), alpha ~ normal(0, sigma_a), sigma_a ~ exponential(1).
Program regression() {
  const long N = 37, K = 3, G = 4;
  std::mt19937 rng(401);
  Program p;
  const int beta = p.add(param_node(K, 0));
  const int alpha = p.add(param_node(G, K));
  const int sigma_a = p.add(param_node(1, K + G, Transform::lower, 0));
  const int X = p.add(data_node(uniform_vector(rng, N * K, -1.5, 1.5), {N, K}));
  const int eta0 = p.add(matmul_node(X, beta, p));
  std::vector<long> group(N);
  for (long i = 0; i < N; ++i) group[i] = static_cast<long>(rng() % G);
  const int a = p.add(gather_node(alpha, group));
  const int eta = p.add(binary_node(Op::add, eta0, a, p));
  const int prob = p.add(unary_node(Op::ilogit, eta, p));
  std::vector<double> yv(N);
  for (double& v : yv) v = static_cast<double>(rng() % 2);
  const int y = p.add(data_node(yv));
  const int zero = p.add(data_node({0}));
  const int one = p.add(data_node({1}));
  const int two = p.add(data_node({2}));
  add_term(p, density_node(Family::bernoulli, {y, prob}));
  add_term(p, density_node(Family::normal, {beta, zero, two}));
  add_term(p, density_node(Family::normal, {alpha, zero, sigma_a}));
  add_term(p, density_node(Family::exponential, {sigma_a, one}));
  p.n_free = K + G + 1;
  lockstep::plan(p);
  return p;
}

// Every other op and family once: exp, log, log1p, sqrt, neg, sub, div, sum,
// student, a truncated student and a matrix parameter on the left of a matmul.
Program kitchen_sink() {
  Program p;
  const int v = p.add(param_node(5, 0));
  const int s = p.add(param_node(1, 5, Transform::lower, 0.1));
  const int w = p.add(param_node(6, 6, Transform::interval, -2, 2, {2, 3}));
  const int ev = p.add(unary_node(Op::exp, v, p));
  const int lv = p.add(unary_node(Op::log, ev, p));
  const int b = p.add(unary_node(Op::log1p, ev, p));
  const int c = p.add(unary_node(Op::sqrt, b, p));
  const int d = p.add(binary_node(Op::div, c, s, p));
  const int nv = p.add(unary_node(Op::neg, v, p));
  const int e = p.add(binary_node(Op::sub, d, nv, p));
  const int f = p.add(sum_node(e));
  const int M = p.add(data_node({0.5, -1, 2, 0.25, 1.5, -0.75, 1, 0, -2}, {3, 3}));
  const int wm = p.add(matmul_node(w, M, p));  // 2 x 3
  const int zero = p.add(data_node({0}));
  const int one = p.add(data_node({1}));
  const int four = p.add(data_node({4}));
  const int ten = p.add(data_node({10}));
  const int obs = p.add(data_node({1.2, 1.9, 2.5, 1.4, 1.1, 2.2}, {2, 3}));
  add_term(p, density_node(Family::normal, {lv, zero, one}));
  add_term(p, density_node(Family::student, {e, four, zero, s}));
  add_term(p, density_node(Family::normal, {f, zero, ten}));
  add_term(p, density_node(Family::exponential, {s, one}));
  add_term(p, density_node(Family::student, {obs, four, wm, s}, 1, 3));
  p.n_free = 12;
  lockstep::plan(p);
  return p;
}

struct Named {
  const char* label;
  Program (*make)();
};

const Named programs[] = {
    {"eight schools", eight_schools},
    {"hierarchical logistic regression", regression},
    {"kitchen sink", kitchen_sink},
};

// {2, 300}: blocks wider than the 256 lanes that a ChainSum's tree starts from.
const std::vector<EmulatedGeometry> geometries = {{1, 1}, {1, 5}, {3, 5}, {2, 32},
                                                  {7, 3}, {4, 64}, {2, 300}};

}  // namespace

TEST_CASE("backend_from_name", "[backends]") {
  CHECK(lockstep::backend_from_name("cpu") == Backend::cpu);
  CHECK(lockstep::backend_from_name("emulated") == Backend::emulated);
  CHECK(lockstep::backend_from_name("cuda") == Backend::cuda);
  CHECK_THROWS_AS(lockstep::backend_from_name("cuda9"), std::invalid_argument);
}

TEST_CASE("the host executor refuses the cuda backend, which has its own executor",
          "[backends]") {
  const Program p = eight_schools();
  lockstep::ExecOptions o;
  o.backend = Backend::cuda;
  CHECK_THROWS_AS(Executor<double>(p, 2, o), std::invalid_argument);
}

TEST_CASE("the test programs' cpu gradients match finite differences", "[backends][gradient]") {
  std::mt19937 rng(402);
  for (const Named& np : programs) {
    for (long chains : {1L, 3L}) {
      INFO(np.label << ", chains " << chains);
      const Program p = np.make();
      const std::vector<double> state = uniform_vector(rng, chains * p.n_free, -1, 1);
      check_gradient(p, chains, state, 1e-6, 1e-7);
    }
  }
}

TEST_CASE("emulated backend equals the cpu backend: log density, gradient and node values",
          "[backends][emulated]") {
  std::mt19937 rng(403);
  for (const Named& np : programs) {
    const Program p = np.make();
    for (long chains : {1L, 3L}) {
      INFO(np.label << ", chains " << chains);
      const std::vector<double> state = uniform_vector(rng, chains * p.n_free, -1, 1);
      check_emulated_matches_cpu(p, chains, state, geometries);
    }
  }
}

TEST_CASE("emulated backend: no cross-talk between chains and finite-difference gradients",
          "[backends][emulated][gradient]") {
  std::mt19937 rng(404);
  const Program p = regression();
  const std::vector<double> state = uniform_vector(rng, 3 * p.n_free, -1, 1);
  check_gradient(p, 3, state, 1e-6, 1e-7, 1e-4, Backend::emulated, EmulatedGeometry{3, 5});
}

TEST_CASE("log density without a gradient equals the value with one, on both backends",
          "[backends]") {
  std::mt19937 rng(405);
  for (const Named& np : programs) {
    const Program p = np.make();
    const long chains = 3;
    const std::vector<double> state = uniform_vector(rng, chains * p.n_free, -1, 1);
    for (Backend b : {Backend::cpu, Backend::emulated}) {
      INFO(np.label << (b == Backend::cpu ? ", cpu" : ", emulated"));
      Executor<double> ex(p, chains, b);
      std::vector<double> lp1(chains), lp2(chains), grad(chains * p.n_free);
      ex.log_density(state.data(), lp1.data(), grad.data());
      ex.log_density(state.data(), lp2.data(), nullptr);
      for (long c = 0; c < chains; ++c) CHECK(lp1[c] == lp2[c]);
      // forward() fills the same node values
      Executor<double> fw(p, chains, b);
      fw.forward(state.data());
      for (size_t id = 0; id < p.nodes.size(); ++id)
        CHECK(fw.value(static_cast<int>(id)) == ex.value(static_cast<int>(id)));
    }
  }
}

// The executor records its pass over every chain for the buffers it is given
// (recorded_launches.hpp) and replays it while they stay put: a pass over
// other buffers, over new values in the same ones, without the gradient, or
// with parameters aliased to the state, gives what a new executor gives.
TEST_CASE("an executor's recorded launches follow the buffers it is given", "[backends]") {
  std::mt19937 rng(409);
  for (const Named& np : programs) {
    const Program p = np.make();
    for (Backend b : {Backend::cpu, Backend::emulated}) {
      for (bool alias : {false, true}) {
        for (long chains : {1L, 3L}) {
          INFO(np.label << (b == Backend::cpu ? ", cpu" : ", emulated")
                        << (alias ? ", aliased" : "") << ", chains " << chains);
          lockstep::ExecOptions o;
          o.backend = b;
          o.alias_parameters = alias;
          Executor<double> ex(p, chains, o);
          const long n = chains * p.n_free;
          std::vector<double> a = uniform_vector(rng, n, -1, 1), c = uniform_vector(rng, n, -1, 1);
          std::vector<double> lp_a(chains), lp_b(chains), grad_a(n), grad_b(n);
          auto expect_fresh = [&](const std::vector<double>& state, const std::vector<double>& lp,
                                  const std::vector<double>* grad) {
            Executor<double> fresh(p, chains, o);
            std::vector<double> lp0(chains), grad0(n);
            fresh.log_density(state.data(), lp0.data(), grad0.data());
            CHECK(lp == lp0);
            if (grad) CHECK(*grad == grad0);
          };
          ex.log_density(a.data(), lp_a.data(), grad_a.data());
          expect_fresh(a, lp_a, &grad_a);
          ex.log_density(c.data(), lp_b.data(), grad_b.data());  // other buffers
          expect_fresh(c, lp_b, &grad_b);
          a = uniform_vector(rng, n, -1, 1);  // new values in the first ones
          ex.log_density(a.data(), lp_a.data(), grad_a.data());
          expect_fresh(a, lp_a, &grad_a);
          ex.log_density(a.data(), lp_b.data(), grad_b.data());  // the same state, other outputs
          expect_fresh(a, lp_b, &grad_b);
          ex.log_density(c.data(), lp_a.data(), nullptr);  // no gradient
          expect_fresh(c, lp_a, nullptr);
          ex.log_density(a.data(), lp_a.data(), grad_a.data());
          expect_fresh(a, lp_a, &grad_a);
        }
      }
    }
  }
}

TEST_CASE("executor refuses fewer than one chain", "[backends]") {
  const Program p = eight_schools();
  CHECK_THROWS_AS(Executor<double>(p, 0), std::invalid_argument);
}

TEST_CASE("a normal term whose parameters are one value per chain (the CPU's prepared loop) "
          "matches the log density written out, the emulated backend and finite differences",
          "[backends][distributions][prepared]") {
  std::mt19937 rng(406);
  const long n = 37;
  for (bool sd_data : {false, true}) {
    INFO((sd_data ? "sd is data" : "sd is a parameter"));
    Program p;
    const int x = p.add(param_node(n, 0));
    const int mu = p.add(param_node(1, n));
    const int sd = sd_data ? p.add(data_node({0.7})) : p.add(param_node(1, n + 1, Transform::lower, 0));
    p.n_free = n + (sd_data ? 1 : 2);
    add_term(p, density_node(Family::normal, {x, mu, sd}));
    lockstep::plan(p);
    for (long chains : {1L, 3L}) {
      const std::vector<double> state = uniform_vector(rng, chains * p.n_free, -1, 1);
      const Eval cpu = evaluate(p, chains, state);
      const Eval emulated = evaluate(p, chains, state, Backend::emulated);
      for (long c = 0; c < chains; ++c) {
        const double* z = state.data() + c * p.n_free;
        const double s = sd_data ? 0.7 : std::exp(z[n + 1]);
        double expected = sd_data ? 0 : z[n + 1];  // the log Jacobian of sd
        for (long i = 0; i < n; ++i) {
          const double u = (z[i] - z[n]) / s;
          expected += -0.5 * std::log(2 * M_PI) - std::log(s) - 0.5 * u * u;
        }
        CHECK(close(cpu.lp[c], expected, 1e-13));
        CHECK(close(emulated.lp[c], cpu.lp[c], 1e-13));
      }
      for (size_t k = 0; k < cpu.grad.size(); ++k) CHECK(close(emulated.grad[k], cpu.grad[k], 1e-12, 1e-14));
      check_gradient(p, chains, state, 1e-7, 1e-9);
    }
  }
}

// Student's t prepares its df-only terms (lgamma, digamma) once per chain,
// its location (parameter 1, not 0) free to vary by element.
TEST_CASE("a student term prepared once per chain, with a location per element or one, "
          "matches the log density written out, the emulated backend and finite differences",
          "[backends][distributions][prepared]") {
  std::mt19937 rng(407);
  const long n = 41;
  const std::vector<double> y = uniform_vector(rng, n, -3, 3);
  for (bool location_varies : {true, false}) {
    INFO((location_varies ? "a location per element" : "one location"));
    Program p;
    const long L = location_varies ? n : 1;
    const int x = p.add(data_node(y, {n, 1}));
    const int df = p.add(param_node(1, 0, Transform::lower, 0));
    const int mu = p.add(param_node(L, 1));
    const int sigma = p.add(param_node(1, 1 + L, Transform::lower, 0));
    p.n_free = L + 2;
    add_term(p, density_node(Family::student, {x, df, mu, sigma}));
    lockstep::plan(p);
    for (long chains : {1L, 3L}) {
      const std::vector<double> state = uniform_vector(rng, chains * p.n_free, -1, 1.5);
      const Eval cpu = evaluate(p, chains, state);
      const Eval emulated = evaluate(p, chains, state, Backend::emulated);
      for (long c = 0; c < chains; ++c) {
        const double* z = state.data() + c * p.n_free;
        const double v = std::exp(z[0]), s = std::exp(z[1 + L]);
        double expected = z[0] + z[1 + L];  // the log Jacobians of df and sigma
        for (long i = 0; i < n; ++i) {
          const double u = (y[i] - z[1 + (location_varies ? i : 0)]) / s;
          expected += std::lgamma((v + 1) / 2) - std::lgamma(v / 2) - 0.5 * std::log(v * M_PI) -
                      std::log(s) - (v + 1) / 2 * std::log1p(u * u / v);
        }
        CHECK(close(cpu.lp[c], expected, 1e-12));
        CHECK(close(emulated.lp[c], cpu.lp[c], 1e-12));
      }
      for (size_t k = 0; k < cpu.grad.size(); ++k) CHECK(close(emulated.grad[k], cpu.grad[k], 1e-11, 1e-13));
      check_gradient(p, chains, state, 1e-6, 1e-8);
    }
  }
}

// threads_auto: the executor uses no more threads than a call's work supports.
TEST_CASE("threads_auto runs a small model on one thread and keeps threads for a large one",
          "[backends][threads]") {
  auto normal_prior = [](long size) {
    Program p;
    const int x = p.add(param_node(size, 0, Transform::none, 0, 0, {size, 1}));
    const int zero = p.add(data_node({0}));
    const int one = p.add(data_node({1}));
    add_term(p, density_node(Family::normal, {x, zero, one}));
    p.n_free = size;
    lockstep::plan(p);
    return p;
  };
  const Program small = normal_prior(8), large = normal_prior(100000);
  // the parameter and its density (one value per chain); the constants are
  // not row data
  CHECK(lockstep::work_per_call(small, 4) == 4 * 8 + 4);
  CHECK(lockstep::work_per_call(large, 4) == 4 * 100000 + 4);
  lockstep::ExecOptions o;
  o.threads = 2;
  o.threads_auto = true;
  CHECK(lockstep::effective_threads(small, 4, o) == 1);
  CHECK(lockstep::effective_threads(large, 4, o) == 2);
  CHECK(lockstep::effective_threads(large, 1, o) == 2);  // 100000 values: many threads' worth
  // one and a quarter threads' worth: one thread
  CHECK(lockstep::effective_threads(normal_prior(lockstep::min_work_per_thread * 5 / 4), 1, o) == 1);
  CHECK(lockstep::effective_threads(normal_prior(lockstep::min_work_per_thread * 2), 1, o) == 2);
  o.threads = 64;
  CHECK(lockstep::effective_threads(large, 4, o) == 4 * 100001 / lockstep::min_work_per_thread);
  {
    Executor<double> ex(small, 4, o);
    CHECK(ex.threads() == 1);
    CHECK(ex.pool() == nullptr);  // samplers then run their vector operations inline
  }
  // Chosen by the caller: used as given.
  o.threads = 2;
  o.threads_auto = false;
  CHECK(lockstep::effective_threads(small, 4, o) == 2);
  Executor<double> ex(small, 4, o);
  CHECK(ex.threads() == 2);
  CHECK(ex.pool() != nullptr);
  // the same log density and gradient either way
  std::mt19937 rng(5);
  const std::vector<double> state = uniform_vector(rng, 4 * 8, -1, 1);
  std::vector<double> lp1(4), g1(32), lp2(4), g2(32);
  ex.log_density(state.data(), lp1.data(), g1.data());
  o.threads_auto = true;
  Executor<double> auto_ex(small, 4, o);
  auto_ex.log_density(state.data(), lp2.data(), g2.data());
  CHECK(lp1 == lp2);
  CHECK(g1 == g2);
}
