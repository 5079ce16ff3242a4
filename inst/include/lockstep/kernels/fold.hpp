// max(x), min(x) and prod(x): every element of x folded into one value per
// chain (R's Summary group; the output is 1 x 1).
//   max, min  the first arg-max (arg-min) element receives the adjoint; a NaN
//             element makes the value NaN (as R's max) and receives it
//   prod      dx[i] = dy * prod_{k != i} x[k]: with no zero, prod / x[i]; with
//             exactly one zero, the product of the others for the zero and 0
//             elsewhere; with two or more zeros, 0 everywhere
// Each lane owns whole chains and folds a chain's elements in order (in double
// for prod), so the value, the arg-max and the partials are the same on every
// backend and launch geometry. These are global-stage ops (the planner keeps
// them out of the observation stage): a chain's fold is one serial loop.
#ifndef LOCKSTEP_KERNELS_FOLD_HPP
#define LOCKSTEP_KERNELS_FOLD_HPP

#include "../ir.hpp"
#include "../lanes.hpp"
#include "elementwise.hpp"

namespace lockstep {

// The first index of the maximum (largest = true) or minimum of x[0 .. size);
// the first NaN, if any.
template <class T> LS_HD long fold_arg_extreme(const T* x, long size, bool largest) {
  long arg = 0;
  T m = x[0];
  if (m != m) return 0;
  for (long i = 1; i < size; ++i) {
    const T v = x[i];
    if (v != v) return i;
    if (largest ? v > m : v < m) {
      m = v;
      arg = i;
    }
  }
  return arg;
}

// The product of the non-zero elements and the number of zeros.
struct ProdParts {
  double nonzero;
  long zeros;
};

template <class T> LS_HD ProdParts fold_prod_parts(const T* x, long size) {
  ProdParts p{1.0, 0};
  for (long i = 0; i < size; ++i) {
    const double v = static_cast<double>(x[i]);
    if (v == 0)
      ++p.zeros;
    else
      p.nonzero *= v;
  }
  return p;
}

template <class T> struct FoldForward {
  Op op;  // max, min or prod
  const T* x;
  long x_chain_stride;  // 0 when x has no chain dimension
  T* y;                 // [chains]
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    for_each_element(lane, chains, 1, [&](long k, long c, long) {
      const T* xc = x + c * x_chain_stride;
      if (op == Op::prod) {
        const ProdParts p = fold_prod_parts(xc, size);
        y[k] = static_cast<T>(p.zeros > 0 ? 0.0 * p.nonzero : p.nonzero);
      } else {
        y[k] = xc[fold_arg_extreme(xc, size, op == Op::max)];
      }
    });
  }
};

template <class T> struct FoldBackward {
  Op op;
  const T* x;
  long x_chain_stride;
  const T* dy;  // [chains]
  AdjointSink<T> dx;
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    for_each_element(lane, chains, 1, [&](long, long c, long) {
      const T* xc = x + c * x_chain_stride;
      const T g = dy[c];
      if (op != Op::prod) {
        dx.add(c, fold_arg_extreme(xc, size, op == Op::max), g);
        return;
      }
      const ProdParts p = fold_prod_parts(xc, size);
      if (p.zeros > 1) return;
      for (long i = 0; i < size; ++i) {
        const double v = static_cast<double>(xc[i]);
        if (p.zeros == 0)
          dx.add(c, i, static_cast<T>(g * (p.nonzero / v)));
        else if (v == 0)
          dx.add(c, i, static_cast<T>(g * p.nonzero));
      }
    });
  }
};

}  // namespace lockstep

#endif
