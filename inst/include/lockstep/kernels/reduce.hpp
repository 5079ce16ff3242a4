// sum(x): the value of every element of x, summed per chain; backward
// broadcasts the adjoint of the sum to every element.
#ifndef LOCKSTEP_KERNELS_REDUCE_HPP
#define LOCKSTEP_KERNELS_REDUCE_HPP

#include "chain_sum.hpp"
#include "elementwise.hpp"

namespace lockstep {

template <class T> struct SumTerm {
  Operand<T> x;
  LS_HD double operator()(long c, long i) const { return static_cast<double>(x.at(c, i)); }
};

template <class T> struct SumBackward {
  const T* dy;  // [chains]
  AdjointSink<T> dx;
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    for_each_element(lane, chains, size, [&](long, long c, long i) {
      dx.add(c, i, dy[c]);
    });
  }
};

}  // namespace lockstep

#endif
