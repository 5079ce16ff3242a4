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
#include "lockstep/math/unary.hpp"
#include "elementwise_ops.hpp"

using namespace lstest;
using lockstep::OpFamily;

namespace {

// Ops with a TEST_CASE of their own: below, the shape ops in
// test_ops_shapes.cpp (which also covers the binary ops' row and column
// vector broadcasting), the linalg ops in test_linalg.cpp and logpdf in
// test_logpdf.cpp, the grouped reductions in test_segment.cpp.
const std::set<std::string> dedicated_ops = {
    "data",   "param",       "sum",         "matmul", "gather", "density", "rowsum",
    "colsum", "transpose",   "gather_rows", "rowdot_rows",      "max",     "min",
    "prod",   "cumsum",      "cumprod",     "cummax", "cummin", "concat", "chol",
    "chol2inv", "solve",
    "logpdf",
    "backsolve", "forwardsolve", "eigen",
    "segment_sum", "segment_max", "segment_min", "segment_prod"};

// The value of node `id` for chain c, element i, whatever its chain layout.
double node_value(const Executor<double>& ex, const Program& p, int id, long c, long i) {
  const Node& n = p.nodes[id];
  return ex.value(id)[(n.chain ? c * n.size : 0) + i];
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
    for (Backend backend : {Backend::cpu, Backend::emulated})
    for (long chains : {1L, 3L}) {
      INFO("op " << o.name << ", chains " << chains << ", "
                 << (backend == Backend::cpu ? "cpu" : "emulated"));
      Program p;
      const int x = p.add(param_node(n, 0));
      const int y = p.add(unary_node(o.op, x, p));
      p.n_free = n;
      add_normal_objective(p, y, rng);
      lockstep::plan(p);
      REQUIRE(p.nodes[y].chain);
      const std::vector<double> state = unary_domain(o.name).draw(rng, chains * n);

      Executor<double> ex(p, chains, backend);
      std::vector<double> lp(chains), grad(chains * n);
      ex.log_density(state.data(), lp.data(), grad.data());
      REQUIRE(ex.value(y).size() == static_cast<size_t>(chains * n));
      for (long c = 0; c < chains; ++c)
        for (long i = 0; i < n; ++i)
          CHECK(close(ex.value(y)[c * n + i], ref.value(state[c * n + i]), ref.value_tol,
                      ref.value_abs));
      check_gradient(p, chains, state, ref.grad_tol, 1e-9, 1e-4, backend);
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
    const std::vector<double> dv = unary_domain(o.name).draw(rng, n);
    for (Backend backend : {Backend::cpu, Backend::emulated})
    for (long chains : {1L, 3L}) {
      INFO("op " << o.name << ", chains " << chains << ", "
                 << (backend == Backend::cpu ? "cpu" : "emulated"));
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
      const std::vector<double> state = unary_domain(o.name).draw(rng, chains);
      Executor<double> ex(p, chains, backend);
      std::vector<double> lp(chains), grad(chains);
      ex.log_density(state.data(), lp.data(), grad.data());
      REQUIRE(ex.value(yd).size() == static_cast<size_t>(n));
      for (long i = 0; i < n; ++i)
        CHECK(close(ex.value(yd)[i], ref.value(dv[i]), ref.value_tol, ref.value_abs));
      for (long c = 0; c < chains; ++c)
        for (long i = 0; i < n; ++i)
          CHECK(close(node_value(ex, p, z, c, i), ref.value(dv[i]) * ref.value(state[c]),
                      2 * ref.value_tol, ref.value_abs));
      check_gradient(p, chains, state, ref.grad_tol, 1e-9, 1e-4, backend);
    }
  }
}

TEST_CASE("unary ops: R's values at the steps, poles and special points", "[ops][unary][special]") {
  using lockstep::Unary;
  // round half to even, as R's round(); sign(0) is 0; steps and abs have
  // derivative 0 at 0 (and everywhere for the steps)
  const double halves[] = {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5};
  const double evens[] = {-2, -2, -0.0, 0, 2, 2};
  for (int k = 0; k < 6; ++k) CHECK(Unary<Op::round>::value(halves[k]) == evens[k]);
  CHECK(Unary<Op::round>::value(2.4999999) == 2);
  CHECK(Unary<Op::sign>::value(0.0) == 0);
  CHECK(Unary<Op::sign>::value(-3.0) == -1);
  CHECK(std::isnan(Unary<Op::sign>::value(std::nan(""))));
  CHECK(Unary<Op::abs>::deriv(0.0, 0.0) == 0);
  CHECK(Unary<Op::abs>::deriv(-2.0, 2.0) == -1);
  CHECK(Unary<Op::floor>::deriv(1.0, 1.0) == 0);
  CHECK(Unary<Op::trunc>::value(-1.7) == -1);
  CHECK(Unary<Op::ceiling>::value(-1.7) == -1);
  // cospi, sinpi, tanpi exact at integers and halves (R's values)
  CHECK(Unary<Op::sinpi>::value(1.0) == 0);
  CHECK(Unary<Op::sinpi>::value(-0.5) == -1);
  CHECK(Unary<Op::sinpi>::value(2.5) == 1);
  CHECK(Unary<Op::cospi>::value(0.5) == 0);
  CHECK(Unary<Op::cospi>::value(-3.0) == -1);
  CHECK(Unary<Op::tanpi>::value(0.25) == 1);
  CHECK(Unary<Op::tanpi>::value(-1.25) == -1);
  CHECK(std::isnan(Unary<Op::tanpi>::value(0.5)));
  CHECK(std::isnan(Unary<Op::tanpi>::value(1.5)));
  // the polygamma functions below 0, against R (digamma, trigamma, psigamma(x, 2))
  const double x[] = {-0.5, -1.3, -2.7, 0.25};
  const double dig[] = {3.6489973978577089e-02, 2.8825405488661691e+00, -1.1153471291406851e+00,
                        -4.2274535333762655e+00};
  const double tri[] = {8.9348022005446790, 14.5368762441370851, 14.7693758451322914,
                        17.1973291545071092};
  const double tetra[] = {-0.82879664423431620, 68.54941347116219674, -68.93293902326355749,
                          -129.32773993753693276};
  const double lgam[] = {1.265512123484645368, 1.202475786390111212, -0.071407085315645769,
                         1.288022524698077431};
  for (int k = 0; k < 4; ++k) {
    INFO("x = " << x[k]);
    CHECK(close(Unary<Op::lgamma>::value(x[k]), lgam[k], 1e-14));
    CHECK(close(Unary<Op::lgamma>::deriv(x[k], 0.0), dig[k], 1e-13));
    CHECK(close(Unary<Op::digamma>::value(x[k]), dig[k], 1e-13));
    CHECK(close(Unary<Op::digamma>::deriv(x[k], 0.0), tri[k], 1e-13));
    CHECK(close(Unary<Op::trigamma>::value(x[k]), tri[k], 1e-13));
    CHECK(close(Unary<Op::trigamma>::deriv(x[k], 0.0), tetra[k], 1e-12));
  }
  // at the root of digamma, and far out where the series alone is used
  CHECK(std::fabs(Unary<Op::digamma>::value(1.4616321449683622)) < 1e-14);
  CHECK(close(Unary<Op::digamma>::value(1e6), ref_digamma(1e6), 1e-15));
  CHECK(close(Unary<Op::trigamma>::value(1e6), ref_trigamma(1e6), 1e-15));
  // poles, as R: lgamma Inf, digamma NaN, trigamma Inf
  for (double pole : {0.0, -1.0, -4.0}) {
    CHECK(Unary<Op::lgamma>::value(pole) == HUGE_VAL);
    CHECK(std::isnan(Unary<Op::digamma>::value(pole)));
    CHECK(Unary<Op::trigamma>::value(pole) == HUGE_VAL);
  }
  // the links in their tails: no overflow, no loss of the small tail
  CHECK(close(Unary<Op::iprobit>::value(-30.0), 4.906713927148187e-198, 1e-13));
  CHECK(Unary<Op::iprobit>::value(40.0) == 1);
  CHECK(close(Unary<Op::icloglog>::value(-40.0), std::exp(-40.0), 1e-14));
  CHECK(Unary<Op::icloglog>::deriv(800.0, 1.0) == 0);
  CHECK(close(Unary<Op::icauchit>::value(-1e10), 1 / (M_PI * 1e10), 1e-14));
  CHECK(close(Unary<Op::icauchit>::value(3.0), 0.8975836176504333, 1e-15));
  CHECK(Unary<Op::log1pe>::value(800.0) == 800.0);
  CHECK(close(Unary<Op::log1pe>::value(-40.0), std::exp(-40.0), 1e-14));
  CHECK(close(Unary<Op::log1pe>::deriv(-800.0, 0.0), 0.0, 0, 1e-300));
  // outside a domain: NaN, as in R
  CHECK(std::isnan(Unary<Op::acos>::value(2.0)));
  CHECK(std::isnan(Unary<Op::acosh>::value(0.5)));
  CHECK(std::isnan(Unary<Op::log10>::value(-1.0)));
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
    const BinaryRef& domain = binary_domain(o.name);
    for (const BinaryCase& bc : binary_cases) {
      for (Backend backend : {Backend::cpu, Backend::emulated})
      for (long chains : {1L, 3L}) {
        INFO("op " << o.name << ", " << bc.label << ", chains " << chains << ", "
                   << (backend == Backend::cpu ? "cpu" : "emulated"));
        Program p;
        long n_free = 0;
        std::vector<double> state_a, state_b;  // per operand, [chains, size]
        std::vector<double> data_a, data_b;
        // each operand from its domain (e.g. b away from zero, a denominator)
        auto make = [&](const OperandSpec& s, const Domain& domain, std::vector<double>& st,
                        std::vector<double>& dv) {
          if (s.param) {
            const int id = p.add(param_node(s.size, n_free));
            n_free += s.size;
            st = domain.draw(rng, chains * s.size);
            return id;
          }
          dv = domain.draw(rng, s.size);
          return p.add(data_node(dv));
        };
        const int a = make(bc.a, domain.a, state_a, data_a);
        const int b = bc.same_node ? a : make(bc.b, domain.b, state_b, data_b);
        if (bc.same_node) {
          // within both domains, e.g. away from zero for div(x, x)
          state_a = domain.same.draw(rng, chains * bc.a.size);
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

        Executor<double> ex(p, chains, backend);
        std::vector<double> lp(chains), grad(chains * n_free);
        ex.log_density(state.data(), lp.data(), grad.data());
        REQUIRE(ex.value(y).size() == static_cast<size_t>((p.nodes[y].chain ? chains : 1) * n));
        for (long c = 0; c < chains; ++c) {
          for (long i = 0; i < n; ++i) {
            const double av = operand_value(bc.a, state_a, data_a, c, i);
            const double bv = bc.same_node ? av : operand_value(bc.b, state_b, data_b, c, i);
            CHECK(close(node_value(ex, p, y, c, i), ref.value(av, bv), ref.value_tol,
                        ref.value_abs));
          }
        }
        check_gradient(p, chains, state, ref.grad_tol, 1e-9, 1e-4, backend);
      }
    }
  }
}

TEST_CASE("binary ops: R's values of ^, %% and %/% at special points", "[ops][binary][special]") {
  using lockstep::Binary;
  auto pow_ = [](double a, double b) { return Binary<Op::pow>::value(a, b); };
  auto mod = [](double a, double b) { return Binary<Op::mod>::value(a, b); };
  auto idiv = [](double a, double b) { return Binary<Op::idiv>::value(a, b); };
  const double inf = HUGE_VAL;
  // R: (-8)^3, (-8)^(1/3), 0^-1, 0^0, NaN^0, 1^NaN, (-2)^-2, 2^0.5
  CHECK(pow_(-8, 3) == -512);
  CHECK(std::isnan(pow_(-8, 1.0 / 3)));
  CHECK(pow_(0, -1) == inf);
  CHECK(pow_(0, 0) == 1);
  CHECK(pow_(std::nan(""), 0) == 1);
  CHECK(pow_(1, std::nan("")) == 1);
  CHECK(pow_(-2, -2) == 0.25);
  CHECK(pow_(2, 0.5) == 1.414213562373095145);
  // R (R_pow), where C's pow differs: (-0.5)^Inf, (-1)^Inf, (-2)^-Inf, (-Inf)^Inf,
  // (-Inf)^0.5 are NaN; (-Inf)^3 = -Inf, (-Inf)^-2 = 0, 0.5^Inf = 0, 2^-Inf = 0
  CHECK(std::isnan(pow_(-0.5, inf)));
  CHECK(std::isnan(pow_(-1, inf)));
  CHECK(std::isnan(pow_(-2, -inf)));
  CHECK(std::isnan(pow_(-inf, inf)));
  CHECK(std::isnan(pow_(-inf, 0.5)));
  CHECK(pow_(-inf, 3) == -inf);
  CHECK(pow_(-inf, -2) == 0);
  CHECK(pow_(0.5, inf) == 0);
  CHECK(pow_(2, -inf) == 0);
  CHECK(std::isnan(pow_(std::nan(""), inf)));
  // R: 5 %% -3, -5 %% 3, 5.5 %% 0, 5 %% Inf, -5 %% Inf, 0.3 %% 0.1, 1 %% 0.1, 1e20 %% 7
  CHECK(mod(5, -3) == -1);
  CHECK(mod(-5, 3) == 1);
  CHECK(std::isnan(mod(5.5, 0)));
  CHECK(mod(5, inf) == 5);
  CHECK(mod(-5, inf) == inf);
  CHECK(mod(0.3, 0.1) == 0.099999999999999978);
  CHECK(mod(1, 0.1) == 0.09999999999999995);
  CHECK(mod(1e20, 7) == 2);
  // R: -5 %/% 3, 5 %/% 0, -5 %/% 0, 0 %/% 0, 5 %/% Inf, -5 %/% Inf, 0.3 %/% 0.1, 1 %/% 0.1
  CHECK(idiv(-5, 3) == -2);
  CHECK(idiv(5, 0) == inf);
  CHECK(idiv(-5, 0) == -inf);
  CHECK(std::isnan(idiv(0, 0)));
  CHECK(idiv(5, inf) == 0);
  CHECK(idiv(-5, inf) == -1);
  CHECK(idiv(0.3, 0.1) == 2);
  CHECK(idiv(1, 0.1) == 9);
  // a == b * (a %/% b) + a %% b
  std::mt19937 rng(120);
  const std::vector<double> xs = uniform_vector(rng, 200, -50, 50);
  const std::vector<double> ds = signed_vector(rng, 200, 0.01, 7);
  for (int k = 0; k < 200; ++k) {
    INFO(xs[k] << " %% " << ds[k]);
    CHECK(mod(xs[k], ds[k]) == ref_mod(xs[k], ds[k]));
    CHECK(idiv(xs[k], ds[k]) == ref_idiv(xs[k], ds[k]));
    CHECK(close(ds[k] * idiv(xs[k], ds[k]) + mod(xs[k], ds[k]), xs[k], 1e-14, 1e-13));
  }
  // partials: ^ with respect to the exponent is 0 where the base is <= 0;
  // %% is 1 and -(a %/% b); %/% has none
  double da = 0, db = 0;
  Binary<Op::pow>::partials(-2.0, 3.0, -8.0, &da, &db);
  CHECK(da == 12);
  CHECK(db == 0);
  Binary<Op::pow>::partials(0.0, 2.0, 0.0, &da, &db);
  CHECK(da == 0);
  CHECK(db == 0);
  Binary<Op::pow>::partials(0.0, 1.0, 0.0, &da, &db);
  CHECK(da == 1);
  Binary<Op::mod>::partials(-5.0, 3.0, 1.0, &da, &db);
  CHECK(da == 1);
  CHECK(db == 2);
  Binary<Op::idiv>::partials(-5.0, 3.0, -2.0, &da, &db);
  CHECK(da == 0);
  CHECK(db == 0);
}

TEST_CASE("log_add_exp: far tails, infinities and NaN", "[ops][binary][special]") {
  using lockstep::Binary;
  using L = Binary<Op::log_add_exp>;
  const double inf = HUGE_VAL;
  // no overflow where exp() of an operand would, no loss where it underflows
  CHECK(L::value(800.0, 800.0) == 800 + std::log(2.0));
  CHECK(close(L::value(-800.0, -801.0), -800 + std::log1p(std::exp(-1.0)), 1e-15));
  CHECK(L::value(-1000.0, 5.0) == 5);
  CHECK(L::value(-inf, 2.5) == 2.5);
  CHECK(L::value(-inf, -inf) == -inf);
  CHECK(L::value(inf, -inf) == inf);
  CHECK(L::value(3.0, inf) == inf);
  CHECK(std::isnan(L::value(std::nan(""), -inf)));
  CHECK(std::isnan(L::value(inf, std::nan(""))));
  // partials: the softmax, split at an infinite value
  double da = 0, db = 0;
  L::partials(1.0, 1.0, L::value(1.0, 1.0), &da, &db);
  CHECK(close(da, 0.5, 1e-15));
  CHECK(close(db, 0.5, 1e-15));
  L::partials(-inf, 2.5, 2.5, &da, &db);
  CHECK(da == 0);
  CHECK(db == 1);
  L::partials(-inf, -inf, -inf, &da, &db);
  CHECK(da == 0.5);
  CHECK(db == 0.5);
  L::partials(inf, 7.0, inf, &da, &db);
  CHECK(da == 1);
  CHECK(db == 0);
  L::partials(-800.0, 10.0, L::value(-800.0, 10.0), &da, &db);
  CHECK(da == 0);
  CHECK(db == 1);
  // single precision: the same formula in float
  CHECK(close(L::value(30.0f, 29.0f), 30 + std::log1p(std::exp(-1.0)), 1e-6));
}

TEST_CASE("comparisons: ties, infinities and NaN, as R's", "[ops][binary][special]") {
  using lockstep::Binary;
  const double inf = HUGE_VAL, nan = std::nan("");
  const double xs[] = {-inf, -2.5, 0, 0.5, inf};
  for (double a : xs)
    for (double b : xs) {
      INFO(a << " vs " << b);
      CHECK(Binary<Op::greater>::value(a, b) == (a > b ? 1 : 0));
      CHECK(Binary<Op::greater_equal>::value(a, b) == (a >= b ? 1 : 0));
      CHECK(Binary<Op::equal>::value(a, b) == (a == b ? 1 : 0));
      CHECK(std::isnan(Binary<Op::greater>::value(a, nan)));
      CHECK(std::isnan(Binary<Op::equal>::value(nan, b)));
      CHECK(Binary<Op::equal>::value(float(a), float(b)) == (a == b ? 1.0f : 0.0f));
    }
  CHECK(std::isnan(Binary<Op::greater_equal>::value(nan, nan)));
}

TEST_CASE("pow: a negative base to integer powers, value and gradient", "[ops][binary][pow]") {
  std::mt19937 rng(121);
  for (Backend backend : {Backend::cpu, Backend::emulated})
    for (long chains : {1L, 3L}) {
      INFO("chains " << chains << ", " << (backend == Backend::cpu ? "cpu" : "emulated"));
      Program p;
      const long n = 4;
      const int x = p.add(param_node(n, 0));
      const std::vector<double> k = {2, 3, -1, -2};
      const int e = p.add(data_node(k));
      const int y = p.add(binary_node(Op::pow, x, e, p));
      p.n_free = n;
      add_normal_objective(p, y, rng);
      lockstep::plan(p);
      const std::vector<double> state = uniform_vector(rng, chains * n, -2, -0.5);
      Executor<double> ex(p, chains, backend);
      ex.forward(state.data());
      for (long c = 0; c < chains; ++c)
        for (long i = 0; i < n; ++i)
          CHECK(close(ex.value(y)[c * n + i], std::pow(state[c * n + i], k[i]), 1e-15));
      check_gradient(p, chains, state, 1e-7, 1e-9, 1e-4, backend);
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

TEST_CASE("rowdot_rows: y[r] = p[r] + sum_j a[r, j] (b[index[r], j] s[j] + v[j]), value and gradient",
          "[ops][rowdot_rows]") {
  std::mt19937 rng(311);
  const long K = 3, G = 4;
  // Runs, repeats, all groups; then runs of random lengths up to 85 rows, so
  // that the lanes path's ranges of 32 rows per lane split runs between lanes.
  std::vector<long> index = {2, 0, 0, 2, 3, 3, 3, 1, 2};
  while (index.size() < 85) {
    const long g = static_cast<long>(rng() % G), len = 1 + static_cast<long>(rng() % 12);
    for (long k = 0; k < len && index.size() < 85; ++k) index.push_back(g);
  }
  const long N = static_cast<long>(index.size());
  // extras: 0 none; 1 shared coefficients v; 2 v and a per-row offset p;
  // 3 v and a scalar offset; 4 v as data (no chain) and a scalar offset
  // scale: 0 none; 1 a row vector of parameters; 2 one parameter; 3 a row
  // vector of data
  for (long chains : {1L, 3L, 6L})  // 6: more than the forward's block of 4 chains
    for (bool a_param : {false, true})
      for (int scale = 0; scale <= 3; ++scale)
      for (int extras = 0; extras <= 4; ++extras) {
        if (scale > 0 && a_param && extras % 2 == 1) continue;  // enough forms, fewer runs
        INFO("chains " << chains << ", a is a " << (a_param ? "parameter" : "data") << ", scale "
                       << scale << ", extras " << extras);
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
        const std::vector<double> s_values = uniform_vector(rng, K, 0.5, 2);
        const long s_off = off;
        const int sc = scale == 1 ? param(1, K) : scale == 2 ? param(1, 1)
                     : scale == 3 ? p.add(data_node(s_values, {1, K})) : -1;
        const long v_off = off;
        const int v = extras == 0 ? -1 : extras == 4 ? p.add(data_node(v_values, {K, 1})) : param(K, 1);
        const long p_off = off;
        const int q = extras == 2 ? param(N, 1) : extras >= 3 ? param(1, 1) : -1;
        p.n_free = off;
        Node n;
        n.op = Op::rowdot_rows;
        n.inputs = {a, b};
        if (sc >= 0) n.inputs.push_back(sc);
        n.scaled = sc >= 0;
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
              if (scale == 1) w *= z[s_off + j];
              else if (scale == 2) w *= z[s_off];
              else if (scale == 3) w *= s_values[j];
              if (extras == 4) w += v_values[j];
              else if (extras >= 1) w += z[v_off + j];
              expected += av * w;
            }
            CHECK(close(node_value(ex, p, y, c, r), expected, 1e-13, 1e-14));
          }
        }
        check_gradient(p, chains, state, 1e-7, 1e-9);
        check_gradient(p, chains, state, 1e-7, 1e-9, 1e-4, Backend::emulated);
        // 8 lanes for 3 columns (two idle, a block of both kinds) and 2 lanes,
        // fewer than the columns: the backward's other two ways of sharing
        // columns between lanes.
        for (EmulatedGeometry g : {EmulatedGeometry{2, 4}, EmulatedGeometry{1, 2}}) {
          INFO(g.blocks << " blocks of " << g.lanes_per_block << " lanes");
          check_gradient(p, chains, state, 1e-7, 1e-9, 1e-4, Backend::emulated, g);
        }
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
  // scaled: the scale (input 2) is one value or a row vector of a's columns
  const int s2 = p.add(param_node(2, 0, Transform::none, 0, 0, {1, 2}));
  const int s1 = p.add(param_node(1, 0, Transform::none, 0, 0, {1, 1}));
  auto scaled = [&](std::vector<int> inputs) {
    Program copy = rowdot(inputs);
    copy.nodes.back().scaled = true;
    return copy;
  };
  CHECK_NOTHROW(lockstep::validate(scaled({a, b, s2})));
  CHECK_NOTHROW(lockstep::validate(scaled({a, b, s1, s2})));     // v: one per column
  CHECK_THROWS_AS(lockstep::validate(scaled({a, b})), std::invalid_argument);        // no scale
  CHECK_THROWS_AS(lockstep::validate(scaled({a, b, v3})), std::invalid_argument);    // 3 values
  CHECK_THROWS_AS(lockstep::validate(scaled({a, b, q2})), std::invalid_argument);    // a column
  CHECK_THROWS_AS(lockstep::validate(scaled({a, b, s2, s2, s1, s1})), std::invalid_argument);
}

// ------------------------------------------------ fold, cumulative, concat

namespace {

const char* backend_name(Backend b) { return b == Backend::cpu ? "cpu" : "emulated"; }

// Node id's elements for chain c (whatever its chain layout).
std::vector<double> chain_values(const Executor<double>& ex, const Program& p, int id, long c) {
  std::vector<double> v(p.nodes[id].size);
  for (long i = 0; i < p.nodes[id].size; ++i) v[i] = node_value(ex, p, id, c, i);
  return v;
}

}  // namespace

TEST_CASE("max, min, prod: values, first arg-max gradients, zeros in prod",
          "[ops][fold][max][min][prod]") {
  std::mt19937 rng(211);
  const long n = 6;
  const long D = 2 * n + 1;
  for (long chains : {1L, 3L})
    for (Backend backend : {Backend::cpu, Backend::emulated}) {
      INFO("chains " << chains << ", " << backend_name(backend));
      Program p;
      const int x = p.add(param_node(n, 0, Transform::none, 0, 0, {2, 3}));
      const int z = p.add(param_node(n, n, Transform::none, 0, 0, {3, 2}));  // zeros set below
      const int s = p.add(param_node(1, 2 * n));                            // a scalar
      const std::vector<double> dv = {0.5, -3, 2, 2, -3, 1};  // ties: the first one counts
      const int d = p.add(data_node(dv));
      const int mx = p.add(fold_node(Op::max, x));
      const int mn = p.add(fold_node(Op::min, x));
      const int pr = p.add(fold_node(Op::prod, x));
      const int pz = p.add(fold_node(Op::prod, z));
      const int ms = p.add(fold_node(Op::max, s));
      const int md = p.add(fold_node(Op::max, d));
      const int nd = p.add(fold_node(Op::min, d));
      const int pd = p.add(fold_node(Op::prod, d));
      // a fold of data mixed with parameters
      const int mix = p.add(binary_node(Op::mul, mx, md, p));
      p.n_free = D;
      for (int t : {mn, pr, pz, ms, mix}) add_normal_objective(p, t, rng);
      lockstep::plan(p);
      CHECK(p.nodes[mx].chain);
      CHECK_FALSE(p.nodes[md].chain);
      std::vector<double> state = uniform_vector(rng, chains * D, 0.5, 1.5);
      for (long c = 0; c < chains; ++c) {
        for (long i = 0; i < n; ++i)
          if (i % 2) state[c * D + i] = -state[c * D + i];
        // z: chain 0 has no zero, chain 1 one zero, chain 2 two zeros
        if (c >= 1) state[c * D + n + 2] = 0;
        if (c >= 2) state[c * D + n + 4] = 0;
      }
      Executor<double> ex(p, chains, backend);
      ex.forward(state.data());
      CHECK(ex.value(md)[0] == 2);
      CHECK(ex.value(nd)[0] == -3);
      CHECK(close(ex.value(pd)[0], 0.5 * -3 * 2 * 2 * -3 * 1, 1e-15));
      for (long c = 0; c < chains; ++c) {
        const double* xc = state.data() + c * D;
        const double* zc = xc + n;
        double hi = xc[0], lo = xc[0], prod = 1, zprod = 1;
        for (long i = 0; i < n; ++i) {
          hi = std::max(hi, xc[i]);
          lo = std::min(lo, xc[i]);
          prod *= xc[i];
          zprod *= zc[i];
        }
        CHECK(ex.value(mx)[c] == hi);
        CHECK(ex.value(mn)[c] == lo);
        CHECK(close(ex.value(pr)[c], prod, 1e-14));
        CHECK(close(ex.value(pz)[c], zprod, 1e-14));
        CHECK(ex.value(ms)[c] == xc[2 * n]);
      }
      check_gradient(p, chains, state, 1e-7, 1e-9, 1e-4, backend);

      // max of three equal values x: the adjoint reaches x once (the first
      // maximum's); prod of them is x^3, with 3 x^2 from one adjoint per element
      for (Op op : {Op::max, Op::prod}) {
        Program q;
        const int qx = q.add(param_node(1, 0));
        const int qd = q.add(data_node({0, 0, 0}));
        const int qv = q.add(binary_node(Op::add, qd, qx, q));
        const int qm = q.add(fold_node(op, qv));
        const int mean = q.add(data_node({0.2}));
        const int sd = q.add(data_node({1.3}));
        add_term(q, density_node(Family::normal, {qm, mean, sd}));
        q.n_free = 1;
        lockstep::plan(q);
        const std::vector<double> qs(chains, 0.7);
        const Eval e = evaluate(q, chains, qs, backend);
        const double y = op == Op::max ? 0.7 : 0.343, dy = op == Op::max ? 1 : 3 * 0.49;
        for (long c = 0; c < chains; ++c)
          CHECK(close(e.grad[c], -(y - 0.2) / (1.3 * 1.3) * dy, 1e-13, 1e-15));
      }
    }
}

TEST_CASE("cumsum, cumprod: values as a column-major vector, reverse-scan gradients",
          "[ops][cumulative][cumsum][cumprod]") {
  std::mt19937 rng(212);
  const long n = 6;
  const long D = 2 * n;
  for (long chains : {1L, 3L})
    for (Backend backend : {Backend::cpu, Backend::emulated}) {
      INFO("chains " << chains << ", " << backend_name(backend));
      Program p;
      const int x = p.add(param_node(n, 0, Transform::none, 0, 0, {2, 3}));
      const int z = p.add(param_node(n, n, Transform::none, 0, 0, {3, 2}));
      const std::vector<double> dv = {1, 2, 3, 4};
      const int d = p.add(data_node(dv, {2, 2}));
      const int cs = p.add(cumulative_node(Op::cumsum, x, p));
      const int cp = p.add(cumulative_node(Op::cumprod, x, p));
      const int cz = p.add(cumulative_node(Op::cumprod, z, p));
      const int cd = p.add(cumulative_node(Op::cumsum, d, p));
      const int pd = p.add(cumulative_node(Op::cumprod, d, p));
      p.n_free = D;
      for (int t : {cs, cp, cz}) add_normal_objective(p, t, rng);
      lockstep::plan(p);
      CHECK(p.nodes[cs].dim == std::vector<long>({n, 1}));
      CHECK_FALSE(p.nodes[cd].chain);
      std::vector<double> state = uniform_vector(rng, chains * D, -1.5, 1.5);
      for (long c = 0; c < chains; ++c) {
        // z: chain 1 has a zero, chain 2 two zeros
        if (c >= 1) state[c * D + n + 1] = 0;
        if (c >= 2) state[c * D + n + 4] = 0;
      }
      Executor<double> ex(p, chains, backend);
      ex.forward(state.data());
      CHECK(chain_values(ex, p, cd, 0) == std::vector<double>({1, 3, 6, 10}));
      CHECK(chain_values(ex, p, pd, 0) == std::vector<double>({1, 2, 6, 24}));
      for (long c = 0; c < chains; ++c) {
        const double* xc = state.data() + c * D;
        double s = 0, pr = 1, zp = 1;
        for (long i = 0; i < n; ++i) {
          s += xc[i];
          pr *= xc[i];
          zp *= xc[n + i];
          CHECK(close(ex.value(cs)[c * n + i], s, 1e-14, 1e-15));
          CHECK(close(ex.value(cp)[c * n + i], pr, 1e-14, 1e-300));
          CHECK(close(ex.value(cz)[c * n + i], zp, 1e-14, 1e-300));
        }
      }
      check_gradient(p, chains, state, 1e-7, 1e-9, 1e-4, backend);
    }
}

TEST_CASE("cummax, cummin: running extremes, the gradient to where each was taken",
          "[ops][cumulative][cummax][cummin]") {
  std::mt19937 rng(214);
  const long n = 7;
  const long D = n;
  for (long chains : {1L, 3L})
    for (Backend backend : {Backend::cpu, Backend::emulated}) {
      INFO("chains " << chains << ", " << backend_name(backend));
      Program p;
      const int x = p.add(param_node(n, 0, Transform::none, 0, 0, {n, 1}));
      // data with ties and a NaN: R's cummax(c(2, 1, 2, 5, NaN, 9)) is
      // 2 2 2 5 NaN NaN, cummin 2 1 1 1 NaN NaN
      const std::vector<double> dv = {2, 1, 2, 5, NAN, 9};
      const int d = p.add(data_node(dv, {6, 1}));
      const int mx = p.add(cumulative_node(Op::cummax, x, p));
      const int mn = p.add(cumulative_node(Op::cummin, x, p));
      const int dmx = p.add(cumulative_node(Op::cummax, d, p));
      const int dmn = p.add(cumulative_node(Op::cummin, d, p));
      p.n_free = D;
      for (int t : {mx, mn}) add_normal_objective(p, t, rng);
      lockstep::plan(p);
      CHECK(p.nodes[mx].dim == std::vector<long>({n, 1}));
      CHECK_FALSE(p.nodes[dmx].chain);
      // distinct values, well apart (finite differences do not cross a tie)
      std::vector<double> state(chains * D);
      for (long c = 0; c < chains; ++c) {
        std::vector<double> v(n);
        for (long i = 0; i < n; ++i) v[i] = 0.3 * static_cast<double>(i) - 1;
        std::shuffle(v.begin(), v.end(), rng);
        for (long i = 0; i < n; ++i) state[c * D + i] = v[i];
      }
      Executor<double> ex(p, chains, backend);
      ex.forward(state.data());
      const std::vector<double> dmx_v = chain_values(ex, p, dmx, 0), dmn_v = chain_values(ex, p, dmn, 0);
      const double want_max[] = {2, 2, 2, 5}, want_min[] = {2, 1, 1, 1};
      for (int i = 0; i < 4; ++i) {
        CHECK(dmx_v[i] == want_max[i]);
        CHECK(dmn_v[i] == want_min[i]);
      }
      CHECK((std::isnan(dmx_v[4]) && std::isnan(dmx_v[5])));
      CHECK((std::isnan(dmn_v[4]) && std::isnan(dmn_v[5])));
      for (long c = 0; c < chains; ++c) {
        const double* xc = state.data() + c * D;
        double hi = xc[0], lo = xc[0];
        for (long i = 0; i < n; ++i) {
          hi = std::max(hi, xc[i]);
          lo = std::min(lo, xc[i]);
          CHECK(ex.value(mx)[c * n + i] == hi);
          CHECK(ex.value(mn)[c * n + i] == lo);
        }
      }
      check_gradient(p, chains, state, 1e-7, 1e-9, 1e-4, backend);
    }
}

TEST_CASE("cummax, cummin: with ties the gradient goes to the first of them",
          "[ops][cumulative][cummax][cummin]") {
  for (Backend backend : {Backend::cpu, Backend::emulated}) {
    INFO(backend_name(backend));
    Program p;
    const long n = 5;
    const int x = p.add(param_node(n, 0, Transform::none, 0, 0, {n, 1}));
    const int mx = p.add(cumulative_node(Op::cummax, x, p));
    const int mn = p.add(cumulative_node(Op::cummin, x, p));
    // the log density sum(cummax(x)) + 10 sum(cummin(x)), by a target term
    const int sx = p.add(sum_node(mx));
    const int sn = p.add(sum_node(mn));
    const int ten = p.add(data_node({10.0}));
    const int obj = p.add(binary_node(Op::add, sx, p.add(binary_node(Op::mul, ten, sn, p)), p));
    add_term(p, density_node(lockstep::Family::target, {obj}));
    p.n_free = n;
    lockstep::plan(p);
    // x = 1 3 3 0 0: cummax 1 3 3 3 3 (from x[1], the first 3),
    // cummin 1 1 1 0 0 (from x[3], the first 0)
    const std::vector<double> state = {1, 3, 3, 0, 0};
    Executor<double> ex(p, 1, backend);
    std::vector<double> lp(1), grad(n);
    ex.log_density(state.data(), lp.data(), grad.data());
    CHECK(lp[0] == (1 + 3 + 3 + 3 + 3) + 10 * (1 + 1 + 1 + 0 + 0));
    CHECK(grad == std::vector<double>({1 + 10 * 3, 4, 0, 10 * 2, 0}));
  }
}

TEST_CASE("concat: blocks copied in order, gradients scattered back to each operand",
          "[ops][concat]") {
  std::mt19937 rng(213);
  const long D = 4 + 3 + 1;
  for (long chains : {1L, 3L})
    for (Backend backend : {Backend::cpu, Backend::emulated}) {
      INFO("chains " << chains << ", " << backend_name(backend));
      Program p;
      const int a = p.add(param_node(4, 0, Transform::none, 0, 0, {2, 2}));
      const int b = p.add(param_node(3, 4));
      const int s = p.add(param_node(1, 7));
      const int d = p.add(data_node({10, 20, 30}));
      const int ab = p.add(concat_node(a, b, p));              // 7 x 1
      const int ad = p.add(concat_node(d, a, p, {7, 1}));      // data first
      const int abs_ = p.add(concat_node(ab, s, p, {2, 4}));   // a 2 x 4 result
      const int ss = p.add(concat_node(s, s, p));               // one node twice
      const int dd = p.add(concat_node(d, d, p, {3, 2}));       // data only
      p.n_free = D;
      for (int t : {ad, abs_, ss}) add_normal_objective(p, t, rng);
      lockstep::plan(p);
      CHECK(p.nodes[ab].chain);
      CHECK_FALSE(p.nodes[dd].chain);
      const std::vector<double> state = uniform_vector(rng, chains * D, -2, 2);
      Executor<double> ex(p, chains, backend);
      ex.forward(state.data());
      CHECK(chain_values(ex, p, dd, 0) == std::vector<double>({10, 20, 30, 10, 20, 30}));
      for (long c = 0; c < chains; ++c) {
        const double* v = state.data() + c * D;
        const std::vector<double> want_ab(v, v + 7);
        CHECK(chain_values(ex, p, ab, c) == want_ab);
        CHECK(chain_values(ex, p, ad, c) ==
              std::vector<double>({10, 20, 30, v[0], v[1], v[2], v[3]}));
        std::vector<double> want_abs = want_ab;
        want_abs.push_back(v[7]);
        CHECK(chain_values(ex, p, abs_, c) == want_abs);
        CHECK(chain_values(ex, p, ss, c) == std::vector<double>({v[7], v[7]}));
      }
      check_gradient(p, chains, state, 1e-8, 1e-9, 1e-4, backend);
    }
}

TEST_CASE("fold, cumulative, concat: wrong shapes are refused", "[ops][fold][concat][ir]") {
  Program p;
  const int x = p.add(data_node({1, 2, 3}));
  Node m = fold_node(Op::max, x);
  m.dim = {3, 1};
  m.size = 3;
  p.add(m);
  CHECK_THROWS_WITH(lockstep::validate(p), Catch::Contains("a max has one element"));
  p.nodes.pop_back();
  Node c = cumulative_node(Op::cumsum, x, p);
  c.dim = {2, 1};
  c.size = 2;
  p.add(c);
  CHECK_THROWS_WITH(lockstep::validate(p), Catch::Contains("output size differs"));
  p.nodes.pop_back();
  Node k = concat_node(x, x, p);
  k.dim = {5, 1};
  k.size = 5;
  p.add(k);
  CHECK_THROWS_WITH(lockstep::validate(p), Catch::Contains("the operands 3 and 3"));
  p.nodes.pop_back();
  p.add(concat_node(x, x, p, {2, 3}));
  CHECK_NOTHROW(lockstep::validate(p));
}
