// The elementwise ops' test table: for each unary and binary op of ops.def,
// its reference math (independent of math/unary.hpp and math/binary.hpp),
// the domains its inputs are drawn from, and the tolerances of its checks.
// One row per op, shared by the Catch2 tests of the core (test_ops.cpp) and
// the GPU tests (tests/gpu/test_cuda_executor.cpp), so that an op added to
// ops.def gets its test row once: an elementwise op without one fails both
// (test_ops.cpp's coverage test; unary_domain() and binary_domain() throw).
#ifndef LSTEST_ELEMENTWISE_OPS_HPP
#define LSTEST_ELEMENTWISE_OPS_HPP

#include <cmath>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "helpers.hpp"

namespace lstest {

// Uniform on [lo, hi], or with `away_from_zero` uniform on [lo, hi] with a
// random sign.
struct Domain {
  double lo, hi;
  bool away_from_zero = false;
  std::vector<double> draw(std::mt19937& rng, long n) const {
    return away_from_zero ? signed_vector(rng, n, lo, hi) : uniform_vector(rng, n, lo, hi);
  }
};

inline const Domain any_value{-2, 2, false};
inline const Domain nonzero{0.5, 2, true};

// Reference math of the unary ops, the domain their inputs are drawn from
// (inside the function's domain, away from its poles), the relative
// tolerance of the gradient check, and that of the values (relative,
// plus an absolute part for functions with a root inside their domain, or
// computed differently from their reference).
struct UnaryRef {
  double (*value)(double);
  Domain x;
  double grad_tol;
  double value_tol = 1e-14;
  double value_abs = 1e-300;
};

// References for the polygamma functions, independent of math/special.hpp: in
// long double, the recurrence up to x >= 30 and more terms of the asymptotic
// series.
inline double ref_digamma(double x0) {
  long double x = x0, r = 0;
  while (x < 30) r -= 1 / x++;
  const long double f = 1 / (x * x);
  return static_cast<double>(
      r + std::log(x) - 0.5L / x -
      f * (1.0L / 12 - f * (1.0L / 120 - f * (1.0L / 252 - f * (1.0L / 240 - f * (1.0L / 132))))));
}
inline double ref_trigamma(double x0) {
  long double x = x0, r = 0;
  while (x < 30) {
    r += 1 / (x * x);
    x += 1;
  }
  const long double f = 1 / (x * x);
  return static_cast<double>(r + 1 / x + f / 2 +
                             f / x * (1.0L / 6 - f * (1.0L / 30 - f * (1.0L / 42 - f / 30))));
}

inline const std::map<std::string, UnaryRef>& unary_refs() {
  static const std::map<std::string, UnaryRef> m = {
      {"neg", {[](double x) { return -x; }, {-3, 3}, 1e-8}},
      {"exp", {[](double x) { return std::exp(x); }, {-2, 2}, 1e-8}},
      {"log", {[](double x) { return std::log(x); }, {0.3, 3}, 1e-7}},
      {"log1p", {[](double x) { return std::log1p(x); }, {-0.6, 3}, 1e-7}},
      {"sqrt", {[](double x) { return std::pow(x, 0.5); }, {0.3, 3}, 1e-7}},
      {"ilogit", {[](double x) { return 1 / (1 + std::exp(-x)); }, {-5, 5}, 1e-7}},
      // steps: gradient 0 away from the steps
      {"abs", {[](double x) { return std::fabs(x); }, {-3, 3}, 1e-8}},
      {"sign", {[](double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : 0.0; }, {-3, 3}, 1e-8}},
      {"ceiling", {[](double x) { return std::ceil(x); }, {-3, 3}, 1e-8}},
      {"floor", {[](double x) { return std::floor(x); }, {-3, 3}, 1e-8}},
      {"round", {[](double x) { return std::nearbyint(x); }, {-3, 3}, 1e-8}},
      {"trunc", {[](double x) { return std::trunc(x); }, {-3, 3}, 1e-8}},
      {"expm1", {[](double x) { return std::expm1(x); }, {-2, 2}, 1e-8}},
      {"log10",
       {[](double x) { return std::log(x) / std::log(10.0); }, {0.3, 3}, 1e-7, 1e-15, 1e-16}},
      {"log2",
       {[](double x) { return std::log(x) / std::log(2.0); }, {0.3, 3}, 1e-7, 1e-15, 1e-16}},
      {"cos", {[](double x) { return std::cos(x); }, {-3, 3}, 1e-7}},
      {"sin", {[](double x) { return std::sin(x); }, {-3, 3}, 1e-7}},
      {"tan", {[](double x) { return std::tan(x); }, {-1.2, 1.2}, 1e-7}},
      {"acos", {[](double x) { return std::acos(x); }, {-0.9, 0.9}, 1e-7}},
      {"asin", {[](double x) { return std::asin(x); }, {-0.9, 0.9}, 1e-7}},
      {"atan", {[](double x) { return std::atan(x); }, {-3, 3}, 1e-7}},
      {"cosh", {[](double x) { return std::cosh(x); }, {-2, 2}, 1e-7}},
      {"sinh", {[](double x) { return std::sinh(x); }, {-2, 2}, 1e-7}},
      {"tanh", {[](double x) { return std::tanh(x); }, {-2, 2}, 1e-7}},
      {"acosh", {[](double x) { return std::acosh(x); }, {1.2, 4}, 1e-7}},
      {"asinh", {[](double x) { return std::asinh(x); }, {-3, 3}, 1e-7}},
      {"atanh", {[](double x) { return std::atanh(x); }, {-0.9, 0.9}, 1e-7}},
      // reduced by the period before cos(pi x): within a few ulps of the plain form
      {"cospi", {[](double x) { return std::cos(M_PI * x); }, {-3, 3}, 1e-7, 1e-13, 1e-15}},
      {"sinpi", {[](double x) { return std::sin(M_PI * x); }, {-3, 3}, 1e-7, 1e-13, 1e-15}},
      {"tanpi", {[](double x) { return std::tan(M_PI * x); }, {-0.4, 0.4}, 1e-7, 1e-13, 1e-15}},
      {"lgamma", {[](double x) { return std::lgamma(x); }, {0.2, 6}, 1e-7, 1e-14, 1e-15}},
      // digamma has a root at 1.46...: an absolute part
      {"digamma", {ref_digamma, {0.2, 6}, 1e-7, 1e-13, 1e-13}},
      {"trigamma", {ref_trigamma, {0.2, 6}, 1e-7, 1e-13}},
      {"iprobit", {[](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }, {-4, 4}, 1e-7}},
      {"icloglog", {[](double x) { return 1 - std::exp(-std::exp(x)); }, {-3, 1.5}, 1e-7, 1e-13}},
      {"icauchit", {[](double x) { return 0.5 + std::atan(x) / M_PI; }, {-5, 5}, 1e-7, 1e-13}},
      {"log1pe", {[](double x) { return std::log1p(std::exp(x)); }, {-5, 5}, 1e-7, 1e-14}},
  };
  return m;
}

// Reference math of the binary ops, their operands' domains (a, b, and both
// when one node is both operands: div(x, x) away from zero), the gradient's
// relative tolerance and the values' tolerance (relative, absolute).
struct BinaryRef {
  double (*value)(double, double);
  Domain a, b, same;  // the operands, and both when one node is both operands
  double grad_tol;
  double value_tol = 1e-15, value_abs = 1e-300;
};

// R's %% and %/% (arithmetic.c: myfmod, myfloor) in long double, as R computes
// them, for finite operands.
inline double ref_mod(double x1, double x2) {
  if (x2 == 0) return std::nan("");
  const double q = x1 / x2;
  const long double tmp = static_cast<long double>(x1) - std::floor(q) * static_cast<long double>(x2);
  return static_cast<double>(tmp - std::floor(tmp / x2) * x2);
}
inline double ref_idiv(double x1, double x2) {
  const double q = x1 / x2;
  if (x2 == 0 || !std::isfinite(q)) return q;
  if (std::fabs(q) < 1) return q < 0 ? -1 : ((x1 < 0 && x2 > 0) || (x1 > 0 && x2 < 0)) ? -1 : 0;
  const long double tmp = static_cast<long double>(x1) - std::floor(q) * static_cast<long double>(x2);
  return static_cast<double>(std::floor(q) + std::floor(tmp / x2));
}

inline const std::map<std::string, BinaryRef>& binary_refs() {
  static const std::map<std::string, BinaryRef> m = {
      {"add", {[](double a, double b) { return a + b; }, any_value, nonzero, nonzero, 1e-8}},
      {"sub", {[](double a, double b) { return a - b; }, any_value, nonzero, nonzero, 1e-8}},
      {"mul", {[](double a, double b) { return a * b; }, any_value, nonzero, nonzero, 1e-8}},
      {"div", {[](double a, double b) { return a / b; }, any_value, nonzero, nonzero, 1e-7}},
      // a positive base, any exponent (a negative base is tested on its own)
      {"pow", {[](double a, double b) { return std::pow(a, b); }, {0.3, 2}, any_value, {0.3, 2},
               1e-7, 1e-15}},
      // steps where a / b is an integer: random operands never sit on one
      {"mod", {ref_mod, any_value, nonzero, nonzero, 1e-7, 1e-15, 1e-15}},
      {"idiv", {ref_idiv, any_value, nonzero, nonzero, 1e-7}},
      {"atan2", {[](double a, double b) { return std::atan2(a, b); }, any_value, any_value,
                 any_value, 1e-7}},
      // (log(exp(a) + exp(b)) is exact enough in long double here)
      {"log_add_exp", {[](double a, double b) {
          return static_cast<double>(std::log(std::exp(static_cast<long double>(a)) +
                                              std::exp(static_cast<long double>(b))));
        }, {-40, 40}, {-40, 40}, {-40, 40}, 1e-7, 1e-15}},
      // steps, 1 or 0: random operands are never equal (ties and infinities
      // have a test of their own)
      {"greater", {[](double a, double b) { return a > b ? 1.0 : 0.0; }, any_value, any_value,
                   any_value, 1e-7}},
      {"greater_equal", {[](double a, double b) { return a >= b ? 1.0 : 0.0; }, any_value,
                         any_value, any_value, 1e-7}},
      {"equal", {[](double a, double b) { return a == b ? 1.0 : 0.0; }, any_value, any_value,
                 any_value, 1e-7}},
  };
  return m;
}

// An op's row, or an error naming the table.
inline const UnaryRef& unary_ref(const std::string& name) {
  auto it = unary_refs().find(name);
  if (it == unary_refs().end())
    throw std::logic_error("no row for unary op " + name + " (tests/cpp/elementwise_ops.hpp)");
  return it->second;
}
inline const Domain& unary_domain(const std::string& name) { return unary_ref(name).x; }
inline const BinaryRef& binary_domain(const std::string& name) {
  auto it = binary_refs().find(name);
  if (it == binary_refs().end())
    throw std::logic_error("no row for binary op " + name + " (tests/cpp/elementwise_ops.hpp)");
  return it->second;
}

}  // namespace lstest

#endif
