// One program per family of distributions.def, shared by the Catch2 tests
// of the core (test_distributions.cpp: "every family in a program") and the
// GPU tests (tests/gpu/test_cuda_executor.cpp), so that a family added to the
// table gets its program once: its switch has no default, and the tests build
// with -Werror=switch.
#ifndef LSTEST_FAMILY_PROGRAMS_HPP
#define LSTEST_FAMILY_PROGRAMS_HPP

#include <cmath>
#include <vector>

#include "helpers.hpp"
#include "lockstep/planner.hpp"

namespace lstest {

// A program with one term of the family (truncated to (lo, hi)): a vector
// target and a mix of scalar, vector, data and constrained parameters, so
// that values and gradients flow through the executor; the constrained
// parameters are listed, so that a test can add their log |Jacobian| by hand.
struct FamilyProgram {
  Program p;
  int term = -1;
  std::vector<int> inputs;
  std::vector<int> jacobian_nodes;  // lower-bounded params: log J = z
  std::vector<int> logit_nodes;     // interval (0, 1) params
};

inline FamilyProgram family_program(Family f, double lo = -inf, double hi = inf) {
  FamilyProgram fp;
  Program& p = fp.p;
  const long n = 5;
  long off = 0;
  auto par = [&](long size, Transform t = Transform::none, double a = 0, double b = 0) {
    const int id = p.add(param_node(size, off, t, a, b));
    off += size;
    if (t == Transform::lower) fp.jacobian_nodes.push_back(id);
    if (t == Transform::interval) fp.logit_nodes.push_back(id);
    return id;
  };
  // greta's other families: the target is data inside (0.5, 3) when truncated
  const bool truncated = !(std::isinf(lo) && std::isinf(hi));
  auto positive_data = [&] { return p.add(data_node({0.6, 1.2, 1.9, 0.7, 1.0})); };
  switch (f) {
    case Family::normal:
      fp.inputs = {par(n, lo == 0 ? Transform::lower : Transform::none), par(1),
                   par(n, Transform::lower)};
      break;
    case Family::cauchy:
      fp.inputs = {p.add(data_node({-1.5, 0.2, 0.9, 3, -0.4})), par(n), par(1, Transform::lower)};
      break;
    case Family::student:
      fp.inputs = {p.add(data_node({1.5, 1.2, 2.9, 2.0, 1.05})), par(1, Transform::lower),
                   p.add(data_node({1.7})), par(n, Transform::lower)};
      break;
    case Family::exponential:
      fp.inputs = {lo > 0 ? p.add(data_node({0.6, 1.2, 1.9, 0.7, 1.0})) : par(n, Transform::lower),
                   par(1, Transform::lower)};
      break;
    case Family::bernoulli:
      fp.inputs = {p.add(data_node({0, 1, 1, 0, 1})), par(n, Transform::interval, 0, 1)};
      break;
    case Family::bernoulli_logit:
      fp.inputs = {p.add(data_node({0, 1, 1, 0, 1})), par(n)};
      break;
    case Family::bernoulli_probit:
      fp.inputs = {p.add(data_node({0, 1, 1, 0, 1})), par(n)};
      break;
    case Family::binomial_logit:
    case Family::binomial_probit:
      fp.inputs = {p.add(data_node({0, 3, 1, 7, 2})), p.add(data_node({8, 5, 3, 9, 2})), par(n)};
      break;
    case Family::poisson_log:
      fp.inputs = {p.add(data_node({0, 3, 1, 7, 2})), par(n)};
      break;
    case Family::uniform:
      fp.inputs = {p.add(data_node({0.1, 0.5, 0.9, 1.2, -0.3})), p.add(data_node({-0.5})),
                   par(1, Transform::lower, 1.5)};
      break;
    case Family::lognormal:
      fp.inputs = {truncated ? positive_data() : par(n, Transform::lower), par(1),
                   par(n, Transform::lower)};
      break;
    case Family::gamma:
      fp.inputs = {truncated ? positive_data() : par(n, Transform::lower),
                   par(1, Transform::lower), par(n, Transform::lower)};
      break;
    case Family::inverse_gamma:
      fp.inputs = {truncated ? positive_data() : par(n, Transform::lower),
                   par(n, Transform::lower), par(1, Transform::lower)};
      break;
    case Family::weibull:
      fp.inputs = {truncated ? positive_data() : par(n, Transform::lower),
                   par(1, Transform::lower), par(n, Transform::lower)};
      break;
    case Family::pareto:
      // scale b in (0, 1), below every value
      fp.inputs = {p.add(data_node({1.6, 2.2, truncated ? 2.9 : 3.5, 1.9, truncated ? 2.5 : 5.0})),
                   par(1, Transform::lower), par(1, Transform::interval, 0, 1)};
      break;
    case Family::laplace:
      fp.inputs = {truncated ? p.add(data_node({-0.5, 0.3, 1.1, 1.9, 0})) : par(n), par(1),
                   par(n, Transform::lower)};
      break;
    case Family::beta:
      fp.inputs = {truncated ? p.add(data_node({0.2, 0.35, 0.5, 0.25, 0.4}))
                             : par(n, Transform::interval, 0, 1),
                   par(1, Transform::lower), par(n, Transform::lower)};
      break;
    case Family::chi_squared:
      fp.inputs = {truncated ? positive_data() : par(n, Transform::lower),
                   par(1, Transform::lower)};
      break;
    case Family::logistic:
      fp.inputs = {truncated ? p.add(data_node({-0.5, 0.3, 1.1, 1.9, 0})) : par(n), par(n),
                   par(1, Transform::lower)};
      break;
    case Family::f:
      fp.inputs = {truncated ? positive_data() : par(n, Transform::lower),
                   par(1, Transform::lower), par(n, Transform::lower)};
      break;
    case Family::poisson:
      fp.inputs = {p.add(data_node({0, 3, 1, 7, 2})), par(n, Transform::lower)};
      break;
    case Family::binomial:
      fp.inputs = {p.add(data_node({0, 3, 1, 7, 2})), p.add(data_node({8, 5, 3, 9, 2})),
                   par(n, Transform::interval, 0, 1)};
      break;
    case Family::negative_binomial:
      fp.inputs = {p.add(data_node({0, 3, 1, 7, 2})), par(1, Transform::lower),
                   par(n, Transform::interval, 0, 1)};
      break;
    case Family::beta_binomial:
      fp.inputs = {p.add(data_node({0, 3, 1, 7, 2})), p.add(data_node({8, 5, 3, 9, 2})),
                   par(1, Transform::lower), par(n, Transform::lower)};
      break;
    case Family::hypergeometric:
      // every parameter a count, hence data; a flat, unused variable gives the
      // program something to sample (as compare_distribution() does in R)
      fp.inputs = {p.add(data_node({0, 3, 1, 7, 2})), p.add(data_node({4, 6, 2, 9, 3})),
                   p.add(data_node({5, 2, 6, 1, 4})), p.add(data_node({3, 5, 2, 8, 4}))};
      par(1);
      break;
    case Family::log_jacobian:
      // a constrained variable's log |Jacobian|: any expression of the parameters
      fp.inputs = {par(n)};
      break;
    case Family::target:
      // a log density built from ordinary ops: any expression of the parameters
      fp.inputs = {par(n)};
      break;
  }
  p.n_free = off;
  fp.term = add_term(p, density_node(f, fp.inputs, lo, hi));
  lockstep::plan(p);
  return fp;
}

// The families and truncations every family test runs ("every family in a
// program" in test_distributions.cpp, and the GPU tests): each family
// untruncated, and the continuous ones truncated too.
struct FamilyCase {
  Family f;
  double lo, hi;
};

inline const std::vector<FamilyCase>& family_cases() {
  static const std::vector<FamilyCase> cases = {
      {Family::normal, -inf, inf},    {Family::cauchy, -inf, inf},   {Family::student, -inf, inf},
      {Family::exponential, -inf, inf}, {Family::bernoulli, -inf, inf},
      {Family::bernoulli_logit, -inf, inf}, {Family::bernoulli_probit, -inf, inf},
      {Family::binomial_logit, -inf, inf},  {Family::binomial_probit, -inf, inf},
      {Family::poisson_log, -inf, inf},
      // truncated: half-normal target, cauchy on (-2, 3.5), student on (1, 3),
      // exponential on (0.5, 2)
      {Family::normal, 0, inf},       {Family::cauchy, -2, 3.5},     {Family::student, 1, 3},
      {Family::exponential, 0.5, 2},
      // greta's other families, and truncated on (0.5, 3), (0.1, 0.6) or (-1, 2)
      {Family::uniform, -inf, inf},   {Family::lognormal, -inf, inf}, {Family::gamma, -inf, inf},
      {Family::inverse_gamma, -inf, inf}, {Family::weibull, -inf, inf},
      {Family::pareto, -inf, inf},    {Family::laplace, -inf, inf},  {Family::beta, -inf, inf},
      {Family::chi_squared, -inf, inf}, {Family::logistic, -inf, inf}, {Family::f, -inf, inf},
      {Family::poisson, -inf, inf},   {Family::binomial, -inf, inf},
      {Family::negative_binomial, -inf, inf}, {Family::beta_binomial, -inf, inf},
      {Family::hypergeometric, -inf, inf},
      {Family::lognormal, 0.5, 3},    {Family::gamma, 0.5, 3},       {Family::inverse_gamma, 0.5, 3},
      {Family::weibull, 0.5, 3},      {Family::pareto, 0.5, 3},      {Family::laplace, -1, 2},
      {Family::beta, 0.1, 0.6},       {Family::chi_squared, 0.5, 3}, {Family::logistic, -1, 2},
      {Family::f, 0.5, 3},            {Family::log_jacobian, -inf, inf},
      {Family::target, -inf, inf},
  };
  return cases;
}

}  // namespace lstest

#endif
