// Where the op tests draw each elementwise op's inputs from: one table for the
// Catch2 tests of the core (test_ops.cpp, which also holds each op's reference
// math) and the GPU tests (tests/gpu/test_cuda_executor.cpp), so that an op
// added to ops.def gets its domain once. A unary or binary op without a row
// here fails both (unary_domain() and binary_domain() throw).
#ifndef LSTEST_OP_DOMAINS_HPP
#define LSTEST_OP_DOMAINS_HPP

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

// ---- unary ops: inside each function's domain, away from its poles

struct UnaryDomain {
  const char* name;
  Domain x;
};

inline const UnaryDomain unary_domains[] = {
    {"neg", {-3, 3}},       {"exp", {-2, 2}},        {"log", {0.3, 3}},
    {"log1p", {-0.6, 3}},   {"sqrt", {0.3, 3}},      {"ilogit", {-5, 5}},
    // steps: gradient 0 away from the steps (random inputs never sit on one)
    {"abs", {-3, 3}},       {"sign", {-3, 3}},       {"ceiling", {-3, 3}},
    {"floor", {-3, 3}},     {"round", {-3, 3}},      {"trunc", {-3, 3}},
    {"expm1", {-2, 2}},     {"log10", {0.3, 3}},     {"log2", {0.3, 3}},
    {"cos", {-3, 3}},       {"sin", {-3, 3}},        {"tan", {-1.2, 1.2}},
    {"acos", {-0.9, 0.9}},  {"asin", {-0.9, 0.9}},   {"atan", {-3, 3}},
    {"cosh", {-2, 2}},      {"sinh", {-2, 2}},       {"tanh", {-2, 2}},
    {"acosh", {1.2, 4}},    {"asinh", {-3, 3}},      {"atanh", {-0.9, 0.9}},
    {"cospi", {-3, 3}},     {"sinpi", {-3, 3}},      {"tanpi", {-0.4, 0.4}},
    {"lgamma", {0.2, 6}},   {"digamma", {0.2, 6}},   {"trigamma", {0.2, 6}},
    {"iprobit", {-4, 4}},   {"icloglog", {-3, 1.5}}, {"icauchit", {-5, 5}},
    {"log1pe", {-5, 5}},
};

inline const Domain& unary_domain(const std::string& name) {
  for (const UnaryDomain& d : unary_domains)
    if (name == d.name) return d.x;
  throw std::logic_error("no domain for unary op " + name + " (tests/cpp/op_domains.hpp)");
}

// ---- binary ops: each operand's domain, and both operands' when one node is
// both (div(x, x) away from zero)

struct BinaryDomain {
  const char* name;
  Domain a, b, same;
};

inline const BinaryDomain binary_domains[] = {
    {"add", any_value, nonzero, nonzero},
    {"sub", any_value, nonzero, nonzero},
    {"mul", any_value, nonzero, nonzero},
    {"div", any_value, nonzero, nonzero},
    // a positive base, any exponent (a negative base is tested on its own)
    {"pow", {0.3, 2}, any_value, {0.3, 2}},
    // steps where a / b is an integer: random operands never sit on one
    {"mod", any_value, nonzero, nonzero},
    {"idiv", any_value, nonzero, nonzero},
    {"atan2", any_value, any_value, any_value},
    // operands far apart as well as close
    {"log_add_exp", {-40, 40}, {-40, 40}, {-40, 40}},
    // steps, 1 or 0: random operands are never equal (ties and infinities
    // have a test of their own)
    {"greater", any_value, any_value, any_value},
    {"greater_equal", any_value, any_value, any_value},
    {"equal", any_value, any_value, any_value},
};

inline const BinaryDomain& binary_domain(const std::string& name) {
  for (const BinaryDomain& d : binary_domains)
    if (name == d.name) return d;
  throw std::logic_error("no domain for binary op " + name + " (tests/cpp/op_domains.hpp)");
}

}  // namespace lstest

#endif
