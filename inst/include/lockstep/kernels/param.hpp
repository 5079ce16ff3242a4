// Parameter slices: the constrained value x = g(z) of a slice of the free state
// z, and the log |dx/dz| that the log density gains from the change of variable.
//   lower     x = a + exp(z)             log J = z                  dlogJ/dz = 1
//   upper     x = b - exp(z)             log J = z                  dlogJ/dz = 1
//   interval  x = a + (b - a) ilogit(z)  log J = log(b - a) + log s + log(1 - s),
//             s = ilogit(z)                                          dlogJ/dz = 1 - 2 s
#ifndef LOCKSTEP_KERNELS_PARAM_HPP
#define LOCKSTEP_KERNELS_PARAM_HPP

#include <cmath>
#include "../ir.hpp"
#include "../lanes.hpp"
#include "../math/unary.hpp"
#include "stream_store.hpp"

namespace lockstep {

struct ConstraintMath {
  Transform transform;
  double lower, upper;

  LS_HD double value(double z) const {
    switch (transform) {
      case Transform::none: return z;
      case Transform::lower: return lower + exp(z);
      case Transform::upper: return upper - exp(z);
      case Transform::interval: return lower + (upper - lower) * Unary<Op::ilogit>::value(z);
    }
    return z;
  }
  LS_HD double dvalue(double z) const {
    switch (transform) {
      case Transform::none: return 1;
      case Transform::lower: return exp(z);
      case Transform::upper: return -exp(z);
      case Transform::interval: {
        const double s = Unary<Op::ilogit>::value(z);
        return (upper - lower) * s * (1 - s);
      }
    }
    return 1;
  }
  LS_HD double log_jacobian(double z) const {
    switch (transform) {
      case Transform::none: return 0;
      case Transform::lower:
      case Transform::upper: return z;
      case Transform::interval: {
        // log s + log(1 - s) = -|z| - 2 log1p(exp(-|z|)), stable in both tails
        const double a = fabs(z);
        return log(upper - lower) - a - 2 * log1p(exp(-a));
      }
    }
    return 0;
  }
  LS_HD double dlog_jacobian(double z) const {
    switch (transform) {
      case Transform::none: return 0;
      case Transform::lower:
      case Transform::upper: return 1;
      case Transform::interval: return 1 - 2 * Unary<Op::ilogit>::value(z);
    }
    return 0;
  }
};

// Writes x[c, i] = g(z[c, offset + i]).
template <class T> struct ParamForward {
  ConstraintMath g;
  const double* state;  // [chains, n_free]
  long n_free, offset;
  T* y;
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    // Unconstrained values (most of a large model's) are a plain copy, with
    // the transform's switch out of the loop.
    if (g.transform == Transform::none)
      for_each_element(lane, chains, size, [&](long k, long c, long i) {
        y[k] = static_cast<T>(state[c * n_free + offset + i]);
      });
    else
      for_each_element(lane, chains, size, [&](long k, long c, long i) {
        y[k] = static_cast<T>(g.value(state[c * n_free + offset + i]));
      });
  }
};

// The log Jacobian as a ChainSum term; adds its derivative to the state gradient.
struct ParamJacobianTerm {
  ConstraintMath g;
  const double* state;
  double* grad;  // [chains, n_free], nullptr when no gradient is wanted
  long n_free, offset;
  LS_HD double operator()(long c, long i) const {
    const double z = state[c * n_free + offset + i];
    if (grad) grad[c * n_free + offset + i] += g.dlog_jacobian(z);
    return g.log_jacobian(z);
  }
};

// Chain rule through the transform into the state gradient.
template <class T> struct ParamBackward {
  ConstraintMath g;
  const double* state;
  double* grad;
  long n_free, offset;
  const T* dy;
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  // An unconstrained parameter whose slice of the gradient nothing else
  // writes stores it (the executor did not zero it: NodeCall::first_writer).
  bool store = false;
  LS_HD void operator()(int, const Lane& lane) const {
#if !defined(__CUDA_ARCH__)
    // The CPU: a slice too large for the caches goes past them (the next
    // to read it is the sampler, after the whole gradient).
    if (lane.count == 1 && store && g.transform == Transform::none &&
        size * static_cast<long>(sizeof(double)) >= detail::stream_bytes) {
      for (long c = 0; c < chains; ++c)
        detail::stream_store(grad + c * n_free + offset, dy + c * size, size);
      detail::stream_fence();
      return;
    }
#endif
    if (g.transform == Transform::none && store)
      for_each_element(lane, chains, size, [&](long k, long c, long i) {
        grad[c * n_free + offset + i] = static_cast<double>(dy[k]);
      });
    else if (g.transform == Transform::none)
      for_each_element(lane, chains, size, [&](long k, long c, long i) {
        grad[c * n_free + offset + i] += static_cast<double>(dy[k]);
      });
    else
      for_each_element(lane, chains, size, [&](long k, long c, long i) {
        const long j = c * n_free + offset + i;
        grad[j] += static_cast<double>(dy[k]) * g.dvalue(state[j]);
      });
  }
};

}  // namespace lockstep

#endif
