// Elementwise unary ops: value and derivative, written once for every backend.
// Unary<op>::value(x) is y; Unary<op>::deriv(x, y) is dy/dx (y passed so that
// exp, sqrt and ilogit reuse it). Domains follow R: log(-1) is NaN, log(0) -Inf.
#ifndef LOCKSTEP_MATH_UNARY_HPP
#define LOCKSTEP_MATH_UNARY_HPP

#include <cmath>
#include "../hd.hpp"
#include "../ir.hpp"

namespace lockstep {

template <Op op> struct Unary;  // an op listed as unary without a rule fails to build

template <> struct Unary<Op::neg> {
  template <class T> LS_HD static T value(T x) { return -x; }
  template <class T> LS_HD static T deriv(T, T) { return T(-1); }
};
template <> struct Unary<Op::exp> {
  template <class T> LS_HD static T value(T x) { return exp(x); }
  template <class T> LS_HD static T deriv(T, T y) { return y; }
};
// d log(x) / dx = 1 / x; for x < 0 the value is NaN and so is the derivative.
template <> struct Unary<Op::log> {
  template <class T> LS_HD static T value(T x) { return log(x); }
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
#define LS_OP(name, arity, family) \
  case Op::name: f(UnaryRule<OpFamily::family, Op::name>()); return;
#include "../ops.def"
#undef LS_OP
  }
}

template <class T> LS_HD T unary_value(Op op, T x) {
  switch (op) {
#define LS_OP(name, arity, family) \
  case Op::name: return UnaryRule<OpFamily::family, Op::name>::value(x);
#include "../ops.def"
#undef LS_OP
  }
  return x;
}

template <class T> LS_HD T unary_deriv(Op op, T x, T y) {
  switch (op) {
#define LS_OP(name, arity, family) \
  case Op::name: return UnaryRule<OpFamily::family, Op::name>::deriv(x, y);
#include "../ops.def"
#undef LS_OP
  }
  return T(0);
}

}  // namespace lockstep

#endif
