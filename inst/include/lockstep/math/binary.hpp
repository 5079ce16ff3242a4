// Elementwise binary ops: value and the partials with respect to each operand,
// written once for every backend. Binary<op>::partials(a, b, y, &da, &db).
#ifndef LOCKSTEP_MATH_BINARY_HPP
#define LOCKSTEP_MATH_BINARY_HPP

#include "../hd.hpp"
#include "../ir.hpp"

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

template <OpFamily F, Op op> struct BinaryRule {
  template <class T> LS_HD static T value(T a, T) { return a; }
  template <class T> LS_HD static void partials(T, T, T, T* da, T* db) { *da = T(0); *db = T(0); }
};
template <Op op> struct BinaryRule<OpFamily::binary, op> : Binary<op> {};

// As with_unary_rule: the op chosen once, outside a kernel's loop.
template <class F> LS_HD void with_binary_rule(Op op, F&& f) {
  switch (op) {
#define LS_OP(name, arity, family) \
  case Op::name: f(BinaryRule<OpFamily::family, Op::name>()); return;
#include "../ops.def"
#undef LS_OP
  }
}

template <class T> LS_HD T binary_value(Op op, T a, T b) {
  switch (op) {
#define LS_OP(name, arity, family) \
  case Op::name: return BinaryRule<OpFamily::family, Op::name>::value(a, b);
#include "../ops.def"
#undef LS_OP
  }
  return a;
}

template <class T> LS_HD void binary_partials(Op op, T a, T b, T y, T* da, T* db) {
  switch (op) {
#define LS_OP(name, arity, family) \
  case Op::name: BinaryRule<OpFamily::family, Op::name>::partials(a, b, y, da, db); return;
#include "../ops.def"
#undef LS_OP
  }
}

}  // namespace lockstep

#endif
