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

  // Calls g(k, c, i, lp, gx, gp, n_params) at every element this lane owns:
  // the family's log density lp there and its partials gx (target) and gp
  // (parameters), the family chosen once, outside the loop.
  template <class G>
  LS_HD void each(const Lane& lane, long chains, long size, G&& g) const {
    with_family(family, [&](auto tag) {
      using D = Dist<decltype(tag)::value>;
      for_each_element(lane, chains, size, [&](long k, long c, long i) {
        double pv[max_dist_params] = {0}, gx = 0, gp[max_dist_params] = {0};
        for (int j = 0; j < D::n_params; ++j) pv[j] = static_cast<double>(p[j].at(c, i));
        const double lp = truncated_lpdf_of<decltype(tag)::value>(
            static_cast<double>(x.at(c, i)), pv, lower, upper, &gx, gp);
        g(k, c, i, lp, gx, gp, D::n_params);
      });
    });
  }
};

template <class T> struct LogpdfForward {
  LogpdfInputs<T> in;
  T* y;
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    in.each(lane, chains, size, [&](long k, long, long, double lp, double, const double*, int) {
      y[k] = static_cast<T>(lp);
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
    in.each(lane, chains, size,
            [&](long k, long c, long i, double, double gx, const double* gp, int n_params) {
              const double g = static_cast<double>(dy[k]);
              // a zero adjoint adds nothing, and must not turn an infinite
              // partial (an element outside a truncation) into NaN
              if (g == 0) return;
              if (dx.data) dx.add(c, i, static_cast<T>(g * gx));
              for (int j = 0; j < n_params; ++j)
                if (dp[j].data) dp[j].add(c, i, static_cast<T>(g * gp[j]));
            });
  }
};

}  // namespace lockstep

#endif
