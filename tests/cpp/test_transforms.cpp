// Constraint transforms of parameter slices (ir.hpp, kernels/param.hpp): the
// constrained value, the log |Jacobian| the log density gains, and gradients.
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

struct TransformCase {
  const char* label;
  Transform t;
  double lower, upper;
};

const TransformCase transform_cases[] = {
    {"none", Transform::none, 0, 0},
    {"lower 1.5", Transform::lower, 1.5, 0},
    {"lower -2", Transform::lower, -2, 0},
    {"upper -0.5", Transform::upper, 0, -0.5},
    {"interval (-1, 3)", Transform::interval, -1, 3},
    {"interval (0, 1)", Transform::interval, 0, 1},
};

// x = g(z), written out by hand.
double constrained(const TransformCase& tc, double z) {
  switch (tc.t) {
    case Transform::none: return z;
    case Transform::lower: return tc.lower + std::exp(z);
    case Transform::upper: return tc.upper - std::exp(z);
    case Transform::interval: return tc.lower + (tc.upper - tc.lower) / (1 + std::exp(-z));
  }
  return z;
}

// log |dx/dz|, by hand.
double log_jacobian(const TransformCase& tc, double z) {
  switch (tc.t) {
    case Transform::none: return 0;
    case Transform::lower:
    case Transform::upper: return std::log(std::exp(z));
    case Transform::interval: {
      const double s = 1 / (1 + std::exp(-z));
      return std::log((tc.upper - tc.lower) * s * (1 - s));
    }
  }
  return 0;
}

double log_normal(double x, double m, double s) {
  return -0.5 * std::log(2 * M_PI) - std::log(s) - 0.5 * (x - m) * (x - m) / (s * s);
}

}  // namespace

TEST_CASE("transform_from_name knows every transform and refuses others", "[transforms][ir]") {
  CHECK(lockstep::transform_from_name("none") == Transform::none);
  CHECK(lockstep::transform_from_name("lower") == Transform::lower);
  CHECK(lockstep::transform_from_name("upper") == Transform::upper);
  CHECK(lockstep::transform_from_name("interval") == Transform::interval);
  CHECK_THROWS_AS(lockstep::transform_from_name("simplex_typo"), std::invalid_argument);
  CHECK_THROWS_AS(lockstep::transform_from_name(""), std::invalid_argument);
}

TEST_CASE("transforms: constrained values and the log Jacobian in the log density",
          "[transforms]") {
  std::mt19937 rng(301);
  const long n = 4;
  for (const TransformCase& tc : transform_cases) {
    for (long chains : {1L, 3L}) {
      INFO(tc.label << ", chains " << chains);
      // x = g(z) ~ normal(0.4, 2.5), elementwise; the free state is z.
      Program p;
      const int x = p.add(param_node(n, 0, tc.t, tc.lower, tc.upper));
      const int m = p.add(data_node({0.4}));
      const int s = p.add(data_node({2.5}));
      add_term(p, density_node(Family::normal, {x, m, s}));
      p.n_free = n;
      lockstep::plan(p);
      const std::vector<double> state = uniform_vector(rng, chains * n, -2, 2);
      Executor<double> ex(p, chains);
      std::vector<double> lp(chains), grad(chains * n);
      ex.log_density(state.data(), lp.data(), grad.data());
      for (long c = 0; c < chains; ++c) {
        double expected = 0;
        for (long i = 0; i < n; ++i) {
          const double z = state[c * n + i], xv = constrained(tc, z);
          CHECK(close(ex.value(x)[c * n + i], xv, 1e-15, 1e-15));
          expected += log_normal(xv, 0.4, 2.5) + log_jacobian(tc, z);
        }
        CHECK(close(lp[c], expected, 1e-13, 1e-14));
      }
      check_gradient(p, chains, state, 1e-8, 1e-10);
    }
  }
}

TEST_CASE("transforms: a parameter with no density contributes its log Jacobian alone",
          "[transforms]") {
  for (const TransformCase& tc : transform_cases) {
    INFO(tc.label);
    Program p;
    p.add(param_node(3, 0, tc.t, tc.lower, tc.upper));
    p.n_free = 3;
    lockstep::plan(p);
    const std::vector<double> state = {-1.2, 0.3, 2.1, 0.7, -0.1, -3};
    const Eval e = evaluate(p, 2, state);
    for (long c = 0; c < 2; ++c) {
      double expected = 0;
      for (long i = 0; i < 3; ++i) {
        const double z = state[c * 3 + i];
        expected += log_jacobian(tc, z);
        // d log J / dz: 1 for lower and upper, 1 - 2 ilogit(z) for interval
        const double d = tc.t == Transform::none       ? 0
                         : tc.t == Transform::interval ? 1 - 2 / (1 + std::exp(-z))
                                                       : 1;
        CHECK(close(e.grad[c * 3 + i], d, 1e-14, 1e-15));
      }
      CHECK(close(e.lp[c], expected, 1e-13, 1e-14));
    }
  }
}

TEST_CASE("interval transform: the log Jacobian is finite in both tails", "[transforms]") {
  const TransformCase tc{"interval (-1, 3)", Transform::interval, -1, 3};
  Program p;
  const int x = p.add(param_node(6, 0, tc.t, tc.lower, tc.upper));
  p.n_free = 6;
  lockstep::plan(p);
  const std::vector<double> state = {-700, -40, -1e-3, 1e-3, 40, 700};
  Executor<double> ex(p, 1);
  double lp = 0;
  std::vector<double> grad(6);
  ex.log_density(state.data(), &lp, grad.data());
  // log J = log 4 - |z| - 2 log1p(exp(-|z|)), about log 4 - |z| far out
  double expected = 0;
  for (double z : state) expected += std::log(4.0) - std::fabs(z) - 2 * std::log1p(std::exp(-std::fabs(z)));
  CHECK(std::isfinite(lp));
  CHECK(close(lp, expected, 1e-13));
  for (long i = 0; i < 6; ++i) {
    CHECK(ex.value(x)[i] >= -1);
    CHECK(ex.value(x)[i] <= 3);
    CHECK(std::isfinite(grad[i]));
  }
  CHECK(close(grad[0], 1, 1e-15));
  CHECK(close(grad[5], -1, 1e-15));
}

TEST_CASE("transforms: several constrained slices in one program, gradient for 3 chains",
          "[transforms][gradient]") {
  std::mt19937 rng(302);
  // mu (none), sigma (lower 0), rho (interval (-1, 1)), u (upper 2):
  // y ~ normal(mu + rho * u, sigma) for data y.
  Program p;
  const int mu = p.add(param_node(1, 0));
  const int sigma = p.add(param_node(1, 1, Transform::lower, 0));
  const int rho = p.add(param_node(3, 2, Transform::interval, -1, 1));
  const int up = p.add(param_node(3, 5, Transform::upper, 0, 2));
  const int ru = p.add(binary_node(Op::mul, rho, up, p));
  const int mean = p.add(binary_node(Op::add, mu, ru, p));
  const int y = p.add(data_node({0.3, -1.1, 2.4}));
  add_term(p, density_node(Family::normal, {y, mean, sigma}));
  const int five = p.add(data_node({5}));
  const int zero = p.add(data_node({0}));
  add_term(p, density_node(Family::normal, {up, zero, five}));
  p.n_free = 8;
  lockstep::plan(p);
  const std::vector<double> state = uniform_vector(rng, 3 * 8, -1.5, 1.5);
  check_gradient(p, 3, state, 1e-8, 1e-10);
}
