// rowdot_rows: y[r] = sum_j a[r, j] * b[index[r], j], for a (rows x cols) and
// b (G x cols), per chain: rowSums(a * b[index, ]) in one pass, which the
// planner fuses from those three ops (planner.hpp) so that no rows x cols
// intermediate is written, read back or differentiated. This is the random
// slopes term of a hierarchical regression: a = X, b = the group slopes.
//   forward    y[r] = sum_j a[r, j] b[g_r, j]                 (sum in double)
//   backward   da[r, j] += dy[r] b[g_r, j]; db[g_r, j] += dy[r] a[r, j]
// A lane owns whole rows: its da writes are its own, its db writes are
// scatter-adds (rows of one group may be in other lanes).
#ifndef LOCKSTEP_KERNELS_ROWDOT_HPP
#define LOCKSTEP_KERNELS_ROWDOT_HPP

#include "../lanes.hpp"

#if !defined(__CUDA_ARCH__)
#include <algorithm>
#include <vector>
#endif

namespace lockstep {

struct RowDotShape {
  long rows, cols;  // of a (and y has rows)
  long b_rows;      // G
  long a_stride, b_stride;  // chain strides (0 without the chain dimension)
};

template <class T> struct RowDotForward {
  RowDotShape s;
  const T* a;
  const T* b;
  const long* index;  // [rows]
  T* y;               // [chains, rows]
  long chains;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
#if !defined(__CUDA_ARCH__)
    // One lane (the CPU): column by column, a's reads contiguous, into a
    // column of double sums.
    if (lane.count == 1) {
      std::vector<double> acc(s.rows);
      for (long c = 0; c < chains; ++c) {
        std::fill(acc.begin(), acc.end(), 0.0);
        const T* ac = a + c * s.a_stride;
        const T* bc = b + c * s.b_stride;
        for (long j = 0; j < s.cols; ++j) {
          const T* acol = ac + j * s.rows;
          const T* bcol = bc + j * s.b_rows;
          for (long r = 0; r < s.rows; ++r)
            acc[r] += static_cast<double>(acol[r]) * static_cast<double>(bcol[index[r]]);
        }
        for (long r = 0; r < s.rows; ++r) y[c * s.rows + r] = static_cast<T>(acc[r]);
      }
      return;
    }
#endif
    for_each_element(lane, chains, s.rows, [&](long k, long c, long r) {
      const T* ar = a + c * s.a_stride + r;
      const T* br = b + c * s.b_stride + index[r];
      double acc = 0;
      for (long j = 0; j < s.cols; ++j)
        acc += static_cast<double>(ar[j * s.rows]) * static_cast<double>(br[j * s.b_rows]);
      y[k] = static_cast<T>(acc);
    });
  }
};

template <class T> struct RowDotBackward {
  RowDotShape s;
  const T* a;
  const T* b;
  const long* index;
  const T* dy;
  T* da;  // [chains, rows * cols] or nullptr
  T* db;  // [chains, b_rows * cols] or nullptr
  long chains;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    for_each_element(lane, chains, s.rows, [&](long k, long c, long r) {
      const T g = dy[k];
      const long ao = c * s.a_stride + r, bo = c * s.b_stride + index[r];
      for (long j = 0; j < s.cols; ++j) {
        if (da) da[c * s.rows * s.cols + r + j * s.rows] += g * b[bo + j * s.b_rows];
        if (db) lane_add(db + c * s.b_rows * s.cols + index[r] + j * s.b_rows, g * a[ao + j * s.rows]);
      }
    });
  }
};

}  // namespace lockstep

#endif
