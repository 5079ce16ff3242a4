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
//
// The rules are written over an accessor at(i) of the i-th element (i in
// 0 .. size), so that the grouped reductions (kernels/segment.hpp) fold each
// group's elements by the same code. An empty fold (size 0, an empty group)
// is base R's: max -Inf, min Inf, prod 1, and no partials.
#ifndef LOCKSTEP_KERNELS_FOLD_HPP
#define LOCKSTEP_KERNELS_FOLD_HPP

#include "../ir.hpp"
#include "../lanes.hpp"
#include "elementwise.hpp"

namespace lockstep {

// The first position of the maximum (largest = true) or minimum of at(0 ..
// size); the first NaN, if any. size >= 1.
template <class At> LS_HD long fold_arg_extreme(At at, long size, bool largest) {
  long arg = 0;
  auto m = at(0);
  if (m != m) return 0;
  for (long i = 1; i < size; ++i) {
    const auto v = at(i);
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

template <class At> LS_HD ProdParts fold_prod_parts(At at, long size) {
  ProdParts p{1.0, 0};
  for (long i = 0; i < size; ++i) {
    const double v = static_cast<double>(at(i));
    if (v == 0)
      ++p.zeros;
    else
      p.nonzero *= v;
  }
  return p;
}

// The value of max, min or prod (op) of at(0 .. size).
template <class At> LS_HD double fold_value(Op op, At at, long size) {
  if (op == Op::prod) {
    const ProdParts p = fold_prod_parts(at, size);
    return p.zeros > 0 ? 0.0 * p.nonzero : p.nonzero;  // 0 * Inf stays NaN
  }
  if (size == 0) return op == Op::max ? -HUGE_VAL : HUGE_VAL;
  return static_cast<double>(at(fold_arg_extreme(at, size, op == Op::max)));
}

// The partials of max, min or prod (op) of at(0 .. size) times the adjoint g:
// add(i, g * d fold / d at(i)) for each element that has a non-zero one.
template <class At, class Add> LS_HD void fold_partials(Op op, At at, long size, double g, Add add) {
  if (size == 0) return;
  if (op != Op::prod) {
    add(fold_arg_extreme(at, size, op == Op::max), g);
    return;
  }
  const ProdParts p = fold_prod_parts(at, size);
  if (p.zeros > 1) return;
  for (long i = 0; i < size; ++i) {
    const double v = static_cast<double>(at(i));
    if (p.zeros == 0)
      add(i, g * (p.nonzero / v));
    else if (v == 0)
      add(i, g * p.nonzero);
  }
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
      y[k] = static_cast<T>(fold_value(op, [&](long i) { return xc[i]; }, size));
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
      fold_partials(op, [&](long i) { return xc[i]; }, size, static_cast<double>(dy[c]),
                    [&](long i, double v) { dx.add(c, i, static_cast<T>(v)); });
    });
  }
};

}  // namespace lockstep

#endif
