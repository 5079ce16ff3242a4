// concat(a, b): the elements of a, then those of b, both taken as vectors
// (column-major), per chain. R's c(), and cbind() / rbind() (with transposes),
// are chains of concatenations. Backward copies each block of dy back to its
// operand's adjoint. Every output element is one lane's, so no two lanes write
// one address unless an operand has no chain dimension.
#ifndef LOCKSTEP_KERNELS_CONCAT_HPP
#define LOCKSTEP_KERNELS_CONCAT_HPP

#include "../lanes.hpp"

namespace lockstep {

template <class T> struct ConcatForward {
  const T* a;
  long a_chain_stride, a_size;
  const T* b;
  long b_chain_stride;
  T* y;  // [chains, size], size = a_size + b's size
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    for_each_element(lane, chains, size, [&](long k, long c, long i) {
      y[k] = i < a_size ? a[c * a_chain_stride + i] : b[c * b_chain_stride + (i - a_size)];
    });
  }
};

template <class T> struct ConcatBackward {
  const T* dy;  // [chains, size]
  T* da;        // nullptr when a needs no gradient
  long da_chain_stride, a_size;
  T* db;
  long db_chain_stride;
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    for_each_element(lane, chains, size, [&](long k, long c, long i) {
      if (i < a_size) {
        if (da) lane_add(da + c * da_chain_stride + i, dy[k]);
      } else if (db) {
        lane_add(db + c * db_chain_stride + (i - a_size), dy[k]);
      }
    });
  }
};

}  // namespace lockstep

#endif
