// Warmup's metric in Stan's windows (sampler/metric_adaptation.hpp).
#include "lockstep/sampler/metric_adaptation.hpp"

#include <algorithm>
#include <stdexcept>

namespace lockstep {

void MetricAdaptation::begin(long warmup, ChainVectors& v) {
  schedule_ = WarmupSchedule::make(warmup);
  next_window_ = 0;
  window_n_ = 0;
  if (!window_mean_v_) window_mean_v_ = v.make(), window_m2_v_ = v.make();
  const ChainMask all = ChainMask::all(C_);
  v.fill(window_mean_v_, 0.0, all);
  v.fill(window_m2_v_, 0.0, all);
}

void MetricAdaptation::use_dense(const DenseMetric& dense) {
  dense_ = dense.dense_coordinates();
  rest_ = dense.other_coordinates();
  const long rows = per_chain_ ? C_ : 1, G = static_cast<long>(dense_.size());
  dense_mean_.assign(rows * G, 0.0);
  dense_m2_.assign(rows * G * G, 0.0);
  dense_g2_.assign(rows * G * G, 0.0);
  rest_mean_.assign(rest_.empty() ? 0 : rows * D_, 0.0);
  rest_m2_.assign(rest_.empty() ? 0 : rows * D_, 0.0);
}

void MetricAdaptation::add_diagonal(ChainVectors& v, const double* x_v, const ChainMask& from) {
  v.window_update(window_mean_v_, window_m2_v_, x_v, static_cast<double>(window_n_), !per_chain_,
                  from);
  window_n_ += per_chain_ ? 1 : from.count();
}

// Welford's update of the window's means and co-moments by the chains'
// states, with window_n_ draws already in the window (per row).
void MetricAdaptation::add_dense(const double* x, const double* grad, const ChainMask& from) {
  const long D = D_, G = static_cast<long>(dense_.size());
  std::vector<double> delta(G), y(G);
  double pooled_n = static_cast<double>(window_n_);
  for (long c = 0; c < C_; ++c) {
    if (!per_chain_ && !from[c]) continue;
    const long row = per_chain_ ? c : 0;
    double* mean = dense_mean_.data() + row * G;
    double* m2 = dense_m2_.data() + row * G * G;
    const double n = per_chain_ ? window_n_ + 1.0 : (pooled_n += 1);
    const double* xc = x + c * D;
    for (long i = 0; i < G; ++i) {
      y[i] = xc[dense_[i]];
      delta[i] = y[i] - mean[i];
      mean[i] += delta[i] / n;
    }
    for (long i = 0; i < G; ++i)
      for (long j = 0; j < G; ++j) m2[i * G + j] += delta[i] * (y[j] - mean[j]);
    if (!rest_.empty()) {
      double* rmean = rest_mean_.data() + row * D;
      double* rm2 = rest_m2_.data() + row * D;
      for (long i : rest_) {
        const double d = xc[i] - rmean[i];
        rmean[i] += d / n;
        rm2[i] += d * (xc[i] - rmean[i]);
      }
    }
    if (grad) {
      const double* g = grad + c * D;
      double* g2 = dense_g2_.data() + row * G * G;
      for (long i = 0; i < G; ++i)
        for (long j = 0; j < G; ++j) g2[i * G + j] += g[dense_[i]] * g[dense_[j]];
    }
  }
  window_n_ += per_chain_ ? 1 : from.count();
}

void MetricAdaptation::end_diagonal(ChainVectors& v, double* sd_v, double* m_v) {
  v.metric_from_window(sd_v, m_v, window_m2_v_, static_cast<double>(window_n_), !per_chain_);
  const ChainMask all = ChainMask::all(C_);
  v.fill(window_mean_v_, 0.0, all);
  v.fill(window_m2_v_, 0.0, all);
  ++next_window_;
  window_n_ = 0;
}

void MetricAdaptation::end_dense(DenseMetric& dense, double* x) {
  dense.adapt(dense_m2_.data(), static_cast<double>(window_n_), !per_chain_, dense_g2_.data(), x,
              rest_.empty() ? nullptr : rest_m2_.data());
  std::fill(rest_mean_.begin(), rest_mean_.end(), 0.0);
  std::fill(rest_m2_.begin(), rest_m2_.end(), 0.0);
  std::fill(dense_mean_.begin(), dense_mean_.end(), 0.0);
  std::fill(dense_m2_.begin(), dense_m2_.end(), 0.0);
  std::fill(dense_g2_.begin(), dense_g2_.end(), 0.0);
  ++next_window_;
  window_n_ = 0;
}

void MetricAdaptation::save(SavedState& s, ChainVectors& v, bool sums) const {
  s.put("metric_window", {static_cast<double>(next_window_), static_cast<double>(window_n_)});
  if (!sums) return;  // (sampling: a model of millions of parameters writes less)
  if (window_mean_v_) {
    std::vector<double> mean(C_ * D_), m2(C_ * D_);
    v.download(mean.data(), window_mean_v_);
    v.download(m2.data(), window_m2_v_);
    s.put("metric_window_mean", std::move(mean));
    s.put("metric_window_m2", std::move(m2));
  }
  s.put("metric_dense_mean", dense_mean_);
  s.put("metric_dense_m2", dense_m2_);
  s.put("metric_dense_g2", dense_g2_);
  s.put("metric_rest_mean", rest_mean_);
  s.put("metric_rest_m2", rest_m2_);
}

void MetricAdaptation::restore(const SavedState& s, ChainVectors& v) {
  const std::vector<double>& at = s.get("metric_window", 2);
  next_window_ = static_cast<size_t>(at[0]);
  window_n_ = static_cast<long>(at[1]);
  if (next_window_ > schedule_.window_ends.size())
    throw std::invalid_argument("the sampler's saved metric window is past its warmup's");
  if (!s.has("metric_window_mean")) return;  // saved in sampling, where the sums are unused
  if (window_mean_v_) {
    v.upload(window_mean_v_, s.get("metric_window_mean", C_ * D_).data());
    v.upload(window_m2_v_, s.get("metric_window_m2", C_ * D_).data());
  }
  auto take = [&s](const char* name, std::vector<double>& to) {
    to = s.get(name, static_cast<long>(to.size()));
  };
  take("metric_dense_mean", dense_mean_);
  take("metric_dense_m2", dense_m2_);
  take("metric_dense_g2", dense_g2_);
  take("metric_rest_mean", rest_mean_);
  take("metric_rest_m2", rest_m2_);
}

}  // namespace lockstep
