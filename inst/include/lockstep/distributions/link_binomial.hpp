// The binomial likelihood on the scale of a link, binomial(size, g^-1(eta))
// computed from eta (greta's representations: binomial_logit, binomial_probit).
// Both links are symmetric, 1 - g^-1(eta) = g^-1(-eta), so with the link's
// tails at eta (logit_tails, probit_tails)
//   log_p = log g^-1(eta),  log_q = log g^-1(-eta),
//   dlog_p = d/deta log_p,  dlog_q = -d/deta log_q   (both >= 0),
// the density is
//   log p = lchoose(size, x) + x log_p + (size - x) log_q,
//   d/deta = x dlog_p - (size - x) dlog_q,
//   d/dsize = digamma(size + 1) - digamma(size - x + 1) + log_q,
// each finite for every finite eta (the tails' logs are, where the
// probabilities round to 1 or 0). size may be any number >= 0 (greta's
// continuous extension, lchoose through lgamma); size < 0, infinite size and
// NaN eta give NaN; x outside 0..size, or not whole, has log density -Inf. A
// count of 0 contributes exactly 0 (not 0 * -Inf at eta = +-Inf). Written in
// straight-line arithmetic, so that a binomial regression's element loop
// vectorises (density.hpp's straight_line<D>).
#ifndef LOCKSTEP_DISTRIBUTIONS_LINK_BINOMIAL_HPP
#define LOCKSTEP_DISTRIBUTIONS_LINK_BINOMIAL_HPP

#include "dist.hpp"
#include "helpers.hpp"

namespace lockstep {

struct LinkTails {
  double log_p, log_q;
  double dlog_p, dlog_q;
};

LS_HD_INLINE double link_binomial_lpdf(double x, double n, double eta, const LinkTails& t,
                                       double* dx, double* dp) {
  const double bad = nan_unless((n >= 0) & (n < ls_inf()) & (eta == eta));
  const bool in = (x >= 0) & (x <= n) & (floor(x) == x);  // NaN: not in
  const double m = n - x;
  const double k = ls_count_times(x, t.log_p) + ls_count_times(m, t.log_q);
  const LogGamma gn = ls_lgamma_digamma(n + 1), gm = ls_lgamma_digamma(m + 1);
  const double lp = gn.lgamma - ls_lfactorial_count(x) - gm.lgamma + k;
  *dx = bad;
  dp[0] = (in ? gn.digamma - gm.digamma + t.log_q : 0.0) + bad;
  dp[1] = (in ? ls_count_times(x, t.dlog_p) - ls_count_times(m, t.dlog_q) : 0.0) + bad;
  return (in ? lp : -ls_inf()) + bad;
}

}  // namespace lockstep

#endif
