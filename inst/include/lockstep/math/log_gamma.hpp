// log Gamma(x) and digamma(x) for x > 0 together, written as straight-line
// arithmetic (no calls, no loops that depend on x, no data-dependent
// branches) so that an element loop over arguments that vary by element (a
// mean-precision beta regression's shapes) vectorises through them: the C
// library's lgamma and special.hpp's digamma (whose recurrence loops until
// x >= 10) each kept such a loop scalar, and were most of its time.
//
// Below 10 the argument is shifted by the recurrences
//   log Gamma(x) = log Gamma(x + 10) - log P,   P = x (x + 1) ... (x + 9),
//   digamma(x)  = digamma(x + 10) - P' / P,     P' / P = sum_j 1 / (x + j),
// ten factors taken for every x below 10 (selected to 1 above it), P' / P
// one fraction built up with the product; at z >= 10 both follow Stirling's
// series to the term in z^-15 (the next is below 2e-18). Below 10, log Gamma
// is a difference of two numbers up to 57, so its error is absolute, up to
// about 1e-14 (the C library's is relative, about 1e-16): for a log density,
// a sum of such terms, that is rounding; digamma's error is below 3e-15
// (relative above 1). Tested in tests/cpp/test_distributions.cpp against long
// double references.
#ifndef LOCKSTEP_MATH_LOG_GAMMA_HPP
#define LOCKSTEP_MATH_LOG_GAMMA_HPP

#include "../hd.hpp"
#include "elementary.hpp"

namespace lockstep {

struct LogGamma {
  double lgamma, digamma;
};

// Stirling's series for log Gamma(z) past its leading terms, log Gamma(z) -
// ((z - 1/2) log z - z + log(2 pi) / 2), to its term in z^-15, for z >= 10
// (where the next term is below 2e-18); w = 1 / z.
LS_HD_INLINE double stirling_lgamma_series(double w) {
  const double w2 = w * w;
  return w * (1.0 / 12 -
              w2 * (1.0 / 360 -
                    w2 * (1.0 / 1260 -
                          w2 * (1.0 / 1680 -
                                w2 * (1.0 / 1188 -
                                      w2 * (691.0 / 360360 -
                                            w2 * (1.0 / 156 - w2 * (3617.0 / 122400))))))));
}

// The same for digamma(z): log z - 1 / (2z) - digamma(z), the Bernoulli
// numbers' terms to z^-14; w2 = 1 / z^2.
LS_HD_INLINE double stirling_digamma_series(double w2) {
  return w2 * (1.0 / 12 -
               w2 * (1.0 / 120 -
                     w2 * (1.0 / 252 -
                           w2 * (1.0 / 240 -
                                 w2 * (1.0 / 132 - w2 * (691.0 / 32760 - w2 * (1.0 / 12)))))));
}

// log Gamma(z) by Stirling's series, for z >= 10; lz = log(z), w = 1 / z.
LS_HD_INLINE double stirling_lgamma(double z, double lz, double w) {
  return (z - 0.5) * lz - z + 0.91893853320467274178 + stirling_lgamma_series(w);
}

// log Gamma(x) and digamma(x) for x > 0; at 0, Inf and -Inf; at Inf, Inf and
// Inf; NaN for NaN and below 0.
LS_HD_INLINE LogGamma ls_lgamma_digamma(double x) {
  const bool small = x < 10;
  // P and P' (the derivative of P in x) over the ten factors, each factor 1
  // (and adding nothing to P') at x >= 10.
  double P = 1, dP = 0;
  LS_UNROLL  // a fixed count, no branch on x
  for (int j = 0; j < 10; ++j) {
    const double f = small ? x + j : 1.0;
    dP = dP * f + (small ? P : 0.0);
    P = P * f;
  }
  const double z = small ? x + 10 : x;
  const double w = 1 / z, w2 = w * w, lz = ls_log(z);
  // Stirling's series: log Gamma(z) (stirling_lgamma), and digamma(z) = log z
  // - w / 2 - w^2 (1/12 - ...) (stirling_digamma_series).
  const double sd = stirling_digamma_series(w2);
  const double lg = stirling_lgamma(z, lz, w) - ls_log(P);
  const double dg = lz - 0.5 * w - sd - dP / P;
  // x = Inf: (z - 1/2) log z - z is Inf - Inf; x below 0 (and NaN): NaN
  const bool inf = x > 1.79769313486231570815e+308;
  const double bad = x >= 0 ? 0.0 : detail::ls_quiet_nan();
  return LogGamma{(inf ? x : lg) + bad, (inf ? x : dg) + bad};
}

// log Gamma(s + k) - log Gamma(s) (the log of the rising factorial s (s + 1)
// ... (s + k - 1) for a whole k) and its derivative in s, digamma(s + k) -
// digamma(s), for s > 0 and k >= 0. Where s is large the two log Gammas are
// nearly equal and their difference is lost to rounding (at s = 1e18, each is
// 4e19 and its last bit is worth 8192): from s = 10 the leading terms of
// Stirling's series are differenced by hand,
//   (s + k - 1/2) log(s + k) - (s - 1/2) log(s) - k
//     = (s - 1/2) log1p(k / s) + k log(s + k) - k,
//   log(s + k) - log(s) - 1 / (2 (s + k)) + 1 / (2 s)
//     = log1p(k / s) + k / (2 s (s + k)),
// and the series' small remainders subtracted. Below 10 log Gamma(s) is at
// most -log(s) in size, and the plain difference loses nothing that matters.
// 0 and 0 at k = 0.
struct LogGammaRatio {
  double value, dvalue;
};

// The form from s = 10, straight-line; lgamma_series_s and digamma_series_s
// are stirling_lgamma_series(1 / s) and stirling_digamma_series(1 / s^2),
// which a caller with one s for many k (a negative binomial's size) computes
// once.
LS_HD_INLINE LogGammaRatio log_gamma_ratio_large(double s, double k, double lgamma_series_s,
                                                 double digamma_series_s) {
  const double t = s + k, r = k / s, l = ls_log1p(r), wt = 1 / t;
  const double value = (s - 0.5) * l + k * ls_log(t) - k +
                       (stirling_lgamma_series(wt) - lgamma_series_s);
  const double dvalue = l + 0.5 * r * wt - (stirling_digamma_series(wt * wt) - digamma_series_s);
  return LogGammaRatio{value, dvalue};
}

LS_HD_INLINE LogGammaRatio log_gamma_ratio(double s, double k) {
  if (s < 10) {
    const LogGamma a = ls_lgamma_digamma(s + k), b = ls_lgamma_digamma(s);
    return LogGammaRatio{k == 0 ? 0.0 : a.lgamma - b.lgamma, k == 0 ? 0.0 : a.digamma - b.digamma};
  }
  const double ws = 1 / s;
  return log_gamma_ratio_large(s, k, stirling_lgamma_series(ws), stirling_digamma_series(ws * ws));
}

}  // namespace lockstep

#endif
