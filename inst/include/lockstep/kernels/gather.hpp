// y = x[index]: forward gathers, backward scatter-adds (several outputs may
// read one input element, so lanes may add to one address).
#ifndef LOCKSTEP_KERNELS_GATHER_HPP
#define LOCKSTEP_KERNELS_GATHER_HPP

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

}  // namespace lockstep

#endif
