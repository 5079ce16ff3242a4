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

// log Gamma(z) by Stirling's series to its term in z^-15, for z >= 10 (where
// the next term is below 2e-18); lz = log(z), w = 1 / z.
LS_HD_INLINE double stirling_lgamma(double z, double lz, double w) {
  const double w2 = w * w;
  const double series =
      w * (1.0 / 12 -
           w2 * (1.0 / 360 -
                 w2 * (1.0 / 1260 -
                       w2 * (1.0 / 1680 -
                             w2 * (1.0 / 1188 -
                                   w2 * (691.0 / 360360 - w2 * (1.0 / 156 - w2 * (3617.0 / 122400))))))));
  return (z - 0.5) * lz - z + 0.91893853320467274178 + series;
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
  // - w / 2 - w^2 (1/12 - ...), the Bernoulli numbers' terms to z^-14.
  const double sd =
      w2 * (1.0 / 12 -
            w2 * (1.0 / 120 -
                  w2 * (1.0 / 252 -
                        w2 * (1.0 / 240 - w2 * (1.0 / 132 - w2 * (691.0 / 32760 - w2 * (1.0 / 12)))))));
  const double lg = stirling_lgamma(z, lz, w) - ls_log(P);
  const double dg = lz - 0.5 * w - sd - dP / P;
  // x = Inf: (z - 1/2) log z - z is Inf - Inf; x below 0 (and NaN): NaN
  const bool inf = x > 1.79769313486231570815e+308;
  const double bad = x >= 0 ? 0.0 : detail::ls_quiet_nan();
  return LogGamma{(inf ? x : lg) + bad, (inf ? x : dg) + bad};
}

}  // namespace lockstep

#endif
