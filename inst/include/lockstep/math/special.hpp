// Special functions shared by the densities, written once for host and device.
#ifndef LOCKSTEP_MATH_SPECIAL_HPP
#define LOCKSTEP_MATH_SPECIAL_HPP

#include <cmath>
#include "../hd.hpp"

namespace lockstep {

constexpr double ls_pi = 3.14159265358979323846;
constexpr double ls_log_pi = 1.14472988584940017414;
constexpr double ls_log_sqrt_2pi = 0.91893853320467274178;
constexpr double ls_sqrt1_2 = 0.70710678118654752440;

LS_HD double ls_inf() { return HUGE_VAL; }
LS_HD double ls_nan() { return NAN; }
LS_HD bool ls_isinf(double x) { return x == HUGE_VAL || x == -HUGE_VAL; }

// digamma(x) for x > 0: the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10,
// then the asymptotic series to its x^-14 term; absolute error near 1e-16.
LS_HD double digamma(double x) {
  double r = 0;
  while (x < 10) {
    r -= 1 / x;
    x += 1;
  }
  const double f = 1 / (x * x);
  return r + log(x) - 0.5 / x -
         f * (1.0 / 12 -
              f * (1.0 / 120 -
                   f * (1.0 / 252 -
                        f * (1.0 / 240 - f * (1.0 / 132 - f * (691.0 / 32760 - f / 12))))));
}

// log1p(x) for x >= 0 through log, which is several times cheaper than glibc's
// log1p: with u = 1 + x rounded, log(u) x / (u - 1) corrects the rounding of u
// to first order (Goldberg 1991, "What every computer scientist should know
// about floating-point arithmetic", theorem 4), within a few ulps of log1p.
LS_HD double log1p_nonneg(double x) {
  const double u = 1 + x;
  return u == 1 ? x : log(u) * (x / (u - 1));
}

// log(1 + exp(z)) (softplus; Rmath's log1pexp), as max(z, 0) + log1p(exp(-|z|)):
// no overflow for large z, no loss to 1 + tiny for very negative z.
LS_HD double log1p_exp(double z) { return (z > 0 ? z : 0.0) + log1p_nonneg(exp(-fabs(z))); }

// Standard normal CDF.
LS_HD double std_normal_cdf(double z) { return 0.5 * erfc(-z * ls_sqrt1_2); }
LS_HD double std_normal_pdf(double z) { return exp(-0.5 * z * z - ls_log_sqrt_2pi); }

// Continued fraction of the regularised incomplete beta function (modified
// Lentz), converging quickly for x < (a + 1) / (a + b + 2).
LS_HD double incbeta_cf(double a, double b, double x) {
  const double tiny = 1e-300, eps = 1e-15;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    const int m2 = 2 * m;
    double aa = m * (b - m) * x / ((a - 1 + m2) * (a + m2));
    d = 1 + aa * d;
    if (fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (fabs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    aa = -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1 + m2));
    d = 1 + aa * d;
    if (fabs(d) < tiny) d = tiny;
    c = 1 + aa / c;
    if (fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (fabs(del - 1) < eps) break;
  }
  return h;
}

// Regularised incomplete beta I_x(a, b) for a, b > 0, 0 <= x <= 1 (R's pbeta).
LS_HD double incbeta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double lfront = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
  if (x < (a + 1) / (a + b + 2)) return exp(lfront) * incbeta_cf(a, b, x) / a;
  return 1 - exp(lfront) * incbeta_cf(b, a, 1 - x) / b;
}

// CDF of Student's t with df degrees of freedom (R's pt).
LS_HD double student_t_cdf(double t, double df) {
  if (ls_isinf(t)) return t > 0 ? 1 : 0;
  const double tail = 0.5 * incbeta(0.5 * df, 0.5, df / (df + t * t));
  return t > 0 ? 1 - tail : tail;
}

// cos(pi x), sin(pi x) and tan(pi x) as R computes them (nmath/cospi.c): the
// argument reduced by its period first, so that they are exact at the integers
// and half-integers (sinpi(1) is 0, not 1.2e-16); tanpi(1/2) is NaN as in R.
LS_HD double ls_cospi(double x) {
  if (x != x) return x;
  x = fmod(fabs(x), 2.0);  // NaN for infinite x
  if (fmod(x, 1.0) == 0.5) return 0;
  if (x == 1) return -1;
  if (x == 0) return 1;
  return cos(ls_pi * x);
}
LS_HD double ls_sinpi(double x) {
  if (x != x) return x;
  x = fmod(x, 2.0);
  if (x <= -1) x += 2;
  else if (x > 1) x -= 2;
  if (x == 0 || x == 1) return 0;
  if (x == 0.5) return 1;
  if (x == -0.5) return -1;
  return sin(ls_pi * x);
}
LS_HD double ls_tanpi(double x) {
  if (x != x) return x;
  x = fmod(x, 1.0);
  if (x <= -0.5) x += 1;
  else if (x > 0.5) x -= 1;
  if (x == 0) return 0;
  if (x == 0.5) return ls_nan();
  if (x == 0.25) return 1;
  if (x == -0.25) return -1;
  return tan(ls_pi * x);
}

// digamma(x) on the whole real line, as R's digamma: NaN at 0 and the negative
// integers, the reflection psi(x) = psi(1 - x) - pi cot(pi x) below 0.
LS_HD double digamma_real(double x) {
  if (x <= 0) {
    if (x == floor(x)) return ls_nan();  // poles; also -Inf
    return digamma(1 - x) - ls_pi * ls_cospi(x) / ls_sinpi(x);
  }
  return digamma(x);
}

// trigamma(x) = psi'(x): the recurrence psi'(x) = psi'(x + 1) + 1/x^2 up to
// x >= 10, then the asymptotic series 1/x + 1/(2x^2) + sum B_2k / x^(2k+1);
// below 0 the reflection psi'(x) = pi^2 / sin(pi x)^2 - psi'(1 - x). Inf at 0
// and the negative integers (the poles), as in R.
LS_HD double trigamma_pos(double x) {
  double r = 0;
  while (x < 10) {
    r += 1 / (x * x);
    x += 1;
  }
  const double f = 1 / (x * x);
  return r + 1 / x + f / 2 +
         f / x *
             (1.0 / 6 -
              f * (1.0 / 30 -
                   f * (1.0 / 42 -
                        f * (1.0 / 30 - f * (5.0 / 66 - f * (691.0 / 2730 - f * (7.0 / 6)))))));
}
LS_HD double trigamma(double x) {
  if (x <= 0) {
    if (x == floor(x)) return ls_inf();
    const double s = ls_sinpi(x);
    return ls_pi * ls_pi / (s * s) - trigamma_pos(1 - x);
  }
  return trigamma_pos(x);
}

// tetragamma(x) = psi''(x) (R's psigamma(x, 2)), the derivative of trigamma:
// psi''(x) = psi''(x + 1) - 2/x^3 up to x >= 10, then the asymptotic series
// -1/x^2 - 1/x^3 - sum (2k + 1) B_2k / x^(2k+2); below 0 the derivative of the
// reflection, psi''(x) = psi''(1 - x) - 2 pi^3 cos(pi x) / sin(pi x)^3.
LS_HD double tetragamma_pos(double x) {
  double r = 0;
  while (x < 10) {
    r -= 2 / (x * x * x);
    x += 1;
  }
  const double f = 1 / (x * x);
  return r - f - f / x -
         f * f *
             (0.5 -
              f * (1.0 / 6 -
                   f * (1.0 / 6 -
                        f * (3.0 / 10 - f * (5.0 / 6 - f * (691.0 / 210 - f * (35.0 / 2)))))));
}
LS_HD double tetragamma(double x) {
  if (x <= 0) {
    if (x == floor(x)) return ls_nan();
    const double s = ls_sinpi(x);
    return tetragamma_pos(1 - x) - 2 * ls_pi * ls_pi * ls_pi * ls_cospi(x) / (s * s * s);
  }
  return tetragamma_pos(x);
}

// The standard Cauchy CDF (R's pcauchy): 0.5 + atan(x) / pi, with the tails
// through atan(1 / x) so that the lower tail keeps its relative precision.
LS_HD double cauchy_cdf(double x) {
  if (fabs(x) > 1) {
    const double y = atan(1 / x) / ls_pi;
    return x > 0 ? 1 - y : -y;
  }
  return 0.5 + atan(x) / ls_pi;
}

}  // namespace lockstep

#endif
