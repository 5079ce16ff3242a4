// Slice sampling with lockstep chains (sampler/slice.hpp).
#include "lockstep/sampler/slice.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace lockstep {

namespace {
SliceSettings checked(SliceSettings s) {
  if (s.max_doublings < 0 || s.max_doublings > 30)
    throw std::invalid_argument("slice: max_doublings must be between 0 and 30");
  return s;
}
}  // namespace

Slice::Slice(Target& target, SliceSettings settings, const std::vector<double>& init,
             uint32_t key0, uint32_t key1)
    : Sampler(target, settings.epsilon, settings.diag_sd, 0.8, init, key0, key1, "slice",
              settings.per_chain_metric),
      settings_(checked(settings)) {
  adapt_step_size_ = false;
  dir_.assign(C_ * D_, 0.0);
}

void Slice::transition() {
  enum Phase { left, right, shrink, done };
  const long m = 1L << settings_.max_doublings;  // widths the interval may grow by, in all
  std::vector<Phase> phase(C_, left);
  std::vector<double> log_y(C_), L(C_), R(C_), t(C_);
  std::vector<long> J(C_), K(C_);
  std::vector<int> steps(C_, 0);
  const double w = epsilon_;

  // position x + t d of chain c into the scratch point xn_
  auto place = [&](long c, double at) {
    t[c] = at;
    for (long i = 0; i < D_; ++i) xn_[c * D_ + i] = x_[c * D_ + i] + at * dir_[c * D_ + i];
  };
  // The direction: a normal draw per coordinate, normalised. A rank that
  // holds part of the state (owned_shard.hpp) draws its coordinates' numbers
  // by their index in the whole state, as one process draws them, and the
  // norm is summed over the ranks (each counting its own coordinates).
  const std::vector<long>* full = target_.full_index();
  std::vector<double> norm(C_, 0.0);
  for_chains([&](long c) {
    Stream& s = chain_streams_[c];
    s.purpose = purpose_direction;
    if (full) {
      const long first = target_.counted_from();
      for (long i = 0; i < D_; ++i) {
        dir_[c * D_ + i] = s.normal_at(static_cast<uint64_t>((*full)[i]));
        if (i >= first) norm[c] += dir_[c * D_ + i] * dir_[c * D_ + i];
      }
      s.position += static_cast<uint64_t>((target_.full_dim() + 1) / 2);
      return;
    }
    for (long i = 0; i < D_; i += 2) {
      double a, b;
      s.normal2(&a, &b);
      dir_[c * D_ + i] = a;
      norm[c] += a * a;
      if (i + 1 < D_) {
        dir_[c * D_ + i + 1] = b;
        norm[c] += b * b;
      }
    }
  });
  target_.sum_over_parts(norm.data(), C_);
  for_chains([&](long c) {
    Stream& s = chain_streams_[c];
    const double length = std::sqrt(norm[c]);
    const double* sd = chain_sd(c);
    for (long i = 0; i < D_; ++i) dir_[c * D_ + i] *= sd[i] / length;
    s.purpose = purpose_accept;
    log_y[c] = lp_[c] + std::log(s.uniform());  // log p(x) - Exp(1)
    L[c] = -w * s.uniform();
    R[c] = L[c] + w;
    J[c] = static_cast<long>(std::floor(m * s.uniform()));
    K[c] = m - 1 - J[c];
    place(c, L[c]);
  });
  // Each round evaluates every chain's pending point and moves its phase on.
  while (std::any_of(phase.begin(), phase.end(), [](Phase p) { return p != done; })) {
    target_.log_density(xn_.data(), lpn_.data(), nullptr);
    for_chains([&](long c) {
      if (phase[c] == done) return;
      ++steps[c];
      const bool inside = lpn_[c] > log_y[c];  // NaN is outside
      Stream& s = chain_streams_[c];
      s.purpose = purpose_accept;
      switch (phase[c]) {
        case left:
          if (inside && J[c] > 0) {
            --J[c];
            L[c] -= w;
            place(c, L[c]);
            return;
          }
          phase[c] = right;
          place(c, R[c]);
          return;
        case right:
          if (inside && K[c] > 0) {
            --K[c];
            R[c] += w;
            place(c, R[c]);
            return;
          }
          phase[c] = shrink;
          place(c, L[c] + s.uniform() * (R[c] - L[c]));
          return;
        case shrink:
          if (inside) {
            std::copy(xn_.begin() + c * D_, xn_.begin() + (c + 1) * D_, x_.begin() + c * D_);
            lp_[c] = lpn_[c];
            ++accepted_[c];
            phase[c] = done;
            return;
          }
          (t[c] < 0 ? L[c] : R[c]) = t[c];
          if (R[c] - L[c] < 1e-12 * w) {  // the slice has shrunk onto x: stay
            phase[c] = done;
            ++bad_[c];
            return;
          }
          place(c, L[c] + s.uniform() * (R[c] - L[c]));
          return;
        case done:
          return;
      }
    });
  }
  for (long c = 0; c < C_; ++c) {
    stats_.accept_stat[c] = 1;
    stats_.n_leapfrog[c] = steps[c];  // log density evaluations
    stats_.divergent[c] = 0;
    stats_.energy[c] = -lp_[c];
  }
  state_changed_on_host();
}

}  // namespace lockstep
