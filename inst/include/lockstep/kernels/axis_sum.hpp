// Row and column sums of a rows x cols value (R's rowSums and colSums, which
// greta returns as column vectors): per chain,
//   rowsum  y[r] = sum_j x[r, j]   (rows x 1),  backward dx[r, j] += dy[r]
//   colsum  y[j] = sum_r x[r, j]   (cols x 1),  backward dx[r, j] += dy[j]
// Forward, each lane owns whole output elements and sums in double; backward,
// each lane owns elements of dx. No two lanes write one address, so the sums
// are the same on every backend and launch geometry.
//
// Extents come from the call (rows is a tile's rows when the value is tiled),
// never from the node. A tile of rows is a valid input to rowsum (row r of the
// output reads row r of the input only), not to colsum, whose every output
// element reads every row.
#ifndef LOCKSTEP_KERNELS_AXIS_SUM_HPP
#define LOCKSTEP_KERNELS_AXIS_SUM_HPP

#include "../lanes.hpp"
#include "cells.hpp"

namespace lockstep {

template <class T> struct RowSumForward {
  const T* x;
  long x_chain_stride;  // 0 when x has no chain dimension
  T* y;                 // [chains, rows]
  long chains, rows, cols;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    for_each_element(lane, chains, rows, [&](long k, long c, long r) {
      const T* xr = x + c * x_chain_stride + r;
      double acc = 0;
      for (long j = 0; j < cols; ++j) acc += static_cast<double>(xr[j * rows]);
      y[k] = static_cast<T>(acc);
    });
  }
};

template <class T> struct RowSumBackward {
  const T* dy;  // [chains, rows]
  T* dx;        // [chains, rows * cols]
  long chains, rows, cols;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    for_each_cell(lane, chains, rows, cols,
                  [&](long k, long c, long r, long) { dx[k] += dy[c * rows + r]; });
  }
};

template <class T> struct ColSumForward {
  const T* x;
  long x_chain_stride;
  T* y;  // [chains, cols]
  long chains, rows, cols;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    for_each_element(lane, chains, cols, [&](long k, long c, long j) {
      const T* xj = x + c * x_chain_stride + j * rows;
      double acc = 0;
      for (long r = 0; r < rows; ++r) acc += static_cast<double>(xj[r]);
      y[k] = static_cast<T>(acc);
    });
  }
};

template <class T> struct ColSumBackward {
  const T* dy;  // [chains, cols]
  T* dx;        // [chains, rows * cols]
  long chains, rows, cols;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    for_each_cell(lane, chains, rows, cols,
                  [&](long k, long c, long, long j) { dx[k] += dy[c * cols + j]; });
  }
};

}  // namespace lockstep

#endif
