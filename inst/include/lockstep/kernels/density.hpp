// A distribution term: the log density of the target summed per chain, with the
// partials of every element added to the adjoints of the target and parameters
// in the same pass. Density terms are sinks of the program whose adjoint is
// one, which is what lets the gradient be fused into the forward pass.
#ifndef LOCKSTEP_KERNELS_DENSITY_HPP
#define LOCKSTEP_KERNELS_DENSITY_HPP

#include <type_traits>

#include "../distributions.hpp"
#include "chain_sum.hpp"
#include "elementwise.hpp"
#include "running_sums.hpp"
#include "stream_store.hpp"

namespace lockstep {

// One family's term (the family a template argument, so that its math is
// inlined into the element loop instead of dispatched per element).
template <class T, Family F> struct DensityTerm {
  static constexpr int n_params = Dist<F>::n_params;
  double lower, upper;  // truncation
  bool truncated;       // lower or upper finite
  Operand<T> x;
  Operand<T> p[max_dist_params];
  AdjointSink<T> dx;  // data == nullptr: no gradient wanted
  AdjointSink<T> dp[max_dist_params];
  // The term is the first writer of its target's adjoint in this gradient
  // (Executor: the CPU's global stage), which was therefore not zeroed: its
  // partials are stored there rather than added. For a prior on millions of
  // parameters that saves a pass zeroing them and a read of each before its
  // add.
  bool dx_store = false;
  // What the term's value and partials are multiplied by: a minibatch's
  // tiles over tiles drawn (NodeCall::weight), on the lanes; 1 otherwise.
  // (The CPU's observation stage scales its workers' sums instead; a term
  // with another weight takes the element-by-element loop.)
  double weight = 1;
  // The sum of the family's data_term over the target (dist.hpp), where the
  // caller knows it (NodeCall::data_term): sum_chains then adds it as is.
  bool data_term_given = false;
  double data_term_total = 0;

  // Sums per chain (ChainSum's slots) for the adjoints of scalar parameters
  // (and a scalar target) that the term's elements all add to, when asked
  // for with with_slots(): slot_x, slot_p[k] their slot, or -1.
  static_assert(max_dist_params == 3, "slot_p's initialiser lists every parameter");
  int n_slots = 0, slot_x = -1, slot_p[max_dist_params] = {-1, -1, -1};

  LS_HD DensityTerm& with_slots() {
    n_slots = 0;
    slot_x = dx.data && dx.scalar ? n_slots++ : -1;
    for (int k = 0; k < n_params; ++k) slot_p[k] = dp[k].data && dp[k].scalar ? n_slots++ : -1;
    return *this;
  }
  LS_HD int slots() const { return n_slots; }
  LS_HD void add_sum(long c, int slot, double total) const {
    if (slot == slot_x) dx.add(c, 0, static_cast<T>(total));
    for (int k = 0; k < n_params; ++k)
      if (slot == slot_p[k]) dp[k].add(c, 0, static_cast<T>(total));
  }

  LS_HD double operator()(long c, long i) const { return (*this)(c, i, nullptr); }

  // sums: the chain's slots, or nullptr to add every partial to its adjoint
  LS_HD double operator()(long c, long i, double* sums) const {
    double pv[max_dist_params] = {0}, gp[max_dist_params] = {0}, gx = 0;
    for (int k = 0; k < n_params; ++k) pv[k] = static_cast<double>(p[k].at(c, i));
    const double xv = static_cast<double>(x.at(c, i));
    // Untruncated (the common case) calls the family's lpdf directly, so that
    // its math is inlined into the element loop.
    const double lp = truncated ? truncated_lpdf_of<F>(xv, pv, lower, upper, &gx, gp)
                                : Dist<F>::lpdf(xv, pv, &gx, gp);
    put_partials(c, i, gx, gp, sums);
    return weight * lp;
  }

  // Element i's partials to the chain's slots (sums, where not nullptr) or
  // to their adjoints.
  LS_HD void put_partials(long c, long i, double gx, const double* gp_in, double* sums) const {
    double gp[max_dist_params];
    gx *= weight;
    for (int k = 0; k < n_params; ++k) gp[k] = weight * gp_in[k];
    if (sums && slot_x >= 0) sums[slot_x] += gx;
    else if (dx.data) dx.add(c, i, static_cast<T>(gx));
    for (int k = 0; k < n_params; ++k) {
      if (sums && slot_p[k] >= 0) sums[slot_p[k]] += gp[k];
      else if (dp[k].data) dp[k].add(c, i, static_cast<T>(gp[k]));
    }
  }

  // The lanes path (ChainSum on a GPU and on the emulated backend) prepares
  // too, once per chain and lane (dist.hpp's PreparedCursor), as the CPU's
  // chunked loop does once per chain.
  using Cursor = PreparedCursor<Dist<F>>;
  LS_HD double operator()(long c, long i, double* sums, Cursor& cur) const {
    using D = Dist<F>;
    if constexpr (has_prepared<D>::value) {
      if (cur.c != c) cur.move_to(c, !truncated, p);
      if (cur.prepared) {
        double gp[max_dist_params] = {0}, gx = 0;
        const double location = static_cast<double>(p[location_param<D>()].at(c, i));
        const double lp = D::lpdf(static_cast<double>(x.at(c, i)), location, cur.q, &gx, gp);
        put_partials(c, i, gx, gp, sums);
        return weight * lp;
      }
    }
    return (*this)(c, i, sums);
  }

  // Adds each chain's sum over elements [0, size) to out[c * stride]: the
  // CPU's loops (ChainSum calls it on one lane). Where the family splits off
  // a data_term (dist.hpp) and the target is the same for every chain (data),
  // that part is summed once (or given: data_term_total) and added to each
  // chain's sum of the kernel.
  // (Declared here, defined in density_cpu.hpp and compiled once per element
  // type and family, in src/core/density_terms_*.cpp: its loops, in three
  // clones each, were more than half the code of every file that ran a
  // kernel body on the CPU.)
  void sum_chains(long chains, long size, double* out, long stride) const;

  // Whether the CPU's loop is the chunked one: untruncated terms whose
  // operands are each the target's shape or one value (no axis broadcast);
  // the rest go element by element.
  bool chunked() const {
    bool chunked = !truncated && !x.axis && !(dx.data && dx.axis) && weight == 1;
    for (int k = 0; k < n_params; ++k) chunked = chunked && !p[k].axis && !(dp[k].data && dp[k].axis);
    return chunked;
  }

  // Whether sum_chains sums the family's data_term once (above): a chunked
  // term whose target has no chain dimension and a value per element.
  static constexpr bool may_split_data_term = has_data_term<Dist<F>>::value &&
                                               straight_line<Dist<F>>() &&
                                               !has_prepared<Dist<F>>::value;
  bool splits_data_term() const {
    return may_split_data_term && chunked() && x.chain_stride == 0 && !x.scalar;
  }

  // The sum of the family's data_term over x[0, size) (0 for a family
  // without one). Data do not change between calls, so an observation stage
  // sums each tile's once, when built, and gives it (data_term_total).
  // (defined in density_cpu.hpp, as sum_chains)
  static double data_term_sum(const T* x, long size);
  LS_CPU_VECTORISE static void data_term_chunk(long n, const double* xr, double* __restrict tb) {
    if constexpr (has_data_term<Dist<F>>::value)
      for (long i = 0; i < n; ++i) tb[i] = Dist<F>::data_term(xr[i]);
  }

  // One chain's sum over elements [0, size), without the family's data_term
  // where `kernel_only` (splits_data_term()).
  double sum_chain(long c, long size, bool kernel_only) const {
    const bool chunked = this->chunked();
    // Only the chunked loop stores a target's partials, one per element;
    // the other ways add to them, once zeroed.
    if (dx_store && dx.data && (!chunked || dx.scalar || x.scalar)) zero_dx(c, size);
    // A stored parameter's partials (AdjointSink::store): the chunked loop
    // stores the first parameter's where it can, and zeroes it where not.
    for (int k = 0; k < n_params; ++k)
      if (!chunked || k > 0) zero_sink_chain(dp[k], c, size);
    if (chunked) return sum_chain_chunked(c, size, kernel_only);
    double lp = 0;
    for (long i = 0; i < size; ++i) lp += (*this)(c, i);
    return lp;
  }

  // Zeroes chain c's elements [0, size) of the target's adjoint, for a term
  // with dx_store whose loop adds. (The target's sink is addressed as the
  // target itself: never an axis, and a scalar only as one element.)
  void zero_dx(long c, long size) const {
    T* d = dx.data + c * dx.chain_stride;
    for (long i = 0; i < (dx.scalar ? 1 : size); ++i) d[i] = T(0);
  }

  // The chunked loop: `chunk` elements at a time, the operands first copied
  // (or, one value, spread) into local double arrays, so that the loop over
  // the family's lpdf has no branches, no reductions and no broadcasting:
  // the compiler vectorises it, and with the LS_HD elementary functions
  // (math/elementary.hpp) through exp and log too. The sums, and the
  // partials' way to the adjoints, follow in short loops of their own. When
  // every parameter is one value for the chain (or every one but a varying
  // location, location_param) and the family can prepare, its
  // parameter-only math (log sd, 1 / sd) is done once, here.
  static constexpr long chunk = 256;

  // n values of an operand as doubles: the values themselves when they are
  // doubles, else converted into buf.
  static const double* in_doubles(const T* values, long n, double* buf) {
    if constexpr (std::is_same<T, double>::value) {
      return values;
    } else {
      for (long i = 0; i < n; ++i) buf[i] = static_cast<double>(values[i]);
      return buf;
    }
  }

  // The element loop of sum_chain_chunked, one chunk: lpb[i] = the family's
  // lpdf at element i, prepared (Prep: its parameter-only math done once,
  // from pv) or not, and its partials handed to put(i, gx, gp), which says
  // where they go (the lean loops' adjoints or the general loop's arrays).
  template <bool Prep, bool Kernel, class Put>
  inline __attribute__((always_inline)) void chunk_elements(long n, const double* xr,
                                                            const double* const* pr,
                                                            const double* pv, double* lpb,
                                                            Put&& put) const {
    using D = Dist<F>;
    if constexpr (Prep) {
      if constexpr (has_prepared<D>::value) {
        const typename D::Prepared q0 = D::prepare(pv);
        // (pr[location_param] holds the location, spread when it is one value)
        const double* location = pr[location_param<D>()];
        for (long i = 0; i < n; ++i) {
          double gx, gp[max_dist_params];
          lpb[i] = D::lpdf(xr[i], location[i], q0, &gx, gp);
          put(i, gx, gp);
        }
      }
    } else {
      // (the operands' pointers read once, not per element: loaded in the
      // loop they stopped GCC's vectoriser, "no vectype")
      static_assert(max_dist_params == 3, "chunk_elements reads three operands");
      const double* const p0 = n_params > 0 ? pr[0] : nullptr;
      const double* const p1 = n_params > 1 ? pr[1] : nullptr;
      const double* const p2 = n_params > 2 ? pr[2] : nullptr;
      for (long i = 0; i < n; ++i) {
        double gx, gp[max_dist_params], pi[max_dist_params];
        if constexpr (n_params > 0) pi[0] = p0[i];
        if constexpr (n_params > 1) pi[1] = p1[i];
        if constexpr (n_params > 2) pi[2] = p2[i];
        if constexpr (Kernel && has_data_term<D>::value)
          lpb[i] = D::kernel(xr[i], pi, &gx, gp);
        else
          lpb[i] = D::lpdf(xr[i], pi, &gx, gp);
        put(i, gx, gp);
      }
    }
  }

  // The lean element loops of sum_chain_chunked: when each partial wanted
  // has an adjoint per element (the target's, DX; the first parameter's,
  // DP0: a prior's and a regression likelihood's) and no other partial is
  // wanted, the loop adds them there itself, instead of storing every
  // partial of the chunk (wanted or not) in a local array for later passes.
  // DX = 2 stores the target's (dx_store). Kernel: the lpdf without the
  // family's data_term.
  template <int DX, int DP0, bool Prep, bool Kernel>
  inline __attribute__((always_inline)) void lean_elements(long n, const double* xr,
                                                           const double* const* pr,
                                                           const double* pv, T* dxo, T* dp0o,
                                                           double* lpb) const {
    chunk_elements<Prep, Kernel>(n, xr, pr, pv, lpb,
                         [&](long i, double gx, const double* gp) {
                           if constexpr (DX == 1) dxo[i] += static_cast<T>(gx);
                           if constexpr (DX == 2) dxo[i] = static_cast<T>(gx);
                           if constexpr (DP0 == 1 && n_params > 0) dp0o[i] += static_cast<T>(gp[0]);
                           if constexpr (DP0 == 2 && n_params > 0) dp0o[i] = static_cast<T>(gp[0]);
                         });
  }

  // One chunk of the lean loop, its (DX, DP0, Prep) picked at run time: 0 no
  // partials, 1 the target's, 2 the first parameter's, 3 the target's
  // stored, 4 the first parameter's stored.
  template <bool Prep, bool Kernel = false>
  inline __attribute__((always_inline)) void lean_chunk(int lean, long n, const double* xr,
                                                        const double* const* pr,
                                                        const double* pv, T* dxo, T* dp0o,
                                                        double* lpb) const {
    if (lean == 1) lean_elements<1, 0, Prep, Kernel>(n, xr, pr, pv, dxo, dp0o, lpb);
    else if (lean == 2) lean_elements<0, 1, Prep, Kernel>(n, xr, pr, pv, dxo, dp0o, lpb);
    else if (lean == 3) lean_elements<2, 0, Prep, Kernel>(n, xr, pr, pv, dxo, dp0o, lpb);
    else if (lean == 4) lean_elements<0, 2, Prep, Kernel>(n, xr, pr, pv, dxo, dp0o, lpb);
    else lean_elements<0, 0, Prep, Kernel>(n, xr, pr, pv, dxo, dp0o, lpb);
  }

  // The prepared element loops (prep), and a straight-line family's plain
  // ones (straight_line<D>, dist.hpp), out of line, in clones that vectorise
  // loops needing a remainder or an overlap check (LS_CPU_VECTORISE), as a
  // chunk's loop does: GCC's cheapest cost model at -O2 vectorises neither.
  // The rest of sum_chain_chunked keeps LS_CPU_CLONES (a poisson_log or
  // bernoulli_logit likelihood, whose lpdf branches, was 15% slower with the
  // whole function under LS_CPU_VECTORISE).
  // (kernel_only: without the family's data_term, splits_data_term())
  LS_CPU_VECTORISE void vectorised_lean_chunk(bool prep, bool kernel_only, int lean, long n,
                                              const double* xr, const double* const* pr,
                                              const double* pv, T* dxo, T* dp0o,
                                              double* lpb) const {
    if (prep)
      lean_chunk<true>(lean, n, xr, pr, pv, dxo, dp0o, lpb);
    else if constexpr (straight_line<Dist<F>>()) {
      if constexpr (has_data_term<Dist<F>>::value)
        if (kernel_only) return lean_chunk<false, true>(lean, n, xr, pr, pv, dxo, dp0o, lpb);
      lean_chunk<false>(lean, n, xr, pr, pv, dxo, dp0o, lpb);
    }
  }
  // (Its outputs are the caller's local arrays, which overlap nothing: said
  // with __restrict, as the vectoriser would otherwise check each pair.)
  LS_CPU_VECTORISE void vectorised_chunk(bool prep, bool kernel_only, long n, const double* xr,
                                         const double* const* pr, const double* pv,
                                         double* __restrict lpb, double* __restrict gxb,
                                         double (*__restrict gpb)[chunk]) const {
    if (prep)
      stored_chunk<true>(n, xr, pr, pv, lpb, gxb, gpb);
    else if constexpr (straight_line<Dist<F>>()) {
      if constexpr (has_data_term<Dist<F>>::value)
        if (kernel_only) return stored_chunk<false, true>(n, xr, pr, pv, lpb, gxb, gpb);
      stored_chunk<false>(n, xr, pr, pv, lpb, gxb, gpb);
    }
  }
  template <bool Prep, bool Kernel = false>
  inline __attribute__((always_inline)) void stored_chunk(long n, const double* xr,
                                                          const double* const* pr,
                                                          const double* pv,
                                                          double* __restrict lpb,
                                                          double* __restrict gxb,
                                                          double (*__restrict gpb)[chunk]) const {
    chunk_elements<Prep, Kernel>(n, xr, pr, pv, lpb, [&](long i, double gx, const double* gp) {
      gxb[i] = gx;
      // (written out: a loop over k here stopped the vectoriser)
      static_assert(max_dist_params == 3, "stored_chunk stores three partials");
      if constexpr (n_params > 0) gpb[0][i] = gp[0];
      if constexpr (n_params > 1) gpb[1][i] = gp[1];
      if constexpr (n_params > 2) gpb[2][i] = gp[2];
    });
  }

  LS_CPU_CLONES double sum_chain_chunked(long c, long size, bool kernel_only) const {
    using D = Dist<F>;
    double xb[chunk], lpb[chunk], gxb[chunk];
    double pb[max_dist_params][chunk], gpb[max_dist_params][chunk];
    double pv[max_dist_params] = {0};
    const T* ps[max_dist_params] = {nullptr};
    // whether the family's prepared lpdf serves this term (untruncated here)
    const bool prepared = prepares<D>(true, p);
    const bool vectorised = prepared || straight_line<D>();
    if (size <= 0) return 0;
    // One value is spread over the elements of one chunk at most (a prior on
    // one parameter has one: spreading it over a whole chunk cost more than
    // its lpdf).
    const long spread = size < chunk ? size : chunk;
    for (int k = 0; k < n_params; ++k) {
      ps[k] = p[k].data + c * p[k].chain_stride;
      pv[k] = static_cast<double>(ps[k][0]);
      if (p[k].scalar)
        for (long i = 0; i < spread; ++i) pb[k][i] = pv[k];
    }
    const T* xs = x.data + c * x.chain_stride;
    if (x.scalar)
      for (long i = 0; i < spread; ++i) xb[i] = static_cast<double>(xs[0]);
    T* dxs = dx.data && !dx.scalar ? dx.data + c * dx.chain_stride : nullptr;
    T* dps[max_dist_params] = {nullptr};
    for (int k = 0; k < n_params; ++k)
      if (dp[k].data && !dp[k].scalar) dps[k] = dp[k].data + c * dp[k].chain_stride;
    double lp = 0, sum_gx = 0, sum_gp[max_dist_params] = {0};
    // The lean loops serve the term when each wanted partial goes to an
    // element of its own and only the target's or only the first
    // parameter's is wanted (lean_elements).
    bool others = false;
    for (int k = 1; k < n_params; ++k) others = others || dp[k].data;
    const bool by_element = !x.scalar && !others && (!dx.data || dxs) &&
                            (n_params == 0 || !dp[0].data || dps[0]);
    const bool store_p0 = n_params > 0 && dp[0].store && dp[0].data;
    const int lean = !by_element || (dxs && dps[0]) ? -1
                     : dxs                          ? (dx_store ? 3 : 1)
                     : dps[0]                       ? (store_p0 ? 4 : 2)
                                                    : 0;
    // (the other loops add the first parameter's partials: to zeros)
    if (store_p0 && lean != 4) zero_sink_chain(dp[0], c, size);
    // A stored target's partials of more than stream_bytes a chain go past
    // the caches (detail::stream_store): written once here, they are read
    // next by a pass over other data as large, which would have pushed them
    // out; a store through the cache would first read every line it writes.
    T gxt[chunk];
    const bool stream = lean == 3 && size * static_cast<long>(sizeof(T)) >= detail::stream_bytes;
    for (long i0 = 0; i0 < size; i0 += chunk) {
      const long n = size - i0 < chunk ? size - i0 : chunk;
      // Where the chunk's operands are read: a double operand with a value
      // per element in place (a copy would only repeat it), the others from
      // their local arrays.
      const double* xr = xb;
      const double* pr[max_dist_params];
      if (!x.scalar) xr = in_doubles(xs + i0, n, xb);
      for (int k = 0; k < n_params; ++k) pr[k] = p[k].scalar ? pb[k] : in_doubles(ps[k] + i0, n, pb[k]);
      if (lean >= 0) {
        T* dxo = stream ? gxt : dxs ? dxs + i0 : nullptr;
        T* dp0o = n_params > 0 && dps[0] ? dps[0] + i0 : nullptr;
        if (vectorised)
          vectorised_lean_chunk(prepared, kernel_only, lean, n, xr, pr, pv, dxo, dp0o, lpb);
        else if constexpr (!straight_line<D>())
          lean_chunk<false>(lean, n, xr, pr, pv, dxo, dp0o, lpb);
        if (stream) detail::stream_store(dxs + i0, gxt, n);
        lp += detail::sum_doubles(lpb, n);
        continue;
      }
      auto store = [&](long i, double gx, const double* gp) {
        gxb[i] = gx;
        for (int k = 0; k < n_params; ++k) gpb[k][i] = gp[k];
      };
      if (vectorised)
        vectorised_chunk(prepared, kernel_only, n, xr, pr, pv, lpb, gxb, gpb);
      else if constexpr (!straight_line<D>())
        chunk_elements<false, false>(n, xr, pr, pv, lpb, store);
      lp += detail::sum_doubles(lpb, n);
      if (dxs && dx_store)
        for (long i = 0; i < n; ++i) dxs[i0 + i] = static_cast<T>(gxb[i]);
      else if (dxs)
        for (long i = 0; i < n; ++i) dxs[i0 + i] += static_cast<T>(gxb[i]);
      else if (dx.data)
        sum_gx += detail::sum_doubles(gxb, n);
      for (int k = 0; k < n_params; ++k) {
        if (dps[k])
          for (long i = 0; i < n; ++i) dps[k][i0 + i] += static_cast<T>(gpb[k][i]);
        else if (dp[k].data)
          sum_gp[k] += detail::sum_doubles(gpb[k], n);
      }
    }
    if (stream) detail::stream_fence();
    if (dx.data && !dxs) dx.add(c, 0, static_cast<T>(sum_gx));
    for (int k = 0; k < n_params; ++k)
      if (dp[k].data && !dps[k]) dp[k].add(c, 0, static_cast<T>(sum_gp[k]));
    return lp;
  }
};

// Whether family f splits off a data_term (dist.hpp) that a term of element
// type T sums once for all chains; if so, its sum over x[0, n) in *total.
template <class T> inline bool sum_data_term(Family f, const T* x, long n, double* total) {
  bool splits = false;
  with_family(f, [&](auto tag) {
    using Term = DensityTerm<T, decltype(tag)::value>;
    if constexpr (Term::may_split_data_term) {
      splits = true;
      *total = Term::data_term_sum(x, n);
    }
  });
  return splits;
}

}  // namespace lockstep

#endif
