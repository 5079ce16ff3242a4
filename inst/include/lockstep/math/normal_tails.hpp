// The standard normal's tails in straight-line arithmetic, for the probit-scale
// densities (bernoulli_probit, binomial_probit): log Phi(eta), log Phi(-eta)
// and both inverse Mills ratios from one evaluation of the scaled
// complementary error function erfcx(t) = exp(t^2) erfc(t), with no calls, no
// table lookups and no branches on the value, so that a probit regression's
// element loop vectorises as the logit one does (math/elementary.hpp), where
// calls of the C library's erfc and branches between three ranges (the
// asymptotic series below -20) kept it scalar.
#ifndef LOCKSTEP_MATH_NORMAL_TAILS_HPP
#define LOCKSTEP_MATH_NORMAL_TAILS_HPP

#include <cmath>

#include "../hd.hpp"
#include "elementary.hpp"
#include "special.hpp"

namespace lockstep {

// erfcx(t) = exp(t^2) erfc(t) for t >= 0, within 2 ulp (5e-16 relative on
// [0, 1e150], against mpmath at 40 digits); 0 at Inf, NaN for NaN. After
// Shepherd and Laframboise (Math. Comp. 36, 1981, 249-253): with
// q = (t - 2) / (t + 2), which maps [0, Inf) onto [-1, 1), the function
// (1 + 2t) erfcx(t) is smooth in q on all of [-1, 1] (it tends to 2 /
// sqrt(pi) as t grows), so one polynomial in q covers the whole range. Its
// coefficients are the monomial form of the function's Chebyshev series in q,
// truncated after degree 30 (the next term is below 1e-20), computed by
// tools/erfcx_coefficients.py with mpmath; the sum of their magnitudes is
// 1.8 against values of 1.1 to 1.3, so Horner's rule loses nothing.
LS_HD_INLINE double ls_erfcx_nonneg(double t) {
  const double q = (t - 2.0) / (t + 2.0);
  double p = -5.329400173374239e-10;
  p = p * q - 9.342653007632043e-10;
  p = p * q + 3.901550282291162e-09;
  p = p * q + 9.351259777666609e-09;
  p = p * q - 8.092996175871589e-09;
  p = p * q - 3.918126132455656e-08;
  p = p * q - 2.0038115709106765e-08;
  p = p * q + 6.845031138001907e-08;
  p = p * q + 1.4740033561376212e-07;
  p = p * q + 9.064805408674964e-08;
  p = p * q - 2.4767231929756367e-07;
  p = p * q - 7.968749577424393e-07;
  p = p * q - 7.070175519549071e-07;
  p = p * q + 1.4824272560929263e-06;
  p = p * q + 5.229910475757727e-06;
  p = p * q + 3.719300001760817e-06;
  p = p * q - 1.349493445745495e-05;
  p = p * q - 3.642570047110562e-05;
  p = p * q - 1.509409630432737e-06;
  p = p * q + 0.000151039608808539;
  p = p * q + 0.00020636715565380565;
  p = p * q - 0.0004543408816116156;
  p = p * q - 0.0014568139430271702;
  p = p * q + 0.0012713389694938386;
  p = p * q + 0.008722653875575618;
  p = p * q - 0.008034015082560542;
  p = p * q - 0.05422000099203593;
  p = p * q + 0.16405128003344446;
  p = p * q - 0.16603039761528937;
  p = p * q - 0.09276382658574601;
  p = p * q + 1.2769783815525286;
  const double r = p / (1.0 + 2.0 * t);
  return t == detail::ls_huge() ? 0.0 : r;  // q is NaN at Inf; NaN stays NaN
}

// Both tails of the standard normal at eta, and their log derivatives:
//   log_p = log Phi(eta),  log_q = log Phi(-eta),
//   mills_p = phi(eta) / Phi(eta)   (d/deta log Phi(eta)),
//   mills_q = phi(eta) / Phi(-eta)  (-d/deta log Phi(-eta)).
struct ProbitTails {
  double log_p, log_q;
  double mills_p, mills_q;
};

// With a = |eta|, t = a / sqrt(2) and E = erfcx(t), the smaller tail is
// Phi(-a) = exp(-a^2 / 2) E / 2, so that
//   log Phi(-a) = -a^2 / 2 + log(E / 2)       (finite where Phi(-a) underflows:
//                                              -804.6 at a = 40),
//   phi(a) / Phi(-a) = sqrt(2 / pi) / E       (about a for large a),
//   log Phi(a) = log1p(-Phi(-a)),  phi(a) / Phi(a) = phi(a) / (1 - Phi(-a)),
// and eta's sign picks which is which. exp(-a^2 / 2) is taken as
// exp(-h^2 / 2) exp(-l (a + h) / 2) with h = a rounded to sixteenths (h^2
// exact) and l = a - h, as the C library's erfc does, so that the rounding of
// a^2, up to a^2 / 2 ulp, does not reach the upper tail's log1p (4e-14
// relative at a = 37 otherwise). Exact at eta = +-Inf (0 or -Inf, and
// Mills ratios 0 or Inf); NaN for NaN.
LS_HD_INLINE ProbitTails probit_tails(double eta) {
  const double a = fabs(eta);
  const double E = ls_erfcx_nonneg(a * ls_sqrt1_2);
  // h by the 1.5 * 2^52 shifter, a clamped below 64, where exp(-a^2 / 2) is
  // already 0 (so 16 a stays far below 2^51, and h^2 is exact)
  const double shifter = 6755399441055744.0;
  const double ac = a < 64.0 ? a : 64.0;
  const double h = ((ac * 16.0 + shifter) - shifter) * 0.0625, l = ac - h;
  const double half_h2 = -0.5 * (h * h), half_rest = -0.5 * (l * (ac + h));
  const double e = ls_exp_nonpos(half_h2) * ls_exp_nonpos(half_rest);  // 0 from a = 38.6
  const double small = 0.5 * e * E;                                     // Phi(-a)
  const double log_small = (a < 64.0 ? half_h2 + half_rest : -0.5 * (a * a)) + ls_log(0.5 * E);
  const double log_big = ls_log1p(-small);
  const double mills_small = 0.79788456080286535588 / E;  // sqrt(2 / pi)
  const double mills_big = e * 0.39894228040143267794 / (1.0 - small);  // 1 / sqrt(2 pi)
  const bool neg = eta < 0;
  return ProbitTails{neg ? log_small : log_big, neg ? log_big : log_small,
                     neg ? mills_small : mills_big, neg ? mills_big : mills_small};
}

}  // namespace lockstep

#endif
