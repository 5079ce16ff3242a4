// Models the Catch2 tests of the executor share: a regression with several
// terms on one extent (test_observation_stage.cpp) and the seed's
// hierarchical logistic regression, with the runner and the comparison the
// tests of tiling and sharding use.
#ifndef LSTEST_MODELS_HPP
#define LSTEST_MODELS_HPP

#include <algorithm>
#include <random>
#include <vector>

#include "helpers.hpp"
#include "lockstep/executor.hpp"

namespace lstest {

using lockstep::ExecOptions;

struct Regression {
  Program p;
  int X, beta, alpha, g_alpha, xb, eta, sigma, mu_sum, lik, y, xs, xcol;
};

// Each of N rows' group, uniform over 0 to G - 1; sorted, as rows ordered
// by the grouping are.
inline std::vector<long> random_groups(std::mt19937& rng, long N, long G, bool sorted = false) {
  std::uniform_int_distribution<long> group(0, G - 1);
  std::vector<long> g(N);
  for (long& v : g) v = group(rng);
  if (sorted) std::sort(g.begin(), g.end());
  return g;
}

// y ~ normal(X beta + alpha[group] + a, sigma), with priors on everything:
// N rows, K covariates, G groups; and a second likelihood on the same rows,
// z ~ bernoulli(ilogit(eta)), so that one extent has two terms.
inline Regression regression(long N, long K, long G, std::mt19937& rng) {
  Regression r;
  Program& p = r.p;
  std::normal_distribution<double> norm;
  std::vector<double> X(N * K), y(N), z(N);
  for (double& v : X) v = norm(rng);
  for (double& v : y) v = norm(rng);
  for (long i = 0; i < N; ++i) z[i] = (i * 7 + 3) % 5 < 2 ? 1 : 0;
  const std::vector<long> g = random_groups(rng, N, G);
  long off = 0;
  r.beta = p.add(param_node(K, off));
  off += K;
  r.alpha = p.add(param_node(G, off));
  off += G;
  const int a = p.add(param_node(1, off));
  off += 1;
  r.sigma = p.add(param_node(1, off, Transform::lower, 0));
  off += 1;
  p.n_free = off;
  const int zero = p.add(data_node({0}));
  const int one = p.add(data_node({1}));
  add_term(p, density_node(Family::normal, {r.beta, zero, one}));
  add_term(p, density_node(Family::normal, {r.alpha, zero, one}));
  add_term(p, density_node(Family::normal, {a, zero, one}));
  add_term(p, density_node(Family::normal, {r.sigma, zero, one}, 0, inf));
  r.X = p.add(data_node(X, {N, K}));
  r.xb = p.add(matmul_node(r.X, r.beta, p));
  r.g_alpha = p.add(gather_node(r.alpha, g));
  const int lin = p.add(binary_node(Op::add, r.xb, r.g_alpha, p));
  r.eta = p.add(binary_node(Op::add, lin, a, p));
  r.y = p.add(data_node(y));
  r.lik = add_term(p, density_node(Family::normal, {r.y, r.eta, r.sigma}));
  const int prob = p.add(unary_node(Op::ilogit, r.eta, p));
  const int zd = p.add(data_node(z));
  add_term(p, density_node(Family::bernoulli, {zd, prob}));
  // a data-only row computation: log1p(exp(X[, 1])) feeds a student term
  std::vector<long> first(N);
  for (long i = 0; i < N; ++i) first[i] = i;
  const int x1 = p.add(gather_node(r.X, first));
  const int soft = p.add(unary_node(Op::log1p, p.add(unary_node(Op::exp, x1, p)), p));
  const int df = p.add(data_node({4}));
  add_term(p, density_node(Family::student, {soft, df, r.eta, r.sigma}));
  // a selection within rows of a chain-carrying row-aligned value: (a X)[, K]
  r.xs = p.add(binary_node(Op::mul, r.X, a, p));
  std::vector<long> last(N);
  for (long i = 0; i < N; ++i) last[i] = i + N * (K - 1);
  r.xcol = p.add(gather_node(r.xs, last));
  add_term(p, density_node(Family::normal, {r.y, r.xcol, r.sigma}));
  return r;
}

inline std::vector<double> random_state(std::mt19937& rng, long chains, long D) {
  return uniform_vector(rng, chains * D, -0.7, 0.7);
}

// Seed 003's demand model's shape (bench/svi_demand.R): counts
// units ~ poisson_log(slope[product] * log_price + cell_effect[cell] +
// intercept[product]), three gathers per row, two of them by the product
// (by which the stage sorts the rows, so their backward sums runs), with
// standard normal priors on the P + P + T parameters. Counts reach past
// log(x!)'s small-count product (above 15). The log density by hand, for
// the tests' reference. With `panel`, the seed's layout: every product in
// every one of N / P weeks, rows by product then week, the cell the
// product's category (of 3) and the week, so that the cell index comes in
// steps (index_in_steps()); T is then 3 x the weeks.
struct Demand {
  Program p;
  std::vector<long> product, cell;
  std::vector<double> log_price, units;
  long P = 0, T = 0;
  int lik = -1;
  double log_density(const double* x) const {  // one chain's state
    double lp = 0;
    for (long k = 0; k < 2 * P + T; ++k) lp += -0.5 * x[k] * x[k] - 0.5 * std::log(2 * M_PI);
    for (size_t r = 0; r < units.size(); ++r) {
      const double eta = x[product[r]] * log_price[r] + x[2 * P + cell[r]] + x[P + product[r]];
      lp += units[r] * eta - std::exp(eta) - std::lgamma(units[r] + 1);
    }
    return lp;
  }
};

inline Demand demand(long N, long P, long T, std::mt19937& rng, bool panel = false) {
  Demand d;
  const long weeks = N / P;
  if (panel) T = 3 * weeks, N = P * weeks;
  d.P = P;
  d.T = T;
  Program& p = d.p;
  std::normal_distribution<double> norm;
  std::uniform_real_distribution<double> u(0, 1);
  d.product = random_groups(rng, N, P);
  d.cell = random_groups(rng, N, T);
  if (panel)
    for (long r = 0; r < N; ++r) {
      d.product[r] = r / weeks;
      d.cell[r] = (d.product[r] % 3) * weeks + r % weeks;
    }
  d.log_price.resize(N);
  d.units.resize(N);
  for (long r = 0; r < N; ++r) {
    d.log_price[r] = 0.3 * norm(rng);
    d.units[r] = std::floor(40 * u(rng) * u(rng));
  }
  const int slope = p.add(param_node(P, 0));
  const int intercept = p.add(param_node(P, P));
  const int cell_effect = p.add(param_node(T, 2 * P));
  p.n_free = 2 * P + T;
  const int zero = p.add(data_node({0}));
  const int one = p.add(data_node({1}));
  for (int v : {slope, intercept, cell_effect}) add_term(p, density_node(Family::normal, {v, zero, one}));
  const int s = p.add(gather_node(slope, d.product));
  const int sx = p.add(binary_node(Op::mul, s, p.add(data_node(d.log_price)), p));
  const int e1 = p.add(binary_node(Op::add, sx, p.add(gather_node(cell_effect, d.cell)), p));
  const int eta = p.add(binary_node(Op::add, e1, p.add(gather_node(intercept, d.product)), p));
  d.lik = add_term(p, density_node(Family::poisson_log, {p.add(data_node(d.units)), eta}));
  return d;
}

struct Result {
  std::vector<double> lp, grad;
  std::vector<std::vector<double>> terms;
};

inline Result run(const Program& p, long chains, const std::vector<double>& state, ExecOptions o) {
  Executor<double> ex(p, chains, o);
  Result r;
  r.lp.assign(chains, 0);
  r.grad.assign(chains * p.n_free, 0);
  ex.log_density(state.data(), r.lp.data(), r.grad.data());
  for (int t : p.terms) r.terms.push_back(ex.value(t));
  return r;
}

inline void check_same(const Result& a, const Result& b) {
  for (size_t c = 0; c < a.lp.size(); ++c) CHECK(close(a.lp[c], b.lp[c], 1e-12, 1e-12));
  for (size_t k = 0; k < a.grad.size(); ++k) {
    INFO("gradient coordinate " << k);
    CHECK(close(a.grad[k], b.grad[k], 1e-12, 1e-12));
  }
  for (size_t t = 0; t < a.terms.size(); ++t)
    for (size_t c = 0; c < a.terms[t].size(); ++c)
      CHECK(close(a.terms[t][c], b.terms[t][c], 1e-12, 1e-12));
}

// The seed's hierarchical logistic regression, non-centred, on N rows, G
// groups and K covariates:
//   gamma = sweep(z_gamma, 2, sigma_gamma, "*")       (global: G x K)
//   eta = a + (sigma_a z_a)[g] + X beta + rowSums(X * gamma[g, ])
//   y ~ bernoulli(ilogit(eta))                          (logit form)
struct Seed {
  Program p;
  int X, gamma_rows, prod, rs, eta, lik, gamma, xb, e1, e2, beta, ga, z_g, sigma_g, alpha_g;
};

// groups: the rows' groups (random when empty); with extra_reader, a second
// likelihood reads gamma by flat element index, gather(gamma, g + G (r % K)),
// not by row. With intercept_first, eta is built in the order R's lowering
// builds a + alpha_g[g] + X %*% beta + rowSums(X * gamma[g, ]) (the bench's
// program): ((a + alpha_g[g]) + X beta) + rowSums(...).
// The global value the row dot product reads the group slopes from: z_g when
// the planner has fused the non-centred gamma = z_g * sigma_g into it (gamma
// is then dead), gamma when something else reads gamma too.
inline int slopes(const Seed& s) { return s.p.nodes[s.gamma].live ? s.gamma : s.z_g; }

// With intercept_first and row_offset, a column of data (an offset per row,
// as log exposure) takes the intercept a's place.
inline Seed seed_model(long N, long G, long K, std::mt19937& rng, std::vector<long> groups = {},
                bool extra_reader = false, bool intercept_first = false,
                bool row_offset = false) {
  Seed s;
  Program& p = s.p;
  std::normal_distribution<double> norm;
  std::vector<double> X(N * K), y(N);
  for (double& v : X) v = norm(rng);
  for (long i = 0; i < N; ++i) y[i] = (i % 3 == 0) ? 1 : 0;
  std::vector<long> g = random_groups(rng, N, G);
  if (!groups.empty()) g = groups;
  long off = 0;
  auto par = [&](std::vector<long> dim, Transform t = Transform::none) {
    const long size = dim[0] * dim[1];
    const int id = p.add(param_node(size, off, t, 0, 0, dim));
    off += size;
    return id;
  };
  const int a = par({1, 1});
  const int beta = s.beta = par({K, 1});
  const int sigma_a = par({1, 1}, Transform::lower);
  const int sigma_g = s.sigma_g = par({1, K}, Transform::lower);  // a row vector, as t(sigma_gamma)
  const int z_a = par({G, 1});
  const int z_g = s.z_g = par({G, K});
  p.n_free = off;
  const int zero = p.add(data_node({0}));
  const int one = p.add(data_node({1}));
  for (int v : {a, beta, z_a, z_g}) add_term(p, density_node(Family::normal, {v, zero, one}));
  for (int v : {sigma_a, sigma_g}) add_term(p, density_node(Family::normal, {v, zero, one}, 0, inf));
  const int alpha_g = s.alpha_g = p.add(binary_node(Op::mul, z_a, sigma_a, p));
  s.gamma = p.add(broadcast_node(Op::mul, z_g, sigma_g, p));
  s.X = p.add(data_node(X, {N, K}));
  const int xb = s.xb = p.add(matmul_node(s.X, beta, p));
  const int ga = s.ga = p.add(gather_node(alpha_g, g));
  s.gamma_rows = p.add(gather_rows_node(s.gamma, g, p));
  s.prod = p.add(binary_node(Op::mul, s.X, s.gamma_rows, p));
  s.rs = p.add(rowsum_node(s.prod, p));
  if (intercept_first) {
    std::vector<double> offsets(N);
    for (double& v : offsets) v = norm(rng);
    const int u = row_offset ? p.add(data_node(offsets, {N, 1})) : a;
    const int e1 = s.e1 = p.add(binary_node(Op::add, u, ga, p));
    const int e2 = s.e2 = p.add(binary_node(Op::add, e1, xb, p));
    s.eta = p.add(binary_node(Op::add, e2, s.rs, p));
  } else {
    const int e1 = s.e1 = p.add(binary_node(Op::add, xb, ga, p));
    const int e2 = s.e2 = p.add(binary_node(Op::add, e1, s.rs, p));
    s.eta = p.add(binary_node(Op::add, e2, a, p));
  }
  const int yd = p.add(data_node(y));
  s.lik = add_term(p, density_node(Family::bernoulli_logit, {yd, s.eta}));
  if (extra_reader) {
    std::vector<long> flat(N);
    for (long r = 0; r < N; ++r) flat[r] = g[r] + G * (r % K);
    const int picked = p.add(gather_node(s.gamma, flat));
    std::vector<double> y2(N);
    for (double& v : y2) v = norm(rng);
    add_term(p, density_node(Family::normal, {p.add(data_node(y2)), picked, one}));
  }
  return s;
}


}  // namespace lstest

#endif
