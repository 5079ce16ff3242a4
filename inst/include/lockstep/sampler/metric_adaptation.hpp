// Warmup's metric (Stan's windowed_adaptation with its variance and
// covariance estimators): the draws of each of Stan's windows
// (warmup_schedule.hpp) summed by Welford's method, and at a window's end a
// new metric from them, regularised towards 1e-3 as Stan does. A diagonal
// metric's sums live in the sampler's vectors (chain_vectors.hpp: on a GPU,
// where the state is); a dense metric's co-moments (dense_metric.hpp) on the
// host.
//
// Pooled (the default), the draws of the chains that steer warmup
// (Sampler::steering_chains()) go into one window, and every chain gets the
// one metric; per chain, each chain's draws into its own row (Stan's
// behaviour: a chain stuck in its own mode or scale gets a metric that fits
// it). Sums are [chains, dim] either way (pooled: row 0).
#ifndef LOCKSTEP_SAMPLER_METRIC_ADAPTATION_HPP
#define LOCKSTEP_SAMPLER_METRIC_ADAPTATION_HPP

#include <cstddef>
#include <vector>

#include "chain_vectors.hpp"
#include "dense_metric.hpp"
#include "../saved_state.hpp"
#include "warmup_schedule.hpp"

namespace lockstep {

class MetricAdaptation {
 public:
  MetricAdaptation(long chains, long dim, bool per_chain)
      : C_(chains), D_(dim), per_chain_(per_chain) {}

  bool per_chain() const { return per_chain_; }

  // Starts over for a warmup of `warmup` iterations; a diagonal metric's sums
  // are made in `v` on first use, and zeroed.
  void begin(long warmup, ChainVectors& v);
  // From now on the metric is `dense`: its sums on the host, zeroed (and,
  // for a metric chosen automatically, the gradients' products too): co-
  // moments of its dense coordinates, and sums of squares of the others.
  void use_dense(const DenseMetric& dense);

  // Whether warmup iteration `done` (1-based, just made) is still in the
  // initial buffer, before the first window.
  bool in_initial_buffer(long done) const { return done < schedule_.first_window_start; }
  // Whether the draws of warmup iteration `done` (1-based) go into a window.
  bool in_window(long done) const {
    return next_window_ < schedule_.window_ends.size() && done > schedule_.first_window_start;
  }
  // Whether warmup iteration `done` ends the current window.
  bool window_ends(long done) const { return done == schedule_.window_ends[next_window_]; }

  // Adds the chains' states to the window: those of the chains in `from`
  // (pooled) or every chain's to its own row (per chain). Diagonal: the
  // states x_v in `v`; dense: the states x ([chains, dim], the metric's
  // coordinates) and, for a metric chosen automatically, their gradients
  // `grad` (nullptr otherwise).
  void add_diagonal(ChainVectors& v, const double* x_v, const ChainMask& from);
  void add_dense(const double* x, const double* grad, const ChainMask& from);

  // Ends the window: the new diagonal metric's sd and inverse mass sd^2
  // into sd_v and m_v (in `v`); or the dense metric's new factor, which
  // moves the states x to its coordinates (DenseMetric::adapt()). The sums
  // start again, for the next window.
  void end_diagonal(ChainVectors& v, double* sd_v, double* m_v);
  void end_dense(DenseMetric& dense, double* x);

  // Its state, to save and restore (sampler_state.hpp): the window reached
  // and, with `sums` (warmup not over), the current window's sums (a
  // diagonal metric's from `v`). restore() follows begin() of the same
  // warmup, which makes the schedule.
  void save(SavedState& s, ChainVectors& v, bool sums) const;
  void restore(const SavedState& s, ChainVectors& v);

 private:
  long C_, D_;
  bool per_chain_;
  WarmupSchedule schedule_;
  size_t next_window_ = 0;
  // draws in the current window, per row (pooled: chains per iteration)
  long window_n_ = 0;
  // Welford sums of a diagonal metric's window, [chains, dim] in vectors()
  double *window_mean_v_ = nullptr, *window_m2_v_ = nullptr;
  // A dense metric's, over its g dense coordinates `dense_` (of dim): [1 or
  // chains, g] means, [1 or chains, g, g] co-moments, and for a metric
  // chosen automatically the gradients' sums of squares and products, [1 or
  // chains, g, g]; the other coordinates' means and sums of squares, [1 or
  // chains, dim] (read at those coordinates alone).
  std::vector<long> dense_, rest_;
  std::vector<double> dense_mean_, dense_m2_, dense_g2_, rest_mean_, rest_m2_;
};

}  // namespace lockstep

#endif
