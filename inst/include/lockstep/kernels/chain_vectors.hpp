// Lanes-policy bodies of a sampler's vector operations on [chains, dim]
// arrays (sampler/chain_vectors.hpp): masked row copies and sums, the
// leapfrog's kick and drift, momentum draws from each chain's Philox stream,
// and per-chain dot products. The same bodies run on the CPU (one lane per
// chain group), on the emulated backend and on a GPU, so NUTS's arithmetic is
// the same everywhere: each element's value is computed by the same
// expression, and only the order in which a GPU's lanes add a dot product's
// terms differs.
//
// Every body works on the chains [c0, c1) of arrays that hold all chains, and
// skips the chains whose bit in `on` is clear (they wait, in NUTS, while
// other chains finish their trees).
#ifndef LOCKSTEP_KERNELS_CHAIN_VECTORS_HPP
#define LOCKSTEP_KERNELS_CHAIN_VECTORS_HPP

#include <cmath>
#include <cstdint>
#include <vector>

#include "../lanes.hpp"
#include "../rng.hpp"

namespace lockstep {

// One bit per chain, passed by value to kernels (so no upload per launch).
constexpr long max_mask_chains = 4096;
struct ChainMask {
  uint64_t bits[max_mask_chains / 64] = {};
  LS_HD bool operator[](long c) const { return (bits[c >> 6] >> (c & 63)) & 1u; }
  void set(long c, bool on = true) {
    if (on)
      bits[c >> 6] |= uint64_t{1} << (c & 63);
    else
      bits[c >> 6] &= ~(uint64_t{1} << (c & 63));
  }
  bool any() const {
    for (uint64_t b : bits)
      if (b) return true;
    return false;
  }
  long count() const {
    long n = 0;
    for (uint64_t b : bits) n += __builtin_popcountll(b);
    return n;
  }
  static ChainMask all(long chains) {
    ChainMask m;
    for (long c = 0; c < chains; ++c) m.set(c);
    return m;
  }
  // The chains where flags[c] is nonzero.
  static ChainMask where(const std::vector<int>& flags) {
    ChainMask m;
    for (long c = 0; c < static_cast<long>(flags.size()); ++c)
      if (flags[c]) m.set(c);
    return m;
  }
};

// Calls f(k) for each flat index k = c * dim + i of the chains in [c0, c1)
// that `on` holds: one lane loops over the rows (skipping masked chains
// whole); many lanes stride over the elements.
template <class F>
LS_HD void for_each_masked(const Lane& lane, const ChainMask& on, long c0, long c1, long dim,
                           F&& f) {
  if (lane.count == 1) {
    for (long c = c0; c < c1; ++c) {
      if (!on[c]) continue;
      const long base = c * dim;
      for (long i = 0; i < dim; ++i) f(base + i);
    }
    return;
  }
  for_each_element(lane, c1 - c0, dim, [&](long k, long c, long) {
    if (on[c0 + c]) f(c0 * dim + k);
  });
}

// Bodies with one phase and no shared scratch.
struct SimpleBody {
  int phases = 1;
  int shared_per_lane = 0;
};

// dst = src (src null: dst = value).
struct RowsCopy : SimpleBody {
  double* dst;
  const double* src;
  double value;
  ChainMask on;
  long c0, c1, dim;
  LS_HD void operator()(int, const Lane& lane) const {
    if (src)
      for_each_masked(lane, on, c0, c1, dim, [&](long k) { dst[k] = src[k]; });
    else
      for_each_masked(lane, on, c0, c1, dim, [&](long k) { dst[k] = value; });
  }
};

// dst = a + s b (s = 1 or -1 make a + b and a - b exactly).
struct RowsAdd : SimpleBody {
  double* dst;
  const double *a, *b;
  double s;
  ChainMask on;
  long c0, c1, dim;
  LS_HD void operator()(int, const Lane& lane) const {
    for_each_masked(lane, on, c0, c1, dim, [&](long k) { dst[k] = a[k] + s * b[k]; });
  }
};

// dst[k] += src[k] for k < n, over whole arrays: a later shard's partial log
// densities or gradient added to the first shard's (the multi-GPU executor
// without NCCL), in shard order.
struct AddPartial : SimpleBody {
  double* dst;
  const double* src;
  long n;
  LS_HD void operator()(int, const Lane& lane) const {
    for (long k = lane.index; k < n; k += lane.count) dst[k] += src[k];
  }
};

// The leapfrog's momentum half step and position step, in one pass:
//   p += kick g;  x_out = x_in + eps m p,
// with kick and eps negated on the chains in `back` (moving backward in time).
// x_out may be x_in. With drift false, only the kick.
struct KickDrift : SimpleBody {
  double *x_out, *p;
  const double *x_in, *g, *m;
  double kick, eps;
  bool drift;
  ChainMask on, back;
  long c0, c1, dim;
  LS_HD void operator()(int, const Lane& lane) const {
    if (lane.count == 1) {  // per row, so the signs are hoisted out of the loop
      for (long c = c0; c < c1; ++c) {
        if (!on[c]) continue;
        const double k = back[c] ? -kick : kick, e = back[c] ? -eps : eps;
        const long base = c * dim;
        if (drift)
          for (long i = base; i < base + dim; ++i) {
            p[i] += k * g[i];
            x_out[i] = x_in[i] + e * m[i] * p[i];
          }
        else
          for (long i = base; i < base + dim; ++i) p[i] += k * g[i];
      }
      return;
    }
    for_each_masked(lane, on, c0, c1, dim, [&](long i) {
      const bool b = back[i / dim];
      p[i] += (b ? -kick : kick) * g[i];
      if (drift) x_out[i] = x_in[i] + (b ? -eps : eps) * m[i] * p[i];
    });
  }
};

// p ~ N(0, diag(1 / sd^2)) for every chain: p_i = n_i / sd_i, the normals in
// pairs from the chain's stream (streams[c], purpose set by the caller) at
// positions position, position + 1, ...: the same numbers as drawing them one
// pair after another. The caller advances each stream by (dim + 1) / 2.
struct MomentumDraw : SimpleBody {
  double* p;
  const double* sd;
  const Stream* streams;  // [chains], in the memory the body runs in
  long c0, c1, dim;
  LS_HD void operator()(int, const Lane& lane) const {
    const long pairs = (dim + 1) / 2;
    for_each_element(lane, c1 - c0, pairs, [&](long, long cc, long j) {
      const long c = c0 + cc, i = c * dim + 2 * j;
      Stream s = streams[c];
      s.position += static_cast<uint64_t>(j);
      double a, b;
      s.normal2(&a, &b);
      p[i] = a / sd[i];
      if (2 * j + 1 < dim) p[i + 1] = b / sd[i + 1];
    });
  }
};

// MomentumDraw on a rank that holds some coordinates of a state of more
// (sampler/owned_vectors.hpp): coordinate i here is coordinate full_index[i]
// of the whole state and gets the normal that one holds in one process (pair
// full_index[i] / 2's, first or second), so that the ranks together draw what
// one process draws. The caller advances each stream by (full dim + 1) / 2.
struct MomentumDrawMapped : SimpleBody {
  double* p;
  const double* sd;
  const Stream* streams;
  const long* full_index;  // [dim]
  long c0, c1, dim;
  LS_HD void operator()(int, const Lane& lane) const {
    for_each_element(lane, c1 - c0, dim, [&](long, long cc, long i) {
      const long c = c0 + cc, k = c * dim + i;
      p[k] = streams[c].normal_at(static_cast<uint64_t>(full_index[i])) / sd[k];
    });
  }
};

// dst[c, i] = the mean of src[., i] over the chains in `from` (`count` of
// them, at least one), for every chain c: summed in chain order, src / count
// term by term. One lane per element (the chains of an element are one
// lane's loop, in order).
struct ChainMean : SimpleBody {
  double* dst;
  const double* src;
  ChainMask from;
  long count, chains, dim;
  LS_HD void operator()(int, const Lane& lane) const {
    for (long i = lane.index; i < dim; i += lane.count) {
      double s = 0;
      for (long c = 0; c < chains; ++c)
        if (from[c]) s += src[c * dim + i] / static_cast<double>(count);
      for (long c = 0; c < chains; ++c) dst[c * dim + i] = s;
    }
  }
};

// Welford's running mean and sum of squared deviations over a window of
// draws: pooled, the state of every chain in `from` in turn into row 0 (the
// count going n0 + 1, n0 + 2, ... over those chains, in chain order; one lane
// per element), or per chain, each chain's state into its own row (the count
// n0 + 1; `from` is not read).
struct WindowUpdate : SimpleBody {
  double *mean, *m2;
  const double* x;
  double n0;
  bool pooled;
  ChainMask from;
  long chains, dim;
  LS_HD void operator()(int, const Lane& lane) const {
    if (pooled) {
      for (long i = lane.index; i < dim; i += lane.count) {
        double n = n0;
        for (long c = 0; c < chains; ++c)
          if (from[c]) add(i, x[c * dim + i], n += 1);
      }
    } else {
      for_each_element(lane, chains, dim, [&](long k, long, long) { add(k, x[k], n0 + 1); });
    }
  }
  LS_HD void add(long k, double v, double n) const {
    const double d = v - mean[k];
    mean[k] += d / n;
    m2[k] += d * (v - mean[k]);
  }
};

// The metric from a window's sums of squared deviations m2 of n draws, with
// Stan's regularisation towards 1e-3 (so that a short window cannot collapse a
// scale): sd = sqrt(n / (n + 5) var + 1e-3 * 5 / (n + 5)) and sd2 = sd^2, in
// every row, from m2's row 0 (pooled) or each row's own.
struct MetricFromWindow : SimpleBody {
  double *sd, *sd2;
  const double* m2;
  double n;
  bool pooled;
  long chains, dim;
  LS_HD void operator()(int, const Lane& lane) const {
    for_each_element(lane, chains, dim, [&](long k, long, long i) {
      const double var = m2[pooled ? i : k] / (n - 1);
      sd[k] = sqrt((n / (n + 5)) * var + 1e-3 * (5 / (n + 5)));
      sd2[k] = sd[k] * sd[k];
    });
  }
};

// One sum per chain over its elements i, of (m the inverse mass):
//   product                   (m_i a_i)(b_i + c_i), or (m_i a_i) b_i when c is null
//   square                    (a_i b_i)^2            (kinetic energy: a = p, b = sd)
//   scaled_square_difference  ((a_i - b_i) / c_i)^2  (a distance in the metric)
//   difference_product        (a_i - b_i) m_i c_i
enum class DotKind : int { product, square, scaled_square_difference, difference_product };
struct DotSpec {
  const double *a, *b, *c;
  DotKind kind;
};

// The term of a ChainSum (chain_sum.hpp) over `n` DotSpecs of the chains
// [c0, c1): its "chain" index t = (c - c0) * n + s, so that out[t] is chain
// c's result for spec s. Masked chains add nothing.
struct DotTerm {
  static constexpr int max_specs = 6;
  DotSpec specs[max_specs];
  int n;
  const double* m;
  ChainMask on;
  long c0, dim;
  // Coordinates below counted_from add nothing (a rank's replicated global
  // coordinates, counted by rank 0 alone: sampler/owned_vectors.hpp).
  long counted_from = 0;
  static DotTerm make(const DotSpec* specs, int n, const double* m, const ChainMask& on,
                      long dim) {
    DotTerm t{};
    for (int s = 0; s < n; ++s) t.specs[s] = specs[s];
    t.n = n;
    t.m = m;
    t.on = on;
    t.c0 = 0;
    t.dim = dim;
    return t;
  }
  LS_HD double operator()(long t, long i) const {
    const long c = c0 + t / n;
    if (!on[c] || i < counted_from) return 0;
    const DotSpec& s = specs[t % n];
    const long k = c * dim + i;
    switch (s.kind) {
      case DotKind::square: {
        const double v = s.a[k] * s.b[k];
        return v * v;
      }
      case DotKind::scaled_square_difference: {
        const double v = (s.a[k] - s.b[k]) / s.c[k];
        return v * v;
      }
      case DotKind::difference_product:
        return (s.a[k] - s.b[k]) * m[k] * s.c[k];
      default:
        return m[k] * s.a[k] * (s.c ? s.b[k] + s.c[k] : s.b[k]);
    }
  }
};

// NUTS's three U-turn checks when a subtree's right sibling is merged with its
// stored left sibling (Stan's checks across merged subtrees), fused into one
// pass that reads each vector once and forms the rhos on the fly:
//   right_rho = S - prefix,  both = left_rho + right_rho,
//   (m left_begin) both, (m p) both,
//   (m left_begin)(left_rho + right_begin), (m right_begin)(left_rho + right_begin),
//   (m left_end)(right_rho + left_end), (m p)(right_rho + left_end).
// Written with the same expressions as the DotKind::product sums of the
// same checks, so the sums are the same numbers. The term of a ChainSum with
// five slots over the chains [c0, ...): chain c's six sums go to
// out[c * 6, c * 6 + 6), the first (the ChainSum's value, out stride 6) then
// the five slots.
// A null prefix is S - p (inline_prefix()): the right sibling is the newest
// leaf alone, whose prefix NUTS does not store (its block of one leaf starts
// and ends in the same pass).
struct SubtreeVectors {
  const double *S, *prefix, *left_rho, *left_begin, *p, *right_begin, *left_end;
};

// The rho prefix before the newest leaf, from the subtree's rho S after it
// and the leaf's momentum p: the expression NUTS stored as a level's prefix
// when it wrote one for every leaf, so the numbers are the same.
LS_HD double inline_prefix(double S, double p) { return S + -1.0 * p; }

// Element k's terms of the six sums with the prefix `prefix` (v.prefix is
// not read): the first returned, the other five added to sums[0, 5).
LS_HD double subtree_check_terms_at(const SubtreeVectors& v, const double* m, long k,
                                    double prefix, double* sums) {
  const double right_rho = v.S[k] - prefix, both = v.left_rho[k] + right_rho;
  const double left = v.left_rho[k] + v.right_begin[k], right = right_rho + v.left_end[k];
  sums[0] += m[k] * v.p[k] * both;
  sums[1] += m[k] * v.left_begin[k] * left;
  sums[2] += m[k] * v.right_begin[k] * left;
  sums[3] += m[k] * v.left_end[k] * right;
  sums[4] += m[k] * v.p[k] * right;
  return m[k] * v.left_begin[k] * both;
}

// Element k's terms of the six sums: the first returned, the other five
// added to sums[0, 5).
LS_HD double subtree_check_terms(const SubtreeVectors& v, const double* m, long k,
                                 double* sums) {
  const double prefix = v.prefix ? v.prefix[k] : inline_prefix(v.S[k], v.p[k]);
  return subtree_check_terms_at(v, m, k, prefix, sums);
}

struct SubtreeChecksTerm {
  SubtreeVectors v;
  const double* m;
  ChainMask on;
  long c0, dim;
  double* out;  // [chains, 6], added to
  long counted_from = 0;  // as DotTerm's
  LS_HD int slots() const { return 5; }
  LS_HD double operator()(long t, long i) const {
    double sums[5] = {0, 0, 0, 0, 0};
    return (*this)(t, i, sums);
  }
  LS_HD double operator()(long t, long i, double* sums) const {
    const long c = c0 + t;
    if (!on[c] || i < counted_from) return 0;
    return subtree_check_terms(v, m, c * dim + i, sums);
  }
  LS_HD void add_sum(long t, int slot, double total) const {
    lane_add(out + (c0 + t) * 6 + 1 + slot, total);
  }
};

// What NUTS does with a new leaf once its gradient is known, in one pass
// over the vectors instead of one pass per operation (LeafTerm):
//   p += kick g (kick negated on the chains moving backward in time; p =
//   p_from + kick g when p_from is not null, which leaves p_from as it was),
//   the kinetic energy's sum (p sd)^2,
//   S += p (the subtree's rho so far), first = p (the subtree's first leaf),
//   begin[j] = p and prefix[j] = S - p for the blocks of leaves this leaf
//   starts (levels j), left_end = p and left_rho = S - left_prefix for the
//   left sibling this leaf completes (none when left_rho is null; no
//   left_end when it is null, left_prefix S - p, inline_prefix(), when it
//   is null), and the six merge-check sums (SubtreeChecksTerm's) of each
//   right sibling this leaf completes (check[j]: their S and p are this S
//   and p; a null prefix is S - p).
// Each value is computed by the same expression as by the separate
// operations (KickDrift, DotKind::square, RowsCopy, RowsAdd, SubtreeChecksTerm),
// so on one lane the results are the same numbers. Writing a start or a
// left store for a chain that then diverges or fails a check changes nothing
// that chain reads again (its tree ends), so they are written for every
// chain in `on`.
struct LeafVectors {
  static constexpr int max_starts = 12, max_checks = 2;
  double* p;
  const double* g;
  double kick;
  const double* sd;
  double* S;
  double* first;  // or nullptr
  const double* p_from = nullptr;  // or nullptr: p itself
  int starts;
  double* begin[max_starts];
  double* prefix[max_starts];
  double* left_end;  // or nullptr
  double* left_rho;  // or nullptr: no left sibling completed
  const double* left_prefix;  // or nullptr: S - p
  int checks;
  SubtreeVectors check[max_checks];
  // Sums per chain: the kinetic energy's, then six per check.
  LS_HD int sums() const { return 1 + 6 * checks; }
};

// The term of a ChainSum with 6 * checks slots over the chains [c0, ...):
// chain c's sums go to out[c * v.sums(), (c + 1) * v.sums()).
struct LeafTerm {
  LeafVectors v;
  const double* m;
  ChainMask on, back;
  long c0, dim;
  double* out;  // [chains, v.sums()], added to
  // Coordinates below counted_from are updated but add nothing to the sums
  // (as DotTerm's).
  long counted_from = 0;
  LS_HD int slots() const { return 6 * v.checks; }
  LS_HD double operator()(long t, long i) const {
    double sums[6 * LeafVectors::max_checks] = {};
    return (*this)(t, i, sums);
  }
  LS_HD double operator()(long t, long i, double* sums) const {
    const long c = c0 + t;
    if (!on[c]) return 0;
    const long k = c * dim + i;
    v.p[k] = (v.p_from ? v.p_from[k] : v.p[k]) + (back[c] ? -v.kick : v.kick) * v.g[k];
    const double p = v.p[k], e = p * v.sd[k];
    const double S = v.S[k] + 1.0 * p;
    v.S[k] = S;
    if (v.first) v.first[k] = p;
    for (int j = 0; j < v.starts; ++j) {
      v.begin[j][k] = p;
      v.prefix[j][k] = S + -1.0 * p;
    }
    const bool counted = i >= counted_from;
    for (int j = 0; j < v.checks && counted; ++j)
      sums[6 * j] += subtree_check_terms(v.check[j], m, k, sums + 6 * j + 1);
    if (v.left_rho) {
      if (v.left_end) v.left_end[k] = p;
      v.left_rho[k] = S + -1.0 * (v.left_prefix ? v.left_prefix[k] : inline_prefix(S, p));
    }
    return counted ? e * e : 0.0;
  }
#if !defined(__CUDA_ARCH__)
  // The CPU's loop over one chain (ChainSum calls it on one lane): the same
  // expressions and the same order of each sum's terms as operator(), in
  // chunks of elements small enough to stay in cache, operation by operation
  // within a chunk, so that the loops vectorise (element by element, the
  // pass was a third of a NUTS step of the seed model).
  LS_CPU_VECTORISE double sum_chain_with_slots(long t, long size, double* sums) const {
    const long c = c0 + t;
    if (!on[c]) return 0;
    const double kick = back[c] ? -v.kick : v.kick;
    const long base = c * dim;
    double* p = v.p + base;
    const double* p_from = v.p_from ? v.p_from + base : p;
    double* S = v.S + base;
    const double* g = v.g + base;
    const double* sd = v.sd + base;
    double kinetic = 0;
    constexpr long chunk = 512;
    // The null prefixes' S - p, a chunk at a time (a branch in the loops
    // would stop them vectorising): the checks' and the left store's, at
    // base + i of the arrays they read.
    double inline_prefixes[chunk];
    const double* left_prefix = v.left_prefix ? v.left_prefix + base : nullptr;
    const bool inline_needed = (v.left_rho && !left_prefix) ||
                               (v.checks > 0 && !v.check[0].prefix) ||
                               (v.checks > 1 && !v.check[1].prefix);
    for (long i0 = 0; i0 < size; i0 += chunk) {
      const long n = size - i0 < chunk ? size - i0 : chunk;
      for (long i = i0; i < i0 + n; ++i) p[i] = p_from[i] + kick * g[i];
      const long from = i0 < counted_from ? counted_from : i0;
      for (long i = from; i < i0 + n; ++i) {
        const double e = p[i] * sd[i];
        kinetic += e * e;
      }
      for (long i = i0; i < i0 + n; ++i) S[i] = S[i] + 1.0 * p[i];
      if (v.first)
        for (long i = i0; i < i0 + n; ++i) v.first[base + i] = p[i];
      for (int j = 0; j < v.starts; ++j) {
        double* begin = v.begin[j] + base;
        double* prefix = v.prefix[j] + base;
        for (long i = i0; i < i0 + n; ++i) {
          begin[i] = p[i];
          prefix[i] = S[i] + -1.0 * p[i];
        }
      }
      if (inline_needed)
        for (long i = 0; i < n; ++i) inline_prefixes[i] = inline_prefix(S[i0 + i], p[i0 + i]);
      for (int j = 0; j < v.checks; ++j) {
        // the check's arrays from this chunk's first element on
        const SubtreeVectors& w = v.check[j];
        const long at = base + i0;
        const SubtreeVectors here{w.S + at,           w.prefix ? w.prefix + at : inline_prefixes,
                                  w.left_rho + at,    w.left_begin + at,
                                  w.p + at,           w.right_begin + at,
                                  w.left_end + at};
        double acc[6];
        for (int s = 0; s < 6; ++s) acc[s] = sums[6 * j + s];
        for (long i = from - i0; i < n; ++i)
          acc[0] += subtree_check_terms_at(here, m + at, i, here.prefix[i], acc + 1);
        for (int s = 0; s < 6; ++s) sums[6 * j + s] = acc[s];
      }
      if (v.left_rho) {
        double* left_rho = v.left_rho + base + i0;
        const double* prefix = left_prefix ? left_prefix + i0 : inline_prefixes;
        if (v.left_end) {
          double* left_end = v.left_end + base;
          for (long i = i0; i < i0 + n; ++i) left_end[i] = p[i];
        }
        for (long i = 0; i < n; ++i) left_rho[i] = S[i0 + i] + -1.0 * prefix[i];
      }
    }
    return kinetic;
  }
#endif
  LS_HD void add_sum(long t, int slot, double total) const {
    // slot 6 j is check j's first sum, 6 j + 1 ... its other five
    lane_add(out + (c0 + t) * v.sums() + 1 + slot, total);
  }
};

}  // namespace lockstep

#endif
