// Elementwise unary ops: value and derivative, written once for every backend.
// Unary<op>::value(x) is y; Unary<op>::deriv(x, y) is dy/dx (y passed so that
// exp, sqrt and ilogit reuse it). Domains follow R: log(-1) is NaN, log(0) -Inf.
#ifndef LOCKSTEP_MATH_UNARY_HPP
#define LOCKSTEP_MATH_UNARY_HPP

#include <cmath>
#include <type_traits>
#include "../hd.hpp"
#include "../ir.hpp"
#include "elementary.hpp"
#include "special.hpp"

namespace lockstep {

template <Op op> struct Unary;  // an op listed as unary without a rule fails to build

template <> struct Unary<Op::neg> {
  template <class T> LS_HD static T value(T x) { return -x; }
  template <class T> LS_HD static T deriv(T, T) { return T(-1); }
};
// In double on the CPU, exp and log are math/elementary.hpp's straight-line
// ls_exp and ls_log (within 2 ulps of the C library's), through which the
// element loops vectorise; a GPU has its own.
template <> struct Unary<Op::exp> {
  template <class T> LS_HD static T value(T x) {
#if !defined(__CUDA_ARCH__)
    if constexpr (std::is_same<T, double>::value) return ls_exp(x);
#endif
    return exp(x);
  }
  template <class T> LS_HD static T deriv(T, T y) { return y; }
};
// d log(x) / dx = 1 / x; for x < 0 the value is NaN and so is the derivative.
template <> struct Unary<Op::log> {
  template <class T> LS_HD static T value(T x) {
#if !defined(__CUDA_ARCH__)
    if constexpr (std::is_same<T, double>::value) return ls_log(x);
#endif
    return log(x);
  }
  template <class T> LS_HD static T deriv(T x, T) { return T(1) / x; }
};
template <> struct Unary<Op::log1p> {
  template <class T> LS_HD static T value(T x) { return log1p(x); }
  template <class T> LS_HD static T deriv(T x, T) { return T(1) / (T(1) + x); }
};
template <> struct Unary<Op::sqrt> {
  template <class T> LS_HD static T value(T x) { return sqrt(x); }
  template <class T> LS_HD static T deriv(T, T y) { return T(0.5) / y; }
};
// ilogit(x) = 1 / (1 + exp(-x)), written so that neither tail overflows.
template <> struct Unary<Op::ilogit> {
  template <class T> LS_HD static T value(T x) {
    if (x >= T(0)) return T(1) / (T(1) + exp(-x));
    T e = exp(x);
    return e / (T(1) + e);
  }
  template <class T> LS_HD static T deriv(T, T y) { return y * (T(1) - y); }
};

// Steps and sign. R's round() with no digits rounds half to even (rint under
// the default rounding mode). Their derivatives are 0 wherever they exist (at
// the steps themselves too: a gradient of 0, as greta's).
template <> struct Unary<Op::sign> {
  template <class T> LS_HD static T value(T x) { return x > T(0) ? T(1) : x < T(0) ? T(-1) : x; }
  template <class T> LS_HD static T deriv(T, T) { return T(0); }
};
template <> struct Unary<Op::ceiling> {
  template <class T> LS_HD static T value(T x) { return ceil(x); }
  template <class T> LS_HD static T deriv(T, T) { return T(0); }
};
template <> struct Unary<Op::floor> {
  template <class T> LS_HD static T value(T x) { return floor(x); }
  template <class T> LS_HD static T deriv(T, T) { return T(0); }
};
template <> struct Unary<Op::round> {
  template <class T> LS_HD static T value(T x) { return rint(x); }
  template <class T> LS_HD static T deriv(T, T) { return T(0); }
};
template <> struct Unary<Op::trunc> {
  template <class T> LS_HD static T value(T x) { return trunc(x); }
  template <class T> LS_HD static T deriv(T, T) { return T(0); }
};
// d|x|/dx = sign(x), taken as 0 at x = 0 (a subgradient, as greta's).
template <> struct Unary<Op::abs> {
  template <class T> LS_HD static T value(T x) { return fabs(x); }
  template <class T> LS_HD static T deriv(T x, T) { return Unary<Op::sign>::value(x); }
};

template <> struct Unary<Op::expm1> {
  template <class T> LS_HD static T value(T x) { return expm1(x); }
  template <class T> LS_HD static T deriv(T, T y) { return y + T(1); }
};
template <> struct Unary<Op::log10> {
  template <class T> LS_HD static T value(T x) { return log10(x); }
  template <class T> LS_HD static T deriv(T x, T) { return T(0.43429448190325182765) / x; }
};
template <> struct Unary<Op::log2> {
  template <class T> LS_HD static T value(T x) { return log2(x); }
  template <class T> LS_HD static T deriv(T x, T) { return T(1.44269504088896340736) / x; }
};

// Trigonometric and hyperbolic functions and their inverses; outside an
// inverse's domain (acos(2), acosh(0.5)) value and derivative are NaN.
template <> struct Unary<Op::cos> {
  template <class T> LS_HD static T value(T x) { return cos(x); }
  template <class T> LS_HD static T deriv(T x, T) { return -sin(x); }
};
template <> struct Unary<Op::sin> {
  template <class T> LS_HD static T value(T x) { return sin(x); }
  template <class T> LS_HD static T deriv(T x, T) { return cos(x); }
};
template <> struct Unary<Op::tan> {
  template <class T> LS_HD static T value(T x) { return tan(x); }
  template <class T> LS_HD static T deriv(T, T y) { return T(1) + y * y; }
};
template <> struct Unary<Op::acos> {
  template <class T> LS_HD static T value(T x) { return acos(x); }
  template <class T> LS_HD static T deriv(T x, T) { return T(-1) / sqrt((T(1) - x) * (T(1) + x)); }
};
template <> struct Unary<Op::asin> {
  template <class T> LS_HD static T value(T x) { return asin(x); }
  template <class T> LS_HD static T deriv(T x, T) { return T(1) / sqrt((T(1) - x) * (T(1) + x)); }
};
template <> struct Unary<Op::atan> {
  template <class T> LS_HD static T value(T x) { return atan(x); }
  template <class T> LS_HD static T deriv(T x, T) { return T(1) / (T(1) + x * x); }
};
template <> struct Unary<Op::cosh> {
  template <class T> LS_HD static T value(T x) { return cosh(x); }
  template <class T> LS_HD static T deriv(T x, T) { return sinh(x); }
};
template <> struct Unary<Op::sinh> {
  template <class T> LS_HD static T value(T x) { return sinh(x); }
  template <class T> LS_HD static T deriv(T x, T) { return cosh(x); }
};
template <> struct Unary<Op::tanh> {
  template <class T> LS_HD static T value(T x) { return tanh(x); }
  template <class T> LS_HD static T deriv(T, T y) { return (T(1) - y) * (T(1) + y); }
};
template <> struct Unary<Op::acosh> {
  template <class T> LS_HD static T value(T x) { return acosh(x); }
  template <class T> LS_HD static T deriv(T x, T) { return T(1) / sqrt((x - T(1)) * (x + T(1))); }
};
// 1 / sqrt(1 + x^2), as 1 / hypot(x, 1): no overflow of x^2
template <> struct Unary<Op::asinh> {
  template <class T> LS_HD static T value(T x) { return asinh(x); }
  template <class T> LS_HD static T deriv(T x, T) { return T(1) / hypot(x, T(1)); }
};
template <> struct Unary<Op::atanh> {
  template <class T> LS_HD static T value(T x) { return atanh(x); }
  template <class T> LS_HD static T deriv(T x, T) { return T(1) / ((T(1) - x) * (T(1) + x)); }
};
// cospi(x) = cos(pi x) and so on, reduced by their period first as R does
// (math/special.hpp): exact at the integers and half-integers.
template <> struct Unary<Op::cospi> {
  template <class T> LS_HD static T value(T x) { return T(ls_cospi(double(x))); }
  template <class T> LS_HD static T deriv(T x, T) { return T(-ls_pi * ls_sinpi(double(x))); }
};
template <> struct Unary<Op::sinpi> {
  template <class T> LS_HD static T value(T x) { return T(ls_sinpi(double(x))); }
  template <class T> LS_HD static T deriv(T x, T) { return T(ls_pi * ls_cospi(double(x))); }
};
template <> struct Unary<Op::tanpi> {
  template <class T> LS_HD static T value(T x) { return T(ls_tanpi(double(x))); }
  template <class T> LS_HD static T deriv(T, T y) { return T(ls_pi) * (T(1) + y * y); }
};

// log |gamma(x)| and its derivatives, on the whole real line as in R: at 0 and
// the negative integers lgamma is Inf, digamma NaN and trigamma Inf.
template <> struct Unary<Op::lgamma> {
  template <class T> LS_HD static T value(T x) { return lgamma(x); }
  template <class T> LS_HD static T deriv(T x, T) { return T(digamma_real(double(x))); }
};
template <> struct Unary<Op::digamma> {
  template <class T> LS_HD static T value(T x) { return T(digamma_real(double(x))); }
  template <class T> LS_HD static T deriv(T x, T) { return T(trigamma(double(x))); }
};
template <> struct Unary<Op::trigamma> {
  template <class T> LS_HD static T value(T x) { return T(trigamma(double(x))); }
  template <class T> LS_HD static T deriv(T x, T) { return T(tetragamma(double(x))); }
};

// greta's inverse link functions besides ilogit: iprobit is the standard normal
// CDF (pnorm), icloglog 1 - exp(-exp(x)) (as -expm1(-exp(x)), accurate in the
// lower tail), icauchit the standard Cauchy CDF (pcauchy), and log1pe
// log(1 + exp(x)) (softplus, which neither overflows nor loses its lower tail).
template <> struct Unary<Op::iprobit> {
  template <class T> LS_HD static T value(T x) { return T(std_normal_cdf(double(x))); }
  template <class T> LS_HD static T deriv(T x, T) { return T(std_normal_pdf(double(x))); }
};
// d/dx = exp(x - exp(x)), 0 in both tails
template <> struct Unary<Op::icloglog> {
  template <class T> LS_HD static T value(T x) { return -expm1(-exp(x)); }
  template <class T> LS_HD static T deriv(T x, T) { return exp(x - exp(x)); }
};
template <> struct Unary<Op::icauchit> {
  template <class T> LS_HD static T value(T x) { return T(cauchy_cdf(double(x))); }
  template <class T> LS_HD static T deriv(T x, T) { return T(1 / ls_pi) / (T(1) + x * x); }
};
// d/dx log(1 + exp(x)) = ilogit(x)
template <> struct Unary<Op::log1pe> {
  template <class T> LS_HD static T value(T x) { return T(log1p_exp(double(x))); }
  template <class T> LS_HD static T deriv(T x, T) { return Unary<Op::ilogit>::value(x); }
};

// Runtime dispatch over the unary ops of ops.def. Ops of other families map to
// UnaryRule's primary template, which is never called.
template <OpFamily F, Op op> struct UnaryRule {
  template <class T> LS_HD static T value(T x) { return x; }
  template <class T> LS_HD static T deriv(T, T) { return T(0); }
};
template <Op op> struct UnaryRule<OpFamily::unary, op> : Unary<op> {};

// Calls f(rule) with the rule of `op` as a value whose type carries the op, so
// that a kernel can pick the op once, outside its loop, instead of per element.
template <class F> LS_HD void with_unary_rule(Op op, F&& f) {
  switch (op) {
#define LS_OP(name, arity, family, alignment) \
  case Op::name: f(UnaryRule<OpFamily::family, Op::name>()); return;
#include "../ops.def"
#undef LS_OP
  }
}

template <class T> LS_HD T unary_value(Op op, T x) {
  switch (op) {
#define LS_OP(name, arity, family, alignment) \
  case Op::name: return UnaryRule<OpFamily::family, Op::name>::value(x);
#include "../ops.def"
#undef LS_OP
  }
  return x;
}

template <class T> LS_HD T unary_deriv(Op op, T x, T y) {
  switch (op) {
#define LS_OP(name, arity, family, alignment) \
  case Op::name: return UnaryRule<OpFamily::family, Op::name>::deriv(x, y);
#include "../ops.def"
#undef LS_OP
  }
  return T(0);
}

}  // namespace lockstep

#endif
