// student(df, mu, sigma): Student's t with location mu and scale sigma, as greta
// defines it; f(x) = dt((x - mu) / sigma, df) / sigma.
//   log f = lgamma((v+1)/2) - lgamma(v/2) - log(v pi)/2 - log(sigma)
//           - (v+1)/2 log(1 + z^2/v),  z = (x - mu) / sigma
//   d/dx = -(v+1) z / (sigma (v + z^2)),  d/dmu = -d/dx,
//   d/dsigma = ((v+1) z^2 / (v + z^2) - 1) / sigma,
//   d/dv = (psi((v+1)/2) - psi(v/2) - 1/v - log(1 + z^2/v) + (v+1) z^2 / (v (v + z^2))) / 2
#ifndef LOCKSTEP_DISTRIBUTIONS_STUDENT_HPP
#define LOCKSTEP_DISTRIBUTIONS_STUDENT_HPP

#include "dist.hpp"

namespace lockstep {

template <> struct Dist<Family::student> {
  static constexpr int n_params = 3;
  LS_HD static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double v = p[0], s = p[2];
    if (!(v > 0) || !(s > 0)) return dist_nan(dx, dp, n_params);
    const double z = (x - p[1]) / s, z2 = z * z, q = v + z2;
    *dx = -(v + 1) * z / (s * q);
    dp[1] = -*dx;
    dp[2] = ((v + 1) * z2 / q - 1) / s;
    // lgamma((v + 1) / 2) - lgamma(v / 2) and its digammas without their
    // cancellation at a large df (log_gamma_ratio, math/log_gamma.hpp)
    const LogGammaRatio g = log_gamma_ratio(0.5 * v, 0.5);
    dp[0] = 0.5 * (g.dvalue - 1 / v - log1p(z2 / v) + (v + 1) * z2 / (v * q));
    return g.value - 0.5 * (log(v) + ls_log_pi) - log(s) - 0.5 * (v + 1) * log1p(z2 / v);
  }
  // Prepared (dist.hpp): the lgamma and digamma terms, which depend on df
  // alone, once per chain instead of once per element (a robust regression's
  // likelihood spent most of its time in them). Invalid df or sigma make v or
  // inv_s NaN, and so every output, as lpdf()'s NaN does.
  struct Prepared {
    static constexpr int location_param = 1;
    double v, inv_s, log_norm, dv_norm;
  };
  LS_HD static Prepared prepare(const double* p) {
    const bool ok = p[0] > 0 && p[2] > 0;
    const double v = ok ? p[0] : ls_nan(), s = ok ? p[2] : ls_nan();
    // (a NaN v passes through log_gamma_ratio's Stirling branch as NaN)
    const LogGammaRatio g = log_gamma_ratio(0.5 * v, 0.5);
    return Prepared{v, 1 / s, g.value - 0.5 * (log(v) + ls_log_pi) - log(s),
                    0.5 * (g.dvalue - 1 / v)};
  }
  LS_HD_INLINE static double lpdf(double x, double location, const Prepared& q,
                                  double* dx, double* dp) {
    const double v = q.v, z = (x - location) * q.inv_s, z2 = z * z, qv = v + z2;
    // log1p(z^2 / v) by the straight-line functions (as cauchy.hpp), so that
    // the element loop vectorises
    const double w = z2 / v, l = w <= 1 ? ls_log1p_unit(w) : ls_log(1 + w);
    *dx = -(v + 1) * z * q.inv_s / qv;
    dp[1] = -*dx;
    dp[2] = ((v + 1) * z2 / qv - 1) * q.inv_s;
    dp[0] = q.dv_norm + 0.5 * (-l + (v + 1) * z2 / (v * qv));
    return q.log_norm - 0.5 * (v + 1) * l;
  }
  // F(x) = pt(z, v). dF/dmu, dF/dsigma from the density at z; dF/dv has no
  // closed form, so it is a central difference of pt in v (relative error about
  // 1e-8, well inside what a sampler needs; it only enters truncated students).
  LS_HD static double cdf(double x, const double* p, double* dp) {
    const double v = p[0], s = p[2];
    if (ls_isinf(x)) {
      dp[0] = dp[1] = dp[2] = 0;
      return x > 0 ? 1 : 0;
    }
    const double z = (x - p[1]) / s;
    const double f = exp(lgamma(0.5 * (v + 1)) - lgamma(0.5 * v) - 0.5 * (log(v) + ls_log_pi) -
                         0.5 * (v + 1) * log1p(z * z / v));
    dp[1] = -f / s;
    dp[2] = -f * z / s;
    const double h = 1e-5 * (v > 1 ? v : 1);
    dp[0] = (student_t_cdf(z, v + h) - student_t_cdf(z, v - h)) / (2 * h);
    return student_t_cdf(z, v);
  }
  // By symmetry, 1 - F(x) = F at -z.
  LS_HD static double ccdf(double x, const double* p, double* dp) {
    const double F = cdf(x, p, dp);
    for (int k = 0; k < n_params; ++k) dp[k] = -dp[k];
    if (ls_isinf(x)) return 1 - F;
    return student_t_cdf(-(x - p[1]) / p[2], p[0]);
  }
};

}  // namespace lockstep

#endif
