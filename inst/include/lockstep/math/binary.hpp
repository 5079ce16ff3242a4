// Elementwise binary ops: value and the partials with respect to each operand,
// written once for every backend. Binary<op>::partials(a, b, y, &da, &db).
#ifndef LOCKSTEP_MATH_BINARY_HPP
#define LOCKSTEP_MATH_BINARY_HPP

#include <cmath>

#include "../hd.hpp"
#include "../ir.hpp"
#include "elementary.hpp"

namespace lockstep {

template <Op op> struct Binary;  // an op listed as binary without a rule fails to build

template <> struct Binary<Op::add> {
  template <class T> LS_HD static T value(T a, T b) { return a + b; }
  template <class T> LS_HD static void partials(T, T, T, T* da, T* db) { *da = T(1); *db = T(1); }
};
template <> struct Binary<Op::sub> {
  template <class T> LS_HD static T value(T a, T b) { return a - b; }
  template <class T> LS_HD static void partials(T, T, T, T* da, T* db) { *da = T(1); *db = T(-1); }
};
template <> struct Binary<Op::mul> {
  template <class T> LS_HD static T value(T a, T b) { return a * b; }
  template <class T> LS_HD static void partials(T a, T b, T, T* da, T* db) { *da = b; *db = a; }
};
// d(a/b)/da = 1/b, d(a/b)/db = -a/b^2 = -y/b.
template <> struct Binary<Op::div> {
  template <class T> LS_HD static T value(T a, T b) { return a / b; }
  template <class T> LS_HD static void partials(T, T b, T y, T* da, T* db) {
    *da = T(1) / b;
    *db = -y / b;
  }
};

// a ^ b as R's R_pow: 1 when a is 1 or b is 0 (even NaN ^ 0), a * a for b = 2,
// pow() otherwise (a negative base with a non-integer exponent is NaN), except
// where C's pow() and R's differ: a negative base to an infinite power, and
// -Inf to a non-integer one, are NaN in R (C gives 0, 1 or Inf).
// d/da = b a^(b - 1); d/db = a^b log(a) for a > 0, and 0 where a <= 0 (as
// greta's, from TensorFlow: where a^b is defined for a < 0 it is only so at
// integer b, and at a = 0 the limit from a > 0 is 0 for b > 0).
template <> struct Binary<Op::pow> {
  template <class T> LS_HD static T value(T a, T b) {
    if (a == T(1) || b == T(0)) return T(1);
    if (b == T(2)) return a * a;
    const T inf = T(HUGE_VAL);
    if (a < T(0) && (b == inf || b == -inf || (a == -inf && b != floor(b)))) return T(NAN);
    return pow(a, b);
  }
  template <class T> LS_HD static void partials(T a, T b, T y, T* da, T* db) {
    *da = b == T(0) ? T(0) : a != T(0) ? b * (y / a) : b * pow(a, b - T(1));
    *db = a > T(0) ? y * log(a) : T(0);
  }
};

// R's %/% (myfloor in R's arithmetic.c): floor(a / b), with the remainder of
// the quotient's floor corrected so that a == b * (a %/% b) + a %% b; a / b
// itself when b is 0 or the quotient is not finite or beyond 2^52. The
// remainder a - floor(q) b is computed with one rounding (fma), where R uses
// long double. Its gradient is 0 with respect to both operands (a step; greta
// has none either).
template <> struct Binary<Op::idiv> {
  template <class T> LS_HD static T value(T a, T b) {
    const double x = double(a), d = double(b), q = x / d;
    if (d == 0 || fabs(q) * 2.220446049250313e-16 > 1 || !(fabs(q) <= 1.7976931348623157e308))
      return T(q);
    if (fabs(q) < 1) return T(q < 0 ? -1 : ((x < 0 && d > 0) || (x > 0 && d < 0)) ? -1 : 0);
    const double fq = floor(q);
    const double r = fma(-fq, d, x);
    return T(fq + floor(r / d));
  }
  template <class T> LS_HD static void partials(T, T, T, T* da, T* db) { *da = T(0); *db = T(0); }
};

// R's %% (myfmod in R's arithmetic.c): a - floor(a / b) b, with the sign of b;
// NaN for b = 0; a (or a + b, when the signs differ) when |b| > 2^52 and
// |a| <= |b|. The remainder is computed with one rounding (fma), where R uses
// long double. d/da = 1 and d/db = -(a %/% b) (as greta's, from TensorFlow's
// floormod), the derivative of a - b floor(a / b) away from its steps.
template <> struct Binary<Op::mod> {
  template <class T> LS_HD static T value(T a, T b) {
    const double x = double(a), d = double(b);
    if (d == 0) return T(NAN);
    if (fabs(d) * 2.220446049250313e-16 > 1 && fabs(x) <= 1.7976931348623157e308 &&
        fabs(x) <= fabs(d))
      return T(fabs(x) == fabs(d) ? 0 : ((x < 0 && d > 0) || (d < 0 && x > 0)) ? x + d : x);
    const double r = fma(-floor(x / d), d, x);
    return T(r - floor(r / d) * d);
  }
  template <class T> LS_HD static void partials(T a, T b, T, T* da, T* db) {
    *da = T(1);
    *db = -Binary<Op::idiv>::value(a, b);
  }
};

// atan2(a, b), the angle of the point (b, a) as R's atan2(y, x): d/da =
// b / (a^2 + b^2), d/db = -a / (a^2 + b^2), through hypot against overflow.
template <> struct Binary<Op::atan2> {
  template <class T> LS_HD static T value(T a, T b) { return atan2(a, b); }
  template <class T> LS_HD static void partials(T a, T b, T, T* da, T* db) {
    const T h = hypot(a, b);
    *da = (b / h) / h;
    *db = -(a / h) / h;
  }
};

// log(exp(a) + exp(b)), finite wherever the larger operand is: max(a, b) +
// log1p(exp(-|a - b|)). mixture() combines its components' log densities with
// it, one pass per pair of components where the same formula from the
// elementwise ops took nine. The partials are the softmax of (a, b),
// exp(a - y) and exp(b - y); where y is infinite (both operands -Inf, or
// either +Inf) they are split between the operands at the infinity, half
// each when both are, the limit of the softmax along a = b. Computed in
// double with the straight-line exp and log1p of math/elementary.hpp, inlined
// into the element loop, so that the CPU's loop vectorises (a call per
// element was two thirds of a mixture's gradient); the infinities and NaN
// by selects.
template <> struct Binary<Op::log_add_exp> {
  template <class T> LS_HD_INLINE static T value(T a_, T b_) {
    const double a = double(a_), b = double(b_);
    const double top = a > b ? a : b;
    const double y = top + ls_log1p_unit(ls_exp_nonpos(-fabs(a - b)));
    const bool nan = !(a == a) || !(b == b);
    const bool infinite = top == -detail::ls_huge() || top == detail::ls_huge();
    return T(nan ? a + b : infinite ? top : y);
  }
  template <class T> LS_HD_INLINE static void partials(T a_, T b_, T y_, T* da, T* db) {
    const double a = double(a_), b = double(b_), y = double(y_);
    const bool infinite = y == -detail::ls_huge() || y == detail::ls_huge();
    // both exponentials computed whatever y is (at an infinite y, of 0) and
    // one value selected: with a branch around them the loop did not vectorise
    const double ea = ls_exp_nonpos(infinite ? 0.0 : a - y);
    const double eb = ls_exp_nonpos(infinite ? 0.0 : b - y);
    const double at_a = a == y ? (b == y ? 0.5 : 1.0) : 0.0;
    const double at_b = b == y ? (a == y ? 0.5 : 1.0) : 0.0;
    *da = T(infinite ? at_a : ea);
    *db = T(infinite ? at_b : eb);
  }
};

// R's comparisons, as greta gives them: 1 where a > b (greater), a >= b
// (greater_equal) or a == b (equal), else 0; NaN where either operand is NaN
// (R's NA). R's <, <= and != are these with the operands swapped, or 1 - equal.
// Their gradient is 0 (steps, as greta's are). Ops of their own, because the
// sign(a - b) they were built from is NaN for two equal infinities (Inf ==
// Inf is 1).
template <> struct Binary<Op::greater> {
  template <class T> LS_HD static T value(T a, T b) {
    return (a != a || b != b) ? a + b : T(a > b ? 1 : 0);
  }
  template <class T> LS_HD static void partials(T, T, T, T* da, T* db) { *da = T(0); *db = T(0); }
};
template <> struct Binary<Op::greater_equal> {
  template <class T> LS_HD static T value(T a, T b) {
    return (a != a || b != b) ? a + b : T(a >= b ? 1 : 0);
  }
  template <class T> LS_HD static void partials(T, T, T, T* da, T* db) { *da = T(0); *db = T(0); }
};
template <> struct Binary<Op::equal> {
  template <class T> LS_HD static T value(T a, T b) {
    return (a != a || b != b) ? a + b : T(a == b ? 1 : 0);
  }
  template <class T> LS_HD static void partials(T, T, T, T* da, T* db) { *da = T(0); *db = T(0); }
};

template <OpFamily F, Op op> struct BinaryRule {
  template <class T> LS_HD static T value(T a, T) { return a; }
  template <class T> LS_HD static void partials(T, T, T, T* da, T* db) { *da = T(0); *db = T(0); }
};
template <Op op> struct BinaryRule<OpFamily::binary, op> : Binary<op> {};

// As with_unary_rule: the op chosen once, outside a kernel's loop.
template <class F> LS_HD void with_binary_rule(Op op, F&& f) {
  switch (op) {
#define LS_OP(name, arity, family, alignment) \
  case Op::name: f(BinaryRule<OpFamily::family, Op::name>()); return;
#include "../ops.def"
#undef LS_OP
  }
}

template <class T> LS_HD T binary_value(Op op, T a, T b) {
  switch (op) {
#define LS_OP(name, arity, family, alignment) \
  case Op::name: return BinaryRule<OpFamily::family, Op::name>::value(a, b);
#include "../ops.def"
#undef LS_OP
  }
  return a;
}

template <class T> LS_HD void binary_partials(Op op, T a, T b, T y, T* da, T* db) {
  switch (op) {
#define LS_OP(name, arity, family, alignment) \
  case Op::name: BinaryRule<OpFamily::family, Op::name>::partials(a, b, y, da, db); return;
#include "../ops.def"
#undef LS_OP
  }
}

}  // namespace lockstep

#endif
