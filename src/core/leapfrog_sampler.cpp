// What the leapfrog samplers share (sampler/leapfrog_sampler.hpp).
#include "lockstep/sampler/leapfrog_sampler.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace lockstep {

namespace {
constexpr uint32_t run_stream_id = 0xFFFFFFFFu;
}

LeapfrogSampler::LeapfrogSampler(Target& target, double epsilon,
                                 const std::vector<double>& diag_sd, double target_accept,
                                 const std::vector<double>& init, uint32_t key0, uint32_t key1,
                                 const std::string& name, bool per_chain_metric)
    : target_(target), C_(target.chains()), D_(target.dim()), name_(name),
      per_chain_metric_(per_chain_metric) {
  if (!(epsilon > 0)) throw std::invalid_argument(name + ": epsilon must be positive");
  if (!(target_accept > 0 && target_accept < 1))
    throw std::invalid_argument(name + ": the target acceptance must be between 0 and 1");
  if (static_cast<long>(init.size()) != C_ * D_)
    throw std::invalid_argument(name + ": initial values must have chains x dim elements");
  sd_.assign(C_ * D_, 1.0);
  if (diag_sd.size() == 1) {
    sd_.assign(C_ * D_, diag_sd[0]);
  } else if (static_cast<long>(diag_sd.size()) == D_) {
    for (long c = 0; c < C_; ++c) std::copy(diag_sd.begin(), diag_sd.end(), sd_.begin() + c * D_);
  } else if (static_cast<long>(diag_sd.size()) == C_ * D_) {
    sd_ = diag_sd;
  } else if (!diag_sd.empty()) {
    throw std::invalid_argument(
        name + ": diag_sd has " + std::to_string(diag_sd.size()) +
        " values; it must have one value, one per free parameter (" + std::to_string(D_) +
        "), or one per chain and free parameter (" + std::to_string(C_) + " x " +
        std::to_string(D_) + ")");
  }
  for (double s : sd_)
    if (!(s > 0)) throw std::invalid_argument(name + ": diag_sd must be positive");
  dual_ = DualAveraging(target_accept);
  epsilon_ = epsilon;
  x_ = init;
  lp_.assign(C_, 0);
  grad_.assign(C_ * D_, 0);
  xn_ = x_;
  lpn_ = lp_;
  accepted_.assign(C_, 0);
  bad_.assign(C_, 0);
  stats_.accept_stat.assign(C_, 0);
  stats_.n_leapfrog.assign(C_, 0);
  stats_.tree_depth.assign(C_, 0);
  stats_.divergent.assign(C_, 0);
  stats_.energy.assign(C_, 0);
  for (long c = 0; c < C_; ++c)
    chain_streams_.push_back(Stream{key0, key1, static_cast<uint32_t>(c), 0, 0});
  run_stream_ = Stream{key0, key1, run_stream_id, 0, 0};
  target_.log_density(x_.data(), lp_.data(), grad_.data());
  for (long c = 0; c < C_; ++c)
    if (!std::isfinite(lp_[c]))
      throw std::invalid_argument(name + ": the log density of chain " + std::to_string(c + 1) +
                                  " is not finite at its initial values");
}

ChainVectors& LeapfrogSampler::vectors() {
  if (!v_) {
    if (C_ > max_mask_chains)
      throw std::invalid_argument("at most " + std::to_string(max_mask_chains) +
                                  " chains run in lockstep");
    v_ = target_.vectors();
    for (double** a : {&x_v_, &g_v_, &sd_v_, &m_v_, &xn_v_, &gn_v_, &p_v_}) *a = v_->make();
  }
  return *v_;
}

void LeapfrogSampler::sync_vectors() {
  ChainVectors& v = vectors();
  if (!state_in_vectors_) {
    v.upload(x_v_, x_.data());
    v.upload(g_v_, grad_.data());
    state_in_vectors_ = true;
  }
  if (metric_in_vectors_ != metric_version_) {
    // the inverse mass sd^2 is derived here: the host keeps sd alone
    std::vector<double> sd2(sd_.size());
    for (size_t k = 0; k < sd_.size(); ++k) sd2[k] = sd_[k] * sd_[k];
    v.upload(sd_v_, sd_.data());
    v.upload(m_v_, sd2.data());
    metric_in_vectors_ = metric_version_;
  }
}

void LeapfrogSampler::use_dense_metric(DenseMetric& metric) {
  if (static_cast<Target*>(&metric) != &target_)
    throw std::invalid_argument(name_ + ": a dense metric must be the sampler's target");
  if (groups_) throw std::invalid_argument(name_ + ": a dense metric does not step in groups");
  dense_ = &metric;
  // the sampler's own metric is the identity in the metric's coordinates
  std::fill(sd_.begin(), sd_.end(), 1.0);
  ++metric_version_;
  const long rows = per_chain_metric_ ? C_ : 1;
  dense_mean_.assign(rows * D_, 0.0);
  dense_m2_.assign(rows * D_ * D_, 0.0);
  dense_g2_.assign(rows * D_ * D_, 0.0);
}

void LeapfrogSampler::to_model(const double* y, double* x, long rows) const {
  if (dense_)
    dense_->to_model(y, x, rows);
  else
    std::copy(y, y + rows * D_, x);
}

// Welford's update of the window's means and co-moments by the chains'
// states (pooled: those of the chains in `from` into one; per chain: each
// into its own), with window_n_ draws already in the window (per row).
void LeapfrogSampler::dense_window_update(const ChainMask& from) {
  const long D = D_;
  // a metric chosen automatically also needs the gradients' second moments
  // (DenseMetric::adapt()): on the host, from the vectors where they are kept
  const bool gradients = dense_->choice() == DenseMetric::Choice::automatic;
  if (gradients && !in_groups()) {
    sync_vectors();
    vectors().download(grad_.data(), g_v_);
  }
  std::vector<double> delta(D);
  double pooled_n = static_cast<double>(window_n_);
  for (long c = 0; c < C_; ++c) {
    if (!per_chain_metric_ && !from[c]) continue;
    const long row = per_chain_metric_ ? c : 0;
    double* mean = dense_mean_.data() + row * D;
    double* m2 = dense_m2_.data() + row * D * D;
    const double n = per_chain_metric_ ? window_n_ + 1.0 : (pooled_n += 1);
    const double* y = x_.data() + c * D;
    for (long i = 0; i < D; ++i) {
      delta[i] = y[i] - mean[i];
      mean[i] += delta[i] / n;
    }
    for (long i = 0; i < D; ++i)
      for (long j = 0; j < D; ++j) m2[i * D + j] += delta[i] * (y[j] - mean[j]);
    if (gradients) {
      const double* g = grad_.data() + c * D;
      double* g2 = dense_g2_.data() + row * D * D;
      for (long i = 0; i < D; ++i)
        for (long j = 0; j < D; ++j) g2[i * D + j] += g[i] * g[j];
    }
  }
}

void LeapfrogSampler::state_to_host() { vectors().download(x_.data(), x_v_); }

void LeapfrogSampler::state_changed_on_host() { state_in_vectors_ = false; }

void LeapfrogSampler::set_diag_sd(const double* sd) {
  std::copy(sd, sd + C_ * D_, sd_.begin());
  ++metric_version_;
}

// Warmup's first window ends 100 iterations in (Stan's schedule): until then
// the metric is the one given, by default the unit one, and where the free
// parameters' scales span orders of magnitude (a hierarchical regression's
// coefficients with posterior sd 0.02 beside standard-normal group effects)
// the step size must fit the narrowest, and those first iterations take
// hundreds of leapfrog steps each: most of the gradients of a short warmup
// (the seed model at N = 2e4: 275 a chain-iteration against 40 once
// adapted). The gradient at the initial values knows those scales: for a
// normal of sd s at a distance d from its mean, |dlp/dx| = d / s^2, so
// |g|^(-1/2) = s / sqrt(d), the scale itself at a distance of about one,
// which is where initial values drawn on (-2, 2) lie from a posterior much
// narrower than that (nutpie starts its adaptation so, with the variance
// 1 / |g|). The chains' geometric mean is steadier than any one chain's (a
// chain whose state sits near a mode in one coordinate has a gradient of
// almost 0 there). The
// estimate is only allowed to shrink a scale from the unit metric's 1, not to
// grow it: a near-zero gradient (a chain started at the mode, a flat
// direction) would otherwise give a huge sd, and the step size would have to
// shrink to match it. The floor 1e-3 keeps a coordinate with a very large
// gradient far out in the tails from freezing until the first window: it
// still moves, and that window measures its scale.
void LeapfrogSampler::metric_from_gradient() {
  std::vector<double> g = grad_;
  if (state_in_vectors_) vectors().download(g.data(), g_v_);
  for (long i = 0; i < D_; ++i) {
    double log_sum = 0;
    for (long c = 0; c < C_; ++c)
      log_sum += std::log(std::max(std::fabs(g[c * D_ + i]), 1e-300));
    const double sd = std::exp(-0.5 * log_sum / static_cast<double>(C_));
    const double kept = std::isfinite(sd) ? std::min(1.0, std::max(1e-3, sd)) : 1.0;
    for (long c = 0; c < C_; ++c) sd_[c * D_ + i] = kept;
  }
  ++metric_version_;
}

void LeapfrogSampler::draw_momentum(double* p) {
  // p_i = n_i / sd_i
  vectors().momentum(p, sd_v_, chain_streams_, purpose_momentum);
}

std::vector<double> LeapfrogSampler::kinetic_energies(const double* p, const ChainMask& on) {
  const DotSpec spec{p, sd_v_, nullptr, DotKind::square};
  std::vector<double> k(C_);
  vectors().dots(&spec, 1, m_v_, on, k.data());
  for (double& e : k) e *= 0.5;
  return k;
}

// Leapfrog, with the half steps of momentum between two position steps merged
// into one full step (one pass over the state fewer per step).
int LeapfrogSampler::trajectory(int L, double eps, double* p, bool may_cut) {
  ChainVectors& v = vectors();
  const ChainMask all = ChainMask::all(C_), forward;
  lpn_ = lp_;
  int l = 0;
  for (; l < L; ++l) {
    if (l > 0 && may_cut && cut_short()) break;
    const double kick = l == 0 ? 0.5 * eps : eps;
    v.leapfrog(xn_v_, l == 0 ? x_v_ : xn_v_, p, l == 0 ? g_v_ : gn_v_, m_v_, kick, eps, true, all,
               forward);
    v.log_density(xn_v_, lpn_.data(), gn_v_);
  }
  v.leapfrog(nullptr, nullptr, p, gn_v_, m_v_, 0.5 * eps, eps, false, all, forward);
  return l;
}

double LeapfrogSampler::metropolis_step(long c, double h0, double h1, int L, ChainMask& take) {
  double log_a = h0 - h1;
  const bool ok = std::isfinite(log_a) && std::fabs(log_a) < divergence_threshold;
  if (!ok) {
    ++bad_[c];
    log_a = -HUGE_VAL;
  }
  const double a = std::exp(std::fmin(0.0, log_a));
  stats_.accept_stat[c] = a;
  stats_.n_leapfrog[c] = L;
  stats_.divergent[c] = ok ? 0 : 1;
  Stream& s = chain_streams_[c];
  s.purpose = purpose_accept;
  if (ok && std::log(s.uniform()) < log_a) {
    ++accepted_[c];
    lp_[c] = lpn_[c];
    take.set(c);
    stats_.energy[c] = h1;
  } else {
    stats_.energy[c] = h0;
  }
  return a;
}

void LeapfrogSampler::take_proposals(const ChainMask& take) {
  vectors().copy(x_v_, xn_v_, take);
  vectors().copy(g_v_, gn_v_, take);
}

double LeapfrogSampler::find_reasonable_epsilon() {
  // Hoffman & Gelman (2014), algorithm 4, on the mean acceptance of all chains,
  // with Stan's threshold (its init_stepsize): double or halve epsilon until
  // a short trajectory crosses acceptance 0.8; four leapfrog steps rather than
  // one: beyond the leapfrog's stability limit (2 sd for a Gaussian) the
  // energy error grows geometrically with the steps, but one step can still
  // look acceptable, and a step chosen there makes every long trajectory
  // diverge.
  double eps = epsilon_;
  int direction = 0;
  sync_vectors();
  const ChainMask all = ChainMask::all(C_);
  for (int tries = 0; tries < 60; ++tries) {
    draw_momentum(p_v_);
    const std::vector<double> k0 = kinetic_energies(p_v_, all);
    trajectory(4, eps, p_v_, false);  // (a cut iteration's window end still searches whole)
    const std::vector<double> k1 = kinetic_energies(p_v_, all);
    double mean_accept = 0;
    for (long c = 0; c < C_; ++c) {
      const double h0 = -lp_[c] + k0[c];
      const double log_a = h0 - (-lpn_[c] + k1[c]);
      mean_accept += std::isfinite(log_a) ? std::exp(std::fmin(0.0, log_a)) : 0.0;
    }
    mean_accept /= C_;
    const int want = mean_accept > 0.8 ? 1 : -1;
    if (direction == 0) direction = want;
    if (want != direction) {
      // Going up, this step is the first that is too large: keep the last
      // acceptable one (Stan keeps the first too large, and leaves the rest
      // to dual averaging, which a short warmup may not have time for).
      if (direction > 0) eps /= 2;
      break;
    }
    const double next = direction > 0 ? eps * 2 : eps / 2;
    if (!(next > 1e-10 && next < 1e7)) break;
    eps = next;
  }
  return eps;
}

void LeapfrogSampler::begin_warmup(long n) {
  warmup_total_ = n;
  warmup_done_ = 0;
  schedule_ = WarmupSchedule::make(n);
  next_window_ = 0;
  window_n_ = 0;
  ChainVectors& v = vectors();
  if (!window_mean_v_) window_mean_v_ = v.make(), window_m2_v_ = v.make();
  const ChainMask all = ChainMask::all(C_);
  v.fill(window_mean_v_, 0.0, all);
  v.fill(window_m2_v_, 0.0, all);
  const bool from_gradient = metric_from_gradient_ && n > 0 && !dense_;
  if (from_gradient) metric_from_gradient();
  if (n > 0) epsilon_ = find_reasonable_epsilon();
  restart_epsilon_ = epsilon_;
  dual_.restart(epsilon_);
  if (from_gradient) metric_changed();
}

void LeapfrogSampler::iterate(bool warmup) {
  adapting_ = warmup && warmup_done_ < warmup_total_;
  cut_ = false;
  transition();
  if (adapting_) adapt();
}

void LeapfrogSampler::iterate_apart(long n, IterationRecord& out) {
  out.resize(n, C_, D_);
  if (!groups_) {
    for (long it = 0; it < n; ++it) {
      iterate(false);
      std::copy(x_.begin(), x_.end(), out.x.begin() + it * C_ * D_);
      copy_stats(stats_, out, it * C_);
    }
    return;
  }
  adapting_ = false;
  const long C = C_, D = D_;
  to_groups();
  // Each group makes all n iterations on its own: nothing adapts between
  // them, so a group whose trajectories were short does not wait for the
  // others.
  groups_->pool->parallel_for(groups_->size(), [&](long k) {
    LeapfrogSampler& g = *group_samplers_[k];
    const long c0 = groups_->first[k];
    for (long it = 0; it < n; ++it) {
      g.transition();
      std::copy(g.x_.begin(), g.x_.end(), out.x.begin() + (it * C + c0) * D);
      copy_stats(g.stats_, out, it * C + c0);
    }
  });
  from_groups();
}

void LeapfrogSampler::step_in_groups(std::unique_ptr<ChainGroups> groups) {
  if (!can_step_in_groups())
    throw std::invalid_argument(name_ + ": this sampler cannot step its chains in groups");
  if (!groups || groups->first.front() != 0 || groups->first.back() != C_)
    throw std::invalid_argument(name_ + ": chain groups must cover every chain");
  std::vector<std::unique_ptr<LeapfrogSampler>> samplers;
  for (long k = 0; k < groups->size(); ++k) {
    const long c0 = groups->first[k], c1 = groups->first[k + 1];
    const std::vector<double> sd(sd_.begin() + c0 * D_, sd_.begin() + c1 * D_);
    const std::vector<double> init(x_.begin() + c0 * D_, x_.begin() + c1 * D_);
    // With a dense metric, each group's target is a DenseMetric of its own
    // over the group's executor, holding its chains' factors, so that the
    // group's coordinates are this sampler's.
    DenseMetric* metric = nullptr;
    if (dense_) {
      metric = dynamic_cast<DenseMetric*>(groups->targets[k].get());
      if (!metric || metric->chains() != c1 - c0)
        throw std::invalid_argument(name_ + ": with a dense metric, each chain group's target "
                                            "must be a dense metric over its chains");
      metric->set_factor(dense_->factor().data() + c0 * D_ * D_);
    }
    samplers.push_back(make_group_sampler(*groups->targets[k], init, sd));
    if (metric) samplers.back()->use_dense_metric(*metric);
  }
  groups_ = std::move(groups);
  group_samplers_ = std::move(samplers);
  group_metric_.assign(groups_->size(), -1);  // to_groups() hands each the metric
}

void LeapfrogSampler::to_groups() {
  for (long k = 0; k < groups_->size(); ++k) {
    LeapfrogSampler& g = *group_samplers_[k];
    const long c0 = groups_->first[k], c1 = groups_->first[k + 1];
    g.epsilon_ = epsilon_;
    if (group_metric_[k] != metric_version()) {
      g.set_diag_sd(sd_.data() + c0 * D_);
      if (dense_) {
        // a new dense factor moved the chains to its coordinates: the group
        // takes both the factor and its chains' states there
        g.dense_->set_factor(dense_->factor().data() + c0 * D_ * D_);
        std::copy(x_.begin() + c0 * D_, x_.begin() + c1 * D_, g.x_.begin());
        std::copy(grad_.begin() + c0 * D_, grad_.begin() + c1 * D_, g.grad_.begin());
        std::copy(lp_.begin() + c0, lp_.begin() + c1, g.lp_.begin());
        g.state_changed_on_host();
      }
      group_metric_[k] = metric_version();
    }
    // the group's chains draw from this sampler's streams of those chains,
    // and every group from the stream all chains share
    std::copy(chain_streams_.begin() + c0, chain_streams_.begin() + c1, g.chain_streams_.begin());
    g.run_stream_ = run_stream_;
    std::fill(g.accepted_.begin(), g.accepted_.end(), 0);
    std::fill(g.bad_.begin(), g.bad_.end(), 0);
  }
}

void LeapfrogSampler::from_groups() {
  for (long k = 0; k < groups_->size(); ++k) {
    LeapfrogSampler& g = *group_samplers_[k];
    const long c0 = groups_->first[k];
    std::copy(g.x_.begin(), g.x_.end(), x_.begin() + c0 * D_);
    g.vectors().download(grad_.data() + c0 * D_, g.g_v_);
    for (long j = 0; j < g.C_; ++j) {
      const long c = c0 + j;
      lp_[c] = g.lp_[j];
      chain_streams_[c] = g.chain_streams_[j];
      accepted_[c] += g.accepted_[j];
      bad_[c] += g.bad_[j];
    }
    copy_stats(g.stats_, stats_, c0);
  }
  // every group drew the same numbers from the shared stream
  run_stream_ = group_samplers_.front()->run_stream_;
  // adaptation and the step size search read the state from the vectors
  state_changed_on_host();
}

void LeapfrogSampler::transition_in_groups() {
  // one transition of every group, each on its own thread
  to_groups();
  groups_->pool->parallel_for(groups_->size(), [&](long k) { group_samplers_[k]->transition(); });
  from_groups();
}

double LeapfrogSampler::lagging_gap() const {
  return 10 + 5 * std::sqrt(0.5 * static_cast<double>(D_));
}

std::vector<double> LeapfrogSampler::lags() const {
  std::vector<double> sorted = lp_;
  std::sort(sorted.begin(), sorted.end());
  const long n = static_cast<long>(sorted.size());
  const double median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  // (lp_ is finite: the initial values must be, and a transition only moves
  // a chain to a finite log density)
  const double gap = lagging_gap();
  std::vector<double> lag(C_);
  for (long c = 0; c < C_; ++c) lag[c] = (median - lp_[c]) / gap;
  return lag;
}

ChainMask LeapfrogSampler::steering_chains() const {
  const std::vector<double> lag = lags();
  ChainMask steering;
  for (long c = 0; c < C_; ++c)
    if (lag[c] <= 1) steering.set(c);
  return steering;
}

double LeapfrogSampler::pooled_accept() const {
  double sum = 0;
  for (long c = 0; c < C_; ++c)
    sum += harmonic_accept_ ? 1 / std::max(stats_.accept_stat[c], 1e-20) : stats_.accept_stat[c];
  return harmonic_accept_ ? C_ / sum : sum / C_;
}

void LeapfrogSampler::adapt() {
  const double mean_accept = pooled_accept();
  ++warmup_done_;
  if (adapt_step_size_) epsilon_ = dual_.update(mean_accept);

  // Add the chains' states to the current variance window (Welford, in the
  // vectors: on a GPU, where the state is; a dense metric's co-moments on the
  // host): pooled, every steering chain's state in turn into one window; per
  // chain, each chain's into its own row. At a window's end, the metric
  // changes and the step size search starts again.
  const bool in_window = next_window_ < schedule_.window_ends.size() &&
                         warmup_done_ > schedule_.first_window_start;
  if (in_window) {
    const ChainMask steering = steering_chains();
    if (dense_) {
      dense_window_update(steering);
    } else {
      ChainVectors& v = vectors();
      sync_vectors();
      v.window_update(window_mean_v_, window_m2_v_, x_v_, static_cast<double>(window_n_),
                      !per_chain_metric_, steering);
    }
    window_n_ += per_chain_metric_ ? 1 : steering.count();
    if (warmup_done_ == schedule_.window_ends[next_window_]) {
      if (dense_) {
        // the new metric, the states in its coordinates, their log densities
        // and gradients there
        dense_->adapt(dense_m2_.data(), static_cast<double>(window_n_), !per_chain_metric_,
                      dense_g2_.data(),
                      x_.data());
        target_.log_density(x_.data(), lp_.data(), grad_.data());
        state_changed_on_host();
        ++metric_version_;  // chain groups take up the new factor and states
        std::fill(dense_mean_.begin(), dense_mean_.end(), 0.0);
        std::fill(dense_m2_.begin(), dense_m2_.end(), 0.0);
        std::fill(dense_g2_.begin(), dense_g2_.end(), 0.0);
      } else {
        ChainVectors& v = vectors();
        v.metric_from_window(sd_v_, m_v_, window_m2_v_, static_cast<double>(window_n_),
                             !per_chain_metric_);
        v.download(sd_.data(), sd_v_);
        ++metric_version_;
        metric_in_vectors_ = metric_version_;
        const ChainMask all = ChainMask::all(C_);
        v.fill(window_mean_v_, 0.0, all);
        v.fill(window_m2_v_, 0.0, all);
      }
      ++next_window_;
      window_n_ = 0;
      epsilon_ = restart_epsilon_ = find_reasonable_epsilon();
      dual_.restart(epsilon_);
      metric_changed();
    }
  }
  if (warmup_done_ == warmup_total_) {
    lag_at_warmup_end_ = lags();
    // Dual averaging's average is dominated by its first iterates, which
    // explore around 10x the restart value (mu = log(10 epsilon)): after
    // fewer than 10 updates since the last restart (a very short warmup), the
    // restart value itself, which is about right, is the better choice.
    if (adapt_step_size_)
      epsilon_ = dual_.count() >= 10 ? dual_.final_epsilon() : restart_epsilon_;
  }
}


}  // namespace lockstep
