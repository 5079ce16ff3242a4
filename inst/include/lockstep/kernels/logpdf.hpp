// The logpdf op: a distribution's log density at each element of its target,
// as a value of the target's shape instead of a summed term, for densities that
// R combines elementwise (mixture(): a log-sum-exp over components' log
// densities; joint(): one family per column). The math is the family's own
// (truncated_lpdf_of, distributions.hpp); only the way out differs from a
// density term: the backward pass scales each element's partials by the
// output's adjoint at that element, where a term's adjoint is always one.
#ifndef LOCKSTEP_KERNELS_LOGPDF_HPP
#define LOCKSTEP_KERNELS_LOGPDF_HPP

#include "../distributions.hpp"
#include "elementwise.hpp"

namespace lockstep {

// Inputs of one call: the target x (the output's shape) and the family's
// parameters, each the output's shape or one value.
template <class T> struct LogpdfInputs {
  Family family;
  double lower, upper;  // truncation (infinite: none)
  Operand<T> x;
  Operand<T> p[max_dist_params];

  // The family's log density at element i of chain c, its partials in gx, gp.
  template <Family F> LS_HD double at(long c, long i, double* gx, double* gp) const {
    double pv[max_dist_params] = {0};
    for (int k = 0; k < Dist<F>::n_params; ++k) pv[k] = static_cast<double>(p[k].at(c, i));
    return truncated_lpdf_of<F>(static_cast<double>(x.at(c, i)), pv, lower, upper, gx, gp);
  }
};

template <class T> struct LogpdfForward {
  LogpdfInputs<T> in;
  T* y;
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    with_family(in.family, [&](auto tag) {
      constexpr Family F = decltype(tag)::value;
      for_each_element(lane, chains, size, [&](long k, long c, long i) {
        double gx = 0, gp[max_dist_params] = {0};
        y[k] = static_cast<T>(in.template at<F>(c, i, &gx, gp));
      });
    });
  }
};

// dy[k] times each partial into the target's and parameters' adjoints (sinks
// of broadcast operands sum over the elements, as the elementwise ops' do).
template <class T> struct LogpdfBackward {
  LogpdfInputs<T> in;
  const T* dy;
  AdjointSink<T> dx;
  AdjointSink<T> dp[max_dist_params];
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    with_family(in.family, [&](auto tag) {
      constexpr Family F = decltype(tag)::value;
      for_each_element(lane, chains, size, [&](long k, long c, long i) {
        double gx = 0, gp[max_dist_params] = {0};
        in.template at<F>(c, i, &gx, gp);
        const double g = static_cast<double>(dy[k]);
        // a zero adjoint adds nothing, and must not turn an infinite partial
        // (an element outside a truncation) into NaN
        if (g == 0) return;
        if (dx.data) dx.add(c, i, static_cast<T>(g * gx));
        for (int j = 0; j < Dist<F>::n_params; ++j)
          if (dp[j].data) dp[j].add(c, i, static_cast<T>(g * gp[j]));
      });
    });
  }
};

}  // namespace lockstep

#endif
