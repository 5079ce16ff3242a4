// binomial_probit(size, eta): binomial(size, iprobit(eta)), computed on the probit scale
// (greta's representation; R's binomial(size, iprobit(eta)) becomes this family):
//   log p = lchoose(size, x) + x log Phi(eta) + (size - x) log Phi(-eta),
//   d/deta = x phi(eta) / Phi(eta) - (size - x) phi(eta) / Phi(-eta),
// finite for every finite eta. Its partials and the rules for size and x are
// binomial.hpp's, and its form binomial_logit's, with the normal's tails
// (probit_tails, math/normal_tails.hpp) for the logistic's.
#ifndef LOCKSTEP_DISTRIBUTIONS_BINOMIAL_PROBIT_HPP
#define LOCKSTEP_DISTRIBUTIONS_BINOMIAL_PROBIT_HPP

#include "../math/normal_tails.hpp"
#include "dist.hpp"
#include "helpers.hpp"

namespace lockstep {

template <> struct Dist<Family::binomial_probit> : Discrete2 {
  static constexpr int n_params = 2;
  static constexpr bool straight_line = true;
  LS_HD_INLINE static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double n = p[0], eta = p[1];
    const double bad = nan_unless((n >= 0) & (n < ls_inf()) & (eta == eta));
    const bool in = (x >= 0) & (x <= n) & (floor(x) == x);  // NaN: not in
    const double m = n - x;
    const ProbitTails t = probit_tails(eta);
    // a count of 0 contributes exactly 0 (not 0 * -Inf at eta = +-Inf)
    const double k = ls_count_times(x, t.log_p) + ls_count_times(m, t.log_q);
    const LogGamma gn = ls_lgamma_digamma(n + 1), gm = ls_lgamma_digamma(m + 1);
    const double lp = gn.lgamma - ls_lfactorial_count(x) - gm.lgamma + k;
    *dx = bad;
    dp[0] = (in ? gn.digamma - gm.digamma + t.log_q : 0.0) + bad;
    dp[1] = (in ? ls_count_times(x, t.mills_p) - ls_count_times(m, t.mills_q) : 0.0) + bad;
    return (in ? lp : -ls_inf()) + bad;
  }
};

}  // namespace lockstep

#endif
