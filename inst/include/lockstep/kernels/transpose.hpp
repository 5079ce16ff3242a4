// y = t(x) for x of rows x cols (column-major), per chain:
//   y[j, r] = x[r, j],  y is cols x rows;  backward dx[r, j] += dy[j, r].
// Each element of y (forward) and of dx (backward) is written by one lane
// only, so no two lanes write one address. A tile of rows of x is not a tile of rows of y:
// both are always whole values.
#ifndef LOCKSTEP_KERNELS_TRANSPOSE_HPP
#define LOCKSTEP_KERNELS_TRANSPOSE_HPP

#include "../lanes.hpp"
#include "cells.hpp"

namespace lockstep {

// rows, cols: the extents of x.
template <class T> struct TransposeForward {
  const T* x;
  long x_chain_stride;
  T* y;  // [chains, cols * rows]
  long chains, rows, cols;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    // y has cols rows and rows columns: its element (j, r) is x's (r, j)
    for_each_cell(lane, chains, cols, rows, [&](long k, long c, long j, long r) {
      y[k] = x[c * x_chain_stride + r + j * rows];
    });
  }
};

// Walks dy in order, as the forward pass walks y: the strided side then
// revisits the same few cache lines (one per column of x) from one row to the
// next, where walking dx in order would touch a new line of dy per element.
template <class T> struct TransposeBackward {
  const T* dy;  // [chains, cols * rows]
  T* dx;        // [chains, rows * cols]
  long chains, rows, cols;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    const long size = rows * cols;
    for_each_cell(lane, chains, cols, rows, [&](long k, long c, long j, long r) {
      dx[c * size + r + j * rows] += dy[k];
    });
  }
};

}  // namespace lockstep

#endif
