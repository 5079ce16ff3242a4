// The grid-stride loop over a [chains, rows, cols] layout (column-major within
// a chain, as R stores matrices), for bodies that need an element's row and
// column: calls f(k, c, r, j) for each flat index k = (c * cols + j) * rows + r
// owned by this lane.
//
// The coordinates are found by division once per lane; after that the lane
// stride is added digit by digit (a mixed-radix add with one carry per digit),
// so the loop itself divides nothing. A digit plus its stride digit plus a
// carry is less than twice the radix, hence one carry each.
#ifndef LOCKSTEP_KERNELS_CELLS_HPP
#define LOCKSTEP_KERNELS_CELLS_HPP

#include "../lanes.hpp"

namespace lockstep {

template <class F>
LS_HD void for_each_cell(const Lane& lane, long chains, long rows, long cols, F&& f) {
  if (lane.count == 1) {  // the CPU: plain nested loops, rows innermost
    long k = 0;
    for (long c = 0; c < chains; ++c)
      for (long j = 0; j < cols; ++j)
        for (long r = 0; r < rows; ++r, ++k) f(k, c, r, j);
    return;
  }
  const long n = chains * rows * cols;
  if (lane.index >= n) return;
  const long step_r = lane.count % rows, step_q = lane.count / rows;
  const long step_j = step_q % cols, step_c = step_q / cols;
  const long q = lane.index / rows;
  long r = lane.index - q * rows, j = q % cols, c = q / cols;
  for (long k = lane.index; k < n; k += lane.count) {
    f(k, c, r, j);
    r += step_r;
    j += step_j;
    c += step_c;
    if (r >= rows) {
      r -= rows;
      ++j;
    }
    if (j >= cols) {
      j -= cols;
      ++c;
    }
  }
}

}  // namespace lockstep

#endif
