// Math shared by several families of distributions.def: x log y with 0 log 0 = 0,
// log B(a, b), the regularised incomplete gamma functions (the CDFs of gamma,
// chi-squared and inverse gamma), a central difference in a shape parameter
// (for CDF partials without a closed form, as student.hpp does for df), and
// the CDFs of two- and three-parameter discrete families (never called:
// discrete families cannot be truncated).
#ifndef LOCKSTEP_DISTRIBUTIONS_HELPERS_HPP
#define LOCKSTEP_DISTRIBUTIONS_HELPERS_HPP

#include "dist.hpp"

namespace lockstep {

// a log(y), 0 when a is 0 (whatever y): the (a - 1) log x of a density whose
// shape is 1 at x = 0, or x log(prob) of a count x = 0 at prob = 0.
LS_HD double ls_xlogy(double a, double y) { return a == 0 ? 0.0 : a * log(y); }
// a log(1 + y), 0 when a is 0.
LS_HD double ls_xlog1py(double a, double y) { return a == 0 ? 0.0 : a * log1p(y); }
// a / y, 0 when a is 0: the partials of ls_xlogy. (Forced inline, as
// ls_count_times: the straight-line densities' element loops call both.)
LS_HD_INLINE double ls_xdivy(double a, double y) { return a == 0 ? 0.0 : a / y; }
// a v, 0 when a is 0 (v may be infinite): ls_xlogy with the log already
// taken, as a count times the log of its probability.
LS_HD_INLINE double ls_count_times(double a, double v) { return a == 0 ? 0.0 : a * v; }

LS_HD double ls_lbeta(double a, double b) { return lgamma(a) + lgamma(b) - lgamma(a + b); }

namespace detail {
#if !defined(__CUDA_ARCH__)
// f(x + 1) for the counts x = 0, ..., 255, filled when the library is loaded
// from f itself (so the same numbers as its calls): a count model's
// likelihood takes log(x!) of every count at every gradient, and a binomial's
// partial in its size two digamma(x + 1) (wanted or not: size is usually
// data); a table lookup costs a few cycles where lgamma or digamma costs a
// hundred.
constexpr int count_table_size = 256;
struct CountTable {
  double value[count_table_size];
  template <class F> explicit CountTable(F f) {
    for (int i = 0; i < count_table_size; ++i) value[i] = f(i + 1.0);
  }
  // x's entry where x is a count below count_table_size, else nullptr.
  const double* entry(double x) const {
    if (!(x >= 0 && x < count_table_size)) return nullptr;
    const int i = static_cast<int>(x);
    return i == x ? &value[i] : nullptr;
  }
};
inline const CountTable log_factorial_table([](double n) { return lgamma(n); });
inline const CountTable digamma_count_table([](double n) { return digamma(n); });
#endif
}  // namespace detail

// lgamma(x + 1), log(x!) for a count x: from the table on the host for the
// counts below 256, else (other x, a GPU) lgamma itself.
LS_HD_INLINE double ls_lfactorial(double x) {
#if !defined(__CUDA_ARCH__)
  if (const double* e = detail::log_factorial_table.entry(x)) return *e;
#endif
  return lgamma(x + 1);
}

// Whether x is a count: 0, 1, 2, ... (NaN is not).
LS_HD_INLINE bool is_count(double x) { return (x >= 0) & (floor(x) == x) & (x < ls_inf()); }

// log(x!) for a count x, in straight-line arithmetic for element loops that
// vectorise (the count families' straight-line lpdfs): below 16 the log of the
// product of 2, ..., x (exact: 15! < 2^53), so 0 exactly at x = 0 and 1;
// above, Stirling's series for lgamma(x + 1); one selected. (ls_lfactorial's
// table would need a gather, which GCC does not emit for the processors it
// tunes for by default.) What it returns for an x that is not a count is
// unspecified: its callers select the density's -Inf there.
LS_HD_INLINE double ls_lfactorial_count(double x) {
  double product = 1;
  LS_UNROLL
  for (int j = 2; j < 16; ++j) product *= j <= x ? static_cast<double>(j) : 1.0;
  const double z = x + 1;
  const double big = stirling_lgamma(z, ls_log(z), 1 / z);
  return x < 16 ? ls_log(product) : big;
}

// digamma(x + 1) for a count x, as ls_lfactorial: from the table on the host
// for the counts below 256, else digamma itself.
LS_HD_INLINE double ls_digamma1p(double x) {
#if !defined(__CUDA_ARCH__)
  if (const double* e = detail::digamma_count_table.entry(x)) return *e;
#endif
  return digamma(x + 1);
}

// The Prepared (dist.hpp) of gamma and inverse_gamma: their shape's lgamma
// and digamma once per chain, parameter 1 (the rate, the scale) the location.
// An invalid shape makes `a` and `bad` NaN, and so every output.
struct ShapePrepared {
  static constexpr int location_param = 1;
  double a, lgamma_a, digamma_a, bad;
  LS_HD static ShapePrepared of(double shape) {
    const double a = shape > 0 ? shape : ls_nan();
    return ShapePrepared{a, lgamma(a), digamma(a), nan_unless(shape > 0)};
  }
};

// log of the gamma(a, 1) density's kernel at x: (a - 1) log x - x - lgamma(a).
LS_HD double gamma_log_kernel(double a, double x) { return (a - 1) * log(x) - x - lgamma(a); }

// The series of P(a, x), which converges quickly for x < a + 1:
//   P(a, x) = x^a e^-x / Gamma(a + 1) sum_n x^n / ((a + 1) ... (a + n)).
LS_HD double gamma_p_series(double a, double x) {
  double term = 1 / a, sum = term, ap = a;
  for (int n = 1; n <= 5000; ++n) {
    ap += 1;
    term *= x / ap;
    sum += term;
    if (fabs(term) < fabs(sum) * 1e-16) break;
  }
  return sum * exp(a * log(x) - x - lgamma(a));
}

// The continued fraction of Q(a, x) (modified Lentz), for x >= a + 1.
LS_HD double gamma_q_cf(double a, double x) {
  const double tiny = 1e-300, eps = 1e-16;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i <= 5000; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (fabs(d) < tiny) d = tiny;
    c = b + an / c;
    if (fabs(c) < tiny) c = tiny;
    d = 1 / d;
    const double del = d * c;
    h *= del;
    if (fabs(del - 1) < eps) break;
  }
  return exp(a * log(x) - x - lgamma(a)) * h;
}

// Regularised lower and upper incomplete gamma, P(a, x) = pgamma(x, a) and
// Q(a, x) = 1 - P(a, x), for a > 0, x >= 0 (x = Inf allowed); each computed
// directly on the side where it is small, so that neither tail cancels.
LS_HD double gamma_p(double a, double x) {
  if (!(x > 0)) return 0;
  if (ls_isinf(x)) return 1;
  return x < a + 1 ? gamma_p_series(a, x) : 1 - gamma_q_cf(a, x);
}
LS_HD double gamma_q(double a, double x) {
  if (!(x > 0)) return 1;
  if (ls_isinf(x)) return 0;
  return x < a + 1 ? 1 - gamma_p_series(a, x) : gamma_q_cf(a, x);
}

// Central difference step for a shape parameter v > 0: relative 1e-5, never
// reaching 0 (the CDFs have no closed-form partial in their shapes; the
// difference is accurate to about 1e-8 relative, ample for truncation).
LS_HD double shape_step(double v) { return 1e-5 * (v > 1 ? v : 1) * (v < 1 ? v : 1); }

// CDFs of a discrete family with two parameters (cf. Discrete in dist.hpp).
struct Discrete2 {
  LS_HD static double cdf(double, const double*, double* dp) {
    dp[0] = dp[1] = 0;
    return ls_nan();
  }
  LS_HD static double ccdf(double, const double*, double* dp) {
    dp[0] = dp[1] = 0;
    return ls_nan();
  }
};

// ... and of a discrete family with three parameters.
struct Discrete3 {
  LS_HD static double cdf(double, const double*, double* dp) {
    dp[0] = dp[1] = dp[2] = 0;
    return ls_nan();
  }
  LS_HD static double ccdf(double, const double*, double* dp) {
    dp[0] = dp[1] = dp[2] = 0;
    return ls_nan();
  }
};

}  // namespace lockstep

#endif
