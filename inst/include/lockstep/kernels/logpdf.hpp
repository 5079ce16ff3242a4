// The logpdf op: a distribution's log density at each element of its target,
// as a value of the target's shape instead of a summed term, for densities that
// R combines elementwise (mixture(): a log-sum-exp over components' log
// densities; joint(): one family per column). The math is the family's own
// (truncated_lpdf_of, distributions.hpp); only the way out differs from a
// density term: the backward pass scales each element's partials by the
// output's adjoint at that element, where a term's adjoint is always one.
#ifndef LOCKSTEP_KERNELS_LOGPDF_HPP
#define LOCKSTEP_KERNELS_LOGPDF_HPP

#include "../distributions.hpp"
#include "elementwise.hpp"
#include "running_sums.hpp"

namespace lockstep {

// Inputs of one call: the target x (the output's shape) and the family's
// parameters, each the output's shape or one value.
template <class T> struct LogpdfInputs {
  Family family;
  double lower, upper;  // truncation (infinite: none)
  Operand<T> x;
  Operand<T> p[max_dist_params];

  // Untruncated: both bounds infinite.
  LS_HD bool untruncated() const { return ls_isinf(lower) && ls_isinf(upper); }

  // What element() prepared for the chain it saw last (dist.hpp's
  // PreparedCursor): on lanes (a GPU, the emulated backend) the family's
  // parameter-only math is done once per chain and lane.
  template <Family F> using Cursor = PreparedCursor<Dist<F>>;

  // Calls g(k, c, i, lp, gx, gp, n_params) at every element this lane owns:
  // the family's log density lp there and its partials gx (target) and gp
  // (parameters), the family chosen once, outside the loop.
  template <class G>
  LS_HD void each(const Lane& lane, long chains, long size, G&& g) const {
    with_family(family, [&](auto tag) {
      Cursor<decltype(tag)::value> cursor{};
      for_each_element(lane, chains, size, [&](long k, long c, long i) {
        element<decltype(tag)::value>(k, c, i, g, cursor);
      });
    });
  }
  // The same over chain c's elements alone (a phase of LogpdfBackward's
  // block sums).
  template <class G>
  LS_HD void each_of_chain(const Lane& lane, long c, long size, G&& g) const {
    with_family(family, [&](auto tag) {
      Cursor<decltype(tag)::value> cursor{};
      for (long i = lane.index; i < size; i += lane.count)
        element<decltype(tag)::value>(c * size + i, c, i, g, cursor);
    });
  }
  template <Family F, class G>
  LS_HD void element(long k, long c, long i, G& g, Cursor<F>& cursor) const {
    using D = Dist<F>;
    constexpr int n_params = D::n_params;
    double pv[max_dist_params] = {0}, gx = 0, gp[max_dist_params] = {0};
    if constexpr (has_prepared<D>::value) {
      if (cursor.c != c) cursor.move_to(c, untruncated(), p);
      if (cursor.prepared) {
        const double location = static_cast<double>(p[location_param<D>()].at(c, i));
        const double lp = D::lpdf(static_cast<double>(x.at(c, i)), location, cursor.q, &gx, gp);
        g(k, c, i, lp, gx, gp, n_params);
        return;
      }
    }
    for (int j = 0; j < n_params; ++j) pv[j] = static_cast<double>(p[j].at(c, i));
    const double lp =
        truncated_lpdf_of<F>(static_cast<double>(x.at(c, i)), pv, lower, upper, &gx, gp);
    g(k, c, i, lp, gx, gp, n_params);
  }

#if !defined(__CUDA_ARCH__)
  // The CPU's one lane: chain by chain, `chunk` elements at a time, the
  // operands first copied into local double arrays (a scalar spread) so that
  // the loop over the family's math is a plain one the compiler vectorises
  // (as density terms' loops are, kernels/density.hpp). Where the family
  // prepares (dist.hpp), the term is untruncated and every parameter is one
  // value per chain but for a location that may vary (a mixture's
  // normal(mu[k], sigma) components), the parameter-only math (log sd) is
  // done once per chain instead of once per element.
  static constexpr long chunk = 256;
  struct Chunk {
    double x[chunk], p[max_dist_params][chunk];
    double lp[chunk], gx[chunk], gp[max_dist_params][chunk];
  };

  // lp, gx and gp of elements [0, n) of the chunk from its x and p.
  template <Family F, bool Prep>
  LS_CPU_VECTORISE static void chunk_math(Chunk& w, long n, const double* pv, double lower,
                                          double upper) {
    using D = Dist<F>;
    if constexpr (Prep && has_prepared<D>::value) {
      const typename D::Prepared q0 = D::prepare(pv);
      const double* location = w.p[location_param<D>()];
      for (long i = 0; i < n; ++i) {
        double gp[max_dist_params] = {0};
        w.lp[i] = D::lpdf(w.x[i], location[i], q0, &w.gx[i], gp);
        for (int j = 0; j < D::n_params; ++j) w.gp[j][i] = gp[j];
      }
    } else {
      for (long i = 0; i < n; ++i) {
        double pi[max_dist_params] = {0}, gp[max_dist_params] = {0};
        for (int j = 0; j < D::n_params; ++j) pi[j] = w.p[j][i];
        w.lp[i] = truncated_lpdf_of<F>(w.x[i], pi, lower, upper, &w.gx[i], gp);
        for (int j = 0; j < D::n_params; ++j) w.gp[j][i] = gp[j];
      }
    }
  }

  // Calls h(c, first, n, w) for each chunk of each chain, w holding its
  // elements [first, first + n)'s lp and partials, then done(c) after each
  // chain.
  template <class H, class Done> void each_chunk(long chains, long size, H&& h, Done&& done) const {
    Chunk w;
    with_family(family, [&](auto tag) {
      constexpr Family F = decltype(tag)::value;
      using D = Dist<F>;
      const bool prep = prepares<D>(untruncated(), p);
      for (long c = 0; c < chains; ++c) {
        double pv[max_dist_params] = {0};
        for (int j = 0; j < D::n_params; ++j) pv[j] = static_cast<double>(p[j].at(c, 0));
        for (long first = 0; first < size; first += chunk) {
          const long n = size - first < chunk ? size - first : chunk;
          for (long i = 0; i < n; ++i) w.x[i] = static_cast<double>(x.at(c, first + i));
          for (int j = 0; j < D::n_params; ++j)
            for (long i = 0; i < n; ++i) w.p[j][i] = static_cast<double>(p[j].at(c, first + i));
          if (prep) chunk_math<F, true>(w, n, pv, lower, upper);
          else chunk_math<F, false>(w, n, pv, lower, upper);
          h(c, first, n, w, D::n_params);
        }
        done(c);
      }
    });
  }
#endif
};

template <class T> struct LogpdfForward {
  LogpdfInputs<T> in;
  T* y;
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
#if !defined(__CUDA_ARCH__)
    if (lane.count == 1) {
      using Chunk = typename LogpdfInputs<T>::Chunk;
      in.each_chunk(
          chains, size,
          [&](long c, long first, long n, const Chunk& w, int) {
            T* yc = y + c * size + first;
            for (long i = 0; i < n; ++i) yc[i] = static_cast<T>(w.lp[i]);
          },
          [](long) {});
      return;
    }
#endif
    in.each(lane, chains, size, [&](long k, long, long, double lp, double, const double*, int) {
      y[k] = static_cast<T>(lp);
    });
  }
};

// dy[k] times each partial into the target's and parameters' adjoints (sinks
// of broadcast operands sum over the elements, as the elementwise ops' do).
template <class T> struct LogpdfBackward {
  LogpdfInputs<T> in;
  const T* dy;
  AdjointSink<T> dx;
  AdjointSink<T> dp[max_dist_params];
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  // Where each operand's partials are summed with several lanes: a block-
  // shared slot per scalar operand (slot[0]: the target's, slot[1 + j]:
  // parameter j's; -1: added element by element). Every element adds to a
  // scalar operand's adjoint (a mixture component's sd, one per chain): one
  // atomic each would queue every lane of a GPU on one address, as the
  // elementwise ops' did before their block sums (kernels/elementwise.hpp).
  // With slots the lanes go through the chains one by one, two phases each:
  // in phase 2c they add chain c's partials into their slots, in phase
  // 2c + 1 each slot's block total is added with one atomic. Set by
  // with_block_sums().
  int slot[1 + max_dist_params] = {-1, -1, -1, -1};

  LS_HD LogpdfBackward& with_block_sums() {
    int slots = 0;
    slot[0] = dx.data && dx.scalar ? slots++ : -1;
    for (int j = 0; j < max_dist_params; ++j)
      slot[1 + j] = dp[j].data && dp[j].scalar ? slots++ : -1;
    if (slots > 0) {
      phases = static_cast<int>(2 * chains);
      shared_per_lane = slots;
    }
    return *this;
  }

  LS_HD void operator()(int phase, const Lane& lane) const {
#if !defined(__CUDA_ARCH__)
    if (lane.count == 1) {
      if (phase == 0) serial();  // everything in phase 0
      return;
    }
#endif
    if (phases > 1) return block_sums(phase, lane);
    in.each(lane, chains, size,
            [&](long k, long c, long i, double, double gx, const double* gp, int n_params) {
              const double g = static_cast<double>(dy[k]);
              // a zero adjoint adds nothing, and must not turn an infinite
              // partial (an element outside a truncation) into NaN
              if (g == 0) return;
              if (dx.data) dx.add(c, i, static_cast<T>(g * gx));
              for (int j = 0; j < n_params; ++j)
                if (dp[j].data) dp[j].add(c, i, static_cast<T>(g * gp[j]));
            });
  }

  LS_HD void block_sums(int phase, const Lane& lane) const {
    const long c = phase / 2;
    double* mine = lane.shared + static_cast<long>(lane.in_block) * shared_per_lane;
    if (phase % 2 == 0) {
      for (int k = 0; k < shared_per_lane; ++k) mine[k] = 0;
      auto add = [&](long k, long, long i, double, double gx, const double* gp, int n_params) {
        const double g = static_cast<double>(dy[k]);
        if (g == 0) return;  // as above
        if (slot[0] >= 0) mine[slot[0]] += g * gx;
        else if (dx.data) dx.add(c, i, static_cast<T>(g * gx));
        for (int j = 0; j < n_params; ++j) {
          if (slot[1 + j] >= 0) mine[slot[1 + j]] += g * gp[j];
          else if (dp[j].data) dp[j].add(c, i, static_cast<T>(g * gp[j]));
        }
      };
      in.each_of_chain(lane, c, size, add);
    } else {
      for (long k = lane.in_block; k < shared_per_lane; k += lane.lanes_in_block) {
        double total = 0;
        for (int t = 0; t < lane.lanes_in_block; ++t) total += lane.shared[t * shared_per_lane + k];
        if (slot[0] == k) dx.add(c, 0, static_cast<T>(total));
        for (int j = 0; j < max_dist_params; ++j)
          if (slot[1 + j] == k) dp[j].add(c, 0, static_cast<T>(total));
      }
    }
  }
#if !defined(__CUDA_ARCH__)
  // The CPU's one lane, chunk by chunk (LogpdfInputs::each_chunk): an adjoint
  // per element is added to as it goes; a scalar operand's, which every
  // element adds to, is summed in a local double per chain and added once
  // (added element by element, each addition waits for the one before).
  void serial() const {
    using Chunk = typename LogpdfInputs<T>::Chunk;
    double sum_x = 0, sum_p[max_dist_params] = {0};
    // g times a partial, zero where g is (a zero adjoint adds nothing, and
    // must not turn an infinite partial, outside a truncation, into NaN)
    auto scaled = [](double g, double partial) { return g == 0 ? 0.0 : g * partial; };
    auto add = [&](const AdjointSink<T>& sink, double& sum, long c, long first, long n,
                   const T* dyc, const double* partial) {
      if (!sink.data) return;
      if (sink.scalar) {
        sum += detail::running_sum(n, [&](long i) {
          return scaled(static_cast<double>(dyc[i]), partial[i]);
        });
      } else {
        T* d = sink.data + c * sink.chain_stride + first;
        for (long i = 0; i < n; ++i)
          d[i] += static_cast<T>(scaled(static_cast<double>(dyc[i]), partial[i]));
      }
    };
    in.each_chunk(
        chains, size,
        [&](long c, long first, long n, const Chunk& w, int n_params) {
          const T* dyc = dy + c * size + first;
          add(dx, sum_x, c, first, n, dyc, w.gx);
          for (int j = 0; j < n_params; ++j) add(dp[j], sum_p[j], c, first, n, dyc, w.gp[j]);
        },
        [&](long c) {
          if (dx.data && dx.scalar) dx.add(c, 0, static_cast<T>(sum_x));
          for (int j = 0; j < max_dist_params; ++j) {
            if (dp[j].data && dp[j].scalar) dp[j].add(c, 0, static_cast<T>(sum_p[j]));
            sum_p[j] = 0;
          }
          sum_x = 0;
        });
  }
#endif
};

}  // namespace lockstep

#endif
