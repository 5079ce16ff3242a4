// Dense linear algebra on one small square matrix (one chain's), written once
// for every backend: the Cholesky factor, triangular and LU solves, and the
// reverse-mode rules of the linalg ops (kernels/linalg.hpp).
//
// Matrices are n x n, column-major (element (i, j) at i + j * n), as R's. Inputs
// are read in the value type M (the node's T, or double for a factor kept in
// the workspace); every sum is accumulated in double, also in single precision.
// A factor or right-hand side being worked on lives in a double workspace.
//
// The conventions are R's: chol() returns the upper triangular R with
// A = R^T R and reads only the upper triangle of A (LAPACK dpotrf, uplo = "U");
// chol2inv(R) = (R^T R)^-1 reads only the upper triangle of R; backsolve()
// reads only the upper triangle of its matrix and forwardsolve() only the
// lower. The gradients are those of these functions as R defines them: an
// element that is not read gets a zero gradient.
#ifndef LOCKSTEP_MATH_LINALG_HPP
#define LOCKSTEP_MATH_LINALG_HPP

#include <cmath>

#include "../hd.hpp"
#include "special.hpp"

namespace lockstep {

// Solves t x = b in place (b becomes x) for the triangle of t named by
// `lower`, or its transpose t^T x = b with `transposed`; `unit`: the diagonal
// is taken to be 1 (the L of an LU factorisation). The loops run down t's
// columns, which are contiguous, or along them for the transposed system.
// Each unknown is multiplied by the reciprocal of its diagonal element, which
// does not depend on the unknowns and so is divided out ahead of time, rather
// than divided by it on the chain of dependent updates: chol()'s gradient,
// 2n solves, spent most of its time waiting on those divisions.
template <class M>
LS_HD void tri_solve(const M* t, double* b, long n, bool lower, bool transposed, bool unit = false) {
  // The system's matrix is lower triangular when t is lower and not
  // transposed, or upper and transposed: forward substitution.
  const bool forward = lower != transposed;
  if (!transposed) {
    if (forward) {
      for (long k = 0; k < n; ++k) {
        if (!unit) b[k] *= 1.0 / static_cast<double>(t[k + k * n]);
        const double bk = b[k];
        const M* col = t + k * n;
        for (long i = k + 1; i < n; ++i) b[i] -= static_cast<double>(col[i]) * bk;
      }
    } else {
      for (long k = n - 1; k >= 0; --k) {
        if (!unit) b[k] *= 1.0 / static_cast<double>(t[k + k * n]);
        const double bk = b[k];
        const M* col = t + k * n;
        for (long i = 0; i < k; ++i) b[i] -= static_cast<double>(col[i]) * bk;
      }
    }
    return;
  }
  // t^T x = b: row i of t^T is column i of t.
  if (forward) {  // t upper: t^T lower
    for (long i = 0; i < n; ++i) {
      const M* col = t + i * n;
      double s = b[i];
      for (long k = 0; k < i; ++k) s -= static_cast<double>(col[k]) * b[k];
      b[i] = unit ? s : s * (1.0 / static_cast<double>(col[i]));
    }
  } else {  // t lower: t^T upper
    for (long i = n - 1; i >= 0; --i) {
      const M* col = t + i * n;
      double s = b[i];
      for (long k = i + 1; k < n; ++k) s -= static_cast<double>(col[k]) * b[k];
      b[i] = unit ? s : s * (1.0 / static_cast<double>(col[i]));
    }
  }
}

// The upper Cholesky factor r of the upper triangle of a (A = R^T R), with the
// strict lower triangle of r set to 0, row by row of R (R[i, j] =
// (A[i, j] - sum_{k < i} R[k, i] R[k, j]) / R[i, i]), of W matrices at once:
// a[w] into r[w], ok[w] false when a[w] is not positive definite (a pivot
// A[j, j] - sum R[k, j]^2 that is not positive, or NaN), and then r[w] all
// NaN. R stops with an error there; an engine evaluating many chains marks
// that chain's value as undefined instead, so its log density is NaN, which
// the samplers reject like -Inf.
//
// W is 1 but for the CPU's pairs of chains (kernels/linalg.hpp). Each matrix
// gets the same operations in the same order whatever W, so its factor is the
// same number: a factor is a chain of dependent sums and products (each
// element waits for the one above it), and two chains interleaved give the
// processor two to overlap. A failed matrix's sums go on (no traps) until
// the end, so that the others are not held up.
template <int W, class T>
LS_HD void chol_upper_lanes(const T* const* a, T* const* r, long n, bool* ok) {
  for (int w = 0; w < W; ++w) ok[w] = true;
  for (long j = 0; j < n; ++j) {
    double diag[W];
    for (int w = 0; w < W; ++w) diag[w] = static_cast<double>(a[w][j + j * n]);
    for (long i = 0; i < j; ++i) {
      double s[W];
      for (int w = 0; w < W; ++w) s[w] = static_cast<double>(a[w][i + j * n]);
      for (long k = 0; k < i; ++k)
        for (int w = 0; w < W; ++w)
          s[w] -= static_cast<double>(r[w][k + i * n]) * static_cast<double>(r[w][k + j * n]);
      for (int w = 0; w < W; ++w) {
        // times the reciprocal, which does not wait on the sum (as tri_solve)
        const T v = static_cast<T>(s[w] * (1.0 / static_cast<double>(r[w][i + i * n])));
        r[w][i + j * n] = v;
        diag[w] -= static_cast<double>(v) * static_cast<double>(v);
      }
    }
    for (int w = 0; w < W; ++w) {
      if (!(diag[w] > 0) || ls_isinf(diag[w])) ok[w] = false;
      r[w][j + j * n] = static_cast<T>(sqrt(diag[w] > 0 ? diag[w] : 1.0));
      for (long i = j + 1; i < n; ++i) r[w][i + j * n] = T(0);
    }
  }
  for (int w = 0; w < W; ++w)
    if (!ok[w])
      for (long k = 0; k < n * n; ++k) r[w][k] = static_cast<T>(ls_nan());
}

// One matrix: false (and r all NaN) when a is not positive definite.
template <class T> LS_HD bool chol_upper(const T* a, T* r, long n) {
  bool ok;
  chol_upper_lanes<1>(&a, &r, n, &ok);
  return ok;
}

// LU factorisation with partial pivoting of a (n x n) into lu (double n x n:
// the unit lower L below the diagonal, U on and above it) and perm (n
// doubles: row i of P A is row perm[i] of A), so that P A = L U. Returns false
// when a pivot is exactly zero (A singular); LU of a matrix with NaN gives
// NaN, which the solves pass on.
template <class T> LS_HD bool lu_factor(const T* a, double* lu, double* perm, long n) {
  for (long k = 0; k < n * n; ++k) lu[k] = static_cast<double>(a[k]);
  for (long i = 0; i < n; ++i) perm[i] = static_cast<double>(i);
  for (long k = 0; k < n; ++k) {
    long p = k;
    double best = fabs(lu[k + k * n]);
    for (long i = k + 1; i < n; ++i)
      if (fabs(lu[i + k * n]) > best) {
        best = fabs(lu[i + k * n]);
        p = i;
      }
    if (lu[p + k * n] == 0) return false;
    if (p != k) {
      for (long j = 0; j < n; ++j) {
        const double t = lu[k + j * n];
        lu[k + j * n] = lu[p + j * n];
        lu[p + j * n] = t;
      }
      const double t = perm[k];
      perm[k] = perm[p];
      perm[p] = t;
    }
    const double pivot = lu[k + k * n];
    for (long i = k + 1; i < n; ++i) lu[i + k * n] /= pivot;
    for (long j = k + 1; j < n; ++j) {
      const double ukj = lu[k + j * n];
      double* col = lu + j * n;
      const double* l = lu + k * n;
      for (long i = k + 1; i < n; ++i) col[i] -= l[i] * ukj;
    }
  }
  return true;
}

// x = A^-1 b from lu_factor's factors: b (n) is read, x (n) written; they
// must not alias.
LS_HD void lu_solve(const double* lu, const double* perm, const double* b, double* x, long n) {
  for (long i = 0; i < n; ++i) x[i] = b[static_cast<long>(perm[i])];
  tri_solve(lu, x, n, true, false, true);
  tri_solve(lu, x, n, false, false);
}

// g = A^-T d: A^T = U^T L^T P, so U^T w = d, L^T v = w, g = P^T v. d (n) is
// overwritten with v; g (n) is written.
LS_HD void lu_solve_transposed(const double* lu, const double* perm, double* d, double* g, long n) {
  tri_solve(lu, d, n, false, true);
  tri_solve(lu, d, n, true, true, true);
  for (long i = 0; i < n; ++i) g[static_cast<long>(perm[i])] = d[i];
}

// The gradient of chol(): the forward algorithm (the lower factor L = R^T,
// column by column: L[j, j] = sqrt(A[j, j] - sum_{k<j} L[j, k]^2), then
// L[i, j] = (A[i, j] - sum_{k<j} L[i, k] L[j, k]) / L[j, j] for i > j) run
// backwards, in the manner of Murray (2016, "Differentiation of the Cholesky
// decomposition"), unblocked: about n^3 / 3 multiply-adds, where the
// matrix form (R^-1 Phi(R Rb^T) R^-T, two sets of n triangular solves) took
// four times as many, most of gp_pois_regr's gradient.
//
// Row i of L is column i of R, contiguous in R's column-major storage, and
// so is its adjoint, kept in work (n * n doubles) in R's layout: work[k + i n]
// is the adjoint of L[i, k] = R[k, i], from Rb's upper triangle (the strict
// lower triangle of R is the constant 0: its adjoint is not read). chol()
// reads only A's upper triangle, A[j, i] = A[i, j] of the lower algorithm:
// each element's gradient goes to da[j + i n], j <= i, and nothing below the
// diagonal.
template <class T>
LS_HD void chol_backward(const T* r, const T* rb, T* da, double* work, long n) {
  for (long i = 0; i < n; ++i)
    for (long k = 0; k <= i; ++k) work[k + i * n] = static_cast<double>(rb[k + i * n]);
  for (long j = n - 1; j >= 0; --j) {
    const T* lj = r + j * n;  // row j of L
    double* wj = work + j * n;
    const double inv = 1.0 / static_cast<double>(lj[j]);
    // L[i, j] for i > j: its adjoint goes to A[i, j], to L[j, j] through
    // the division, and to rows i and j of L left of column j through the sum
    for (long i = n - 1; i > j; --i) {
      const T* li = r + i * n;
      double* wi = work + i * n;
      const double b = wi[j] * inv;
      da[j + i * n] += static_cast<T>(b);
      wj[j] -= b * static_cast<double>(li[j]);
      for (long k = 0; k < j; ++k) {
        wi[k] -= b * static_cast<double>(lj[k]);
        wj[k] -= b * static_cast<double>(li[k]);
      }
    }
    // L[j, j] = sqrt(A[j, j] - sum_{k<j} L[j, k]^2)
    const double b = wj[j] * inv;
    da[j + j * n] += static_cast<T>(0.5 * b);
    for (long k = 0; k < j; ++k) wj[k] -= b * static_cast<double>(lj[k]);
  }
}

#if defined(__GNUC__) && !defined(__CUDACC__)
// The CPU's chol_backward() of two chains at once: the same operations in
// the same order on both, two doubles an instruction (SSE2's, through GCC's
// vector extensions: no fused multiply-adds), from copies of their factors
// and adjoints interleaved element by element, so that each chain's gradient
// is the number chol_backward() gives it alone (tests/cpp/test_linalg.cpp
// checks this to the last bit; chain groups rely on it). A factor's
// backward pass is a chain of short dependent updates (rows of 11 for
// gp_pois_regr), which one chain leaves the processor little to overlap in;
// two chains' halve its time. Up to chol_backward_pair_max_n rows (the
// copies live on the stack).
#define LOCKSTEP_CHOL_BACKWARD_PAIR 1
constexpr long chol_backward_pair_max_n = 24;

template <class T>
void chol_backward_pair(const T* const* r, const T* const* rb, T* const* da, long n) {
  typedef double pair __attribute__((vector_size(16)));
  typedef double unaligned_pair __attribute__((vector_size(16), aligned(8)));
  auto load = [](const double* p) { return pair(*reinterpret_cast<const unaligned_pair*>(p)); };
  auto store = [](double* p, pair v) { *reinterpret_cast<unaligned_pair*>(p) = v; };
  constexpr long m = chol_backward_pair_max_n;
  double L[2 * m * m], W[2 * m * m];  // element e of chain w at [2 e + w]
  for (long i = 0; i < n; ++i)
    for (long k = 0; k <= i; ++k)
      for (int w = 0; w < 2; ++w) {
        L[2 * (k + i * n) + w] = static_cast<double>(r[w][k + i * n]);
        W[2 * (k + i * n) + w] = static_cast<double>(rb[w][k + i * n]);
      }
  const pair one = {1.0, 1.0}, half = {0.5, 0.5};
  for (long j = n - 1; j >= 0; --j) {  // chol_backward()'s loops, a pair at a time
    const double* lj = L + 2 * j * n;
    double* wj = W + 2 * j * n;
    const pair inv = one / load(lj + 2 * j);
    for (long i = n - 1; i > j; --i) {
      const double* li = L + 2 * i * n;
      double* wi = W + 2 * i * n;
      const pair b = load(wi + 2 * j) * inv;
      for (int w = 0; w < 2; ++w) da[w][j + i * n] += static_cast<T>(b[w]);
      store(wj + 2 * j, load(wj + 2 * j) - b * load(li + 2 * j));
      for (long k = 0; k < j; ++k) {
        store(wi + 2 * k, load(wi + 2 * k) - b * load(lj + 2 * k));
        store(wj + 2 * k, load(wj + 2 * k) - b * load(li + 2 * k));
      }
    }
    const pair b = load(wj + 2 * j) * inv;
    const pair hb = half * b;
    for (int w = 0; w < 2; ++w) da[w][j + j * n] += static_cast<T>(hb[w]);
    for (long k = 0; k < j; ++k) store(wj + 2 * k, load(wj + 2 * k) - b * load(lj + 2 * k));
  }
}
#endif

// Y = chol2inv(R) = (R^T R)^-1 = R^-1 R^-T, column by column (Y e_j = R^-1
// (R^-T e_j)), its upper triangle copied to the lower so that Y is exactly
// symmetric, as R's. work: n doubles.
template <class T> LS_HD void chol2inv_forward(const T* r, T* y, double* work, long n) {
  for (long j = 0; j < n; ++j) {
    for (long i = 0; i < n; ++i) work[i] = i == j ? 1.0 : 0.0;
    tri_solve(r, work, n, false, true);
    tri_solve(r, work, n, false, false);
    for (long i = 0; i <= j; ++i) y[i + j * n] = static_cast<T>(work[i]);
  }
  for (long j = 0; j < n; ++j)
    for (long i = j + 1; i < n; ++i) y[i + j * n] = y[j + i * n];
}

// The gradient of chol2inv(): with Y = Z Z^T, Z = R^-1 and dZ = -Z dR Z,
//   dR = -R^-T (Yb + Yb^T) Y
// on R's upper triangle (the only part read). work: n * n doubles.
template <class T>
LS_HD void chol2inv_backward(const T* r, const T* y, const T* yb, T* dr, double* work, long n) {
  for (long j = 0; j < n; ++j)
    for (long i = 0; i < n; ++i)
      work[i + j * n] = static_cast<double>(yb[i + j * n]) + static_cast<double>(yb[j + i * n]);
  for (long j = 0; j < n; ++j) tri_solve(r, work + j * n, n, false, true);
  for (long j = 0; j < n; ++j)
    for (long i = 0; i <= j; ++i) {
      double s = 0;
      for (long k = 0; k < n; ++k) s += work[i + k * n] * static_cast<double>(y[k + j * n]);
      dr[i + j * n] -= static_cast<T>(s);
    }
}

// The adjoints of X = A^-1 B (A n x n, B and X n x cols), one column at a
// time: g = A^-T Xb[, c] (from `solve_t`, which overwrites its first argument
// and writes g), then
//   Bb[, c] += g,   Ab[i, j] -= g[i] X[j, c]
// for the (i, j) that A's op reads: every element for solve(), the upper
// (lower) triangle for backsolve() (forwardsolve()). ab or bb may be null (no
// gradient flows there). work: 2 n doubles.
template <class T, class SolveT>
LS_HD void solve_backward(const T* x, const T* xb, T* ab, T* bb, double* work, long n, long cols,
                          int triangle, SolveT&& solve_t) {
  double* d = work;
  double* g = work + n;
  for (long c = 0; c < cols; ++c) {
    for (long i = 0; i < n; ++i) d[i] = static_cast<double>(xb[i + c * n]);
    solve_t(d, g);
    if (bb)
      for (long i = 0; i < n; ++i) bb[i + c * n] += static_cast<T>(g[i]);
    if (!ab) continue;
    const T* xc = x + c * n;
    for (long j = 0; j < n; ++j) {
      const double xj = static_cast<double>(xc[j]);
      // triangle: 0 every row, 1 rows i <= j (upper), -1 rows i >= j (lower)
      const long first = triangle < 0 ? j : 0;
      const long last = triangle > 0 ? j + 1 : n;
      for (long i = first; i < last; ++i) ab[i + j * n] -= static_cast<T>(g[i] * xj);
    }
  }
}

}  // namespace lockstep

#endif
