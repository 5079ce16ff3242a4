// Stochastic variational inference (svi.hpp): the mean-field guide recovers
// an independent Gaussian posterior exactly, a point mass finds the mode,
// the ELBO's estimate averages to its closed form on a correlated Gaussian,
// and the importance-weighted bound lies between the ELBO and the log
// evidence, tighter with more particles.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "lockstep/svi.hpp"
#include "models.hpp"
#include "sampler_helpers.hpp"

using lockstep::Svi;
using lockstep::SviSettings;

namespace {

// A normalised bivariate normal (log evidence 0): means m, sds s, correlation r.
class Bivariate final : public lockstep::Target {
 public:
  Bivariate(double m1, double m2, double s1, double s2, double r, long chains)
      : m_{m1, m2}, s_{s1, s2}, r_(r), C_(chains) {}
  long dim() const override { return 2; }
  long chains() const override { return C_; }
  void log_density(const double* x, double* lp, double* grad) override {
    const double k = 1 / (1 - r_ * r_);
    for (long c = 0; c < C_; ++c) {
      const double a = (x[2 * c] - m_[0]) / s_[0], b = (x[2 * c + 1] - m_[1]) / s_[1];
      lp[c] = -0.5 * k * (a * a - 2 * r_ * a * b + b * b) -
              std::log(2 * M_PI * s_[0] * s_[1] * std::sqrt(1 - r_ * r_));
      if (grad) {
        grad[2 * c] = -k * (a - r_ * b) / s_[0];
        grad[2 * c + 1] = -k * (b - r_ * a) / s_[1];
      }
    }
  }
  // The ELBO of q = N(mu, diag(sd^2)): E_q log p + H(q), in closed form.
  double elbo(const std::vector<double>& mu, const std::vector<double>& sd) const {
    const double k = 1 / (1 - r_ * r_);
    const double a = (mu[0] - m_[0]) / s_[0], b = (mu[1] - m_[1]) / s_[1];
    const double va = sd[0] * sd[0] / (s_[0] * s_[0]), vb = sd[1] * sd[1] / (s_[1] * s_[1]);
    const double e_quad = k * (a * a - 2 * r_ * a * b + b * b + va + vb);
    const double e_logp = -0.5 * e_quad - std::log(2 * M_PI * s_[0] * s_[1] * std::sqrt(1 - r_ * r_));
    const double entropy = std::log(2 * M_PI * M_E * sd[0] * sd[1]);
    return e_logp + entropy;
  }

 private:
  double m_[2], s_[2], r_;
  long C_;
};

SviSettings adam(double lr, const std::string& guide = "mean_field") {
  SviSettings s;
  s.guide = guide;
  s.optimiser.method = "adam";
  s.optimiser.params["learning_rate"] = lr;
  return s;
}

// The mean of n losses at a fixed guide (a learning rate of 0), and their sd.
double mean_loss(Svi& svi, long n, double* sd) {
  double s = 0, s2 = 0;
  for (long k = 0; k < n; ++k) {
    const double l = svi.step();
    s += l;
    s2 += l * l;
  }
  const double m = s / n;
  *sd = std::sqrt((s2 / n - m * m) / n);
  return m;
}

// A bivariate guide's mean, covariance ([2, 2], from cov_of(svi)) and loss,
// averaged over the last 2000 of 6000 iterations (stochastic gradients leave
// each iterate a little off the optimum).
struct Averaged {
  std::vector<double> mu = std::vector<double>(2, 0.0), cov = std::vector<double>(4, 0.0);
  double loss = 0;
};
template <class CovOf> Averaged averaged_fit(Svi& svi, const CovOf& cov_of) {
  Averaged out;
  for (long t = 0; t < 6000; ++t) {
    const double l = svi.step();
    REQUIRE(std::isfinite(l));
    if (t < 4000) continue;
    const std::vector<double> cov = cov_of(svi);
    for (long i = 0; i < 2; ++i) out.mu[i] += svi.mean()[i] / 2000;
    for (long k = 0; k < 4; ++k) out.cov[k] += cov[k] / 2000;
    out.loss += l / 2000;
  }
  return out;
}

}  // namespace

TEST_CASE("svi: the mean-field guide recovers an independent Gaussian posterior",
          "[svi]") {
  const std::vector<double> mu = {1.5, -3, 0.2, 10}, sd = {0.5, 2, 0.1, 5};
  for (long particles : {4L, 16L}) {
    INFO("particles " << particles);
    sampler_tests::IndependentGaussian model(mu, sd, particles);
    SviSettings s = adam(0.05);
    s.decay_rate = 0.01;  // to a hundredth of the learning rate over the run
    s.decay_steps = 6000;
    Svi svi(model, s, std::vector<double>(4, 0.0), 3, 4);
    // the guide averaged over the last 2000 iterations (stochastic
    // gradients leave each iterate off the optimum by about sqrt(lr sd /
    // particles))
    std::vector<double> got_mu(4, 0.0), got_sd(4, 0.0);
    for (long t = 0; t < 6000; ++t) {
      REQUIRE(std::isfinite(svi.step()));
      if (t < 4000) continue;
      for (long i = 0; i < 4; ++i) got_mu[i] += svi.mean()[i] / 2000, got_sd[i] += svi.sd()[i] / 2000;
    }
    CHECK(svi.iterations() == 6000);
    for (long i = 0; i < 4; ++i) {
      INFO("coordinate " << i);
      CHECK(std::fabs(got_mu[i] - mu[i]) < 0.03 * sd[i]);
      CHECK(std::fabs(got_sd[i] / sd[i] - 1) < 0.03);
    }
  }
}

TEST_CASE("svi: the guide's own work on threads gives the same fit as on one", "[svi]") {
  // 9,000 coordinates: three blocks of the particles' and the gradient's
  // tasks per particle
  const long D = 9000;
  std::vector<double> mu(D), sd(D);
  for (long i = 0; i < D; ++i) mu[i] = 0.001 * i - 3, sd[i] = 0.5 + 0.0003 * i;
  for (const std::string guide : {"mean_field", "delta", "low_rank"}) {
    INFO(guide);
    const long particles = guide == "delta" ? 1 : 3;
    sampler_tests::IndependentGaussian model(mu, sd, particles);
    std::vector<std::vector<double>> losses, means;
    for (int threads : {0, 2, 3}) {
      SviSettings s = adam(0.05, guide);
      s.rank = 3;  // (a low-rank guide's: its sums over coordinates in blocks too)
      s.threads = threads;
      Svi svi(model, s, std::vector<double>(D, 0.0), 3, 4);
      std::vector<double> loss;
      for (int t = 0; t < 20; ++t) loss.push_back(svi.step());
      losses.push_back(loss);
      means.push_back(svi.mean());
    }
    CHECK(std::isfinite(losses[0].back()));
    CHECK(losses[1] == losses[0]);
    CHECK(losses[2] == losses[0]);
    CHECK(means[1] == means[0]);
    CHECK(means[2] == means[0]);
  }
}

TEST_CASE("svi: a point mass finds the mode", "[svi]") {
  Bivariate model(1, -2, 3, 0.5, 0.8, 1);
  Svi svi(model, adam(0.05, "delta"), {0, 0}, 5, 6);
  for (long t = 0; t < 3000; ++t) svi.step();
  CHECK(svi.mean()[0] == Approx(1).margin(1e-3));
  CHECK(svi.mean()[1] == Approx(-2).margin(1e-3));
  CHECK(svi.sd() == std::vector<double>{0, 0});
  Bivariate four(1, -2, 3, 0.5, 0.8, 4);
  CHECK_THROWS_AS(Svi(four, adam(0.05, "delta"), {0, 0}, 5, 6), std::invalid_argument);
}

TEST_CASE("svi: the ELBO's estimate and the importance-weighted bounds", "[svi]") {
  // a mean-field guide, held fixed, on a correlated Gaussian whose log
  // evidence is 0: the ELBO's estimates average to its closed form; the
  // importance-weighted bound (alpha = 0) lies above it and below 0, and
  // tightens with more particles
  const std::vector<double> mu = {0.8, -1.7}, sd = {1.5, 0.3};
  auto fixed = [&](long particles, double alpha, double* err) {
    Bivariate model(1, -2, 3, 0.5, 0.8, particles);
    SviSettings s = adam(0);
    s.alpha = alpha;
    Svi svi(model, s, mu, 7, 8);
    svi.set_guide(mu, {sd[0], 0, 0, sd[1]});
    const double m = -mean_loss(svi, 20000, err);
    CHECK(svi.mean() == mu);  // (a learning rate of 0)
    return m;
  };
  Bivariate reference(1, -2, 3, 0.5, 0.8, 1);
  double e1, e4, w2, w8;
  const double elbo = fixed(1, 1, &e1), elbo4 = fixed(4, 1, &e4);
  const double iw2 = fixed(2, 0, &w2), iw8 = fixed(8, 0, &w8);
  const double exact = reference.elbo(mu, sd);
  CHECK(std::fabs(elbo - exact) < 4 * e1);
  CHECK(std::fabs(elbo4 - exact) < 4 * e4);
  CHECK(iw2 > elbo + 4 * (w2 + e1));
  CHECK(iw8 > iw2 + 4 * (w8 + w2));
  CHECK(iw8 < 4 * w8);
}

TEST_CASE("svi: a full-rank guide recovers a correlated Gaussian posterior", "[svi]") {
  // the exact posterior is in its family: the guide's L L' is the
  // covariance, and its ELBO the log evidence, 0
  const double s1 = 3, s2 = 0.5, r = 0.8;
  Bivariate model(1, -2, s1, s2, r, 8);
  SviSettings s = adam(0.05, "full_rank");
  s.decay_rate = 0.01;
  s.decay_steps = 6000;
  Svi svi(model, s, {0, 0}, 9, 10);
  const Averaged fit = averaged_fit(svi, [](const Svi& v) {
    const std::vector<double> L = v.scale();
    CHECK(L[1] == 0);  // lower triangular
    std::vector<double> cov(4);
    for (long i = 0; i < 2; ++i)
      for (long j = 0; j < 2; ++j) cov[i * 2 + j] = L[i * 2] * L[j * 2] + L[i * 2 + 1] * L[j * 2 + 1];
    return cov;
  });
  const std::vector<double>&mu = fit.mu, &cov = fit.cov;
  const double loss = fit.loss;
  CHECK(std::fabs(mu[0] - 1) < 0.03 * s1);
  CHECK(std::fabs(mu[1] + 2) < 0.03 * s2);
  CHECK(std::fabs(cov[0] / (s1 * s1) - 1) < 0.06);
  CHECK(std::fabs(cov[3] / (s2 * s2) - 1) < 0.06);
  CHECK(std::fabs(cov[1] / std::sqrt(cov[0] * cov[3]) - r) < 0.02);
  CHECK(std::fabs(loss) < 0.02);  // the bound reaches the log evidence
  // a mean-field guide's sds on the same posterior are the conditional ones,
  // s sqrt(1 - r^2): narrower
  Bivariate eight(1, -2, s1, s2, r, 8);
  SviSettings mf = s;
  mf.guide = "mean_field";
  Svi narrow(eight, mf, {0, 0}, 9, 10);
  for (long t = 0; t < 6000; ++t) narrow.step();
  CHECK(std::fabs(narrow.sd()[0] / (s1 * std::sqrt(1 - r * r)) - 1) < 0.06);
}

TEST_CASE("svi: a low-rank guide recovers a correlated Gaussian posterior", "[svi]") {
  // rank 1 plus a diagonal covers any 2 x 2 covariance: the exact posterior
  // is in the family, so the guide's W W' + diag(d^2) is the covariance and
  // its bound the log evidence, 0 (log q by Woodbury's identity)
  const double s1 = 3, s2 = 0.5, r = 0.8;
  for (double alpha : {1.0, 0.0}) {
    INFO("alpha " << alpha);
    Bivariate model(1, -2, s1, s2, r, 8);
    SviSettings s = adam(0.05, "low_rank");
    s.rank = 1;
    s.alpha = alpha;
    s.decay_rate = 0.01;
    s.decay_steps = 6000;
    Svi svi(model, s, {0, 0}, 11, 12);
    const Averaged fit = averaged_fit(svi, [](const Svi& v) {
      const std::vector<double> W = v.factor(), d = v.diagonal();
      REQUIRE(W.size() == 2);
      std::vector<double> cov(4);
      for (long i = 0; i < 2; ++i)
        for (long j = 0; j < 2; ++j) cov[i * 2 + j] = W[i] * W[j] + (i == j ? d[i] * d[i] : 0);
      return cov;
    });
    const std::vector<double>&mu = fit.mu, &cov = fit.cov;
    const double loss = fit.loss;
    CHECK(std::fabs(mu[0] - 1) < 0.03 * s1);
    CHECK(std::fabs(mu[1] + 2) < 0.03 * s2);
    CHECK(std::fabs(loss) < 0.02);
    // (the importance-weighted bound is flat around its optimum, flatter with
    // more particles, and its gradient in the guide's parameters noisy
    // (Rainforth et al. 2018): in as many iterations its guide's covariance
    // settles 10-20% from the posterior's while the bound is within 0.01 of
    // the log evidence; the full-rank guide's does the same)
    if (alpha == 1) {
      CHECK(std::fabs(cov[0] / (s1 * s1) - 1) < 0.06);
      CHECK(std::fabs(cov[3] / (s2 * s2) - 1) < 0.06);
      CHECK(std::fabs(cov[1] / std::sqrt(cov[0] * cov[3]) - r) < 0.02);
    }
    const std::vector<double> sd = svi.sd();
    CHECK(sd[0] == Approx(std::sqrt(svi.factor()[0] * svi.factor()[0] +
                                    svi.diagonal()[0] * svi.diagonal()[0])));
  }
}

TEST_CASE("svi: bad settings are refused", "[svi]") {
  sampler_tests::IndependentGaussian model({0}, {1}, 2);
  SviSettings s = adam(0.1);
  s.guide = "full_rank_someday";
  CHECK_THROWS_AS(Svi(model, s, {0}, 1, 2), std::invalid_argument);
  s = adam(0.1);
  s.optimiser.method = "bfgs";
  CHECK_THROWS_AS(Svi(model, s, {0}, 1, 2), std::invalid_argument);
  CHECK_THROWS_AS(Svi(model, adam(0.1), {0, 1}, 1, 2), std::invalid_argument);
  sampler_tests::IndependentGaussian big(std::vector<double>(lockstep::max_full_rank_dim + 1, 0.0),
                                         std::vector<double>(lockstep::max_full_rank_dim + 1, 1.0), 1);
  CHECK_THROWS_WITH(Svi(big, adam(0.1, "full_rank"),
                        std::vector<double>(lockstep::max_full_rank_dim + 1, 0.0), 1, 2),
                    Catch::Contains("at most 1000 free parameters"));
  SviSettings low = adam(0.1, "low_rank");
  low.rank = 2;  // more than the free parameters
  CHECK_THROWS_AS(Svi(model, low, {0}, 1, 2), std::invalid_argument);
  Svi mf(model, adam(0.1), {0}, 1, 2);
  CHECK_THROWS_AS(mf.set_guide({0}, {-1}), std::invalid_argument);
}

namespace {

// A target whose gradient is NaN at coordinate 0 once x_0 passes `at` (its
// log density stays finite): the step must be refused and the guide kept.
class NanGradientPast final : public lockstep::Target {
 public:
  NanGradientPast(double at, long chains) : at_(at), C_(chains) {}
  long dim() const override { return 2; }
  long chains() const override { return C_; }
  void log_density(const double* x, double* lp, double* grad) override {
    for (long c = 0; c < C_; ++c) {
      lp[c] = -0.5 * (x[2 * c] * x[2 * c] + x[2 * c + 1] * x[2 * c + 1]);
      if (!grad) continue;
      grad[2 * c] = x[2 * c] > at_ ? std::nan("") : -x[2 * c];
      grad[2 * c + 1] = -x[2 * c + 1];
    }
  }

 private:
  double at_;
  long C_;
};

// Fits a guide with settings s twice over the demand model d on `backend`
// with `particles`, the guide on the host and on the target's vectors, and
// checks that the two give the same losses and guide.
void check_resident_fit(lstest::Demand& d, lockstep::Backend backend, SviSettings s,
                        long particles = 3) {
  lockstep::ExecOptions o;
  o.backend = backend;
  o.threads = 2;
  o.tile_rows = 16;
  o.alias_parameters = false;
  std::vector<std::vector<double>> losses, means, sds;
  for (int resident : {-1, 1}) {
    lockstep::Executor<double> target(d.p, particles, o);
    s.resident = resident;
    Svi svi(target, s, std::vector<double>(d.p.n_free, 0.1), 7, 8);
    CHECK(svi.resident() == (resident == 1));
    std::vector<double> loss;
    for (int t = 0; t < 25; ++t) loss.push_back(svi.step());
    loss.push_back(svi.bound());
    losses.push_back(loss);
    means.push_back(svi.mean());
    sds.push_back(svi.sd());
  }
  for (size_t t = 0; t < losses[0].size(); ++t) {
    INFO("iteration " << t);
    REQUIRE(std::isfinite(losses[0][t]));
    CHECK(lstest::close(losses[1][t], losses[0][t], 1e-9, 1e-9));
  }
  long moved = 0;
  for (long i = 0; i < d.p.n_free; ++i) {
    INFO("coordinate " << i);
    CHECK(lstest::close(means[1][i], means[0][i], 1e-9, 1e-9));
    CHECK(lstest::close(sds[1][i], sds[0][i], 1e-9, 1e-9));
    moved += means[1][i] != 0.1;
  }
  CHECK(moved == d.p.n_free);  // the guide moved
}

}  // namespace

// A mean-field guide may live on its target's vectors (a GPU's memory;
// kernels/mean_field.hpp). The same bodies run on the CPU and, lane by lane,
// on the emulated backend: each must give the host guide's losses and
// guide, on a model with an observation stage (the demand model's shape),
// with the ELBO and the importance-weighted bound, a decaying rate and
// minibatches.
TEST_CASE("svi: a mean-field guide on the target's vectors gives the host guide's fit",
          "[svi][resident]") {
  std::mt19937 rng(361);
  lstest::Demand d = lstest::demand(300, 7, 4, rng);
  lockstep::plan(d.p);
  for (lockstep::Backend backend : {lockstep::Backend::cpu, lockstep::Backend::emulated})
    for (double alpha : {1.0, 0.0})
      for (double fraction : {1.0, 0.5}) {
        INFO("backend " << static_cast<int>(backend) << " alpha " << alpha << " fraction "
                        << fraction);
        SviSettings s = adam(0.05);
        s.alpha = alpha;
        s.decay_rate = 0.5;
        s.decay_steps = 20;
        s.batch_fraction = fraction;
        check_resident_fit(d, backend, s);
      }
  // where the vectors are in host memory the guide stays there by default
  sampler_tests::IndependentGaussian model({1, 2}, {1, 1}, 2);
  CHECK(!Svi(model, adam(0.1), {0, 0}, 1, 2).resident());
  SviSettings forced = adam(0.1);
  forced.resident = 1;
  CHECK(Svi(model, forced, {0, 0}, 1, 2).resident());
  // a point mass lives there too (every particle at mu)
  for (lockstep::Backend backend : {lockstep::Backend::cpu, lockstep::Backend::emulated}) {
    INFO("point mass, backend " << static_cast<int>(backend));
    check_resident_fit(d, backend, adam(0.05, "delta"), 1);
  }
  // and a low-rank guide (K's algebra on the host, the rest on the vectors),
  // with minibatches and the importance-weighted bound too
  for (lockstep::Backend backend : {lockstep::Backend::cpu, lockstep::Backend::emulated})
    for (long rank : {1L, 3L}) {
      INFO("low rank " << rank << ", backend " << static_cast<int>(backend));
      SviSettings low = adam(0.05, "low_rank");
      low.rank = rank;
      low.alpha = 0;
      low.batch_fraction = rank == 3 ? 0.5 : 1;
      check_resident_fit(d, backend, low);
    }
  // the full-rank guide stays on the host
  sampler_tests::IndependentGaussian one({1, 2}, {1, 1}, 1);
  SviSettings full = adam(0.1, "full_rank");
  full.resident = 1;
  CHECK(!Svi(one, full, {0, 0}, 1, 2).resident());
}

// Every first-order optimiser's step is one body (FirstOrderStep) wherever
// the guide lives: on the target's vectors each must give the host guide's
// fit, with its options that change the rule (momentum, Nesterov, amsgrad,
// a centred rms_prop, the proximal methods' penalties).
TEST_CASE("svi: a resident guide takes every first-order optimiser", "[svi][resident]") {
  std::mt19937 rng(362);
  lstest::Demand d = lstest::demand(200, 5, 3, rng);
  lockstep::plan(d.p);
  const std::vector<std::pair<std::string, std::map<std::string, double>>> optimisers = {
      {"gradient_descent", {{"learning_rate", 0.002}}},
      {"gradient_descent", {{"learning_rate", 0.002}, {"momentum", 0.5}, {"nesterov", 1}}},
      {"adam", {{"learning_rate", 0.05}, {"amsgrad", 1}}},
      {"adamax", {{"learning_rate", 0.05}}},
      {"nadam", {{"learning_rate", 0.05}}},
      {"adagrad", {{"learning_rate", 0.2}}},
      {"adadelta", {{"learning_rate", 0.5}, {"rho", 0.95}}},
      {"rms_prop", {{"learning_rate", 0.02}}},
      {"rms_prop", {{"learning_rate", 0.02}, {"centered", 1}, {"momentum", 0.5}}},
      {"ftrl", {{"learning_rate", 0.2}, {"l2_shrinkage_regularization_strength", 0.01}}},
      {"proximal_gradient_descent", {{"learning_rate", 0.002}, {"l1_regularization_strength", 0.01}}},
      {"proximal_adagrad", {{"learning_rate", 0.2}, {"l2_regularization_strength", 0.01}}},
      {"adagrad_da", {{"learning_rate", 0.2}, {"l1_regularization_strength", 0.001}}}};
  for (lockstep::Backend backend : {lockstep::Backend::cpu, lockstep::Backend::emulated})
    for (const auto& optimiser : optimisers) {
      INFO("backend " << static_cast<int>(backend) << " optimiser " << optimiser.first);
      SviSettings s;
      s.optimiser.method = optimiser.first;
      s.optimiser.params = optimiser.second;
      s.alpha = 0;
      check_resident_fit(d, backend, s);
    }
}

TEST_CASE("svi: a resident guide's parameters: set, read back, and kept by a refused step",
          "[svi][resident]") {
  SviSettings s = adam(0.2);
  s.resident = 1;
  sampler_tests::IndependentGaussian model({1, 2}, {1, 1}, 2);
  Svi svi(model, s, {0, 0}, 1, 2);
  REQUIRE(svi.resident());
  svi.set_guide({0.5, -0.5}, {0.3, 0, 0, 2});
  CHECK(svi.mean() == std::vector<double>{0.5, -0.5});
  CHECK(svi.sd()[0] == Approx(0.3));
  CHECK(svi.sd()[1] == Approx(2));
  CHECK_THROWS_AS(svi.set_guide({0, 0}, {0.3, 0, 0, -1}), std::invalid_argument);
  CHECK(svi.mean() == std::vector<double>{0.5, -0.5});  // a refused guide changes nothing
  REQUIRE(std::isfinite(svi.step()));
  CHECK(svi.mean() != std::vector<double>{0.5, -0.5});
  // a gradient that is not finite: the loss is NaN and the guide stays
  NanGradientPast nan_past(0.0, 2);
  Svi stuck(nan_past, s, {0, 0}, 1, 2);
  stuck.set_guide({1, 0}, {0.01, 0, 0, 0.01});
  const std::vector<double> before = stuck.mean(), sd_before = stuck.sd();
  CHECK(std::isnan(stuck.step()));
  CHECK(stuck.mean() == before);
  CHECK(stuck.sd() == sd_before);
}

namespace {

// A Gaussian about (3, 0) with no density past x_0 = at: a guide stepped
// there has a bound that is not finite.
class EdgeAt : public lockstep::Target {
 public:
  EdgeAt(double at, long chains) : at_(at), C_(chains) {}
  long dim() const override { return 2; }
  long chains() const override { return C_; }
  void log_density(const double* x, double* lp, double* grad) override {
    for (long c = 0; c < C_; ++c) {
      const double a = x[2 * c] - 3, b = x[2 * c + 1];
      lp[c] = x[2 * c] > at_ ? -INFINITY : -0.5 * (a * a + b * b);
      if (!grad) continue;
      grad[2 * c] = -a;
      grad[2 * c + 1] = -b;
    }
  }

 private:
  double at_;
  long C_;
};

}  // namespace

// A diverged fit ends where its bound was last finite (svi() says so): the
// guide before the last step that moved it, on the host and on the
// target's vectors, mean field and point mass; and restoring twice, or
// before any step, changes nothing.
TEST_CASE("svi: a diverged fit's guide goes back to where the bound was finite",
          "[svi][resident]") {
  for (const char* guide : {"delta", "mean_field"})
    for (int resident : {-1, 1}) {
      INFO(guide << ", resident " << resident);
      const bool point = std::string(guide) == "delta";
      EdgeAt edge(3.5, point ? 1 : 2);
      SviSettings s = adam(2.0, guide);  // adam's first steps are lr long
      s.init_scale = 1e-6;  // (the mean field's particles near its mean)
      s.resident = resident;
      Svi svi(edge, s, {0, 0}, 3, 4);
      CHECK(svi.resident() == (resident == 1));
      svi.restore_last_finite();  // nothing to go back to
      CHECK(svi.mean() == std::vector<double>{0, 0});
      std::vector<double> before;
      int steps = 0;
      for (; steps < 10; ++steps) {
        const std::vector<double> mean = svi.mean();
        if (!std::isfinite(svi.step())) break;
        before = mean;
      }
      REQUIRE(steps >= 1);
      REQUIRE(steps < 10);  // it left the density's support
      REQUIRE(svi.mean()[0] > 3.5);
      svi.restore_last_finite();
      CHECK(svi.mean() == before);
      CHECK(std::isfinite(svi.bound()));
      svi.restore_last_finite();
      CHECK(svi.mean() == before);
      // a guide set is where a fit goes back to
      const std::vector<double> scale = point ? std::vector<double>{}
                                              : std::vector<double>{0.5, 0, 0, 0.5};
      svi.set_guide({1, 1}, scale);
      REQUIRE(std::isfinite(svi.step()));
      svi.set_guide({1.5, 1}, scale);
      svi.restore_last_finite();
      CHECK(svi.mean() == std::vector<double>{1.5, 1});
    }
}
