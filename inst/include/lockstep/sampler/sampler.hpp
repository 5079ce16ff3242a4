// What every sampler of lockstep shares, in the decomposition of Stan's
// src/stan/mcmc: this base (the state, the metric, warmup's driver, chain
// groups, interrupts), the Hamiltonian samplers' own base
// (hamiltonian_sampler.hpp: momenta, the leapfrog integrator, the
// Metropolis step, the step size search), NUTS's trajectory builder
// (nuts_trajectory.hpp), and warmup's adaptation of the step size
// (step_size_adaptation.hpp) and of the metric (metric_adaptation.hpp).
// rwmh.hpp and slice.hpp derive from this one; hmc.hpp, nuts.hpp and
// chees.hpp from the Hamiltonian one.
//
// The state is [chains, dim] with its log density and gradient; the metric
// is diagonal (diag_sd, the inverse mass matrix diag_sd^2), or, through a
// dense metric's change of variables (dense_metric.hpp), the identity in
// its coordinates. Random numbers come from each chain's own Philox stream.
//
// All chains step together: one Target::log_density call evaluates every
// chain. Warmup adapts the step size, each chain's own from its acceptance
// statistic (per chain: NUTS's and HMC's default) or one from every chain's
// pooled (shared), and the metric from the draws in Stan's windows (initial
// buffer, doubling windows, terminal buffer): by default pooled over the
// chains (one metric for every chain, steadier with many chains); with
// per_chain_metric, each chain's own.
//
// The pooled metric (and ChEES's criterion) comes from the chains that steer
// warmup (steering_chains()): those whose log density is not far below the
// chains' median. A chain that starts far out in the tails and is still on
// its way in would otherwise stretch the pooled variances to its path, the
// step size would shrink to suit that metric, and with all chains then
// barely moving, the metric would never recover. Stan does not meet this:
// each of its chains adapts alone. The step size still hears every chain
// (StepSizeAdaptation::pooled()).
//
// The metric is stored [chains, dim] in either case (pooled: every row the
// same), so the leapfrog, kinetic energy, momentum draws and U-turn checks
// read chain c's row without branching on the mode, and the pooled
// arithmetic is exactly what it was with one shared [dim] vector.
//
// Per-chain step sizes reach the vectors through that metric, so no vector
// operation (host or GPU) takes more than one step size: a leapfrog step of
// size s e with inverse mass M^-1 from momentum p is, exactly, one of size
// e with inverse mass s^2 M^-1 from momentum p / s (p / s ~ N(0, M / s^2),
// the momenta of that metric, and the kinetic energy, the Hamiltonian and
// the U-turn checks' signs are the same). So chain c's row of the vectors'
// metric is s_c diag_sd_c (step_scale_), its step size s_c epsilon_; the
// host's diag_sd stays the metric itself.
//
// The samplers' vector work (momenta, trajectories, Metropolis moves, the
// step size search, warmup's window sums) runs on the target's ChainVectors
// (chain_vectors.hpp): on a GPU executor, in device memory, with only
// per-chain numbers crossing to the host at each step. The host keeps the
// per-chain decisions and a copy of each iteration's draw (state()).
#ifndef LOCKSTEP_SAMPLER_SAMPLER_HPP
#define LOCKSTEP_SAMPLER_SAMPLER_HPP

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../executor.hpp"
#include "../rng.hpp"
#include "chain_groups.hpp"
#include "chain_vectors.hpp"
#include "dense_metric.hpp"
#include "metric_adaptation.hpp"
#include "../saved_state.hpp"
#include "step_size_adaptation.hpp"

namespace lockstep {

// A chain that warmup found stuck at the end of a metric window and moved
// (Sampler::rescue_stuck_chains()): at which warmup iteration (1-based),
// which chain (0-based), to the state of which (-1: no chain was healthy, it
// stayed), and why: its mean acceptance over the window and its lag (see
// Sampler::lags()).
struct WarmupRescue {
  long iteration, chain, from;
  double accept, lag;
};

// Per chain, what the last iteration did (Stan's sampler diagnostics).
struct IterationStats {
  std::vector<double> accept_stat;  // mean Metropolis acceptance over the trajectory
  std::vector<int> n_leapfrog, tree_depth;
  std::vector<int> divergent;       // 1: the energy error exceeded 1000 (or was not finite)
  std::vector<double> energy;       // the Hamiltonian at the draw
};

// What n iterations drew, for samplers whose chains make several iterations
// without meeting (iterate_apart()): per iteration, every chain's draw
// ([n, chains, dim]) and statistics ([n, chains]).
struct IterationRecord {
  std::vector<double> x, accept_stat, energy;
  std::vector<int> n_leapfrog, tree_depth, divergent;
  // Room for n iterations of `chains` chains of `dim` values.
  void resize(long n, long chains, long dim) {
    x.resize(n * chains * dim);
    for (auto* v : {&accept_stat, &energy}) v->resize(n * chains);
    for (auto* v : {&n_leapfrog, &tree_depth, &divergent}) v->resize(n * chains);
  }
};

// Every chain's statistics in `from` into `to` (IterationStats or
// IterationRecord), from chain row `at` on.
template <class To> void copy_stats(const IterationStats& from, To& to, long at) {
  std::copy(from.accept_stat.begin(), from.accept_stat.end(), to.accept_stat.begin() + at);
  std::copy(from.energy.begin(), from.energy.end(), to.energy.begin() + at);
  std::copy(from.n_leapfrog.begin(), from.n_leapfrog.end(), to.n_leapfrog.begin() + at);
  std::copy(from.tree_depth.begin(), from.tree_depth.end(), to.tree_depth.begin() + at);
  std::copy(from.divergent.begin(), from.divergent.end(), to.divergent.begin() + at);
}

class Sampler {
 public:
  // init: [chains, dim]; every chain must have a finite log density there.
  // `name` prefixes error messages.
  // diag_sd: one value, one per free parameter, or [chains, dim] (one row per
  // chain, as diag_sd() returns it, to restart from a tuned sampler).
  // per_chain_metric: warmup adapts each chain's diag_sd from its own draws
  // rather than one from all chains' draws pooled.
  Sampler(Target& target, double epsilon, const std::vector<double>& diag_sd,
          double target_accept, const std::vector<double>& init, uint32_t key0, uint32_t key1,
          const std::string& name, bool per_chain_metric = false);
  virtual ~Sampler() = default;

  // Prepares adaptation over the next `n` warmup iterations.
  void begin_warmup(long n);
  // With `on`, warmup (begin_warmup() of n > 0 iterations, with a diagonal
  // metric) starts from a diag_sd scaled to the gradient at the chains'
  // current states instead of the one given: see metric_from_gradient().
  void start_metric_from_gradient(bool on) { metric_from_gradient_ = on; }
  // One iteration of every chain; adapts when inside warmup.
  void iterate(bool warmup);

  // A check made before every leapfrog step of a transition but the first of
  // HMC's and ChEES's (nullptr: none), on the thread that calls iterate():
  // once it returns true, the transition's trajectory ends there, as a
  // shorter one would have: NUTS keeps the draw of the subtrees it completed
  // (a tree of smaller maximum depth) and drops the one it was building; HMC
  // and ChEES make their Metropolis step at the point reached. Each is a
  // valid transition (one of a kernel whose length was chosen independently
  // of the state), so its draw counts. A caller polling for a user's
  // interrupt (rcpp_engine.cpp) thus stops after the current iteration
  // without waiting for a trajectory of up to thousands of gradients. Chain
  // groups' transitions, on worker threads, are never cut.
  void set_cut_check(bool (*check)()) { cut_check_ = check; }
  // Whether the last iteration's trajectory was cut short by the check.
  bool was_cut() const { return cut_; }
  // From now on, make each group's transitions on its own thread through its
  // own target (chain_groups.hpp), rather than all chains through this
  // sampler's target; the draws are the same. For samplers that can
  // (can_step_in_groups(): NUTS and HMC).
  void step_in_groups(std::unique_ptr<ChainGroups> groups);
  virtual bool can_step_in_groups() const { return false; }
  // Whether iterate_apart() lets the chains make several iterations without
  // meeting (in chain groups); otherwise it is iterate(false) n times.
  bool steps_apart() const { return groups_ != nullptr; }
  // n iterations without adaptation (sampling), every iteration's draws and
  // statistics into `out`; state(), last() and the tallies as after n calls
  // of iterate(false), with the same draws. In chain groups, each group
  // makes the n iterations on its own.
  void iterate_apart(long n, IterationRecord& out);

  // With a dense metric (use_dense_metric()), the sampler's own coordinates y
  // (state(), and iterate_apart()'s draws) are not the model's: to_model()
  // maps rows of them ([rows, dim], row r chain r % chains) to the model's x;
  // without one it copies.
  void use_dense_metric(DenseMetric& metric);
  const DenseMetric* dense_metric() const { return dense_; }
  void to_model(const double* y, double* x, long rows) const;
  const std::vector<double>& state() const { return x_; }
  const std::vector<double>& log_density() const { return lp_; }
  // The step size of each chain ([chains]; shared: all the same), and of
  // the first chain.
  std::vector<double> step_sizes() const;
  double epsilon() const { return epsilon_ * step_scale_[0]; }
  // Sets them: per chain, each chain's; shared, the first is every chain's.
  // (To restart from a tuned sampler's step_sizes().)
  void set_step_sizes(const std::vector<double>& epsilon);
  // Whether warmup adapts a step size per chain (else one for all chains).
  bool per_chain_step_size() const { return step_size_adaptation_.per_chain(); }
  // [chains, dim], chain-major; with a pooled metric every row is the same.
  const std::vector<double>& diag_sd() const { return sd_; }
  bool per_chain_metric() const { return metric_adaptation_.per_chain(); }
  // Counts the changes of diag_sd (each end of a metric window), so that a
  // copy of it elsewhere (a GPU's) knows when it is stale.
  long metric_version() const { return metric_version_; }
  // Per chain, since construction: accepted proposals, and bad iterations
  // (a divergent trajectory or a non-finite log density).
  const std::vector<long>& accepted() const { return accepted_; }
  const std::vector<long>& bad() const { return bad_; }
  const IterationStats& last() const { return stats_; }
  // Per chain, at the end of warmup: how far its log density lay below the
  // chains' median, in units of lagging_gap() (above 1: the chain had not
  // come in, and did not steer the pooled metric); empty before then.
  const std::vector<double>& lag_at_warmup_end() const { return lag_at_warmup_end_; }
  // Whether warmup moves stuck chains (rescue_stuck_chains(); on unless a
  // sampler's settings turn it off: the Hamiltonian samplers' warmup_rescue).
  void set_warmup_rescue(bool on) { warmup_rescue_ = on; }
  bool warmup_rescue() const { return warmup_rescue_ && rescues_stuck_chains(); }
  // Every chain moved in warmup so far (rescue_stuck_chains()), in order.
  const std::vector<WarmupRescue>& rescues() const { return rescues_; }

  // Between iterations: everything the next iterations depend on
  // (sampler_state.hpp). A sampler made with the same settings, seeds and
  // chains over the same target (with begin_warmup() of the same warmup,
  // or none) and given this state by restore_state() then makes exactly the
  // draws this one would have made: a checkpoint's resume (R/checkpoint.R).
  // Only the current window's adaptation sums are left out once warmup is
  // over, where nothing reads them. Refused when the state is another
  // shape's (naming what differs).
  SavedState save_state();
  void restore_state(const SavedState& s);

 protected:
  // One transition of every chain from (x_, lp_, grad_), which it updates,
  // filling stats_ (and accepted_, bad_). In chain groups, a sampler's
  // transition() is transition_in_groups().
  virtual void transition() = 0;

  // Chain groups: one sampler of this kind per group (make_group_sampler()),
  // over the group's target and chains and with vectors of its own (no cache
  // line is written by two threads), that only ever makes transitions. Before
  // each iteration this sampler hands every group its step size, metric and
  // its chains' random streams, and the stream shared by all chains (HMC's
  // number of steps), so each group draws what lockstep would; after it,
  // takes back their states, gradients, statistics, tallies and streams, and
  // adapts from all chains as in lockstep.
  bool in_groups() const { return groups_ != nullptr; }
  void transition_in_groups();
  // A sampler of this kind and settings over `target` (a group's), from
  // `init` with metric `sd` ([chains, dim] of the group's chains) and this
  // sampler's step size; nullptr for a sampler that cannot step in groups.
  virtual std::unique_ptr<Sampler> make_group_sampler(Target& /*target*/,
                                                      const std::vector<double>& /*init*/,
                                                      const std::vector<double>& /*sd*/) const {
    return nullptr;
  }

  // Runs f(c) for every chain, on the target's threads when it has some: each
  // chain's vectors (and random stream) are its own, so chains never race.
  template <class F> void for_chains(F&& f) {
    if (ThreadPool* pool = target_.pool())
      pool->parallel_for(C_, [&](long c) { f(c); });
    else
      for (long c = 0; c < C_; ++c) f(c);
  }
  // Chain c's row of diag_sd, [dim].
  const double* chain_sd(long c) const { return sd_.data() + c * D_; }

  // Samplers keep their vectors in the target's ChainVectors
  // (sampler/chain_vectors.hpp; with a GPU executor, in its memory), made on
  // first use: x_v_, g_v_ and sd_v_ mirror x_, grad_ and sd_, m_v_ holds the
  // inverse mass sd^2. The Hamiltonian samplers add their own
  // (hamiltonian_sampler.hpp); rwmh and slice step on the host vectors and
  // use these for warmup's window sums.
  ChainVectors& vectors();
  // Brings the mirrors up to date (the state once, the metric after each
  // change) before a transition works on them.
  void sync_vectors();
  // After a transition changed x_v_: the draw back to x_ (the gradient stays
  // in the vectors).
  void state_to_host();
  // After a transition changed x_ on the host (rwmh, slice): the mirrors are
  // refreshed when next needed (warmup's window sums).
  void state_changed_on_host();
  // Each chain its own step size (per_chain) or one for every chain: a
  // sampler's constructor chooses; the chains start at the current one.
  void adapt_step_size_per_chain(bool on);
  // Replaces diag_sd ([chains, dim]) with another sampler's: the mirrors
  // take it up before the next transition.
  void set_diag_sd(const double* sd);
  // Sets every chain's diag_sd from the gradients g at the chains' current
  // states (their log densities' dlp/dx): sd_i = |g_i|^(-1/2), |g_i| the
  // chains' geometric mean, within [1e-3, 1] (see the definition).
  void metric_from_gradient();
  // Whether the current transition's trajectory ends now (set_cut_check()):
  // asks the check until it says so, then stays true until the next
  // iteration.
  bool cut_short() { return cut_ || (cut_check_ && (cut_ = cut_check_())); }
  // The step sizes ([chains]) warmup starts from and restarts at after each
  // metric window: the current ones, or (Hamiltonian samplers) a search.
  virtual std::vector<double> search_step_sizes() { return step_sizes(); }
  // Whether warmup tunes the step size by dual averaging on the acceptance
  // statistic (a sampler that always moves, such as slice, does not).
  bool adapt_step_size_ = true;
  // The chains whose log density lp_ is within lagging_gap() of the chains'
  // median: the ones whose draws adapt the pooled metric and (ChEES) the
  // trajectory length. At least half of the chains.
  ChainMask steering_chains() const;
  // Per chain, (the chains' median log density - its own) / lagging_gap().
  std::vector<double> lags() const;
  // How far below the median log density a chain lags: 10 + 5 sd of the
  // log density of a dim-dimensional Gaussian (sqrt(dim / 2)), so that a
  // chain inside the typical set is almost never left out, and one a few
  // hundred units of log density out in the tails always is.
  double lagging_gap() const;
  // Warmup's step size: its pooling and dual averaging.
  StepSizeAdaptation step_size_adaptation_;
  // Whether warmup moves stuck chains (rescue_stuck_chains()): the
  // Hamiltonian samplers, whose chains can get stuck where their step size
  // does not fit; rwmh and slice always move or accept as they do.
  virtual bool rescues_stuck_chains() const { return false; }
  // Called at the end of each metric window, after the new metric and the
  // step size it restarts from: for what a sampler adapts in the metric's
  // units (ChEES's trajectory length).
  virtual void metric_changed() {}
  // What a sampler keeps across iterations beyond this base's (ChEES's
  // trajectory length and its Adam moments), into and out of a saved state.
  virtual void save_own(SavedState& /*s*/) const {}
  virtual void restore_own(const SavedState& /*s*/) {}
  // Whether the current transition is a warmup iteration that adapts.
  bool adapting_ = false;
  // Whether it is one of warmup's initial buffer (before the first metric
  // window), where the chains find their way in from their initial values.
  bool in_initial_buffer() const {
    return adapting_ && metric_adaptation_.in_initial_buffer(warmup_done_);
  }
  // Warmup iterations made, and of how many.
  long warmup_done() const { return warmup_done_; }
  long warmup_total() const { return warmup_total_; }

  Target& target_;
  long C_, D_;
  std::string name_;  // prefixes error messages
  std::vector<double> x_, lp_, grad_;  // current state
  // scratch point: xn_ for rwmh and slice, lpn_ for every sampler
  std::vector<double> xn_, lpn_;
  double *x_v_ = nullptr, *g_v_ = nullptr, *sd_v_ = nullptr, *m_v_ = nullptr;
  // diag_sd, [chains, dim]: read it through chain_sd(c)
  std::vector<double> sd_;
  // chain c's step size is epsilon_ * step_scale_[c]: shared, every scale is
  // 1; per chain, epsilon_ is 1 and the scales are the step sizes, applied
  // through the vectors' metric (see the top of this file)
  double epsilon_;
  std::vector<double> step_scale_;
  std::vector<Stream> chain_streams_;
  Stream run_stream_;
  std::vector<long> accepted_, bad_;
  IterationStats stats_;

 private:
  void adapt();
  // Adds the chains' states of a warmup iteration to the metric's window
  // and, at the window's end, makes the new metric.
  void adapt_metric();
  // At the end of a metric window: a chain is stuck when its mean
  // acceptance over the window is below 0.05, or below half the other
  // chains' median and below 0.5 (the rule of R's warn_stuck_chains()), or
  // its log density lags the others' (lags() above 1); each stuck chain
  // moves to the state (position, log density, gradient) and step size of
  // a healthy chain drawn at random from the stream all chains share.
  // Only in warmup, whose draws are not kept, so what sampling draws from
  // is unchanged; no single-chain sampler can do this (Stan's chains never
  // meet). Recorded in rescues_. Not with a dense metric per chain (the
  // chains' coordinates differ) nor with one chain.
  void rescue_stuck_chains();
  std::unique_ptr<ChainVectors> v_;
  void to_groups();
  void from_groups();
  std::unique_ptr<ChainGroups> groups_;
  std::vector<std::unique_ptr<Sampler>> group_samplers_;
  std::vector<long> group_metric_;  // the metric_version() each group holds
  bool state_in_vectors_ = false;
  long metric_in_vectors_ = -1;  // the metric_version_ the mirrors hold
  // counts the changes of step_scale_, and the count the mirrors hold
  long scale_version_ = 0, scale_in_vectors_ = 0;
  bool (*cut_check_)() = nullptr;  // set_cut_check()
  bool cut_ = false;               // this iteration's trajectory was cut
  MetricAdaptation metric_adaptation_;
  long warmup_total_ = 0, warmup_done_ = 0;
  bool metric_from_gradient_ = false;  // start_metric_from_gradient()
  long metric_version_ = 0;
  std::vector<double> lag_at_warmup_end_;
  // each chain's acceptance statistics summed over the current metric
  // window (since the last window's end), and the iterations summed
  std::vector<double> window_accept_;
  long window_iterations_ = 0;
  std::vector<WarmupRescue> rescues_;
  bool warmup_rescue_ = true;
  // rescue_stuck_chains() moved chains: the chain groups take this
  // sampler's states before their next transition
  bool states_to_groups_ = false;
  // A dense metric: the target is it (use_dense_metric())
  DenseMetric* dense_ = nullptr;
};

// Stream purposes within a chain's stream id (rng.hpp).
constexpr uint32_t purpose_momentum = 1, purpose_accept = 2, purpose_direction = 3,
                   purpose_rescue = 4;
constexpr double divergence_threshold = 1000;

}  // namespace lockstep

#endif
