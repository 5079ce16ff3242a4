// What every sampler shares (sampler/sampler.hpp).
#include "lockstep/sampler/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace lockstep {

namespace {
constexpr uint32_t run_stream_id = 0xFFFFFFFFu;
}

Sampler::Sampler(Target& target, double epsilon, const std::vector<double>& diag_sd,
                 double target_accept, const std::vector<double>& init, uint32_t key0,
                 uint32_t key1, const std::string& name, bool per_chain_metric)
    : step_size_adaptation_(target_accept), target_(target), C_(target.chains()),
      D_(target.dim()), name_(name),
      metric_adaptation_(target.chains(), target.dim(), per_chain_metric) {
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
  epsilon_ = epsilon;
  step_scale_.assign(C_, 1.0);
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

ChainVectors& Sampler::vectors() {
  if (!v_) {
    if (C_ > max_mask_chains)
      throw std::invalid_argument("at most " + std::to_string(max_mask_chains) +
                                  " chains run in lockstep");
    v_ = target_.vectors();
    for (double** a : {&x_v_, &g_v_, &sd_v_, &m_v_}) *a = v_->make();
  }
  return *v_;
}

void Sampler::sync_vectors() {
  ChainVectors& v = vectors();
  if (!state_in_vectors_) {
    v.upload(x_v_, x_.data());
    v.upload(g_v_, grad_.data());
    state_in_vectors_ = true;
  }
  if (metric_in_vectors_ != metric_version_ || scale_in_vectors_ != scale_version_) {
    // the inverse mass sd^2 is derived here: the host keeps sd alone; each
    // chain's row scaled by its step size's scale (per-chain step sizes)
    std::vector<double> sd(sd_.size()), sd2(sd_.size());
    for (long c = 0; c < C_; ++c)
      for (long i = 0; i < D_; ++i) {
        const long k = c * D_ + i;
        sd[k] = sd_[k] * step_scale_[c];
        sd2[k] = sd[k] * sd[k];
      }
    v.upload(sd_v_, sd.data());
    v.upload(m_v_, sd2.data());
    metric_in_vectors_ = metric_version_;
    scale_in_vectors_ = scale_version_;
  }
}

std::vector<double> Sampler::step_sizes() const {
  std::vector<double> eps(C_);
  for (long c = 0; c < C_; ++c) eps[c] = epsilon_ * step_scale_[c];
  return eps;
}

void Sampler::set_step_sizes(const std::vector<double>& epsilon) {
  if (static_cast<long>(epsilon.size()) != C_)
    throw std::invalid_argument(name_ + ": step sizes must have one value per chain");
  for (double e : epsilon)
    if (!(e > 0 && std::isfinite(e)))
      throw std::invalid_argument(name_ + ": step sizes must be positive and finite");
  if (!per_chain_step_size()) {
    epsilon_ = epsilon[0];
    return;
  }
  if (epsilon == step_scale_) return;
  step_scale_ = epsilon;
  ++scale_version_;
}

void Sampler::adapt_step_size_per_chain(bool on) {
  if (on == per_chain_step_size()) return;
  const std::vector<double> eps = step_sizes();
  step_size_adaptation_.adapt_per_chain(on);
  if (on) {
    epsilon_ = 1;
    step_scale_ = eps;
  } else {
    epsilon_ = eps[0];
    step_scale_.assign(C_, 1.0);
  }
  ++scale_version_;
}

void Sampler::use_dense_metric(DenseMetric& metric) {
  if (static_cast<Target*>(&metric) != &target_)
    throw std::invalid_argument(name_ + ": a dense metric must be the sampler's target");
  if (groups_) throw std::invalid_argument(name_ + ": a dense metric does not step in groups");
  dense_ = &metric;
  // the sampler's own metric is the identity in the metric's coordinates
  std::fill(sd_.begin(), sd_.end(), 1.0);
  ++metric_version_;
  metric_adaptation_.use_dense(metric);
}

void Sampler::to_model(const double* y, double* x, long rows) const {
  if (dense_)
    dense_->to_model(y, x, rows);
  else
    std::copy(y, y + rows * D_, x);
}

void Sampler::state_to_host() { vectors().download(x_.data(), x_v_); }

void Sampler::state_changed_on_host() { state_in_vectors_ = false; }

void Sampler::set_diag_sd(const double* sd) {
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
void Sampler::metric_from_gradient() {
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

void Sampler::begin_warmup(long n) {
  warmup_total_ = n;
  warmup_done_ = 0;
  window_accept_.assign(C_, 0.0);
  window_iterations_ = 0;
  metric_adaptation_.begin(n, vectors());
  const bool from_gradient = metric_from_gradient_ && n > 0 && !dense_;
  if (from_gradient) metric_from_gradient();
  if (n > 0) set_step_sizes(search_step_sizes());
  step_size_adaptation_.restart(step_sizes());
  if (from_gradient) metric_changed();
}

void Sampler::iterate(bool warmup) {
  adapting_ = warmup && warmup_done_ < warmup_total_;
  cut_ = false;
  transition();
  if (adapting_) adapt();
}

void Sampler::iterate_apart(long n, IterationRecord& out) {
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
    Sampler& g = *group_samplers_[k];
    const long c0 = groups_->first[k];
    for (long it = 0; it < n; ++it) {
      g.transition();
      std::copy(g.x_.begin(), g.x_.end(), out.x.begin() + (it * C + c0) * D);
      copy_stats(g.stats_, out, it * C + c0);
    }
  });
  from_groups();
}

void Sampler::step_in_groups(std::unique_ptr<ChainGroups> groups) {
  if (!can_step_in_groups())
    throw std::invalid_argument(name_ + ": this sampler cannot step its chains in groups");
  if (!groups || groups->first.front() != 0 || groups->first.back() != C_)
    throw std::invalid_argument(name_ + ": chain groups must cover every chain");
  std::vector<std::unique_ptr<Sampler>> samplers;
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
      metric->take_chains(*dense_, c0);
    }
    samplers.push_back(make_group_sampler(*groups->targets[k], init, sd));
    if (metric) samplers.back()->use_dense_metric(*metric);
  }
  groups_ = std::move(groups);
  group_samplers_ = std::move(samplers);
  group_metric_.assign(groups_->size(), -1);  // to_groups() hands each the metric
}

void Sampler::to_groups() {
  const std::vector<double> eps = step_sizes();
  for (long k = 0; k < groups_->size(); ++k) {
    Sampler& g = *group_samplers_[k];
    const long c0 = groups_->first[k], c1 = groups_->first[k + 1];
    g.set_step_sizes(std::vector<double>(eps.begin() + c0, eps.begin() + c1));
    if (states_to_groups_) {
      // chains moved by rescue_stuck_chains(): the groups take every state
      std::copy(x_.begin() + c0 * D_, x_.begin() + c1 * D_, g.x_.begin());
      std::copy(grad_.begin() + c0 * D_, grad_.begin() + c1 * D_, g.grad_.begin());
      std::copy(lp_.begin() + c0, lp_.begin() + c1, g.lp_.begin());
      g.state_changed_on_host();
    }
    if (group_metric_[k] != metric_version()) {
      g.set_diag_sd(sd_.data() + c0 * D_);
      if (dense_) {
        // a new dense factor moved the chains to its coordinates: the group
        // takes both the factor and its chains' states there
        g.dense_->take_chains(*dense_, c0);
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
    g.adapting_ = adapting_;  // (what a transition does may depend on it: NUTS's split steps)
    std::fill(g.accepted_.begin(), g.accepted_.end(), 0);
    std::fill(g.bad_.begin(), g.bad_.end(), 0);
  }
  states_to_groups_ = false;
}

void Sampler::from_groups() {
  for (long k = 0; k < groups_->size(); ++k) {
    Sampler& g = *group_samplers_[k];
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

void Sampler::transition_in_groups() {
  // one transition of every group, each on its own thread
  to_groups();
  groups_->pool->parallel_for(groups_->size(), [&](long k) { group_samplers_[k]->transition(); });
  from_groups();
}

double Sampler::lagging_gap() const {
  // (the whole model's dimension, also on a rank that holds part of it)
  return 10 + 5 * std::sqrt(0.5 * static_cast<double>(target_.full_dim()));
}

std::vector<double> Sampler::lags() const {
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

ChainMask Sampler::steering_chains() const {
  const std::vector<double> lag = lags();
  ChainMask steering;
  for (long c = 0; c < C_; ++c)
    if (lag[c] <= 1) steering.set(c);
  return steering;
}

void Sampler::adapt() {
  ++warmup_done_;
  for (long c = 0; c < C_; ++c) window_accept_[c] += stats_.accept_stat[c];
  ++window_iterations_;
  if (adapt_step_size_) set_step_sizes(step_size_adaptation_.update(stats_.accept_stat));
  if (metric_adaptation_.in_window(warmup_done_)) adapt_metric();
  if (warmup_done_ == warmup_total_) {
    lag_at_warmup_end_ = lags();
    if (adapt_step_size_) set_step_sizes(step_size_adaptation_.final_epsilon());
  }
}

void Sampler::adapt_metric() {
  // The chains' states into the current window (pooled: every steering
  // chain's; per chain: each chain's into its own row). At a window's end,
  // the metric changes and the step size search starts again.
  const ChainMask steering = steering_chains();
  if (dense_) {
    // a metric chosen automatically also needs the gradients' second
    // moments (DenseMetric::adapt()): on the host, from the vectors where
    // they are kept
    const bool gradients = dense_->choice() == DenseMetric::Choice::automatic;
    if (gradients && !in_groups()) {
      sync_vectors();
      vectors().download(grad_.data(), g_v_);
    }
    metric_adaptation_.add_dense(x_.data(), gradients ? grad_.data() : nullptr, steering);
  } else {
    sync_vectors();
    metric_adaptation_.add_diagonal(vectors(), x_v_, steering);
  }
  if (!metric_adaptation_.window_ends(warmup_done_)) return;
  if (dense_) {
    // the new metric, the states in its coordinates, their log densities
    // and gradients there
    metric_adaptation_.end_dense(*dense_, x_.data());
    target_.log_density(x_.data(), lp_.data(), grad_.data());
    state_changed_on_host();
    ++metric_version_;  // chain groups take up the new factor and states
  } else {
    ChainVectors& v = vectors();
    metric_adaptation_.end_diagonal(v, sd_v_, m_v_);
    v.download(sd_.data(), sd_v_);
    ++metric_version_;
    // (per chain step sizes: the mirrors' rows are scaled, so they are
    // uploaded again)
    if (!per_chain_step_size()) metric_in_vectors_ = metric_version_;
  }
  rescue_stuck_chains();
  set_step_sizes(search_step_sizes());
  step_size_adaptation_.restart(step_sizes());
  metric_changed();
}

void Sampler::rescue_stuck_chains() {
  const long n = window_iterations_;
  std::vector<double> accept(C_, 0.0);
  for (long c = 0; c < C_; ++c) accept[c] = n > 0 ? window_accept_[c] / n : 1.0;
  std::fill(window_accept_.begin(), window_accept_.end(), 0.0);
  window_iterations_ = 0;
  if (!warmup_rescue() || C_ < 2 || n == 0) return;
  if (dense_ && per_chain_metric()) return;
  const std::vector<double> lag = lags();
  std::vector<long> stuck, healthy;
  for (long c = 0; c < C_; ++c) {
    std::vector<double> others;
    for (long k = 0; k < C_; ++k)
      if (k != c) others.push_back(accept[k]);
    std::sort(others.begin(), others.end());
    const size_t m = others.size();
    const double median = m % 2 ? others[m / 2] : 0.5 * (others[m / 2 - 1] + others[m / 2]);
    const bool is_stuck = accept[c] < 0.05 || (accept[c] < 0.5 * median && accept[c] < 0.5) ||
                          lag[c] > 1;
    (is_stuck ? stuck : healthy).push_back(c);
  }
  if (stuck.empty()) return;
  if (healthy.empty()) {
    for (long c : stuck) rescues_.push_back({warmup_done_, c, -1, accept[c], lag[c]});
    return;
  }
  // the states on the host: the draw is (state_to_host()), the gradient
  // may be in the vectors alone
  if (state_in_vectors_) vectors().download(grad_.data(), g_v_);
  std::vector<double> eps = step_sizes();
  for (long c : stuck) {
    // (from the shared stream, so that every MPI rank picks alike)
    const uint32_t purpose = run_stream_.purpose;
    run_stream_.purpose = purpose_rescue;
    const long pick = static_cast<long>(run_stream_.uniform() * static_cast<double>(healthy.size()));
    run_stream_.purpose = purpose;
    const long h = healthy[std::min<long>(pick, static_cast<long>(healthy.size()) - 1)];
    std::copy(x_.begin() + h * D_, x_.begin() + (h + 1) * D_, x_.begin() + c * D_);
    std::copy(grad_.begin() + h * D_, grad_.begin() + (h + 1) * D_, grad_.begin() + c * D_);
    lp_[c] = lp_[h];
    eps[c] = eps[h];
    if (per_chain_metric()) {
      // (the window's metric of a stuck chain fits where it was stuck)
      std::copy(sd_.begin() + h * D_, sd_.begin() + (h + 1) * D_, sd_.begin() + c * D_);
      ++metric_version_;
    }
    rescues_.push_back({warmup_done_, c, h, accept[c], lag[c]});
  }
  set_step_sizes(eps);
  state_changed_on_host();
  states_to_groups_ = true;
}

namespace {
// A random stream as five numbers, and back (key, id, purpose, position).
void put_streams(SavedState& s, const std::string& name, const std::vector<Stream>& streams) {
  std::vector<double> v;
  for (const Stream& r : streams)
    for (double x : {static_cast<double>(r.key0), static_cast<double>(r.key1),
                     static_cast<double>(r.id), static_cast<double>(r.purpose),
                     static_cast<double>(r.position)})
      v.push_back(x);
  s.put(name, std::move(v));
}
std::vector<Stream> get_streams(const SavedState& s, const std::string& name, long n) {
  const std::vector<double>& v = s.get(name, 5 * n);
  std::vector<Stream> out(n);
  for (long k = 0; k < n; ++k) {
    const double* r = v.data() + 5 * k;
    out[k] = Stream{static_cast<uint32_t>(r[0]), static_cast<uint32_t>(r[1]),
                    static_cast<uint32_t>(r[2]), static_cast<uint32_t>(r[3]),
                    static_cast<uint64_t>(r[4])};
  }
  return out;
}
}  // namespace

SavedState Sampler::save_state() {
  SavedState s;
  s.put("shape", {static_cast<double>(C_), static_cast<double>(D_)});
  s.put("x", x_);
  s.put("lp", lp_);
  std::vector<double> g = grad_;  // (the gradient may be in the vectors alone)
  if (state_in_vectors_) vectors().download(g.data(), g_v_);
  s.put("grad", std::move(g));
  // (pooled, every chain's row is the same: one is saved, a tenth of a
  // 2-million-parameter model's state)
  s.put("diag_sd", per_chain_metric() ? sd_ : std::vector<double>(sd_.begin(), sd_.begin() + D_));
  s.put("epsilon", epsilon_);
  s.put("step_scale", step_scale_);
  s.put("per_chain_step_size", per_chain_step_size() ? 1.0 : 0.0);
  put_streams(s, "chain_streams", chain_streams_);
  put_streams(s, "run_stream", {run_stream_});
  s.put_numbers("accepted", accepted_);
  s.put_numbers("bad", bad_);
  s.put("stats_accept", stats_.accept_stat);
  s.put("stats_energy", stats_.energy);
  s.put_numbers("stats_leapfrog", stats_.n_leapfrog);
  s.put_numbers("stats_depth", stats_.tree_depth);
  s.put_numbers("stats_divergent", stats_.divergent);
  s.put("warmup", {static_cast<double>(warmup_total_), static_cast<double>(warmup_done_),
                   static_cast<double>(window_iterations_)});
  s.put("window_accept", window_accept_);
  s.put("lag_at_warmup_end", lag_at_warmup_end_);
  std::vector<double> moved;
  for (const WarmupRescue& r : rescues_)
    for (double x : {static_cast<double>(r.iteration), static_cast<double>(r.chain),
                     static_cast<double>(r.from), r.accept, r.lag})
      moved.push_back(x);
  s.put("rescues", std::move(moved));
  step_size_adaptation_.save(s);
  metric_adaptation_.save(s, vectors(), warmup_done_ < warmup_total_);
  if (dense_) {
    s.put("dense_factor", dense_->factor());
    s.put("dense_scale", dense_->scales());
  }
  save_own(s);
  return s;
}

void Sampler::restore_state(const SavedState& s) {
  const std::vector<double>& shape = s.get("shape", 2);
  if (shape[0] != static_cast<double>(C_) || shape[1] != static_cast<double>(D_))
    throw std::invalid_argument(name_ + ": the saved state is of " +
                                std::to_string(static_cast<long>(shape[0])) + " chains of " +
                                std::to_string(static_cast<long>(shape[1])) +
                                " free parameters, this sampler has " + std::to_string(C_) +
                                " of " + std::to_string(D_));
  if ((s.scalar("per_chain_step_size") != 0) != per_chain_step_size())
    throw std::invalid_argument(name_ + ": the saved state adapted its step size " +
                                (per_chain_step_size() ? "shared" : "per chain") +
                                ", this sampler " +
                                (per_chain_step_size() ? "per chain" : "shared"));
  if ((s.has("dense_factor")) != (dense_ != nullptr))
    throw std::invalid_argument(name_ + ": the saved state's metric is " +
                                (dense_ ? "diagonal" : "dense") + ", this sampler's " +
                                (dense_ ? "dense" : "diagonal"));
  x_ = s.get("x", C_ * D_);
  lp_ = s.get("lp", C_);
  grad_ = s.get("grad", C_ * D_);
  const std::vector<double>& sd = s.get("diag_sd", per_chain_metric() ? C_ * D_ : D_);
  for (long c = 0; c < (per_chain_metric() ? 1 : C_); ++c)
    std::copy(sd.begin(), sd.end(), sd_.begin() + c * D_);
  epsilon_ = s.scalar("epsilon");
  step_scale_ = s.get("step_scale", C_);
  chain_streams_ = get_streams(s, "chain_streams", C_);
  run_stream_ = get_streams(s, "run_stream", 1)[0];
  accepted_ = s.numbers<long>("accepted", C_);
  bad_ = s.numbers<long>("bad", C_);
  stats_.accept_stat = s.get("stats_accept", C_);
  stats_.energy = s.get("stats_energy", C_);
  stats_.n_leapfrog = s.numbers<int>("stats_leapfrog", C_);
  stats_.tree_depth = s.numbers<int>("stats_depth", C_);
  stats_.divergent = s.numbers<int>("stats_divergent", C_);
  const std::vector<double>& warmup = s.get("warmup", 3);
  warmup_total_ = static_cast<long>(warmup[0]);
  warmup_done_ = static_cast<long>(warmup[1]);
  window_iterations_ = static_cast<long>(warmup[2]);
  window_accept_ = s.get("window_accept", C_);
  lag_at_warmup_end_ = s.get("lag_at_warmup_end");
  const std::vector<double>& moved = s.get("rescues");
  if (moved.size() % 5 != 0) throw std::invalid_argument(name_ + ": the saved rescues are damaged");
  rescues_.clear();
  for (size_t k = 0; k < moved.size(); k += 5)
    rescues_.push_back({static_cast<long>(moved[k]), static_cast<long>(moved[k + 1]),
                        static_cast<long>(moved[k + 2]), moved[k + 3], moved[k + 4]});
  // warmup's schedule from its length, then where it had reached
  metric_adaptation_.begin(warmup_total_, vectors());
  metric_adaptation_.restore(s, vectors());
  step_size_adaptation_.restore(s, C_);
  if (dense_) dense_->set_factors(s.get("dense_factor"), s.get("dense_scale"));
  restore_own(s);
  // every copy elsewhere (the vectors' mirrors, the chain groups' states,
  // metrics and dense factors) is taken up again before the next transition
  state_in_vectors_ = false;
  ++metric_version_;
  ++scale_version_;
  states_to_groups_ = true;
}

}  // namespace lockstep
