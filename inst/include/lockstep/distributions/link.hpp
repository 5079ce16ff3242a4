// The binomial likelihood on the scale of a link (greta's "representations":
// binomial(size, ilogit(eta)) and binomial(size, iprobit(eta)) are computed
// from eta, never from the probability). The logit forms are written out in
// bernoulli_logit.hpp and binomial_logit.hpp (straight-line, one exp for both
// tails); the probit forms use what is here. Both links are symmetric, 1 -
// g^-1(eta) = g^-1(-eta), so with lp(eta) = log g^-1(eta):
//   log p = x lp(eta) + (n - x) lp(-eta)   (+ lchoose(n, x) for binomial),
//   d/deta = x lp'(eta) - (n - x) lp'(-eta),
// every piece finite and accurate in both tails (lp(eta) for eta = 40 is
// -4.2e-18 on the logit scale, -804.6 at eta = -40 on the probit scale, where
// the probability itself rounds to 1 or underflows to 0).
//   logit:  lp(eta) = -log1p(exp(-eta)),  lp'(eta) = ilogit(-eta)
//   probit: lp(eta) = log Phi(eta),       lp'(eta) = phi(eta) / Phi(eta)
// A count of zero contributes exactly 0 (not 0 * -Inf at eta = +-Inf).
#ifndef LOCKSTEP_DISTRIBUTIONS_LINK_HPP
#define LOCKSTEP_DISTRIBUTIONS_LINK_HPP

#include "../math/unary.hpp"
#include "helpers.hpp"

namespace lockstep {

struct ProbitLink {
  LS_HD static double log_p(double eta) { return log_std_normal_cdf(eta); }
  LS_HD static double dlog_p(double eta) { return std_normal_mills(eta); }
};

// x successes of n on the link scale, without the binomial coefficient: the
// log density, d/deta in *deta and lp(-eta) (log of the failure probability,
// which the partial in n needs) in *log_q.
template <class Link>
LS_HD double link_binomial_kernel(double x, double n, double eta, double* deta, double* log_q) {
  const double m = n - x;
  *log_q = Link::log_p(-eta);
  *deta = ls_count_times(x, Link::dlog_p(eta)) - ls_count_times(m, Link::dlog_p(-eta));
  return ls_count_times(x, Link::log_p(eta)) + ls_count_times(m, *log_q);
}

// bernoulli(prob) with prob = g^-1(eta): x in {0, 1}, -Inf elsewhere.
template <class Link> LS_HD double link_bernoulli_lpdf(double x, const double* p, double* dx,
                                                       double* dp) {
  *dx = 0;
  if (!(x == 0 || x == 1)) {
    dp[0] = 0;
    return p[0] == p[0] ? -ls_inf() : ls_nan();
  }
  double log_q;
  return link_binomial_kernel<Link>(x, 1, p[0], dp, &log_q);
}

// binomial(size, prob) with prob = g^-1(eta), as binomial.hpp: lchoose through
// lgamma (defined for a non-integer size), d/dsize = digamma(size + 1) -
// digamma(size - x + 1) + log(1 - prob); size < 0 gives NaN.
template <class Link> LS_HD double link_binomial_lpdf(double x, const double* p, double* dx,
                                                      double* dp) {
  const double n = p[0], eta = p[1];
  if (!(n >= 0) || ls_isinf(n) || eta != eta) return dist_nan(dx, dp, 2);
  *dx = 0;
  if (x < 0 || x > n || floor(x) != x) {
    dp[0] = dp[1] = 0;
    return -ls_inf();
  }
  double log_q;
  const double k = link_binomial_kernel<Link>(x, n, eta, &dp[1], &log_q);
  dp[0] = ls_digamma1p(n) - ls_digamma1p(n - x) + log_q;
  return ls_lfactorial(n) - ls_lfactorial(x) - ls_lfactorial(n - x) + k;
}

}  // namespace lockstep

#endif
