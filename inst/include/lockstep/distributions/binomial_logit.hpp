// binomial_logit(size, eta): binomial(size, ilogit(eta)), computed on the logit scale
// (greta's representation; R's binomial(size, ilogit(eta)) becomes this family):
//   log p = lchoose(size, x) + x log ilogit(eta) + (size - x) log ilogit(-eta),
//   d/deta = x ilogit(-eta) - (size - x) ilogit(eta),
// finite for every finite eta (log ilogit(-eta) at eta = 40 is -40, where
// log(1 - plogis(40)) is -Inf). Its partials and the rules for size and x are
// binomial.hpp's.
#ifndef LOCKSTEP_DISTRIBUTIONS_BINOMIAL_LOGIT_HPP
#define LOCKSTEP_DISTRIBUTIONS_BINOMIAL_LOGIT_HPP

#include "../math/elementary.hpp"
#include "dist.hpp"
#include "helpers.hpp"

namespace lockstep {

template <> struct Dist<Family::binomial_logit> : Discrete2 {
  static constexpr int n_params = 2;
  // Written straight-line so that a binomial regression's element loop
  // vectorises (density.hpp's straight_line<D>): one exp serves both tails'
  // logs and probabilities (logit_tails, as bernoulli_logit's); lchoose and the size's
  // partial through math/log_gamma.hpp (size may be any number >= 0, greta's
  // continuous extension) and ls_lfactorial_count for the count.
  static constexpr bool straight_line = true;
  LS_HD_INLINE static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double n = p[0], eta = p[1];
    const double bad = nan_unless((n >= 0) & (n < ls_inf()) & (eta == eta));
    const bool in = (x >= 0) & (x <= n) & (floor(x) == x);  // NaN: not in
    const double m = n - x;
    const LogitTails t = logit_tails(eta);
    // a count of 0 contributes exactly 0 (not 0 * -Inf at eta = +-Inf)
    const double k = ls_count_times(x, t.log_p) + ls_count_times(m, t.log_q);
    const LogGamma gn = ls_lgamma_digamma(n + 1), gm = ls_lgamma_digamma(m + 1);
    const double lp = gn.lgamma - ls_lfactorial_count(x) - gm.lgamma + k;
    *dx = bad;
    dp[0] = (in ? gn.digamma - gm.digamma + t.log_q : 0.0) + bad;
    dp[1] = (in ? x * t.q - m * t.p : 0.0) + bad;
    return (in ? lp : -ls_inf()) + bad;
  }
};

}  // namespace lockstep

#endif
