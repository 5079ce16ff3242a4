// The seed model's program (../shared/seeds/004: N rows, G = N / 10 groups,
// K covariates, random intercept and K random slopes per group, non-centred),
// built node by node exactly as R's lowering builds it (model() in R/model.R;
// plan() then fuses the linear predictor into one rowdot_rows node), on data
// simulated here with the seed's distributions (X ~ N(0, 1), groups uniform,
// y from the model at fixed true values). Shared by bench/gpu_hlogit.cpp and
// bench/cpu_hlogit.cpp.
#ifndef LOCKSTEP_BENCH_HLOGIT_PROGRAM_HPP
#define LOCKSTEP_BENCH_HLOGIT_PROGRAM_HPP

#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "lockstep/ir.hpp"
#include "lockstep/planner.hpp"

namespace hlogit_bench {

using namespace lockstep;

Node leaf_data(std::vector<double> v, std::vector<long> dim) {
  Node n;
  n.op = Op::data;
  n.dim = std::move(dim);
  n.size = n.dim[0] * n.dim[1];
  n.values = std::move(v);
  return n;
}

Node leaf_param(long rows, long cols, long offset, Transform t) {
  Node n;
  n.op = Op::param;
  n.dim = {rows, cols};
  n.size = rows * cols;
  n.offset = offset;
  n.transform = t;
  n.lower = t == Transform::lower ? 0 : -HUGE_VAL;
  return n;
}

Node op_node(Op op, std::vector<int> inputs, std::vector<long> dim) {
  Node n;
  n.op = op;
  n.inputs = std::move(inputs);
  n.dim = std::move(dim);
  n.size = n.dim[0] * n.dim[1];
  return n;
}

int term(Program& p, Family f, std::vector<int> inputs, double lower = -HUGE_VAL) {
  Node n = op_node(Op::density, std::move(inputs), {1, 1});
  n.family = f;
  n.trunc_lower = lower;
  n.trunc_upper = HUGE_VAL;
  const int id = p.add(std::move(n));
  p.terms.push_back(id);
  return id;
}

int scalar(Program& p, double v) { return p.add(leaf_data({v}, {1, 1})); }

// The program R's lowering builds for the seed model (node for node).
Program hlogit(long N, long G, long K, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z(0, 1);
  std::vector<double> X(N * K);  // column-major N x K
  for (double& x : X) x = z(rng);
  std::vector<long> g(N);
  for (long& v : g) v = static_cast<long>(rng() % G);
  std::vector<double> a_g(G), gam(G * K), beta(K);
  for (double& v : a_g) v = 0.8 * z(rng);
  for (double& v : gam) v = 0.3 * z(rng);
  for (double& v : beta) v = 0.5 * z(rng);
  std::vector<double> y(N);
  std::uniform_real_distribution<double> u(0, 1);
  for (long r = 0; r < N; ++r) {
    double eta = 0.3 + a_g[g[r]];
    for (long j = 0; j < K; ++j) eta += X[j * N + r] * (beta[j] + gam[j * G + g[r]]);
    y[r] = u(rng) < 1 / (1 + std::exp(-eta)) ? 1 : 0;
  }

  Program p;
  const int alpha = p.add(leaf_param(1, 1, 0, Transform::none));
  term(p, Family::normal, {alpha, scalar(p, 0), scalar(p, 1.5)});
  const int b = p.add(leaf_param(K, 1, 1, Transform::none));
  term(p, Family::normal, {b, scalar(p, 0), scalar(p, 1)});
  const int s_a = p.add(leaf_param(1, 1, 1 + K, Transform::lower));
  term(p, Family::normal, {s_a, scalar(p, 0), scalar(p, 1)}, 0);
  const int s_g = p.add(leaf_param(K, 1, 2 + K, Transform::lower));
  term(p, Family::normal, {s_g, scalar(p, 0), scalar(p, 0.5)}, 0);
  const int z_a = p.add(leaf_param(G, 1, 2 + 2 * K, Transform::none));
  term(p, Family::normal, {z_a, scalar(p, 0), scalar(p, 1)});
  const int z_g = p.add(leaf_param(G, K, 2 + 2 * K + G, Transform::none));
  term(p, Family::normal, {z_g, scalar(p, 0), scalar(p, 1)});
  const int alpha_g = p.add(op_node(Op::mul, {s_a, z_a}, {G, 1}));
  const int Xd = p.add(leaf_data(X, {N, K}));
  const int s_gt = p.add(op_node(Op::transpose, {s_g}, {1, K}));
  const int gamma = p.add(op_node(Op::mul, {z_g, s_gt}, {G, K}));
  Node ga = op_node(Op::gather, {alpha_g}, {N, 1});
  ga.index = g;
  const int a_rows = p.add(std::move(ga));
  const int e1 = p.add(op_node(Op::add, {alpha, a_rows}, {N, 1}));
  const int xb = p.add(op_node(Op::matmul, {Xd, b}, {N, 1}));
  const int e2 = p.add(op_node(Op::add, {e1, xb}, {N, 1}));
  Node gr = op_node(Op::gather_rows, {gamma}, {N, K});
  gr.index = g;
  const int g_rows = p.add(std::move(gr));
  const int xg = p.add(op_node(Op::mul, {Xd, g_rows}, {N, K}));
  const int rs = p.add(op_node(Op::rowsum, {xg}, {N, 1}));
  const int eta = p.add(op_node(Op::add, {e2, rs}, {N, 1}));
  const int yd = p.add(leaf_data(y, {N, 1}));
  term(p, Family::bernoulli_logit, {yd, eta});
  p.n_free = 2 + 2 * K + G + G * K;
  plan(p);
  return p;
}

// "1e5,1e6" -> {1e5, 1e6}: the benches' list arguments.
inline std::vector<double> parse_list(const std::string& s) {
  std::vector<double> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::stod(item));
  return out;
}

}  // namespace hlogit_bench

#endif
