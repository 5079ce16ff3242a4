// Optimisers for opt() (optimiser.hpp) on targets with known optima: every
// method from several starts at once (one per chain), convergence codes,
// failures, and bad settings.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <utility>
#include <stdexcept>
#include <string>
#include <vector>

#include "lockstep/first_order.hpp"
#include "lockstep/optimiser.hpp"
#include "models.hpp"
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

// Each first-order rule's first steps against the rules as Keras and
// TensorFlow write them (one coordinate at a time, in scalars), on a
// quadratic whose gradient is x - target, for two rows whose states must not
// mix (nadam's schedule is each row's). FirstOrder's rules are FirstOrderStep
// (kernels/first_order_step.hpp), the body svi()'s guide runs on a GPU too.
TEST_CASE("opt: every first-order rule's steps are Keras's and TensorFlow's", "[opt]") {
  struct Case {
    std::string method;
    std::map<std::string, double> params;
  };
  const std::vector<Case> cases = {
      {"gradient_descent", {{"learning_rate", 0.1}, {"momentum", 0.7}}},
      {"gradient_descent", {{"learning_rate", 0.1}, {"momentum", 0.7}, {"nesterov", 1}}},
      {"adam", {{"learning_rate", 0.1}, {"beta_1", 0.8}, {"beta_2", 0.9}, {"epsilon", 1e-3}}},
      {"adam", {{"learning_rate", 0.1}, {"beta_1", 0.8}, {"beta_2", 0.9}, {"epsilon", 1e-3},
                {"amsgrad", 1}}},
      {"adamax", {{"learning_rate", 0.1}, {"beta_1", 0.8}, {"beta_2", 0.9}, {"epsilon", 1e-3}}},
      {"nadam", {{"learning_rate", 0.1}, {"beta_1", 0.8}, {"beta_2", 0.9}, {"epsilon", 1e-3}}},
      {"adagrad", {{"learning_rate", 0.3}, {"initial_accumulator_value", 0.2}, {"epsilon", 1e-3}}},
      {"adadelta", {{"learning_rate", 0.5}, {"rho", 0.8}, {"epsilon", 1e-3}}},
      {"rms_prop", {{"learning_rate", 0.1}, {"rho", 0.8}, {"epsilon", 1e-3}}},
      {"rms_prop", {{"learning_rate", 0.1}, {"rho", 0.8}, {"epsilon", 1e-3}, {"centered", 1},
                    {"momentum", 0.6}}},
      {"ftrl", {{"learning_rate", 0.5}, {"learning_rate_power", -0.3}, {"initial_accumulator_value", 0.2},
                {"l1_regularization_strength", 0.05}, {"l2_regularization_strength", 0.1},
                {"l2_shrinkage_regularization_strength", 0.02}, {"beta", 0.4}}},
      {"proximal_gradient_descent", {{"learning_rate", 0.1}, {"l1_regularization_strength", 0.3},
                                     {"l2_regularization_strength", 0.2}}},
      {"proximal_adagrad", {{"learning_rate", 0.3}, {"initial_accumulator_value", 0.2},
                            {"l1_regularization_strength", 0.3}, {"l2_regularization_strength", 0.2}}},
      {"adagrad_da", {{"learning_rate", 0.3}, {"initial_gradient_squared_accumulator_value", 0.2},
                      {"l1_regularization_strength", 0.3}, {"l2_regularization_strength", 0.2},
                      {"global_step", 2}}},
      {"adagrad_da", {{"learning_rate", 0.3}, {"initial_gradient_squared_accumulator_value", 0.2},
                      {"l2_regularization_strength", 0.2}}}};
  const long C = 2, D = 3, steps = 6;
  const std::vector<double> target = {2.0, -1.5, 0.1};
  for (const Case& k : cases) {
    INFO(k.method);
    OptimiserSettings s;
    s.method = k.method;
    s.params = k.params;
    auto p = [&](const char* name) { return k.params.count(name) ? k.params.at(name) : 0.0; };
    lockstep::FirstOrder rule(s, C, D);
    std::vector<double> x(C * D), g(C * D);
    for (long j = 0; j < C * D; ++j) x[j] = 0.5 - 0.4 * j;
    // the reference: each coordinate's own state, in scalars
    struct State {
      double x, m = 0, v = 0, vhat = 0, accum = 0, linear = 0, schedule = 1;
    };
    std::vector<State> ref(C * D);
    for (long j = 0; j < C * D; ++j) {
      ref[j].x = x[j];
      ref[j].accum = k.method == "adagrad_da" ? p("initial_gradient_squared_accumulator_value")
                                              : p("initial_accumulator_value");
    }
    const double lr = p("learning_rate"), b1 = p("beta_1"), b2 = p("beta_2"), eps = p("epsilon");
    const double l1 = p("l1_regularization_strength"), l2 = p("l2_regularization_strength");
    for (long t = 1; t <= steps; ++t) {
      for (long j = 0; j < C * D; ++j) g[j] = x[j] - target[j % D];
      for (long c = 0; c < C; ++c) rule.step(x.data() + c * D, g.data() + c * D, c, D, t);
      for (long j = 0; j < C * D; ++j) {
        State& r = ref[j];
        const double gr = r.x - target[j % D];
        if (k.method == "gradient_descent") {
          r.m = p("momentum") * r.m - lr * gr;
          r.x += p("nesterov") != 0 ? p("momentum") * r.m - lr * gr : r.m;
        } else if (k.method == "adam") {
          r.m = b1 * r.m + (1 - b1) * gr;
          r.v = b2 * r.v + (1 - b2) * gr * gr;
          r.vhat = std::max(r.vhat, r.v);
          const double rate = lr * std::sqrt(1 - std::pow(b2, t)) / (1 - std::pow(b1, t));
          r.x -= rate * r.m / (std::sqrt(p("amsgrad") != 0 ? r.vhat : r.v) + eps);
        } else if (k.method == "adamax") {
          r.m = b1 * r.m + (1 - b1) * gr;
          r.v = std::max(b2 * r.v, std::abs(gr));
          r.x -= lr / (1 - std::pow(b1, t)) * r.m / (r.v + eps);
        } else if (k.method == "nadam") {
          const double cache = b1 * (1 - 0.5 * std::pow(0.96, t * 0.004));
          const double cache_next = b1 * (1 - 0.5 * std::pow(0.96, (t + 1) * 0.004));
          const double schedule_new = r.schedule * cache, schedule_next = schedule_new * cache_next;
          r.schedule = schedule_new;
          r.m = b1 * r.m + (1 - b1) * gr;
          r.v = b2 * r.v + (1 - b2) * gr * gr;
          const double m_bar = (1 - cache) * gr / (1 - schedule_new) +
                               cache_next * r.m / (1 - schedule_next);
          r.x -= lr * m_bar / (std::sqrt(r.v / (1 - std::pow(b2, t))) + eps);
        } else if (k.method == "adagrad") {
          r.accum += gr * gr;
          r.x -= lr * gr / (std::sqrt(r.accum) + eps);
        } else if (k.method == "adadelta") {
          r.v = p("rho") * r.v + (1 - p("rho")) * gr * gr;  // accumulated g^2
          const double update = gr * std::sqrt(r.m + eps) / std::sqrt(r.v + eps);
          r.m = p("rho") * r.m + (1 - p("rho")) * update * update;  // accumulated updates^2
          r.x -= lr * update;
        } else if (k.method == "rms_prop") {
          r.v = p("rho") * r.v + (1 - p("rho")) * gr * gr;
          r.m = p("rho") * r.m + (1 - p("rho")) * gr;  // the mean gradient
          const double denom = p("centered") != 0 ? r.v - r.m * r.m : r.v;
          const double update = lr * gr / (std::sqrt(denom) + eps);
          r.vhat = p("momentum") * r.vhat + update;  // the momentum
          r.x -= p("momentum") > 0 ? r.vhat : update;
        } else if (k.method == "ftrl") {
          const double power = -p("learning_rate_power");
          const double shrunk_g = gr + 2 * p("l2_shrinkage_regularization_strength") * r.x;
          const double accum_new = r.accum + gr * gr;
          r.linear += shrunk_g - (std::pow(accum_new, power) - std::pow(r.accum, power)) / lr * r.x;
          const double quadratic = (std::pow(accum_new, power) + p("beta")) / lr + 2 * l2;
          const double sign = r.linear > 0 ? 1 : -1;
          r.x = std::abs(r.linear) > l1 ? (sign * l1 - r.linear) / quadratic : 0;
          r.accum = accum_new;
        } else if (k.method == "proximal_gradient_descent" || k.method == "proximal_adagrad") {
          double rate = lr;
          if (k.method == "proximal_adagrad") {
            r.accum += gr * gr;
            rate = lr / std::sqrt(r.accum);
          }
          const double prox = r.x - rate * gr;
          const double sign = prox > 0 ? 1 : -1;
          r.x = sign * std::max(std::abs(prox) - rate * l1, 0.0) / (1 + rate * l2);
        } else if (k.method == "adagrad_da") {
          const double step = k.params.count("global_step") ? p("global_step") : 1;
          r.linear += gr;  // the gradients' sum
          r.accum += gr * gr;
          const double denom = l2 * step * lr + std::sqrt(r.accum);
          const double sign = r.linear > 0 ? -1 : 1;
          r.x = l1 > 0 ? sign * lr * std::max(std::abs(r.linear) - l1 * step, 0.0) / denom
                       : -lr * r.linear / denom;
        }
      }
      for (long j = 0; j < C * D; ++j) {
        INFO("step " << t << " coordinate " << j);
        CHECK(x[j] == Approx(ref[j].x).epsilon(1e-12).margin(1e-14));
      }
    }
    // the rule moved every coordinate (the reference could fail)
    for (long j = 0; j < C * D; ++j) CHECK(x[j] != 0.5 - 0.4 * j);
  }
}

namespace {

// A Gaussian about (3, 0) whose gradient is NaN where its first coordinate
// is in (at, at + 0.5), and whose density is 0 below -50: a start that
// lands in the band fails there, and keeps its last finite point.
class NanPast : public Target {
 public:
  NanPast(double at, long chains) : at_(at), C_(chains) {}
  long dim() const override { return 2; }
  long chains() const override { return C_; }
  void log_density(const double* x, double* lp, double* grad) override {
    for (long c = 0; c < C_; ++c) {
      const double a = x[2 * c] - 3, b = x[2 * c + 1];
      lp[c] = x[2 * c] < -50 ? -INFINITY : -0.5 * (a * a + b * b);
      if (!grad) continue;
      grad[2 * c] = x[2 * c] > at_ && x[2 * c] < at_ + 0.5 ? std::nan("") : -a;
      grad[2 * c + 1] = -b;
    }
  }

 private:
  double at_;
  long C_;
};

// opt()'s result with settings s from init, its starts, gradients and the
// rule's state in host memory (resident -1) or on the target's vectors (1).
lockstep::OptimiserResult optimise_at(Target& target, OptimiserSettings s,
                                      const std::vector<double>& init, int resident) {
  s.resident = resident;
  return lockstep::optimise(target, s, init);
}

void check_same_result(const lockstep::OptimiserResult& host,
                       const lockstep::OptimiserResult& vectors) {
  CHECK(vectors.iterations == host.iterations);
  CHECK(vectors.convergence == host.convergence);
  REQUIRE(vectors.par.size() == host.par.size());
  for (size_t k = 0; k < host.par.size(); ++k) {
    INFO("coordinate " << k);
    CHECK(vectors.par[k] == Approx(host.par[k]).epsilon(1e-12).margin(1e-14));
  }
  for (size_t c = 0; c < host.value.size(); ++c)
    CHECK(vectors.value[c] == Approx(host.value[c]).epsilon(1e-12).margin(1e-14));
}

}  // namespace

// The first-order methods may keep their starts on the target's vectors (a
// GPU's memory), running the same rule body (FirstOrderStep) there: on the
// CPU and, lane by lane, the emulated backend, each must take the host's
// steps from every start, with starts that converge early, one whose
// density is not finite at the start, and one whose gradient stops being
// finite (its last finite point kept).
TEST_CASE("opt: the first-order methods on the target's vectors take the host's steps",
          "[opt][resident]") {
  std::mt19937 rng(4242);
  lstest::Demand d = lstest::demand(300, 7, 4, rng);
  lockstep::plan(d.p);
  const long starts = 3;
  std::vector<double> init(starts * d.p.n_free);
  for (size_t k = 0; k < init.size(); ++k) init[k] = 0.3 * std::sin(0.7 * k);
  const std::vector<std::pair<std::string, std::map<std::string, double>>> methods = {
      {"gradient_descent", {{"learning_rate", 0.001}, {"momentum", 0.5}}},
      {"adam", {{"learning_rate", 0.05}}},
      {"adamax", {{"learning_rate", 0.05}}},
      {"nadam", {{"learning_rate", 0.05}}},
      {"adagrad", {{"learning_rate", 0.2}}},
      {"adadelta", {{"learning_rate", 0.5}, {"rho", 0.95}}},
      {"rms_prop", {{"learning_rate", 0.01}, {"centered", 1}}},
      {"ftrl", {{"learning_rate", 0.2}}},
      {"proximal_gradient_descent", {{"learning_rate", 0.001}, {"l1_regularization_strength", 0.01}}},
      {"proximal_adagrad", {{"learning_rate", 0.2}}},
      {"adagrad_da", {{"learning_rate", 0.2}}}};
  for (lockstep::Backend backend : {lockstep::Backend::cpu, lockstep::Backend::emulated})
    for (const auto& method : methods) {
      INFO("backend " << static_cast<int>(backend) << " " << method.first);
      lockstep::ExecOptions o;
      o.backend = backend;
      o.threads = 2;
      o.tile_rows = 16;
      lockstep::Executor<double> target(d.p, starts, o);
      OptimiserSettings s;
      s.method = method.first;
      s.params = method.second;
      s.max_iterations = 40;
      s.tolerance = 1e-3;
      const lockstep::OptimiserResult host = optimise_at(target, s, init, -1);
      const lockstep::OptimiserResult vectors = optimise_at(target, s, init, 1);
      check_same_result(host, vectors);
      CHECK(host.par != init);  // the starts moved
    }
  // early convergence, a start not finite at the outset, one that fails
  // later (its last finite point kept), and one still running at the limit
  NanPast nan_past(2.0, 4);
  OptimiserSettings s;
  s.method = "gradient_descent";
  s.params = {{"learning_rate", 0.3}};
  s.max_iterations = 8;
  s.tolerance = 1e-4;
  const std::vector<double> from = {2.9, 0.1, -60, 0, 0.5, 1, 40, -20};
  const lockstep::OptimiserResult host = optimise_at(nan_past, s, from, -1);
  CHECK(host.convergence == std::vector<int>{0, 2, 2, 1});
  check_same_result(host, optimise_at(nan_past, s, from, 1));
  // where the vectors are in host memory the starts stay there by default
  // (the same result either way: only where they live differs)
  check_same_result(host, optimise_at(nan_past, s, from, 0));
}
