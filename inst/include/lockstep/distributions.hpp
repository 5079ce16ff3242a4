// All distributions, and runtime dispatch over distributions.def.
#ifndef LOCKSTEP_DISTRIBUTIONS_HPP
#define LOCKSTEP_DISTRIBUTIONS_HPP

#include <type_traits>

#include "distributions/bernoulli.hpp"
#include "distributions/bernoulli_logit.hpp"
#include "distributions/bernoulli_probit.hpp"
#include "distributions/beta.hpp"
#include "distributions/beta_binomial.hpp"
#include "distributions/binomial.hpp"
#include "distributions/binomial_logit.hpp"
#include "distributions/binomial_probit.hpp"
#include "distributions/cauchy.hpp"
#include "distributions/chi_squared.hpp"
#include "distributions/exponential.hpp"
#include "distributions/f.hpp"
#include "distributions/gamma.hpp"
#include "distributions/hypergeometric.hpp"
#include "distributions/inverse_gamma.hpp"
#include "distributions/laplace.hpp"
#include "distributions/log_jacobian.hpp"
#include "distributions/logistic.hpp"
#include "distributions/lognormal.hpp"
#include "distributions/negative_binomial.hpp"
#include "distributions/normal.hpp"
#include "distributions/pareto.hpp"
#include "distributions/poisson.hpp"
#include "distributions/poisson_log.hpp"
#include "distributions/student.hpp"
#include "distributions/target.hpp"
#include "distributions/uniform.hpp"
#include "distributions/weibull.hpp"

namespace lockstep {

// Calls f(tag) with std::integral_constant<Family, f> for the family, so that
// a kernel can pick the family once, outside its loop.
template <class G> LS_HD void with_family(Family f, G&& g) {
  switch (f) {
#define LS_DIST(name, n_params, continuous, tile) \
  case Family::name: g(std::integral_constant<Family, Family::name>()); return;
#include "distributions.def"
#undef LS_DIST
  }
}

// Runtime dispatch of one family's math (the kernels pick the family once per
// term instead, with with_family).
LS_HD double dist_lpdf(Family f, double x, const double* p, double* dx, double* dp) {
  double v = ls_nan();
  with_family(f, [&](auto tag) { v = Dist<decltype(tag)::value>::lpdf(x, p, dx, dp); });
  return v;
}

LS_HD double dist_cdf(Family f, double x, const double* p, double* dp) {
  double v = ls_nan();
  with_family(f, [&](auto tag) { v = Dist<decltype(tag)::value>::cdf(x, p, dp); });
  return v;
}

LS_HD double dist_ccdf(Family f, double x, const double* p, double* dp) {
  double v = ls_nan();
  with_family(f, [&](auto tag) { v = Dist<decltype(tag)::value>::ccdf(x, p, dp); });
  return v;
}

// Log density of x under the family truncated to [lower, upper]:
//   log f(x) - log(F(upper) - F(lower)), -Inf outside the bounds,
// with partials. Untruncated when both bounds are infinite. When the lower
// bound lies in the upper half of the distribution, the mass is computed as
// S(lower) - S(upper) with the survival S = 1 - F, so that a range far in the
// upper tail does not cancel to zero.
template <Family F>
LS_HD double truncated_lpdf_of(double x, const double* p, double lower, double upper, double* dx,
                               double* dp) {
  using D = Dist<F>;
  constexpr int n_params = D::n_params;
  double lp = D::lpdf(x, p, dx, dp);
  if (ls_isinf(lower) && ls_isinf(upper)) return lp;
  if (x < lower || x > upper) {
    *dx = 0;
    for (int k = 0; k < n_params; ++k) dp[k] = 0;
    return -ls_inf();
  }
  double da[max_dist_params], db[max_dist_params], z;
  const double fa = D::cdf(lower, p, da);
  if (fa > 0.5) {
    z = D::ccdf(lower, p, da) - D::ccdf(upper, p, db);
    // da, db hold the partials of S = 1 - F: dz = dS(lower) - dS(upper)
    for (int k = 0; k < n_params; ++k) dp[k] -= (da[k] - db[k]) / z;
  } else {
    z = D::cdf(upper, p, db) - fa;
    for (int k = 0; k < n_params; ++k) dp[k] -= (db[k] - da[k]) / z;
  }
  return lp - log(z);
}

// The same, with the family chosen at run time.
LS_HD double truncated_lpdf(Family f, int, double x, const double* p, double lower, double upper,
                            double* dx, double* dp) {
  double lp = ls_nan();
  with_family(f, [&](auto tag) {
    lp = truncated_lpdf_of<decltype(tag)::value>(x, p, lower, upper, dx, dp);
  });
  return lp;
}

}  // namespace lockstep

#endif
