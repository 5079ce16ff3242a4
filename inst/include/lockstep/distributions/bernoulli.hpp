// bernoulli(prob), R's dbinom(x, 1, prob).
//   log p = x log(prob) + (1 - x) log(1 - prob), x in {0, 1};
//   d/dprob = x / prob - (1 - x) / (1 - prob); x is discrete (d/dx = 0).
#ifndef LOCKSTEP_DISTRIBUTIONS_BERNOULLI_HPP
#define LOCKSTEP_DISTRIBUTIONS_BERNOULLI_HPP

#include "dist.hpp"

namespace lockstep {

template <> struct Dist<Family::bernoulli> : Discrete {
  static constexpr int n_params = 1;
  LS_HD static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double q = p[0];
    if (!(q >= 0 && q <= 1)) return dist_nan(dx, dp, n_params);
    *dx = 0;
    if (x == 1) {
      dp[0] = 1 / q;
      return log(q);
    }
    if (x == 0) {
      dp[0] = -1 / (1 - q);
      return log1p(-q);
    }
    dp[0] = 0;
    return -ls_inf();
  }
};

}  // namespace lockstep

#endif
