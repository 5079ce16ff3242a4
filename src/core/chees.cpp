// ChEES-HMC with lockstep chains (sampler/chees.hpp).
#include "lockstep/sampler/chees.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace lockstep {

namespace {
CheesSettings checked(CheesSettings s) {
  if (s.max_leapfrog < 1) throw std::invalid_argument("chees: max_leapfrog must be at least 1");
  if (!(s.learning_rate > 0)) throw std::invalid_argument("chees: learning_rate must be positive");
  return s;
}

}  // namespace

// (the buffer's NUTS transitions take ChEES's step size, metric and
// acceptance target)
Chees::Chees(Target& target, CheesSettings settings, const std::vector<double>& init,
             uint32_t key0, uint32_t key1)
    : HamiltonianSampler(target, checked(settings).epsilon, settings.diag_sd,
                         settings.target_accept, init, key0, key1, "chees",
                         settings.per_chain_metric),
      settings_(settings),
      T_(settings.epsilon) {
  step_size_adaptation_.pool_harmonically();
  set_warmup_rescue(settings_.warmup_rescue);
}

void Chees::transition() {
  // Only the chains that steer warmup count (steering_chains()): a chain on
  // its way in from the tails is far from the others' mean, and its squared
  // distance would swamp the criterion.
  ChainMask steering;
  if (adapting_) {
    if (in_initial_buffer()) return buffer_tree_.transition(*this);
    steering = steering_chains();
    if (2 * warmup_done() < warmup_total() && steering.count() < C_)
      return buffer_tree_.transition(*this);
  }
  // (no tree: the NUTS transitions of warmup may have left their depths)
  std::fill(stats_.tree_depth.begin(), stats_.tree_depth.end(), 0);
  const double u = run_stream_.uniform();  // the jitter, shared by all chains
  int L = static_cast<int>(
      std::min<double>(settings_.max_leapfrog, std::max(1.0, std::ceil(u * T_ / epsilon_))));
  sync_vectors();
  ChainVectors& v = vectors();
  draw_momentum(p_v_);
  const ChainMask all = ChainMask::all(C_);
  const std::vector<double> k0 = kinetic_energies(p_v_, all);
  L = trajectory(L, epsilon_, p_v_);
  const std::vector<double> k1 = kinetic_energies(p_v_, all);

  // ChEES's gradient needs, per chain, the squared distances of the state
  // before and after from the chains' means, in the metric, and
  // (x' - mean') . M^-1 p' with M^-1 = diag(sd^2), of the proposal (accepted
  // or not), from the state before the Metropolis step replaces it.
  std::vector<double> d(C_ * 3, 0.0);
  if (adapting_) {
    if (!mean_x_v_) mean_x_v_ = v.make(), mean_z_new_v_ = v.make();
    v.mean_over_chains(mean_x_v_, x_v_, steering);
    v.mean_over_chains(mean_z_new_v_, z_new_v_, steering);
    const DotSpec specs[3] = {
        {x_v_, mean_x_v_, sd_v_, DotKind::scaled_square_difference},
        {z_new_v_, mean_z_new_v_, sd_v_, DotKind::scaled_square_difference},
        {z_new_v_, mean_z_new_v_, p_v_, DotKind::difference_product}};
    v.dots(specs, 3, m_v_, all, d.data());
  }
  std::vector<double> grad_term(C_, 0.0);
  ChainMask take;
  for (long c = 0; c < C_; ++c) {
    const double a = metropolis_step(c, -lp_[c] + k0[c], -lpn_[c] + k1[c], L, take);
    const double d_old = d[c * 3], d_new = d[c * 3 + 1], dot = d[c * 3 + 2];
    if (adapting_ && steering[c] && stats_.divergent[c] == 0)
      grad_term[c] = a * (d_new - d_old) * dot * u;
  }
  take_proposals(take);
  state_to_host();
  if (!adapting_) return;
  // Adam ascent on log T, on the gradient normalised by its chains' mean
  // magnitude (Adam's steps depend on the gradient's sign and consistency,
  // not its units).
  double g = 0, scale = 0;
  for (long c = 0; c < C_; ++c) {
    g += grad_term[c];
    scale += std::fabs(grad_term[c]);
  }
  if (!(scale > 0) || !std::isfinite(g)) return;
  g /= scale;
  const double b1 = 0.9, b2 = 0.999;
  ++adam_t_;
  adam_m_ = b1 * adam_m_ + (1 - b1) * g;
  adam_v_ = b2 * adam_v_ + (1 - b2) * g * g;
  const double mh = adam_m_ / (1 - std::pow(b1, adam_t_));
  const double vh = adam_v_ / (1 - std::pow(b2, adam_t_));
  T_ *= std::exp(settings_.learning_rate * mh / (std::sqrt(vh) + 1e-8));
  T_ = std::min(T_, epsilon_ * settings_.max_leapfrog);
  T_ = std::max(T_, epsilon_);
}

void Chees::metric_changed() {
  // T is a time in the old metric's dynamics. Under the new one, fitted to
  // the draws, the posterior looks like a standard normal, whose jittered
  // criterion peaks first near T = 2.25: start below that, so that Adam
  // climbs to the first peak rather than settling on a later, shallower one
  // (with its moments forgotten, it moves at its full rate again).
  T_ = std::min(std::max(1.0, epsilon_), epsilon_ * settings_.max_leapfrog);
  adam_m_ = adam_v_ = 0;
  adam_t_ = 0;
}

void Chees::save_own(SavedState& s) const {
  s.put("chees", {T_, adam_m_, adam_v_, static_cast<double>(adam_t_)});
}

void Chees::restore_own(const SavedState& s) {
  const std::vector<double>& v = s.get("chees", 4);
  T_ = v[0], adam_m_ = v[1], adam_v_ = v[2], adam_t_ = static_cast<long>(v[3]);
}

}  // namespace lockstep
