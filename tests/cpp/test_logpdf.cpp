// The logpdf op (ops.def, kernels/logpdf.hpp): a family's log density at each
// element of its target. Values against formulas written here, and gradients
// with respect to the target and every parameter against finite differences,
// through a weighted sum (so that each element's adjoint differs), on the cpu
// and emulated backends for one, two and three chains; truncation, discrete
// families on data, broadcast parameters, and what validate() refuses.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "helpers.hpp"
#include "lockstep/executor.hpp"
#include "lockstep/ir.hpp"
#include "lockstep/planner.hpp"

using namespace lstest;

namespace {

const double log_2pi = std::log(2 * M_PI);

Node logpdf_node(Family f, std::vector<int> inputs, const Program& p, double lower = -inf,
                 double upper = inf) {
  Node n;
  n.op = Op::logpdf;
  n.dim = p.nodes[inputs[0]].dim;
  n.size = p.nodes[inputs[0]].size;
  n.inputs = std::move(inputs);
  n.family = f;
  n.trunc_lower = lower;
  n.trunc_upper = upper;
  return n;
}

// log density = sum_i w[i] * lp[i], w fixed and distinct per element: a
// term of family target (its log density is its input).
void add_weighted_sum(Program& p, int lp) {
  const long n = p.nodes[lp].size;
  std::vector<double> w(n);
  for (long i = 0; i < n; ++i) w[i] = 0.5 + 0.25 * i;
  const int wd = p.add(data_node(w, p.nodes[lp].dim));
  const int s = p.add(sum_node(p.add(binary_node(Op::mul, lp, wd, p))));
  add_term(p, density_node(Family::target, {s}));
}

double normal_lpdf(double x, double m, double s) {
  const double z = (x - m) / s;
  return -0.5 * z * z - std::log(s) - 0.5 * log_2pi;
}
double pnorm(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// The logpdf node's values for chain c.
std::vector<double> values_of(const Program& p, long chains, const std::vector<double>& state,
                              int id, long c, Backend b) {
  Executor<double> ex(p, chains, b);
  ex.forward(state.data());
  const Node& n = p.nodes[id];
  const std::vector<double>& all = ex.value(id);
  const long first = n.chain ? c * n.size : 0;
  return std::vector<double>(all.begin() + first, all.begin() + first + n.size);
}

}  // namespace

TEST_CASE("logpdf: normal log densities per element, with gradients in target and parameters",
          "[ops][logpdf]") {
  std::mt19937 rng(7);
  const long n = 4;
  // state: x[4], mean[4], log sd (one value, broadcast)
  Program p;
  const int x = p.add(param_node(n, 0));
  const int mean = p.add(param_node(n, n));
  const int sd = p.add(unary_node(Op::exp, p.add(param_node(1, 2 * n)), p));
  const int lp = p.add(logpdf_node(Family::normal, {x, mean, sd}, p));
  add_weighted_sum(p, lp);
  p.n_free = 2 * n + 1;
  lockstep::plan(p);
  CHECK(p.nodes[lp].dim == std::vector<long>({n, 1}));
  for (long chains : {1L, 2L, 3L}) {
    const std::vector<double> state = uniform_vector(rng, chains * p.n_free, -1.5, 1.5);
    for (Backend b : {Backend::cpu, Backend::emulated}) {
      INFO("chains " << chains << (b == Backend::cpu ? ", cpu" : ", emulated"));
      for (long c = 0; c < chains; ++c) {
        const double* z = state.data() + c * p.n_free;
        const std::vector<double> v = values_of(p, chains, state, lp, c, b);
        for (long i = 0; i < n; ++i)
          CHECK(close(v[i], normal_lpdf(z[i], z[n + i], std::exp(z[2 * n])), 1e-13));
      }
      check_gradient(p, chains, state, 1e-6, 1e-8, 1e-4, b);
    }
    check_emulated_matches_cpu(p, chains, state);
  }
}

// The CPU's loop prepares the family's parameter-only math once per chain
// (kernels/logpdf.hpp) where every parameter is one value per chain (here)
// or all but a varying location (above); the emulated backend's lanes do not,
// and sum the scalar parameters' partials in block-shared slots (37 rows:
// more than the emulated launch's 15 lanes, so each lane sums several).
TEST_CASE("logpdf: one mean and sd per chain over data, prepared once per chain",
          "[ops][logpdf][prepared]") {
  std::mt19937 rng(9);
  const std::vector<double> y = uniform_vector(rng, 37, -2, 3);
  const long n = static_cast<long>(y.size());
  Program p;
  const int x = p.add(data_node(y, {n, 1}));
  const int mean = p.add(param_node(1, 0));
  const int sd = p.add(unary_node(Op::exp, p.add(param_node(1, 1)), p));
  const int lp = p.add(logpdf_node(Family::normal, {x, mean, sd}, p));
  add_weighted_sum(p, lp);
  p.n_free = 2;
  lockstep::plan(p);
  for (long chains : {1L, 2L, 4L}) {
    const std::vector<double> state = uniform_vector(rng, chains * p.n_free, -1, 1);
    for (Backend b : {Backend::cpu, Backend::emulated}) {
      INFO("chains " << chains << (b == Backend::cpu ? ", cpu" : ", emulated"));
      for (long c = 0; c < chains; ++c) {
        const double* z = state.data() + c * p.n_free;
        const std::vector<double> v = values_of(p, chains, state, lp, c, b);
        for (long i = 0; i < n; ++i)
          CHECK(close(v[i], normal_lpdf(y[i], z[0], std::exp(z[1])), 1e-13));
      }
      check_gradient(p, chains, state, 1e-6, 1e-8, 1e-4, b);
    }
    check_emulated_matches_cpu(p, chains, state);
  }
}

TEST_CASE("logpdf: a truncated family renormalises each element, with gradients",
          "[ops][logpdf]") {
  std::mt19937 rng(11);
  const long n = 3;
  const double lo = -1, hi = 2;
  // x in (lo, hi) through an interval transform; mean and sd scalars
  Program p;
  const int x = p.add(param_node(n, 0, Transform::interval, lo, hi));
  const int mean = p.add(param_node(1, n));
  const int sd = p.add(unary_node(Op::exp, p.add(param_node(1, n + 1)), p));
  const int lp = p.add(logpdf_node(Family::normal, {x, mean, sd}, p, lo, hi));
  add_weighted_sum(p, lp);
  p.n_free = n + 2;
  lockstep::plan(p);
  for (long chains : {1L, 3L}) {
    const std::vector<double> state = uniform_vector(rng, chains * p.n_free, -1, 1);
    for (Backend b : {Backend::cpu, Backend::emulated}) {
      INFO("chains " << chains << (b == Backend::cpu ? ", cpu" : ", emulated"));
      for (long c = 0; c < chains; ++c) {
        const double* z = state.data() + c * p.n_free;
        const double m = z[n], s = std::exp(z[n + 1]);
        const double mass = pnorm((hi - m) / s) - pnorm((lo - m) / s);
        const std::vector<double> v = values_of(p, chains, state, lp, c, b);
        for (long i = 0; i < n; ++i) {
          const double xi = lo + (hi - lo) / (1 + std::exp(-z[i]));
          CHECK(close(v[i], normal_lpdf(xi, m, s) - std::log(mass), 1e-12));
        }
      }
      check_gradient(p, chains, state, 1e-6, 1e-8, 1e-4, b);
    }
    check_emulated_matches_cpu(p, chains, state);
  }
}

TEST_CASE("logpdf: a discrete family on data, its parameter per element", "[ops][logpdf]") {
  std::mt19937 rng(13);
  const std::vector<double> y = {0, 3, 1, 7, 2};
  const long n = static_cast<long>(y.size());
  Program p;
  const int yd = p.add(data_node(y));
  const int lambda = p.add(unary_node(Op::exp, p.add(param_node(n, 0)), p));
  const int lp = p.add(logpdf_node(Family::poisson, {yd, lambda}, p));
  add_weighted_sum(p, lp);
  p.n_free = n;
  lockstep::plan(p);
  CHECK(p.nodes[lp].chain);
  for (long chains : {1L, 2L}) {
    const std::vector<double> state = uniform_vector(rng, chains * n, -1, 2);
    for (Backend b : {Backend::cpu, Backend::emulated}) {
      INFO("chains " << chains << (b == Backend::cpu ? ", cpu" : ", emulated"));
      for (long c = 0; c < chains; ++c) {
        const std::vector<double> v = values_of(p, chains, state, lp, c, b);
        for (long i = 0; i < n; ++i) {
          const double l = std::exp(state[c * n + i]);
          CHECK(close(v[i], y[i] * std::log(l) - l - std::lgamma(y[i] + 1), 1e-13));
        }
      }
      check_gradient(p, chains, state, 1e-6, 1e-8, 1e-4, b);
    }
  }
}

TEST_CASE("validate refuses malformed logpdf nodes", "[ops][logpdf][validate]") {
  auto base = [] {
    Program p;
    p.add(param_node(3, 0));
    p.add(data_node({0}));
    p.add(data_node({1}));
    p.n_free = 3;
    return p;
  };
  {
    Program p = base();
    p.add(logpdf_node(Family::normal, {0, 1, 2}, p));
    CHECK_NOTHROW(lockstep::validate(p));
  }
  {
    Program p = base();
    p.add(logpdf_node(Family::normal, {0, 1}, p));  // a parameter missing
    CHECK_THROWS_WITH(lockstep::validate(p), Catch::Contains("needs the target and 2 parameters"));
  }
  {
    Program p = base();
    Node n = logpdf_node(Family::normal, {0, 1, 2}, p);
    n.dim = {1, 1};
    n.size = 1;
    p.add(n);
    CHECK_THROWS_WITH(lockstep::validate(p), Catch::Contains("the target's shape"));
  }
  {
    Program p = base();
    p.add(logpdf_node(Family::target, {0}, p));
    CHECK_THROWS_WITH(lockstep::validate(p), Catch::Contains("no elementwise log density"));
  }
  {
    Program p = base();
    p.add(logpdf_node(Family::poisson, {0, 2}, p, 0, 5));
    CHECK_THROWS_WITH(lockstep::validate(p), Catch::Contains("cannot be truncated"));
  }
}
