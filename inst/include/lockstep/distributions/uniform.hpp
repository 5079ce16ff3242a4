// uniform(min, max), R's dunif / punif.
//   log f = -log(max - min) for min <= x <= max, -Inf outside;
//   d/dx = 0,  d/dmin = 1 / (max - min),  d/dmax = -1 / (max - min)
// max <= min gives NaN. greta fixes min and max (numbers, never greta arrays),
// so that a uniform variable is constrained to (min, max).
#ifndef LOCKSTEP_DISTRIBUTIONS_UNIFORM_HPP
#define LOCKSTEP_DISTRIBUTIONS_UNIFORM_HPP

#include "dist.hpp"

namespace lockstep {

template <> struct Dist<Family::uniform> {
  static constexpr int n_params = 2;
  LS_HD static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double a = p[0], b = p[1];
    if (!(b > a)) return dist_nan(dx, dp, n_params);
    *dx = 0;
    if (x < a || x > b) {
      dp[0] = dp[1] = 0;
      return -ls_inf();
    }
    const double w = b - a;
    dp[0] = 1 / w;
    dp[1] = -1 / w;
    return -log(w);
  }
  // F = (x - min) / (max - min) inside; dF/dmin = (x - max) / w^2,
  // dF/dmax = -(x - min) / w^2.
  LS_HD static double cdf(double x, const double* p, double* dp) {
    const double a = p[0], b = p[1];
    dp[0] = dp[1] = 0;
    if (x <= a) return 0;
    if (x >= b) return 1;
    const double w = b - a;
    dp[0] = (x - b) / (w * w);
    dp[1] = -(x - a) / (w * w);
    return (x - a) / w;
  }
  LS_HD static double ccdf(double x, const double* p, double* dp) {
    cdf(x, p, dp);
    dp[0] = -dp[0];
    dp[1] = -dp[1];
    if (x <= p[0]) return 1;
    if (x >= p[1]) return 0;
    return (p[1] - x) / (p[1] - p[0]);
  }
};

}  // namespace lockstep

#endif
