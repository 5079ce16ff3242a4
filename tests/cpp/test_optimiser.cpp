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
