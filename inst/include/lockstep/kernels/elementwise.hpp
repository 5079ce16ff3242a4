// Kernel bodies of the elementwise ops, written against the lanes policy
// (lanes.hpp) and shared by the CPU, emulated and CUDA backends.
//
// An operand is addressed as data[c * chain_stride + (scalar ? 0 : i)]: a node
// without the chain dimension has chain_stride 0, a broadcast scalar has
// scalar = true. Outputs always carry the layout [chains, size].
//
// Binary ops also broadcast along one axis of a rows x cols output: a row
// vector (1 x cols, one value per column, the same for every row) or a column
// vector (rows x 1, one value per row, the same for every column), as R's
// sweep() does. Such an operand is addressed by the element's row r and column
// j through strides; when neither operand is one, the bodies run the flat
// loop over i, as fast as before broadcasting existed.
#ifndef LOCKSTEP_KERNELS_ELEMENTWISE_HPP
#define LOCKSTEP_KERNELS_ELEMENTWISE_HPP

#include <stdexcept>
#include <type_traits>

#include "../lanes.hpp"
#include "../math/binary.hpp"
#include "../math/unary.hpp"
#include "cells.hpp"
#include "running_sums.hpp"

namespace lockstep {

// data[c * chain_stride + r * row_stride + j * col_stride] at row r, column j
// of the output:
//   same shape     row_stride 1, col_stride rows   (that is, data[i])
//   scalar         0, 0
//   row vector     0, 1                            (data[j])
//   column vector  1, 0                            (data[r])
// axis is true for the two vectors only. The (r, j) strides are filled for
// every operand of a binary op, so that a body which meets one vector can
// address both operands by (r, j); they are unused otherwise.
template <class T> struct Operand {
  const T* data;
  long chain_stride;  // 0 when the operand has no chain dimension
  bool scalar;        // broadcast: one element for every i
  bool axis = false;  // broadcast along one axis: address by (r, j)
  long row_stride = 0, col_stride = 0;
  LS_HD T at(long c, long i) const { return data[c * chain_stride + (scalar ? 0 : i)]; }
  LS_HD T at(long c, long r, long j) const {
    return data[c * chain_stride + r * row_stride + j * col_stride];
  }
};

// Adjoint destination of a broadcast operand: a scalar operand (or one without
// the chain dimension) receives the sum over the broadcast elements, and a row
// or column vector the sum over the axis it is broadcast along, so several
// lanes add to one address.
template <class T> struct AdjointSink {
  T* data;  // nullptr when the operand needs no gradient
  long chain_stride;
  bool scalar;
  bool axis = false;
  long row_stride = 0, col_stride = 0;
  // The destination was not zeroed, and the body is its only writer: it
  // stores its partials there rather than adding them (Slot::fresh: the
  // CPU's observation stage, which then skips zeroing a tile's adjoint that
  // one later op alone writes). Honoured by the CPU's one-lane paths of the
  // elementwise bodies and density terms; set for no other.
  bool store = false;
  LS_HD void add(long c, long i, T v) const { lane_add(data + c * chain_stride + (scalar ? 0 : i), v); }
  LS_HD void add(long c, long r, long j, T v) const {
    lane_add(data + c * chain_stride + r * row_stride + j * col_stride, v);
  }
};

#if !defined(__CUDA_ARCH__)
// Zeroes what a sink with `store` addresses of [chains, size] partials (one
// element a chain for a scalar), for a CPU path that adds: it then adds to
// zeros. (An axis sink is never stored: the stage stores only
// element-by-element adjoints.)
template <class T> void zero_sink_chain(const AdjointSink<T>& s, long c, long size) {
  if (!s.data || !s.store) return;
  if (s.axis) throw std::logic_error("lockstep: a stored adjoint broadcast along an axis");
  for (long i = 0; i < (s.scalar ? 1 : size); ++i) s.data[c * s.chain_stride + i] = T(0);
}
template <class T> void zero_sink(const AdjointSink<T>& s, long chains, long size) {
  for (long c = 0; c < chains; ++c) zero_sink_chain(s, c, size);
}
#endif

template <class T> struct UnaryForward {
  Op op;
  Operand<T> x;
  T* y;
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
#if !defined(__CUDA_ARCH__)
    if (lane.count == 1 && !x.scalar) return serial_flat();
#endif
    with_unary_rule(op, [&](auto rule) {
      for_each_element(lane, chains, size, [&](long k, long c, long i) {
        y[k] = decltype(rule)::value(x.at(c, i));
      });
    });
  }
#if !defined(__CUDA_ARCH__)
  // The CPU, one lane, x the output's shape: chain by chain through plain
  // pointers (the same values), in a loop the compiler vectorises where the
  // rule's math allows (exp and log: math/elementary.hpp), at the processor's
  // width (LS_CPU_VECTORISE, which keeps each element's value).
  void serial_flat() const {
    with_unary_rule(op, [&](auto rule) {
      for (long c = 0; c < chains; ++c)
        values<decltype(rule)>(x.data + c * x.chain_stride, y + c * size, size);
    });
  }
  template <class Rule> LS_CPU_VECTORISE static void values(const T* x, T* y, long n) {
    for (long i = 0; i < n; ++i) y[i] = Rule::value(x[i]);
  }
#endif
};

template <class T> struct UnaryBackward {
  Op op;
  Operand<T> x;
  const T* y;
  const T* dy;
  AdjointSink<T> dx;
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
#if !defined(__CUDA_ARCH__)
    if (lane.count == 1 && !dx.scalar && !x.scalar) return serial_flat();
    if (lane.count == 1 && dx.store) zero_sink(dx, chains, size);  // (then added to)
#endif
    with_unary_rule(op, [&](auto rule) {
      for_each_element(lane, chains, size, [&](long k, long c, long i) {
        dx.add(c, i, dy[k] * decltype(rule)::deriv(x.at(c, i), y[k]));
      });
    });
  }
#if !defined(__CUDA_ARCH__)
  // The CPU, one lane, an adjoint per element: chain by chain through plain
  // pointers (the same values), stored where dx.store.
  void serial_flat() const {
    if (!dx.data) return;
    with_unary_rule(op, [&](auto rule) {
      for (long c = 0; c < chains; ++c) {
        const long base = c * size;
        const T* xc = x.data + c * x.chain_stride;
        T* dxc = dx.data + c * dx.chain_stride;
        if (dx.store)
          for (long i = 0; i < size; ++i)
            dxc[i] = dy[base + i] * decltype(rule)::deriv(xc[i], y[base + i]);
        else
          for (long i = 0; i < size; ++i)
            dxc[i] += dy[base + i] * decltype(rule)::deriv(xc[i], y[base + i]);
      }
    });
  }
#endif
};

// rows: the output's rows (its columns are size / rows), for row and column
// vector operands; last so that {op, a, b, y, chains, size} still builds a
// body without one.
template <class T> struct BinaryForward {
  Op op;
  Operand<T> a, b;
  T* y;
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  long rows = 1;
  LS_HD void operator()(int, const Lane& lane) const {
    if (a.axis || b.axis) return along_axis(lane);
#if !defined(__CUDA_ARCH__)
    if (lane.count == 1) return serial_flat();
#endif
    with_binary_rule(op, [&](auto rule) {
      for_each_element(lane, chains, size, [&](long k, long c, long i) {
        y[k] = decltype(rule)::value(a.at(c, i), b.at(c, i));
      });
    });
  }
#if !defined(__CUDA_ARCH__)
  // The CPU, one lane, no axis: chain by chain, a scalar operand read once
  // per chain and the others through plain pointers, so that the loop is
  // a plain elementwise loop (the same values as above), vectorised at the
  // processor's width (LS_CPU_VECTORISE: log_add_exp's exp and log1p four or
  // eight at a time).
  void serial_flat() const {
    with_binary_rule(op, [&](auto rule) {
      for (long c = 0; c < chains; ++c)
        values<decltype(rule)>(a.data + c * a.chain_stride, a.scalar,
                               b.data + c * b.chain_stride, b.scalar, y + c * size, size);
    });
  }
  template <class Rule>
  LS_CPU_VECTORISE static void values(const T* a, bool a_scalar, const T* b, bool b_scalar, T* y,
                                      long n) {
    if (a_scalar && b_scalar) {
      const T v = Rule::value(a[0], b[0]);
      for (long i = 0; i < n; ++i) y[i] = v;
    } else if (a_scalar) {
      const T av = a[0];
      for (long i = 0; i < n; ++i) y[i] = Rule::value(av, b[i]);
    } else if (b_scalar) {
      const T bv = b[0];
      for (long i = 0; i < n; ++i) y[i] = Rule::value(a[i], bv);
    } else {
      for (long i = 0; i < n; ++i) y[i] = Rule::value(a[i], b[i]);
    }
  }
#endif
  // Kept out of the flat loop's function body: sharing one body with it cost
  // the flat loop about 10% at -O2.
  LS_HD void along_axis(const Lane& lane) const {
    with_binary_rule(op, [&](auto rule) {
      for_each_cell(lane, chains, rows, size / rows, [&](long k, long c, long r, long j) {
        y[k] = decltype(rule)::value(a.at(c, r, j), b.at(c, r, j));
      });
    });
  }
};

template <class T> struct BinaryBackward {
  Op op;
  Operand<T> a, b;
  const T* y;
  const T* dy;
  AdjointSink<T> da, db;
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  long rows = 1;  // as in BinaryForward
  // Operand adjoints that sum over many elements (a scalar; a row vector of
  // at most 32 columns broadcast down the rows) take, with several lanes,
  // block sums: the lanes go through the chains one by one, two phases each;
  // in phase 2c they add chain c's partials into block-shared slots (one per
  // summed value), in phase 2c + 1 each slot's block total is added with one
  // atomic. One atomic per element instead would queue every lane of a GPU on
  // the same few addresses. slots_a / slots_b: that operand's slots (0: its
  // adjoint is added element by element). Set by with_block_sums().
  long slots_a = 0, slots_b = 0;

  LS_HD BinaryBackward& with_block_sums() {
    slots_a = summed_slots(da);
    slots_b = summed_slots(db);
    if (slots_a + slots_b > 0) {
      phases = static_cast<int>(2 * chains);
      shared_per_lane = static_cast<int>(slots_a + slots_b);
    }
    return *this;
  }
  LS_HD long summed_slots(const AdjointSink<T>& s) const {
    if (!s.data) return 0;
    if (s.scalar) return 1;
    const long cols = size / rows;
    return s.axis && s.row_stride == 0 && cols <= 32 ? cols : 0;
  }

  LS_HD void operator()(int phase, const Lane& lane) const {
    if (phases > 1 && lane.count > 1) return block_sums(phase, lane);
    if (phase > 0) return;  // one lane: everything in phase 0
#if !defined(__CUDA_ARCH__)
    // (flat() stores where a sink says so; the other ways add, to zeros)
    if (lane.count == 1 && (a.axis || b.axis)) {
      zero_sink(da, chains, size);
      zero_sink(db, chains, size);
    }
#endif
    if (a.axis || b.axis) return along_axis(lane);
#if !defined(__CUDA_ARCH__)
    if (lane.count == 1) return serial_flat();
#endif
    with_binary_rule(op, [&](auto rule) {
      for_each_element(lane, chains, size, [&](long k, long c, long i) {
        T pa = T(0), pb = T(0);
        decltype(rule)::partials(a.at(c, i), b.at(c, i), y[k], &pa, &pb);
        if (da.data) da.add(c, i, dy[k] * pa);
        if (db.data) db.add(c, i, dy[k] * pb);
      });
    });
  }
#if !defined(__CUDA_ARCH__)
  // The CPU, one lane, no axis: chain by chain, with a scalar operand's
  // partials summed in a local double (as block_sums() does) and added once
  // per chain. Added element by element they are a read-modify-write of one
  // address, each waiting for the one before: alpha + beta * x over 62 rows
  // spent a fifth of posteriordb's kilpisjarvi gradient there.
  void serial_flat() const {
    const bool sum_a = da.data && da.scalar, sum_b = db.data && db.scalar;
    if (sum_a) sum_b ? flat<true, true>() : flat<true, false>();
    else sum_b ? flat<false, true>() : flat<false, false>();
  }
  // SA, SB: whether a's, b's adjoint is summed (the operand is a scalar).
  // The adjoints are written through plain pointers (lane_add is += on the
  // CPU, and this path is the CPU's alone). A summed adjoint is taken with
  // running sums (kernels/running_sums.hpp), whose additions overlap: one
  // sum over K = exp(-d^2 / (2 rho^2)) of an 11-point Gaussian process
  // waited on each of its 121 additions in turn. When an operand's adjoint
  // is summed and the output has more than one element, the other operand is
  // not a scalar (two scalars make a 1 x 1 output), so it is read as a plain
  // array.
  template <bool SA, bool SB> void flat() const {
    with_binary_rule(op, [&](auto rule) {
      using Rule = decltype(rule);
      for (long c = 0; c < chains; ++c) {
        const long base = c * size;
        const T* dyc = dy + base;
        const T* yc = y + base;
        const T* ap = a.data + c * a.chain_stride;
        const T* bp = b.data + c * b.chain_stride;
        // a summed operand's adjoint, or an element-by-element one (nullptr
        // when the operand needs none)
        T* dac = da.data ? da.data + c * da.chain_stride : nullptr;
        T* dbc = db.data ? db.data + c * db.chain_stride : nullptr;
        // The operands at element i (a scalar's one value, or the element),
        // and dy times a's (OfA) or b's (OfB) partial there.
        auto at_a = [&](long i) { return SA ? ap[0] : ap[i]; };
        auto at_b = [&](long i) { return SB ? bp[0] : bp[i]; };
        auto term = [&](auto of_a, long i) {
          T pa = T(0), pb = T(0);
          Rule::partials(at_a(i), at_b(i), yc[i], &pa, &pb);
          return dyc[i] * (decltype(of_a)::value ? pa : pb);
        };
        auto sum = [&](auto of_a) {
          return static_cast<T>(detail::running_sum(
              size, [&](long i) { return static_cast<double>(term(of_a, i)); }));
        };
        auto add_each = [&](T* d, bool store, auto of_a) {
          if (store)
            for (long i = 0; i < size; ++i) d[i] = term(of_a, i);
          else
            for (long i = 0; i < size; ++i) d[i] += term(of_a, i);
        };
        using OfA = std::true_type;
        using OfB = std::false_type;
        if (!SA && !SB && !a.scalar && !b.scalar) {
          // every adjoint per element: one vectorised pass, the partials
          // computed once for both operands
          if (dac || dbc) add_per_element<Rule>(ap, bp, yc, dyc, dac, dbc, size, da.store, db.store);
        } else if (SA || SB) {
          if (SA) *dac = (da.store ? T(0) : *dac) + sum(OfA{});
          else if (dac) add_each(dac, da.store, OfA{});
          if (SB) *dbc = (db.store ? T(0) : *dbc) + sum(OfB{});
          else if (dbc) add_each(dbc, db.store, OfB{});
        } else {  // a scalar operand that needs no gradient
          for (long i = 0; i < size; ++i) {
            T pa = T(0), pb = T(0);
            Rule::partials(a.at(c, i), b.at(c, i), yc[i], &pa, &pb);
            if (dac) dac[i] = (da.store ? T(0) : dac[i]) + dyc[i] * pa;
            if (dbc) dbc[i] = (db.store ? T(0) : dbc[i]) + dyc[i] * pb;
          }
        }
      }
    });
  }
  // da[i] += dy[i] * (a's partial) and db[i] += dy[i] * (b's), either
  // nullptr when that operand needs no gradient, stored (=) instead where
  // store_a, store_b: each element's additions in the order of one pass per
  // operand (a's, then b's), so that the values are those of separate passes
  // even where da and db are one array (x op x; never stored: a stored
  // adjoint has one writer, and x op x writes x's twice).
  template <class Rule>
  static void add_per_element(const T* a, const T* b, const T* y, const T* dy, T* da, T* db,
                              long n, bool store_a, bool store_b) {
    const int sa = da ? (store_a ? 2 : 1) : 0, sb = db ? (store_b ? 2 : 1) : 0;
    if (sa == 1 && sb == 1) add_partials<Rule, 1, 1>(a, b, y, dy, da, db, n);
    else if (sa == 1 && sb == 0) add_partials<Rule, 1, 0>(a, b, y, dy, da, db, n);
    else if (sa == 0 && sb == 1) add_partials<Rule, 0, 1>(a, b, y, dy, da, db, n);
    else if (sa == 2 && sb == 0) add_partials<Rule, 2, 0>(a, b, y, dy, da, db, n);
    else if (sa == 0 && sb == 2) add_partials<Rule, 0, 2>(a, b, y, dy, da, db, n);
    else if (sa == 2 && sb == 2) add_partials<Rule, 2, 2>(a, b, y, dy, da, db, n);
    else if (sa == 2) add_partials<Rule, 2, 1>(a, b, y, dy, da, db, n);
    else add_partials<Rule, 1, 2>(a, b, y, dy, da, db, n);
  }
  // DA, DB: whether a's, b's adjoint is added to (1), stored (2) or neither (0).
  template <class Rule, int DA, int DB>
  LS_CPU_VECTORISE static void add_partials(const T* a, const T* b, const T* y, const T* dy,
                                            T* da, T* db, long n) {
    for (long i = 0; i < n; ++i) {
      T pa = T(0), pb = T(0);
      Rule::partials(a[i], b[i], y[i], &pa, &pb);
      if constexpr (DA == 1) da[i] += dy[i] * pa;
      if constexpr (DA == 2) da[i] = dy[i] * pa;
      if constexpr (DB == 1) db[i] += dy[i] * pb;
      if constexpr (DB == 2) db[i] = dy[i] * pb;
    }
  }
#endif
  LS_HD void along_axis(const Lane& lane) const {
#if !defined(__CUDA_ARCH__)
    // The CPU: column by column, with a row vector's partials (one value per
    // column, constant down the rows) summed locally and added once per
    // column, not read and written back at every element.
    if (lane.count == 1) {
      const bool a_row = a.axis && a.row_stride == 0, b_row = b.axis && b.row_stride == 0;
      with_binary_rule(op, [&](auto rule) {
        const long cols = size / rows;
        long k = 0;
        for (long c = 0; c < chains; ++c)
          for (long j = 0; j < cols; ++j) {
            double sa = 0, sb = 0;
            for (long r = 0; r < rows; ++r, ++k) {
              T pa = T(0), pb = T(0);
              decltype(rule)::partials(a.at(c, r, j), b.at(c, r, j), y[k], &pa, &pb);
              if (a_row) sa += static_cast<double>(dy[k] * pa);
              else if (da.data) da.add(c, r, j, dy[k] * pa);
              if (b_row) sb += static_cast<double>(dy[k] * pb);
              else if (db.data) db.add(c, r, j, dy[k] * pb);
            }
            if (a_row && da.data) da.add(c, 0, j, static_cast<T>(sa));
            if (b_row && db.data) db.add(c, 0, j, static_cast<T>(sb));
          }
      });
      return;
    }
#endif
    with_binary_rule(op, [&](auto rule) {
      for_each_cell(lane, chains, rows, size / rows, [&](long k, long c, long r, long j) {
        T pa = T(0), pb = T(0);
        decltype(rule)::partials(a.at(c, r, j), b.at(c, r, j), y[k], &pa, &pb);
        if (da.data) da.add(c, r, j, dy[k] * pa);
        if (db.data) db.add(c, r, j, dy[k] * pb);
      });
    });
  }
  // Operands address by (r, j) whatever their broadcast: a scalar has zero
  // strides, a whole operand strides 1 and rows.
  LS_HD void block_sums(int phase, const Lane& lane) const {
    const long c = phase / 2;
    double* mine = lane.shared + static_cast<long>(lane.in_block) * shared_per_lane;
    if (phase % 2 == 0) {
      for (int k = 0; k < shared_per_lane; ++k) mine[k] = 0;
      with_binary_rule(op, [&](auto rule) {
        for_each_cell(lane, 1, rows, size / rows, [&](long i, long, long r, long j) {
          const long k = c * size + i;
          T pa = T(0), pb = T(0);
          decltype(rule)::partials(a.at(c, r, j), b.at(c, r, j), y[k], &pa, &pb);
          if (slots_a) mine[slots_a == 1 ? 0 : j] += static_cast<double>(dy[k] * pa);
          else if (da.data) da.add(c, r, j, dy[k] * pa);
          if (slots_b) mine[slots_a + (slots_b == 1 ? 0 : j)] += static_cast<double>(dy[k] * pb);
          else if (db.data) db.add(c, r, j, dy[k] * pb);
        });
      });
    } else {
      for (long k = lane.in_block; k < shared_per_lane; k += lane.lanes_in_block) {
        double total = 0;
        for (int t = 0; t < lane.lanes_in_block; ++t) total += lane.shared[t * shared_per_lane + k];
        // a scalar's strides are zero, a row vector's column stride is one
        if (k < slots_a) da.add(c, 0, k, static_cast<T>(total));
        else db.add(c, 0, k - slots_a, static_cast<T>(total));
      }
    }
  }
};

}  // namespace lockstep

#endif
