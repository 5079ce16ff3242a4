// bernoulli_probit(eta): bernoulli(iprobit(eta)), computed on the probit scale
// (greta's representation; R's bernoulli(iprobit(eta)) becomes this family):
//   log p(1) = log Phi(eta),  log p(0) = log Phi(-eta),
//   d/deta = phi(eta) / Phi(eta) for x = 1, -phi(eta) / Phi(-eta) for x = 0,
// both finite for every finite eta (log(1 - pnorm(40)) is -Inf in double, log
// Phi(-40) = -804.6). x is discrete (d/dx = 0); x outside {0, 1} has log
// density -Inf. NaN eta gives NaN.
#ifndef LOCKSTEP_DISTRIBUTIONS_BERNOULLI_PROBIT_HPP
#define LOCKSTEP_DISTRIBUTIONS_BERNOULLI_PROBIT_HPP

#include "../math/normal_tails.hpp"
#include "dist.hpp"

namespace lockstep {

template <> struct Dist<Family::bernoulli_probit> : Discrete {
  static constexpr int n_params = 1;
  // Both tails and their Mills ratios from one erfcx (probit_tails,
  // math/normal_tails.hpp), in selects: a probit regression's element loop
  // vectorises (density.hpp's straight_line<D>).
  static constexpr bool straight_line = true;
  LS_HD_INLINE static double lpdf(double x, const double* p, double* dx, double* dp) {
    const ProbitTails t = probit_tails(p[0]);
    *dx = 0;
    const bool one = x == 1, valid = one || x == 0;
    dp[0] = valid ? (one ? t.mills_p : -t.mills_q) : 0.0;
    return valid ? (one ? t.log_p : t.log_q) : -ls_inf();
  }
};

}  // namespace lockstep

#endif
