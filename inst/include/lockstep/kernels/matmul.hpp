// Y = A B for column-major A (m x k) and B (k x n), per chain; an operand
// without the chain dimension has chain stride 0.
//   dA = dY B^T  (m x k),   dB = A^T dY  (k x n)
// Each lane owns whole output elements, so no two lanes write one address.
// A may be stored transposed (a_transposed: the k x m matrix whose transpose
// is A, the planner's fusion of t(A) %*% B), and its adjoint is then stored
// the same way.
#ifndef LOCKSTEP_KERNELS_MATMUL_HPP
#define LOCKSTEP_KERNELS_MATMUL_HPP

#include "../lanes.hpp"
#include "running_sums.hpp"

namespace lockstep {

struct MatmulShape {
  long m, k, n;
  long a_stride, b_stride;  // chain strides of A and B (0 or their size)
  bool a_transposed = false;
  // where A[i, l] (and its adjoint) is in a chain's A
  LS_HD long a_at(long i, long l) const { return a_transposed ? l + i * k : i + l * m; }
};

namespace detail {

// acc[i] += sum_l a[i + l * lda] x[l] for i < rows, l < cols: the columns
// swept in order, four a pass (the same additions in the same order as one
// at a time), so that the sums are loaded and stored a quarter as often;
// the loop over a column's rows vectorises.
template <class T, class X>
inline void sweep_columns(const T* a, long lda, long rows, long cols, const X* x, double* acc) {
  long l = 0;
  for (; l + 4 <= cols; l += 4) {
    const double x0 = static_cast<double>(x[l]), x1 = static_cast<double>(x[l + 1]);
    const double x2 = static_cast<double>(x[l + 2]), x3 = static_cast<double>(x[l + 3]);
    const T* c0 = a + l * lda;
    const T *c1 = c0 + lda, *c2 = c1 + lda, *c3 = c2 + lda;
    for (long i = 0; i < rows; ++i) {
      double t = acc[i];
      t += static_cast<double>(c0[i]) * x0;
      t += static_cast<double>(c1[i]) * x1;
      t += static_cast<double>(c2[i]) * x2;
      t += static_cast<double>(c3[i]) * x3;
      acc[i] = t;
    }
  }
  for (; l < cols; ++l) {
    const double xl = static_cast<double>(x[l]);
    const T* col = a + l * lda;
    for (long i = 0; i < rows; ++i) acc[i] += static_cast<double>(col[i]) * xl;
  }
}

}  // namespace detail

template <class T> struct MatmulForward {
  MatmulShape s;
  const T* a;
  const T* b;
  T* y;
  long chains;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
#if !defined(__CUDA_ARCH__)
    if (lane.count == 1 && s.m > 1) return cpu();
#endif
    const long per = s.m * s.n, total = chains * per;
    for (long e = lane.index; e < total; e += lane.count) {
      const long c = e / per, r = e - c * per, i = r % s.m, j = r / s.m;
      const T* ac = a + c * s.a_stride;
      const T* bc = b + c * s.b_stride + j * s.k;
      double acc = 0;
      for (long l = 0; l < s.k; ++l) acc += static_cast<double>(ac[s.a_at(i, l)]) * bc[l];
      y[e] = static_cast<T>(acc);
    }
  }
#if !defined(__CUDA_ARCH__)
  // One lane (the CPU): sweep A's contiguous columns into a run of double
  // sums, which vectorises, instead of striding across A's rows; the run is
  // a chunk of rows on the stack (no allocation per call), each row's sum
  // still taken over l in order. A stored transposed: each element is the
  // dot product of two contiguous columns, in order.
  static constexpr long chunk = 256;
  LS_CPU_CLONES void cpu() const {
    double acc[chunk];
    for (long c = 0; c < chains; ++c)
      for (long j = 0; j < s.n; ++j) {
        const T* ac = a + c * s.a_stride;
        const T* bc = b + c * s.b_stride + j * s.k;
        T* yc = y + c * s.m * s.n + j * s.m;
        if (s.a_transposed) {
          // four rows of A (four columns of the stored k x m) at a time, each
          // row's sum over l in order (the lanes' values, to the bit)
          long i = 0;
          for (; i + 4 <= s.m; i += 4) {
            const T* r0 = ac + i * s.k;
            const T *r1 = r0 + s.k, *r2 = r1 + s.k, *r3 = r2 + s.k;
            double t0 = 0, t1 = 0, t2 = 0, t3 = 0;
            for (long l = 0; l < s.k; ++l) {
              t0 += static_cast<double>(r0[l]) * bc[l];
              t1 += static_cast<double>(r1[l]) * bc[l];
              t2 += static_cast<double>(r2[l]) * bc[l];
              t3 += static_cast<double>(r3[l]) * bc[l];
            }
            yc[i] = static_cast<T>(t0), yc[i + 1] = static_cast<T>(t1);
            yc[i + 2] = static_cast<T>(t2), yc[i + 3] = static_cast<T>(t3);
          }
          for (; i < s.m; ++i) {
            double t = 0;
            for (long l = 0; l < s.k; ++l) t += static_cast<double>(ac[l + i * s.k]) * bc[l];
            yc[i] = static_cast<T>(t);
          }
          continue;
        }
        for (long i0 = 0; i0 < s.m; i0 += chunk) {
          const long n = s.m - i0 < chunk ? s.m - i0 : chunk;
          for (long i = 0; i < n; ++i) acc[i] = 0;
          detail::sweep_columns(ac + i0, s.m, n, s.k, bc, acc);
          for (long i = 0; i < n; ++i) yc[i0 + i] = static_cast<T>(acc[i]);
        }
      }
  }
#endif
};

// dA[c, i, l] += sum_j dY[c, i, j] B[c, l, j]; only launched when A carries the chain.
template <class T> struct MatmulBackwardA {
  MatmulShape s;
  const T* b;
  const T* dy;
  T* da;
  long chains;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
#if !defined(__CUDA_ARCH__)
    if (lane.count == 1) return cpu();
#endif
    const long per = s.m * s.k, total = chains * per;
    for (long e = lane.index; e < total; e += lane.count) {
      const long c = e / per, r = e - c * per, i = r % s.m, l = r / s.m;
      const T* bc = b + c * s.b_stride;
      const T* dyc = dy + c * s.m * s.n;
      double acc = 0;
      for (long j = 0; j < s.n; ++j) acc += static_cast<double>(dyc[i + j * s.m]) * bc[l + j * s.k];
      da[c * per + s.a_at(i, l)] += static_cast<T>(acc);
    }
  }
#if !defined(__CUDA_ARCH__)
  // One lane (the CPU): the same sums in the same order, with the element's
  // chain, row and column counted by loops instead of found by three integer
  // divisions per element, which for a small matrix (the 11 x 11 factor of
  // posteriordb's gp_pois_regr times a vector) cost more than the sums.
  void cpu() const {
    for (long c = 0; c < chains; ++c) {
      const T* bc = b + c * s.b_stride;
      const T* dyc = dy + c * s.m * s.n;
      T* dac = da + c * s.m * s.k;
      if (s.n == 1 && s.a_transposed) {  // the outer product B dY^T, row by row
        for (long i = 0; i < s.m; ++i) {
          const double dyi = static_cast<double>(dyc[i]);
          T* row = dac + i * s.k;
          for (long l = 0; l < s.k; ++l) row[l] += static_cast<T>(static_cast<double>(bc[l]) * dyi);
        }
        continue;
      }
      if (s.n == 1) {  // B a vector: dA is the outer product dY B^T (the same values)
        for (long l = 0; l < s.k; ++l) {
          const double bl = static_cast<double>(bc[l]);
          T* col = dac + l * s.m;
          for (long i = 0; i < s.m; ++i) col[i] += static_cast<T>(static_cast<double>(dyc[i]) * bl);
        }
        continue;
      }
      for (long l = 0; l < s.k; ++l)
        for (long i = 0; i < s.m; ++i) {
          double acc = 0;
          for (long j = 0; j < s.n; ++j)
            acc += static_cast<double>(dyc[i + j * s.m]) * bc[l + j * s.k];
          dac[s.a_at(i, l)] += static_cast<T>(acc);
        }
    }
  }
#endif
};

// dB[c, l, j] += sum_i A[c, i, l] dY[c, i, j]; only launched when B carries the chain.
template <class T> struct MatmulBackwardB {
  MatmulShape s;
  const T* a;
  const T* dy;
  T* db;
  long chains;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
#if !defined(__CUDA_ARCH__)
    if (lane.count == 1) return cpu();
#endif
    const long per = s.k * s.n, total = chains * per;
    for (long e = lane.index; e < total; e += lane.count) {
      const long c = e / per, r = e - c * per, l = r % s.k, j = r / s.k;
      const T* ac = a + c * s.a_stride;
      const T* dyc = dy + c * s.m * s.n;
      double acc = 0;
      for (long i = 0; i < s.m; ++i) acc += static_cast<double>(ac[s.a_at(i, l)]) * dyc[i + j * s.m];
      db[e] += static_cast<T>(acc);
    }
  }
#if !defined(__CUDA_ARCH__)
  // One lane (the CPU): each sum over A's rows (a column of A and one of dY,
  // both contiguous) with running sums, which vectorises; one sum in row
  // order waits for each addition in turn, which for a regression's
  // coefficients (y ~ normal(X %*% beta, sd), a few columns of many rows)
  // was the costliest step of its gradient. (Only the order of the
  // additions differs from the loop above.) A stored transposed: its columns
  // swept into a chunk of sums, as the forward pass does (the loop's order).
  static constexpr long chunk = 256;
  LS_CPU_CLONES void cpu() const {
    double acc[chunk];
    for (long c = 0; c < chains; ++c)
      for (long j = 0; j < s.n; ++j) {
        const T* ac = a + c * s.a_stride;
        const T* dyc = dy + c * s.m * s.n + j * s.m;
        T* dbc = db + c * s.k * s.n + j * s.k;
        if (s.a_transposed) {
          for (long l0 = 0; l0 < s.k; l0 += chunk) {
            const long n = s.k - l0 < chunk ? s.k - l0 : chunk;
            for (long l = 0; l < n; ++l) acc[l] = 0;
            detail::sweep_columns(ac + l0, s.k, n, s.m, dyc, acc);
            for (long l = 0; l < n; ++l) dbc[l0 + l] += static_cast<T>(acc[l]);
          }
          continue;
        }
        for (long l = 0; l < s.k; ++l)
          dbc[l] += static_cast<T>(detail::dot_doubles(ac + l * s.m, dyc, s.m));
      }
  }
#endif
};

}  // namespace lockstep

#endif
