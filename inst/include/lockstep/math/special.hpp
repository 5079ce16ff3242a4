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
// then the asymptotic series; absolute error below 1e-13 there.
LS_HD double digamma(double x) {
  double r = 0;
  while (x < 10) {
    r -= 1 / x;
    x += 1;
  }
  const double f = 1 / (x * x);
  return r + log(x) - 0.5 / x -
         f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (1.0 / 240 - f * (1.0 / 132)))));
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

}  // namespace lockstep

#endif
