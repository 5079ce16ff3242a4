// cumsum(x) and cumprod(x) of x taken as a vector (column-major), per chain:
//   cumsum   y[i] = sum_{k <= i} x[k]     backward dx[i] += sum_{k >= i} dy[k]
//   cumprod  y[i] = prod_{k <= i} x[k]    backward dx[i] += y[i-1] * S[i], with
//            S[i] = dy[i] + x[i+1] S[i+1] (y[-1] = 1): exact with zeros, no
//            division by x[i]
// Each lane owns whole chains and scans a chain in order, accumulating in
// double, so results are the same on every backend and launch geometry.
// Global-stage ops: a scan reads every earlier element.
#ifndef LOCKSTEP_KERNELS_CUMULATIVE_HPP
#define LOCKSTEP_KERNELS_CUMULATIVE_HPP

#include "../ir.hpp"
#include "../lanes.hpp"

namespace lockstep {

template <class T> struct CumulativeForward {
  Op op;  // cumsum or cumprod
  const T* x;
  long x_chain_stride;  // 0 when x has no chain dimension
  T* y;                 // [chains, size]
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    const bool product = op == Op::cumprod;
    for_each_element(lane, chains, 1, [&](long, long c, long) {
      const T* xc = x + c * x_chain_stride;
      T* yc = y + c * size;
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
    for_each_element(lane, chains, 1, [&](long, long c, long) {
      const T* xc = x + c * x_chain_stride;
      const T* yc = y + c * y_chain_stride;
      const T* dyc = dy + c * size;
      T* dxc = dx + c * dx_chain_stride;
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
