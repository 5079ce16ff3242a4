// Shared builders and checks of the Catch2 tests (tests/cpp/test_*.cpp).
//
// Programs are built by hand, node by node, with the small builders below; the
// sizes of elementwise outputs are derived from the inputs as the R lowering
// would. `check_gradient` compares the executor's gradient with central finite
// differences of its own log density over every coordinate of the free state,
// one chain at a time, and also checks that perturbing one chain leaves the
// log density of every other chain bit-for-bit unchanged (a chain-indexing bug
// shows up there first).
//
// Adding a test for a new op: give it a reference in test_ops.cpp (a unary or
// binary reference table entry, or a dedicated TEST_CASE plus its name in
// `dedicated_ops`); the coverage test fails until you do.
#ifndef LOCKSTEP_TESTS_HELPERS_HPP
#define LOCKSTEP_TESTS_HELPERS_HPP

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "lockstep/executor.hpp"
#include "lockstep/ir.hpp"
#include "lockstep/planner.hpp"

namespace lstest {

using lockstep::Backend;
using lockstep::EmulatedGeometry;
using lockstep::Executor;
using lockstep::Family;
using lockstep::Node;
using lockstep::Op;
using lockstep::Program;
using lockstep::Transform;

constexpr double inf = HUGE_VAL;

// Every op of ops.def, with its name and family (coverage tests).
struct OpInfo {
  std::string name;
  Op op;
  lockstep::OpFamily family;
};

inline std::vector<OpInfo> all_ops() {
  return {
#define LS_OP(name, arity, family, alignment) {#name, Op::name, lockstep::OpFamily::family},
#include "lockstep/ops.def"
#undef LS_OP
  };
}

// ---------------------------------------------------------------- builders

inline std::vector<long> column(long n) { return {n, 1}; }

// The largest difference between two equally long vectors, relative to
// max(1, |b|): for comparing draws, whose values may be near 0.
inline double worst_relative_gap(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double worst = 0;
  for (size_t k = 0; k < a.size(); ++k)
    worst = std::max(worst, std::fabs(a[k] - b[k]) / std::max(1.0, std::fabs(b[k])));
  return worst;
}

inline long product(const std::vector<long>& dim) {
  long s = 1;
  for (long d : dim) s *= d;
  return s;
}

// A slice [offset, offset + size) of the free state; a column vector unless dim is given.
inline Node param_node(long size, long offset, Transform t = Transform::none, double lower = 0,
                       double upper = 0, std::vector<long> dim = {}) {
  Node n;
  n.op = Op::param;
  n.dim = dim.empty() ? column(size) : dim;
  n.size = product(n.dim);
  n.offset = offset;
  n.transform = t;
  n.lower = lower;
  n.upper = upper;
  return n;
}

inline Node data_node(std::vector<double> values, std::vector<long> dim = {}) {
  Node n;
  n.op = Op::data;
  n.dim = dim.empty() ? column(static_cast<long>(values.size())) : dim;
  n.size = product(n.dim);
  n.values = std::move(values);
  return n;
}

inline Node unary_node(Op op, int in, const Program& p) {
  Node n;
  n.op = op;
  n.inputs = {in};
  n.dim = p.nodes[in].dim;
  n.size = p.nodes[in].size;
  return n;
}

// Elementwise binary op; the output takes the shape of the larger operand.
inline Node binary_node(Op op, int a, int b, const Program& p) {
  Node n;
  n.op = op;
  n.inputs = {a, b};
  const Node& na = p.nodes[a];
  const Node& nb = p.nodes[b];
  n.dim = na.size >= nb.size ? na.dim : nb.dim;
  n.size = std::max(na.size, nb.size);
  return n;
}

inline Node sum_node(int in) {
  Node n;
  n.op = Op::sum;
  n.inputs = {in};
  n.dim = {1, 1};
  n.size = 1;
  return n;
}

inline Node matmul_node(int a, int b, const Program& p) {
  Node n;
  n.op = Op::matmul;
  n.inputs = {a, b};
  n.dim = {p.nodes[a].dim[0], p.nodes[b].dim[1]};
  n.size = n.dim[0] * n.dim[1];
  return n;
}

// y = x[index] (flat, 0-based), a column vector of index.size() elements.
inline Node gather_node(int in, std::vector<long> index) {
  Node n;
  n.op = Op::gather;
  n.inputs = {in};
  n.dim = column(static_cast<long>(index.size()));
  n.size = static_cast<long>(index.size());
  n.index = std::move(index);
  return n;
}

// Binary op with broadcasting along an axis: the output is rows x cols with
// the largest rows and columns of the operands (a 1 x c row vector and an
// r x 1 column vector give r x c). Operands are taken as rows x (size / rows).
inline Node broadcast_node(Op op, int a, int b, const Program& p) {
  Node n;
  n.op = op;
  n.inputs = {a, b};
  const Node& na = p.nodes[a];
  const Node& nb = p.nodes[b];
  const long rows = std::max(na.dim[0], nb.dim[0]);
  const long cols = std::max(na.size / na.dim[0], nb.size / nb.dim[0]);
  n.dim = {rows, cols};
  n.size = rows * cols;
  return n;
}

// rowsum (rows x 1), colsum (cols x 1) and transpose of a rows x cols input.
inline Node rowsum_node(int in, const Program& p) {
  Node n;
  n.op = Op::rowsum;
  n.inputs = {in};
  n.dim = column(p.nodes[in].dim[0]);
  n.size = p.nodes[in].dim[0];
  return n;
}

inline Node colsum_node(int in, const Program& p) {
  Node n;
  n.op = Op::colsum;
  n.inputs = {in};
  n.size = p.nodes[in].size / p.nodes[in].dim[0];
  n.dim = column(n.size);
  return n;
}

inline Node transpose_node(int in, const Program& p) {
  Node n;
  n.op = Op::transpose;
  n.inputs = {in};
  n.dim = {p.nodes[in].dim[1], p.nodes[in].dim[0]};
  n.size = p.nodes[in].size;
  return n;
}

// y[r, ] = x[rows[r], ] (0-based rows): rows.size() x cols.
inline Node gather_rows_node(int in, std::vector<long> rows, const Program& p) {
  Node n;
  n.op = Op::gather_rows;
  n.inputs = {in};
  const long cols = p.nodes[in].size / p.nodes[in].dim[0];
  n.dim = {static_cast<long>(rows.size()), cols};
  n.size = n.dim[0] * cols;
  n.index = std::move(rows);
  return n;
}

// A density term: inputs {target, params...} in R's parameter order.
inline Node density_node(Family f, std::vector<int> inputs, double lower = -inf,
                         double upper = inf) {
  Node n;
  n.op = Op::density;
  n.inputs = std::move(inputs);
  n.dim = {1, 1};
  n.size = 1;
  n.family = f;
  n.trunc_lower = lower;
  n.trunc_upper = upper;
  return n;
}

// max / min / prod of a whole value: one value per chain.
inline Node fold_node(Op op, int in) {
  Node n;
  n.op = op;
  n.inputs = {in};
  n.dim = {1, 1};
  n.size = 1;
  return n;
}

// cumsum / cumprod: a column vector of the input's size (greta's shape).
inline Node cumulative_node(Op op, int in, const Program& p) {
  Node n;
  n.op = op;
  n.inputs = {in};
  n.size = p.nodes[in].size;
  n.dim = column(n.size);
  return n;
}

// c(a, b): a column vector, unless dim is given.
inline Node concat_node(int a, int b, const Program& p, std::vector<long> dim = {}) {
  Node n;
  n.op = Op::concat;
  n.inputs = {a, b};
  n.size = p.nodes[a].size + p.nodes[b].size;
  n.dim = dim.empty() ? column(n.size) : dim;
  return n;
}

// A grouped reduction (segment_sum, _max, _min or _prod) of in's rows into
// `groups` groups (group[r] 0-based, -1: row r left out): groups x cols.
inline Node segment_node(Op op, int in, const std::vector<long>& group, long groups,
                         const Program& p) {
  Node n;
  n.op = op;
  n.inputs = {in};
  const long cols = p.nodes[in].size / p.nodes[in].dim[0];
  n.dim = {groups, cols};
  n.size = groups * cols;
  n.index = lockstep::segment_layout(group, groups);
  return n;
}

// A linalg op of a square a: chol(a), chol2inv(a) (b < 0), or a solve of the
// right-hand side b, whose shape the output takes.
inline Node linalg_node(Op op, int a, const Program& p, int b = -1) {
  Node n;
  n.op = op;
  n.inputs = b < 0 ? std::vector<int>{a} : std::vector<int>{a, b};
  n.dim = p.nodes[b < 0 ? a : b].dim;
  n.size = p.nodes[b < 0 ? a : b].size;
  return n;
}

// Adds a density node and lists it as a term.
inline int add_term(Program& p, Node n) {
  const int id = p.add(std::move(n));
  p.terms.push_back(id);
  return id;
}

// ---------------------------------------------------------------- evaluation

struct Eval {
  std::vector<double> lp;    // [chains]
  std::vector<double> grad;  // [chains, n_free]
};

inline Eval evaluate(const Program& p, long chains, const std::vector<double>& state,
                     Backend backend = Backend::cpu, EmulatedGeometry g = EmulatedGeometry()) {
  Executor<double> ex(p, chains, backend, g);
  Eval e;
  e.lp.assign(chains, 0);
  e.grad.assign(chains * p.n_free, 0);
  ex.log_density(state.data(), e.lp.data(), e.grad.data());
  return e;
}

inline std::vector<double> uniform_vector(std::mt19937& rng, long n, double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

// Values in +-[lo, hi] with random signs: away from zero, for denominators.
inline std::vector<double> signed_vector(std::mt19937& rng, long n, double lo, double hi) {
  std::vector<double> v = uniform_vector(rng, n, lo, hi);
  std::bernoulli_distribution coin(0.5);
  for (double& x : v)
    if (coin(rng)) x = -x;
  return v;
}

// |a - b| <= abs_tol + rel_tol * max(|a|, |b|); equal infinities and two NaNs match.
inline bool close(double a, double b, double rel_tol, double abs_tol = 0) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (std::isinf(a) || std::isinf(b)) return a == b;
  return std::fabs(a - b) <= abs_tol + rel_tol * std::max(std::fabs(a), std::fabs(b));
}

// Central finite differences of a scalar function, fourth order:
//   f'(x) ~ (8 (f(x+h) - f(x-h)) - (f(x+2h) - f(x-2h))) / (12 h).
template <class F> double central_difference(F f, double x, double h = 1e-4) {
  return (8 * (f(x + h) - f(x - h)) - (f(x + 2 * h) - f(x - 2 * h))) / (12 * h);
}

// Finite-difference gradient of every chain's log density over the free state
// ([chains, n_free]). While perturbing chain c it also records whether any
// other chain's log density moved (cross_talk).
struct FdResult {
  std::vector<double> grad;
  bool cross_talk = false;
};

inline FdResult fd_gradient(const Program& p, long chains, const std::vector<double>& state,
                            double h = 1e-4, Backend backend = Backend::cpu,
                            EmulatedGeometry g = EmulatedGeometry()) {
  Executor<double> ex(p, chains, backend, g);
  const long D = p.n_free;
  std::vector<double> base(chains), lp(chains), s = state;
  ex.log_density(s.data(), base.data(), nullptr);
  FdResult r;
  r.grad.assign(chains * D, 0);
  for (long c = 0; c < chains; ++c) {
    for (long j = 0; j < D; ++j) {
      const long k = c * D + j;
      auto f = [&](double v) {
        s[k] = v;
        ex.log_density(s.data(), lp.data(), nullptr);
        for (long o = 0; o < chains; ++o)
          if (o != c && !(lp[o] == base[o] || (std::isnan(lp[o]) && std::isnan(base[o]))))
            r.cross_talk = true;
        return lp[c];
      };
      r.grad[k] = central_difference(f, state[k], h);
      s[k] = state[k];
    }
  }
  return r;
}

// Checks the executor's gradient against finite differences, element by element.
inline void check_gradient(const Program& p, long chains, const std::vector<double>& state,
                           double rel_tol = 1e-6, double abs_tol = 1e-7, double h = 1e-4,
                           Backend backend = Backend::cpu,
                           EmulatedGeometry g = EmulatedGeometry()) {
  const Eval e = evaluate(p, chains, state, backend, g);
  const FdResult fd = fd_gradient(p, chains, state, h, backend, g);
  CHECK_FALSE(fd.cross_talk);
  for (long c = 0; c < chains; ++c) REQUIRE(std::isfinite(e.lp[c]));
  for (size_t k = 0; k < e.grad.size(); ++k) {
    INFO("chain " << k / p.n_free << ", coordinate " << k % p.n_free << ": analytic "
                  << e.grad[k] << ", finite differences " << fd.grad[k]);
    CHECK(close(e.grad[k], fd.grad[k], rel_tol, abs_tol));
  }
}

// Adds a normal(target, mean = random data, sd = 1.3) term: a scalar objective
// whose gradient reaches every element of the target.
inline void add_normal_objective(Program& p, int target, std::mt19937& rng) {
  const int mean = p.add(data_node(uniform_vector(rng, p.nodes[target].size, -1, 1),
                                   p.nodes[target].dim));
  const int sd = p.add(data_node({1.3}, {1, 1}));
  add_term(p, density_node(Family::normal, {target, mean, sd}));
}

// The emulated backend, for several geometries, against the cpu backend: log
// density (finite), gradient and every node's value, to 1e-12 relative.
inline void check_emulated_matches_cpu(
    const Program& p, long chains, const std::vector<double>& state,
    const std::vector<EmulatedGeometry>& geometries = {{1, 1}, {3, 5}, {7, 3}, {4, 64}}) {
  const long D = p.n_free;
  Executor<double> cpu(p, chains, Backend::cpu);
  std::vector<double> lp_cpu(chains), grad_cpu(chains * D);
  cpu.log_density(state.data(), lp_cpu.data(), grad_cpu.data());
  for (long c = 0; c < chains; ++c) REQUIRE(std::isfinite(lp_cpu[c]));
  for (const EmulatedGeometry& g : geometries) {
    INFO("emulated, " << g.blocks << " blocks of " << g.lanes_per_block << " lanes");
    Executor<double> emu(p, chains, Backend::emulated, g);
    std::vector<double> lp(chains), grad(chains * D);
    for (int rep = 0; rep < 2; ++rep) {  // twice: buffers must be reset between calls
      emu.log_density(state.data(), lp.data(), grad.data());
      for (long c = 0; c < chains; ++c) CHECK(close(lp[c], lp_cpu[c], 1e-12));
      for (long k = 0; k < chains * D; ++k) {
        INFO("gradient element " << k << ": emulated " << grad[k] << ", cpu " << grad_cpu[k]);
        CHECK(close(grad[k], grad_cpu[k], 1e-12, 1e-13));
      }
    }
    for (size_t id = 0; id < p.nodes.size(); ++id) {
      const std::vector<double>& a = emu.value(static_cast<int>(id));
      const std::vector<double>& b = cpu.value(static_cast<int>(id));
      REQUIRE(a.size() == b.size());
      for (size_t i = 0; i < a.size(); ++i) {
        INFO("node " << id << " (" << lockstep::op_name(p.nodes[id].op) << ") element " << i);
        CHECK(close(a[i], b[i], 1e-12, 1e-13));
      }
    }
  }
}

// Eight schools' shape, planned: mu ~ normal(0, 5), theta[8] ~ normal(mu, 5);
// a small model for the samplers on an executor.
inline Program eight_schools_shape() {
  Program q;
  const int mu = q.add(param_node(1, 0));
  const int theta = q.add(param_node(8, 1, Transform::none, 0, 0, {8, 1}));
  q.n_free = 9;
  const int zero = q.add(data_node({0}));
  const int five = q.add(data_node({5}));
  add_term(q, density_node(Family::normal, {mu, zero, five}));
  add_term(q, density_node(Family::normal, {theta, mu, five}));
  lockstep::plan(q);
  return q;
}

inline std::string show(const std::vector<double>& v) {
  std::ostringstream s;
  s.precision(17);
  s << "{";
  for (size_t i = 0; i < v.size(); ++i) s << (i ? ", " : "") << v[i];
  s << "}";
  return s.str();
}

}  // namespace lstest

#endif
