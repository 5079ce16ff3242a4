// exp and log1p on the ranges the logit-scale densities need, written as
// straight-line arithmetic (no calls, no table lookups, no data-dependent
// branches) so that the CPU's element loops vectorise through them, where a
// call to glibc's scalar exp / log stops the vectoriser; on a GPU they are a
// handful of fused multiply-adds. Within 1-2 ulp of the C library (tested in
// tests/cpp/test_distributions.cpp against std::exp and std::log1p).
//
// The reductions are fdlibm's (e_exp.c, e_log.c): exp(x) = 2^k exp(r) with
// |r| <= ln(2) / 2, and log1p(f) for f in [sqrt(2)/2 - 1, sqrt(2) - 1] by the
// odd series in s = f / (2 + f) with fdlibm's minimax coefficients.
#ifndef LOCKSTEP_MATH_ELEMENTARY_HPP
#define LOCKSTEP_MATH_ELEMENTARY_HPP

#include <cstdint>
#include <cmath>
#include <cstring>

#include "../hd.hpp"

namespace lockstep {

namespace detail {

LS_HD_INLINE double bits_to_double(std::int64_t b) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(b));
#else
  double d;
  std::memcpy(&d, &b, sizeof d);
  return d;
#endif
}

LS_HD_INLINE std::int64_t double_to_bits(double d) {
#if defined(__CUDA_ARCH__)
  return static_cast<std::int64_t>(__double_as_longlong(d));
#else
  std::int64_t b;
  std::memcpy(&b, &d, sizeof b);
  return b;
#endif
}

// 2^k for -1022 <= k <= 1023, built from its exponent bits.
LS_HD_INLINE double pow2i(std::int64_t k) {
  return bits_to_double(static_cast<std::int64_t>(static_cast<std::uint64_t>(k + 1023) << 52));
}

constexpr double ln2_hi = 6.93147180369123816490e-01;  // 32 bits: k * ln2_hi is exact
constexpr double ln2_lo = 1.90821492927058770002e-10;

LS_HD_INLINE double ls_huge() { return HUGE_VAL; }
LS_HD_INLINE double ls_quiet_nan() { return NAN; }

}  // namespace detail

namespace detail {

// exp(xc) for xc in [-746, 710] (callers clamp x to it and select the tails):
// 2^k exp(r) with k = round(x / ln 2), |r| <= ln(2) / 2.
LS_HD_INLINE double exp_clamped(double xc) {
  // k = round(x / ln 2) by the 1.5 * 2^52 shifter: t's low mantissa bits hold k.
  const double shifter = 6755399441055744.0;  // 0x1.8p52
  const double t = xc * 1.44269504088896338700e+00 + shifter;
  const double kd = t - shifter;
  const std::int64_t k = double_to_bits(t) - double_to_bits(shifter);
  const double r = (xc - kd * ln2_hi) - kd * ln2_lo;  // |r| <= 0.3466
  // exp(r) by its Taylor series to r^13 (truncation error < 5e-18 relative):
  // 1 + r (1 + r (1/2 + r h(r))), the tail h (degree 10, its terms at most
  // r^3 / 6 < 0.007 of the sum) by Estrin's scheme, whose products of pairs
  // overlap where Horner's fourteen steps each wait for the one before; the
  // leading terms by Horner, which keeps the rounding of the large ones.
  const double r2 = r * r, r4 = r2 * r2, r8 = r4 * r4;
  const double p34 = 1.0 / 6.0 + r * (1.0 / 24.0), p56 = 1.0 / 120.0 + r * (1.0 / 720.0);
  const double p78 = 1.0 / 5040.0 + r * (1.0 / 40320.0);
  const double p910 = 1.0 / 362880.0 + r * (1.0 / 3628800.0);
  const double p1112 = 1.0 / 39916800.0 + r * (1.0 / 479001600.0);
  const double h = (p34 + p56 * r2) + (p78 + p910 * r2) * r4 +
                   (p1112 + (1.0 / 6227020800.0) * r2) * r8;
  const double p = 1.0 + r * (1.0 + r * (0.5 + r * h));
  // 2^k in two normal factors, so that subnormal results (k < -1022) and
  // those near the largest double (k = 1024) come out right too; a NaN x
  // gives a NaN p and stays NaN.
  const std::int64_t k1 = k >> 1;  // arithmetic shift: floor(k / 2)
  return p * pow2i(k1) * pow2i(k - k1);
}

}  // namespace detail

// exp(x) for x <= 0 (exp(-|z|) in the logit densities): 0 below the smallest
// subnormal, NaN for NaN.
LS_HD_INLINE double ls_exp_nonpos(double x) {
  const double y = detail::exp_clamped(x < -746.0 ? -746.0 : x);  // NaN stays NaN
  return x < -746.0 ? 0.0 : y;
}

// exp(x) for every double: 0 below the smallest subnormal, Inf above the
// largest double, NaN for NaN. The CPU's exp() op (math/unary.hpp): its
// element loop vectorises through this, where each element's call of the C
// library's exp was a tenth of a small Gaussian-process model's gradient.
LS_HD_INLINE double ls_exp(double x) {
  const double xc = x < -746.0 ? -746.0 : (x > 710.0 ? 710.0 : x);  // NaN stays NaN
  const double y = detail::exp_clamped(xc);
  return x < -746.0 ? 0.0 : (x > 710.0 ? detail::ls_huge() : y);
}

namespace detail {

// k ln 2 + log1p(f) for f in [sqrt(2)/2 - 1, sqrt(2) - 1] (fdlibm's e_log.c).
LS_HD_INLINE double log_reduced(double f, double k) {
  const double s = f / (2.0 + f), z = s * s, w = z * z;
  const double t1 = w * (3.999999999940941908e-01 +
                         w * (2.222219843214978396e-01 + w * 1.531383769920937332e-01));
  const double t2 = z * (6.666666666666735130e-01 +
                         w * (2.857142874366239149e-01 +
                              w * (1.818357216161805012e-01 + w * 1.479819860511658591e-01)));
  const double R = t2 + t1, hfsq = 0.5 * f * f;
  return k * ln2_hi - ((hfsq - (s * (hfsq + R) + k * ln2_lo)) - f);
}

}  // namespace detail

// log1p(e) for e in [0, 1] (log1p(exp(-|z|)) in the logit densities).
LS_HD_INLINE double ls_log1p_unit(double e) {
  // 1 + e = 2^k (1 + f) with 1 + f in [sqrt(2)/2, sqrt(2)]: k = 0 and f = e,
  // exactly, below sqrt(2) - 1; k = 1 and f = (e - 1) / 2 above it. Both
  // sides are computed and one selected (a select, not a branch).
  const double half = (e - 1) * 0.5;
  const bool big = e > 0.41421356237309503;
  return detail::log_reduced(big ? half : e, big ? 1.0 : 0.0);
}

// log(x) for every double: -Inf at 0, NaN below 0 and for NaN, Inf at Inf.
LS_HD_INLINE double ls_log(double x) {
  using namespace detail;
  // Subnormals are scaled into the normal range first (by 2^54). The scale is
  // selected and the product always taken: a product taken only on one side
  // of a select "could trap" for GCC, whose if-conversion then leaves the
  // branch, and a loop whose log(r) has r computed in it does not vectorise.
  const bool sub = x < 2.2250738585072014e-308;
  const double xs = x * (sub ? 18014398509481984.0 : 1.0);
  // x = 2^k m with m in [sqrt(2)/2, sqrt(2)), from the bits (musl's log.c):
  // the offset moves the exponent's boundary from 1 to sqrt(2)/2.
  const std::uint64_t u = static_cast<std::uint64_t>(double_to_bits(xs));
  const std::uint64_t hx = (u >> 32) + (0x3ff00000 - 0x3fe6a09e);
  const std::int64_t k = static_cast<std::int64_t>(hx >> 20) - 0x3ff - (sub ? 54 : 0);
  const std::uint64_t mu = (((hx & 0x000fffff) + 0x3fe6a09e) << 32) | (u & 0xffffffff);
  const double f = bits_to_double(static_cast<std::int64_t>(mu)) - 1.0;
  // k as a double through the 1.5 * 2^52 shifter (an integer add, which
  // vectorises where a conversion of 64-bit integers may not).
  const double shifter = 6755399441055744.0;
  const double dk = bits_to_double(double_to_bits(shifter) + k) - shifter;
  const double r = log_reduced(f, dk);
  // Selects of doubles on one comparison each: written as one condition
  // (x > 0 && x < Inf) and an edge select, GCC combined them into selects of
  // masks of two widths, which stopped the vectoriser in loops around them.
  const double pos = x < ls_huge() ? r : x;                         // Inf stays Inf
  const double nonpos = x == 0 ? -ls_huge() : ls_quiet_nan();       // 0; below 0, NaN
  return x > 0 ? pos : nonpos;
}

// The logistic's both tails from one exp, for the logit-scale densities
// (bernoulli_logit, binomial_logit): with e = exp(-|eta|),
//   log ilogit(eta)  = -(max(-eta, 0) + log1p(e)),
//   log ilogit(-eta) = -(max(eta, 0) + log1p(e)),
//   ilogit(|eta|) = 1 / (1 + e),  ilogit(-|eta|) = e / (1 + e),
// each finite for every finite eta (log ilogit(-40) is -40, where log of
// plogis(-40) rounds well, but log(1 - plogis(40)) is -Inf), in selects.
struct LogitTails {
  double log_p, log_q;  // log ilogit(eta), log ilogit(-eta)
  double p, q;          // ilogit(eta), ilogit(-eta)
};
LS_HD_INLINE LogitTails logit_tails(double eta) {
  const double e = ls_exp_nonpos(-fabs(eta)), l = ls_log1p_unit(e), big = 1 / (1 + e),
               small = e * big;
  return LogitTails{-((eta < 0 ? -eta : 0.0) + l), -((eta > 0 ? eta : 0.0) + l),
                    eta >= 0 ? big : small, eta >= 0 ? small : big};
}

// log1p(y) for every double: through ls_log of u = 1 + y, with log(u) y / (u - 1)
// correcting the rounding of u to first order (Goldberg 1991, "What every
// computer scientist should know about floating-point arithmetic", theorem
// 4), within a few ulps of log1p; y itself where u rounds to 1, Inf at Inf,
// -Inf at -1, NaN below -1 and for NaN.
LS_HD_INLINE double ls_log1p(double y) {
  const double u = 1 + y, r = ls_log(u) * (y / (u - 1));
  return u == 1 ? y : (y > 1.79769313486231570815e+308 ? y : r);
}

}  // namespace lockstep

#endif
