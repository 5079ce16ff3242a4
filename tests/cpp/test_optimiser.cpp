// Optimisers for opt() (optimiser.hpp) on targets with known optima: every
// method from several starts at once (one per chain), convergence codes,
// failures, and bad settings.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "lockstep/optimiser.hpp"
#include "sampler_helpers.hpp"

using lockstep::OptimiserSettings;
using lockstep::Target;
using namespace sampler_tests;

namespace {

// Rosenbrock's banana, as a log density: lp = -((1 - a)^2 + 100 (b - a^2)^2).
class Rosenbrock : public Target {
 public:
  explicit Rosenbrock(long chains) : chains_(chains) {}
  long dim() const override { return 2; }
  long chains() const override { return chains_; }
  void log_density(const double* x, double* lp, double* grad) override {
    for (long c = 0; c < chains_; ++c) {
      const double a = x[2 * c], b = x[2 * c + 1];
      lp[c] = -((1 - a) * (1 - a) + 100 * (b - a * a) * (b - a * a));
      if (grad) {
        grad[2 * c] = -(-2 * (1 - a) - 400 * a * (b - a * a));
        grad[2 * c + 1] = -(200 * (b - a * a));
      }
    }
  }

 private:
  long chains_;
};

std::vector<double> starts(long C, long D) {
  std::vector<double> x(C * D);
  for (long k = 0; k < C * D; ++k) x[k] = 2 * std::sin(1.3 * k + 0.4);
  return x;
}

}  // namespace

TEST_CASE("opt: every method finds the optimum of a Gaussian from several starts",
          "[opt]") {
  const std::vector<double> mu = {1, -2, 0.5};
  const std::vector<double> sd = {0.5, 1, 2};
  IndependentGaussian t(mu, sd, 3);
  struct Case {
    std::string method;
    std::map<std::string, double> params;
    long iterations;
    double tol;
  };
  const std::vector<Case> cases = {
      {"bfgs", {}, 100, 1e-6},
      {"nelder_mead", {{"func_tolerance", 1e-14}, {"position_tolerance", 1e-9}}, 5000, 1e-5},
      {"nelder_mead", {{"step_sizes", 0.1}, {"func_tolerance", 1e-14}}, 5000, 1e-5},
      {"gradient_descent", {{"learning_rate", 0.1}}, 5000, 1e-3},
      {"gradient_descent", {{"learning_rate", 0.05}, {"momentum", 0.5}, {"nesterov", 1}}, 5000, 1e-3},
      {"adam", {}, 5000, 1e-3},
      {"adam", {{"amsgrad", 1}}, 5000, 1e-3},
      {"adamax", {{"learning_rate", 0.05}}, 5000, 1e-3},
      {"nadam", {{"learning_rate", 0.05}}, 5000, 1e-3},
      {"adagrad", {{"learning_rate", 0.5}}, 5000, 1e-3},
      {"adadelta", {{"learning_rate", 1}, {"rho", 0.95}, {"epsilon", 1e-6}}, 20000, 1e-2},
      {"rms_prop", {{"learning_rate", 0.01}}, 5000, 1e-2},
      {"rms_prop", {{"learning_rate", 0.01}, {"centered", 1}, {"momentum", 0.5}}, 5000, 1e-2},
      {"ftrl", {{"learning_rate", 0.5}}, 5000, 1e-3},
      {"ftrl", {{"learning_rate", 0.5}, {"beta", 0.5}, {"learning_rate_power", -0.3}}, 5000, 1e-3},
      {"proximal_gradient_descent", {{"learning_rate", 0.1}}, 5000, 1e-3},
      {"proximal_adagrad", {{"learning_rate", 0.5}}, 5000, 1e-3},
      {"adagrad_da", {{"learning_rate", 0.5}}, 20000, 1e-2},
  };
  for (const Case& k : cases) {
    INFO(k.method);
    OptimiserSettings s;
    s.method = k.method;
    s.params = k.params;
    s.max_iterations = k.iterations;
    s.tolerance = 1e-12;
    const auto r = lockstep::optimise(t, s, starts(3, 3));
    for (long c = 0; c < 3; ++c) {
      CHECK(r.convergence[c] != 2);
      CHECK(r.iterations[c] >= 1);
      for (long i = 0; i < 3; ++i) CHECK(std::fabs(r.par[c * 3 + i] - mu[i]) < k.tol);
      CHECK(std::fabs(r.value[c]) < k.tol);  // -lp at the optimum is 0
    }
  }
}

TEST_CASE("opt: the L1 and L2 penalties of the proximal methods reach the penalised optimum, "
          "with exact zeros", "[opt]") {
  // -lp = sum (x - mu)^2 / (2 sd^2): with l1 |x| added the optimum is mu soft-
  // thresholded by l1 sd^2, 0 where |mu| < l1 sd^2 (the third element); with
  // l2 x^2 / 2 too it is shrunk by 1 / (1 + l2 sd^2). (ftrl's and
  // adagrad_da's penalties are paid once against the sum of every step's
  // loss, so they fade as the steps add up: see the next case.)
  const std::vector<double> mu = {1, -2, 0.5};
  const std::vector<double> sd = {0.5, 1, 2};
  IndependentGaussian t(mu, sd, 2);
  const double l1 = 0.3, l2 = 0.2;
  struct Case {
    std::string method;
    double lr;
    long iterations;
  };
  const std::vector<Case> cases = {{"proximal_gradient_descent", 0.1, 5000},
                                   {"proximal_adagrad", 0.5, 20000}};
  for (const Case& k : cases)
    for (bool with_l2 : {false, true}) {
      INFO(k.method << (with_l2 ? " with l2" : " l1 only"));
      OptimiserSettings s;
      s.method = k.method;
      s.params = {{"learning_rate", k.lr}, {"l1_regularization_strength", l1}};
      if (with_l2) s.params["l2_regularization_strength"] = l2;
      s.max_iterations = k.iterations;
      s.tolerance = 0;
      const auto r = lockstep::optimise(t, s, starts(2, 3));
      for (long c = 0; c < 2; ++c)
        for (long i = 0; i < 3; ++i) {
          const double v = sd[i] * sd[i];
          const double shrunk = std::max(std::fabs(mu[i]) - l1 * v, 0.0) / (1 + (with_l2 ? l2 * v : 0));
          const double want = mu[i] > 0 ? shrunk : -shrunk;
          INFO("start " << c << ", element " << i << ": " << r.par[c * 3 + i] << ", want " << want);
          CHECK(std::fabs(r.par[c * 3 + i] - want) < 1e-3);
          if (want == 0) CHECK(r.par[c * 3 + i] == 0.0);
        }
    }
}

TEST_CASE("opt: ftrl and adagrad_da hold an element at exactly 0 while its L1 penalty "
          "outweighs its summed gradients", "[opt]") {
  const std::vector<double> mu = {1, -2, 0.5};
  const std::vector<double> sd = {0.5, 1, 2};
  IndependentGaussian t(mu, sd, 2);
  for (const std::string method : {"ftrl", "adagrad_da"}) {
    INFO(method);
    OptimiserSettings s;
    s.method = method;
    // the summed gradient of element i after n steps is at most n |mu_i - x_i|
    // / sd_i^2 <= n (2 + |mu_i|) / sd_i^2; 50 steps and an l1 of 1e4 hold
    // every element at 0 from the first step on
    s.params = {{"learning_rate", 0.5}, {"l1_regularization_strength", 1e4}};
    s.max_iterations = 50;
    s.tolerance = 0;
    const auto r = lockstep::optimise(t, s, starts(2, 3));
    for (double v : r.par) CHECK(v == 0.0);
    // and without it, they move
    s.params.erase("l1_regularization_strength");
    const auto free = lockstep::optimise(t, s, starts(2, 3));
    for (double v : free.par) CHECK(v != 0.0);
  }
}

TEST_CASE("opt: bfgs solves Rosenbrock's banana and reports convergence", "[opt]") {
  Rosenbrock t(4);
  OptimiserSettings s;
  s.method = "bfgs";
  s.max_iterations = 500;
  s.tolerance = 1e-14;
  const auto r = lockstep::optimise(t, s, starts(4, 2));
  for (long c = 0; c < 4; ++c) {
    INFO("start " << c << ": " << r.par[2 * c] << ", " << r.par[2 * c + 1]);
    CHECK(r.convergence[c] == 0);
    CHECK(std::fabs(r.par[2 * c] - 1) < 1e-4);
    CHECK(std::fabs(r.par[2 * c + 1] - 1) < 1e-4);
    CHECK(r.iterations[c] < 200);
  }
  // an iteration limit too small to get there: convergence 1
  s.max_iterations = 3;
  const auto short_run = lockstep::optimise(t, s, starts(4, 2));
  for (long c = 0; c < 4; ++c) {
    CHECK(short_run.convergence[c] == 1);
    CHECK(short_run.iterations[c] == 3);
  }
}

TEST_CASE("opt: nelder_mead solves Rosenbrock's banana from several starts, values only",
          "[opt]") {
  Rosenbrock t(4);
  OptimiserSettings s;
  s.method = "nelder_mead";
  s.max_iterations = 2000;
  s.params = {{"func_tolerance", 1e-16}, {"position_tolerance", 1e-10}};
  const auto r = lockstep::optimise(t, s, starts(4, 2));
  for (long c = 0; c < 4; ++c) {
    INFO("start " << c << ": " << r.par[2 * c] << ", " << r.par[2 * c + 1]);
    CHECK(r.convergence[c] == 0);
    CHECK(std::fabs(r.par[2 * c] - 1) < 1e-4);
    CHECK(std::fabs(r.par[2 * c + 1] - 1) < 1e-4);
    CHECK(r.value[c] < 1e-8);
    CHECK(r.iterations[c] < 2000);
  }
  // starts that differ take different numbers of iterations, in lockstep
  CHECK(!(r.iterations[0] == r.iterations[1] && r.iterations[1] == r.iterations[2] &&
          r.iterations[2] == r.iterations[3]));
  // loose tolerances stop early; an iteration limit gives convergence 1
  s.params = {{"func_tolerance", 1e6}};
  const auto loose = lockstep::optimise(t, s, starts(4, 2));
  for (long c = 0; c < 4; ++c) CHECK((loose.convergence[c] == 0 && loose.iterations[c] == 0));
  s.params = {{"func_tolerance", 1e-16}, {"position_tolerance", 1e-16}};
  s.max_iterations = 3;
  const auto short_run = lockstep::optimise(t, s, starts(4, 2));
  for (long c = 0; c < 4; ++c) {
    CHECK(short_run.convergence[c] == 1);
    CHECK(short_run.iterations[c] == 3);
    // never worse than the start
    const double a = starts(4, 2)[2 * c], b = starts(4, 2)[2 * c + 1];
    CHECK(short_run.value[c] <= (1 - a) * (1 - a) + 100 * (b - a * a) * (b - a * a));
  }
}

TEST_CASE("opt: a start with a non-finite density fails alone, and bad settings are refused",
          "[opt][errors]") {
  BadStart t(-HUGE_VAL);  // chain 2 of 4 is -Inf
  OptimiserSettings s;
  s.method = "adam";
  const auto r = lockstep::optimise(t, s, std::vector<double>(4, 0.5));
  CHECK(r.convergence[2] == 2);
  CHECK(r.convergence[0] != 2);
  s.method = "nelder_mead";
  const auto nm = lockstep::optimise(t, s, std::vector<double>(4, 0.5));
  CHECK(nm.convergence[2] == 2);
  CHECK(nm.convergence[0] != 2);
  s.method = "newton";
  CHECK_THROWS_AS(lockstep::optimise(t, s, std::vector<double>(4, 0.5)), std::invalid_argument);
  s.method = "bfgs";
  CHECK_THROWS_AS(lockstep::optimise(t, s, std::vector<double>(3, 0.5)), std::invalid_argument);
  s.max_iterations = 0;
  CHECK_THROWS_AS(lockstep::optimise(t, s, std::vector<double>(4, 0.5)), std::invalid_argument);
}
