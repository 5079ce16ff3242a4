// Every op of ops.def: forward values against references computed here, and
// gradients of a scalar objective against central finite differences, for one
// and three chains (each chain with its own inputs), with scalar broadcasting
// on either side and operands with and without the chain dimension.
//
// A new op in ops.def fails "every op in ops.def has a test" until it has an
// entry in unary_refs / binary_refs or a dedicated TEST_CASE listed in
// dedicated_ops.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "lockstep/executor.hpp"
#include "lockstep/ir.hpp"

using namespace lstest;
using lockstep::OpFamily;

namespace {

struct OpInfo {
  std::string name;
  Op op;
  OpFamily family;
};

std::vector<OpInfo> all_ops() {
  return {
#define LS_OP(name, arity, family) {#name, Op::name, OpFamily::family},
#include "lockstep/ops.def"
#undef LS_OP
  };
}

// Reference math of the unary ops, the domain inputs are drawn from, and the
// relative tolerance of the gradient check.
struct UnaryRef {
  double (*value)(double);
  double lo, hi;
  double grad_tol;
};

const std::map<std::string, UnaryRef>& unary_refs() {
  static const std::map<std::string, UnaryRef> m = {
      {"neg", {[](double x) { return -x; }, -3, 3, 1e-8}},
      {"exp", {[](double x) { return std::exp(x); }, -2, 2, 1e-8}},
      {"log", {[](double x) { return std::log(x); }, 0.3, 3, 1e-7}},
      {"log1p", {[](double x) { return std::log1p(x); }, -0.6, 3, 1e-7}},
      {"sqrt", {[](double x) { return std::pow(x, 0.5); }, 0.3, 3, 1e-7}},
      {"ilogit", {[](double x) { return 1 / (1 + std::exp(-x)); }, -5, 5, 1e-7}},
  };
  return m;
}

struct BinaryRef {
  double (*value)(double, double);
  double grad_tol;
};

const std::map<std::string, BinaryRef>& binary_refs() {
  static const std::map<std::string, BinaryRef> m = {
      {"add", {[](double a, double b) { return a + b; }, 1e-8}},
      {"sub", {[](double a, double b) { return a - b; }, 1e-8}},
      {"mul", {[](double a, double b) { return a * b; }, 1e-8}},
      {"div", {[](double a, double b) { return a / b; }, 1e-7}},
  };
  return m;
}

// Ops with a TEST_CASE of their own: below, and the shape ops in
// test_ops_shapes.cpp (which also covers the binary ops' row and column
// vector broadcasting).
const std::set<std::string> dedicated_ops = {"data",   "param",  "sum",       "matmul",
                                             "gather", "density", "rowsum",   "colsum",
                                             "transpose", "gather_rows", "rowdot_rows"};

// The value of node `id` for chain c, element i, whatever its chain layout.
double node_value(const Executor<double>& ex, const Program& p, int id, long c, long i) {
  const Node& n = p.nodes[id];
  return ex.value(id)[(n.chain ? c * n.size : 0) + i];
}

// Adds a normal(target, mean = random data, sd = 1.3) term: a scalar objective whose
// gradient reaches every element of the target.
void add_normal_objective(Program& p, int target, std::mt19937& rng) {
  const long n = p.nodes[target].size;
  const int mean = p.add(data_node(uniform_vector(rng, n, -1, 1), p.nodes[target].dim));
  const int sd = p.add(data_node({1.3}, {1, 1}));
  add_term(p, density_node(Family::normal, {target, mean, sd}));
}

}  // namespace

TEST_CASE("every op in ops.def has a test", "[ops][coverage]") {
  std::set<std::string> in_table;
  for (const OpInfo& o : all_ops()) {
    in_table.insert(o.name);
    INFO("op " << o.name);
    CHECK(std::string(lockstep::op_name(o.op)) == o.name);
    CHECK(lockstep::op_family(o.op) == o.family);
    const bool tested = (o.family == OpFamily::unary && unary_refs().count(o.name)) ||
                        (o.family == OpFamily::binary && binary_refs().count(o.name)) ||
                        dedicated_ops.count(o.name);
    CHECK(tested);
  }
  CHECK(static_cast<int>(in_table.size()) == lockstep::op_count);
  // and nothing is tested that is not an op
  for (const auto& kv : unary_refs()) CHECK(in_table.count(kv.first));
  for (const auto& kv : binary_refs()) CHECK(in_table.count(kv.first));
  for (const auto& name : dedicated_ops) CHECK(in_table.count(name));
}

TEST_CASE("unary ops: values and gradients on parameters", "[ops][unary]") {
  std::mt19937 rng(101);
  const long n = 5;
  for (const OpInfo& o : all_ops()) {
    if (o.family != OpFamily::unary) continue;
    REQUIRE(unary_refs().count(o.name));
    const UnaryRef& ref = unary_refs().at(o.name);
    for (long chains : {1L, 3L}) {
      INFO("op " << o.name << ", chains " << chains);
      Program p;
      const int x = p.add(param_node(n, 0));
      const int y = p.add(unary_node(o.op, x, p));
      p.n_free = n;
      add_normal_objective(p, y, rng);
      lockstep::plan(p);
      REQUIRE(p.nodes[y].chain);
      const std::vector<double> state = uniform_vector(rng, chains * n, ref.lo, ref.hi);

      Executor<double> ex(p, chains);
      std::vector<double> lp(chains), grad(chains * n);
      ex.log_density(state.data(), lp.data(), grad.data());
      REQUIRE(ex.value(y).size() == static_cast<size_t>(chains * n));
      for (long c = 0; c < chains; ++c)
        for (long i = 0; i < n; ++i)
          CHECK(close(ex.value(y)[c * n + i], ref.value(state[c * n + i]), 1e-14, 1e-300));
      check_gradient(p, chains, state, ref.grad_tol, 1e-9);
    }
  }
}

TEST_CASE("unary ops on data have no chain dimension and mix with parameters",
          "[ops][unary][broadcast]") {
  std::mt19937 rng(102);
  const long n = 4;
  for (const OpInfo& o : all_ops()) {
    if (o.family != OpFamily::unary) continue;
    REQUIRE(unary_refs().count(o.name));
    const UnaryRef& ref = unary_refs().at(o.name);
    const std::vector<double> dv = uniform_vector(rng, n, ref.lo, ref.hi);
    for (long chains : {1L, 3L}) {
      INFO("op " << o.name << ", chains " << chains);
      Program p;
      const int d = p.add(data_node(dv));
      const int yd = p.add(unary_node(o.op, d, p));  // data only
      const int x = p.add(param_node(1, 0));         // a scalar parameter ...
      const int ys = p.add(unary_node(o.op, x, p));  // ... through the op
      const int z = p.add(binary_node(Op::mul, yd, ys, p));
      p.n_free = 1;
      add_normal_objective(p, z, rng);
      lockstep::plan(p);
      CHECK_FALSE(p.nodes[yd].chain);
      CHECK(p.nodes[z].chain);
      const std::vector<double> state = uniform_vector(rng, chains, ref.lo, ref.hi);
      Executor<double> ex(p, chains);
      std::vector<double> lp(chains), grad(chains);
      ex.log_density(state.data(), lp.data(), grad.data());
      REQUIRE(ex.value(yd).size() == static_cast<size_t>(n));
      for (long i = 0; i < n; ++i) CHECK(close(ex.value(yd)[i], ref.value(dv[i]), 1e-14, 1e-300));
      for (long c = 0; c < chains; ++c)
        for (long i = 0; i < n; ++i)
          CHECK(close(node_value(ex, p, z, c, i), ref.value(dv[i]) * ref.value(state[c]), 1e-14,
                      1e-300));
      check_gradient(p, chains, state, ref.grad_tol, 1e-9);
    }
  }
}

namespace {

// One operand of a binary op: a parameter or data, a scalar or a vector.
struct OperandSpec {
  bool param;
  long size;
};

struct BinaryCase {
  const char* label;
  OperandSpec a, b;
  bool same_node;  // b is the very node a (x op x)
};

const BinaryCase binary_cases[] = {
    {"param vector, param vector", {true, 4}, {true, 4}, false},
    {"param scalar, param vector", {true, 1}, {true, 4}, false},
    {"param vector, param scalar", {true, 4}, {true, 1}, false},
    {"param scalar, param scalar", {true, 1}, {true, 1}, false},
    {"data vector, param vector", {false, 4}, {true, 4}, false},
    {"param vector, data vector", {true, 4}, {false, 4}, false},
    {"data scalar, param vector", {false, 1}, {true, 4}, false},
    {"param vector, data scalar", {true, 4}, {false, 1}, false},
    {"param scalar, data vector", {true, 1}, {false, 4}, false},
    {"data vector, param scalar", {false, 4}, {true, 1}, false},
    {"data vector, data vector", {false, 4}, {false, 4}, false},
    {"data scalar, data vector", {false, 1}, {false, 4}, false},
    {"the same parameter on both sides", {true, 4}, {true, 4}, true},
};

}  // namespace

TEST_CASE("binary ops: values and gradients with broadcasting and mixed chain dimension",
          "[ops][binary][broadcast]") {
  std::mt19937 rng(103);
  for (const OpInfo& o : all_ops()) {
    if (o.family != OpFamily::binary) continue;
    REQUIRE(binary_refs().count(o.name));
    const BinaryRef& ref = binary_refs().at(o.name);
    for (const BinaryCase& bc : binary_cases) {
      for (long chains : {1L, 3L}) {
        INFO("op " << o.name << ", " << bc.label << ", chains " << chains);
        Program p;
        long n_free = 0;
        std::vector<double> state_a, state_b;  // per operand, [chains, size]
        std::vector<double> data_a, data_b;
        // a in [-2, 2], b away from zero (a denominator)
        auto make = [&](const OperandSpec& s, bool is_b, std::vector<double>& st,
                        std::vector<double>& dv) {
          if (s.param) {
            const int id = p.add(param_node(s.size, n_free));
            n_free += s.size;
            st = is_b ? signed_vector(rng, chains * s.size, 0.5, 2)
                      : uniform_vector(rng, chains * s.size, -2, 2);
            return id;
          }
          dv = is_b ? signed_vector(rng, s.size, 0.5, 2) : uniform_vector(rng, s.size, -2, 2);
          return p.add(data_node(dv));
        };
        const int a = make(bc.a, false, state_a, data_a);
        const int b = bc.same_node ? a : make(bc.b, true, state_b, data_b);
        if (bc.same_node) {
          // away from zero for div(x, x)
          state_a = signed_vector(rng, chains * bc.a.size, 0.5, 2);
        }
        const int y = p.add(binary_node(o.op, a, b, p));
        const long n = p.nodes[y].size;
        int objective = y;
        long extra_offset = -1;
        if (!bc.a.param && !bc.b.param) {
          // data op data has no chain dimension: reach a parameter through one more add
          const int x = p.add(param_node(n, n_free));
          extra_offset = n_free;
          n_free += n;
          objective = p.add(binary_node(Op::add, y, x, p));
        }
        p.n_free = n_free;
        add_normal_objective(p, objective, rng);
        lockstep::plan(p);
        CHECK(p.nodes[y].chain == (bc.a.param || bc.b.param));

        // the state: chain-major, a's slice then b's slice (then the extra parameter)
        std::vector<double> state(chains * n_free);
        const std::vector<double> extra = uniform_vector(rng, chains * n, -1, 1);
        for (long c = 0; c < chains; ++c) {
          long off = 0;
          if (bc.a.param) {
            for (long i = 0; i < bc.a.size; ++i)
              state[c * n_free + off + i] = state_a[c * bc.a.size + i];
            off += bc.a.size;
          }
          if (bc.b.param && !bc.same_node) {
            for (long i = 0; i < bc.b.size; ++i)
              state[c * n_free + off + i] = state_b[c * bc.b.size + i];
            off += bc.b.size;
          }
          if (extra_offset >= 0)
            for (long i = 0; i < n; ++i) state[c * n_free + extra_offset + i] = extra[c * n + i];
        }
        auto operand_value = [&](const OperandSpec& s, const std::vector<double>& st,
                                 const std::vector<double>& dv, long c, long i) {
          const long j = s.size == 1 ? 0 : i;
          return s.param ? st[c * s.size + j] : dv[j];
        };

        Executor<double> ex(p, chains);
        std::vector<double> lp(chains), grad(chains * n_free);
        ex.log_density(state.data(), lp.data(), grad.data());
        REQUIRE(ex.value(y).size() == static_cast<size_t>((p.nodes[y].chain ? chains : 1) * n));
        for (long c = 0; c < chains; ++c) {
          for (long i = 0; i < n; ++i) {
            const double av = operand_value(bc.a, state_a, data_a, c, i);
            const double bv = bc.same_node ? av : operand_value(bc.b, state_b, data_b, c, i);
            CHECK(close(node_value(ex, p, y, c, i), ref.value(av, bv), 1e-15, 1e-300));
          }
        }
        check_gradient(p, chains, state, ref.grad_tol, 1e-9);
      }
    }
  }
}

TEST_CASE("param: a slice of the free state, per chain", "[ops][param]") {
  std::mt19937 rng(104);
  for (long chains : {1L, 3L}) {
    INFO("chains " << chains);
    Program p;
    const long D = 7;
    const int a = p.add(param_node(3, 2));  // state[2..4]
    const int b = p.add(param_node(2, 5, Transform::none, 0, 0, {1, 2}));  // state[5..6], a row
    p.n_free = D;
    add_normal_objective(p, a, rng);
    add_normal_objective(p, b, rng);
    lockstep::plan(p);
    CHECK(p.nodes[a].chain);
    const std::vector<double> state = uniform_vector(rng, chains * D, -2, 2);
    Executor<double> ex(p, chains);
    std::vector<double> lp(chains), grad(chains * D, 123.0);
    ex.log_density(state.data(), lp.data(), grad.data());
    REQUIRE(ex.value(a).size() == static_cast<size_t>(chains * 3));
    for (long c = 0; c < chains; ++c) {
      for (long i = 0; i < 3; ++i) CHECK(ex.value(a)[c * 3 + i] == state[c * D + 2 + i]);
      for (long i = 0; i < 2; ++i) CHECK(ex.value(b)[c * 2 + i] == state[c * D + 5 + i]);
      // coordinates no node reads have zero gradient (and the buffer was overwritten)
      CHECK(grad[c * D + 0] == 0);
      CHECK(grad[c * D + 1] == 0);
    }
    check_gradient(p, chains, state, 1e-8, 1e-10);
  }
}

TEST_CASE("data: values, no chain dimension, evaluated without a state", "[ops][data]") {
  Program p;
  const int d = p.add(data_node({1.5, -2, 3.25, 0, 7, 8}, {2, 3}));
  const int x = p.add(param_node(1, 0));
  const int y = p.add(binary_node(Op::add, d, x, p));
  p.n_free = 1;
  std::mt19937 rng(105);
  add_normal_objective(p, y, rng);
  lockstep::plan(p);
  CHECK_FALSE(p.nodes[d].chain);
  Executor<double> ex(p, 3);
  // data values exist as soon as the executor does
  REQUIRE(ex.value(d) == std::vector<double>({1.5, -2, 3.25, 0, 7, 8}));
  const std::vector<double> state = {0.5, -1, 2};
  ex.forward(state.data());
  CHECK(ex.value(d) == std::vector<double>({1.5, -2, 3.25, 0, 7, 8}));
  for (long c = 0; c < 3; ++c)
    for (long i = 0; i < 6; ++i) CHECK(ex.value(y)[c * 6 + i] == p.nodes[d].values[i] + state[c]);
  check_gradient(p, 3, state, 1e-8, 1e-10);
}

TEST_CASE("sum: values and gradients, including a sum broadcast back", "[ops][sum][broadcast]") {
  std::mt19937 rng(106);
  for (long chains : {1L, 3L}) {
    INFO("chains " << chains);
    Program p;
    const long n = 6;
    const int x = p.add(param_node(n, 0, Transform::none, 0, 0, {2, 3}));
    const int s = p.add(sum_node(x));
    const int xs = p.add(param_node(1, n));
    const int ss = p.add(sum_node(xs));  // sum of a scalar
    const int d = p.add(data_node(uniform_vector(rng, 5, -1, 1)));
    const int sd = p.add(sum_node(d));  // data only
    // x - sum(x): the sum broadcast back over x; times sum(data)
    const int centred = p.add(binary_node(Op::sub, x, s, p));
    const int scaled = p.add(binary_node(Op::mul, centred, sd, p));
    const int shifted = p.add(binary_node(Op::add, ss, scaled, p));
    p.n_free = n + 1;
    add_normal_objective(p, s, rng);
    add_normal_objective(p, shifted, rng);
    lockstep::plan(p);
    CHECK(p.nodes[s].chain);
    CHECK_FALSE(p.nodes[sd].chain);
    const std::vector<double> state = uniform_vector(rng, chains * (n + 1), -2, 2);
    Executor<double> ex(p, chains);
    ex.forward(state.data());
    double dsum = 0;
    for (double v : p.nodes[d].values) dsum += v;
    REQUIRE(ex.value(sd).size() == 1);
    CHECK(close(ex.value(sd)[0], dsum, 1e-15));
    for (long c = 0; c < chains; ++c) {
      double total = 0;
      for (long i = 0; i < n; ++i) total += state[c * (n + 1) + i];
      CHECK(close(ex.value(s)[c], total, 1e-14, 1e-15));
      CHECK(ex.value(ss)[c] == state[c * (n + 1) + n]);
      for (long i = 0; i < n; ++i)
        CHECK(close(ex.value(shifted)[c * n + i],
                    state[c * (n + 1) + n] + (state[c * (n + 1) + i] - total) * dsum, 1e-13,
                    1e-14));
    }
    check_gradient(p, chains, state, 1e-8, 1e-9);
  }
}

TEST_CASE("matmul: values against a naive triple loop, and gradients", "[ops][matmul]") {
  std::mt19937 rng(107);
  struct Case {
    const char* label;
    bool a_param, b_param;
    long m, k, n;
  };
  const Case cases[] = {
      {"param %*% param", true, true, 3, 4, 2},      {"data %*% param", false, true, 3, 4, 2},
      {"param %*% data", true, false, 3, 4, 2},      {"data %*% param vector", false, true, 5, 3, 1},
      {"param row %*% param", true, true, 1, 3, 2},  {"data %*% data", false, false, 2, 3, 2},
      {"param scalar %*% param row", true, true, 1, 1, 3},
  };
  for (const Case& mc : cases) {
    for (long chains : {1L, 3L}) {
      INFO(mc.label << ", chains " << chains);
      Program p;
      long n_free = 0;
      std::vector<double> av, bv;  // per chain when a parameter
      auto make = [&](bool is_param, long r, long c, std::vector<double>& v) {
        if (is_param) {
          const int id = p.add(param_node(r * c, n_free, Transform::none, 0, 0, {r, c}));
          n_free += r * c;
          v = uniform_vector(rng, chains * r * c, -2, 2);
          return id;
        }
        v = uniform_vector(rng, r * c, -2, 2);
        return p.add(data_node(v, {r, c}));
      };
      const int a = make(mc.a_param, mc.m, mc.k, av);
      const int b = make(mc.b_param, mc.k, mc.n, bv);
      const int y = p.add(matmul_node(a, b, p));
      REQUIRE(p.nodes[y].size == mc.m * mc.n);
      int objective = y;
      long extra = -1;
      if (!mc.a_param && !mc.b_param) {
        const int x = p.add(param_node(mc.m * mc.n, n_free, Transform::none, 0, 0, {mc.m, mc.n}));
        extra = n_free;
        n_free += mc.m * mc.n;
        objective = p.add(binary_node(Op::mul, y, x, p));
      }
      p.n_free = n_free;
      add_normal_objective(p, objective, rng);
      lockstep::plan(p);
      CHECK(p.nodes[y].chain == (mc.a_param || mc.b_param));

      std::vector<double> state(chains * n_free);
      for (long c = 0; c < chains; ++c) {
        long off = 0;
        if (mc.a_param) {
          for (long i = 0; i < mc.m * mc.k; ++i) state[c * n_free + off + i] = av[c * mc.m * mc.k + i];
          off += mc.m * mc.k;
        }
        if (mc.b_param)
          for (long i = 0; i < mc.k * mc.n; ++i) state[c * n_free + off + i] = bv[c * mc.k * mc.n + i];
        if (extra >= 0)
          for (long i = 0; i < mc.m * mc.n; ++i) state[c * n_free + extra + i] = 0.3 + 0.1 * i + c;
      }
      Executor<double> ex(p, chains);
      ex.forward(state.data());
      const long C = p.nodes[y].chain ? chains : 1;
      REQUIRE(ex.value(y).size() == static_cast<size_t>(C * mc.m * mc.n));
      for (long c = 0; c < C; ++c) {
        const double* A = av.data() + (mc.a_param ? c * mc.m * mc.k : 0);
        const double* B = bv.data() + (mc.b_param ? c * mc.k * mc.n : 0);
        for (long i = 0; i < mc.m; ++i)
          for (long j = 0; j < mc.n; ++j) {
            double acc = 0;
            for (long l = 0; l < mc.k; ++l) acc += A[i + l * mc.m] * B[l + j * mc.k];
            CHECK(close(ex.value(y)[c * mc.m * mc.n + i + j * mc.m], acc, 1e-14, 1e-14));
          }
      }
      check_gradient(p, chains, state, 1e-8, 1e-9);
    }
  }
}

TEST_CASE("gather: values by hand and scatter-add gradients with repeated indices",
          "[ops][gather]") {
  std::mt19937 rng(108);
  for (long chains : {1L, 3L}) {
    INFO("chains " << chains);
    Program p;
    // index repeats 0 and 4 and skips 3: the backward pass must add, not assign
    const std::vector<long> idx = {4, 0, 0, 2, 4, 4, 1};
    const int x = p.add(param_node(5, 0));
    const int g = p.add(gather_node(x, idx));
    // from a matrix parameter, flat column-major indices
    const int m = p.add(param_node(6, 5, Transform::none, 0, 0, {2, 3}));
    const std::vector<long> midx = {5, 1, 3, 3};  // m[2,3], m[2,1], m[2,2], m[2,2]
    const int gm = p.add(gather_node(m, midx));
    // one scalar gathered many times
    const int s = p.add(param_node(1, 11));
    const int gs = p.add(gather_node(s, {0, 0, 0}));
    // from data: no chain dimension
    const std::vector<double> dv = {10, 20, 30};
    const int d = p.add(data_node(dv));
    const int gd = p.add(gather_node(d, {2, 2, 0, 1, 2, 0, 1}));
    const int mixed = p.add(binary_node(Op::mul, g, gd, p));
    p.n_free = 12;
    add_normal_objective(p, mixed, rng);
    add_normal_objective(p, gm, rng);
    add_normal_objective(p, gs, rng);
    lockstep::plan(p);
    CHECK(p.nodes[g].chain);
    CHECK_FALSE(p.nodes[gd].chain);
    const std::vector<double> state = uniform_vector(rng, chains * 12, -2, 2);
    Executor<double> ex(p, chains);
    ex.forward(state.data());
    for (long c = 0; c < chains; ++c) {
      const double* z = state.data() + c * 12;
      for (size_t i = 0; i < idx.size(); ++i) CHECK(ex.value(g)[c * idx.size() + i] == z[idx[i]]);
      for (size_t i = 0; i < midx.size(); ++i)
        CHECK(ex.value(gm)[c * midx.size() + i] == z[5 + midx[i]]);
      for (long i = 0; i < 3; ++i) CHECK(ex.value(gs)[c * 3 + i] == z[11]);
    }
    REQUIRE(ex.value(gd).size() == 7);
    CHECK(ex.value(gd) == std::vector<double>({30, 30, 10, 20, 30, 10, 20}));
    check_gradient(p, chains, state, 1e-8, 1e-9);

    // the scatter-add by hand: d/dx_j of sum_i w_i x[idx_i] with w = 1 .. 7
    Program q;
    const int qx = q.add(param_node(5, 0));
    const int qg = q.add(gather_node(qx, idx));
    const int qw = q.add(data_node({1, 2, 3, 4, 5, 6, 7}));
    const int qy = q.add(binary_node(Op::mul, qg, qw, q));
    const int qs = q.add(sum_node(qy));
    // exponential(rate = 1) on exp(sum) has log density sum - exp(sum):
    // simpler, a normal term with sd 1 and mean 0 gives -s^2/2, d/ds = -s.
    const int zero = q.add(data_node({0}));
    const int one = q.add(data_node({1}));
    add_term(q, density_node(Family::normal, {qs, zero, one}));
    q.n_free = 5;
    lockstep::plan(q);
    const Eval e = evaluate(q, chains, std::vector<double>(state.begin(), state.begin() + chains * 5));
    (void)qy;
    for (long c = 0; c < chains; ++c) {
      const double* z = state.data() + c * 5;
      double sv = 0;
      for (size_t i = 0; i < idx.size(); ++i) sv += (i + 1) * z[idx[i]];
      const double expected[5] = {-sv * (2 + 3), -sv * 7, -sv * 4, 0, -sv * (1 + 5 + 6)};
      for (long j = 0; j < 5; ++j) CHECK(close(e.grad[c * 5 + j], expected[j], 1e-13, 1e-13));
    }
  }
}

TEST_CASE("density op: the term's value is the summed log density, terms add up",
          "[ops][density]") {
  std::mt19937 rng(109);
  for (long chains : {1L, 3L}) {
    INFO("chains " << chains);
    Program p;
    const long n = 4;
    const int x = p.add(param_node(n, 0));
    const int mu = p.add(param_node(1, n));
    const int sd = p.add(param_node(1, n + 1, Transform::lower, 0));
    const std::vector<double> yv = uniform_vector(rng, n, -2, 2);
    const int y = p.add(data_node(yv));
    const int sd_data = p.add(data_node({0.7}));
    // x ~ normal(mu, sd): chain target and chain parameters
    const int t1 = add_term(p, density_node(Family::normal, {x, mu, sd}));
    // y ~ normal(x, 0.7): data target, vector chain mean, data sd
    const int t2 = add_term(p, density_node(Family::normal, {y, x, sd_data}));
    // y ~ normal(0.7, 0.7): nothing depends on the state
    const int t3 = add_term(p, density_node(Family::normal, {y, sd_data, sd_data}));
    p.n_free = n + 2;
    lockstep::plan(p);
    CHECK(p.nodes[t3].chain);  // densities always carry the chain dimension
    const std::vector<double> state = uniform_vector(rng, chains * (n + 2), -1, 1);
    Executor<double> ex(p, chains);
    std::vector<double> lp(chains), grad(chains * (n + 2));
    ex.log_density(state.data(), lp.data(), grad.data());
    auto lnorm = [](double v, double m, double s) {
      return std::log(std::exp(-0.5 * (v - m) * (v - m) / (s * s)) / (s * std::sqrt(2 * M_PI)));
    };
    for (long c = 0; c < chains; ++c) {
      const double* z = state.data() + c * (n + 2);
      const double m = z[n], s = std::exp(z[n + 1]);
      double e1 = 0, e2 = 0, e3 = 0;
      for (long i = 0; i < n; ++i) {
        e1 += lnorm(z[i], m, s);
        e2 += lnorm(yv[i], z[i], 0.7);
        e3 += lnorm(yv[i], 0.7, 0.7);
      }
      REQUIRE(ex.value(t1).size() == static_cast<size_t>(chains));
      CHECK(close(ex.value(t1)[c], e1, 1e-13));
      CHECK(close(ex.value(t2)[c], e2, 1e-13));
      CHECK(close(ex.value(t3)[c], e3, 1e-13));
      // plus the log Jacobian of the lower-bounded sd, z itself
      CHECK(close(lp[c], e1 + e2 + e3 + z[n + 1], 1e-13));
    }
    check_gradient(p, chains, state, 1e-7, 1e-9);
  }
}

TEST_CASE("density op: a program without parameters", "[ops][density][data]") {
  // Nothing depends on the state: n_free = 0, and every chain gets the same value.
  Program p;
  const int y = p.add(data_node({0.1, 0.2}));
  const int zero = p.add(data_node({0}));
  const int one = p.add(data_node({1}));
  add_term(p, density_node(Family::normal, {y, zero, one}));
  p.n_free = 0;
  lockstep::plan(p);
  const double expected = -std::log(2 * M_PI) - 0.5 * (0.01 + 0.04);
  for (Backend b : {Backend::cpu, Backend::emulated}) {
    Executor<double> ex(p, 3, b);
    std::vector<double> lp(3, 99.0);
    ex.log_density(nullptr, lp.data(), nullptr);
    for (long c = 0; c < 3; ++c) CHECK(close(lp[c], expected, 1e-14));
  }
}

TEST_CASE("density op: the gradient is that of the log density summed over p.terms",
          "[ops][density][terms]") {
  // A density node outside p.terms is not part of the log density, but the
  // executor fuses every density's partials into the gradient: validate()
  // refuses such a program, so the sampler never follows the gradient of a
  // different function than it evaluates. Should it ever accept one, the
  // gradient must still be that of the terms alone.
  Program p;
  const int x = p.add(param_node(2, 0));
  const int zero = p.add(data_node({0}));
  const int one = p.add(data_node({1}));
  add_term(p, density_node(Family::normal, {x, zero, one}));
  const int other = p.add(density_node(Family::normal, {x, one, one}));  // not a term
  (void)other;
  p.n_free = 2;
  bool accepted = true;
  try {
    lockstep::plan(p);
  } catch (const std::invalid_argument&) {
    accepted = false;
  }
  CHECK_FALSE(accepted);
  if (accepted) {
    const std::vector<double> state = {0.3, -0.4, 1.2, 0.5};
    const Eval e = evaluate(p, 2, state);
    for (size_t k = 0; k < state.size(); ++k) {
      INFO("coordinate " << k);
      CHECK(close(e.grad[k], -state[k], 1e-14, 1e-15));  // d/dx of -x^2/2 only
    }
    check_gradient(p, 2, state, 1e-8, 1e-10);
  }
}

TEST_CASE("density op: a term listed twice counts twice in the gradient too",
          "[ops][density][terms]") {
  // The fused partials reach the gradient once per density node, so validate()
  // refuses a term listed twice; should it ever accept one, value and gradient
  // must agree.
  Program p;
  const int x = p.add(param_node(2, 0));
  const int zero = p.add(data_node({0}));
  const int one = p.add(data_node({1}));
  const int t = add_term(p, density_node(Family::normal, {x, zero, one}));
  p.terms.push_back(t);
  p.n_free = 2;
  bool accepted = true;
  try {
    lockstep::plan(p);
  } catch (const std::invalid_argument&) {
    accepted = false;
  }
  CHECK_FALSE(accepted);
  if (accepted) {
    const std::vector<double> state = {0.3, -0.4};
    const Eval e = evaluate(p, 1, state);
    CHECK(close(e.lp[0], 2 * (-std::log(2 * M_PI) / 2 * 2 - 0.5 * (0.09 + 0.16)), 1e-14));
    check_gradient(p, 1, state, 1e-8, 1e-10);
  }
}

TEST_CASE("rowdot_rows: y[r] = p[r] + sum_j a[r, j] (b[index[r], j] + v[j]), value and gradient",
          "[ops][rowdot_rows]") {
  std::mt19937 rng(311);
  const long K = 3, G = 4;
  const std::vector<long> index = {2, 0, 0, 2, 3, 3, 3, 1, 2};  // runs, repeats, all groups
  const long N = static_cast<long>(index.size());
  // extras: 0 none; 1 shared coefficients v; 2 v and a per-row offset p;
  // 3 v and a scalar offset; 4 v as data (no chain) and a scalar offset
  for (long chains : {1L, 3L})
    for (bool a_param : {false, true})
      for (int extras = 0; extras <= 4; ++extras) {
        INFO("chains " << chains << ", a is a " << (a_param ? "parameter" : "data") << ", extras "
                       << extras);
        Program p;
        long off = 0;
        auto param = [&](long rows, long cols) {
          const int id = p.add(param_node(rows * cols, off, Transform::none, 0, 0, {rows, cols}));
          off += rows * cols;
          return id;
        };
        const std::vector<double> a_values = uniform_vector(rng, N * K, -1, 1);
        const std::vector<double> v_values = uniform_vector(rng, K, -1, 1);
        const int a = a_param ? param(N, K) : p.add(data_node(a_values, {N, K}));
        const long a_off = 0, b_off = a_param ? N * K : 0;
        const int b = param(G, K);
        const long v_off = off;
        const int v = extras == 0 ? -1 : extras == 4 ? p.add(data_node(v_values, {K, 1})) : param(K, 1);
        const long p_off = off;
        const int q = extras == 2 ? param(N, 1) : extras >= 3 ? param(1, 1) : -1;
        p.n_free = off;
        Node n;
        n.op = Op::rowdot_rows;
        n.inputs = {a, b};
        if (v >= 0) n.inputs.push_back(v);
        if (q >= 0) n.inputs.push_back(q);
        n.dim = {N, 1};
        n.size = N;
        n.index = index;
        const int y = p.add(n);
        add_normal_objective(p, y, rng);
        lockstep::plan(p);
        const std::vector<double> state = uniform_vector(rng, chains * p.n_free, -1, 1);
        Executor<double> ex(p, chains, lockstep::ExecOptions{Backend::cpu, {}, 1, 1, false});
        std::vector<double> lp(chains), grad(chains * p.n_free);
        ex.log_density(state.data(), lp.data(), grad.data());
        for (long c = 0; c < chains; ++c) {
          const double* z = state.data() + c * p.n_free;
          for (long r = 0; r < N; ++r) {
            double expected = extras == 2 ? z[p_off + r] : extras >= 3 ? z[p_off] : 0;
            for (long j = 0; j < K; ++j) {
              const double av = a_param ? z[a_off + r + j * N] : a_values[r + j * N];
              double w = z[b_off + index[r] + j * G];
              if (extras == 4) w += v_values[j];
              else if (extras >= 1) w += z[v_off + j];
              expected += av * w;
            }
            CHECK(close(node_value(ex, p, y, c, r), expected, 1e-13, 1e-14));
          }
        }
        check_gradient(p, chains, state, 1e-7, 1e-9);
        check_gradient(p, chains, state, 1e-7, 1e-9, 1e-4, Backend::emulated);
      }
}

TEST_CASE("rowdot_rows: the wrong number or shape of inputs is refused", "[ops][rowdot_rows][ir]") {
  Program p;
  const int a = p.add(data_node(std::vector<double>(6, 1.0), {3, 2}));
  const int b = p.add(param_node(4, 0, Transform::none, 0, 0, {2, 2}));
  const int v3 = p.add(param_node(3, 4, Transform::none, 0, 0, {3, 1}));
  const int q2 = p.add(param_node(2, 7, Transform::none, 0, 0, {2, 1}));
  p.n_free = 9;
  auto rowdot = [&](std::vector<int> inputs) {
    Program copy = p;
    Node n;
    n.op = Op::rowdot_rows;
    n.inputs = inputs;
    n.dim = {3, 1};
    n.size = 3;
    n.index = {0, 1, 1};
    copy.add(n);
    return copy;
  };
  CHECK_NOTHROW(lockstep::validate(rowdot({a, b})));
  CHECK_THROWS_AS(lockstep::validate(rowdot({a})), std::invalid_argument);
  CHECK_THROWS_AS(lockstep::validate(rowdot({a, b, v3})), std::invalid_argument);     // v: 3 != 2 columns
  CHECK_THROWS_AS(lockstep::validate(rowdot({a, b, q2, q2})), std::invalid_argument); // p: 2 rows != 3
  CHECK_THROWS_AS(lockstep::validate(rowdot({a, b, q2, q2, q2})), std::invalid_argument);
}
