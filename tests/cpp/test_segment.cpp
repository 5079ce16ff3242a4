// The grouped (segment) reductions segment_sum, segment_max, segment_min and
// segment_prod (kernels/segment.hpp): the grouping's layout, values against a
// reference computed here group by group (R's tapply()), gradients against
// central finite differences, the first arg-max / arg-min with ties, NaN,
// zeros in prod, empty groups and rows left out; the emulated backend against
// the cpu backend, single against double precision, and the planner keeping
// them in the global stage.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <stdexcept>
#include <vector>

#include "helpers.hpp"
#include "lockstep/executor.hpp"
#include "lockstep/ir.hpp"
#include "lockstep/planner.hpp"

using namespace lstest;
using lockstep::ExecOptions;

namespace {

const Op segment_ops[] = {Op::segment_sum, Op::segment_max, Op::segment_min, Op::segment_prod};

// What R's tapply(v, group, FUN) gives for one group's values v, in row order.
double reference(Op op, const std::vector<double>& v) {
  double acc = op == Op::segment_sum ? 0 : op == Op::segment_prod ? 1
               : op == Op::segment_max ? -inf : inf;
  for (double x : v) {
    if (std::isnan(x) && (op == Op::segment_max || op == Op::segment_min)) return x;
    if (op == Op::segment_sum) acc += x;
    if (op == Op::segment_prod) acc *= x;
    if (op == Op::segment_max) acc = std::max(acc, x);
    if (op == Op::segment_min) acc = std::min(acc, x);
  }
  return acc;
}

// Column j of group g, for chain c, of a rows x cols parameter at the start
// of a state of D coordinates per chain.
std::vector<double> group_values(const std::vector<double>& state, long D, long c,
                                 const std::vector<long>& group, long g, long j) {
  const long rows = static_cast<long>(group.size());
  std::vector<double> v;
  for (long r = 0; r < rows; ++r)
    if (group[r] == g) v.push_back(state[c * D + r + j * rows]);
  return v;
}

// The flat positions of the rows `keep` of a rows x cols value.
std::vector<long> rows_of(const std::vector<long>& keep, long rows, long cols) {
  std::vector<long> index;
  for (long j = 0; j < cols; ++j)
    for (long g : keep) index.push_back(g + j * rows);
  return index;
}

const char* backend_name(Backend b) { return b == Backend::cpu ? "cpu" : "emulated"; }

}  // namespace

TEST_CASE("segment_layout: the groups, their offsets and their rows in order, bad groups refused",
          "[ops][segment][ir]") {
  const std::vector<long> group = {2, -1, 0, 2, 0, -1, 2};
  // groups 1 and 3 are empty; rows 1 and 5 left out
  const std::vector<long> expected = {2, -1, 0, 2, 0, -1, 2,  // group[r]
                                      0, 2, 2, 5, 5,          // offsets
                                      2, 4, 0, 3, 6};         // rows by group
  CHECK(lockstep::segment_layout(group, 4) == expected);
  CHECK(lockstep::segment_layout({-1, -1}, 1) == std::vector<long>{-1, -1, 0, 0});
  CHECK_THROWS_AS(lockstep::segment_layout({0, 4}, 4), std::invalid_argument);
  CHECK_THROWS_AS(lockstep::segment_layout({-2}, 4), std::invalid_argument);

  auto program = [&](Node n) {
    Program p;
    const int x = p.add(param_node(14, 0, Transform::none, 0, 0, {7, 2}));
    p.n_free = 14;
    n.inputs = {x};
    p.add(n);
    return p;
  };
  Program base;
  base.add(param_node(14, 0, Transform::none, 0, 0, {7, 2}));
  const Node good = segment_node(Op::segment_max, 0, group, 4, base);
  CHECK(good.dim == std::vector<long>{4, 2});
  CHECK_NOTHROW(lockstep::validate(program(good)));
  Node bad = good;
  std::swap(bad.index[12], bad.index[13]);  // group 0's rows out of order
  CHECK_THROWS_WITH(lockstep::validate(program(bad)), Catch::Contains("segment_layout()"));
  bad = good;
  bad.index[0] = 4;  // a group beyond the output's rows
  CHECK_THROWS_WITH(lockstep::validate(program(bad)), Catch::Contains("a group outside"));
  bad = good;
  bad.index.resize(7);  // the groups only
  CHECK_THROWS_WITH(lockstep::validate(program(bad)), Catch::Contains("group offsets"));
  bad = good;
  bad.dim = {8, 1};  // one column for an input of two
  bad.size = 8;
  CHECK_THROWS_WITH(lockstep::validate(program(bad)), Catch::Contains("groups x 2"));
}

TEST_CASE("segment ops: values by group against R's tapply, gradients against finite differences",
          "[ops][segment]") {
  std::mt19937 rng(501);
  const long R = 11, K = 2, G = 5, D = 2 * R * K;
  // group 3 is empty, rows 4 and 9 are left out
  const std::vector<long> group = {1, 0, 4, 1, -1, 0, 2, 4, 1, -1, 2};
  Program p;
  const int x = p.add(param_node(R * K, 0, Transform::none, 0, 0, {R, K}));
  // a product over z, which holds zeros (zeros tie max and min, whose finite
  // differences are then one-sided)
  const int z = p.add(param_node(R * K, R * K, Transform::none, 0, 0, {R, K}));
  p.n_free = D;
  int seg[4];
  for (int k = 0; k < 4; ++k) seg[k] = p.add(segment_node(segment_ops[k], x, group, G, p));
  const int zprod = p.add(segment_node(Op::segment_prod, z, group, G, p));
  // a grouping of data (no chain dimension) mixed with the parameters
  const std::vector<double> dv = uniform_vector(rng, R, -1, 1);
  const int d = p.add(data_node(dv));
  const int dsum = p.add(segment_node(Op::segment_sum, d, group, G, p));
  const int mix = p.add(broadcast_node(Op::mul, seg[0], dsum, p));
  // max and min of the empty group are -Inf and Inf: the objective reads the others
  const std::vector<long> nonempty = {0, 1, 2, 4};
  for (int k : {1, 2}) add_normal_objective(p, p.add(gather_node(seg[k], rows_of(nonempty, G, K))), rng);
  for (int t : {seg[0], seg[3], zprod, mix}) add_normal_objective(p, t, rng);
  lockstep::plan(p);
  for (int k = 0; k < 4; ++k) CHECK(p.nodes[seg[k]].chain);
  CHECK_FALSE(p.nodes[dsum].chain);

  for (long chains : {1L, 3L, 4L})
    for (Backend backend : {Backend::cpu, Backend::emulated}) {
      INFO("chains " << chains << ", " << backend_name(backend));
      std::vector<double> state = signed_vector(rng, chains * D, 0.5, 1.5);
      for (long c = 0; c < chains; ++c) {
        // z: chain 1 has one zero in group 1's first column, chain 2 two
        // zeros in its second column
        double* zc = state.data() + c * D + R * K;
        if (c % 3 == 1) zc[3] = 0;
        if (c % 3 == 2) zc[0 + R] = zc[8 + R] = 0;
      }
      Executor<double> ex(p, chains, backend);
      ex.forward(state.data());
      for (long g = 0; g < G; ++g) {
        std::vector<double> dg;
        for (long r = 0; r < R; ++r)
          if (group[r] == g) dg.push_back(dv[r]);
        CHECK(close(ex.value(dsum)[g], reference(Op::segment_sum, dg), 1e-14, 1e-15));
      }
      for (long c = 0; c < chains; ++c)
        for (long j = 0; j < K; ++j)
          for (long g = 0; g < G; ++g) {
            INFO("chain " << c << " group " << g << " column " << j);
            const long at = c * G * K + g + j * G;
            for (int k = 0; k < 4; ++k) {
              INFO(lockstep::op_name(segment_ops[k]));
              const double want = reference(segment_ops[k], group_values(state, D, c, group, g, j));
              CHECK(close(ex.value(seg[k])[at], want, 1e-14, 1e-15));
            }
            const std::vector<double> zg = group_values(state, D, c, group, g, j + K);
            CHECK(close(ex.value(zprod)[at], reference(Op::segment_prod, zg), 1e-14, 1e-15));
          }
      // the empty group: 0, -Inf, Inf, 1, as R's sum, max, min, prod of nothing
      CHECK(ex.value(seg[0])[3] == 0);
      CHECK(ex.value(seg[1])[3] == -inf);
      CHECK(ex.value(seg[2])[3] == inf);
      CHECK(ex.value(seg[3])[3] == 1);
      check_gradient(p, chains, state, 1e-7, 1e-9, 1e-4, backend);
    }
}

TEST_CASE("segment max and min: ties send the adjoint to the first row, NaN wins",
          "[ops][segment][max][min]") {
  for (long chains : {1L, 3L})
    for (Backend backend : {Backend::cpu, Backend::emulated})
      for (Op op : {Op::segment_max, Op::segment_min}) {
        INFO("chains " << chains << ", " << backend_name(backend) << ", " << lockstep::op_name(op));
        // groups {0, 1, 0, 1, -1}: group 0 holds rows 0 and 2, tied; group 1
        // rows 1 and 3, tied; row 4 left out
        const std::vector<long> group = {0, 1, 0, 1, -1};
        Program p;
        const int x = p.add(param_node(5, 0));
        p.n_free = 5;
        const int s = p.add(segment_node(op, x, group, 2, p));
        const int mean = p.add(data_node({0.2, -0.4}));
        const int sd = p.add(data_node({1.3}));
        add_term(p, density_node(Family::normal, {s, mean, sd}));
        lockstep::plan(p);
        std::vector<double> state;
        for (long c = 0; c < chains; ++c) {
          const double a = 0.7 + 0.1 * c, b = -0.3 - 0.1 * c;
          state.insert(state.end(), {a, b, a, b, 9.0});
        }
        const Eval e = evaluate(p, chains, state, backend);
        for (long c = 0; c < chains; ++c) {
          const double* xc = state.data() + 5 * c;
          const double* gc = e.grad.data() + 5 * c;
          CHECK(close(gc[0], -(xc[0] - 0.2) / 1.69, 1e-14));
          CHECK(close(gc[1], -(xc[1] + 0.4) / 1.69, 1e-14));
          CHECK(gc[2] == 0);
          CHECK(gc[3] == 0);
          CHECK(gc[4] == 0);
        }
        // NaN in a group is its value; a NaN row left out is not
        Program q;
        const int v = q.add(data_node({1, NAN, 3, 2, NAN}));
        const int t = q.add(segment_node(op, v, {0, 0, 1, 1, -1}, 2, q));
        q.add(param_node(1, 0));
        q.n_free = 1;
        lockstep::plan(q);
        Executor<double> ex(q, chains, backend);
        const std::vector<double> zero(chains, 0.0);
        ex.forward(zero.data());
        CHECK(std::isnan(ex.value(t)[0]));
        CHECK(ex.value(t)[1] == (op == Op::segment_max ? 3 : 2));
      }
}

namespace {

// 200 x 3 parameters in 37 groups (random, rows left out, groups 5 and 20
// empty) reduced by sum and prod, and in 37 groups that are all present by max
// and min, each under a normal objective.
Program larger(std::mt19937& rng, std::vector<int>* segments) {
  const long R = 200, K = 3, G = 37;
  std::vector<long> some(R), all(R);
  for (long r = 0; r < R; ++r) {
    long g = static_cast<long>(rng() % (G + 1)) - 1;
    some[r] = (g == 5 || g == 20) ? -1 : g;
    all[r] = r < G ? r : static_cast<long>(rng() % G);
  }
  Program p;
  const int x = p.add(param_node(R * K, 0, Transform::none, 0, 0, {R, K}));
  p.n_free = R * K;
  for (Op op : segment_ops) {
    const bool full = op == Op::segment_max || op == Op::segment_min;
    const int s = p.add(segment_node(op, x, full ? all : some, G, p));
    segments->push_back(s);
    add_normal_objective(p, s, rng);
  }
  lockstep::plan(p);
  return p;
}

}  // namespace

TEST_CASE("segment ops: the emulated backend equals the cpu backend, single precision is close",
          "[ops][segment][backends][float]") {
  std::mt19937 rng(502);
  std::vector<int> segments;
  const Program p = larger(rng, &segments);
  const long D = p.n_free;
  for (long chains : {1L, 3L, 4L}) {
    INFO("chains " << chains);
    std::vector<double> state = signed_vector(rng, chains * D, 0.8, 1.2);
    state[7] = 0;  // a zero in a product
    check_emulated_matches_cpu(p, chains, state, {{1, 1}, {1, 5}, {3, 5}, {2, 32}, {7, 3}, {4, 64}});
    Executor<double> cpu(p, chains, Backend::cpu);
    std::vector<double> lp_cpu(chains), grad_cpu(chains * D);
    cpu.log_density(state.data(), lp_cpu.data(), grad_cpu.data());
    Executor<float> single(p, chains, Backend::cpu);
    std::vector<double> lpf(chains), gradf(chains * D);
    single.log_density(state.data(), lpf.data(), gradf.data());
    double gscale = 0;
    for (double v : grad_cpu) gscale = std::max(gscale, std::fabs(v));
    for (long c = 0; c < chains; ++c) {
      CHECK(std::fabs(lpf[c] - lp_cpu[c]) <= 1e-5 * std::fabs(lp_cpu[c]) + 1e-4);
      CHECK(lpf[c] != lp_cpu[c]);  // it really ran in float
    }
    for (size_t k = 0; k < gradf.size(); ++k) CHECK(std::fabs(gradf[k] - grad_cpu[k]) <= 1e-4 * gscale);
    for (int s : segments)
      for (size_t i = 0; i < cpu.value(s).size(); ++i)
        CHECK(close(single.value(s)[i], cpu.value(s)[i], 1e-5, 1e-6));
  }
}

TEST_CASE("segment ops stay in the global stage, with the row-aligned values they read",
          "[ops][segment][planner]") {
  std::mt19937 rng(503);
  const long N = 300, G = 10;
  Program p;
  const int beta = p.add(param_node(2, 0));
  const int gamma = p.add(param_node(2, 2));
  p.n_free = 4;
  const int X = p.add(data_node(uniform_vector(rng, N * 2, -1, 1), {N, 2}));
  const int X2 = p.add(data_node(uniform_vector(rng, N * 2, -1, 1), {N, 2}));
  const int mu = p.add(matmul_node(X, beta, p));    // read by a segment op too
  const int eta = p.add(matmul_node(X2, gamma, p));  // read by its likelihood only
  std::vector<long> group(N);
  for (long r = 0; r < N; ++r) group[r] = static_cast<long>(rng() % G);
  const int s = p.add(segment_node(Op::segment_sum, mu, group, G, p));
  const int one = p.add(data_node({1}));
  const int zero = p.add(data_node({0}));
  const int y1 = p.add(data_node(uniform_vector(rng, N, -1, 1)));
  const int y2 = p.add(data_node(uniform_vector(rng, N, -1, 1)));
  const int first = add_term(p, density_node(Family::normal, {y1, mu, one}));
  const int second = add_term(p, density_node(Family::normal, {y2, eta, one}));
  add_term(p, density_node(Family::normal, {s, zero, one}));
  lockstep::plan(p);
  REQUIRE(p.extents == std::vector<long>{N});
  CHECK(p.nodes[s].extent == -1);
  CHECK(p.nodes[mu].extent == -1);
  CHECK(p.nodes[X].extent == -1);
  CHECK(p.nodes[first].extent == -1);
  CHECK(p.nodes[eta].extent == 0);
  CHECK(p.nodes[second].extent == 0);

  // tiled and sharded, the same log density and gradient as op by op
  const long chains = 3;
  const std::vector<double> state = uniform_vector(rng, chains * p.n_free, -1, 1);
  ExecOptions plain, tiled;
  plain.observation_stage = false;
  tiled.threads = 2;
  tiled.devices = 2;
  tiled.tile_rows = 17;
  Executor<double> a(p, chains, plain), b(p, chains, tiled);
  std::vector<double> lpa(chains), lpb(chains), ga(chains * p.n_free), gb(chains * p.n_free);
  a.log_density(state.data(), lpa.data(), ga.data());
  b.log_density(state.data(), lpb.data(), gb.data());
  for (long c = 0; c < chains; ++c) CHECK(close(lpa[c], lpb[c], 1e-12));
  for (size_t k = 0; k < ga.size(); ++k) CHECK(close(ga[k], gb[k], 1e-12, 1e-13));
  check_gradient(p, chains, state, 1e-6, 1e-7);
}
