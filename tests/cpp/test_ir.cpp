// The IR (ir.hpp): validate() refuses malformed programs, plan() marks the
// chain dimension, and the name tables of ops.def and distributions.def round
// trip.
#include <catch2/catch.hpp>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "lockstep/ir.hpp"

using namespace lstest;

namespace {

// A small valid program: x (3) ~ normal(mu, sd) with y (3) data, and a sum.
//   0 x param(3)   1 mu param(1)   2 sd param(1, lower 0)   3 y data(3)
//   4 add(x, y)    5 sum(4)         6 normal(x, mu, sd)      7 normal(5, mu, sd)
Program valid_program() {
  Program p;
  const int x = p.add(param_node(3, 0));
  const int mu = p.add(param_node(1, 3));
  const int sd = p.add(param_node(1, 4, Transform::lower, 0));
  const int y = p.add(data_node({1, 2, 3}));
  const int xy = p.add(binary_node(Op::add, x, y, p));
  const int s = p.add(sum_node(xy));
  add_term(p, density_node(Family::normal, {x, mu, sd}));
  add_term(p, density_node(Family::normal, {s, mu, sd}));
  p.n_free = 5;
  return p;
}

void check_rejected(const std::string& what, const std::function<void(Program&)>& spoil) {
  Program p = valid_program();
  REQUIRE_NOTHROW(lockstep::validate(p));
  spoil(p);
  INFO(what);
  CHECK_THROWS_AS(lockstep::validate(p), std::invalid_argument);
  CHECK_THROWS_AS(lockstep::plan(p), std::invalid_argument);
}

}  // namespace

TEST_CASE("validate accepts a well-formed program", "[ir][validate]") {
  Program p = valid_program();
  CHECK_NOTHROW(lockstep::validate(p));
  CHECK_NOTHROW(lockstep::plan(p));
}

TEST_CASE("validate rejects wrong arity", "[ir][validate]") {
  check_rejected("binary op with one input", [](Program& p) { p.nodes[4].inputs = {0}; });
  check_rejected("binary op with three inputs", [](Program& p) { p.nodes[4].inputs = {0, 3, 3}; });
  check_rejected("sum with two inputs", [](Program& p) { p.nodes[5].inputs = {4, 4}; });
  check_rejected("data with an input", [](Program& p) { p.nodes[3].inputs = {0}; });
  check_rejected("param with an input", [](Program& p) { p.nodes[1].inputs = {0}; });
  check_rejected("normal without its sd", [](Program& p) { p.nodes[6].inputs = {0, 1}; });
  check_rejected("normal with an extra parameter", [](Program& p) { p.nodes[6].inputs = {0, 1, 2, 2}; });
  check_rejected("exponential given two parameters",
                 [](Program& p) { p.nodes[6].family = Family::exponential; });
  check_rejected("unary op without input", [](Program& p) {
    Node n = unary_node(Op::exp, 0, p);
    n.inputs.clear();
    p.add(n);
  });
}

TEST_CASE("validate rejects inputs that do not come earlier", "[ir][validate]") {
  check_rejected("input from a later node", [](Program& p) { p.nodes[4].inputs = {0, 5}; });
  check_rejected("a node reading itself", [](Program& p) { p.nodes[4].inputs = {4, 3}; });
  check_rejected("negative input id", [](Program& p) { p.nodes[4].inputs = {-1, 3}; });
  check_rejected("input id past the end", [](Program& p) { p.nodes[4].inputs = {0, 99}; });
  check_rejected("a density term as an input", [](Program& p) {
    Node n = unary_node(Op::exp, 6, p);
    p.add(n);
  });
}

TEST_CASE("validate rejects size and shape mismatches", "[ir][validate]") {
  check_rejected("size not the product of dim", [](Program& p) { p.nodes[0].size = 4; });
  check_rejected("a one-dimensional shape", [](Program& p) {
    p.nodes[3].dim = {3};
  });
  check_rejected("a negative dimension", [](Program& p) {
    p.nodes[3].dim = {-3, -1};
  });
  check_rejected("data with too few values", [](Program& p) { p.nodes[3].values = {1, 2}; });
  check_rejected("unary output of another size", [](Program& p) {
    Node n = unary_node(Op::log, 3, p);
    n.dim = {2, 1};
    n.size = 2;
    p.add(n);
  });
  check_rejected("sum with more than one element", [](Program& p) {
    p.nodes[5].dim = {2, 1};
    p.nodes[5].size = 2;
  });
  check_rejected("density with more than one element", [](Program& p) {
    p.nodes[6].dim = {3, 1};
    p.nodes[6].size = 3;
  });
  check_rejected("density parameter neither scalar nor the target's size", [](Program& p) {
    // mean of size 2 for a target of size 3
    const int m = p.add(data_node({0, 1}));
    p.add(density_node(Family::normal, {0, m, 2}));
  });
}

TEST_CASE("validate rejects bad broadcasting", "[ir][validate]") {
  check_rejected("operands of sizes 3 and 2", [](Program& p) {
    const int d = p.add(data_node({1, 2}));
    Node n = binary_node(Op::mul, 0, d, p);
    p.add(n);
  });
  check_rejected("output smaller than the broadcast size", [](Program& p) {
    Node n = binary_node(Op::mul, 0, 1, p);
    n.dim = {1, 1};
    n.size = 1;
    p.add(n);
  });
  check_rejected("output larger than both operands", [](Program& p) {
    Node n = binary_node(Op::mul, 1, 2, p);
    n.dim = {3, 1};
    n.size = 3;
    p.add(n);
  });
}

TEST_CASE("validate rejects malformed matrix products", "[ir][validate]") {
  auto with_matrices = [](Program& p, long ar, long ac, long br, long bc) {
    const int a = p.add(data_node(std::vector<double>(ar * ac, 1.0), {ar, ac}));
    const int b = p.add(data_node(std::vector<double>(br * bc, 1.0), {br, bc}));
    return std::make_pair(a, b);
  };
  check_rejected("non-conformable operands", [&](Program& p) {
    const auto ab = with_matrices(p, 2, 3, 2, 2);
    Node n;
    n.op = Op::matmul;
    n.inputs = {ab.first, ab.second};
    n.dim = {2, 2};
    n.size = 4;
    p.add(n);
  });
  check_rejected("wrong output shape", [&](Program& p) {
    const auto ab = with_matrices(p, 2, 3, 3, 2);
    Node n;
    n.op = Op::matmul;
    n.inputs = {ab.first, ab.second};
    n.dim = {2, 3};
    n.size = 6;
    p.add(n);
  });
  check_rejected("three-dimensional operand", [&](Program& p) {
    const int a = p.add(data_node(std::vector<double>(8, 1.0), {2, 2, 2}));
    const int b = p.add(data_node(std::vector<double>(2, 1.0), {2, 1}));
    Node n;
    n.op = Op::matmul;
    n.inputs = {a, b};
    n.dim = {2, 1};
    n.size = 2;
    p.add(n);
  });
}

TEST_CASE("validate rejects gather indices out of range", "[ir][validate]") {
  check_rejected("index equal to the input size", [](Program& p) { p.add(gather_node(0, {0, 3})); });
  check_rejected("negative index", [](Program& p) { p.add(gather_node(0, {-1})); });
  check_rejected("fewer indices than elements", [](Program& p) {
    Node n = gather_node(0, {0, 1});
    n.dim = {3, 1};
    n.size = 3;
    p.add(n);
  });
  Program ok = valid_program();
  ok.add(gather_node(0, {2, 2, 0, 1}));
  CHECK_NOTHROW(lockstep::validate(ok));
}

TEST_CASE("validate rejects parameter slices outside the free state", "[ir][validate]") {
  check_rejected("slice past the end", [](Program& p) { p.nodes[0].offset = 3; });
  check_rejected("negative offset", [](Program& p) { p.nodes[1].offset = -1; });
  check_rejected("n_free too small", [](Program& p) { p.n_free = 4; });
  check_rejected("negative n_free", [](Program& p) { p.n_free = -1; });
}

TEST_CASE("validate rejects an interval with lower >= upper", "[ir][validate]") {
  check_rejected("lower > upper", [](Program& p) {
    p.nodes[2].transform = Transform::interval;
    p.nodes[2].lower = 2;
    p.nodes[2].upper = 1;
  });
  check_rejected("lower == upper", [](Program& p) {
    p.nodes[2].transform = Transform::interval;
    p.nodes[2].lower = 1;
    p.nodes[2].upper = 1;
  });
  Program ok = valid_program();
  ok.nodes[2].transform = Transform::interval;
  ok.nodes[2].lower = 0;
  ok.nodes[2].upper = 1;
  CHECK_NOTHROW(lockstep::validate(ok));
}

TEST_CASE("validate rejects bad truncation", "[ir][validate]") {
  auto bernoulli_on_data = [](Program& p, double lo, double hi) {
    const int y = p.add(data_node({0, 1, 1}));
    const int q = p.add(param_node(1, 4, Transform::interval, 0, 1));
    p.terms.push_back(p.add(density_node(Family::bernoulli, {y, q}, lo, hi)));
  };
  check_rejected("truncated bernoulli", [&](Program& p) { bernoulli_on_data(p, 0, inf); });
  check_rejected("bernoulli truncated above", [&](Program& p) { bernoulli_on_data(p, -inf, 1); });
  check_rejected("truncation lower > upper", [](Program& p) {
    p.nodes[6].trunc_lower = 2;
    p.nodes[6].trunc_upper = 1;
  });
  check_rejected("truncation lower == upper", [](Program& p) {
    p.nodes[6].trunc_lower = 0;
    p.nodes[6].trunc_upper = 0;
  });
  Program ok = valid_program();
  bernoulli_on_data(ok, -inf, inf);
  CHECK_NOTHROW(lockstep::validate(ok));
}

TEST_CASE("validate rejects terms that are not density nodes", "[ir][validate]") {
  check_rejected("a term pointing at a sum", [](Program& p) { p.terms.push_back(5); });
  check_rejected("a term pointing at a parameter", [](Program& p) { p.terms = {0}; });
  check_rejected("a term past the end", [](Program& p) { p.terms.push_back(8); });
  check_rejected("a negative term", [](Program& p) { p.terms.push_back(-1); });
}

TEST_CASE("validate's message names the offending node", "[ir][validate]") {
  Program p = valid_program();
  p.nodes[4].inputs = {0, 5};
  try {
    lockstep::validate(p);
    FAIL("validate accepted a forward reference");
  } catch (const std::invalid_argument& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("node 4") != std::string::npos);
    CHECK(msg.find("add") != std::string::npos);
  }
}

TEST_CASE("plan marks the chain dimension on parameter-dependent nodes only", "[ir][plan]") {
  Program p;
  const int d1 = p.add(data_node({1, 2, 3}));                  // 0 data
  const int d2 = p.add(data_node({0.5}));                      // 1 data
  const int dd = p.add(binary_node(Op::mul, d1, d2, p));       // 2 data only
  const int de = p.add(unary_node(Op::exp, dd, p));            // 3 data only
  const int ds = p.add(sum_node(de));                          // 4 data only
  const int dg = p.add(gather_node(d1, {2, 0}));               // 5 data only
  const int x = p.add(param_node(3, 0));                       // 6 param
  const int xd = p.add(binary_node(Op::add, de, x, p));        // 7 depends on x
  const int xs = p.add(sum_node(xd));                          // 8
  const int xg = p.add(gather_node(xd, {1}));                  // 9
  const int A = p.add(data_node({1, 2, 3, 4, 5, 6}, {2, 3}));  // 10 data
  const int Ax = p.add(matmul_node(A, x, p));                  // 11 depends on x
  const int AA = p.add(matmul_node(A, p.add(data_node({1, 1, 1}, {3, 1})), p));  // data only
  const int zero = p.add(data_node({0}));
  const int one = p.add(data_node({1}));
  const int t1 = add_term(p, density_node(Family::normal, {x, zero, one}));
  const int t2 = add_term(p, density_node(Family::normal, {d1, zero, one}));  // data only
  p.n_free = 3;
  lockstep::plan(p);
  for (int id : {d1, d2, dd, de, ds, dg, A, AA, zero, one}) {
    INFO("node " << id);
    CHECK_FALSE(p.nodes[id].chain);
  }
  for (int id : {x, xd, xs, xg, Ax, t1, t2}) {
    INFO("node " << id);
    CHECK(p.nodes[id].chain);
  }
  // Only d1's likelihood can be tiled: dd, de, ds and dg reach no term (dead),
  // so d1's one live reader is t2.
  for (size_t id = 0; id < p.nodes.size(); ++id)
    if (static_cast<int>(id) != d1 && static_cast<int>(id) != t2) CHECK(p.nodes[id].extent == -1);
  for (int id : {dd, de, ds, dg, xs, xg, Ax, AA}) CHECK_FALSE(p.nodes[id].live);
  for (int id : {d1, x, t1, t2, zero, one}) CHECK(p.nodes[id].live);
  // plan is idempotent
  lockstep::plan(p);
  CHECK(p.nodes[xg].chain);
  CHECK_FALSE(p.nodes[dg].chain);
}

TEST_CASE("op names round trip through op_from_name and unknown names throw", "[ir][names]") {
  int count = 0;
#define LS_OP(name, arity, family, alignment)                                       \
  CHECK(lockstep::op_from_name(#name) == Op::name);                      \
  CHECK(std::string(lockstep::op_name(Op::name)) == #name);              \
  CHECK(lockstep::op_arity(Op::name) == arity);                          \
  CHECK(lockstep::op_family(Op::name) == lockstep::OpFamily::family);    \
  ++count;
#include "lockstep/ops.def"
#undef LS_OP
  CHECK(count == lockstep::op_count);
  CHECK_THROWS_AS(lockstep::op_from_name("matmult"), std::invalid_argument);
  CHECK_THROWS_AS(lockstep::op_from_name(""), std::invalid_argument);
  CHECK_THROWS_AS(lockstep::op_from_name("EXP"), std::invalid_argument);
}

TEST_CASE("family names round trip through family_from_name and unknown names throw",
          "[ir][names]") {
#define LS_DIST(name, n_params, continuous, tile)                                  \
  CHECK(lockstep::family_from_name(#name) == Family::name);                  \
  CHECK(std::string(lockstep::family_name(Family::name)) == #name);          \
  CHECK(lockstep::family_n_params(Family::name) == n_params);                \
  CHECK(lockstep::family_continuous(Family::name) == continuous);
#include "lockstep/distributions.def"
#undef LS_DIST
  CHECK_THROWS_AS(lockstep::family_from_name("gaussian"), std::invalid_argument);
  CHECK_THROWS_AS(lockstep::family_from_name(""), std::invalid_argument);
  CHECK_FALSE(lockstep::family_continuous(Family::bernoulli));
  CHECK(lockstep::family_n_params(Family::student) == 3);
}
