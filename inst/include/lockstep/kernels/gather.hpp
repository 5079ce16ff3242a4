// Gathers: forward reads, backward scatter-adds (several outputs may read one
// input element, so lanes may add to one address).
//   gather       y[i] = x[index[i]], one flat index per output element
//   gather_rows  y[r, j] = x[index[r], j], one row index per output row: x is
//                G x cols, y is rows x cols (R's x[i, ] with i row numbers).
//                The index of N rows is N longs, not N * cols. A tile of y's
//                rows reads the tile's entries of the index; x is whole.
#ifndef LOCKSTEP_KERNELS_GATHER_HPP
#define LOCKSTEP_KERNELS_GATHER_HPP

#include "cells.hpp"
#include "elementwise.hpp"

namespace lockstep {

template <class T> struct GatherForward {
  const T* x;
  long x_chain_stride;
  const long* index;
  T* y;
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    for_each_element(lane, chains, size, [&](long k, long c, long i) {
      y[k] = x[c * x_chain_stride + index[i]];
    });
  }
};

template <class T> struct GatherBackward {
  const long* index;
  const T* dy;
  T* dx;
  long x_size;
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    for_each_element(lane, chains, size, [&](long k, long c, long i) {
      lane_add(dx + c * x_size + index[i], dy[k]);
    });
  }
};

// x_rows: G, the rows of x; rows, cols: the output's extents.
template <class T> struct GatherRowsForward {
  const T* x;
  long x_chain_stride;
  long x_rows;
  const long* index;  // [rows], 0-based rows of x
  T* y;               // [chains, rows * cols]
  long chains, rows, cols;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    for_each_cell(lane, chains, rows, cols, [&](long k, long c, long r, long j) {
      y[k] = x[c * x_chain_stride + index[r] + j * x_rows];
    });
  }
};

template <class T> struct GatherRowsBackward {
  const long* index;
  const T* dy;  // [chains, rows * cols]
  T* dx;        // [chains, x_rows * cols]
  long x_rows;
  long chains, rows, cols;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    const long x_size = x_rows * cols;
    for_each_cell(lane, chains, rows, cols, [&](long k, long c, long r, long j) {
      lane_add(dx + c * x_size + index[r] + j * x_rows, dy[k]);
    });
  }
};

}  // namespace lockstep

#endif
