// Per-chain sums over a lanes-policy launch: out[c] += sum_i term(c, i).
//
// Phase 0: every lane sums its strided share of each chain into block-shared
// scratch; phase 1 (after the barrier): the first lane of each block adds its
// block's totals to out[c]. Sums are kept in double whatever the element type.
// A term may also add partials to adjoint buffers as it goes, which is how the
// density terms fuse their value and gradient in one pass (as Stan's partials
// propagators do).
#ifndef LOCKSTEP_KERNELS_CHAIN_SUM_HPP
#define LOCKSTEP_KERNELS_CHAIN_SUM_HPP

#include <type_traits>

#include "../lanes.hpp"

namespace lockstep {

// A term may sum one chain's elements itself (DensityTerm does, to hoist
// what depends only on the parameters): double sum_chain(long c, long size).
template <class Term, class = void> struct has_sum_chain : std::false_type {};
template <class Term>
struct has_sum_chain<Term, std::void_t<decltype(&Term::sum_chain)>> : std::true_type {};

template <class Term> struct ChainSum {
  Term term;
  double* out;  // [chains], added to
  long chains, size;
  int phases = 2;
  int shared_per_lane;  // = chains

  ChainSum(Term t, double* o, long c, long n)
      : term(t), out(o), chains(c), size(n), shared_per_lane(static_cast<int>(c)) {}

  LS_HD void operator()(int phase, const Lane& lane) const {
    if (phase == 0) {
      double* mine = lane.shared + static_cast<long>(lane.in_block) * chains;
      for (long c = 0; c < chains; ++c) mine[c] = 0;
#if !defined(__CUDA_ARCH__)
      if constexpr (has_sum_chain<Term>::value)
        if (lane.count == 1) {  // the CPU: the term's own loop over a chain
          for (long c = 0; c < chains; ++c) mine[c] += term.sum_chain(c, size);
          return;
        }
#endif
      // for_each_element: plain loops on one lane, no division per element
      for_each_element(lane, chains, size, [&](long, long c, long i) { mine[c] += term(c, i); });
    } else if (lane.in_block == 0) {
      for (long c = 0; c < chains; ++c) {
        double total = 0;
        for (int t = 0; t < lane.lanes_in_block; ++t) total += lane.shared[t * chains + c];
        lane_add(out + c, total);
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
    for (long c = lane.index; c < chains; c += lane.count) {
      y[c] = add ? static_cast<T>(y[c] + static_cast<T>(s[c])) : static_cast<T>(s[c]);
      if (lp) lp[c] += s[c];
    }
  }
};

}  // namespace lockstep

#endif
