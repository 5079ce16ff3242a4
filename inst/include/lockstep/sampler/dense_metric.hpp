// A dense metric (Stan's dense_e) as a change of variables.
//
// Leapfrog dynamics with the inverse mass matrix Sigma = L L' in the model's
// coordinates x are the dynamics with the identity in y = L^-1 x: momenta,
// kinetic energy, U-turn criteria and Metropolis steps are the same numbers
// either way. So a sampler with a dense metric samples y through this
// target, which maps each chain's y to x = L y for the model and the model's
// gradient back to L' dlp/dx, and keeps a unit diagonal metric of its own:
// every leapfrog sampler, every backend's vector operations and the fused
// NUTS leaf work unchanged, and the cost is two triangular products per
// gradient (C x D^2), small beside the gradient of a model small enough to
// want a dense metric. Warmup (MetricAdaptation, metric_adaptation.hpp) estimates the
// covariance of the draws of each metric window, as Stan does, and moves
// the chains' states to the new coordinates (adapt()); draws leave the
// sampler through to_model().
//
// The factor is per chain ([chains, dim, dim], row-major lower triangles);
// pooled, every chain's is the same.
//
// Chosen automatically (Choice::automatic, mcmc()'s default through
// metric = "auto"), each window's covariance becomes a dense factor only when
// its correlations leave a diagonal metric badly conditioned beyond what the
// window's sampling noise alone would (dense_is_worth_it()), and the window's
// gradients show a posterior close enough to a Gaussian for one covariance to
// serve all of it (dense_fits_gradients()); otherwise the factor is
// diagonal, its standard deviations: the diagonal metric, with products of
// O(dim) per gradient.
//
// The factor may cover some coordinates only (`dense`, issue 35): a
// hierarchical model's global parameters, whose correlations a dense metric
// is for, while its group-level parameters, far too many for a dense
// factor and owned by shards, keep a diagonal one (their standard
// deviations, `scale`). x = L y on the dense coordinates and x_i = s_i y_i
// on the others: the same change of variables with a block-diagonal
// factor. On a rank that owns its groups (owned_shard.hpp) the dense
// coordinates are the replicated global ones, so every rank learns the
// same factor from the same draws and each its own groups' scales, with
// nothing exchanged; the sampler's sums over the ranks pass through
// (vectors()).
#ifndef LOCKSTEP_SAMPLER_DENSE_METRIC_HPP
#define LOCKSTEP_SAMPLER_DENSE_METRIC_HPP

#include <memory>
#include <vector>

#include "../executor.hpp"

namespace lockstep {

// The most free parameters a dense metric takes: its factor is chains x D^2
// values and each gradient costs as many multiply-adds.
constexpr long max_dense_dim = 2000;
// The most free parameters for which metric = "auto" considers a dense
// metric: a window of a few hundred draws cannot estimate more covariances
// than this well, and a model this small has a gradient cheap enough that
// C x D^2 per gradient is not a burden beside it.
constexpr long max_auto_dense_dim = 100;

class DenseMetric final : public Target {
 public:
  // model: the model's target; dense: the coordinates the factor covers,
  // increasing (empty: every one); factor: empty (the identity), one g x g
  // lower triangle (row-major, g the dense coordinates) for every chain, or
  // one per chain; scale: the other coordinates' standard deviations, empty
  // (1), dim values or chains x dim (those of the dense coordinates unread).
  DenseMetric(Target& model, const std::vector<double>& factor = {},
              std::vector<long> dense = {}, const std::vector<double>& scale = {});
  // The same over a model it owns (a chain group's executor).
  DenseMetric(std::unique_ptr<Target> model, const std::vector<double>& factor = {},
              std::vector<long> dense = {}, const std::vector<double>& scale = {});

  // What adapt() makes of a window: always a dense factor, or one chosen
  // between dense and diagonal by dense_is_worth_it().
  enum class Choice { dense, automatic };
  void set_choice(Choice choice) { choice_ = choice; }
  Choice choice() const { return choice_; }

  long dim() const override { return D_; }
  long chains() const override { return C_; }
  void log_density(const double* y, double* lp, double* grad) override;
  ThreadPool* pool() override { return model_.pool(); }
  // Over a model that holds part of the whole state (owned_shard.hpp), the
  // sampler's sums still go over every part: host vectors of this target
  // whose sums are the model's sum_over_parts(), and the model's indices.
  std::unique_ptr<ChainVectors> vectors() override;
  long full_dim() const override { return model_.full_dim(); }
  const std::vector<long>* full_index() const override { return model_.full_index(); }
  long counted_from() const override { return model_.counted_from(); }
  void sum_over_parts(double* values, long n) override { model_.sum_over_parts(values, n); }
  void max_over_parts(double* values, long n) override { model_.max_over_parts(values, n); }
  CommunicatorStats exchanged() const override { return model_.exchanged(); }

  // The coordinates the factor covers, increasing, the others (increasing),
  // and whether the factor covers all.
  const std::vector<long>& dense_coordinates() const { return dense_; }
  const std::vector<long>& other_coordinates() const { return rest_; }
  bool covers_all() const { return G_ == D_; }

  // x = L y for `rows` rows of y ([rows, dim]; row r is chain r % chains).
  void to_model(const double* y, double* x, long rows) const;
  // y = L^-1 x for every chain.
  void to_sampler(const double* x, double* y) const;
  // From the co-moments of a metric window's draws y (m2: [dim, dim] row
  // major, pooled, or [chains, dim, dim] per chain, over n draws), the
  // model's covariance S = L cov(y) L', regularised as Stan regularises it
  // but relative to each variance, (n / (n + 5)) S + (5 / (n + 5))
  // (1e-3 diag(S) + 1e-10 I), is the new Sigma = L L' (Stan's 1e-3 I, the
  // same for every scale, would swamp the covariance of a parameter whose
  // posterior sd is 0.003: the correlations a dense metric is for would be
  // lost); the chains' states y ([chains, dim]) move to the new coordinates.
  // With a factor over some coordinates only, m2 is theirs ([g, g] or
  // [chains, g, g]), and rest_m2 ([dim] or [chains, dim]) holds the others'
  // sums of squared deviations, whose variances are regularised alike.
  //
  // Chosen automatically, g2 ([g, g] or [chains, g, g], like m2) holds
  // the sums of the products of the window's gradients in the sampler's
  // coordinates (dlp/dy), for dense_fits_gradients(); nullptr leaves the
  // choice to the correlations alone.
  void adapt(const double* m2, double n, bool pooled, const double* g2, double* y,
             const double* rest_m2 = nullptr);
  // [chains, g, g]: each chain's factor over the dense coordinates.
  const std::vector<double>& factor() const { return L_; }
  // [chains, dim]: the sds of the coordinates that are not dense (1 at the
  // dense ones)
  const std::vector<double>& scales() const { return scale_; }
  // Replaces every chain's factor and scales with ones saved from a metric
  // of the same shape (factor(), scales()): restoring a sampler's state.
  void set_factors(const std::vector<double>& factor, const std::vector<double>& scale);
  // [chains, dim]: each chain's standard deviation of every coordinate in
  // the model's coordinates, sqrt(diag(L L')) and the others' scales.
  std::vector<double> model_sd() const;
  // Takes chains [c0, c0 + chains()) of `whole`'s factor and scales (a chain
  // group's metric from the whole sampler's).
  void take_chains(const DenseMetric& whole, long c0);
  // Whether chain c's factor has any value off its diagonal.
  bool is_dense(long c) const { return !diagonal_[c]; }

  // Whether a dense metric is worth learning from a covariance `cov` ([d, d],
  // row-major) estimated from n draws: whether its correlation matrix's
  // condition number (that of the posterior in a diagonal metric's
  // coordinates, whose square root sets the trajectories' length) exceeds
  // four times the one that n / 4 independent draws of uncorrelated
  // parameters would show by chance ((1 + r) / (1 - r))^2, r = sqrt(4 d / n),
  // the Marchenko-Pastur edges; n / 4 for the draws' autocorrelation). Below
  // that, a dense factor would fit mostly noise; with fewer than 4 d draws,
  // never.
  static bool dense_is_worth_it(const double* cov, long d, double n);
  // The condition number of the correlation matrix of `cov` ([d, d]).
  static double correlation_condition(const double* cov, long d);
  // Whether a dense metric from `cov` suits a posterior whose gradients have
  // second moments `grad2` ([d, d], model coordinates): for a Gaussian, grad2
  // is cov^-1, and in either metric's coordinates (factor L) the largest
  // eigenvalue of L' grad2 L, a curvature, times the largest of L^-1 cov
  // L^-T, a squared scale, is 1 for the dense factor and 1 times the
  // condition number of the correlations for the diagonal one. Away from a
  // Gaussian (a funnel, a latent Gaussian process's hyperparameters) the
  // curvature varies across the posterior and the products grow: the dense
  // metric is kept only if its product, its unevenness, is at most twice the
  // diagonal's divided by that condition number, or within what n draws'
  // noise could make of a Gaussian's (4 chance_condition(d, n), as in
  // dense_is_worth_it(): a short window's noise shrinks the correlations'
  // smallest eigenvalue, and with it the diagonal's unevenness). On
  // posteriordb's reference posteriors the regressions give 1.1-1.3 for both;
  // gp_pois_regr, 28 for the dense metric against 8 for the diagonal, and
  // with the dense metric 3% of its draws diverged.
  static bool dense_fits_gradients(const double* cov, const double* grad2, long d, double n);
  // The largest condition number that a correlation matrix estimated from n
  // draws of d uncorrelated parameters shows by chance, taking n / 4 of them
  // as independent: ((1 + r) / (1 - r))^2, r = sqrt(4 d / n) (infinite for
  // r >= 1).
  static double chance_condition(long d, double n);

 private:
  void find_diagonal_factors();
  std::unique_ptr<Target> owned_;  // the model, when this metric owns it
  Target& model_;
  long C_, D_, G_;               // G_: the dense coordinates
  std::vector<long> dense_;      // [G_], increasing
  std::vector<long> rest_;       // the other coordinates, increasing
  Choice choice_ = Choice::dense;
  std::vector<double> L_;        // [chains, G_, G_], lower triangles, row-major
  std::vector<double> scale_;    // [chains, dim]: the rest's sds (1 at dense ones)
  std::vector<char> diagonal_;   // per chain: its factor is diagonal
  std::vector<double> x_, gx_;   // scratch, [chains, dim]
};

// The lower Cholesky factor of the symmetric positive definite [n, n]
// (row-major) a, in place (the upper triangle set to zero); false if a is
// not positive definite.
bool cholesky_lower(double* a, long n);

}  // namespace lockstep

#endif
