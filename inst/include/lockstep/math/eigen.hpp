// The eigendecomposition of one small symmetric matrix (one chain's), written
// once for every backend: cyclic Jacobi rotations, and the reverse-mode rule
// of the eigen op (kernels/linalg.hpp).
//
// As R's eigen(symmetric = TRUE) (LAPACK dsyevr, uplo = "L"), only the lower
// triangle of a is read, and the eigenvalues come in decreasing order. The
// op's value is n x (n + 1): column 0 the eigenvalues, columns 1..n the unit
// eigenvectors in the same order. An eigenvector's sign is arbitrary (R's
// comes from LAPACK); here each is signed so that its largest element (the
// first, on ties) is positive, which is the same for every backend and
// constant wherever the decomposition is differentiable.
//
// Jacobi rotations are chosen over a tridiagonal QR because each is a fixed,
// branch-light loop over two rows and columns of a matrix held in the chain's
// workspace, the same on a CPU lane and a GPU thread, and accurate to a few
// ulps for the small matrices a model decomposes (orders of 10 or so: about
// 6 n^3 flops a sweep, and fewer than 10 sweeps to converge in double).
#ifndef LOCKSTEP_MATH_EIGEN_HPP
#define LOCKSTEP_MATH_EIGEN_HPP

#include <cmath>

#include "../hd.hpp"

namespace lockstep {

// y = [values | vectors] (n x (n + 1)) of the symmetric matrix whose lower
// triangle is a's. work: 2 n * n doubles (the matrix being rotated, then the
// accumulated rotations).
template <class T> LS_HD void sym_eigen_forward(const T* a, T* y, double* work, long n) {
  double* m = work;
  double* v = work + n * n;
  double scale = 0;
  for (long j = 0; j < n; ++j)
    for (long i = 0; i < n; ++i) {
      const double x = static_cast<double>(i >= j ? a[i + j * n] : a[j + i * n]);
      m[i + j * n] = x;
      v[i + j * n] = i == j ? 1.0 : 0.0;
      scale += x * x;
    }
  // Sweeps until the off-diagonal mass is negligible against the matrix's
  // (a NaN matrix stops at the sweep limit and gives NaN values).
  for (int sweep = 0; sweep < 60; ++sweep) {
    double off = 0;
    for (long q = 1; q < n; ++q)
      for (long p = 0; p < q; ++p) off += m[p + q * n] * m[p + q * n];
    if (!(off > 1e-32 * scale)) break;
    for (long q = 1; q < n; ++q)
      for (long p = 0; p < q; ++p) {
        const double apq = m[p + q * n];
        if (apq == 0) continue;
        // the rotation J (J_pp = J_qq = c, J_pq = s, J_qp = -s) that zeroes
        // (J^T M J)_pq, with the smaller angle (Golub and Van Loan's sym.schur2)
        const double tau = (m[q + q * n] - m[p + p * n]) / (2 * apq);
        const double t = (tau >= 0 ? 1.0 : -1.0) / (fabs(tau) + sqrt(1 + tau * tau));
        const double c = 1 / sqrt(1 + t * t);
        const double s = t * c;
        for (long k = 0; k < n; ++k) {  // M J: columns p and q
          const double mp = m[k + p * n], mq = m[k + q * n];
          m[k + p * n] = c * mp - s * mq;
          m[k + q * n] = s * mp + c * mq;
        }
        for (long k = 0; k < n; ++k) {  // J^T (M J): rows p and q
          const double mp = m[p + k * n], mq = m[q + k * n];
          m[p + k * n] = c * mp - s * mq;
          m[q + k * n] = s * mp + c * mq;
        }
        m[p + q * n] = m[q + p * n] = 0;
        for (long k = 0; k < n; ++k) {  // V J
          const double vp = v[k + p * n], vq = v[k + q * n];
          v[k + p * n] = c * vp - s * vq;
          v[k + q * n] = s * vp + c * vq;
        }
      }
  }
  // decreasing order (a selection sort: n is small), then the sign of each vector
  for (long i = 0; i < n; ++i) {
    long best = i;
    for (long k = i + 1; k < n; ++k)
      if (m[k + k * n] > m[best + best * n]) best = k;
    if (best != i) {
      const double d = m[i + i * n];
      m[i + i * n] = m[best + best * n];
      m[best + best * n] = d;
      for (long k = 0; k < n; ++k) {
        const double x = v[k + i * n];
        v[k + i * n] = v[k + best * n];
        v[k + best * n] = x;
      }
    }
  }
  for (long j = 0; j < n; ++j) {
    long big = 0;
    for (long k = 1; k < n; ++k)
      if (fabs(v[k + j * n]) > fabs(v[big + j * n])) big = k;
    const double sign = v[big + j * n] < 0 ? -1.0 : 1.0;
    y[j] = static_cast<T>(m[j + j * n]);
    for (long k = 0; k < n; ++k) y[k + (j + 1) * n] = static_cast<T>(sign * v[k + j * n]);
  }
}

// The gradient of the eigen op, from its value y = [lambda | V] and adjoint
// yb = [lambda_b | V_b]: with A = V diag(lambda) V^T, d lambda_i = v_i^T dA v_i
// and dV = V (F o (V^T dA V)), F_ij = 1 / (lambda_j - lambda_i) off the
// diagonal, so the adjoint of a symmetric A is
//   G = V (diag(lambda_b) + F o (V^T V_b)) V^T,
// and a lower-triangle element (i > j), which stands for both A_ij and A_ji,
// gets G_ij + G_ji. A term whose V^T V_b element is zero is skipped, so that
// equal eigenvalues give finite gradients when only the values are used (the
// vectors of equal eigenvalues have no derivative). work: 2 n * n doubles.
template <class T>
LS_HD void sym_eigen_backward(const T* y, const T* yb, T* da, double* work, long n) {
  const T* lambda = y;
  const T* v = y + n;
  const T* lambda_b = yb;
  const T* vb = yb + n;
  double* inner = work;    // diag(lambda_b) + F o (V^T V_b)
  double* left = work + n * n;  // V inner
  for (long j = 0; j < n; ++j)
    for (long i = 0; i < n; ++i) {
      double x;
      if (i == j) {
        x = static_cast<double>(lambda_b[i]);
      } else {
        double s = 0;
        for (long k = 0; k < n; ++k)
          s += static_cast<double>(v[k + i * n]) * static_cast<double>(vb[k + j * n]);
        x = s == 0 ? 0.0
                   : s / (static_cast<double>(lambda[j]) - static_cast<double>(lambda[i]));
      }
      inner[i + j * n] = x;
    }
  for (long j = 0; j < n; ++j)
    for (long i = 0; i < n; ++i) {
      double s = 0;
      for (long k = 0; k < n; ++k) s += static_cast<double>(v[i + k * n]) * inner[k + j * n];
      left[i + j * n] = s;
    }
  // G_ij = sum_k left_ik V_jk
  for (long j = 0; j < n; ++j)
    for (long i = j; i < n; ++i) {
      double gij = 0, gji = 0;
      for (long k = 0; k < n; ++k) {
        gij += left[i + k * n] * static_cast<double>(v[j + k * n]);
        gji += left[j + k * n] * static_cast<double>(v[i + k * n]);
      }
      da[i + j * n] += static_cast<T>(i == j ? gij : gij + gji);
    }
}

}  // namespace lockstep

#endif
