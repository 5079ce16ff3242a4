// cumsum(x), cumprod(x), cummax(x) and cummin(x) of x taken as a vector
// (column-major), per chain:
//   cumsum   y[i] = sum_{k <= i} x[k]     backward dx[i] += sum_{k >= i} dy[k]
//   cumprod  y[i] = prod_{k <= i} x[k]    backward dx[i] += y[i-1] * S[i], with
//            S[i] = dy[i] + x[i+1] S[i+1] (y[-1] = 1): exact with zeros, no
//            division by x[i]
//   cummax   y[i] = max_{k <= i} x[k]     backward dx[a(i)] += dy[i], a(i) the
//   cummin   (min likewise)               first k <= i where the running max
//            (min) was taken, as fold.hpp's max sends its gradient to the first
//            arg-max; from a NaN on, y is NaN (R's cummax) and the NaN element
//            takes the gradient
// Each lane owns whole chains and scans a chain in order, accumulating in
// double, so results are the same on every backend and launch geometry.
// Global-stage ops: a scan reads every earlier element.
#ifndef LOCKSTEP_KERNELS_CUMULATIVE_HPP
#define LOCKSTEP_KERNELS_CUMULATIVE_HPP

#include "../ir.hpp"
#include "../lanes.hpp"

namespace lockstep {

// Where the running max (cummax) or min (cummin) of xc[0..i] was taken, given
// where that of xc[0..i-1] was (`at`; anything at i = 0): the first index of
// the extreme, or of the first NaN, which then stays (so y stays NaN).
template <class T> LS_HD long running_extreme_at(Op op, const T* xc, long at, long i) {
  if (i == 0) return 0;
  const T held = xc[at], v = xc[i];
  if (held != held) return at;  // NaN taken: it stays
  const bool better = op == Op::cummax ? v > held : v < held;
  return better || v != v ? i : at;
}

template <class T> struct CumulativeForward {
  Op op;  // cumsum, cumprod, cummax or cummin
  const T* x;
  long x_chain_stride;  // 0 when x has no chain dimension
  T* y;                 // [chains, size]
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    const bool product = op == Op::cumprod;
    const bool extreme = op == Op::cummax || op == Op::cummin;
    for_each_element(lane, chains, 1, [&](long, long c, long) {
      const T* xc = x + c * x_chain_stride;
      T* yc = y + c * size;
      if (extreme) {
        long at = 0;
        for (long i = 0; i < size; ++i) {
          at = running_extreme_at(op, xc, at, i);
          yc[i] = xc[at];
        }
        return;
      }
      double acc = product ? 1.0 : 0.0;
      for (long i = 0; i < size; ++i) {
        const double v = static_cast<double>(xc[i]);
        acc = product ? acc * v : acc + v;
        yc[i] = static_cast<T>(acc);
      }
    });
  }
};

template <class T> struct CumulativeBackward {
  Op op;
  const T* x;
  long x_chain_stride;
  const T* y;  // [chains, size]
  long y_chain_stride;
  const T* dy;  // [chains, size]
  T* dx;
  long dx_chain_stride;  // 0 when x has no chain dimension (lanes then add to one address)
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    const bool product = op == Op::cumprod;
    const bool extreme = op == Op::cummax || op == Op::cummin;
    for_each_element(lane, chains, 1, [&](long, long c, long) {
      const T* xc = x + c * x_chain_stride;
      const T* yc = y + c * y_chain_stride;
      const T* dyc = dy + c * size;
      T* dxc = dx + c * dx_chain_stride;
      if (extreme) {  // the arg-extremes found again, as the forward pass found them
        long at = 0;
        for (long i = 0; i < size; ++i) {
          at = running_extreme_at(op, xc, at, i);
          lane_add(dxc + at, dyc[i]);
        }
        return;
      }
      double s = 0;
      for (long i = size - 1; i >= 0; --i) {
        if (product) {
          s = static_cast<double>(dyc[i]) + (i + 1 < size ? static_cast<double>(xc[i + 1]) * s : 0.0);
          const double before = i > 0 ? static_cast<double>(yc[i - 1]) : 1.0;
          lane_add(dxc + i, static_cast<T>(before * s));
        } else {
          s += static_cast<double>(dyc[i]);
          lane_add(dxc + i, static_cast<T>(s));
        }
      }
    });
  }
};

}  // namespace lockstep

#endif
