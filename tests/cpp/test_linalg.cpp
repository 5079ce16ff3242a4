// The linalg ops (kernels/linalg.hpp): chol, chol2inv, solve, backsolve and
// forwardsolve. Values against references written here (textbook algorithms,
// independent of math/linalg.hpp), gradients against central finite
// differences, for 1, 3, 8 and 17 chains (more than the emulated launch has
// lanes) on the CPU and the emulated backend (the same values to the bit: one
// lane owns a chain), with operands with and without the chain dimension;
// matrices that are not positive definite or are singular give NaN for their
// chain only; bad shapes are refused.
//
// Parameters are full n x n matrices P, made well conditioned by adding a
// multiple of the identity (diagonally dominant). chol, chol2inv and the
// triangular solves read only one triangle of P, as R's functions do, so the
// finite differences of the other triangle are 0 and so must the gradient be.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include "helpers.hpp"
#include "lockstep/executor.hpp"
#include "lockstep/ir.hpp"
#include "lockstep/math/linalg.hpp"
#include "lockstep/planner.hpp"

using namespace lstest;

namespace {

using Matrix = std::vector<double>;  // n x cols, column-major

const char* backend_label(Backend b) { return b == Backend::cpu ? "cpu" : "emulated"; }

Matrix identity(long n, double scale = 1) {
  Matrix m(n * n, 0.0);
  for (long i = 0; i < n; ++i) m[i + i * n] = scale;
  return m;
}

Matrix multiply(const Matrix& a, const Matrix& b, long m, long k, long n) {
  Matrix y(m * n, 0.0);
  for (long j = 0; j < n; ++j)
    for (long i = 0; i < m; ++i)
      for (long l = 0; l < k; ++l) y[i + j * m] += a[i + l * m] * b[l + j * k];
  return y;
}

Matrix transposed(const Matrix& a, long rows, long cols) {
  Matrix y(rows * cols);
  for (long j = 0; j < cols; ++j)
    for (long i = 0; i < rows; ++i) y[j + i * cols] = a[i + j * rows];
  return y;
}

// The upper (lower) triangle of a, the rest 0.
Matrix triangle(const Matrix& a, long n, bool upper) {
  Matrix t(n * n, 0.0);
  for (long j = 0; j < n; ++j)
    for (long i = 0; i < n; ++i)
      if (upper ? i <= j : i >= j) t[i + j * n] = a[i + j * n];
  return t;
}

// Cholesky-Banachiewicz on the symmetric matrix whose upper triangle is a's:
// the lower L row by row, returned as R = L^T.
Matrix ref_chol(const Matrix& a, long n) {
  Matrix l(n * n, 0.0);
  auto sym = [&](long i, long j) { return i <= j ? a[i + j * n] : a[j + i * n]; };
  for (long i = 0; i < n; ++i)
    for (long j = 0; j <= i; ++j) {
      double s = sym(i, j);
      for (long k = 0; k < j; ++k) s -= l[i + k * n] * l[j + k * n];
      l[i + j * n] = i == j ? std::sqrt(s) : s / l[j + j * n];
    }
  return transposed(l, n, n);
}

// a^-1 b by Gauss-Jordan elimination with partial pivoting on [a | b].
Matrix ref_solve(const Matrix& a0, const Matrix& b0, long n, long cols) {
  Matrix a = a0, b = b0;
  for (long k = 0; k < n; ++k) {
    long p = k;
    for (long i = k + 1; i < n; ++i)
      if (std::fabs(a[i + k * n]) > std::fabs(a[p + k * n])) p = i;
    for (long j = 0; j < n; ++j) std::swap(a[k + j * n], a[p + j * n]);
    for (long j = 0; j < cols; ++j) std::swap(b[k + j * n], b[p + j * n]);
    const double d = a[k + k * n];
    for (long j = 0; j < n; ++j) a[k + j * n] /= d;
    for (long j = 0; j < cols; ++j) b[k + j * n] /= d;
    for (long i = 0; i < n; ++i) {
      if (i == k) continue;
      const double f = a[i + k * n];
      for (long j = 0; j < n; ++j) a[i + j * n] -= f * a[k + j * n];
      for (long j = 0; j < cols; ++j) b[i + j * n] -= f * b[k + j * n];
    }
  }
  return b;
}

Matrix ref_inverse(const Matrix& a, long n) { return ref_solve(a, identity(n), n, n); }

// Element (i, j) of a chain's value of node id.
double value_at(const Executor<double>& ex, const Program& p, int id, long c, long k) {
  const Node& n = p.nodes[id];
  return ex.value(id)[(n.chain ? c * n.size : 0) + k];
}

void check_matrix(const Executor<double>& ex, const Program& p, int id, long c, const Matrix& want,
                  double tol) {
  for (size_t k = 0; k < want.size(); ++k) {
    INFO("node " << id << " (" << lockstep::op_name(p.nodes[id].op) << "), chain " << c
                 << ", element " << k);
    CHECK(close(value_at(ex, p, id, c, static_cast<long>(k)), want[k], tol, tol));
  }
}

// normal(target, mean = data, sd = 1.3): an objective whose gradient reaches
// every element of the target.
void objective(Program& p, int target, std::mt19937& rng) {
  const Node& t = p.nodes[target];
  const int mean = p.add(data_node(uniform_vector(rng, t.size, -1, 1), t.dim));
  const int sd = p.add(data_node({1.3}, {1, 1}));
  add_term(p, density_node(Family::normal, {target, mean, sd}));
}

// A chain's slice [offset, offset + size) of the state, as a matrix.
Matrix slice(const std::vector<double>& state, long D, long c, long offset, long size) {
  return Matrix(state.begin() + c * D + offset, state.begin() + c * D + offset + size);
}

Matrix plus(Matrix a, const Matrix& b) {
  for (size_t k = 0; k < a.size(); ++k) a[k] += b[k];
  return a;
}

// Z^T Z + I for an n x n parameter matrix Z at coordinates [offset, offset +
// n^2) of the state: symmetric and positive definite, both triangles
// depending on Z (so a gradient reaches every element). Returns its node.
int gram_of_parameters(Program& p, long n, long offset) {
  const int Z = p.add(param_node(n * n, offset, Transform::none, 0, 0, {n, n}));
  const int ZtZ = p.add(matmul_node(p.add(transpose_node(Z, p)), Z, p));
  return p.add(binary_node(Op::add, ZtZ, p.add(data_node(identity(n), {n, n})), p));
}

// Runs f(chains, backend) for 1, 3, 8 and 17 chains on both backends: 17 is
// more than the emulated launch's 15 lanes, so a lane strides over chains.
template <class F> void each_setting(F f) {
  for (long chains : {1L, 3L, 8L, 17L})
    for (Backend backend : {Backend::cpu, Backend::emulated}) {
      INFO("chains " << chains << ", " << backend_label(backend));
      f(chains, backend);
    }
}

// The values of every linalg node on the CPU and the emulated backend are
// identical (a lane runs a chain's whole computation, in the same order);
// the log density and gradient agree up to the order in which the density
// terms' block sums are added.
void check_backends_agree(const Program& p, long chains, const std::vector<double>& state) {
  Executor<double> cpu(p, chains, Backend::cpu), emu(p, chains, Backend::emulated);
  cpu.forward(state.data());
  emu.forward(state.data());
  for (size_t id = 0; id < p.nodes.size(); ++id) {
    if (lockstep::op_family(p.nodes[id].op) != lockstep::OpFamily::linalg) continue;
    const auto& a = cpu.value(static_cast<int>(id));
    const auto& b = emu.value(static_cast<int>(id));
    REQUIRE(a.size() == b.size());
    for (size_t k = 0; k < a.size(); ++k) {
      INFO("node " << id << ", element " << k);
      CHECK((a[k] == b[k] || (std::isnan(a[k]) && std::isnan(b[k]))));
    }
  }
  const Eval ec = evaluate(p, chains, state, Backend::cpu);
  const Eval ee = evaluate(p, chains, state, Backend::emulated);
  for (long c = 0; c < chains; ++c) CHECK(close(ec.lp[c], ee.lp[c], 1e-14));
  for (size_t k = 0; k < ec.grad.size(); ++k) CHECK(close(ec.grad[k], ee.grad[k], 1e-12, 1e-14));
}

}  // namespace

TEST_CASE("chol: the upper factor of the upper triangle against Cholesky-Banachiewicz and "
          "gradients",
          "[ops][linalg][chol]") {
  std::mt19937 rng(501);
  const long n = 4, nn = n * n;
  each_setting([&](long chains, Backend backend) {
    Program p;
    // a: P + 4 I, P a full parameter matrix (only its upper triangle is read)
    const int P = p.add(param_node(nn, 0, Transform::none, 0, 0, {n, n}));
    const int I4 = p.add(data_node(identity(n, 4), {n, n}));
    const int A = p.add(binary_node(Op::add, P, I4, p));
    const int R = p.add(linalg_node(Op::chol, A, p));
    // a Gram matrix Z^T Z + I: symmetric, both triangles depend on Z
    const int G = gram_of_parameters(p, n, nn);
    const int RG = p.add(linalg_node(Op::chol, G, p));
    // chol of data: no chain dimension, computed once
    Matrix dA = plus(triangle(uniform_vector(rng, nn, -0.5, 0.5), n, true), identity(n, 3));
    const int D = p.add(data_node(dA, {n, n}));
    const int RD = p.add(linalg_node(Op::chol, D, p));
    const int s = p.add(param_node(1, 2 * nn));
    const int RDs = p.add(binary_node(Op::mul, RD, s, p));
    p.n_free = 2 * nn + 1;
    for (int t : {R, RG, RDs}) objective(p, t, rng);
    lockstep::plan(p);
    CHECK(p.nodes[R].chain);
    CHECK_FALSE(p.nodes[RD].chain);
    CHECK(p.nodes[R].extent < 0);
    const long D_ = p.n_free;
    std::vector<double> state = uniform_vector(rng, chains * D_, -0.5, 0.5);

    Executor<double> ex(p, chains, backend);
    ex.forward(state.data());
    check_matrix(ex, p, RD, 0, ref_chol(dA, n), 1e-14);
    for (long c = 0; c < chains; ++c) {
      const Matrix a = plus(slice(state, D_, c, 0, nn), identity(n, 4));
      const Matrix r = ref_chol(a, n);
      check_matrix(ex, p, R, c, r, 1e-13);
      // R^T R is the symmetric matrix of a's upper triangle; R is upper triangular
      const Matrix rtr = multiply(transposed(r, n, n), r, n, n, n);
      for (long j = 0; j < n; ++j)
        for (long i = 0; i <= j; ++i) CHECK(close(rtr[i + j * n], a[i + j * n], 1e-13, 1e-13));
      for (long j = 0; j < n; ++j)
        for (long i = j + 1; i < n; ++i) CHECK(value_at(ex, p, R, c, i + j * n) == 0);
      const Matrix z = slice(state, D_, c, nn, nn);
      const Matrix g = plus(multiply(transposed(z, n, n), z, n, n, n), identity(n));
      check_matrix(ex, p, RG, c, ref_chol(g, n), 1e-13);
    }
    check_gradient(p, chains, state, 1e-7, 1e-9, 1e-4, backend);
    if (backend == Backend::cpu) check_backends_agree(p, chains, state);
  });
}

#if defined(LOCKSTEP_CHOL_BACKWARD_PAIR)
// chol()'s gradient two chains at a time, as the CPU runs chain pairs: each
// chain's gradient must be what chol_backward() gives it alone, to the bit,
// in double and in single precision, and added to what da already holds.
template <class T> void check_chol_backward_pair(std::mt19937& rng, long n) {
  std::normal_distribution<double> z;
  std::vector<T> r[2], rb[2], da[2], alone[2];
  for (int w = 0; w < 2; ++w) {
    Matrix g(n * n), a(n * n, 0.0), f(n * n);
    for (double& v : g) v = z(rng);
    for (long i = 0; i < n; ++i)
      for (long j = 0; j < n; ++j) {
        for (long k = 0; k < n; ++k) a[i + j * n] += g[i + k * n] * g[j + k * n];
        if (i == j) a[i + j * n] += n;
      }
    REQUIRE(lockstep::chol_upper(a.data(), f.data(), n));
    r[w].assign(f.begin(), f.end());
    rb[w].resize(n * n);
    for (T& v : rb[w]) v = static_cast<T>(z(rng));
    da[w].resize(n * n);
    for (T& v : da[w]) v = static_cast<T>(z(rng));  // gradients already there
    alone[w] = da[w];
    std::vector<double> work(n * n);
    lockstep::chol_backward(r[w].data(), rb[w].data(), alone[w].data(), work.data(), n);
  }
  const T* rp[2] = {r[0].data(), r[1].data()};
  const T* rbp[2] = {rb[0].data(), rb[1].data()};
  T* dap[2] = {da[0].data(), da[1].data()};
  lockstep::chol_backward_pair(rp, rbp, dap, n);
  for (int w = 0; w < 2; ++w)
    for (long k = 0; k < n * n; ++k) {
      INFO("chain " << w << ", k = " << k);
      CHECK(da[w][k] == alone[w][k]);
    }
}

TEST_CASE("chol_backward_pair: two chains' gradients at once are each chain's chol_backward, "
          "to the last bit",
          "[ops][linalg][chol]") {
  std::mt19937 rng(504);
  for (long n = 1; n <= lockstep::chol_backward_pair_max_n; n += (n < 6 ? 1 : 6)) {
    INFO("n = " << n);
    check_chol_backward_pair<double>(rng, n);
    check_chol_backward_pair<float>(rng, n);
  }
}
#endif

TEST_CASE("chol_upper_lanes: two matrices at once give each one's chol_upper factor to the last bit",
          "[ops][linalg][chol]") {
  std::mt19937 rng(503);
  std::normal_distribution<double> z;
  for (long n : {1L, 2L, 5L, 11L, 17L}) {
    INFO("n = " << n);
    // A = G G^T + n I, and a second one; then the second made indefinite
    auto spd = [&]() {
      Matrix g(n * n), a(n * n, 0.0);
      for (double& v : g) v = z(rng);
      for (long i = 0; i < n; ++i)
        for (long j = 0; j < n; ++j) {
          for (long k = 0; k < n; ++k) a[i + j * n] += g[i + k * n] * g[j + k * n];
          if (i == j) a[i + j * n] += n;
        }
      return a;
    };
    for (int bad = 0; bad < 3; ++bad) {
      Matrix a0 = spd(), a1 = spd();
      if (bad == 1) a1[(n - 1) + (n - 1) * n] = -1;  // the last pivot fails
      if (bad == 2) a0[0] = 0;                       // the first pivot fails
      Matrix r0(n * n, 7.0), r1(n * n, 7.0), s0(n * n, 7.0), s1(n * n, 7.0);
      const bool ok0 = lockstep::chol_upper(a0.data(), s0.data(), n);
      const bool ok1 = lockstep::chol_upper(a1.data(), s1.data(), n);
      const double* a[2] = {a0.data(), a1.data()};
      double* r[2] = {r0.data(), r1.data()};
      bool ok[2];
      lockstep::chol_upper_lanes<2>(a, r, n, ok);
      CHECK(ok[0] == ok0);
      CHECK(ok[1] == ok1);
      CHECK(ok0 == (bad != 2));
      CHECK(ok1 == (bad != 1));
      for (long k = 0; k < n * n; ++k) {
        INFO("k = " << k);
        if (ok0) CHECK(r0[k] == s0[k]);
        else CHECK((std::isnan(r0[k]) && std::isnan(s0[k])));
        if (ok1) CHECK(r1[k] == s1[k]);
        else CHECK((std::isnan(r1[k]) && std::isnan(s1[k])));
      }
    }
  }
}

TEST_CASE("chol: a matrix that is not positive definite gives NaN for its chain only",
          "[ops][linalg][chol][nan]") {
  const long n = 3, nn = n * n;
  for (Backend backend : {Backend::cpu, Backend::emulated}) {
    INFO(backend_label(backend));
    const long chains = 3;
    Program p;
    const int A = p.add(param_node(nn, 0, Transform::none, 0, 0, {n, n}));
    const int R = p.add(linalg_node(Op::chol, A, p));
    p.n_free = nn;
    std::mt19937 rng(502);
    objective(p, R, rng);
    lockstep::plan(p);
    // chain 0: 2 I; chain 1: indefinite (a negative pivot at the second
    // step); chain 2: a zero first pivot
    std::vector<double> state(chains * nn, 0.0);
    for (long i = 0; i < n; ++i) state[i + i * n] = 2;
    for (long i = 0; i < n; ++i) state[nn + i + i * n] = 1;
    state[nn + 0 + 1 * n] = 2;  // upper (0, 1): 1 - 2^2 < 0
    state[2 * nn + 1 + 1 * n] = 1;
    state[2 * nn + 2 + 2 * n] = 1;
    Executor<double> ex(p, chains, backend);
    std::vector<double> lp(chains), grad(chains * nn);
    ex.log_density(state.data(), lp.data(), grad.data());
    CHECK(std::isfinite(lp[0]));
    CHECK(std::isnan(lp[1]));
    CHECK(std::isnan(lp[2]));
    for (long k = 0; k < nn; ++k) {
      CHECK(std::isfinite(grad[k]));
      CHECK(std::isnan(ex.value(R)[nn + k]));
      CHECK(std::isnan(ex.value(R)[2 * nn + k]));
    }
    CHECK(close(ex.value(R)[0], std::sqrt(2.0), 1e-15));
  }
}

TEST_CASE("chol2inv: (R^T R)^-1 of the upper triangle against Gauss-Jordan and gradients",
          "[ops][linalg][chol2inv]") {
  std::mt19937 rng(503);
  const long n = 4, nn = n * n;
  each_setting([&](long chains, Backend backend) {
    Program p;
    const int P = p.add(param_node(nn, 0, Transform::none, 0, 0, {n, n}));
    const int I3 = p.add(data_node(identity(n, 3), {n, n}));
    const int Rm = p.add(binary_node(Op::add, P, I3, p));
    const int Y = p.add(linalg_node(Op::chol2inv, Rm, p));
    // chol2inv(chol(G)) = G^-1, with G = Z^T Z + I
    const int G = gram_of_parameters(p, n, nn);
    const int GI = p.add(linalg_node(Op::chol2inv, p.add(linalg_node(Op::chol, G, p)), p));
    p.n_free = 2 * nn;
    for (int t : {Y, GI}) objective(p, t, rng);
    lockstep::plan(p);
    const long D_ = p.n_free;
    std::vector<double> state = uniform_vector(rng, chains * D_, -0.5, 0.5);
    Executor<double> ex(p, chains, backend);
    ex.forward(state.data());
    for (long c = 0; c < chains; ++c) {
      const Matrix r = triangle(plus(slice(state, D_, c, 0, nn), identity(n, 3)), n, true);
      const Matrix want = ref_inverse(multiply(transposed(r, n, n), r, n, n, n), n);
      check_matrix(ex, p, Y, c, want, 1e-13);
      for (long j = 0; j < n; ++j)  // exactly symmetric, as R's
        for (long i = 0; i < n; ++i)
          CHECK(value_at(ex, p, Y, c, i + j * n) == value_at(ex, p, Y, c, j + i * n));
      const Matrix z = slice(state, D_, c, nn, nn);
      const Matrix g = plus(multiply(transposed(z, n, n), z, n, n, n), identity(n));
      check_matrix(ex, p, GI, c, ref_inverse(g, n), 1e-12);
    }
    check_gradient(p, chains, state, 1e-7, 1e-9, 1e-4, backend);
    if (backend == Backend::cpu) check_backends_agree(p, chains, state);
  });
}

TEST_CASE("solve: a^-1 b by LU against Gauss-Jordan and gradients for both operands",
          "[ops][linalg][solve]") {
  std::mt19937 rng(504);
  const long n = 4, k = 3, nn = n * n;
  each_setting([&](long chains, Backend backend) {
    Program p;
    // a = P + 3 I with P's entries in [-1, 1]: pivoting happens (a row's
    // largest entry is not always on the diagonal before elimination)
    const int P = p.add(param_node(nn, 0, Transform::none, 0, 0, {n, n}));
    const int A = p.add(binary_node(Op::add, P, p.add(data_node(identity(n, 3), {n, n})), p));
    const int B = p.add(param_node(n * k, nn, Transform::none, 0, 0, {n, k}));
    const int X = p.add(linalg_node(Op::solve, A, p, B));
    // data a, parameter b; parameter a, data b; the inverse: solve(a, I)
    const Matrix dA = plus(uniform_vector(rng, nn, -1, 1), identity(n, 3));
    const Matrix dB = uniform_vector(rng, n * k, -1, 1);
    const int DA = p.add(data_node(dA, {n, n}));
    const int DB = p.add(data_node(dB, {n, k}));
    const int X1 = p.add(linalg_node(Op::solve, DA, p, B));
    const int X2 = p.add(linalg_node(Op::solve, A, p, DB));
    const int Inv = p.add(linalg_node(Op::solve, A, p, p.add(data_node(identity(n), {n, n}))));
    // one node as both operands: solve(a, a) = I, whose gradient is 0
    const int Self = p.add(linalg_node(Op::solve, A, p, A));
    // a permutation that needs pivoting at the first step
    const int Perm = p.add(data_node({0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 1, 0}, {n, n}));
    const int XP = p.add(linalg_node(Op::solve, Perm, p, B));
    p.n_free = nn + n * k;
    for (int t : {X, X1, X2, Inv, Self, XP}) objective(p, t, rng);
    lockstep::plan(p);
    const long D_ = p.n_free;
    std::vector<double> state = uniform_vector(rng, chains * D_, -1, 1);
    Executor<double> ex(p, chains, backend);
    ex.forward(state.data());
    for (long c = 0; c < chains; ++c) {
      const Matrix a = plus(slice(state, D_, c, 0, nn), identity(n, 3));
      const Matrix b = slice(state, D_, c, nn, n * k);
      check_matrix(ex, p, X, c, ref_solve(a, b, n, k), 1e-13);
      check_matrix(ex, p, X1, c, ref_solve(dA, b, n, k), 1e-13);
      check_matrix(ex, p, X2, c, ref_solve(a, dB, n, k), 1e-13);
      check_matrix(ex, p, Inv, c, ref_inverse(a, n), 1e-13);
      check_matrix(ex, p, Self, c, identity(n), 1e-13);
      // Perm swaps rows 0 and 1 and rows 2 and 3: x is b with those rows swapped
      Matrix xp(n * k);
      for (long j = 0; j < k; ++j)
        for (long i = 0; i < n; ++i) xp[(i ^ 1) + j * n] = b[i + j * n];
      check_matrix(ex, p, XP, c, xp, 0);
    }
    check_gradient(p, chains, state, 1e-7, 1e-9, 1e-4, backend);
    if (backend == Backend::cpu) check_backends_agree(p, chains, state);
  });
}

TEST_CASE("solve: an exactly singular matrix gives NaN for its chain only",
          "[ops][linalg][solve][nan]") {
  const long n = 2, nn = n * n;
  for (Backend backend : {Backend::cpu, Backend::emulated}) {
    INFO(backend_label(backend));
    Program p;
    const int A = p.add(param_node(nn, 0, Transform::none, 0, 0, {n, n}));
    const int b = p.add(data_node({1, 2}, {n, 1}));
    const int X = p.add(linalg_node(Op::solve, A, p, b));
    p.n_free = nn;
    std::mt19937 rng(505);
    objective(p, X, rng);
    lockstep::plan(p);
    // chain 0: [[2, 1], [1, 3]]; chain 1: [[1, 2], [2, 4]] (rank 1)
    const std::vector<double> state = {2, 1, 1, 3, 1, 2, 2, 4};
    Executor<double> ex(p, 2, backend);
    std::vector<double> lp(2), grad(2 * nn);
    ex.log_density(state.data(), lp.data(), grad.data());
    CHECK(std::isfinite(lp[0]));
    CHECK(std::isnan(lp[1]));
    CHECK(close(ex.value(X)[0], 0.2, 1e-15));  // [[2, 1], [1, 3]]^-1 (1, 2) = (0.2, 0.6)
    CHECK(close(ex.value(X)[1], 0.6, 1e-15));
    CHECK(std::isnan(ex.value(X)[2]));
    for (long k = 0; k < nn; ++k) CHECK(std::isfinite(grad[k]));
  }
}

TEST_CASE("backsolve and forwardsolve: one triangle read, against substitution and gradients",
          "[ops][linalg][backsolve][forwardsolve]") {
  std::mt19937 rng(506);
  const long n = 4, k = 2, nn = n * n;
  each_setting([&](long chains, Backend backend) {
    Program p;
    const int P = p.add(param_node(nn, 0, Transform::none, 0, 0, {n, n}));
    const int T = p.add(binary_node(Op::add, P, p.add(data_node(identity(n, 3), {n, n})), p));
    const int B = p.add(param_node(n * k, nn, Transform::none, 0, 0, {n, k}));
    const int U = p.add(linalg_node(Op::backsolve, T, p, B));
    const int L = p.add(linalg_node(Op::forwardsolve, T, p, B));
    // transpose = TRUE in R: backsolve(r, x, transpose = TRUE) = forwardsolve(t(r), x)
    const int UT = p.add(linalg_node(Op::forwardsolve, p.add(transpose_node(T, p)), p, B));
    // data triangle, parameter right-hand side; parameter triangle, data right-hand side
    const Matrix dT = plus(uniform_vector(rng, nn, -1, 1), identity(n, 3));
    const Matrix dB = uniform_vector(rng, n * k, -1, 1);
    const int DT = p.add(data_node(dT, {n, n}));
    const int DB = p.add(data_node(dB, {n, k}));
    const int U1 = p.add(linalg_node(Op::backsolve, DT, p, B));
    const int L2 = p.add(linalg_node(Op::forwardsolve, T, p, DB));
    // a vector right-hand side
    const int v = p.add(param_node(n, nn + n * k));
    const int Uv = p.add(linalg_node(Op::backsolve, T, p, v));
    p.n_free = nn + n * k + n;
    for (int t : {U, L, UT, U1, L2, Uv}) objective(p, t, rng);
    lockstep::plan(p);
    const long D_ = p.n_free;
    std::vector<double> state = uniform_vector(rng, chains * D_, -1, 1);
    Executor<double> ex(p, chains, backend);
    ex.forward(state.data());
    for (long c = 0; c < chains; ++c) {
      const Matrix t = plus(slice(state, D_, c, 0, nn), identity(n, 3));
      const Matrix b = slice(state, D_, c, nn, n * k);
      const Matrix up = triangle(t, n, true), lo = triangle(t, n, false);
      check_matrix(ex, p, U, c, ref_solve(up, b, n, k), 1e-13);
      check_matrix(ex, p, L, c, ref_solve(lo, b, n, k), 1e-13);
      check_matrix(ex, p, UT, c, ref_solve(transposed(up, n, n), b, n, k), 1e-13);
      check_matrix(ex, p, U1, c, ref_solve(triangle(dT, n, true), b, n, k), 1e-13);
      check_matrix(ex, p, L2, c, ref_solve(lo, dB, n, k), 1e-13);
      check_matrix(ex, p, Uv, c, ref_solve(up, slice(state, D_, c, nn + n * k, n), n, 1), 1e-13);
    }
    check_gradient(p, chains, state, 1e-7, 1e-9, 1e-4, backend);
    if (backend == Backend::cpu) check_backends_agree(p, chains, state);
  });
}

// eigen(a): n x (n + 1), the values then the vectors.
Node eigen_node(int a, const Program& p) {
  Node n;
  n.op = Op::eigen;
  n.inputs = {a};
  const long order = p.nodes[a].dim[0];
  n.dim = {order, order + 1};
  n.size = order * (order + 1);
  return n;
}

TEST_CASE("eigen: values and vectors of the lower triangle, decomposing it, with gradients",
          "[ops][linalg][eigen]") {
  std::mt19937 rng(509);
  const long n = 4, nn = n * n;
  each_setting([&](long chains, Backend backend) {
    Program p;
    // a random (not symmetric) matrix: only its lower triangle is read; the
    // diagonal spread keeps the eigenvalues apart, so the vectors are smooth
    std::vector<double> spread(nn, 0.0);
    for (long i = 0; i < n; ++i) spread[i + i * n] = 1.5 * static_cast<double>(i);
    const int P = p.add(param_node(nn, 0, Transform::none, 0, 0, {n, n}));
    const int A = p.add(binary_node(Op::add, P, p.add(data_node(spread, {n, n})), p));
    const int E = p.add(eigen_node(A, p));
    // a 1 x 1 and a 2 x 2 one, whose rotation is a single step
    const int S1 = p.add(eigen_node(p.add(param_node(1, nn, Transform::none, 0, 0, {1, 1})), p));
    const int P2 = p.add(param_node(4, nn + 1, Transform::none, 0, 0, {2, 2}));
    const int E2 = p.add(eigen_node(P2, p));
    p.n_free = nn + 5;
    for (int t : {E, S1, E2}) objective(p, t, rng);
    lockstep::plan(p);
    const long D_ = p.n_free;
    std::vector<double> state = uniform_vector(rng, chains * D_, -0.5, 0.5);
    Executor<double> ex(p, chains, backend);
    ex.forward(state.data());
    for (long c = 0; c < chains; ++c) {
      const Matrix a = plus(slice(state, D_, c, 0, nn), spread);
      for (long order : {n, 2L}) {
        const int id = order == n ? E : E2;
        const Matrix m = order == n ? a : slice(state, D_, c, nn + 1, 4);
        auto at = [&](long k) { return value_at(ex, p, id, c, k); };
        for (long j = 0; j < order; ++j) {
          INFO("order " << order << ", chain " << c << ", value " << j);
          if (j > 0) CHECK(at(j - 1) >= at(j));  // decreasing
          double norm = 0, largest = 0;
          for (long i = 0; i < order; ++i) {
            const double x = at(i + (j + 1) * order);
            norm += x * x;
            if (std::fabs(x) > std::fabs(largest)) largest = x;
            // A v = lambda v, A the lower triangle symmetrised
            double av = 0;
            for (long k = 0; k < order; ++k) {
              const double aik = i >= k ? m[i + k * order] : m[k + i * order];
              av += aik * at(k + (j + 1) * order);
            }
            CHECK(close(av, at(j) * x, 1e-12, 1e-12));
          }
          CHECK(close(norm, 1, 1e-13));
          CHECK(largest > 0);  // the sign convention
          for (long k = 0; k < j; ++k) {  // orthogonal
            double dot = 0;
            for (long i = 0; i < order; ++i)
              dot += at(i + (j + 1) * order) * at(i + (k + 1) * order);
            CHECK(std::fabs(dot) < 1e-13);
          }
        }
      }
      // 1 x 1: the value itself, and the vector 1
      CHECK(value_at(ex, p, S1, c, 0) == state[c * D_ + nn]);
      CHECK(value_at(ex, p, S1, c, 1) == 1.0);
    }
    check_gradient(p, chains, state, 1e-6, 1e-8, 1e-5, backend);
    if (backend == Backend::cpu) check_backends_agree(p, chains, state);
  });
}

TEST_CASE("eigen: equal eigenvalues give finite gradients when only the values are used",
          "[ops][linalg][eigen]") {
  // a = s * I + 2 I: every eigenvalue is s + 2, the vectors have no derivative,
  // but the sum of the values (the trace) does: n
  const long n = 3;
  Program p;
  const int s = p.add(param_node(1, 0, Transform::none, 0, 0, {1, 1}));
  std::vector<double> eye(n * n, 0.0);
  for (long i = 0; i < n; ++i) eye[i + i * n] = 1;
  const int sI = p.add(binary_node(Op::mul, p.add(data_node(eye, {n, n})), s, p));
  const int A = p.add(binary_node(Op::add, sI, p.add(data_node(identity(n, 2), {n, n})), p));
  const int E = p.add(eigen_node(A, p));
  const int values = p.add(gather_node(E, {0, 1, 2}));
  add_term(p, density_node(Family::normal, {p.add(data_node({0.5, 1.0, 2.0}, {3, 1})), values,
                                            p.add(data_node({1.0}, {1, 1}))}));
  p.n_free = 1;
  lockstep::plan(p);
  for (Backend backend : {Backend::cpu, Backend::emulated}) {
    const std::vector<double> state = {0.3, -0.7};
    const Eval e = evaluate(p, 2, state, backend);
    for (long c = 0; c < 2; ++c) {
      const double lambda = state[c] + 2;
      double want = 0;
      for (double y : {0.5, 1.0, 2.0}) want += y - lambda;  // d/ds of sum log N(y | lambda, 1)
      CHECK(std::isfinite(e.grad[c]));
      CHECK(close(e.grad[c], want, 1e-12, 1e-12));
    }
  }
}

TEST_CASE("linalg ops stay in the global stage and feed the observation stage",
          "[ops][linalg][planner]") {
  // y ~ normal(X %*% solve(A, b), 1) over N rows: the row-aligned product
  // reads the solve's value (global, one per chain) in every tile, and its
  // adjoint comes back from the tiles; and a 5 x 5 solve of a likelihood's
  // 5-row data is not row-aligned either (each output row reads every row).
  const long n = 3, N = 50;
  Program p;
  std::mt19937 rng(507);
  const int y = p.add(data_node(uniform_vector(rng, N, -1, 1), {N, 1}));
  const int X = p.add(data_node(uniform_vector(rng, N * n, -1, 1), {N, n}));
  const int a = p.add(param_node(n * n, 0, Transform::none, 0, 0, {n, n}));
  const int A = p.add(binary_node(Op::add, a, p.add(data_node(identity(n, 3), {n, n})), p));
  const int b = p.add(param_node(n, n * n, Transform::none, 0, 0, {n, 1}));
  const int x = p.add(linalg_node(Op::solve, A, p, b));
  const int mu = p.add(matmul_node(X, x, p));
  const int sd = p.add(data_node({1.0}, {1, 1}));
  add_term(p, density_node(Family::normal, {y, mu, sd}));
  const long m = 5;
  const int y5 = p.add(data_node(uniform_vector(rng, m, -1, 1), {m, 1}));
  const int a5 = p.add(param_node(m * m, n * n + n, Transform::none, 0, 0, {m, m}));
  const int A5 = p.add(binary_node(Op::add, a5, p.add(data_node(identity(m, 4), {m, m})), p));
  const int x5 = p.add(linalg_node(Op::backsolve, A5, p, p.add(data_node(identity(m), {m, m}))));
  const int s5 = p.add(linalg_node(Op::forwardsolve, x5, p, y5));
  add_term(p, density_node(Family::normal, {y5, s5, sd}));
  p.n_free = n * n + n + m * m;
  lockstep::plan(p);
  CHECK(p.nodes[x].extent < 0);
  CHECK(p.nodes[mu].extent >= 0);
  CHECK(p.nodes[x5].extent < 0);
  CHECK(p.nodes[s5].extent < 0);
  const std::vector<double> state = uniform_vector(rng, 3 * p.n_free, -0.5, 0.5);
  check_gradient(p, 3, state, 1e-7, 1e-9);
  // the tiled executor (small tiles, two threads) against the op-by-op one
  lockstep::ExecOptions tiled, plain;
  tiled.tile_rows = 7;
  tiled.threads = 2;
  plain.observation_stage = false;
  Executor<double> et(p, 3, tiled), ep(p, 3, plain);
  std::vector<double> lt(3), lp(3), gt(3 * p.n_free), gp(3 * p.n_free);
  et.log_density(state.data(), lt.data(), gt.data());
  ep.log_density(state.data(), lp.data(), gp.data());
  for (long c = 0; c < 3; ++c) CHECK(close(lt[c], lp[c], 1e-13));
  for (size_t k = 0; k < gt.size(); ++k) CHECK(close(gt[k], gp[k], 1e-12, 1e-14));
}

TEST_CASE("linalg ops: non-square matrices and mismatched right-hand sides are refused",
          "[ops][linalg][ir]") {
  auto refused = [](Op op, std::vector<long> adim, std::vector<long> bdim, std::vector<long> out) {
    Program p;
    const int a = p.add(data_node(std::vector<double>(product(adim), 1.0), adim));
    Node n;
    n.op = op;
    n.inputs = {a};
    if (!bdim.empty()) n.inputs.push_back(p.add(data_node(std::vector<double>(product(bdim), 1.0), bdim)));
    n.dim = out;
    n.size = product(out);
    p.add(n);
    CHECK_THROWS_AS(lockstep::validate(p), std::invalid_argument);
  };
  refused(Op::chol, {2, 3}, {}, {2, 3});
  refused(Op::chol, {3, 3}, {}, {3, 1});
  refused(Op::chol2inv, {3, 2}, {}, {3, 2});
  refused(Op::solve, {2, 3}, {2, 1}, {2, 1});
  refused(Op::solve, {3, 3}, {2, 1}, {2, 1});
  refused(Op::solve, {3, 3}, {3, 2}, {3, 1});
  refused(Op::backsolve, {3, 3}, {4, 1}, {4, 1});
  refused(Op::forwardsolve, {3, 2}, {3, 1}, {3, 1});
  refused(Op::chol, {2, 2}, {2, 2}, {2, 2});  // arity
  refused(Op::eigen, {3, 3}, {}, {3, 3});   // values and vectors: 3 x 4
  refused(Op::eigen, {2, 3}, {}, {2, 4});
}
