// The contract of a distribution's math, one specialisation per family of
// distributions.def, each in its own header:
//
//   template <> struct Dist<Family::name> {
//     static constexpr int n_params;
//     // log density at x; writes d/dx to *dx and d/dp[k] to dp[k]
//     LS_HD static double lpdf(double x, const double* p, double* dx, double* dp);
//     // CDF at x (x may be +-Inf) and dF/dp[k], for truncation
//     LS_HD static double cdf(double x, const double* p, double* dp);
//     // survival 1 - F(x), computed directly so that it keeps its precision in
//     // the upper tail, and its partials (the negated partials of F)
//     LS_HD static double ccdf(double x, const double* p, double* dp);
//   };
//
// A family may also precompute what depends only on its parameters, for terms
// whose parameters are one value per chain (priors such as normal(0, 1) over
// a million values: Stan's normal_lpdf does the same with a scalar sigma):
//
//     struct Prepared { ... };
//     LS_HD static Prepared prepare(const double* p);
//     LS_HD static double lpdf(double x, double location, const Prepared& q,
//                              double* dx, double* dp);
//
// with the same results as lpdf(x, p, ...) up to rounding (has_prepared<D>),
// where p[location_param<D>()] is `location`. prepare() does not read that
// parameter, and the prepared lpdf reads it only from `location`, so that a
// term whose location varies by element while its other parameters are one
// value per chain (a regression's likelihood, y ~ normal(X beta, sigma), or
// a gamma regression's rate) is served too: the element loop passes each
// element's. (As an argument rather than a member of q that the loop sets:
// a copy of q per element stopped GCC's vectoriser.) The location is
// parameter 0 unless Prepared says otherwise with a
// `static constexpr int location_param` (student's df comes first).
//
// Everything is computed in double, whatever the executor's element type.
#ifndef LOCKSTEP_DISTRIBUTIONS_DIST_HPP
#define LOCKSTEP_DISTRIBUTIONS_DIST_HPP

#include <type_traits>
#include <utility>

#include "../hd.hpp"
#include "../ir.hpp"
#include "../math/elementary.hpp"
#include "../math/log_gamma.hpp"
#include "../math/special.hpp"

namespace lockstep {

constexpr int max_dist_params = 3;

template <Family f> struct Dist;  // a family without math fails to build

template <class D, class = void> struct has_prepared : std::false_type {};
template <class D> struct has_prepared<D, std::void_t<typename D::Prepared>> : std::true_type {};
// D's Prepared, or char for a family without one (a placeholder member).
template <class D, class = void> struct prepared_or_none {
  using type = char;
};
template <class D> struct prepared_or_none<D, std::void_t<typename D::Prepared>> {
  using type = typename D::Prepared;
};
// Whether D's plain lpdf(x, p, dx, dp) is straight-line (selects, no branch
// on the element's values; `static constexpr bool straight_line = true`): a
// family whose parameters all vary by element, which nothing can prepare,
// then has its element loops vectorised (density.hpp) as prepared ones are.
template <class D, class = void> struct declares_straight_line : std::false_type {};
template <class D>
struct declares_straight_line<D, std::void_t<decltype(D::straight_line)>>
    : std::integral_constant<bool, D::straight_line> {};
template <class D> constexpr bool straight_line() { return declares_straight_line<D>::value; }

// A family may split its lpdf into a part of the target alone and the rest:
//
//     LS_HD static double data_term(double x);
//     LS_HD static double kernel(double x, const double* p, double* dx, double* dp);
//
// with lpdf(x, p, ...) = kernel(x, p, ...) + data_term(x) exactly (so that
// -Inf outside the support comes from the kernel, and data_term is 0 there).
// A term whose target is the same for every chain (data: a count model's
// log(x!)) sums data_term once for all chains instead of once per chain
// (density.hpp's data_term_sum; a third of a Poisson likelihood's cost at
// four chains). The families with one are straight-line and unprepared.
template <class D, class = void> struct has_data_term : std::false_type {};
template <class D>
struct has_data_term<D, std::void_t<decltype(&D::data_term), decltype(&D::kernel)>>
    : std::true_type {};

template <class D, class = void> struct declares_location_param : std::false_type {};
template <class D>
struct declares_location_param<D, std::void_t<decltype(D::Prepared::location_param)>>
    : std::true_type {};
// The parameter a prepared location stands for.
template <class D> constexpr int location_param() {
  if constexpr (declares_location_param<D>::value)
    return D::Prepared::location_param;
  else
    return 0;
}
// Whether parameter k of a term may be prepared: one value per chain
// (`scalar`), or the family's location, which may vary by element.
template <class D> LS_HD constexpr bool preparable_param(int k, bool scalar) {
  return scalar || k == location_param<D>();
}

// Whether D's prepared lpdf serves a term with parameters p[0, n_params)
// (operands with a `scalar` flag, one value per chain): D prepares, the term
// is untruncated, and every parameter is preparable_param. The rule of
// density terms and logpdf, on the CPU and on lanes.
template <class D, class P> LS_HD bool prepares(bool untruncated, const P* p) {
  if constexpr (!has_prepared<D>::value) {
    return false;
  } else {
    if (!untruncated) return false;
    for (int k = 0; k < D::n_params; ++k)
      if (!preparable_param<D>(k, p[k].scalar)) return false;
    return true;
  }
}

// What an element loop on lanes (a GPU, the emulated backend) prepared for
// the chain it saw last. A lane's elements come chain by chain
// (for_each_element), so the family's parameter-only math (the lgamma and
// digamma of a shape, the log of a scale) is done once per chain and lane
// instead of once per element: move_to(c, ...) where c differs from the
// cursor's, then D::lpdf(x, location, q, ...) where `prepared`.
template <class D> struct PreparedCursor {
  long c = -1;
  bool prepared = false;
  typename prepared_or_none<D>::type q{};

  // Chain `chain`'s preparation from the operands p (p[k].at(chain, 0): one
  // value per chain, and the location's first, which prepare() does not read).
  template <class P> LS_HD void move_to(long chain, bool untruncated, const P* p) {
    c = chain;
    prepared = prepares<D>(untruncated, p);
    if constexpr (has_prepared<D>::value) {
      if (!prepared) return;
      double pv[max_dist_params] = {0};
      for (int k = 0; k < D::n_params; ++k) pv[k] = static_cast<double>(p[k].at(chain, 0));
      q = D::prepare(pv);
    }
  }
};

// The CDFs of a discrete family with one parameter: truncation is refused
// when the model is built, so they are never called.
struct Discrete {
  LS_HD static double cdf(double, const double*, double* dp) {
    dp[0] = 0;
    return ls_nan();
  }
  LS_HD static double ccdf(double, const double*, double* dp) {
    dp[0] = 0;
    return ls_nan();
  }
};

// 0 where `ok`, else NaN: added to a prepared lpdf's outputs, so that an
// invalid parameter (or an element's invalid location) makes every output
// NaN through arithmetic, as lpdf()'s dist_nan does, without a branch that
// would stop the element loop's vectoriser.
LS_HD_INLINE double nan_unless(bool ok) { return ok ? 0.0 : ls_nan(); }

// Invalid parameters: NaN log density and partials, which the sampler rejects.
LS_HD double dist_nan(double* dx, double* dp, int n) {
  *dx = ls_nan();
  for (int k = 0; k < n; ++k) dp[k] = ls_nan();
  return ls_nan();
}

}  // namespace lockstep

#endif
