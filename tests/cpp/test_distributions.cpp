// The distributions of distributions.def: log densities against hand-written
// ones and against R, partials against finite differences, the CDFs and special
// functions behind truncation against R, truncated densities, and NaN for
// invalid parameters. Reference numbers marked "R:" were produced by the R call
// quoted next to them (R 4.x, printed with sprintf("%.17g", ...)).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <type_traits>
#include <vector>

#include "family_programs.hpp"
#include "helpers.hpp"
#include "lockstep/distributions.hpp"
#include "lockstep/executor.hpp"
#include "lockstep/kernels/density.hpp"
#include "lockstep/kernels/running_sums.hpp"
#include "lockstep/ir.hpp"
#include "lockstep/math/normal_tails.hpp"
#include "lockstep/math/special.hpp"

using namespace lstest;
using lockstep::dist_cdf;
using lockstep::dist_lpdf;
using lockstep::max_dist_params;
using lockstep::truncated_lpdf;

namespace {

struct FamilyInfo {
  std::string name;
  Family family;
  int n_params;
  bool continuous;
};

std::vector<FamilyInfo> all_families() {
  return {
#define LS_DIST(name, n_params, continuous, tile) {#name, Family::name, n_params, continuous},
#include "lockstep/distributions.def"
#undef LS_DIST
  };
}

// Hand-written log densities, written differently from the library's (the
// density itself, then its log), and a generator of valid parameters.
struct FamilyRef {
  std::function<double(double x, const double* p)> lpdf;
  std::function<void(std::mt19937&, double* x, double* p)> draw;
};

double u(std::mt19937& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}

// binomial(size, g^-1(eta)), naively, for an inverse link g^-1 and eta drawn
// in (-range, range): the binomial references of the link-scale families.
FamilyRef link_binomial_ref(double (*inverse_link)(double), double range) {
  return {[inverse_link](double x, const double* p) {
            const double n = p[0], q = inverse_link(p[1]);
            const double choose =
                std::tgamma(n + 1) / (std::tgamma(x + 1) * std::tgamma(n - x + 1));
            return std::log(choose * std::pow(q, x) * std::pow(1 - q, n - x));
          },
          [range](std::mt19937& r, double* x, double* p) {
            p[0] = std::floor(u(r, 1, 16));
            p[1] = u(r, -range, range);
            *x = std::floor(u(r, 0, p[0]));
          }};
}

const std::map<std::string, FamilyRef>& family_refs() {
  static const std::map<std::string, FamilyRef> m = {
      {"normal",
       {[](double x, const double* p) {
          const double z = (x - p[0]) / p[1];
          return std::log(std::exp(-z * z / 2) / (p[1] * std::sqrt(2 * M_PI)));
        },
        [](std::mt19937& r, double* x, double* p) {
          p[0] = u(r, -1, 1);
          p[1] = u(r, 0.5, 2);
          *x = u(r, -3, 3);
        }}},
      {"cauchy",
       {[](double x, const double* p) {
          const double z = (x - p[0]) / p[1];
          return std::log(1 / (M_PI * p[1] * (1 + z * z)));
        },
        [](std::mt19937& r, double* x, double* p) {
          p[0] = u(r, -1, 1);
          p[1] = u(r, 0.5, 2);
          *x = u(r, -5, 5);
        }}},
      {"student",
       {[](double x, const double* p) {
          const double v = p[0], z = (x - p[1]) / p[2];
          const double f = std::tgamma((v + 1) / 2) /
                           (std::tgamma(v / 2) * std::sqrt(v * M_PI) * p[2]) *
                           std::pow(1 + z * z / v, -(v + 1) / 2);
          return std::log(f);
        },
        [](std::mt19937& r, double* x, double* p) {
          p[0] = u(r, 0.5, 20);
          p[1] = u(r, -1, 1);
          p[2] = u(r, 0.5, 2);
          *x = u(r, -4, 4);
        }}},
      {"exponential",
       {[](double x, const double* p) { return std::log(p[0] * std::exp(-p[0] * x)); },
        [](std::mt19937& r, double* x, double* p) {
          p[0] = u(r, 0.2, 3);
          *x = u(r, 0.01, 4);
        }}},
      {"bernoulli",
       {[](double x, const double* p) { return std::log(x == 1 ? p[0] : 1 - p[0]); },
        [](std::mt19937& r, double* x, double* p) {
          p[0] = u(r, 0.05, 0.95);
          *x = u(r, 0, 1) < 0.5 ? 0 : 1;
        }}},
      // the naive form, fine for moderate eta
      {"bernoulli_logit",
       {[](double x, const double* p) {
          const double q = 1 / (1 + std::exp(-p[0]));
          return std::log(x == 1 ? q : 1 - q);
        },
        [](std::mt19937& r, double* x, double* p) {
          p[0] = u(r, -4, 4);
          *x = u(r, 0, 1) < 0.5 ? 0 : 1;
        }}},
      // greta's representations, naive forms (fine for moderate eta); Phi by erfc
      {"bernoulli_probit",
       {[](double x, const double* p) {
          const double q = 0.5 * std::erfc(-p[0] / std::sqrt(2.0));
          return std::log(x == 1 ? q : 1 - q);
        },
        [](std::mt19937& r, double* x, double* p) {
          p[0] = u(r, -3, 3);
          *x = u(r, 0, 1) < 0.5 ? 0 : 1;
        }}},
      {"binomial_logit", link_binomial_ref([](double e) { return 1 / (1 + std::exp(-e)); }, 3)},
      {"binomial_probit",
       link_binomial_ref([](double e) { return 0.5 * std::erfc(-e / std::sqrt(2.0)); }, 2)},
      {"poisson_log",
       {[](double x, const double* p) {
          const double l = std::exp(p[0]);
          return std::log(std::pow(l, x) * std::exp(-l) / std::tgamma(x + 1));
        },
        [](std::mt19937& r, double* x, double* p) {
          p[0] = u(r, -1.5, 2);
          *x = std::floor(u(r, 0, 11));
        }}},
      {"uniform",
       {[](double, const double* p) { return std::log(1 / (p[1] - p[0])); },
        [](std::mt19937& r, double* x, double* p) {
          p[0] = u(r, -2, 0);
          p[1] = u(r, 0.5, 2);
          *x = u(r, p[0] + 0.05, p[1] - 0.05);
        }}},
      {"lognormal",
       {[](double x, const double* p) {
          const double z = (std::log(x) - p[0]) / p[1];
          return std::log(std::exp(-z * z / 2) / (x * p[1] * std::sqrt(2 * M_PI)));
        },
        [](std::mt19937& r, double* x, double* p) {
          p[0] = u(r, -1, 1);
          p[1] = u(r, 0.3, 2);
          *x = u(r, 0.1, 5);
        }}},
      {"gamma",
       {[](double x, const double* p) {
          return std::log(std::pow(p[1], p[0]) * std::pow(x, p[0] - 1) * std::exp(-p[1] * x) /
                          std::tgamma(p[0]));
        },
        [](std::mt19937& r, double* x, double* p) {
          p[0] = u(r, 0.5, 5);
          p[1] = u(r, 0.3, 3);
          *x = u(r, 0.1, 5);
        }}},
      {"inverse_gamma",
       {[](double x, const double* p) {
          return std::log(std::pow(p[1], p[0]) / std::tgamma(p[0]) * std::pow(x, -p[0] - 1) *
                          std::exp(-p[1] / x));
        },
        [](std::mt19937& r, double* x, double* p) {
          p[0] = u(r, 0.5, 5);
          p[1] = u(r, 0.3, 3);
          *x = u(r, 0.2, 5);
        }}},
      {"weibull",
       {[](double x, const double* p) {
          const double k = p[0], l = p[1];
          return std::log(k / l * std::pow(x / l, k - 1) * std::exp(-std::pow(x / l, k)));
        },
        [](std::mt19937& r, double* x, double* p) {
          p[0] = u(r, 0.5, 4);
          p[1] = u(r, 0.5, 3);
          *x = u(r, 0.1, 4);
        }}},
      {"pareto",
       {[](double x, const double* p) {
          return std::log(p[0] * std::pow(p[1], p[0]) / std::pow(x, p[0] + 1));
        },
        [](std::mt19937& r, double* x, double* p) {
          p[0] = u(r, 0.5, 4);
          p[1] = u(r, 0.5, 2);
          *x = p[1] + u(r, 0.05, 5);
        }}},
      {"laplace",
       {[](double x, const double* p) {
          return std::log(std::exp(-std::fabs(x - p[0]) / p[1]) / (2 * p[1]));
        },
        [](std::mt19937& r, double* x, double* p) {
          p[0] = u(r, -1, 1);
          p[1] = u(r, 0.5, 2);
          *x = u(r, -4, 4);
          if (std::fabs(*x - p[0]) < 0.01) *x += 0.02;  // off the kink at mu
        }}},
      {"beta",
       {[](double x, const double* p) {
          const double a = p[0], b = p[1];
          return std::log(std::pow(x, a - 1) * std::pow(1 - x, b - 1) * std::tgamma(a + b) /
                          (std::tgamma(a) * std::tgamma(b)));
        },
        [](std::mt19937& r, double* x, double* p) {
          p[0] = u(r, 0.5, 5);
          p[1] = u(r, 0.5, 5);
          *x = u(r, 0.05, 0.95);
        }}},
      {"chi_squared",
       {[](double x, const double* p) {
          const double k = p[0];
          return std::log(std::pow(x, k / 2 - 1) * std::exp(-x / 2) /
                          (std::pow(2, k / 2) * std::tgamma(k / 2)));
        },
        [](std::mt19937& r, double* x, double* p) {
          p[0] = u(r, 0.5, 10);
          *x = u(r, 0.1, 8);
        }}},
      {"logistic",
       {[](double x, const double* p) {
          const double e = std::exp(-(x - p[0]) / p[1]);
          return std::log(e / (p[1] * (1 + e) * (1 + e)));
        },
        [](std::mt19937& r, double* x, double* p) {
          p[0] = u(r, -1, 1);
          p[1] = u(r, 0.5, 2);
          *x = u(r, -5, 5);
        }}},
      {"f",
       {[](double x, const double* p) {
          const double d1 = p[0], d2 = p[1];
          const double B = std::tgamma(d1 / 2) * std::tgamma(d2 / 2) / std::tgamma((d1 + d2) / 2);
          return std::log(std::sqrt(std::pow(d1 * x, d1) * std::pow(d2, d2) /
                                    std::pow(d1 * x + d2, d1 + d2)) /
                          (x * B));
        },
        [](std::mt19937& r, double* x, double* p) {
          p[0] = u(r, 0.5, 10);
          p[1] = u(r, 0.5, 10);
          *x = u(r, 0.1, 5);
        }}},
      {"poisson",
       {[](double x, const double* p) {
          return std::log(std::pow(p[0], x) * std::exp(-p[0]) / std::tgamma(x + 1));
        },
        [](std::mt19937& r, double* x, double* p) {
          p[0] = u(r, 0.2, 8);
          *x = std::floor(u(r, 0, 11));
        }}},
      // x below size, so that finite differences in size stay inside the support
      {"binomial",
       {[](double x, const double* p) {
          const double n = p[0], q = p[1];
          const double choose = std::tgamma(n + 1) / (std::tgamma(x + 1) * std::tgamma(n - x + 1));
          return std::log(choose * std::pow(q, x) * std::pow(1 - q, n - x));
        },
        [](std::mt19937& r, double* x, double* p) {
          p[0] = std::floor(u(r, 1, 16));
          p[1] = u(r, 0.05, 0.95);
          *x = std::floor(u(r, 0, p[0]));
        }}},
      {"negative_binomial",
       {[](double x, const double* p) {
          const double n = p[0], q = p[1];
          return std::log(std::tgamma(x + n) / (std::tgamma(n) * std::tgamma(x + 1)) *
                          std::pow(q, n) * std::pow(1 - q, x));
        },
        [](std::mt19937& r, double* x, double* p) {
          p[0] = u(r, 0.5, 8);
          p[1] = u(r, 0.1, 0.9);
          *x = std::floor(u(r, 0, 16));
        }}},
      // x below size, as for binomial
      {"beta_binomial",
       {[](double x, const double* p) {
          const double n = p[0], a = p[1], b = p[2];
          auto B = [](double s, double t) {
            return std::tgamma(s) * std::tgamma(t) / std::tgamma(s + t);
          };
          const double choose = std::tgamma(n + 1) / (std::tgamma(x + 1) * std::tgamma(n - x + 1));
          return std::log(choose * B(x + a, n - x + b) / B(a, b));
        },
        [](std::mt19937& r, double* x, double* p) {
          p[0] = std::floor(u(r, 1, 16));
          p[1] = u(r, 0.5, 5);
          p[2] = u(r, 0.5, 5);
          *x = std::floor(u(r, 0, p[0]));
        }}},
      // choose(a, b) as a product; counts only (see partials_are_zero)
      {"hypergeometric",
       {[](double x, const double* p) {
          auto choose = [](double a, double b) {
            double c = 1;
            for (int i = 1; i <= b; ++i) c *= (a - b + i) / i;
            return c;
          };
          const double m = p[0], n = p[1], k = p[2];
          return std::log(choose(m, x) * choose(n, k - x) / choose(m + n, k));
        },
        [](std::mt19937& r, double* x, double* p) {
          p[0] = std::floor(u(r, 0, 12));
          p[1] = std::floor(u(r, 0, 12));
          p[2] = std::min(std::floor(u(r, 0, p[0] + p[1] + 1)), p[0] + p[1]);
          const double lo = std::max(0.0, p[2] - p[1]), hi = std::min(p[2], p[0]);
          *x = std::min(lo + std::floor(u(r, 0, hi - lo + 1)), hi);
        }}},
      // no distribution: a constrained variable's log |Jacobian|, added as is
      {"log_jacobian",
       {[](double x, const double*) { return x; },
        [](std::mt19937& r, double* x, double*) { *x = u(r, -30, 30); }}},
      // no distribution: a log density built from ordinary ops, added as is
      {"target",
       {[](double x, const double*) { return x; },
        [](std::mt19937& r, double* x, double*) { *x = u(r, -30, 30); }}},
  };
  return m;
}

// Families whose parameters are all counts: their partials are 0 by definition
// (and the density is NaN off the whole numbers, so there is no difference to
// take).
bool partials_are_zero(const std::string& f) { return f == "hypergeometric"; }

// CDF partials that the library itself computes by central differences (no
// closed form in these shape parameters): family name and parameter index.
bool cdf_partial_by_differences(const std::string& f, int k) {
  return (f == "student" && k == 0) || (f == "gamma" && k == 0) ||
         (f == "inverse_gamma" && k == 0) || f == "beta" || f == "chi_squared" || f == "f";
}

double lpdf(Family f, double x, std::vector<double> p) {
  double dx = 0, dp[max_dist_params] = {0, 0, 0};
  p.resize(max_dist_params, 0);
  return dist_lpdf(f, x, p.data(), &dx, dp);
}

double cdf(Family f, double x, std::vector<double> p) {
  double dp[max_dist_params] = {0, 0, 0};
  p.resize(max_dist_params, 0);
  return dist_cdf(f, x, p.data(), dp);
}

double tlpdf(Family f, double x, std::vector<double> p, double lo, double hi) {
  double dx = 0, dp[max_dist_params] = {0, 0, 0};
  const int k = lockstep::family_n_params(f);
  p.resize(max_dist_params, 0);
  return truncated_lpdf(f, k, x, p.data(), lo, hi, &dx, dp);
}

}  // namespace

TEST_CASE("every family in distributions.def has a reference", "[distributions][coverage]") {
  int count = 0;
  for (const FamilyInfo& f : all_families()) {
    INFO("family " << f.name);
    CHECK(family_refs().count(f.name));
    CHECK(lockstep::family_n_params(f.family) == f.n_params);
    CHECK(f.n_params <= max_dist_params);
    ++count;
  }
  CHECK(family_refs().size() == static_cast<size_t>(count));
}

TEST_CASE("lpdf of every family matches a hand-written log density", "[distributions][lpdf]") {
  std::mt19937 rng(201);
  for (const FamilyInfo& f : all_families()) {
    const FamilyRef& ref = family_refs().at(f.name);
    for (int rep = 0; rep < 50; ++rep) {
      double x, p[max_dist_params] = {0, 0, 0}, dx, dp[max_dist_params];
      ref.draw(rng, &x, p);
      INFO("family " << f.name << ", x " << x << ", p " << p[0] << " " << p[1] << " " << p[2]);
      CHECK(close(dist_lpdf(f.family, x, p, &dx, dp), ref.lpdf(x, p), 1e-12, 1e-13));
    }
  }
}

TEST_CASE("lpdf matches R's d* functions", "[distributions][lpdf][R]") {
  const double tol = 1e-13;
  // R: dnorm(0.3, -0.2, 1.7, log = TRUE) etc.
  CHECK(close(lpdf(Family::normal, 0.3, {-0.2, 1.7}), -1.4928193794225524, tol));
  CHECK(close(lpdf(Family::normal, -2.5, {1, 0.4}), -38.283897801330518, tol));
  CHECK(close(lpdf(Family::normal, 10, {0, 3}), -7.5731063774283394, tol));
  // R: dcauchy(0.3, -0.2, 1.7, log = TRUE) etc.
  CHECK(close(lpdf(Family::cauchy, 0.3, {-0.2, 1.7}), -1.7583244347073916, tol));
  CHECK(close(lpdf(Family::cauchy, -4, {1, 0.5}), -5.0667032221307142, tol));
  CHECK(close(lpdf(Family::cauchy, 100, {0, 2}), -9.6623229972869638, tol));
  // greta's student(df, mu, sigma) is dt((x - mu) / sigma, df) / sigma.
  // R: dt((0.7 - 0.2) / 1.5, 3, log = TRUE) - log(1.5)
  CHECK(close(lpdf(Family::student, 0.7, {3, 0.2, 1.5}), -1.4790892460734237, tol));
  // R: dt((-5 - 1) / 0.3, 0.8, log = TRUE) - log(0.3)
  CHECK(close(lpdf(Family::student, -5, {0.8, 1, 0.3}), -5.5820674318850783, tol));
  // R: dt(2, 30, log = TRUE)
  CHECK(close(lpdf(Family::student, 2, {30, 0, 1}), -2.8672990411659387, tol));
  // R: dexp(0.7, 2, log = TRUE); dexp(3, 0.1, log = TRUE); dexp(0, 5, log = TRUE)
  CHECK(close(lpdf(Family::exponential, 0.7, {2}), -0.70685281944005462, tol));
  CHECK(close(lpdf(Family::exponential, 3, {0.1}), -2.6025850929940457, tol));
  CHECK(close(lpdf(Family::exponential, 0, {5}), 1.6094379124341003, tol));
  // R: dbinom(1, 1, 0.3, log = TRUE); dbinom(0, 1, 0.3, log = TRUE);
  //    dbinom(1, 1, 0.999, log = TRUE); dbinom(0, 1, 1e-6, log = TRUE)
  CHECK(close(lpdf(Family::bernoulli, 1, {0.3}), -1.2039728043259361, tol));
  CHECK(close(lpdf(Family::bernoulli, 0, {0.3}), -0.35667494393873245, tol));
  CHECK(close(lpdf(Family::bernoulli, 1, {0.999}), -0.0010005003335835344, tol));
  CHECK(close(lpdf(Family::bernoulli, 0, {1e-6}), -1.0000005000003334e-06, tol));
  // R: dbinom(1, 1, plogis(0.3), log = TRUE); dbinom(0, 1, plogis(0.3), log = TRUE);
  //    dbinom(1, 1, plogis(-2.5), log = TRUE); plogis(-4.2, log.p = TRUE)
  CHECK(close(lpdf(Family::bernoulli_logit, 1, {0.3}), -0.55435524446852702, tol));
  CHECK(close(lpdf(Family::bernoulli_logit, 0, {0.3}), -0.85435524446852718, tol));
  CHECK(close(lpdf(Family::bernoulli_logit, 1, {-2.5}), -2.5788897342925496, tol));
  CHECK(close(lpdf(Family::bernoulli_logit, 0, {4.2}), -4.2148842546719187, tol));
  // R: pnorm(0.3, log.p = TRUE); pnorm(-0.3, log.p = TRUE); pnorm(-2.5, log.p = TRUE);
  //    pnorm(-4.2, log.p = TRUE)
  CHECK(close(lpdf(Family::bernoulli_probit, 1, {0.3}), -0.48141016158848116, tol));
  CHECK(close(lpdf(Family::bernoulli_probit, 0, {0.3}), -0.96210281816885079, tol));
  CHECK(close(lpdf(Family::bernoulli_probit, 1, {-2.5}), -5.0816482772786902, tol));
  CHECK(close(lpdf(Family::bernoulli_probit, 0, {4.2}), -11.224312649601075, tol));
  // R: dbinom(3, 10, plogis(0.4), log = TRUE); dbinom(7, 7, plogis(2.2), log = TRUE);
  //    dbinom(0, 5, plogis(-1.1), log = TRUE)
  CHECK(close(lpdf(Family::binomial_logit, 3, {10, 0.4}), -3.1426607812174798, 1e-12));
  CHECK(close(lpdf(Family::binomial_logit, 7, {7, 2.2}), -0.73558323838087181, tol));
  CHECK(close(lpdf(Family::binomial_logit, 0, {5, -1.1}), -1.4366766255771535, tol));
  // R: dbinom(3, 10, pnorm(0.4), log = TRUE); dbinom(7, 7, pnorm(1.2), log = TRUE);
  //    dbinom(0, 5, pnorm(-1.1), log = TRUE)
  CHECK(close(lpdf(Family::binomial_probit, 3, {10, 0.4}), -3.9379757122283183, 1e-12));
  CHECK(close(lpdf(Family::binomial_probit, 7, {7, 1.2}), -0.85572452341192407, tol));
  CHECK(close(lpdf(Family::binomial_probit, 0, {5, -1.1}), -0.72898040658526386, tol));
  // R: dpois(3, exp(0.9), log = TRUE); dpois(0, exp(-2.3), log = TRUE);
  //    dpois(40, exp(2.5), log = TRUE)
  CHECK(close(lpdf(Family::poisson_log, 3, {0.9}), -1.5513625803850049, tol));
  CHECK(close(lpdf(Family::poisson_log, 0, {-2.3}), -0.10025884372280375, tol));
  CHECK(close(lpdf(Family::poisson_log, 40, {2.5}), -22.503133675460873, 1e-12));
}

TEST_CASE("lpdf of greta's other families matches R's d* functions", "[distributions][lpdf][R]") {
  const double tol = 1e-13;
  // R: dunif(0.7, -0.5, 2, log = TRUE); dunif(3, 2.5, 3.1, log = TRUE)
  CHECK(close(lpdf(Family::uniform, 0.7, {-0.5, 2}), -0.91629073187415511, tol));
  CHECK(close(lpdf(Family::uniform, 3, {2.5, 3.1}), 0.5108256237659905, tol));
  // R: dlnorm(1.7, 0.3, 0.8, log = TRUE); dlnorm(0.05, -1, 2.5, log = TRUE)
  CHECK(close(lpdf(Family::lognormal, 1.7, {0.3, 0.8}), -1.2679774440370051, tol));
  CHECK(close(lpdf(Family::lognormal, 0.05, {-1, 2.5}), 0.84186722385876456, tol));
  // R: dgamma(1.7, 2.5, 1.3, log = TRUE); dgamma(0.02, 0.4, 3, log = TRUE);
  //    dgamma(0, 1, 2.5, log = TRUE)
  CHECK(close(lpdf(Family::gamma, 1.7, {2.5, 1.3}), -1.042829832710936, tol));
  CHECK(close(lpdf(Family::gamma, 0.02, {0.4, 3}), 1.9299809010223477, tol));
  CHECK(close(lpdf(Family::gamma, 0, {1, 2.5}), 0.916290731874155, tol));
  // R: extraDistr::dinvgamma(0.8, 2.5, 1.3, log = TRUE);
  //    extraDistr::dinvgamma(4, 0.7, 3, log = TRUE)
  CHECK(close(lpdf(Family::inverse_gamma, 0.8, {2.5, 1.3}), -0.47276977970445744, tol));
  CHECK(close(lpdf(Family::inverse_gamma, 4, {0.7, 3}), -2.5985390583678036, tol));
  // R: dweibull(1.7, 2.5, 1.3, log = TRUE); dweibull(0.3, 0.6, 2, log = TRUE)
  CHECK(close(lpdf(Family::weibull, 1.7, {2.5, 1.3}), -0.89920503015923603, tol));
  CHECK(close(lpdf(Family::weibull, 0.3, {0.6, 2}), -0.76549696012526403, tol));
  // R: extraDistr::dpareto(3.5, 2.5, 1.3, log = TRUE);
  //    extraDistr::dpareto(1.31, 0.7, 1.3, log = TRUE)
  CHECK(close(lpdf(Family::pareto, 3.5, {2.5, 1.3}), -2.8124689966909053, tol));
  CHECK(close(lpdf(Family::pareto, 1.31, {0.7, 1.3}), -0.63206609207369102, tol));
  // R: extraDistr::dlaplace(0.3, -0.2, 1.7, log = TRUE);
  //    extraDistr::dlaplace(-4, 1, 0.5, log = TRUE)
  CHECK(close(lpdf(Family::laplace, 0.3, {-0.2, 1.7}), -1.517893078680939, tol));
  CHECK(close(lpdf(Family::laplace, -4, {1, 0.5}), -10, tol));
  // R: dbeta(0.3, 2.5, 1.3, log = TRUE); dbeta(0.999, 0.4, 0.7, log = TRUE);
  //    dbeta(0, 1, 3, log = TRUE)
  CHECK(close(lpdf(Family::beta, 0.3, {2.5, 1.3}), -0.54314754146667776, tol));
  CHECK(close(lpdf(Family::beta, 0.999, {0.4, 0.7}), 0.96550937840150075, 1e-12));
  CHECK(close(lpdf(Family::beta, 0, {1, 3}), 1.0986122886681098, tol));
  // R: dchisq(1.7, 2.5, log = TRUE); dchisq(12, 0.8, log = TRUE)
  CHECK(close(lpdf(Family::chi_squared, 1.7, {2.5}), -1.4855050765125757, tol));
  CHECK(close(lpdf(Family::chi_squared, 12, {0.8}), -8.564880679798561, tol));
  // R: dlogis(0.3, -0.2, 1.7, log = TRUE); dlogis(-800, 1, 0.5, log = TRUE)
  CHECK(close(lpdf(Family::logistic, 0.3, {-0.2, 1.7}), -1.9384714069068907, tol));
  CHECK(close(lpdf(Family::logistic, -800, {1, 0.5}), -1601.3068528194401, tol));
  // R: df(1.7, 2.5, 4.3, log = TRUE); df(0.05, 12, 0.9, log = TRUE)
  CHECK(close(lpdf(Family::f, 1.7, {2.5, 4.3}), -1.7619794230928334, 1e-12));
  CHECK(close(lpdf(Family::f, 0.05, {12, 0.9}), -2.6233375704997659, 1e-12));
  // R: dpois(3, 2.5, log = TRUE); dpois(0, 0.1, log = TRUE); dpois(40, 12.3, log = TRUE)
  CHECK(close(lpdf(Family::poisson, 3, {2.5}), -1.5428872736055899, tol));
  CHECK(close(lpdf(Family::poisson, 0, {0.1}), -0.10000000000000001, tol));
  CHECK(close(lpdf(Family::poisson, 40, {12.3}), -22.23666921962252, tol));
  // R: dbinom(3, 10, 0.35, log = TRUE); dbinom(0, 5, 0.2, log = TRUE);
  //    dbinom(7, 7, 0.9, log = TRUE)
  CHECK(close(lpdf(Family::binomial, 3, {10, 0.35}), -1.377455043361167, 1e-12));
  CHECK(close(lpdf(Family::binomial, 0, {5, 0.2}), -1.1157177565710485, tol));
  CHECK(close(lpdf(Family::binomial, 7, {7, 0.9}), -0.73752360960478403, tol));
  // R: dnbinom(3, 2.5, 0.35, log = TRUE); dnbinom(0, 4, 0.7, log = TRUE);
  //    dnbinom(25, 0.8, 0.1, log = TRUE)
  CHECK(close(lpdf(Family::negative_binomial, 3, {2.5, 0.35}), -2.035532431606315, 1e-12));
  CHECK(close(lpdf(Family::negative_binomial, 0, {4, 0.7}), -1.4266997757549298, tol));
  CHECK(close(lpdf(Family::negative_binomial, 25, {0.8, 0.1}), -5.2751028757672573, 1e-12));
  // R: extraDistr::dbbinom(3, 10, 2.5, 1.5, log = TRUE);
  //    extraDistr::dbbinom(0, 5, 0.7, 3.2, log = TRUE);
  //    extraDistr::dbbinom(12, 12, 4, 0.6, log = TRUE);
  //    extraDistr::dbbinom(40, 100, 0.5, 0.5, log = TRUE)
  CHECK(close(lpdf(Family::beta_binomial, 3, {10, 2.5, 1.5}), -2.6297320490312819, 1e-12));
  CHECK(close(lpdf(Family::beta_binomial, 0, {5, 0.7, 3.2}), -0.67802400148460285, 1e-12));
  CHECK(close(lpdf(Family::beta_binomial, 12, {12, 4, 0.6}), -0.85397233358079616, 1e-12));
  CHECK(close(lpdf(Family::beta_binomial, 40, {100, 0.5, 0.5}), -5.0415501218751473, 1e-12));
  // Far out in alpha and beta, where the lgamma differences of lbeta lost
  // everything (at beta = 1e18 the log density came out thousands too high):
  // mpmath at 60 digits, log(binomial(n, x)) + log(beta(x + a, n - x + b)) -
  // log(beta(a, b)), and its partials in a and b by mpmath's diff
  struct Far {
    double x, n, a, b, lp, da, db;
  };
  const Far far[] = {{3, 20, 1e-20, 1e18, -162.6593661596109, 1e20, -3e-18},
                     {5, 20, 2, 1e12, -121.92700103362709, 1.44999999998, -4.999999999875e-12},
                     {7, 20, 3e8, 5e8, -1.717560716211998, -1.6666666031250014e-09,
                      9.999999848750003e-10},
                     {0, 20, 0.5, 1e15, -9.999999999999902e-15, -1.99999999999998e-14,
                      9.999999999999805e-30},
                     {20, 20, 1e16, 3, -5.999999999999993e-15, 5.9999999999999865e-31,
                      -1.9999999999999974e-15}};
  for (const Far& f : far) {
    INFO("x = " << f.x << ", alpha = " << f.a << ", beta = " << f.b);
    double dx = 0, dp[3] = {0, 0, 0};
    const double p[3] = {f.n, f.a, f.b};
    CHECK(close(dist_lpdf(Family::beta_binomial, f.x, p, &dx, dp), f.lp, 1e-12, 1e-14));
    CHECK(close(dp[1], f.da, 1e-9, 1e-20));
    CHECK(close(dp[2], f.db, 1e-7, 1e-20));
  }
  // R: dhyper(3, 10, 7, 8, log = TRUE); dhyper(0, 5, 12, 4, log = TRUE);
  //    dhyper(6, 6, 3, 9, log = TRUE); dhyper(40, 300, 500, 120, log = TRUE)
  CHECK(close(lpdf(Family::hypergeometric, 3, {10, 7, 8}), -2.2666288868046998, 1e-12));
  CHECK(close(lpdf(Family::hypergeometric, 0, {5, 12, 4}), -1.5702980040968304, 1e-12));
  CHECK(std::fabs(lpdf(Family::hypergeometric, 6, {6, 3, 9})) < 1e-14);  // R: 0
  CHECK(close(lpdf(Family::hypergeometric, 40, {300, 500, 120}), -3.0156550384167082, 1e-11));
}

TEST_CASE("CDFs of greta's other continuous families match R's p* functions",
          "[distributions][cdf][R]") {
  const double tol = 1e-12;
  // R: punif(0.7, -0.5, 2); plnorm(1.7, 0.3, 0.8)
  CHECK(close(cdf(Family::uniform, 0.7, {-0.5, 2}), 0.47999999999999998, tol));
  CHECK(close(cdf(Family::lognormal, 1.7, {0.3, 0.8}), 0.61343582597414581, tol));
  // R: pgamma(1.7, 2.5, 1.3); pgamma(0.02, 0.4, 3); pgamma(30, 4, 1)
  CHECK(close(cdf(Family::gamma, 1.7, {2.5, 1.3}), 0.5093420213228872, tol));
  CHECK(close(cdf(Family::gamma, 0.02, {0.4, 3}), 0.35960756401929778, tol));
  CHECK(close(cdf(Family::gamma, 30, {4, 1}), 0.99999999953389684, tol));
  // R: extraDistr::pinvgamma(0.8, 2.5, 1.3); pweibull(1.7, 2.5, 1.3)
  CHECK(close(cdf(Family::inverse_gamma, 0.8, {2.5, 1.3}), 0.66150492033951003, tol));
  CHECK(close(cdf(Family::weibull, 1.7, {2.5, 1.3}), 0.85851017568570953, tol));
  // R: extraDistr::ppareto(3.5, 2.5, 1.3)
  CHECK(close(cdf(Family::pareto, 3.5, {2.5, 1.3}), 0.91592085825535718, tol));
  // R: extraDistr::plaplace(0.3, -0.2, 1.7); extraDistr::plaplace(-4, 1, 0.5)
  CHECK(close(cdf(Family::laplace, 0.3, {-0.2, 1.7}), 0.6274055914932597, tol));
  CHECK(close(cdf(Family::laplace, -4, {1, 0.5}), 2.2699964881242424e-05, tol));
  // R: pbeta(0.3, 2.5, 1.3); pchisq(1.7, 2.5); plogis(0.3, -0.2, 1.7)
  CHECK(close(cdf(Family::beta, 0.3, {2.5, 1.3}), 0.072119366606618551, 1e-11));
  CHECK(close(cdf(Family::chi_squared, 1.7, {2.5}), 0.46184165794814147, tol));
  CHECK(close(cdf(Family::logistic, 0.3, {-0.2, 1.7}), 0.57300390092533782, tol));
  // R: pf(1.7, 2.5, 4.3); pf(0.05, 12, 0.9)
  CHECK(close(cdf(Family::f, 1.7, {2.5, 4.3}), 0.70798249048863404, 1e-11));
  CHECK(close(cdf(Family::f, 0.05, {12, 0.9}), 0.00096076397117163433, 1e-11));
  // below the support
  CHECK(cdf(Family::gamma, -1, {2, 1}) == 0);
  CHECK(cdf(Family::pareto, 1, {2, 1.3}) == 0);
  CHECK(cdf(Family::beta, 1.5, {2, 1}) == 1);
  CHECK(cdf(Family::uniform, 3, {0, 2}) == 1);
  // the survival functions keep their precision far in the upper tail.
  // R: pgamma(30, 4, 1, lower.tail = FALSE); pchisq(60, 3, lower.tail = FALSE)
  double dp[max_dist_params] = {0, 0, 0};
  const double g[max_dist_params] = {4, 1, 0}, c[max_dist_params] = {3, 0, 0};
  CHECK(close(lockstep::dist_ccdf(Family::gamma, 30, g, dp), 4.6610320007792916e-10, 1e-11));
  CHECK(close(lockstep::dist_ccdf(Family::chi_squared, 60, c, dp), 5.8782307279069133e-13, 1e-11));
}

TEST_CASE("survival functions are 1 - CDF with negated partials", "[distributions][cdf]") {
  std::mt19937 rng(205);
  for (const FamilyInfo& f : all_families()) {
    if (!f.continuous) continue;
    const FamilyRef& ref = family_refs().at(f.name);
    for (int rep = 0; rep < 10; ++rep) {
      double x, p[max_dist_params] = {0, 0, 0}, dF[max_dist_params] = {0, 0, 0},
                dS[max_dist_params] = {0, 0, 0};
      ref.draw(rng, &x, p);
      const double F = dist_cdf(f.family, x, p, dF);
      const double S = lockstep::dist_ccdf(f.family, x, p, dS);
      INFO("family " << f.name << ", x " << x << ", p " << p[0] << " " << p[1] << " " << p[2]);
      CHECK(close(F + S, 1, 1e-13));
      for (int k = 0; k < f.n_params; ++k) CHECK(dS[k] == -dF[k]);
    }
  }
}

TEST_CASE("bernoulli_logit is stable in the tails and agrees with bernoulli(ilogit(eta))",
          "[distributions][lpdf][bernoulli_logit]") {
  auto both = [](double x, double eta, double* d) {
    double dx = 1, dp[max_dist_params] = {0, 0, 0};
    const double p[max_dist_params] = {eta, 0, 0};
    const double lp = dist_lpdf(Family::bernoulli_logit, x, p, &dx, dp);
    CHECK(dx == 0);
    *d = dp[0];
    return lp;
  };
  double d = 0;
  // R: plogis(40, log.p = TRUE), plogis(-40, log.p = TRUE) (dbinom(0, 1,
  // plogis(40), log = TRUE) is -Inf: 1 - plogis(40) rounds to 0)
  CHECK(close(both(1, 40, &d), -4.2483542552915889e-18, 1e-14));
  CHECK(close(d, 4.2483542552915889e-18, 1e-14));  // 1 - ilogit(40)
  CHECK(close(both(0, 40, &d), -40, 1e-15));
  CHECK(close(d, -1, 1e-15));
  CHECK(close(both(1, -40, &d), -40, 1e-15));
  CHECK(close(d, 1, 1e-15));
  CHECK(close(both(0, -40, &d), -4.2483542552915889e-18, 1e-14));
  CHECK(close(d, -4.2483542552915889e-18, 1e-14));
  // far past where exp(eta) overflows, and at the infinities
  CHECK(close(both(0, 800, &d), -800, 1e-15));
  CHECK(d == -1);
  CHECK(close(both(1, -800, &d), -800, 1e-15));
  CHECK(d == 1);
  CHECK(both(1, 800, &d) == 0);
  CHECK(d == 0);
  CHECK(both(1, inf, &d) == 0);
  CHECK(d == 0);
  CHECK(both(0, -inf, &d) == 0);
  CHECK(d == 0);
  CHECK(both(0, inf, &d) == -inf);
  CHECK(both(1, -inf, &d) == -inf);
  // y outside {0, 1}
  CHECK(both(0.5, 0.3, &d) == -inf);
  CHECK(d == 0);
  // where bernoulli(ilogit(eta)) is accurate the two agree, partials by the
  // chain rule: d/deta = d/dprob * prob (1 - prob)
  for (double eta : {-6.0, -1.3, 0.0, 0.4, 2.2, 7.5}) {
    for (double x : {0.0, 1.0}) {
      INFO("x " << x << ", eta " << eta);
      const double q = 1 / (1 + std::exp(-eta));
      double dx, dp[max_dist_params] = {0, 0, 0};
      const double p[max_dist_params] = {q, 0, 0};
      const double lb = dist_lpdf(Family::bernoulli, x, p, &dx, dp);
      CHECK(close(both(x, eta, &d), lb, 1e-12));
      CHECK(close(d, dp[0] * q * (1 - q), 1e-10, 1e-15));
    }
  }
}

TEST_CASE("log Phi and the Mills ratio match R in both tails", "[distributions][special][R]") {
  // probit_tails (math/normal_tails.hpp): log Phi(eta), log Phi(-eta) and the
  // two Mills ratios from one erfcx.
  auto log_phi = [](double z) { return lockstep::probit_tails(z).log_p; };
  // R: pnorm(z, log.p = TRUE) for z = 0.3, -8.5, 8.5, -19.9, -20.1, -25, -40, 40
  const double tol = 1e-14;
  CHECK(close(log_phi(0.3), -0.48141016158848116, tol));
  CHECK(close(log_phi(-8.5), -39.197396428217672, tol));
  CHECK(close(log_phi(8.5), -9.4795348222033192e-18, 1e-13));
  CHECK(close(log_phi(-19.9), -201.9171677073326, tol));
  CHECK(close(log_phi(-20.1), -205.92711840194823, tol));
  CHECK(close(log_phi(-25), -316.63940800802027, tol));
  CHECK(close(log_phi(-40), -804.6084420137538, tol));
  CHECK(log_phi(40) == 0);
  CHECK(log_phi(inf) == 0);
  CHECK(log_phi(-inf) == -inf);
  CHECK(std::isnan(log_phi(std::nan(""))));
  // mpmath (40 digits): npdf(z) / ncdf(z) for z = -40, -25, 1.3 (R's
  // exp(dnorm(z, log = TRUE) - pnorm(z, log.p = TRUE)) is off by 1e-13 at -40,
  // the rounding of -804.6 magnified)
  auto mills = [](double z) { return lockstep::probit_tails(z).mills_p; };
  CHECK(close(mills(-40), 40.024968847207264, tol));
  CHECK(close(mills(-25), 25.039873012057563, tol));
  CHECK(close(mills(1.3), 0.18973503541925962, tol));
  CHECK(mills(-inf) == inf);
  CHECK(mills(inf) == 0);
  // against the C library in long double, on both sides of zero and far into
  // the tails: log Phi(z) = log(erfc(-z / sqrt 2) / 2) (log1p of the small
  // tail above 0); the other side's fields are this one's at -z
  std::mt19937 rng(20261125);
  for (int k = 0; k < 4000; ++k) {
    const double z = (k % 2 ? 1 : -1) * std::pow(10.0, u(rng, -3, 1.4));  // |z| to 25
    const long double zl = z, half = 0.5L * std::erfc(-zl / std::sqrt(2.0L));
    const long double log_p = z > 0 ? std::log1p(-0.5L * std::erfc(zl / std::sqrt(2.0L)))
                                    : std::log(half);
    const long double pdf = std::exp(-0.5L * zl * zl) / std::sqrt(2 * 3.14159265358979323846264L);
    const lockstep::ProbitTails t = lockstep::probit_tails(z), u = lockstep::probit_tails(-z);
    INFO("z = " << z);
    CHECK(close(t.log_p, static_cast<double>(log_p), 2e-15, 1e-300));
    CHECK(close(t.mills_p, static_cast<double>(pdf / half), 4e-15, 1e-300));
    CHECK(t.log_q == u.log_p);
    CHECK(t.mills_q == u.mills_p);
  }
  // the Mills ratio is the derivative of log Phi
  for (double z : {-45.0, -30.0, -20.5, -20.0, -19.5, -5.0, -0.7, 0.0, 0.6, 3.0, 9.0}) {
    INFO("z = " << z);
    const double fd = central_difference(log_phi, z, 1e-5);
    CHECK(close(mills(z), fd, 1e-8, 1e-12));
  }
}

TEST_CASE("negative_binomial keeps its precision at a large size, prepared or not", "[distributions][lpdf]") {
  // mpmath at 80 digits: loggamma(x + r) - loggamma(r) - loggamma(x + 1) + r
  // log(q) + x log(1 - q) at the double q = r / (r + mu), and its partials by
  // mpmath's diff. The difference of the two lgammas lost size * 1e-16 (0.004
  // per row at size 1e12) to rounding.
  struct Ref {
    double x, r, q, lp, dr, dq;
  };
  const Ref refs[] = {
      {40.0, 1000000000000.0, 0.99999999997, -4.272743620537607, 9.99999751655887e-12,
       -333333222982.8478},
      {17.0, 500000000.0, 0.9999999600000016, -2.577624809566552, -5.999999768633478e-09,
       75000003.26173063},
      {3.0, 1e+16, 0.9999999999999998, -1.6190812221156434, 7.795539507496864e-17,
       -3510798882111486.0},
      {250.0, 37.5, 0.15789473684210525, -5.5578828627978565, 0.20270768651761661,
       -59.374999999999986},
      {16.0, 12.0, 0.5454545454545454, -3.505576733620336, 0.26544360480442186,
       -13.199999999999996}};
  using NB = lockstep::Dist<Family::negative_binomial>;
  for (const Ref& r : refs) {
    INFO("x = " << r.x << ", size = " << r.r);
    const double p[2] = {r.r, r.q};
    double dx = 0, dp[2] = {0, 0};
    CHECK(close(NB::lpdf(r.x, p, &dx, dp), r.lp, 1e-12, 1e-13));
    CHECK(close(dp[0], r.dr, 1e-6, 1e-15));
    CHECK(close(dp[1], r.dq, 1e-10));
    const NB::Prepared q = NB::prepare(p);
    double pdx = 0, pdp[2] = {0, 0};
    CHECK(close(NB::lpdf(r.x, r.q, q, &pdx, pdp), r.lp, 1e-12, 1e-13));
    CHECK(close(pdp[0], r.dr, 1e-6, 1e-15));
    CHECK(close(pdp[1], r.dq, 1e-10));
  }
}

TEST_CASE("student keeps its precision at a large df, prepared or not", "[distributions][lpdf]") {
  // mpmath at 80 digits (loggamma((v + 1) / 2) - loggamma(v / 2) - ...) and
  // its partial in df by mpmath's diff: lgamma differences lost df * 1e-16
  // to rounding, once per element
  struct Ref {
    double x, v, mu, s, lp, dv;
  };
  const Ref refs[] = {{0.7, 1e12, 0.2, 1.5, -1.379959196868695, 3.024691358024634e-25},
                      {-3.0, 4e8, 0.0, 2.0, -2.7370857140380553, 6.835937697753904e-19},
                      {1.2, 3.5, 0.1, 0.8, -1.7381013615920118, 0.02919651960245068},
                      {5.0, 1e15, 1.0, 1.0, -8.918938533204617, -5.574999999999877e-29}};
  using T = lockstep::Dist<Family::student>;
  for (const Ref& r : refs) {
    INFO("df = " << r.v);
    const double p[3] = {r.v, r.mu, r.s};
    double dx = 0, dp[3] = {0, 0, 0};
    CHECK(close(T::lpdf(r.x, p, &dx, dp), r.lp, 1e-13));
    CHECK(close(dp[0], r.dv, 1e-6, 1e-20));
    const T::Prepared q = T::prepare(p);
    double pdx = 0, pdp[3] = {0, 0, 0};
    CHECK(close(T::lpdf(r.x, r.mu, q, &pdx, pdp), r.lp, 1e-13));
    CHECK(close(pdp[0], r.dv, 1e-6, 1e-20));
  }
}

TEST_CASE("log_gamma_ratio keeps its precision where the two log Gammas are huge", "[special]") {
  // mpmath at 60 digits: loggamma(s + k) - loggamma(s), digamma(s + k) - digamma(s)
  struct Ref {
    double s, k, value, dvalue;
  };
  const Ref refs[] = {{10, 1, 2.302585092994046, 0.1},
                      {10.5, 7.25, 18.850657802866156, 0.5449510535788299},
                      {1e18, 5, 207.2326583694641, 5e-18},
                      {1e6, 1e6, 14201804.572510533, 0.6931474305600078},
                      {37.5, 0.001, 0.003610961857165752, 2.7025017109936355e-05}};
  for (const Ref& r : refs) {
    INFO("s = " << r.s << ", k = " << r.k);
    const lockstep::LogGammaRatio g = lockstep::log_gamma_ratio(r.s, r.k);
    CHECK(close(g.value, r.value, 1e-14));
    CHECK(close(g.dvalue, r.dvalue, 1e-13));
  }
  // below 10, and across 10, against long double lgamma and the difference of digammas
  for (double s : {1e-20, 0.3, 2.5, 9.999, 10.0, 10.001, 55.0})
    for (double k : {0.0, 1.0, 3.0, 17.5, 400.0}) {
      INFO("s = " << s << ", k = " << k);
      const lockstep::LogGammaRatio g = lockstep::log_gamma_ratio(s, k);
      const long double want = std::lgamma(static_cast<long double>(s) + k) -
                               std::lgamma(static_cast<long double>(s));
      CHECK(close(g.value, static_cast<double>(want), 1e-13, 1e-13));
      if (k == 0) CHECK(g.value == 0);
      if (k == 0) CHECK(g.dvalue == 0);
      const double fd = central_difference(
          [k](double v) { return lockstep::log_gamma_ratio(v, k).value; }, s, 1e-4 * s);
      CHECK(close(g.dvalue, fd, 1e-6, 1e-9));
    }
}

TEST_CASE("erfcx is within a few ulps from 0 to the largest double", "[special]") {
  // exp(t^2) erfc(t) in long double below t = 50 (t^2 far from overflowing
  // it); above, its asymptotic series 1 / (t sqrt(pi)) sum_k (-1)^k
  // (2k - 1)!! / (2 t^2)^k, whose tenth term is below 1e-30 there
  std::mt19937 rng(7);
  for (int k = 0; k < 4000; ++k) {
    const double t = std::pow(10.0, u(rng, -8, 6));
    const long double tl = t;
    long double ref;
    if (t < 50) {
      ref = std::exp(tl * tl) * std::erfc(tl);
    } else {
      long double term = 1, sum = 1;
      for (int j = 1; j <= 10; ++j) {
        term *= -(2 * j - 1) / (2 * tl * tl);
        sum += term;
      }
      ref = sum / (tl * std::sqrt(3.14159265358979323846264L));
    }
    INFO("t = " << t);
    CHECK(close(lockstep::ls_erfcx_nonneg(t), static_cast<double>(ref), 1e-15, 0));
  }
  CHECK(close(lockstep::ls_erfcx_nonneg(0), 1, 1e-15));
  CHECK(lockstep::ls_erfcx_nonneg(inf) == 0);
  CHECK(std::isnan(lockstep::ls_erfcx_nonneg(std::nan(""))));
  CHECK(close(lockstep::ls_erfcx_nonneg(1e300), 5.6418958354775629e-301, 1e-15));
}

TEST_CASE("the link-scale families are stable in the tails", "[distributions][lpdf][representations]") {
  auto at = [](Family f, double x, std::vector<double> p, double* d) {
    double dx = 1, dp[max_dist_params] = {0, 0, 0};
    const int k = lockstep::family_n_params(f);
    p.resize(max_dist_params, 0);
    const double lp = dist_lpdf(f, x, p.data(), &dx, dp);
    CHECK(dx == 0);
    *d = dp[k - 1];
    return lp;
  };
  double d = 0;
  // R: pnorm(-40, log.p = TRUE); dbinom(0, 1, pnorm(40), log = TRUE) is -Inf
  CHECK(close(at(Family::bernoulli_probit, 0, {40}, &d), -804.6084420137538, 1e-14));
  CHECK(close(d, -40.024968847207264, 1e-14));  // -phi(40) / Phi(-40), mpmath
  CHECK(close(at(Family::bernoulli_probit, 1, {-40}, &d), -804.6084420137538, 1e-14));
  CHECK(close(d, 40.024968847207264, 1e-14));
  CHECK(at(Family::bernoulli_probit, 1, {40}, &d) == 0);
  CHECK(d == 0);
  CHECK(at(Family::bernoulli_probit, 0, {-inf}, &d) == 0);
  CHECK(at(Family::bernoulli_probit, 1, {-inf}, &d) == -inf);
  CHECK(at(Family::bernoulli_probit, 0.5, {0.3}, &d) == -inf);
  // R: lchoose(10, 3) + 3 * pnorm(-40, log.p = TRUE) + 7 * pnorm(40, log.p = TRUE)
  CHECK(close(at(Family::binomial_probit, 3, {10, -40}, &d), -2409.0378342984791, 1e-14));
  CHECK(close(d, 3 * 40.024968847207264, 1e-14));
  // R: lchoose(10, 3) - 3 * 40 - 10 * log1p(exp(-40)): 1 - plogis(40) rounds to 0
  CHECK(close(at(Family::binomial_logit, 3, {10, 40}, &d), std::log(120.0) - 7 * 40, 1e-14));
  CHECK(close(d, -7, 1e-14));
  CHECK(close(at(Family::binomial_logit, 10, {10, 40}, &d), -10 * 4.2483542552915889e-18, 1e-12));
  CHECK(at(Family::binomial_logit, 0, {10, -inf}, &d) == 0);
  CHECK(at(Family::binomial_logit, 11, {10, 0.2}, &d) == -inf);
  // R: 3 * (-800) - exp(-800) - lgamma(4); dpois(3, exp(-800), log = TRUE) is -Inf
  CHECK(close(at(Family::poisson_log, 3, {-800}, &d), -2401.7917594692281, 1e-14));
  CHECK(d == 3);
  CHECK(at(Family::poisson_log, 0, {-inf}, &d) == 0);
  CHECK(at(Family::poisson_log, 2.5, {0.1}, &d) == -inf);
  // where the probability form is accurate the two agree, partials by the
  // chain rule through the inverse link
  for (double eta : {-3.0, -0.8, 0.0, 0.5, 2.4}) {
    const double pl = 1 / (1 + std::exp(-eta)), pp = 0.5 * std::erfc(-eta / std::sqrt(2.0));
    const double phi = std::exp(-0.5 * eta * eta) / std::sqrt(2 * M_PI);
    struct Pair {
      Family link, plain;
      double x, n, q, dq;
    };
    const Pair pairs[] = {{Family::bernoulli_probit, Family::bernoulli, 1, 0, pp, phi},
                          {Family::bernoulli_probit, Family::bernoulli, 0, 0, pp, phi},
                          {Family::binomial_logit, Family::binomial, 4, 9, pl, pl * (1 - pl)},
                          {Family::binomial_probit, Family::binomial, 2, 6, pp, phi},
                          {Family::poisson_log, Family::poisson, 5, 0, std::exp(eta), std::exp(eta)}};
    for (const Pair& c : pairs) {
      INFO(lockstep::family_name(c.link) << ", x " << c.x << ", eta " << eta);
      const bool two = lockstep::family_n_params(c.link) == 2;
      std::vector<double> pl_args = two ? std::vector<double>{c.n, eta} : std::vector<double>{eta};
      std::vector<double> pq_args = two ? std::vector<double>{c.n, c.q} : std::vector<double>{c.q};
      double dl = 0, dq = 0;
      const double a = at(c.link, c.x, pl_args, &dl), b = at(c.plain, c.x, pq_args, &dq);
      CHECK(close(a, b, 1e-12));
      CHECK(close(dl, dq * c.dq, 1e-10, 1e-14));
    }
  }
}

TEST_CASE("lpdf partials of every family against finite differences",
          "[distributions][lpdf][gradient]") {
  std::mt19937 rng(202);
  for (const FamilyInfo& f : all_families()) {
    const FamilyRef& ref = family_refs().at(f.name);
    for (int rep = 0; rep < 30; ++rep) {
      double x, p[max_dist_params] = {0, 0, 0}, dx = -1, dp[max_dist_params] = {0, 0, 0};
      ref.draw(rng, &x, p);
      dist_lpdf(f.family, x, p, &dx, dp);
      INFO("family " << f.name << ", x " << x << ", p " << p[0] << " " << p[1] << " " << p[2]);
      double sdx, sdp[max_dist_params];
      // log_jacobian and target are listed as not continuous (they take no
      // truncation) but are differentiable in x
      if (f.continuous || f.name == "log_jacobian" || f.name == "target") {
        const double fd = central_difference(
            [&](double v) { return dist_lpdf(f.family, v, p, &sdx, sdp); }, x, 1e-4);
        CHECK(close(dx, fd, 1e-8, 1e-9));
      } else {
        CHECK(dx == 0);
      }
      for (int k = 0; k < f.n_params; ++k) {
        if (partials_are_zero(f.name)) {
          CHECK(dp[k] == 0);
          continue;
        }
        double q[max_dist_params] = {p[0], p[1], p[2]};
        const double fd = central_difference(
            [&](double v) {
              q[k] = v;
              return dist_lpdf(f.family, x, q, &sdx, sdp);
            },
            p[k], 1e-5);
        INFO("parameter " << k << ": analytic " << dp[k] << ", finite differences " << fd);
        CHECK(close(dp[k], fd, 1e-7, 1e-9));
      }
    }
  }
}

TEST_CASE("CDFs of the continuous families match R's p* functions", "[distributions][cdf][R]") {
  const double tol = 1e-12;
  // R: pnorm(0.3, -0.2, 1.7); pnorm(-2.5, 1, 0.4)
  CHECK(close(cdf(Family::normal, 0.3, {-0.2, 1.7}), 0.61566599671959565, tol));
  CHECK(close(cdf(Family::normal, -2.5, {1, 0.4}), 1.0667637375474858e-18, 1e-10));
  // R: pcauchy(0.3, -0.2, 1.7); pcauchy(-4, 1, 0.5)
  CHECK(close(cdf(Family::cauchy, 0.3, {-0.2, 1.7}), 0.59105300185574883, tol));
  CHECK(close(cdf(Family::cauchy, -4, {1, 0.5}), 0.031725517430553574, tol));
  // R: pt((0.7 - 0.2) / 1.5, 3)
  CHECK(close(cdf(Family::student, 0.7, {3, 0.2, 1.5}), 0.61958981224274468, tol));
  // R: pexp(0.7, 2); pexp(3, 0.1)
  CHECK(close(cdf(Family::exponential, 0.7, {2}), 0.75340303605839354, tol));
  CHECK(close(cdf(Family::exponential, 3, {0.1}), 0.25918177931828212, tol));
  // the limits
  for (const FamilyInfo& f : all_families()) {
    if (!f.continuous) continue;
    std::vector<double> p = f.name == "student" ? std::vector<double>{3, 0.5, 2}
                            : f.n_params == 2   ? std::vector<double>{0.5, 2}
                                                : std::vector<double>{1.5};
    INFO("family " << f.name);
    CHECK(cdf(f.family, -inf, p) == 0);
    CHECK(cdf(f.family, inf, p) == 1);
  }
  CHECK(cdf(Family::exponential, -1, {2}) == 0);
}

TEST_CASE("CDF partials against finite differences", "[distributions][cdf][gradient]") {
  std::mt19937 rng(203);
  for (const FamilyInfo& f : all_families()) {
    if (!f.continuous) continue;
    const FamilyRef& ref = family_refs().at(f.name);
    for (int rep = 0; rep < 20; ++rep) {
      double x, p[max_dist_params] = {0, 0, 0}, dp[max_dist_params] = {0, 0, 0};
      ref.draw(rng, &x, p);
      dist_cdf(f.family, x, p, dp);
      for (int k = 0; k < f.n_params; ++k) {
        double q[max_dist_params] = {p[0], p[1], p[2]}, sdp[max_dist_params];
        const double fd = central_difference(
            [&](double v) {
              q[k] = v;
              return dist_cdf(f.family, x, q, sdp);
            },
            p[k], 1e-3);
        INFO("family " << f.name << ", x " << x << ", p " << p[0] << " " << p[1] << " " << p[2]
                       << ", parameter " << k << ": analytic " << dp[k] << ", fd " << fd);
        // student's dF/ddf (and the shapes' partials of the incomplete beta
        // and gamma CDFs) are themselves central differences inside the
        // library, and those CDFs (continued fractions and series) carry noise
        // of about 1e-14
        const bool by_differences = cdf_partial_by_differences(f.name, k);
        const bool special = f.name == "student" || cdf_partial_by_differences(f.name, 0) ||
                             cdf_partial_by_differences(f.name, 1);
        CHECK(close(dp[k], fd, by_differences ? 1e-5 : 1e-8, special ? 1e-9 : 1e-10));
      }
    }
  }
}

TEST_CASE("student_t_cdf matches R's pt", "[distributions][special][R]") {
  struct Case {
    double t, df, expected;
  };
  const Case cases[] = {
      {-2, 3, 0.069662984279421566},     // R: pt(-2, 3)
      {0.5, 1, 0.64758361765043326},     // R: pt(0.5, 1)
      {1.7, 10, 0.94001532704548985},    // R: pt(1.7, 10)
      {-0.3, 0.5, 0.42242957606524539},  // R: pt(-0.3, 0.5)
      {25, 4, 0.99999240123711841},      // R: pt(25, 4)
      {-40, 2.5, 7.0978171452466926e-05},  // R: pt(-40, 2.5)
      {3, 100, 0.99829604232833535},     // R: pt(3, 100)
      {0, 7, 0.5},                       // R: pt(0, 7)
  };
  for (const Case& c : cases) {
    INFO("pt(" << c.t << ", " << c.df << ")");
    CHECK(close(lockstep::student_t_cdf(c.t, c.df), c.expected, 1e-12));
  }
  CHECK(lockstep::student_t_cdf(inf, 3) == 1);
  CHECK(lockstep::student_t_cdf(-inf, 3) == 0);
  // symmetry
  CHECK(close(lockstep::student_t_cdf(1.3, 2.2) + lockstep::student_t_cdf(-1.3, 2.2), 1, 1e-14));
}

TEST_CASE("incbeta matches R's pbeta", "[distributions][special][R]") {
  struct Case {
    double x, a, b, expected;
  };
  const Case cases[] = {
      {0.3, 2, 3, 0.34829999999999989},       // R: pbeta(0.3, 2, 3)
      {0.9, 0.5, 0.5, 0.79516723530086664},   // R: pbeta(0.9, 0.5, 0.5)
      {0.01, 5, 1, 1.0000000000000024e-10},   // R: pbeta(0.01, 5, 1)
      {0.5, 10, 20, 0.96928582713007927},     // R: pbeta(0.5, 10, 20)
      {0.999, 2, 0.7, 0.98650198030733027},   // R: pbeta(0.999, 2, 0.7)
      {0.2, 100, 3, 4.199726438556122e-67},   // R: pbeta(0.2, 100, 3)
      {0.7, 1, 1, 0.69999999999999996},       // R: pbeta(0.7, 1, 1)
  };
  for (const Case& c : cases) {
    INFO("pbeta(" << c.x << ", " << c.a << ", " << c.b << ")");
    CHECK(close(lockstep::incbeta(c.a, c.b, c.x), c.expected, 1e-11));
  }
  CHECK(lockstep::incbeta(2, 3, 0) == 0);
  CHECK(lockstep::incbeta(2, 3, 1) == 1);
}

TEST_CASE("digamma matches R's digamma", "[distributions][special][R]") {
  struct Case {
    double x, expected;
  };
  const Case cases[] = {
      {0.1, -10.423754940411076},   // R: digamma(0.1)
      {0.5, -1.9635100260214231},   // R: digamma(0.5)
      {1, -0.57721566490153231},    // R: digamma(1)
      {2.5, 0.70315664064524341},   // R: digamma(2.5)
      {5.999, 1.7059363290792255},  // R: digamma(5.999)
      {6, 1.7061176684318007},      // R: digamma(6)
      {10, 2.2517525890667214},     // R: digamma(10)
      {123.4, 4.8113737751162775},  // R: digamma(123.4)
      {1e-3, -1000.5755719318104},  // R: digamma(1e-3)
  };
  // The truncated asymptotic series, switched to at x >= 6, leaves an absolute
  // error of about 1e-11 (its next term, 691 / (32760 x^12), is 9.7e-12 at
  // x = 6): ample for the df partial of student, so that is what is required here.
  for (const Case& c : cases) {
    INFO("digamma(" << c.x << ") = " << lockstep::digamma(c.x));
    CHECK(close(lockstep::digamma(c.x), c.expected, 1e-13, 2e-11));
  }
}

TEST_CASE("digamma meets the 1e-13 absolute accuracy its comment documents",
          "[distributions][special][R]") {
  // math/special.hpp documents "absolute error below 1e-13"; the series from
  // x >= 6 gives about 9e-12 (R: digamma(6) = 1.7061176684318007).
  const double xs[] = {0.5, 1, 6};
  const double expected[] = {-1.9635100260214231, -0.57721566490153231, 1.7061176684318007};
  for (int i = 0; i < 3; ++i) {
    INFO("digamma(" << xs[i] << ") = " << lockstep::digamma(xs[i]));
    CHECK(std::fabs(lockstep::digamma(xs[i]) - expected[i]) < 1e-13);
  }
}

TEST_CASE("log1p_nonneg is within a few ulps of log1p", "[distributions][special]") {
  // the logit likelihood's log1p(exp(-|eta|)), on the whole range exp() gives it
  std::mt19937 rng(17);
  std::uniform_real_distribution<double> u(-745, 3);
  double worst = 0;
  for (int i = 0; i < 200000; ++i) {
    const double x = std::exp(u(rng));
    const double ref = std::log1p(x);
    worst = std::max(worst, std::fabs(lockstep::log1p_nonneg(x) - ref) / ref);
  }
  for (double x : {0.0, 1e-300, 1e-17, 1.1e-16, 2.3e-16, 1e-8, 0.5, 1.0, 1e6}) {
    INFO("x = " << x);
    CHECK(std::fabs(lockstep::log1p_nonneg(x) - std::log1p(x)) <= 4e-16 * std::log1p(x));
  }
  INFO("worst relative error " << worst);
  CHECK(worst < 4e-16);
}

TEST_CASE("truncated densities match R", "[distributions][truncation][R]") {
  // normal truncated to (0, Inf) with mean 0 is the half-normal, 2 dnorm.
  // R: log(2 * dnorm(0.7, 0, 1.3))
  CHECK(close(tlpdf(Family::normal, 0.7, {0, 1.3}, 0, inf), -0.63312603131340184, 1e-13));
  // half-Cauchy. R: log(2 * dcauchy(1.5, 0, 2))
  CHECK(close(tlpdf(Family::cauchy, 1.5, {0, 2}, 0, inf), -1.5910169884778198, 1e-13));
  // student truncated to (1, 3).
  // R: dt((2.2 - 1.5) / 0.8, 4, log = TRUE) - log(0.8) -
  //    log(pt((3 - 1.5) / 0.8, 4) - pt((1 - 1.5) / 0.8, 4))
  CHECK(close(tlpdf(Family::student, 2.2, {4, 1.5, 0.8}, 1, 3), -0.76480806099831322, 1e-11));
  // exponential truncated to (0.5, 2).
  // R: dexp(1, 1.3, log = TRUE) - log(pexp(2, 1.3) - pexp(0.5, 1.3))
  CHECK(close(tlpdf(Family::exponential, 1, {1.3}, 0.5, 2), -0.23416507425595168, 1e-13));
  // exponential truncated to (1, Inf) is memoryless: dexp(x - 1, rate)
  CHECK(close(tlpdf(Family::exponential, 2.5, {0.7}, 1, inf), std::log(0.7) - 0.7 * 1.5, 1e-13));
  // one-sided upper truncation: normal to (-Inf, 0) with mean 0 is also 2 dnorm
  CHECK(close(tlpdf(Family::normal, -0.7, {0, 1.3}, -inf, 0), -0.63312603131340184, 1e-13));
  // untruncated when both bounds are infinite
  CHECK(tlpdf(Family::cauchy, 0.3, {-0.2, 1.7}, -inf, inf) == lpdf(Family::cauchy, 0.3, {-0.2, 1.7}));
  // R: dgamma(1.2, 2.5, 1.3, log = TRUE) - log(pgamma(3, 2.5, 1.3) - pgamma(0.5, 2.5, 1.3))
  CHECK(close(tlpdf(Family::gamma, 1.2, {2.5, 1.3}, 0.5, 3), -0.6504434035848311, 1e-12));
  // R: dbeta(0.3, 2.5, 1.3, log = TRUE) - log(pbeta(0.6, 2.5, 1.3) - pbeta(0.1, 2.5, 1.3))
  CHECK(close(tlpdf(Family::beta, 0.3, {2.5, 1.3}, 0.1, 0.6), 0.46654995092965934, 1e-11));
  // R: dlnorm(2, 0.3, 0.8, log = TRUE) - plnorm(1, 0.3, 0.8, lower.tail = FALSE, log.p = TRUE)
  CHECK(close(tlpdf(Family::lognormal, 2, {0.3, 0.8}, 1, inf), -1.0730028256689903, 1e-12));
  // R: dlogis(0.3, 1, 2, log = TRUE) - log(plogis(1, 1, 2) - plogis(-1, 1, 2))
  CHECK(close(tlpdf(Family::logistic, 0.3, {1, 2}, -1, 1), -0.64482747793224959, 1e-12));
  // in the upper tail, through the survival function.
  // R: dchisq(25, 3, log = TRUE) - pchisq(20, 3, lower.tail = FALSE, log.p = TRUE)
  CHECK(close(tlpdf(Family::chi_squared, 25, {3}, 20, inf), -3.1282722659713311, 1e-10));
}

TEST_CASE("truncation deep in the lower tail stays accurate", "[distributions][truncation][R]") {
  // F(upper) - F(lower) of two tiny CDFs: no cancellation.
  // R: dnorm(-9.5, log = TRUE) - pnorm(-9, log.p = TRUE)
  CHECK(close(tlpdf(Family::normal, -9.5, {0, 1}, -inf, -9), -2.41578941987256, 1e-10));
}

TEST_CASE("truncation deep in the upper tail stays finite and accurate",
          "[distributions][truncation][R]") {
  // Known to fail: truncated_lpdf (distributions.hpp) normalises by
  // F(upper) - F(lower); when both CDFs are near 1 the difference cancels
  // (relative error eps / (1 - F(lower))) and becomes exactly 0 past about
  // 8.3 sd, so the log density is +Inf. A half-normal prior whose (parameter)
  // mean drifts far below 0 hits this. The survival function 1 - F, computed
  // directly (erfc, expm1, the other incbeta tail), avoids it.
  // R: dnorm(9.5, log = TRUE) - pnorm(9, lower.tail = FALSE, log.p = TRUE)
  CHECK(close(tlpdf(Family::normal, 9.5, {0, 1}, 9, inf), -2.41578941987256, 1e-10));
  // R: dnorm(6.5, log = TRUE) - pnorm(6, lower.tail = FALSE, log.p = TRUE)
  CHECK(close(tlpdf(Family::normal, 6.5, {0, 1}, 6, inf), -1.3071695832299675, 1e-10));
  // R: dnorm(1, -20, 2, log = TRUE) - pnorm(0, -20, 2, lower.tail = FALSE, log.p = TRUE)
  CHECK(close(tlpdf(Family::normal, 1, {-20, 2}, 0, inf), -3.5058005632521514, 1e-10));
  // exponential(1) truncated to (40, Inf) is memoryless: log(1) - (41 - 40)
  CHECK(close(tlpdf(Family::exponential, 41, {1}, 40, inf), -1, 1e-10));
}

TEST_CASE("truncated densities are -Inf outside the bounds, with zero partials",
          "[distributions][truncation]") {
  double dx = 1, dp[max_dist_params] = {1, 1, 1};
  const double p[max_dist_params] = {0, 1, 0};
  CHECK(truncated_lpdf(Family::normal, 2, -0.1, p, 0, inf, &dx, dp) == -inf);
  CHECK(dx == 0);
  CHECK(dp[0] == 0);
  CHECK(dp[1] == 0);
  const double s[max_dist_params] = {4, 1.5, 0.8};
  CHECK(truncated_lpdf(Family::student, 3, 3.5, s, 1, 3, &dx, dp) == -inf);
  CHECK(truncated_lpdf(Family::student, 3, 0.5, s, 1, 3, &dx, dp) == -inf);
}

TEST_CASE("truncated density partials against finite differences",
          "[distributions][truncation][gradient]") {
  struct Case {
    Family f;
    double x;
    std::vector<double> p;
    double lo, hi, tol;
  };
  const Case cases[] = {
      {Family::normal, 0.7, {0.3, 1.3}, 0, inf, 1e-8},
      {Family::normal, -0.2, {0.3, 0.9}, -1, 0.5, 1e-8},
      {Family::cauchy, 1.5, {0.2, 2}, 0, inf, 1e-8},
      {Family::cauchy, 0.1, {0.5, 0.7}, -1, 2, 1e-8},
      {Family::student, 2.2, {4, 1.5, 0.8}, 1, 3, 1e-5},
      {Family::student, 0.4, {2.5, -0.3, 1.2}, 0, inf, 1e-5},
      {Family::exponential, 1, {1.3}, 0.5, 2, 1e-8},
      {Family::exponential, 2.5, {0.7}, 1, inf, 1e-8},
      {Family::uniform, 0.4, {-0.5, 2}, 0, 1, 1e-8},
      {Family::lognormal, 2, {0.3, 0.8}, 1, inf, 1e-8},
      {Family::lognormal, 0.9, {0.3, 0.8}, 0.5, 3, 1e-8},
      {Family::gamma, 1.2, {2.5, 1.3}, 0.5, 3, 1e-5},
      {Family::inverse_gamma, 1.2, {2.5, 1.3}, 0.5, 3, 1e-5},
      {Family::weibull, 1.2, {2.5, 1.3}, 0.5, 3, 1e-8},
      {Family::pareto, 2.2, {2.5, 1.3}, 2, 4, 1e-8},
      {Family::pareto, 2.2, {2.5, 1.3}, 0, 4, 1e-8},
      {Family::laplace, 0.3, {-0.2, 1.7}, -1, 2, 1e-8},
      {Family::laplace, 0.3, {-0.2, 1.7}, 0, inf, 1e-8},
      {Family::beta, 0.3, {2.5, 1.3}, 0.1, 0.6, 1e-5},
      {Family::chi_squared, 2.5, {3}, 1, inf, 1e-5},
      {Family::logistic, 0.3, {1, 2}, -1, 1, 1e-8},
      {Family::f, 1.2, {2.5, 4.3}, 0.5, 3, 1e-5},
  };
  for (const Case& c : cases) {
    const int k_n = lockstep::family_n_params(c.f);
    double p[max_dist_params] = {0, 0, 0}, dx, dp[max_dist_params] = {0, 0, 0};
    for (int k = 0; k < k_n; ++k) p[k] = c.p[k];
    truncated_lpdf(c.f, k_n, c.x, p, c.lo, c.hi, &dx, dp);
    double sdx, sdp[max_dist_params];
    const double fdx = central_difference(
        [&](double v) { return truncated_lpdf(c.f, k_n, v, p, c.lo, c.hi, &sdx, sdp); }, c.x,
        1e-4);
    INFO(lockstep::family_name(c.f) << " truncated to (" << c.lo << ", " << c.hi << ") at "
                                    << c.x);
    CHECK(close(dx, fdx, 1e-8, 1e-10));
    for (int k = 0; k < k_n; ++k) {
      double q[max_dist_params] = {p[0], p[1], p[2]};
      const double fd = central_difference(
          [&](double v) {
            q[k] = v;
            return truncated_lpdf(c.f, k_n, c.x, q, c.lo, c.hi, &sdx, sdp);
          },
          p[k], 1e-4);
      INFO("parameter " << k << ": analytic " << dp[k] << ", finite differences " << fd);
      CHECK(close(dp[k], fd, c.tol, 1e-10));
    }
  }
}

namespace {

}  // namespace

TEST_CASE("every family in a program: log density by hand and gradient, 1 and 3 chains",
          "[distributions][executor][gradient]") {
  std::mt19937 rng(204);
  for (const FamilyCase& c : family_cases()) {
    for (long chains : {1L, 3L}) {
      INFO(lockstep::family_name(c.f) << " truncated to (" << c.lo << ", " << c.hi
                                      << "), chains " << chains);
      FamilyProgram fp = family_program(c.f, c.lo, c.hi);
      const Program& p = fp.p;
      const long D = p.n_free;
      const std::vector<double> state = uniform_vector(rng, chains * D, -0.8, 0.8);
      Executor<double> ex(p, chains);
      std::vector<double> lp(chains), grad(chains * D);
      ex.log_density(state.data(), lp.data(), grad.data());
      const int k_n = lockstep::family_n_params(c.f);
      const Node& target = p.nodes[fp.inputs[0]];
      for (long ch = 0; ch < chains; ++ch) {
        // Data is read from the program: the executor keeps row data (the
        // observation stage's) only in tile order.
        auto at = [&](int id, long i) {
          const Node& nd = p.nodes[id];
          if (nd.op == Op::data) return nd.values[nd.size == 1 ? 0 : i];
          return ex.value(id)[(nd.chain ? ch * nd.size : 0) + (nd.size == 1 ? 0 : i)];
        };
        double expected = 0;
        for (long i = 0; i < target.size; ++i) {
          double pv[max_dist_params] = {0, 0, 0};
          for (int k = 0; k < k_n; ++k) pv[k] = at(fp.inputs[k + 1], i);
          expected += family_refs().at(lockstep::family_name(c.f)).lpdf(at(fp.inputs[0], i), pv);
          if (!(std::isinf(c.lo) && std::isinf(c.hi))) {
            double dp[max_dist_params];
            const double z = dist_cdf(c.f, c.hi, pv, dp) - dist_cdf(c.f, c.lo, pv, dp);
            expected -= std::log(z);
          }
        }
        for (int id : fp.jacobian_nodes)
          for (long i = 0; i < p.nodes[id].size; ++i)
            expected += state[ch * D + p.nodes[id].offset + i];
        for (int id : fp.logit_nodes)
          for (long i = 0; i < p.nodes[id].size; ++i) {
            const double s = at(id, i);
            expected += std::log(s * (1 - s));
          }
        CHECK(close(lp[ch], expected, 1e-12, 1e-12));
      }
      // the emulated backend (the CUDA kernel bodies lane by lane: the lanes
      // path of every family, prepared where the family prepares) agrees
      const Eval emulated = evaluate(p, chains, state, Backend::emulated);
      for (long ch = 0; ch < chains; ++ch) CHECK(close(emulated.lp[ch], lp[ch], 1e-12, 1e-12));
      for (long k = 0; k < chains * D; ++k) CHECK(close(emulated.grad[k], grad[k], 1e-11, 1e-12));
      // partials that the library takes by central differences of a CDF
      const bool by_differences =
          !(std::isinf(c.lo) && std::isinf(c.hi)) &&
          (cdf_partial_by_differences(lockstep::family_name(c.f), 0) ||
           cdf_partial_by_differences(lockstep::family_name(c.f), 1));
      check_gradient(p, chains, state, by_differences ? 1e-5 : 1e-7, 1e-8);
    }
  }
}

TEST_CASE("bernoulli_logit in a program at extreme eta: finite, exact gradient, both backends",
          "[distributions][executor][bernoulli_logit]") {
  // y ~ bernoulli_logit(eta) with eta = +-40 and +-50 in different chains, where
  // bernoulli(ilogit(eta)) gives log(0) for the unlikely outcome.
  Program p;
  const std::vector<double> y = {1, 0, 1, 0};
  const int yd = p.add(data_node(y));
  const int eta = p.add(param_node(4, 0));
  add_term(p, density_node(Family::bernoulli_logit, {yd, eta}));
  p.n_free = 4;
  lockstep::plan(p);
  const std::vector<double> state = {40, 40, -40, -40,  -50, 50, 50, -50,  0.5, -0.5, 3, -3};
  auto ilogit = [](double e) { return e >= 0 ? 1 / (1 + std::exp(-e)) : std::exp(e) / (1 + std::exp(e)); };
  for (long chains : {1L, 3L}) {
    for (Backend b : {Backend::cpu, Backend::emulated}) {
      INFO("chains " << chains << (b == Backend::cpu ? ", cpu" : ", emulated"));
      const Eval e = evaluate(p, chains, std::vector<double>(state.begin(), state.begin() + 4 * chains), b);
      for (long c = 0; c < chains; ++c) {
        double expected = 0;
        for (long i = 0; i < 4; ++i) {
          const double v = state[c * 4 + i];
          // log ilogit(v) = -log1p(exp(-v)), log(1 - ilogit(v)) = -log1p(exp(v)), by branch
          const double l1 = v > 0 ? -std::log1p(std::exp(-v)) : v - std::log1p(std::exp(v));
          const double l0 = v > 0 ? -v - std::log1p(std::exp(-v)) : -std::log1p(std::exp(v));
          expected += y[i] == 1 ? l1 : l0;
          // y - ilogit(v), written so that 1 - ilogit(40) keeps its digits
          const double d = y[i] == 1 ? ilogit(-v) : -ilogit(v);
          CHECK(close(e.grad[c * 4 + i], d, 1e-13, 1e-300));
        }
        REQUIRE(std::isfinite(e.lp[c]));
        CHECK(close(e.lp[c], expected, 1e-14));
      }
    }
  }
  // chain 0 is -80 - 2 * 4.25e-18: two terms of -40, two of -4.25e-18
  CHECK(close(evaluate(p, 1, {40, 40, -40, -40}).lp[0], -80, 1e-15));
}

TEST_CASE("the link-scale families in a program at extreme eta: finite, exact gradient, both backends",
          "[distributions][executor][representations]") {
  // y ~ family(eta) with eta far in both tails in some chains, where the
  // probability (rate) form gives log(0); the gradient against central
  // differences on the cpu and emulated backends, for 1, 2 and 3 chains.
  // poisson_log's unstable tail is the negative one (exp(eta) underflowing):
  // at eta = 40 its log density is -2e17, past what differences resolve.
  const std::vector<double> links = {40, -40, 25, -30,  -35, 38, 0.5, 22,  0.3, -0.6, 3, -3};
  const std::vector<double> logs = {-800, -40, 2, -30,  -35, 1.5, 0.5, -750,  0.3, -0.6, 2.2, -3};
  struct Spec {
    Family f;
    std::vector<double> y, size;
  };
  const Spec specs[] = {{Family::bernoulli_probit, {1, 0, 0, 1}, {}},
                        {Family::binomial_logit, {2, 0, 5, 3}, {4, 3, 5, 6}},
                        {Family::binomial_probit, {2, 0, 5, 3}, {4, 3, 5, 6}},
                        {Family::poisson_log, {0, 3, 1, 7}, {}}};
  for (const Spec& sp : specs) {
    const std::vector<double>& state = sp.f == Family::poisson_log ? logs : links;
    Program p;
    const int yd = p.add(data_node(sp.y));
    std::vector<int> inputs = {yd};
    if (!sp.size.empty()) inputs.push_back(p.add(data_node(sp.size)));
    const int eta = p.add(param_node(4, 0));
    inputs.push_back(eta);
    add_term(p, density_node(sp.f, inputs));
    p.n_free = 4;
    lockstep::plan(p);
    for (long chains : {1L, 2L, 3L}) {
      const std::vector<double> s(state.begin(), state.begin() + 4 * chains);
      for (Backend b : {Backend::cpu, Backend::emulated}) {
        INFO(lockstep::family_name(sp.f) << ", chains " << chains
                                         << (b == Backend::cpu ? ", cpu" : ", emulated"));
        const Eval e = evaluate(p, chains, s, b);
        for (long c = 0; c < chains; ++c) {
          double expected = 0;
          for (long i = 0; i < 4; ++i) {
            double dx, dp[max_dist_params] = {0, 0, 0};
            std::vector<double> q = sp.size.empty() ? std::vector<double>{s[c * 4 + i], 0, 0}
                                                    : std::vector<double>{sp.size[i], s[c * 4 + i], 0};
            expected += dist_lpdf(sp.f, sp.y[i], q.data(), &dx, dp);
          }
          REQUIRE(std::isfinite(e.lp[c]));
          CHECK(close(e.lp[c], expected, 1e-14));
        }
        check_gradient(p, chains, s, 1e-6, 1e-7, 1e-4, b);
      }
    }
  }
}

TEST_CASE("invalid parameters give NaN", "[distributions][nan]") {
  const double nan = std::nan("");
  CHECK(std::isnan(lpdf(Family::normal, 0.3, {0, 0})));
  CHECK(std::isnan(lpdf(Family::normal, 0.3, {0, -1})));
  CHECK(std::isnan(lpdf(Family::normal, 0.3, {0, nan})));
  CHECK(std::isnan(lpdf(Family::cauchy, 0.3, {0, 0})));
  CHECK(std::isnan(lpdf(Family::cauchy, 0.3, {0, -2})));
  CHECK(std::isnan(lpdf(Family::student, 0.3, {0, 0, 1})));
  CHECK(std::isnan(lpdf(Family::student, 0.3, {-1, 0, 1})));
  CHECK(std::isnan(lpdf(Family::student, 0.3, {3, 0, 0})));
  CHECK(std::isnan(lpdf(Family::student, 0.3, {3, 0, -1})));
  CHECK(std::isnan(lpdf(Family::exponential, 0.3, {0})));
  CHECK(std::isnan(lpdf(Family::exponential, 0.3, {-2})));
  CHECK(std::isnan(lpdf(Family::bernoulli, 1, {-0.1})));
  CHECK(std::isnan(lpdf(Family::bernoulli, 1, {1.1})));
  CHECK(std::isnan(lpdf(Family::bernoulli, 0, {nan})));
  CHECK(std::isnan(lpdf(Family::bernoulli_logit, 0, {nan})));
  CHECK(std::isnan(lpdf(Family::bernoulli_logit, 1, {nan})));
  CHECK(std::isnan(lpdf(Family::bernoulli_probit, 0, {nan})));
  CHECK(std::isnan(lpdf(Family::bernoulli_probit, 1, {nan})));
  CHECK(std::isnan(lpdf(Family::binomial_logit, 1, {3, nan})));
  CHECK(std::isnan(lpdf(Family::binomial_probit, 1, {-1, 0.2})));
  CHECK(std::isnan(lpdf(Family::poisson_log, 1, {nan})));
  CHECK(std::isnan(lpdf(Family::uniform, 0.3, {1, 1})));
  CHECK(std::isnan(lpdf(Family::uniform, 0.3, {2, 1})));
  CHECK(std::isnan(lpdf(Family::lognormal, 0.3, {0, 0})));
  for (Family f : {Family::gamma, Family::inverse_gamma, Family::weibull, Family::pareto,
                   Family::beta, Family::f}) {
    INFO("family " << lockstep::family_name(f));
    CHECK(std::isnan(lpdf(f, 0.3, {0, 1})));
    CHECK(std::isnan(lpdf(f, 0.3, {1, -1})));
    CHECK(std::isnan(lpdf(f, 0.3, {nan, 1})));
  }
  CHECK(std::isnan(lpdf(Family::laplace, 0.3, {0, 0})));
  CHECK(std::isnan(lpdf(Family::logistic, 0.3, {0, -1})));
  CHECK(std::isnan(lpdf(Family::chi_squared, 0.3, {0})));
  CHECK(std::isnan(lpdf(Family::poisson, 1, {-0.5})));
  CHECK(std::isnan(lpdf(Family::binomial, 1, {3, 1.5})));
  CHECK(std::isnan(lpdf(Family::binomial, 1, {-1, 0.5})));
  CHECK(std::isnan(lpdf(Family::negative_binomial, 1, {0, 0.5})));
  CHECK(std::isnan(lpdf(Family::negative_binomial, 1, {2, 0})));
  CHECK(std::isnan(lpdf(Family::beta_binomial, 1, {-1, 1, 1})));
  CHECK(std::isnan(lpdf(Family::beta_binomial, 1, {inf, 1, 1})));
  CHECK(std::isnan(lpdf(Family::beta_binomial, 1, {3, 0, 1})));
  CHECK(std::isnan(lpdf(Family::beta_binomial, 1, {3, 1, -1})));
  CHECK(std::isnan(lpdf(Family::beta_binomial, 1, {3, nan, 1})));
  CHECK(std::isnan(lpdf(Family::beta_binomial, 1, {3, 1, inf})));
  // R: dhyper gives NaN for these (negative, non-integer, k > m + n)
  CHECK(std::isnan(lpdf(Family::hypergeometric, 1, {-1, 2, 1})));
  CHECK(std::isnan(lpdf(Family::hypergeometric, 1, {3, -2, 1})));
  CHECK(std::isnan(lpdf(Family::hypergeometric, 1, {3, 2, 7})));
  CHECK(std::isnan(lpdf(Family::hypergeometric, 1, {3.5, 2, 2})));
  CHECK(std::isnan(lpdf(Family::hypergeometric, 1, {3, 2, 2.5})));
  CHECK(std::isnan(lpdf(Family::hypergeometric, 1, {inf, 2, 2})));
  CHECK(std::isnan(lpdf(Family::hypergeometric, 1, {3, nan, 2})));
  // and the partials are NaN too
  double dx = 0, dp[max_dist_params] = {0, 0, 0};
  const double bad[max_dist_params] = {0, -1, 0};
  CHECK(std::isnan(dist_lpdf(Family::normal, 0.3, bad, &dx, dp)));
  CHECK(std::isnan(dx));
  CHECK(std::isnan(dp[0]));
  CHECK(std::isnan(dp[1]));
}

TEST_CASE("an invalid parameter in one chain makes only that chain's log density NaN",
          "[distributions][nan][executor]") {
  Program p;
  const int x = p.add(data_node({0.1, -0.3, 0.8}));
  const int sd = p.add(param_node(1, 0));  // untransformed: may be negative
  const int zero = p.add(data_node({0}));
  add_term(p, density_node(Family::normal, {x, zero, sd}));
  p.n_free = 1;
  lockstep::plan(p);
  const std::vector<double> state = {1.2, -0.5, 0.9};
  const Eval e = evaluate(p, 3, state);
  CHECK(std::isfinite(e.lp[0]));
  CHECK(std::isnan(e.lp[1]));
  CHECK(std::isfinite(e.lp[2]));
  CHECK(std::isfinite(e.grad[0]));
  CHECK(std::isfinite(e.grad[2]));
}

TEST_CASE("support: outside it the log density is -Inf", "[distributions][support]") {
  CHECK(lpdf(Family::exponential, -0.1, {2}) == -inf);
  CHECK(lpdf(Family::bernoulli, 0.5, {0.3}) == -inf);
  CHECK(lpdf(Family::bernoulli, 2, {0.3}) == -inf);
  // boundary probabilities
  CHECK(lpdf(Family::bernoulli, 1, {1}) == 0);
  CHECK(lpdf(Family::bernoulli, 0, {0}) == 0);
  CHECK(lpdf(Family::bernoulli, 1, {0}) == -inf);
  CHECK(lpdf(Family::bernoulli, 0, {1}) == -inf);
  // greta's other families
  CHECK(lpdf(Family::uniform, -0.6, {-0.5, 2}) == -inf);
  CHECK(lpdf(Family::uniform, 2.1, {-0.5, 2}) == -inf);
  CHECK(lpdf(Family::lognormal, 0, {0, 1}) == -inf);
  CHECK(lpdf(Family::lognormal, -1, {0, 1}) == -inf);
  CHECK(lpdf(Family::gamma, -0.1, {2, 1}) == -inf);
  CHECK(lpdf(Family::gamma, 0, {2, 1}) == -inf);   // R: dgamma(0, 2, 1, log = TRUE)
  CHECK(lpdf(Family::gamma, 0, {0.5, 1}) == inf);  // R: dgamma(0, 0.5, 1, log = TRUE)
  CHECK(lpdf(Family::inverse_gamma, 0, {2, 1}) == -inf);
  CHECK(lpdf(Family::weibull, -0.1, {2, 1}) == -inf);
  CHECK(close(lpdf(Family::weibull, 0, {1, 2}), -std::log(2.0), 1e-15));  // exponential(1 / 2)
  CHECK(lpdf(Family::pareto, 1.2, {2, 1.3}) == -inf);
  CHECK(lpdf(Family::beta, -0.1, {2, 2}) == -inf);
  CHECK(lpdf(Family::beta, 1.1, {2, 2}) == -inf);
  CHECK(lpdf(Family::chi_squared, -1, {3}) == -inf);
  CHECK(lpdf(Family::f, -1, {3, 4}) == -inf);
  CHECK(lpdf(Family::poisson, -1, {2}) == -inf);
  CHECK(lpdf(Family::poisson, 1.5, {2}) == -inf);
  CHECK(lpdf(Family::poisson, 0, {0}) == 0);  // R: dpois(0, 0, log = TRUE)
  CHECK(lpdf(Family::poisson, 1, {0}) == -inf);
  CHECK(lpdf(Family::binomial, 4, {3, 0.5}) == -inf);
  CHECK(lpdf(Family::binomial, 1.5, {3, 0.5}) == -inf);
  CHECK(lpdf(Family::binomial, 3, {3, 1}) == 0);
  CHECK(lpdf(Family::binomial, 0, {3, 0}) == 0);
  CHECK(lpdf(Family::negative_binomial, -1, {2, 0.5}) == -inf);
  CHECK(lpdf(Family::negative_binomial, 0.5, {2, 0.5}) == -inf);
  CHECK(lpdf(Family::negative_binomial, 0, {2, 1}) == 0);  // R: dnbinom(0, 2, 1, log = TRUE)
  CHECK(lpdf(Family::beta_binomial, -1, {3, 1, 2}) == -inf);
  CHECK(lpdf(Family::beta_binomial, 4, {3, 1, 2}) == -inf);
  CHECK(lpdf(Family::beta_binomial, 1.5, {3, 1, 2}) == -inf);
  CHECK(lpdf(Family::beta_binomial, 0, {0, 1, 2}) == 0);  // R: dbbinom(0, 0, 1, 2, log = TRUE)
  // R: dhyper(x, 3, 2, 4) is nonzero for x in 2..3 only
  CHECK(lpdf(Family::hypergeometric, 1, {3, 2, 4}) == -inf);
  CHECK(lpdf(Family::hypergeometric, 4, {3, 2, 4}) == -inf);
  CHECK(lpdf(Family::hypergeometric, -1, {3, 2, 4}) == -inf);
  CHECK(lpdf(Family::hypergeometric, 2.5, {3, 2, 4}) == -inf);
  CHECK(lpdf(Family::hypergeometric, 2, {2, 0, 2}) == 0);  // R: dhyper(2, 2, 0, 2, log = TRUE)
  // partials of a count-only family are 0, inside the support and outside it
  double dx = -1, dp[max_dist_params] = {-1, -1, -1};
  const double q[max_dist_params] = {3, 2, 4};
  dist_lpdf(Family::hypergeometric, 2, q, &dx, dp);
  CHECK((dx == 0 && dp[0] == 0 && dp[1] == 0 && dp[2] == 0));
  dx = dp[0] = dp[1] = dp[2] = -1;
  dist_lpdf(Family::hypergeometric, 1, q, &dx, dp);
  CHECK((dx == 0 && dp[0] == 0 && dp[1] == 0 && dp[2] == 0));
}

TEST_CASE("ls_lfactorial_count is log(x!) for counts, exactly 0 at 0 and 1",
          "[distributions][special]") {
  CHECK(lockstep::ls_lfactorial_count(0) == 0.0);
  CHECK(lockstep::ls_lfactorial_count(1) == 0.0);
  double worst = 0;
  for (double x = 2; x < 3000; x += x < 40 ? 1 : 37) {
    const double ref = static_cast<double>(lgammal(static_cast<long double>(x) + 1));
    worst = std::max(worst, std::fabs(lockstep::ls_lfactorial_count(x) - ref) / ref);
  }
  for (double x : {1e5, 123456789.0, 1e15}) {
    const double ref = static_cast<double>(lgammal(static_cast<long double>(x) + 1));
    worst = std::max(worst, std::fabs(lockstep::ls_lfactorial_count(x) - ref) / ref);
  }
  INFO("worst relative error " << worst);
  CHECK(worst < 1e-15);
}

TEST_CASE("ls_lfactorial is lgamma(x + 1), bit for bit, from its table and beyond",
          "[distributions][special]") {
  // the table's counts, the first counts past it, and what it must not serve
  for (int i = 0; i < 300; ++i)
    CHECK(lockstep::ls_lfactorial(i) == std::lgamma(i + 1.0));
  for (double x : {0.5, 2.25, 254.5, 255.999, 1e6, 1e300, -0.5})
    CHECK(lockstep::ls_lfactorial(x) == std::lgamma(x + 1));
  CHECK(std::isinf(lockstep::ls_lfactorial(-1.0)));
  CHECK(std::isnan(lockstep::ls_lfactorial(std::nan(""))));
  CHECK(std::isinf(lockstep::ls_lfactorial(HUGE_VAL)));
  // the count families through it, against R's dpois / dbinom / dnbinom
  // values at counts on both sides of the table's end
  double dx, dp[3];
  const double q[3] = {300.0, 0.5, 0};
  for (double x : {0.0, 7.0, 255.0, 256.0}) {
    const double l[1] = {100.0};
    CHECK(lockstep::dist_lpdf(lockstep::Family::poisson, x, l, &dx, dp) ==
          Approx(x * std::log(100.0) - 100.0 - std::lgamma(x + 1)).epsilon(1e-14));
    const double eta[1] = {std::log(100.0)};
    CHECK(lockstep::dist_lpdf(lockstep::Family::poisson_log, x, eta, &dx, dp) ==
          Approx(x * eta[0] - 100.0 - std::lgamma(x + 1)).epsilon(1e-13));
    CHECK(lockstep::dist_lpdf(lockstep::Family::binomial, x, q, &dx, dp) ==
          Approx(std::lgamma(301.0) - std::lgamma(x + 1) - std::lgamma(301.0 - x) +
                 300 * std::log(0.5)).epsilon(1e-13));
  }
}

// math/elementary.hpp: the straight-line exp and logs of the vectorised
// element loops, against the C library on their whole ranges and edges.
namespace {
double rel_error(double got, double ref) {
  if (got == ref) return 0;
  return std::fabs(got - ref) / std::fabs(ref);
}
}  // namespace

TEST_CASE("ls_exp_nonpos is within 2 ulps of exp on x <= 0", "[distributions][special]") {
  std::mt19937 rng(29);
  std::uniform_real_distribution<double> wide(-708, 0), narrow(-1, 0), tail(-745.2, -708);
  double worst = 0;
  for (int i = 0; i < 300000; ++i) {
    const double x = i % 3 == 0 ? wide(rng) : (i % 3 == 1 ? narrow(rng) : -std::exp(wide(rng) / 20));
    worst = std::max(worst, rel_error(lockstep::ls_exp_nonpos(x), std::exp(x)));
  }
  INFO("worst relative error " << worst);
  CHECK(worst < 4.5e-16);
  // Subnormal results: within a couple of the smallest subnormals.
  for (int i = 0; i < 10000; ++i) {
    const double x = tail(rng);
    INFO("x = " << x);
    CHECK(std::fabs(lockstep::ls_exp_nonpos(x) - std::exp(x)) <= 1e-323 + 4.5e-16 * std::exp(x));
  }
  CHECK(lockstep::ls_exp_nonpos(0.0) == 1.0);
  CHECK(lockstep::ls_exp_nonpos(-0.0) == 1.0);
  CHECK(lockstep::ls_exp_nonpos(-746.0) == 0.0);
  CHECK(lockstep::ls_exp_nonpos(-1e300) == 0.0);
  CHECK(lockstep::ls_exp_nonpos(-HUGE_VAL) == 0.0);
  CHECK(std::isnan(lockstep::ls_exp_nonpos(NAN)));
}

TEST_CASE("ls_exp is within 2 ulps of exp for every double", "[distributions][special]") {
  std::mt19937 rng(41);
  std::uniform_real_distribution<double> wide(-708, 709.78), narrow(-1, 1), top(700, 709.78);
  double worst = 0;
  for (int i = 0; i < 300000; ++i) {
    const double x = i % 3 == 0 ? wide(rng) : (i % 3 == 1 ? narrow(rng) : top(rng));
    worst = std::max(worst, rel_error(lockstep::ls_exp(x), std::exp(x)));
  }
  INFO("worst relative error " << worst);
  CHECK(worst < 4.5e-16);
  for (double x : {-745.1, -740.0, -709.0, 1e-300, -1e-300, 1e-17, 0.5, 709.0, 709.78})
    CHECK(rel_error(lockstep::ls_exp(x), std::exp(x)) < 4.5e-16);
  // the tails and the special values, as the C library's
  CHECK(lockstep::ls_exp(0.0) == 1.0);
  CHECK(lockstep::ls_exp(-0.0) == 1.0);
  CHECK(lockstep::ls_exp(709.79) == HUGE_VAL);
  CHECK(lockstep::ls_exp(710.0) == HUGE_VAL);
  CHECK(lockstep::ls_exp(1e300) == HUGE_VAL);
  CHECK(lockstep::ls_exp(HUGE_VAL) == HUGE_VAL);
  CHECK(lockstep::ls_exp(-746.0) == 0.0);
  CHECK(lockstep::ls_exp(-HUGE_VAL) == 0.0);
  CHECK(std::isnan(lockstep::ls_exp(NAN)));
  // the largest finite result
  CHECK(std::isfinite(lockstep::ls_exp(709.782712893384)));
  CHECK(rel_error(lockstep::ls_exp(709.782712893384), std::exp(709.782712893384)) < 4.5e-16);
}

TEST_CASE("running_sum: short and long sums within rounding of the plain sum", "[distributions][special]") {
  std::mt19937 rng(43);
  std::uniform_real_distribution<double> u(-1, 1);
  for (long n : {0L, 1L, 3L, 4L, 5L, 11L, 15L, 16L, 17L, 33L, 121L, 1000L}) {
    INFO("n = " << n);
    std::vector<double> x(n);
    double plain = 0, abs_sum = 0;
    for (double& v : x) {
      v = u(rng);
      plain += v;
      abs_sum += std::fabs(v);
    }
    const double s = lockstep::detail::sum_doubles(x.data(), n);
    CHECK(std::fabs(s - plain) <= 4 * n * 1.2e-16 * abs_sum);
    // the same inputs give the same sum
    CHECK(lockstep::detail::sum_doubles(x.data(), n) == s);
  }
  // exact for integers
  std::vector<double> ints(11);
  for (long i = 0; i < 11; ++i) ints[i] = static_cast<double>(i + 1);
  CHECK(lockstep::detail::sum_doubles(ints.data(), 11) == 66.0);
}

TEST_CASE("ls_log1p_unit is within 2 ulps of log1p on [0 1]", "[distributions][special]") {
  std::mt19937 rng(31);
  std::uniform_real_distribution<double> u(0, 1), lg(-745, 0);
  double worst = 0;
  for (int i = 0; i < 300000; ++i) {
    const double x = i % 2 ? u(rng) : std::exp(lg(rng));
    worst = std::max(worst, rel_error(lockstep::ls_log1p_unit(x), std::log1p(x)));
  }
  for (double x : {0.0, 5e-324, 1e-300, 1e-17, 0.41421356237309503, 0.414213562373095, 0.5, 1.0}) {
    INFO("x = " << x);
    CHECK(rel_error(lockstep::ls_log1p_unit(x), std::log1p(x)) < 4.5e-16);
  }
  INFO("worst relative error " << worst);
  CHECK(worst < 4.5e-16);
}

// digamma in long double, independently of math/log_gamma.hpp: the recurrence
// up to x >= 40, then the asymptotic series (its next term below 2e-21).
static long double digamma_long(long double x) {
  long double r = 0;
  while (x < 40) {
    r -= 1 / x;
    x += 1;
  }
  const long double f = 1 / (x * x);
  return r + logl(x) - 0.5L / x -
         f * (1.0L / 12 - f * (1.0L / 120 - f * (1.0L / 252 - f * (1.0L / 240 - f / 132))));
}

TEST_CASE("ls_lgamma_digamma is within its documented error of long double references",
          "[distributions][special]") {
  std::mt19937 rng(41);
  std::uniform_real_distribution<double> e(-690, 690), s(0, 30);
  double worst_lg = 0, worst_dg = 0;
  for (int i = 0; i < 400000; ++i) {
    const double x = i % 2 ? std::exp(e(rng)) : s(rng);
    const lockstep::LogGamma g = lockstep::ls_lgamma_digamma(x);
    const double lg = static_cast<double>(lgammal(x)), dg = static_cast<double>(digamma_long(x));
    // absolute below 1 in size, relative above
    worst_lg = std::max(worst_lg, std::fabs(g.lgamma - lg) / std::max(1.0, std::fabs(lg)));
    worst_dg = std::max(worst_dg, std::fabs(g.digamma - dg) / std::max(1.0, std::fabs(dg)));
  }
  INFO("worst error: lgamma " << worst_lg << ", digamma " << worst_dg);
  CHECK(worst_lg < 2e-14);
  CHECK(worst_dg < 5e-15);
  // the shift's edge, and the limits
  for (double x : {1e-300, 1.0, 2.0, 9.999999999, 10.0, 10.000000001}) {
    INFO("x = " << x);
    const lockstep::LogGamma g = lockstep::ls_lgamma_digamma(x);
    CHECK(std::fabs(g.lgamma - std::lgamma(x)) < 2e-14 * std::max(1.0, std::fabs(std::lgamma(x))));
    const double dg = static_cast<double>(digamma_long(x));
    CHECK(std::fabs(g.digamma - dg) < 5e-15 * std::max(1.0, std::fabs(dg)));
  }
  const lockstep::LogGamma zero = lockstep::ls_lgamma_digamma(0.0);
  CHECK(zero.lgamma == HUGE_VAL);
  CHECK(zero.digamma == -HUGE_VAL);
  const lockstep::LogGamma inf = lockstep::ls_lgamma_digamma(HUGE_VAL);
  CHECK(inf.lgamma == HUGE_VAL);
  CHECK(inf.digamma == HUGE_VAL);
  for (double x : {-1.0, -0.5, -HUGE_VAL, static_cast<double>(NAN)}) {
    INFO("x = " << x);
    CHECK(std::isnan(lockstep::ls_lgamma_digamma(x).lgamma));
    CHECK(std::isnan(lockstep::ls_lgamma_digamma(x).digamma));
  }
}

TEST_CASE("ls_log1p is within 3 ulps of log1p for every double above -1",
          "[distributions][special]") {
  std::mt19937 rng(43);
  std::uniform_real_distribution<double> unit(-1, 1), e(-745, 700);
  double worst = 0;
  for (int i = 0; i < 300000; ++i) {
    double y;
    if (i % 3 == 0) y = unit(rng);                   // (-1, 1)
    else if (i % 3 == 1) y = std::exp(e(rng));       // (0, Inf), log-uniformly
    else y = -std::exp(-std::fabs(e(rng)));          // [-1, 0), near 0 and near -1
    if (y <= -1) continue;
    const double ref = std::log1p(y);
    if (ref != 0) worst = std::max(worst, rel_error(lockstep::ls_log1p(y), ref));
  }
  INFO("worst relative error " << worst);
  CHECK(worst < 6.7e-16);
  for (double y : {1e-300, -1e-300, 1e-17, -1e-17, 1.1e-16, -0.999999, 1.0, 1e300}) {
    INFO("y = " << y);
    CHECK(rel_error(lockstep::ls_log1p(y), std::log1p(y)) < 6.7e-16);
  }
  CHECK(lockstep::ls_log1p(0.0) == 0.0);
  CHECK(lockstep::ls_log1p(-1.0) == -HUGE_VAL);
  CHECK(lockstep::ls_log1p(HUGE_VAL) == HUGE_VAL);
  CHECK(std::isnan(lockstep::ls_log1p(-2.0)));
  CHECK(std::isnan(lockstep::ls_log1p(static_cast<double>(NAN))));
}

TEST_CASE("ls_log is within 2 ulps of log for every double", "[distributions][special]") {
  std::mt19937 rng(37);
  std::uniform_real_distribution<double> e(-745, 709), near1(0.5, 2);
  double worst = 0;
  for (int i = 0; i < 300000; ++i) {
    const double x = i % 2 ? std::exp(e(rng)) : near1(rng);
    // relative even near x = 1: the reduction's f = x - 1 is exact there
    worst = std::max(worst, rel_error(lockstep::ls_log(x), std::log(x)));
  }
  INFO("worst relative error " << worst);
  CHECK(worst < 4.5e-16);
  for (double x : {5e-324, 1e-310, 2.2250738585072014e-308, 1.0, 2.0, 0.5, 1.7976931348623157e308}) {
    INFO("x = " << x);
    CHECK(rel_error(lockstep::ls_log(x), std::log(x)) < 4.5e-16);
  }
  CHECK(lockstep::ls_log(1.0) == 0.0);
  CHECK(lockstep::ls_log(0.0) == -HUGE_VAL);
  CHECK(lockstep::ls_log(-0.0) == -HUGE_VAL);
  CHECK(lockstep::ls_log(HUGE_VAL) == HUGE_VAL);
  CHECK(std::isnan(lockstep::ls_log(-1.0)));
  CHECK(std::isnan(lockstep::ls_log(-HUGE_VAL)));
  CHECK(std::isnan(lockstep::ls_log(NAN)));
}

// Evaluates the program for 2 chains at state on the cpu and emulated
// backends, with and without the Jacobian, and hands each result to check.
template <class Check>
void with_and_without_jacobian(const Program& p, const std::vector<double>& state, Check&& check) {
  for (Backend b : {Backend::cpu, Backend::emulated}) {
    for (bool jacobian : {true, false}) {
      INFO((b == Backend::cpu ? "cpu" : "emulated") << (jacobian ? ", with" : ", without")
                                                    << " the Jacobian");
      lockstep::ExecOptions o;
      o.backend = b;
      o.jacobian = jacobian;
      Executor<double> ex(p, 2, o);
      std::vector<double> lp(2), grad(state.size());
      ex.log_density(state.data(), lp.data(), grad.data());
      check(jacobian, lp, grad);
    }
  }
}

TEST_CASE("log_jacobian: its term adds its target, d/dx = 1, and is dropped without the "
          "Jacobian, cpu and emulated",
          "[distributions][executor][log_jacobian]") {
  // The log |Jacobian| of x = exp(z) for a 3-vector z: sum(z), as an expression
  // of the program (what R's constrained variables build), plus a normal(0, 1)
  // prior on x = exp(z) so that the Jacobian's absence shows in lp and grad.
  Program p;
  const int z = p.add(param_node(3, 0));
  const int x = p.add(unary_node(Op::exp, z, p));
  const int zero = p.add(data_node({0}));
  const int one = p.add(data_node({1}));
  add_term(p, density_node(Family::normal, {x, zero, one}));
  const int logj = p.add(sum_node(z));
  add_term(p, density_node(Family::log_jacobian, {logj}));
  p.n_free = 3;
  lockstep::plan(p);
  CHECK(lockstep::family_n_params(Family::log_jacobian) == 0);
  CHECK_FALSE(lockstep::family_continuous(Family::log_jacobian));
  const std::vector<double> state = {-0.4, 0.2, 1.1, 0.9, -1.3, 0.05};
  with_and_without_jacobian(p, state, [&](bool jacobian, const std::vector<double>& lp,
                                          const std::vector<double>& grad) {
    for (long c = 0; c < 2; ++c) {
      double expected = 0;
      for (long i = 0; i < 3; ++i) {
        const double zi = state[c * 3 + i], xi = std::exp(zi);
        expected += -0.5 * xi * xi - 0.5 * std::log(2 * M_PI) + (jacobian ? zi : 0);
        // d/dz of -x^2 / 2 is -x^2; the Jacobian adds 1
        CHECK(close(grad[c * 3 + i], -xi * xi + (jacobian ? 1 : 0), 1e-13, 1e-14));
      }
      CHECK(close(lp[c], expected, 1e-13, 1e-14));
    }
  });
  check_gradient(p, 2, state, 1e-8, 1e-10);
}

TEST_CASE("target: its term adds its target, d/dx = 1, and is kept without the Jacobian, "
          "cpu and emulated",
          "[distributions][executor][target]") {
  // A density built from ordinary ops, as R's multivariate distributions build
  // theirs: the standard normal log density of z, -z^2 / 2 - log(2 pi) / 2 per
  // element, as a row of per-element values (the term sums them), beside a
  // log_jacobian term sum(z). Without the Jacobian only the latter goes.
  Program p;
  const int z = p.add(param_node(3, 0));
  const int zz = p.add(binary_node(Op::mul, z, z, p));
  const int half = p.add(data_node({-0.5}));
  const int c = p.add(data_node({-0.5 * std::log(2 * M_PI)}));
  const int scaled = p.add(binary_node(Op::mul, zz, half, p));
  const int lp_z = p.add(binary_node(Op::add, scaled, c, p));
  add_term(p, density_node(Family::target, {lp_z}));
  const int logj = p.add(sum_node(z));
  add_term(p, density_node(Family::log_jacobian, {logj}));
  p.n_free = 3;
  lockstep::plan(p);
  CHECK(lockstep::family_n_params(Family::target) == 0);
  CHECK_FALSE(lockstep::family_continuous(Family::target));
  const std::vector<double> state = {-0.4, 0.2, 1.1, 0.9, -1.3, 0.05};
  with_and_without_jacobian(p, state, [&](bool jacobian, const std::vector<double>& lp,
                                          const std::vector<double>& grad) {
    for (long ch = 0; ch < 2; ++ch) {
      double expected = 0;
      for (long i = 0; i < 3; ++i) {
        const double zi = state[ch * 3 + i];
        // the target term is there with or without the Jacobian
        expected += -0.5 * zi * zi - 0.5 * std::log(2 * M_PI) + (jacobian ? zi : 0);
        CHECK(close(grad[ch * 3 + i], -zi + (jacobian ? 1 : 0), 1e-13, 1e-14));
      }
      CHECK(close(lp[ch], expected, 1e-13, 1e-14));
    }
  });
  check_gradient(p, 2, state, 1e-8, 1e-10);
}

// The CPU's chunked density loop (DensityTerm::sum_chain_chunked) has lean
// element loops for terms whose wanted partials each have an adjoint per
// element (a prior's target, a likelihood's linear predictor); they must
// give the element-by-element path's log density and adjoints. Sizes over
// several chunks and with a partial last chunk; three chains, each its own
// values, and a target of data the same for every chain (x_per_chain false:
// where a family's data_term is summed once for all chains).
template <class T, lockstep::Family F>
void check_lean_density(std::mt19937& rng, bool dx_wanted, bool dp0_wanted, bool p0_per_element,
                        bool x_per_chain = true) {
  using lockstep::AdjointSink;
  using lockstep::DensityTerm;
  using lockstep::Operand;
  using Term = DensityTerm<T, F>;
  constexpr int K = Term::n_params;
  const long C = 3, n = 2 * Term::chunk + 37;
  std::uniform_real_distribution<double> u(0, 1);
  // values in the family's support: x, then its parameters (per element for
  // p0 when asked, else one value per chain)
  std::vector<T> x(C * n), p0(C * n), p1(C), p2(C);
  for (long i = 0; i < C * n; ++i) {
    switch (F) {
      case lockstep::Family::bernoulli_logit:
        x[i] = u(rng) < 0.5 ? 1 : 0;
        p0[i] = static_cast<T>(8 * u(rng) - 4);
        break;
      case lockstep::Family::poisson_log:
      case lockstep::Family::poisson:
        x[i] = std::floor(40 * u(rng) * u(rng));  // past the small counts' product
        p0[i] = static_cast<T>(F == lockstep::Family::poisson ? 0.5 + 10 * u(rng) : 2 * u(rng) - 1);
        break;
      case lockstep::Family::gamma:
      case lockstep::Family::lognormal:
        x[i] = static_cast<T>(0.1 + 3 * u(rng));
        p0[i] = static_cast<T>(F == lockstep::Family::gamma ? 0.5 + 2 * u(rng) : u(rng) - 0.5);
        break;
      case lockstep::Family::negative_binomial:  // size per element or per chain, prob per chain
        x[i] = std::floor(30 * u(rng));
        p0[i] = static_cast<T>(0.5 + 4 * u(rng));
        break;
      case lockstep::Family::beta:  // beta and exponential: the straight-line loops
      case lockstep::Family::exponential:
      case lockstep::Family::weibull:
        x[i] = static_cast<T>(F == lockstep::Family::beta ? 0.02 + 0.96 * u(rng) : 0.1 + 3 * u(rng));
        p0[i] = static_cast<T>(0.5 + 2.5 * u(rng));
        break;
      default:  // normal, student, logistic, cauchy, laplace: any x; p0 the
                // location or the degrees of freedom
        x[i] = static_cast<T>(4 * u(rng) - 2);
        p0[i] = static_cast<T>(F == lockstep::Family::student ? 1 + 5 * u(rng) : u(rng) - 0.5);
    }
  }
  for (long c = 0; c < C; ++c) {
    p1[c] = static_cast<T>(F == lockstep::Family::student             ? u(rng) - 0.5
                           : F == lockstep::Family::negative_binomial ? 0.2 + 0.6 * u(rng)
                                                                      : 0.5 + u(rng));
    p2[c] = static_cast<T>(0.5 + u(rng));
  }
  const long p0_stride = p0_per_element ? n : 1;
  if (!p0_per_element)
    for (long c = 0; c < C; ++c) p0[c] = p0[c * n];
  auto make = [&](std::vector<T>& dx, std::vector<T>& dp0) {
    Term term{};
    term.lower = -HUGE_VAL;
    term.upper = HUGE_VAL;
    term.truncated = false;
    term.x = Operand<T>{x.data(), x_per_chain ? n : 0, false};
    const T* ps[3] = {p0.data(), p1.data(), p2.data()};
    const long strides[3] = {p0_stride, 1, 1};
    for (int k = 0; k < K; ++k)
      term.p[k] = Operand<T>{ps[k], strides[k], !(k == 0 && p0_per_element)};
    term.dx = dx_wanted ? AdjointSink<T>{dx.data(), n, false} : AdjointSink<T>{nullptr, 0, false};
    for (int k = 0; k < K; ++k) term.dp[k] = AdjointSink<T>{nullptr, 0, false};
    if (K > 0 && dp0_wanted)
      term.dp[0] = AdjointSink<T>{dp0.data(), p0_stride, !p0_per_element};
    return term;
  };
  std::vector<T> dx_chunked(C * n, T(0)), dp0_chunked(C * n, T(0));
  std::vector<T> dx_elements(C * n, T(0)), dp0_elements(C * n, T(0));
  const Term chunked = make(dx_chunked, dp0_chunked);
  const Term elements = make(dx_elements, dp0_elements);
  CHECK(chunked.splits_data_term() ==
        (!x_per_chain && lockstep::has_data_term<lockstep::Dist<F>>::value));
  std::vector<double> lp(C, 0.0);
  chunked.sum_chains(C, n, lp.data(), 1);
  for (long c = 0; c < C; ++c) {
    double expected = 0;
    for (long i = 0; i < n; ++i) expected += elements(c, i);
    CHECK(close(lp[c], expected, 1e-12, 1e-12));
  }
  const double tol = std::is_same<T, float>::value ? 1e-5 : 1e-12;
  for (long i = 0; i < C * n; ++i) {
    CHECK(close(dx_chunked[i], dx_elements[i], tol, tol));
    CHECK(close(dp0_chunked[i], dp0_elements[i], tol, tol));
  }
}

TEST_CASE("the chunked density loop equals the element-by-element one, lean or not",
          "[distributions][density][chunked]") {
  using lockstep::Family;
  std::mt19937 rng(911);
  // (dx wanted, dp0 wanted, p0 per element): a prior (the lean loop of the
  // target's partials), a likelihood of data (the lean loop of the linear
  // predictor's), no gradient (the lean loop without partials), both (the
  // general loop), and a scalar p0's partial (summed: the general loop)
  const bool modes[][3] = {{true, false, false}, {false, true, true}, {false, false, true},
                           {true, true, true},   {true, true, false}, {true, false, true}};
  for (const auto& m : modes) {
    INFO("dx " << m[0] << ", dp0 " << m[1] << ", p0 per element " << m[2]);
    check_lean_density<double, Family::normal>(rng, m[0], m[1], m[2]);
    check_lean_density<float, Family::normal>(rng, m[0], m[1], m[2]);
    check_lean_density<double, Family::student>(rng, m[0], m[1], m[2]);
    check_lean_density<double, Family::gamma>(rng, m[0], m[1], m[2]);
    check_lean_density<double, Family::lognormal>(rng, m[0], m[1], m[2]);
    check_lean_density<double, Family::logistic>(rng, m[0], m[1], m[2]);
    check_lean_density<float, Family::cauchy>(rng, m[0], m[1], m[2]);
    check_lean_density<double, Family::laplace>(rng, m[0], m[1], m[2]);
    check_lean_density<double, Family::beta>(rng, m[0], m[1], m[2]);
    check_lean_density<float, Family::beta>(rng, m[0], m[1], m[2]);
    check_lean_density<double, Family::weibull>(rng, m[0], m[1], m[2]);
    check_lean_density<double, Family::exponential>(rng, m[0], m[1], m[2]);
    if (!m[0]) {  // discrete targets: data only
      check_lean_density<double, Family::bernoulli_logit>(rng, false, m[1], m[2]);
      check_lean_density<float, Family::bernoulli_logit>(rng, false, m[1], m[2]);
      check_lean_density<double, Family::negative_binomial>(rng, false, m[1], m[2]);
      for (bool per_chain : {true, false}) {  // x the same for every chain: its data_term once
        INFO("x per chain " << per_chain);
        check_lean_density<double, Family::poisson_log>(rng, false, m[1], m[2], per_chain);
        check_lean_density<float, Family::poisson_log>(rng, false, m[1], m[2], per_chain);
        check_lean_density<double, Family::poisson>(rng, false, m[1], m[2], per_chain);
        check_lean_density<double, Family::bernoulli_logit>(rng, false, m[1], m[2], per_chain);
      }
    }
  }
}

// A family's data_term and kernel (dist.hpp's has_data_term) add up to its
// lpdf, to the last bit, with the same partials: in the support, outside it
// (-Inf from the kernel, data_term 0) and at NaN and infinite values.
template <lockstep::Family F> void check_data_term(const std::vector<double>& params) {
  using D = lockstep::Dist<F>;
  static_assert(lockstep::has_data_term<D>::value, "a family with a data_term");
  const double inf = HUGE_VAL, nan = std::nan("");
  for (double x : {0.0, 1.0, 3.0, 15.0, 16.0, 17.0, 250.0, 1e6, -1.0, 2.5, inf, nan})
    for (double p0 : params) {
      INFO("x " << x << ", parameter " << p0);
      double p[3] = {p0, 0, 0}, dx1 = 0, dp1[3] = {0, 0, 0}, dx2 = 0, dp2[3] = {0, 0, 0};
      const double whole = D::lpdf(x, p, &dx1, dp1);
      const double split = D::kernel(x, p, &dx2, dp2) + D::data_term(x);
      CHECK(std::memcmp(&whole, &split, sizeof(double)) == 0);
      CHECK(std::memcmp(&dp1[0], &dp2[0], sizeof(double)) == 0);
      CHECK(std::memcmp(&dx1, &dx2, sizeof(double)) == 0);
      CHECK(std::isfinite(D::data_term(x)));
      if (!(x >= 0 && std::floor(x) == x && x < inf)) CHECK(D::data_term(x) == 0);
    }
}

TEST_CASE("a family's kernel and data_term add up to its lpdf", "[distributions][density]") {
  const double inf = HUGE_VAL, nan = std::nan("");
  check_data_term<lockstep::Family::poisson_log>({-800.0, -2.0, 0.0, 1.5, 700.0, -inf, inf, nan});
  check_data_term<lockstep::Family::poisson>({0.0, 1e-300, 0.5, 3.0, 1e5, -1.0, inf, nan});
  // against R's dpois(3, 2, log = TRUE)
  double p[3] = {2.0, 0, 0}, dx, dp[3];
  CHECK(close(lockstep::Dist<lockstep::Family::poisson>::kernel(3, p, &dx, dp) +
                  lockstep::Dist<lockstep::Family::poisson>::data_term(3),
              -1.7123179275482192, 1e-14, 1e-14));
}

namespace {

// Family F's prepared lpdf (dist.hpp's Prepared) against its plain lpdf:
// the value and every partial, at the family's reference draws, at each draw
// with the location taken from another draw (the element loop's per-element
// location), and with x and each parameter in turn replaced by an edge value
// (outside the support, on its boundary, infinite, NaN, invalid). Returns 1
// when F prepares, else 0.
template <Family F> int check_prepared(std::mt19937& rng, const FamilyRef& ref) {
  using D = lockstep::Dist<F>;
  if constexpr (!lockstep::has_prepared<D>::value) {
    return 0;
  } else {
    constexpr int K = D::n_params, L = lockstep::location_param<D>();
    auto same = [](double a, double b) { return close(a, b, 1e-13, 1e-14); };
    // q prepared from p, its lpdf at `location`: the element loop's use;
    // plain lpdf at p with that location
    auto compare = [&](double x, const double* p, double location) {
      double pl[max_dist_params] = {p[0], p[1], p[2]};
      pl[L] = location;
      double dx1 = 0, dp1[max_dist_params] = {0, 0, 0}, dx2 = 0, dp2[max_dist_params] = {0, 0, 0};
      const double v1 = D::lpdf(x, pl, &dx1, dp1);
      const typename D::Prepared q = D::prepare(p);
      const double v2 = D::lpdf(x, location, q, &dx2, dp2);
      INFO("x " << x << ", p " << pl[0] << " " << pl[1] << " " << pl[2] << " (prepared from location "
                << p[L] << "): lpdf " << v1 << " prepared " << v2);
      CHECK(same(v2, v1));
      CHECK(same(dx2, dx1));
      for (int k = 0; k < K; ++k) {
        INFO("partial " << k << ": " << dp1[k] << " prepared " << dp2[k]);
        CHECK(same(dp2[k], dp1[k]));
      }
    };
    const double edges[] = {-1, 0, 1, 2.5, 40, HUGE_VAL, -HUGE_VAL, NAN};
    for (int rep = 0; rep < 200; ++rep) {
      double x, p[max_dist_params] = {0, 0, 0}, x2, p2[max_dist_params] = {0, 0, 0};
      ref.draw(rng, &x, p);
      ref.draw(rng, &x2, p2);
      compare(x, p, p[L]);
      compare(x, p, p2[L]);
      if (rep % 10) continue;
      for (double e : edges) {
        compare(e, p, p[L]);
        for (int k = 0; k < K; ++k) {
          double pe[max_dist_params] = {p[0], p[1], p[2]};
          pe[k] = e;
          compare(x, pe, pe[L]);
          compare(x, pe, p2[L]);
        }
      }
    }
    return 1;
  }
}

}  // namespace

TEST_CASE("every prepared family's lpdf equals its plain lpdf, a location per element included",
          "[distributions][prepared]") {
  std::mt19937 rng(912);
  int prepared = 0;
#define LS_DIST(name, n_params, continuous, tile) \
  prepared += check_prepared<Family::name>(rng, family_refs().at(#name));
#include "lockstep/distributions.def"
#undef LS_DIST
  // normal, student, lognormal, gamma, inverse_gamma, negative_binomial,
  // logistic, cauchy, laplace at least: the test is not empty
  CHECK(prepared >= 9);
}
