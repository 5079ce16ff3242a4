// Grouped (segment) reductions of the rows of a rows x cols value x into G
// groups, per chain (R's tapply(), and apply() over slices, as one op):
//   y[g, j] = fold over the rows r with group[r] == g of x[r, j]     (G x cols)
// for the folds sum, max, min and prod. The grouping is the node's index in
// segment_layout()'s layout (ir.hpp): group[r] for every row (-1: left out),
// the offsets of each group's rows, and the kept rows sorted by group (each
// group's in increasing order).
//
// Forward, each lane owns output elements (c, g, j) and reduces its group's
// rows in increasing order: sums in double; max, min and prod by fold.hpp's
// rules (the first arg-max / arg-min row receives the adjoint, NaN first;
// prod's partials with zeros), so an empty group gives 0, -Inf, Inf or 1.
// Backward, sum is a gather: each lane owns elements (c, r, j) of dx and adds
// dy[group[r], j]; max, min and prod: each lane owns output elements (c, g, j)
// and adds to its group's rows of column j, which no other lane touches. No
// two lanes write one address and every sum runs in a fixed order, so values
// and gradients are the same on every backend and launch geometry, without
// atomics. Global-stage ops: a group reads rows from anywhere in x.
//
// x's adjoint, when there is one, carries the chain dimension (a value without
// it is constant), addressed with x's chain stride.
#ifndef LOCKSTEP_KERNELS_SEGMENT_HPP
#define LOCKSTEP_KERNELS_SEGMENT_HPP

#include "../ir.hpp"
#include "../lanes.hpp"
#include "cells.hpp"
#include "fold.hpp"

namespace lockstep {

// The fold of a segment op: Op::sum, or fold.hpp's Op::max, Op::min, Op::prod.
constexpr Op segment_fold(Op op) {
  return op == Op::segment_max ? Op::max
         : op == Op::segment_min ? Op::min
         : op == Op::segment_prod ? Op::prod
                                  : Op::sum;
}

// The parts of a segment node's index (segment_layout()) for x_rows rows of x
// and G groups.
struct SegmentLayout {
  const long* group;    // [x_rows]
  const long* offsets;  // [G + 1]
  const long* sorted;   // [offsets[G]]
  LS_HD SegmentLayout(const long* index, long x_rows, long groups)
      : group(index), offsets(index + x_rows), sorted(index + x_rows + groups + 1) {}
};

// x_rows: the rows of x; groups, cols: the output's extents.
template <class T> struct SegmentForward {
  Op fold;  // segment_fold() of the node's op
  const T* x;
  long x_chain_stride;  // 0 when x has no chain dimension
  long x_rows;
  const long* index;  // segment_layout()
  T* y;               // [chains, groups * cols]
  long chains, groups, cols;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    const SegmentLayout s(index, x_rows, groups);
    for_each_cell(lane, chains, groups, cols, [&](long k, long c, long g, long j) {
      const T* xj = x + c * x_chain_stride + j * x_rows;
      const long* rows = s.sorted + s.offsets[g];
      const long n = s.offsets[g + 1] - s.offsets[g];
      if (fold == Op::sum) {
        double acc = 0;
        for (long i = 0; i < n; ++i) acc += static_cast<double>(xj[rows[i]]);
        y[k] = static_cast<T>(acc);
      } else {
        y[k] = static_cast<T>(fold_value(fold, [&](long i) { return xj[rows[i]]; }, n));
      }
    });
  }
};

template <class T> struct SegmentBackward {
  Op fold;
  const T* x;
  long x_chain_stride;
  long x_rows;
  const long* index;
  const T* dy;  // [chains, groups * cols]
  T* dx;        // x's adjoint, x_chain_stride apart
  long chains, groups, cols;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    const SegmentLayout s(index, x_rows, groups);
    if (fold == Op::sum) {
      for_each_cell(lane, chains, x_rows, cols, [&](long, long c, long r, long j) {
        const long g = s.group[r];
        if (g >= 0) dx[c * x_chain_stride + r + j * x_rows] += dy[(c * cols + j) * groups + g];
      });
      return;
    }
    for_each_cell(lane, chains, groups, cols, [&](long k, long c, long g, long j) {
      const T* xj = x + c * x_chain_stride + j * x_rows;
      T* dxj = dx + c * x_chain_stride + j * x_rows;
      const long* rows = s.sorted + s.offsets[g];
      fold_partials(fold, [&](long i) { return xj[rows[i]]; }, s.offsets[g + 1] - s.offsets[g],
                    static_cast<double>(dy[k]),
                    [&](long i, double v) { dxj[rows[i]] += static_cast<T>(v); });
    });
  }
};

}  // namespace lockstep

#endif
