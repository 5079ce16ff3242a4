// The linalg ops (ops.def): chol, chol2inv, solve, backsolve, forwardsolve and
// eigen of one square matrix per chain, math in math/linalg.hpp and
// math/eigen.hpp.
//
//   chol(a)             n x n: the upper Cholesky factor of a's upper triangle
//   chol2inv(r)         n x n: (R^T R)^-1 from r's upper triangle
//   solve(a, b)         n x k: a^-1 b by LU with partial pivoting
//   backsolve(r, b)     n x k: R^-1 b, R the upper triangle of r
//   forwardsolve(l, b)  n x k: L^-1 b, L the lower triangle of l
//   eigen(a)            n x (n + 1): the eigenvalues (column 0, decreasing) and
//                       unit eigenvectors of a's lower triangle, symmetrised
//
// Each chain's matrix is small and its factorisation a serial recurrence, so
// a lane owns whole chains (loops inside, as kernels/fold.hpp does): the
// values and gradients are the same on every backend and launch geometry.
// These ops stay in the planner's global stage. A not positive definite
// matrix (chol) or an exactly singular one (solve) gives that chain NaN
// values, and so a NaN log density, which samplers reject; R would stop with
// an error.
//
// Each chain has `linalg_workspace(op, n)` doubles of workspace (the
// executors allocate them: NodeCall::work) for factors and columns being
// solved; nothing is kept between the forward and backward passes (solve
// refactorises), so a backward pass needs only the node's value.
#ifndef LOCKSTEP_KERNELS_LINALG_HPP
#define LOCKSTEP_KERNELS_LINALG_HPP

#include "../ir.hpp"
#include "../lanes.hpp"
#include "../math/eigen.hpp"
#include "../math/linalg.hpp"

namespace lockstep {

// Doubles of workspace per chain for an op of this family on n x n matrices.
LS_HD long linalg_workspace(Op op, long n) {
  switch (op) {
    case Op::chol:
    case Op::chol2inv:
      return n * n;
    case Op::solve:
      return n * n + 3 * n;  // LU, the permutation and two columns
    case Op::eigen:
      return 2 * n * n;  // the rotated matrix and the rotations; backward: two products
    default:
      return 2 * n;  // backsolve, forwardsolve: two columns
  }
}

struct LinalgShape {
  long n;     // the square input's order
  long cols;  // columns of the right-hand side and output (n: chol, chol2inv; n + 1: eigen)
  long a_stride, b_stride;  // chain strides of the inputs (0: no chain dimension)
  long work_stride;         // linalg_workspace(op, n)
};

template <class T> struct LinalgForward {
  Op op;
  LinalgShape s;
  const T* a;
  const T* b;  // the right-hand side of the solves; unused otherwise
  T* y;
  double* work;
  long chains;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
#if !defined(__CUDA_ARCH__)
    if (op == Op::chol && lane.count == 1 && chains > 1) return chol_pairs();
#endif
    for_each_element(lane, chains, 1, [&](long, long c, long) {
      const long n = s.n;
      const T* ac = a + c * s.a_stride;
      T* yc = y + c * n * s.cols;
      double* w = work + c * s.work_stride;
      switch (op) {
        case Op::chol:
          chol_upper(ac, yc, n);
          break;
        case Op::chol2inv:
          chol2inv_forward(ac, yc, w, n);
          break;
        case Op::eigen:
          sym_eigen_forward(ac, yc, w, n);
          break;
        case Op::solve: {
          double* lu = w;
          double* perm = w + n * n;
          double* col = perm + n;
          double* x = col + n;
          const bool ok = lu_factor(ac, lu, perm, n);
          const T* bc = b + c * s.b_stride;
          for (long j = 0; j < s.cols; ++j) {
            for (long i = 0; i < n; ++i) col[i] = static_cast<double>(bc[i + j * n]);
            lu_solve(lu, perm, col, x, n);
            for (long i = 0; i < n; ++i) yc[i + j * n] = static_cast<T>(ok ? x[i] : ls_nan());
          }
          break;
        }
        default: {  // backsolve, forwardsolve
          const bool lower = op == Op::forwardsolve;
          const T* bc = b + c * s.b_stride;
          for (long j = 0; j < s.cols; ++j) {
            for (long i = 0; i < n; ++i) w[i] = static_cast<double>(bc[i + j * n]);
            tri_solve(ac, w, n, lower, false);
            for (long i = 0; i < n; ++i) yc[i + j * n] = static_cast<T>(w[i]);
          }
        }
      }
    });
  }
#if !defined(__CUDA_ARCH__)
  // The CPU, one lane: chol() two chains at a time (chol_upper_lanes(), the
  // same factors), the last one alone when the count is odd.
  void chol_pairs() const {
    const long n = s.n, out = n * s.cols;
    long c = 0;
    bool ok[2];
    for (; c + 2 <= chains; c += 2) {
      const T* ac[2] = {a + c * s.a_stride, a + (c + 1) * s.a_stride};
      T* yc[2] = {y + c * out, y + (c + 1) * out};
      chol_upper_lanes<2>(ac, yc, n, ok);
    }
    if (c < chains) chol_upper(a + c * s.a_stride, y + c * out, n);
  }
#endif
};

// Adds the node's adjoint dy, through its partials, to da and db (either may
// be null: no gradient flows there; each, when set, carries the chain
// dimension).
template <class T> struct LinalgBackward {
  Op op;
  LinalgShape s;
  const T* a;
  const T* y;   // the node's value [chains, n * cols]
  const T* dy;  // [chains, n * cols]
  T* da;        // [chains, n * n] or null
  T* db;        // [chains, n * cols] or null (solves only)
  double* work;
  long chains;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
#if defined(LOCKSTEP_CHOL_BACKWARD_PAIR) && !defined(__CUDA_ARCH__)
    if (op == Op::chol && lane.count == 1 && chains > 1 && da &&
        s.n <= chol_backward_pair_max_n)
      return chol_pairs();
#endif
    for_each_element(lane, chains, 1, [&](long, long c, long) {
      const long n = s.n, out = n * s.cols;
      const T* ac = a + c * s.a_stride;
      const T* yc = y + c * out;
      const T* dyc = dy + c * out;
      T* dac = da ? da + c * n * n : nullptr;
      T* dbc = db ? db + c * out : nullptr;
      double* w = work + c * s.work_stride;
      switch (op) {
        case Op::chol:
          if (dac) chol_backward(yc, dyc, dac, w, n);
          break;
        case Op::chol2inv:
          if (dac) chol2inv_backward(ac, yc, dyc, dac, w, n);
          break;
        case Op::eigen:
          if (dac) sym_eigen_backward(yc, dyc, dac, w, n);
          break;
        case Op::solve: {
          double* lu = w;
          double* perm = w + n * n;
          lu_factor(ac, lu, perm, n);  // a singular a: its value, and so this, is NaN
          solve_backward(yc, dyc, dac, dbc, perm + n, n, s.cols, 0,
                         [&](double* d, double* g) { lu_solve_transposed(lu, perm, d, g, n); });
          break;
        }
        default: {  // backsolve, forwardsolve
          const bool lower = op == Op::forwardsolve;
          solve_backward(yc, dyc, dac, dbc, w, n, s.cols, lower ? -1 : 1,
                         [&](double* d, double* g) {
                           tri_solve(ac, d, n, lower, true);
                           for (long i = 0; i < n; ++i) g[i] = d[i];
                         });
        }
      }
    });
  }
#if defined(LOCKSTEP_CHOL_BACKWARD_PAIR) && !defined(__CUDA_ARCH__)
  // The CPU, one lane: chol()'s gradient two chains at a time
  // (chol_backward_pair(), the same gradients), the last one alone when the
  // count is odd.
  void chol_pairs() const {
    const long n = s.n, out = n * s.cols;
    long c = 0;
    for (; c + 2 <= chains; c += 2) {
      const T* yc[2] = {y + c * out, y + (c + 1) * out};
      const T* dyc[2] = {dy + c * out, dy + (c + 1) * out};
      T* dac[2] = {da + c * n * n, da + (c + 1) * n * n};
      chol_backward_pair(yc, dyc, dac, n);
    }
    if (c < chains) chol_backward(y + c * out, dy + c * out, da + c * n * n, work + c * s.work_stride, n);
  }
#endif
};

}  // namespace lockstep

#endif
