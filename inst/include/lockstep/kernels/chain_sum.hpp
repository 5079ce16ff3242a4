// Per-chain sums over a lanes-policy launch: out[c] += sum_i term(c, i).
//
// Phase 0: every lane sums its strided share of each chain into block-shared
// scratch; phases 1 to 9 add the lanes' sums in a tree (in each, lane t adds
// the slots of lane t + h, h halving from 256 to 1), and in the last the first
// lane of each block adds its block's totals to out[c]. (The first lane
// adding every lane's slots alone took longer than the sums themselves on a
// GPU.) Sums are kept in double whatever the element type.
// A term may also add partials to adjoint buffers as it goes, which is how the
// density terms fuse their value and gradient in one pass (as Stan's partials
// propagators do).
#ifndef LOCKSTEP_KERNELS_CHAIN_SUM_HPP
#define LOCKSTEP_KERNELS_CHAIN_SUM_HPP

#include <type_traits>

#include "../lanes.hpp"

namespace lockstep {

// A term may sum its elements itself, chain by chain, on the CPU (DensityTerm
// does, to hoist what depends only on the parameters, and to sum once what
// depends only on the data): void sum_chains(long chains, long size,
// double* out, long stride), adding chain c's sum to out[c * stride].
template <class Term, class = void> struct has_sum_chains : std::false_type {};
template <class Term>
struct has_sum_chains<Term, std::void_t<decltype(&Term::sum_chains)>> : std::true_type {};

// A term with slots (below) may likewise sum one chain's elements and slots
// itself: double sum_chain_with_slots(long c, long size, double* sums).
template <class Term, class = void> struct has_sum_chain_with_slots : std::false_type {};
template <class Term>
struct has_sum_chain_with_slots<Term, std::void_t<decltype(&Term::sum_chain_with_slots)>>
    : std::true_type {};

// A term may also sum some of its partials per chain (a density's scalar
// parameters, whose partial every element adds to): int slots() const, the
// number of such sums; double operator()(long c, long i, double* sums), which
// adds them to sums[0, slots) instead of to their adjoint; and
// void add_sum(long c, int slot, double total), which adds a block's total.
// One atomic per element on the same address would otherwise queue every lane
// of a GPU on it.
template <class Term, class = void> struct has_slots : std::false_type {};
template <class Term>
struct has_slots<Term, std::void_t<decltype(&Term::slots)>> : std::true_type {};

// A term may keep state across the elements one lane visits, chain by chain
// (DensityTerm's Cursor: what it prepared for the chain):
// double operator()(long c, long i, double* sums, Cursor& cursor), sums
// nullptr where it has no slots.
template <class Term, class = void> struct has_cursor : std::false_type {};
template <class Term>
struct has_cursor<Term, std::void_t<typename Term::Cursor>> : std::true_type {};

template <class Term> struct ChainSum {
  Term term;
  double* out;  // out[c * stride] for chain c, added to
  long chains, size;
  long stride;  // between chains' totals in out (a term's other sums may sit between)
  static constexpr int tree_phases = 9;  // h = 256 (every lane beyond 256), 128, ..., 1
  int phases = 1 + tree_phases;
  // Blocks per multiprocessor on a GPU (StreamLaunch): the tree keeps the
  // block sums short, so the GPU can be filled with lanes to hide the loads.
  static constexpr int blocks_per_multiprocessor = 8;
  int per_chain;        // 1 + the term's slots: the value and its sums
  int shared_per_lane;  // = chains * per_chain

  LS_HD ChainSum(Term t, double* o, long c, long n, long out_stride = 1)
      : term(t), out(o), chains(c), size(n), stride(out_stride), per_chain(1 + slots_of(t)),
        shared_per_lane(static_cast<int>(c) * per_chain) {}

  static LS_HD int slots_of(const Term& t) {
    if constexpr (has_slots<Term>::value)
      return t.slots();
    else
      return 0;
  }

  LS_HD double value(long c, long i, double* sums) const {
    if constexpr (has_slots<Term>::value)
      return per_chain > 1 ? term(c, i, sums) : term(c, i);
    else
      return term(c, i);
  }

  LS_HD void operator()(int phase, const Lane& lane) const {
    if (phase == 0) {
      double* mine = lane.shared + static_cast<long>(lane.in_block) * shared_per_lane;
      for (long k = 0; k < shared_per_lane; ++k) mine[k] = 0;
#if !defined(__CUDA_ARCH__)
      if constexpr (has_sum_chains<Term>::value)
        if (lane.count == 1) {  // the CPU: the term's own loops over the chains
          term.sum_chains(chains, size, mine, per_chain);
          return;
        }
      if constexpr (has_sum_chain_with_slots<Term>::value)
        if (lane.count == 1) {
          for (long c = 0; c < chains; ++c)
            mine[c * per_chain] += term.sum_chain_with_slots(c, size, mine + c * per_chain + 1);
          return;
        }
#endif
      // for_each_element: plain loops on one lane, no division per element
      if constexpr (has_cursor<Term>::value) {
        typename Term::Cursor cursor{};
        for_each_element(lane, chains, size, [&](long, long c, long i) {
          double* m = mine + c * per_chain;
          m[0] += term(c, i, per_chain > 1 ? m + 1 : nullptr, cursor);
        });
        return;
      }
      for_each_element(lane, chains, size, [&](long, long c, long i) {
        double* m = mine + c * per_chain;
        m[0] += value(c, i, m + 1);
      });
      return;
    }
    // Phase p >= 1: lane t < h adds the slots of lane t + h (phase 1: of every
    // lane t + 256 m), which the previous phase finished.
    const long t = lane.in_block, h = 256L >> (phase - 1);
    double* mine = lane.shared + t * shared_per_lane;
    if (t < h)
      for (long o = t + h; o < lane.lanes_in_block; o += phase == 1 ? h : lane.lanes_in_block) {
        const double* theirs = lane.shared + o * shared_per_lane;
        for (long k = 0; k < shared_per_lane; ++k) mine[k] += theirs[k];
      }
    if (phase == tree_phases && t == 0)
      for (long c = 0; c < chains; ++c)
        for (int s = 0; s < per_chain; ++s) {
          const double total = mine[c * per_chain + s];
          if (s == 0) {
            lane_add(out + c * stride, total);
          } else if constexpr (has_slots<Term>::value) {
            term.add_sum(c, s - 1, total);
          }
        }
  }
};

// The per-chain bookkeeping around a ChainSum, as kernels rather than host
// loops, so that it runs where the buffers are (a GPU's memory included).
// out[c] = 0 for every chain.
struct ZeroChains {
  double* out;
  long chains;
  int phases = 1;
  int shared_per_lane = 0;

  LS_HD void operator()(int, const Lane& lane) const {
    for (long c = lane.index; c < chains; c += lane.count) out[c] = 0;
  }
};

// Moves per-chain totals s[c] on: y[c] = s[c] (a sum's value) or, with `add`,
// y[c] += s[c] (a density term's value, which a tiled pass accumulates over its
// tiles); and lp[c] += s[c] unless lp is null.
template <class T> struct StoreChains {
  const double* s;
  T* y;
  double* lp;
  bool add;
  long chains;
  int phases = 1;
  int shared_per_lane = 0;

  LS_HD void operator()(int, const Lane& lane) const {
    // Added with lane_add: the tile kernel's blocks (tile_kernel.hpp) each
    // add their tiles' sums to the same term and log density.
    for (long c = lane.index; c < chains; c += lane.count) {
      if (add)
        lane_add(y + c, static_cast<T>(s[c]));
      else
        y[c] = static_cast<T>(s[c]);
      if (lp) lane_add(lp + c, s[c]);
    }
  }
};

}  // namespace lockstep

#endif
