// binomial_logit(size, eta): binomial(size, ilogit(eta)), computed on the logit scale
// (greta's representation; R's binomial(size, ilogit(eta)) becomes this family):
//   log p = lchoose(size, x) + x lp(eta) + (size - x) lp(-eta),
// with lp the log inverse link of link.hpp, finite for every finite eta. Its
// partials and the rules for size and x are binomial.hpp's.
#ifndef LOCKSTEP_DISTRIBUTIONS_BINOMIAL_LOGIT_HPP
#define LOCKSTEP_DISTRIBUTIONS_BINOMIAL_LOGIT_HPP

#include "link.hpp"

namespace lockstep {

template <> struct Dist<Family::binomial_logit> : Discrete2 {
  static constexpr int n_params = 2;
  // link_binomial_lpdf<LogitLink>'s density (the probit form keeps it),
  // written straight-line so that a binomial regression's element loop
  // vectorises (density.hpp's straight_line<D>): one exp serves both tails'
  // logs and probabilities, as bernoulli_logit's; lchoose and the size's
  // partial through math/log_gamma.hpp (size may be any number >= 0, greta's
  // continuous extension) and ls_lfactorial_count for the count.
  static constexpr bool straight_line = true;
  LS_HD_INLINE static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double n = p[0], eta = p[1];
    const double bad = nan_unless((n >= 0) & (n < ls_inf()) & (eta == eta));
    const bool in = (x >= 0) & (x <= n) & (floor(x) == x);  // NaN: not in
    const double m = n - x;
    // e = exp(-|eta|): log ilogit(eta) = -(max(-eta, 0) + log1p(e)), log
    // ilogit(-eta) = -(max(eta, 0) + log1p(e)); ilogit(|eta|) = 1 / (1 + e),
    // ilogit(-|eta|) = e / (1 + e)
    const double e = ls_exp_nonpos(-fabs(eta)), l = ls_log1p_unit(e), big = 1 / (1 + e),
                 small = e * big;
    const double log_s = -((eta < 0 ? -eta : 0.0) + l), log_f = -((eta > 0 ? eta : 0.0) + l);
    const double p_s = eta >= 0 ? big : small, p_f = eta >= 0 ? small : big;
    // a count of 0 contributes exactly 0 (not 0 * -Inf at eta = +-Inf)
    const double k = (x == 0 ? 0.0 : x * log_s) + (m == 0 ? 0.0 : m * log_f);
    const LogGamma gn = ls_lgamma_digamma(n + 1), gm = ls_lgamma_digamma(m + 1);
    const double lp = gn.lgamma - ls_lfactorial_count(x) - gm.lgamma + k;
    *dx = bad;
    dp[0] = (in ? gn.digamma - gm.digamma + log_f : 0.0) + bad;
    dp[1] = (in ? x * p_f - m * p_s : 0.0) + bad;
    return (in ? lp : -ls_inf()) + bad;
  }
};

}  // namespace lockstep

#endif
