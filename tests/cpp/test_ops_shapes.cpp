// The shape ops of ops.def (rowsum, colsum, transpose, gather_rows) and the
// binary ops broadcasting a row or a column vector: values against loops
// written here, gradients against central finite differences for one and three
// chains, the emulated backend (several launch geometries) against the cpu
// backend, and each kernel bound to tiles of rows, as the observation stage
// binds them, against the same kernel bound to whole buffers.
//
// These ops are listed in `dedicated_ops` of test_ops.cpp, whose coverage test
// fails for an op without a test.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "lockstep/executor.hpp"
#include "lockstep/ir.hpp"
#include "lockstep/node_kernels.hpp"

using namespace lstest;

namespace {

// The value of node `id` for chain c (column-major), whatever its chain layout.
std::vector<double> value_of(const Executor<double>& ex, const Program& p, int id, long c) {
  const Node& n = p.nodes[id];
  const std::vector<double>& v = ex.value(id);
  REQUIRE(static_cast<long>(v.size()) >= (n.chain ? (c + 1) * n.size : n.size));
  const long off = n.chain ? c * n.size : 0;
  return std::vector<double>(v.begin() + off, v.begin() + off + n.size);
}

}  // namespace

TEST_CASE("rowsum and colsum: values against loops, and gradients", "[ops][rowsum][colsum]") {
  std::mt19937 rng(601);
  const long R = 3, K = 4;
  for (long chains : {1L, 3L}) {
    INFO("chains " << chains);
    Program p;
    const int x = p.add(param_node(R * K, 0, Transform::none, 0, 0, {R, K}));
    const int rs = p.add(rowsum_node(x, p));  // R x 1
    const int cs = p.add(colsum_node(x, p));  // K x 1
    // a row vector: its row sum is a scalar, its column sums are itself
    const int row = p.add(param_node(K, R * K, Transform::none, 0, 0, {1, K}));
    const int rsr = p.add(rowsum_node(row, p));
    const int csr = p.add(colsum_node(row, p));
    // data: no chain dimension; reaches the objective through a product with s
    const std::vector<double> dv = uniform_vector(rng, 10, -1, 1);
    const int d = p.add(data_node(dv, {5, 2}));
    const int rsd = p.add(rowsum_node(d, p));
    const int csd = p.add(colsum_node(d, p));
    const int s = p.add(param_node(1, R * K + K));
    const int rsd_s = p.add(binary_node(Op::mul, rsd, s, p));
    const int csd_s = p.add(binary_node(Op::mul, s, csd, p));
    // through another op, so that the adjoint of rowsum's input is not the last
    const int ex_x = p.add(unary_node(Op::exp, x, p));
    const int rse = p.add(rowsum_node(ex_x, p));
    const long D = R * K + K + 1;
    p.n_free = D;
    for (int t : {rs, cs, rsr, csr, rsd_s, csd_s, rse}) add_normal_objective(p, t, rng);
    lockstep::plan(p);
    CHECK(p.nodes[rs].chain);
    CHECK_FALSE(p.nodes[rsd].chain);
    CHECK(p.nodes[rs].dim == std::vector<long>({R, 1}));
    CHECK(p.nodes[cs].dim == std::vector<long>({K, 1}));

    const std::vector<double> state = uniform_vector(rng, chains * D, -1.5, 1.5);
    Executor<double> ex(p, chains);
    ex.forward(state.data());
    for (long c = 0; c < chains; ++c) {
      const double* z = state.data() + c * D;
      const std::vector<double> vrs = value_of(ex, p, rs, c), vcs = value_of(ex, p, cs, c),
                                vrse = value_of(ex, p, rse, c);
      for (long r = 0; r < R; ++r) {
        double total = 0, total_exp = 0;
        for (long j = 0; j < K; ++j) {
          total += z[r + j * R];
          total_exp += std::exp(z[r + j * R]);
        }
        CHECK(close(vrs[r], total, 1e-14, 1e-15));
        CHECK(close(vrse[r], total_exp, 1e-14));
      }
      for (long j = 0; j < K; ++j) {
        double total = 0;
        for (long r = 0; r < R; ++r) total += z[r + j * R];
        CHECK(close(vcs[j], total, 1e-14, 1e-15));
      }
      double row_total = 0;
      for (long j = 0; j < K; ++j) row_total += z[R * K + j];
      CHECK(close(value_of(ex, p, rsr, c)[0], row_total, 1e-14, 1e-15));
      for (long j = 0; j < K; ++j) CHECK(value_of(ex, p, csr, c)[j] == z[R * K + j]);
    }
    const std::vector<double> vrsd = value_of(ex, p, rsd, 0), vcsd = value_of(ex, p, csd, 0);
    for (long r = 0; r < 5; ++r) CHECK(close(vrsd[r], dv[r] + dv[r + 5], 1e-15, 1e-15));
    for (long j = 0; j < 2; ++j)
      CHECK(close(vcsd[j], dv[5 * j] + dv[5 * j + 1] + dv[5 * j + 2] + dv[5 * j + 3] + dv[5 * j + 4],
                  1e-14, 1e-15));
    check_gradient(p, chains, state, 1e-8, 1e-9);
    check_emulated_matches_cpu(p, chains, state);
  }
}

TEST_CASE("transpose: values by hand and gradients, including into a matmul",
          "[ops][transpose]") {
  std::mt19937 rng(602);
  const long R = 3, K = 4;
  for (long chains : {1L, 3L}) {
    INFO("chains " << chains);
    Program p;
    const int x = p.add(param_node(R * K, 0, Transform::none, 0, 0, {R, K}));
    const int tx = p.add(transpose_node(x, p));   // K x R
    const int ttx = p.add(transpose_node(tx, p));  // R x K again
    const int v = p.add(param_node(5, R * K));     // 5 x 1
    const int tv = p.add(transpose_node(v, p));    // 1 x 5
    const std::vector<double> dv = uniform_vector(rng, 6, -1, 1);
    const int d = p.add(data_node(dv, {2, 3}));
    const int td = p.add(transpose_node(d, p));  // 3 x 2, no chain
    const int s = p.add(param_node(1, R * K + 5));
    const int tds = p.add(binary_node(Op::mul, td, s, p));
    const int gram = p.add(matmul_node(tx, x, p));  // t(x) %*% x: K x K
    const long D = R * K + 5 + 1;
    p.n_free = D;
    for (int t : {tx, ttx, tv, tds, gram}) add_normal_objective(p, t, rng);
    lockstep::plan(p);
    CHECK(p.nodes[tx].dim == std::vector<long>({K, R}));
    CHECK(p.nodes[tv].dim == std::vector<long>({1, 5}));
    CHECK_FALSE(p.nodes[td].chain);

    const std::vector<double> state = uniform_vector(rng, chains * D, -1.5, 1.5);
    Executor<double> ex(p, chains);
    ex.forward(state.data());
    for (long c = 0; c < chains; ++c) {
      const double* z = state.data() + c * D;
      const std::vector<double> vt = value_of(ex, p, tx, c), vtt = value_of(ex, p, ttx, c);
      for (long r = 0; r < R; ++r)
        for (long j = 0; j < K; ++j) {
          CHECK(vt[j + r * K] == z[r + j * R]);  // t(x)[j, r] = x[r, j]
          CHECK(vtt[r + j * R] == z[r + j * R]);
        }
      const std::vector<double> vtv = value_of(ex, p, tv, c);
      for (long i = 0; i < 5; ++i) CHECK(vtv[i] == z[R * K + i]);
    }
    const std::vector<double> vtd = value_of(ex, p, td, 0);
    for (long r = 0; r < 2; ++r)
      for (long j = 0; j < 3; ++j) CHECK(vtd[j + r * 3] == dv[r + j * 2]);
    check_gradient(p, chains, state, 1e-8, 1e-9);
    check_emulated_matches_cpu(p, chains, state);
  }
}

// The planner's fusion of t(A) %*% B (Node::transpose_a): the product reads A
// transposed in place and leaves the transpose dead, with the unfused
// program's values and gradients; it is made only where A depends on the
// parameters and the transpose is read by nothing else.
TEST_CASE("t(A) %*% B: the product reads A transposed in place, as the unfused program computes",
          "[ops][transpose][matmul]") {
  std::mt19937 rng(611);
  const long K = 5, M = 3;
  for (long N : {1L, 2L}) {
    auto build = [&](bool fuse, int& a, int& ta, int& prod, int& tdat, int& dprod, int& ts,
                     int& sprod) {
      std::mt19937 data_rng(612 + N);
      Program p;
      a = p.add(param_node(K * M, 0, Transform::none, 0, 0, {K, M}));  // A: K x M
      const int b = p.add(param_node(K * N, K * M, Transform::none, 0, 0, {K, N}));
      ta = p.add(transpose_node(a, p));       // M x K
      prod = p.add(matmul_node(ta, b, p));    // M x N: fused
      const int d = p.add(data_node(uniform_vector(data_rng, K * M, -1, 1), {K, M}));
      tdat = p.add(transpose_node(d, p));     // data: not fused
      dprod = p.add(matmul_node(tdat, b, p));
      const int e = p.add(unary_node(Op::exp, a, p));
      ts = p.add(transpose_node(e, p));       // read twice: not fused
      sprod = p.add(matmul_node(ts, b, p));
      p.n_free = K * M + K * N;
      for (int t : {prod, dprod, sprod, ts}) add_normal_objective(p, t, data_rng);
      lockstep::plan(p, lockstep::PlanOptions{true, fuse});
      return p;
    };
    int a, ta, prod, tdat, dprod, ts, sprod;
    const Program fused = build(true, a, ta, prod, tdat, dprod, ts, sprod);
    const Program plain = build(false, a, ta, prod, tdat, dprod, ts, sprod);
    CHECK(fused.nodes[prod].transpose_a);
    CHECK(fused.nodes[prod].inputs[0] == a);
    CHECK_FALSE(fused.nodes[ta].live);
    CHECK_FALSE(fused.nodes[dprod].transpose_a);
    CHECK_FALSE(fused.nodes[sprod].transpose_a);
    CHECK_FALSE(plain.nodes[prod].transpose_a);
    for (long chains : {1L, 3L}) {
      INFO("N " << N << ", chains " << chains);
      const std::vector<double> state = uniform_vector(rng, chains * fused.n_free, -1.5, 1.5);
      const Eval f = evaluate(fused, chains, state), u = evaluate(plain, chains, state);
      for (long c = 0; c < chains; ++c) CHECK(close(f.lp[c], u.lp[c], 1e-13));
      for (size_t k = 0; k < f.grad.size(); ++k) CHECK(close(f.grad[k], u.grad[k], 1e-13, 1e-14));
      // the product's value by hand: t(A) %*% B
      Executor<double> ex(fused, chains);
      ex.forward(state.data());
      for (long c = 0; c < chains; ++c) {
        const double* z = state.data() + c * fused.n_free;
        const std::vector<double> y = value_of(ex, fused, prod, c);
        for (long i = 0; i < M; ++i)
          for (long j = 0; j < N; ++j) {
            double s = 0;
            for (long l = 0; l < K; ++l) s += z[l + i * K] * z[K * M + l + j * K];
            CHECK(close(y[i + j * M], s, 1e-14, 1e-15));
          }
      }
      check_gradient(fused, chains, state, 1e-8, 1e-9);
      check_emulated_matches_cpu(fused, chains, state);
    }
  }
  // validate() takes the fused product's shapes, and refuses a wrong one
  int a, prod;
  Program p = [&] {
    Program q;
    a = q.add(param_node(K * M, 0, Transform::none, 0, 0, {K, M}));
    const int b = q.add(param_node(K, K * M));
    prod = q.add(matmul_node(a, b, q));  // K x M times K x 1: non-conformable as is
    q.n_free = K * M + K;
    return q;
  }();
  p.nodes[prod].dim = {M, 1};
  p.nodes[prod].size = M;
  CHECK_THROWS_AS(lockstep::validate(p), std::invalid_argument);
  p.nodes[prod].transpose_a = true;
  CHECK_NOTHROW(lockstep::validate(p));
}

TEST_CASE("gather_rows: values by hand and scatter-add gradients with repeated rows",
          "[ops][gather_rows]") {
  std::mt19937 rng(603);
  const long G = 4, K = 3;
  // row 1 is never read, row 0 twice and row 3 three times: the backward pass
  // must add, not assign
  const std::vector<long> idx = {3, 0, 0, 2, 3, 3};
  const long N = static_cast<long>(idx.size());
  for (long chains : {1L, 3L}) {
    INFO("chains " << chains);
    Program p;
    const int x = p.add(param_node(G * K, 0, Transform::none, 0, 0, {G, K}));
    const int g = p.add(gather_rows_node(x, idx, p));  // N x K
    // a column vector, and a single row gathered many times
    const int v = p.add(param_node(G, G * K));
    const int gv = p.add(gather_rows_node(v, {1, 1, 0, 3}, p));
    const int one_row = p.add(param_node(K, G * K + G, Transform::none, 0, 0, {1, K}));
    const int g1 = p.add(gather_rows_node(one_row, {0, 0, 0}, p));
    // from data: no chain dimension
    const std::vector<double> dv = uniform_vector(rng, 6, -1, 1);
    const int dm = p.add(data_node(dv, {3, 2}));
    const int gd = p.add(gather_rows_node(dm, {2, 2, 0, 1, 2}, p));
    const int s = p.add(param_node(1, G * K + G + K));
    const int gds = p.add(binary_node(Op::mul, gd, s, p));
    const long D = G * K + G + K + 1;
    p.n_free = D;
    for (int t : {g, gv, g1, gds}) add_normal_objective(p, t, rng);
    lockstep::plan(p);
    CHECK(p.nodes[g].dim == std::vector<long>({N, K}));
    CHECK(p.nodes[g].chain);
    CHECK_FALSE(p.nodes[gd].chain);

    const std::vector<double> state = uniform_vector(rng, chains * D, -2, 2);
    Executor<double> ex(p, chains);
    ex.forward(state.data());
    for (long c = 0; c < chains; ++c) {
      const double* z = state.data() + c * D;
      const std::vector<double> vg = value_of(ex, p, g, c);
      for (long r = 0; r < N; ++r)
        for (long j = 0; j < K; ++j) CHECK(vg[r + j * N] == z[idx[r] + j * G]);
      const std::vector<double> vgv = value_of(ex, p, gv, c);
      const long vidx[] = {1, 1, 0, 3};
      for (long r = 0; r < 4; ++r) CHECK(vgv[r] == z[G * K + vidx[r]]);
      const std::vector<double> vg1 = value_of(ex, p, g1, c);
      for (long r = 0; r < 3; ++r)
        for (long j = 0; j < K; ++j) CHECK(vg1[r + j * 3] == z[G * K + G + j]);
    }
    const std::vector<double> vgd = value_of(ex, p, gd, 0);
    const long didx[] = {2, 2, 0, 1, 2};
    for (long r = 0; r < 5; ++r)
      for (long j = 0; j < 2; ++j) CHECK(vgd[r + j * 5] == dv[didx[r] + j * 3]);
    check_gradient(p, chains, state, 1e-8, 1e-9);
    check_emulated_matches_cpu(p, chains, state);

    // The scatter-add by hand: s = sum_{r,j} w[r, j] x[idx[r], j] under a
    // normal(0, 1) term has log density -s^2 / 2, so
    //   d/dx[g, j] = -s * sum_{r: idx[r] = g} w[r, j].
    Program q;
    const int qx = q.add(param_node(G * K, 0, Transform::none, 0, 0, {G, K}));
    const int qg = q.add(gather_rows_node(qx, idx, q));
    std::vector<double> w(N * K);
    for (long i = 0; i < N * K; ++i) w[i] = 1 + i;
    const int qw = q.add(data_node(w, {N, K}));
    const int qs = q.add(sum_node(q.add(binary_node(Op::mul, qg, qw, q))));
    const int zero = q.add(data_node({0}));
    const int one = q.add(data_node({1}));
    add_term(q, density_node(Family::normal, {qs, zero, one}));
    q.n_free = G * K;
    lockstep::plan(q);
    std::vector<double> qstate(chains * G * K);
    for (long c = 0; c < chains; ++c)
      for (long i = 0; i < G * K; ++i) qstate[c * G * K + i] = state[c * D + i];
    for (Backend b : {Backend::cpu, Backend::emulated}) {
      const Eval e = evaluate(q, chains, qstate, b);
      for (long c = 0; c < chains; ++c) {
        const double* z = qstate.data() + c * G * K;
        double sv = 0;
        for (long r = 0; r < N; ++r)
          for (long j = 0; j < K; ++j) sv += w[r + j * N] * z[idx[r] + j * G];
        for (long gr = 0; gr < G; ++gr)
          for (long j = 0; j < K; ++j) {
            double wsum = 0;
            for (long r = 0; r < N; ++r)
              if (idx[r] == gr) wsum += w[r + j * N];
            INFO("x[" << gr << ", " << j << "]");
            CHECK(close(e.grad[c * G * K + gr + j * G], -sv * wsum, 1e-13, 1e-13));
          }
      }
    }
  }
}

namespace {

// An operand of a broadcasting binary op: its kind (the output's shape F, a row
// vector R of 1 x cols, a column vector C of rows x 1) and whether it is a
// parameter or data. (Scalars are covered by test_ops.cpp.)
struct AxisOperand {
  char kind;
  bool param;
};

struct AxisCase {
  const char* label;
  AxisOperand a, b;
};

const AxisCase axis_cases[] = {
    {"param matrix, param row", {'F', true}, {'R', true}},
    {"param row, param matrix", {'R', true}, {'F', true}},
    {"param matrix, param column", {'F', true}, {'C', true}},
    {"param column, param matrix", {'C', true}, {'F', true}},
    {"param row, param column (outer)", {'R', true}, {'C', true}},
    {"param column, param row (outer)", {'C', true}, {'R', true}},
    {"data matrix, param row", {'F', false}, {'R', true}},
    {"param matrix, data row", {'F', true}, {'R', false}},
    {"data column, param matrix", {'C', false}, {'F', true}},
    {"param matrix, data column", {'F', true}, {'C', false}},
    {"data row, param column", {'R', false}, {'C', true}},
    {"data matrix, data row", {'F', false}, {'R', false}},
    {"data column, data row", {'C', false}, {'R', false}},
};

long operand_rows(char kind, long rows) { return kind == 'F' || kind == 'C' ? rows : 1; }
long operand_cols(char kind, long cols) { return kind == 'F' || kind == 'R' ? cols : 1; }

// Element (r, j) of the output reads this element of the operand.
long operand_index(char kind, long r, long j, long rows) {
  switch (kind) {
    case 'F': return r + j * rows;
    case 'R': return j;
    case 'C': return r;
  }
  return 0;
}

}  // namespace

TEST_CASE("binary ops broadcast a row or a column vector: values, gradients, backends",
          "[ops][binary][broadcast][axis]") {
  std::mt19937 rng(604);
  struct Shape {
    long rows, cols;
  };
  // 3 x 4, and the degenerate shapes where a row or a column vector is the
  // whole output or a scalar
  const Shape shapes[] = {{3, 4}, {1, 4}, {3, 1}};
  const Op ops[] = {Op::add, Op::sub, Op::mul, Op::div};
  for (const Shape& sh : shapes) {
    for (Op op : ops) {
      for (const AxisCase& ac : axis_cases) {
        for (long chains : {1L, 3L}) {
          INFO(lockstep::op_name(op) << ", " << ac.label << ", output " << sh.rows << " x "
                                     << sh.cols << ", chains " << chains);
          Program p;
          long n_free = 0;
          struct Made {
            int id;
            long offset;  // in the state; -1 for data
            std::vector<double> data;
          };
          auto make = [&](const AxisOperand& o, bool denominator) {
            const long r = operand_rows(o.kind, sh.rows), c = operand_cols(o.kind, sh.cols);
            Made m;
            if (o.param) {
              m.id = p.add(param_node(r * c, n_free, Transform::none, 0, 0, {r, c}));
              m.offset = n_free;
              n_free += r * c;
            } else {
              m.data = denominator ? signed_vector(rng, r * c, 0.5, 2)
                                   : uniform_vector(rng, r * c, -2, 2);
              m.id = p.add(data_node(m.data, {r, c}));
              m.offset = -1;
            }
            return m;
          };
          const Made a = make(ac.a, false);
          const Made b = make(ac.b, true);
          const int y = p.add(broadcast_node(op, a.id, b.id, p));
          REQUIRE(p.nodes[y].dim == std::vector<long>({sh.rows, sh.cols}));
          int objective = y;
          if (!ac.a.param && !ac.b.param) {
            // data op data has no chain dimension: reach a parameter through an add
            const int x = p.add(param_node(sh.rows * sh.cols, n_free, Transform::none, 0, 0,
                                           {sh.rows, sh.cols}));
            n_free += sh.rows * sh.cols;
            objective = p.add(binary_node(Op::add, y, x, p));
          }
          p.n_free = n_free;
          add_normal_objective(p, objective, rng);
          lockstep::plan(p);
          CHECK(p.nodes[y].chain == (ac.a.param || ac.b.param));

          // b (a denominator) away from zero
          std::vector<double> state = uniform_vector(rng, chains * n_free, -2, 2);
          if (b.offset >= 0) {
            const long nb = p.nodes[b.id].size;
            const std::vector<double> away = signed_vector(rng, chains * nb, 0.5, 2);
            for (long c = 0; c < chains; ++c)
              for (long i = 0; i < nb; ++i) state[c * n_free + b.offset + i] = away[c * nb + i];
          }
          auto read = [&](const Made& m, const AxisOperand& o, long c, long r, long j) {
            const long i = operand_index(o.kind, r, j, sh.rows);
            return m.offset >= 0 ? state[c * n_free + m.offset + i] : m.data[i];
          };
          Executor<double> ex(p, chains);
          ex.forward(state.data());
          const long C = p.nodes[y].chain ? chains : 1;
          for (long c = 0; c < C; ++c) {
            const std::vector<double> vy = value_of(ex, p, y, c);
            for (long r = 0; r < sh.rows; ++r)
              for (long j = 0; j < sh.cols; ++j) {
                const double av = read(a, ac.a, c, r, j), bv = read(b, ac.b, c, r, j);
                const double want = op == Op::add   ? av + bv
                                    : op == Op::sub ? av - bv
                                    : op == Op::mul ? av * bv
                                                    : av / bv;
                CHECK(close(vy[r + j * sh.rows], want, 1e-15, 1e-300));
              }
          }
          check_gradient(p, chains, state, op == Op::div ? 1e-7 : 1e-8, 1e-9);
          check_emulated_matches_cpu(p, chains, state);
        }
      }
    }
  }
}

TEST_CASE("validate accepts the broadcasts the kernels address and refuses the rest",
          "[ops][binary][broadcast][validate]") {
  auto program = [](std::vector<long> da, std::vector<long> db, std::vector<long> out) {
    Program p;
    const int a = p.add(data_node(std::vector<double>(product(da), 1.0), da));
    const int b = p.add(data_node(std::vector<double>(product(db), 2.0), db));
    Node n;
    n.op = Op::mul;
    n.inputs = {a, b};
    n.dim = out;
    n.size = product(out);
    p.add(n);
    return p;
  };
  CHECK_NOTHROW(lockstep::validate(program({3, 4}, {1, 4}, {3, 4})));
  CHECK_NOTHROW(lockstep::validate(program({3, 1}, {3, 4}, {3, 4})));
  CHECK_NOTHROW(lockstep::validate(program({3, 1}, {1, 4}, {3, 4})));
  CHECK_NOTHROW(lockstep::validate(program({1, 1}, {1, 4}, {1, 4})));
  CHECK_THROWS_AS(lockstep::validate(program({3, 4}, {1, 3}, {3, 4})), std::invalid_argument);
  CHECK_THROWS_AS(lockstep::validate(program({3, 4}, {4, 1}, {3, 4})), std::invalid_argument);
  CHECK_THROWS_AS(lockstep::validate(program({3, 4}, {4, 3}, {3, 4})), std::invalid_argument);
  // the same size is not enough: the shapes must match
  CHECK_THROWS_AS(lockstep::validate(program({12, 1}, {3, 4}, {3, 4})), std::invalid_argument);
  // the output must be the broadcast shape, neither larger nor smaller
  CHECK_THROWS_AS(lockstep::validate(program({3, 1}, {1, 4}, {3, 5})), std::invalid_argument);
  CHECK_THROWS_AS(lockstep::validate(program({3, 1}, {1, 4}, {3, 1})), std::invalid_argument);
  CHECK_THROWS_AS(lockstep::validate(program({1, 4}, {1, 4}, {3, 4})), std::invalid_argument);

  // and the kernels refuse an operand they cannot address
  lockstep::Slot<double> in, out;
  in.rows = 3;
  in.cols = 4;
  out.rows = 3;
  out.cols = 5;
  CHECK_THROWS_AS(lockstep::detail::addressing(in, out), std::invalid_argument);
}

TEST_CASE("validate refuses malformed shape ops", "[ops][validate]") {
  auto with_input = [](std::vector<long> dim) {
    Program p;
    p.add(data_node(std::vector<double>(product(dim), 1.0), dim));
    return p;
  };
  auto rejected = [](Program p, Node n) {
    p.add(std::move(n));
    return static_cast<bool>([&] {
      try {
        lockstep::validate(p);
      } catch (const std::invalid_argument&) {
        return true;
      }
      return false;
    }());
  };
  Program p = with_input({3, 4});
  // well-formed ones
  for (Node n : {rowsum_node(0, p), colsum_node(0, p), transpose_node(0, p),
                 gather_rows_node(0, {2, 2, 0, 1, 2}, p)}) {
    INFO(lockstep::op_name(n.op));
    CHECK_FALSE(rejected(p, n));
  }
  Node n = rowsum_node(0, p);
  n.dim = {4, 1};
  n.size = 4;
  CHECK(rejected(p, n));  // row sums of 3 rows are 3 x 1
  n = rowsum_node(0, p);
  n.dim = {1, 3};
  CHECK(rejected(p, n));
  n = colsum_node(0, p);
  n.dim = {3, 1};
  n.size = 3;
  CHECK(rejected(p, n));  // 4 columns
  n = transpose_node(0, p);
  n.dim = {3, 4};
  CHECK(rejected(p, n));
  CHECK(rejected(with_input({2, 3, 2}), [] {
    Node t;
    t.op = Op::transpose;
    t.inputs = {0};
    t.dim = {3, 2, 2};
    t.size = 12;
    return t;
  }()));
  n = gather_rows_node(0, {0, 3}, p);  // row 3 of 3 rows
  CHECK(rejected(p, n));
  n = gather_rows_node(0, {0, -1}, p);
  CHECK(rejected(p, n));
  n = gather_rows_node(0, {0, 1}, p);
  n.index = {0, 1, 2};  // one index per output row
  CHECK(rejected(p, n));
  n = gather_rows_node(0, {0, 1}, p);
  n.dim = {2, 3};  // 4 columns in, 3 out
  n.size = 6;
  CHECK(rejected(p, n));
}

namespace {

// Rows [start, start + t) of a rows x cols value ([chains, rows * cols],
// column-major), packed as a tile: [chains, t * cols], as the observation stage
// lays out a tile's buffers.
std::vector<double> tile_of(const std::vector<double>& v, long chains, long rows, long cols,
                            long start, long t) {
  std::vector<double> out(chains * t * cols);
  for (long c = 0; c < chains; ++c)
    for (long j = 0; j < cols; ++j)
      for (long r = 0; r < t; ++r)
        out[c * t * cols + r + j * t] = v[c * rows * cols + start + r + j * rows];
  return out;
}

lockstep::Slot<double> slot(const std::vector<double>& v, std::vector<double>* adjoint, long rows,
                            long cols, bool chain) {
  lockstep::Slot<double> s;
  s.value = v.data();
  s.adjoint = adjoint ? adjoint->data() : nullptr;
  s.rows = rows;
  s.cols = cols;
  s.chain = chain;
  return s;
}

struct Runner {
  Backend backend;
  template <class Body> void operator()(const Body& body) const {
    if (backend == Backend::emulated)
      lockstep::run_emulated(body, EmulatedGeometry{3, 5});
    else
      lockstep::run_serial(body);
  }
};

}  // namespace

TEST_CASE("kernels bound to tiles of rows give the rows of the whole-buffer call",
          "[ops][tiles][gather_rows][rowsum][broadcast]") {
  // The observation stage binds a tile's rows of row-aligned values (packed
  // [chains, t * cols] buffers), whole buffers of global ones, and the tile's
  // entries of a per-row index. Every kernel must take its extents from those
  // slots: forward, the tiles' outputs are the whole output's rows; backward,
  // the tiles' adjoints are the whole call's rows, and a global input's adjoint
  // summed over the tiles is the whole call's.
  std::mt19937 rng(605);
  const long N = 7, K = 3, G = 4, chains = 2, t = 3;  // tiles [0, 3), [3, 6), [6, 7)
  const std::vector<long> idx = {3, 0, 0, 2, 3, 1, 3};
  for (Backend backend : {Backend::cpu, Backend::emulated}) {
    INFO((backend == Backend::cpu ? "cpu" : "emulated"));
    const Runner run{backend};
    auto tiles = [&](auto&& f) {
      for (long start = 0; start < N; start += t) f(start, std::min(t, N - start));
    };
    const std::vector<double> dy = uniform_vector(rng, chains * N * K, -1, 1);
    const std::vector<double> dy_rows = uniform_vector(rng, chains * N, -1, 1);

    {  // gather_rows: a global input, a per-row index
      Node node = [&] {
        Program p;
        p.add(param_node(G * K, 0, Transform::none, 0, 0, {G, K}));
        return gather_rows_node(0, idx, p);
      }();
      const std::vector<double> x = uniform_vector(rng, chains * G * K, -1, 1);
      std::vector<double> y(chains * N * K), dx(chains * G * K, 0.0);
      const lockstep::KernelNode kernel = lockstep::kernel_node(node);
      lockstep::NodeCall<double> whole;
      whole.node = &kernel;
      whole.chains = chains;
      whole.in[0] = slot(x, &dx, G, K, true);
      whole.out = slot(y, nullptr, N, K, true);
      whole.index = idx.data();
      lockstep::forward_call(whole, run);
      std::vector<double> dyw = dy;
      whole.out.adjoint = dyw.data();
      lockstep::backward_call(whole, run);

      std::vector<double> dx_tiles(chains * G * K, 0.0);
      tiles([&](long start, long rows) {
        std::vector<double> yt(chains * rows * K);
        std::vector<double> dyt = tile_of(dy, chains, N, K, start, rows);
        lockstep::NodeCall<double> tile = whole;
        tile.in[0] = slot(x, &dx_tiles, G, K, true);
        tile.out = slot(yt, &dyt, rows, K, true);
        tile.index = idx.data() + start;
        lockstep::forward_call(tile, run);
        CHECK(yt == tile_of(y, chains, N, K, start, rows));
        lockstep::backward_call(tile, run);
      });
      for (size_t i = 0; i < dx.size(); ++i) CHECK(close(dx_tiles[i], dx[i], 1e-14, 1e-15));
    }

    {  // rowsum: a row-aligned input
      Node node = [&] {
        Program p;
        p.add(param_node(N * K, 0, Transform::none, 0, 0, {N, K}));
        return rowsum_node(0, p);
      }();
      const std::vector<double> x = uniform_vector(rng, chains * N * K, -1, 1);
      std::vector<double> y(chains * N), dx(chains * N * K, 0.0), dyw = dy_rows;
      const lockstep::KernelNode kernel = lockstep::kernel_node(node);
      lockstep::NodeCall<double> whole;
      whole.node = &kernel;
      whole.chains = chains;
      whole.in[0] = slot(x, &dx, N, K, true);
      whole.out = slot(y, &dyw, N, 1, true);
      lockstep::forward_call(whole, run);
      lockstep::backward_call(whole, run);
      tiles([&](long start, long rows) {
        const std::vector<double> xt = tile_of(x, chains, N, K, start, rows);
        std::vector<double> yt(chains * rows), dxt(chains * rows * K, 0.0);
        std::vector<double> dyt = tile_of(dy_rows, chains, N, 1, start, rows);
        lockstep::NodeCall<double> tile = whole;
        tile.in[0] = slot(xt, &dxt, rows, K, true);
        tile.out = slot(yt, &dyt, rows, 1, true);
        lockstep::forward_call(tile, run);
        CHECK(yt == tile_of(y, chains, N, 1, start, rows));
        lockstep::backward_call(tile, run);
        CHECK(dxt == tile_of(dx, chains, N, K, start, rows));
      });
    }

    {  // binary ops: a tiled matrix with a global row vector and a tiled column
      const std::vector<double> a = uniform_vector(rng, chains * N * K, -1, 1);
      const std::vector<double> rowv = uniform_vector(rng, chains * K, -1, 1);
      const std::vector<double> colv = signed_vector(rng, chains * N, 0.5, 2);
      struct Pair {
        Op op;
        char left, right;  // F (N x K, tiled), R (1 x K, global), C (N x 1, tiled)
      };
      const Pair pairs[] = {{Op::mul, 'F', 'R'}, {Op::div, 'F', 'C'}, {Op::sub, 'C', 'R'},
                            {Op::add, 'R', 'F'}, {Op::div, 'R', 'C'}};
      for (const Pair& pr : pairs) {
        INFO(lockstep::op_name(pr.op) << " " << pr.left << " " << pr.right);
        Node node;
        node.op = pr.op;
        const std::vector<double>& left = pr.left == 'F' ? a : pr.left == 'R' ? rowv : colv;
        const std::vector<double>& right = pr.right == 'F' ? a : pr.right == 'R' ? rowv : colv;
        auto rows_of = [&](char k) { return k == 'R' ? 1L : N; };
        auto cols_of = [&](char k) { return k == 'C' ? 1L : K; };
        std::vector<double> y(chains * N * K), dl(left.size(), 0.0), dr(right.size(), 0.0);
        std::vector<double> dyw = dy;
        const lockstep::KernelNode kernel = lockstep::kernel_node(node);
        lockstep::NodeCall<double> whole;
        whole.node = &kernel;
        whole.chains = chains;
        whole.in[0] = slot(left, &dl, rows_of(pr.left), cols_of(pr.left), true);
        whole.in[1] = slot(right, &dr, rows_of(pr.right), cols_of(pr.right), true);
        whole.out = slot(y, &dyw, N, K, true);
        lockstep::forward_call(whole, run);
        lockstep::backward_call(whole, run);

        // the global row vector's adjoint, summed over the tiles
        std::vector<double> d_global(chains * K, 0.0);
        tiles([&](long start, long rows) {
          auto bind = [&](char k, const std::vector<double>& v, std::vector<double>& tile_value,
                          std::vector<double>& tile_adjoint) {
            if (k == 'R') return slot(v, &d_global, 1, K, true);
            tile_value = tile_of(v, chains, N, cols_of(k), start, rows);
            tile_adjoint.assign(tile_value.size(), 0.0);
            return slot(tile_value, &tile_adjoint, rows, cols_of(k), true);
          };
          std::vector<double> lv, la, rv, ra;
          std::vector<double> yt(chains * rows * K);
          std::vector<double> dyt = tile_of(dy, chains, N, K, start, rows);
          lockstep::NodeCall<double> tile = whole;
          tile.in[0] = bind(pr.left, left, lv, la);
          tile.in[1] = bind(pr.right, right, rv, ra);
          tile.out = slot(yt, &dyt, rows, K, true);
          lockstep::forward_call(tile, run);
          CHECK(yt == tile_of(y, chains, N, K, start, rows));
          lockstep::backward_call(tile, run);
          if (pr.left != 'R') {
            const std::vector<double> want = tile_of(dl, chains, N, cols_of(pr.left), start, rows);
            for (size_t i = 0; i < la.size(); ++i) CHECK(close(la[i], want[i], 1e-14, 1e-15));
          }
          if (pr.right != 'R') {
            const std::vector<double> want = tile_of(dr, chains, N, cols_of(pr.right), start, rows);
            for (size_t i = 0; i < ra.size(); ++i) CHECK(close(ra[i], want[i], 1e-14, 1e-15));
          }
        });
        if (pr.left == 'R' || pr.right == 'R') {
          const std::vector<double>& d_whole = pr.left == 'R' ? dl : dr;
          for (size_t i = 0; i < d_global.size(); ++i)
            CHECK(close(d_global[i], d_whole[i], 1e-13, 1e-15));
        }
      }
    }
  }
}

// Indices in runs of equal entries (rows sorted by group, as row_order.hpp
// sorts them): on lanes the backward sums each run in a register and adds it
// once (GatherBackward::piece, index_in_runs()). Its pieces split runs, so runs
// that cross a piece's end, pieces shorter than a run, a last short piece and
// runs of one are all here, against the cpu backend's element-by-element adds,
// and against finite differences.
TEST_CASE("gather and gather_rows: indices in runs, their backward summed run by run",
          "[ops][gather][gather_rows][emulated]") {
  std::mt19937 rng(611);
  // 203 entries over 9 groups, sorted, runs of 1 to 70
  const long G = 9, K = 3;
  std::vector<long> idx;
  const long lengths[G] = {70, 1, 33, 2, 31, 1, 40, 1, 24};
  for (long g = 0; g < G; ++g)
    for (long r = 0; r < lengths[g]; ++r) idx.push_back(g);
  const long N = static_cast<long>(idx.size());
  CHECK(lockstep::index_in_runs(idx));
  std::vector<long> unsorted = idx;
  std::shuffle(unsorted.begin(), unsorted.end(), rng);
  CHECK_FALSE(lockstep::index_in_runs(unsorted));
  CHECK_FALSE(lockstep::index_in_runs(std::vector<long>(10, 0)));  // too short to matter
  for (long chains : {1L, 3L}) {
    INFO("chains " << chains);
    Program p;
    const int a = p.add(param_node(G, 0));                                  // a[group]
    const int b = p.add(param_node(G * K, G, Transform::none, 0, 0, {G, K}));  // b[group, ]
    const int ga = p.add(gather_node(a, idx));
    const int gb = p.add(gather_rows_node(b, idx, p));
    p.n_free = G + G * K;
    add_normal_objective(p, ga, rng);
    add_normal_objective(p, gb, rng);
    lockstep::plan(p);
    const std::vector<double> state = uniform_vector(rng, chains * p.n_free, -1, 1);
    check_emulated_matches_cpu(p, chains, state, {{1, 1}, {3, 5}, {7, 3}, {2, 64}});
    check_gradient(p, chains, state, 1e-6, 1e-8, 1e-5, Backend::emulated);
    REQUIRE(p.nodes[ga].size == N);
  }
}
