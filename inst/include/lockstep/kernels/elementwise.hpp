// Kernel bodies of the elementwise ops, written against the lanes policy
// (lanes.hpp) and shared by the CPU, emulated and CUDA backends.
//
// An operand is addressed as data[c * chain_stride + (scalar ? 0 : i)]: a node
// without the chain dimension has chain_stride 0, a broadcast scalar has
// scalar = true. Outputs always carry the layout [chains, size].
#ifndef LOCKSTEP_KERNELS_ELEMENTWISE_HPP
#define LOCKSTEP_KERNELS_ELEMENTWISE_HPP

#include "../lanes.hpp"
#include "../math/binary.hpp"
#include "../math/unary.hpp"

namespace lockstep {

template <class T> struct Operand {
  const T* data;
  long chain_stride;  // 0 when the operand has no chain dimension
  bool scalar;        // broadcast: one element for every i
  LS_HD T at(long c, long i) const { return data[c * chain_stride + (scalar ? 0 : i)]; }
};

// Adjoint destination of a broadcast operand: a scalar operand (or one without
// the chain dimension) receives the sum over the broadcast elements, so several
// lanes add to one address.
template <class T> struct AdjointSink {
  T* data;  // nullptr when the operand needs no gradient
  long chain_stride;
  bool scalar;
  LS_HD void add(long c, long i, T v) const { lane_add(data + c * chain_stride + (scalar ? 0 : i), v); }
};

template <class T> struct UnaryForward {
  Op op;
  Operand<T> x;
  T* y;
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    for_each_element(lane, chains, size, [&](long k, long c, long i) {
      y[k] = unary_value(op, x.at(c, i));
    });
  }
};

template <class T> struct UnaryBackward {
  Op op;
  Operand<T> x;
  const T* y;
  const T* dy;
  AdjointSink<T> dx;
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    for_each_element(lane, chains, size, [&](long k, long c, long i) {
      dx.add(c, i, dy[k] * unary_deriv(op, x.at(c, i), y[k]));
    });
  }
};

template <class T> struct BinaryForward {
  Op op;
  Operand<T> a, b;
  T* y;
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    for_each_element(lane, chains, size, [&](long k, long c, long i) {
      y[k] = binary_value(op, a.at(c, i), b.at(c, i));
    });
  }
};

template <class T> struct BinaryBackward {
  Op op;
  Operand<T> a, b;
  const T* y;
  const T* dy;
  AdjointSink<T> da, db;
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    for_each_element(lane, chains, size, [&](long k, long c, long i) {
      T pa = T(0), pb = T(0);
      binary_partials(op, a.at(c, i), b.at(c, i), y[k], &pa, &pb);
      if (da.data) da.add(c, i, dy[k] * pa);
      if (db.data) db.add(c, i, dy[k] * pb);
    });
  }
};

}  // namespace lockstep

#endif
