// Step-size adaptation by dual averaging (Hoffman & Gelman 2014, section 3.2)
// of one step size, driven by one acceptance statistic per iteration: one
// chain's (a step size per chain), or all chains' pooled (one shared step
// size): StepSizeAdaptation holds one of these per chain or one for all.
#ifndef LOCKSTEP_SAMPLER_DUAL_AVERAGING_HPP
#define LOCKSTEP_SAMPLER_DUAL_AVERAGING_HPP

#include <cmath>

namespace lockstep {

class DualAveraging {
 public:
  explicit DualAveraging(double target = 0.8) : target_(target) {}

  // Starts again around a step size (mu = log(10 epsilon), as Stan does).
  void restart(double epsilon) {
    mu_ = std::log(10 * epsilon);
    s_bar_ = 0;
    x_bar_ = 0;
    count_ = 0;
  }
  // Takes one acceptance statistic in [0, 1]; returns the next step size.
  double update(double accept_stat) {
    ++count_;
    const double eta = 1.0 / (count_ + t0_);
    s_bar_ = (1 - eta) * s_bar_ + eta * (target_ - accept_stat);
    const double x = mu_ - std::sqrt(static_cast<double>(count_)) / gamma_ * s_bar_;
    const double w = std::pow(static_cast<double>(count_), -kappa_);
    x_bar_ = w * x + (1 - w) * x_bar_;
    return std::exp(x);
  }
  // The averaged step size, used after warmup.
  double final_epsilon() const { return std::exp(x_bar_); }
  long count() const { return count_; }
  // Its state (mu, s_bar, x_bar, count), to save and restore (sampler_state.hpp).
  void state(double* out) const {
    out[0] = mu_, out[1] = s_bar_, out[2] = x_bar_, out[3] = static_cast<double>(count_);
  }
  void set_state(const double* in) {
    mu_ = in[0], s_bar_ = in[1], x_bar_ = in[2], count_ = static_cast<long>(in[3]);
  }

 private:
  double target_;
  double mu_ = 0, s_bar_ = 0, x_bar_ = 0;
  long count_ = 0;
  static constexpr double gamma_ = 0.05, t0_ = 10, kappa_ = 0.75;
};

}  // namespace lockstep

#endif
