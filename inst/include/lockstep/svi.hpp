// Stochastic variational inference (svi(), issue 36): a guide q over the
// model's unconstrained free state, fitted by maximising a bound on the log
// evidence with reparameterised draws, whose particles are the target's
// chains: one engine call per iteration evaluates every particle's log
// density and gradient, as one leapfrog step of all chains does.
//
// Guides (the guide's parameters phi, updated by a first-order optimiser,
// first_order.hpp):
//   mean_field  independent normals (NumPyro's AutoNormal): phi = (mu,
//               omega), z = mu + exp(omega) eps, eps ~ N(0, I)
//   full_rank   a multivariate normal (AutoMultivariateNormal): phi = (mu,
//               theta), z = mu + L eps, L lower triangular with theta its
//               entries below the diagonal and the logs of those on it; for
//               models of up to max_full_rank_dim free parameters (C D^2 work
//               an iteration)
//   low_rank    a normal whose covariance is W W' + diag(d^2), W [dim,
//               rank] (AutoLowRankMultivariateNormal): phi = (mu, W, rho),
//               d = exp(rho), z = mu + W e1 + d e2 for rank + dim normals;
//               its correlations at O(dim rank) an iteration, for models of
//               any size
//   delta       a point mass at mu (AutoDelta): the MAP of the free state
//               (with the log |Jacobian|), every particle at mu
//
// Objectives, for particles z_1..z_C with log weights w_c = log p(z_c) -
// log q(z_c):
//   alpha = 1   the ELBO, mean(w)
//   alpha != 1  Renyi's bound 1 / (1 - alpha) log mean(exp((1 - alpha) w));
//               alpha = 0 is the importance-weighted bound (seed 003's
//               RenyiELBO), at least the ELBO and tighter with more particles
// whose gradient in phi is sum_c v_c d w_c / d phi, v the softmax of (1 -
// alpha) w (1 / C each for the ELBO); with z_c = mu + sigma eps_c, d w_c /
// d mu = g_c and d w_c / d omega = g_c sigma eps_c + 1 (g_c = dlog p /
// dz at z_c: log q's own dependence on phi at fixed eps is -omega's sum);
// full rank, d w_c / d L_ij = g_ci eps_cj below the diagonal and g_ci eps_ci
// L_ii + 1 for the log of L_ii. Low rank, z does not determine the normals,
// so log q(z) is the normal density by Woodbury's identity (K = I + W'
// diag(d^-2) W, u = Sigma^-1 (z - mu)) and its own dependence on phi enters:
// d w / d W_ab = (g_a + u_a) e1_b - u_a (u' W)_b + (Sigma^-1 W)_ab, and
// d w / d rho_a = (g_a + u_a) d_a e2_a - d_a^2 (u_a^2 - (Sigma^-1)_aa),
// with Sigma^-1 W = diag(d^-2) W K^-1.
//
// Each particle's normals are drawn by the counter-based generator keyed by
// (iteration, particle, coordinate), so set.seed() repeats a run.
//
// Over a target that holds part of the state (an MPI rank that owns its
// groups, owned_shard.hpp), each rank holds the guide's parameters of its
// own coordinates (a local variable's guide lives with its shard) and the
// replicated global ones: the normals are keyed by each coordinate's index
// in the whole state, log q's sums are made whole over the ranks (the global
// coordinates counted once), and the log density and the globals' gradient
// already are, so every rank's global parameters move alike and the fit is
// one process's up to the order of sums. A full-rank guide needs the whole
// state. The learning rate decays exponentially (seed 003's optax
// schedule): lr_t = lr decay_rate^(t / decay_steps), constant by default.
//
// Where the target's vectors are in a GPU's memory, a mean-field guide, a
// point mass or a low-rank guide lives there too (resident();
// kernels/mean_field.hpp, kernels/low_rank.hpp), fitted by any of the
// first-order optimisers (kernels/first_order_step.hpp): its parameters,
// the optimiser's state, the particles and their gradients never leave the
// GPU, and an iteration moves C numbers each way (log q's and the log
// density's per-particle sums; the bound's weights), and for a low-rank
// guide its k x k and C x k parts (K's sums and inverse, each particle's
// first normals, p, K^-1 p and u'W), whose algebra is the host's. The
// full-rank guide works on the host, the particles copied over and the
// gradient back.
#ifndef LOCKSTEP_SVI_HPP
#define LOCKSTEP_SVI_HPP

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "executor.hpp"
#include "first_order.hpp"
#include "sampler/chain_vectors.hpp"
#include "optimiser.hpp"
#include "rng.hpp"
#include "saved_state.hpp"

namespace lockstep {

// The most free parameters a full-rank guide takes (its factor has D (D +
// 1) / 2 parameters, and each particle costs D^2 an iteration).
constexpr long max_full_rank_dim = 1000;

struct SviSettings {
  std::string guide = "mean_field";  // "full_rank", "low_rank" or "delta"
  long rank = 1;                     // a low-rank guide's
  double alpha = 1;                  // Renyi's alpha: 1 the ELBO, 0 the importance-weighted bound
  OptimiserSettings optimiser;       // a first-order method ("adam" ...) and its parameters
  double decay_rate = 1, decay_steps = 1;
  double init_scale = 0.1;  // the guide's first standard deviations (NumPyro's)
  // Minibatches: the fraction of each observation stage's tiles that an
  // iteration evaluates (Minibatch, drawn afresh each iteration; 1: all).
  // The bound and its gradient are then unbiased estimates for the ELBO
  // (alpha = 1); Renyi's bound, a log of a mean, is estimated with a bias.
  double batch_fraction = 1;
  // Threads for the guide's own work (the particles' normals, the
  // gradient) where it is on the host: above 1, a pool of its own;
  // otherwise the target's threads (a GPU's executor has none, and its host
  // would draw 4 x D normals a step on one thread).
  int threads = 0;
  // Where a mean-field, point mass or low-rank guide lives: 0 where the
  // target's vectors are in a GPU's memory (ChainVectors::on_device), 1
  // wherever the vectors hold a guide (the CPU's and the emulated
  // backend's too: tests), -1 in host memory always. The full-rank guide, a
  // low-rank one whose sums are too many (k^2 + 1 or C (k + 1) above
  // max_mask_chains), and a target that holds part of the state keep
  // theirs in host memory.
  int resident = 0;
};

class Svi {
 public:
  // Over `target` (its chains: the particles; it must outlive this), the
  // guide's mean starting at init_mean ([dim]). Throws std::invalid_argument
  // for an unknown guide or optimiser, a delta guide with more than one
  // particle, or minibatches that the target cannot evaluate.
  Svi(Target& target, const SviSettings& settings, const std::vector<double>& init_mean,
      uint32_t key0, uint32_t key1);

  // One iteration: draws the particles, estimates the bound and its
  // gradient, and updates the guide. Returns the loss, minus the bound's
  // estimate; where it is not finite (every particle's log density, or the
  // gradient), the guide is left as it was and the loss is NaN.
  double step();
  // The bound's estimate at the current guide from particles drawn as
  // step() would draw them next, without updating or advancing (the
  // objective at a given guide, for tests).
  double bound();

  long iterations() const { return t_; }
  long dim() const { return D_; }
  // Whether the guide lives on the target's vectors (SviSettings::resident).
  bool resident() const { return resident_ != nullptr; }
  std::vector<double> mean() const {
    pull();
    return std::vector<double>(phi_.begin(), phi_.begin() + D_);
  }
  // The guide's standard deviations (0 for a point mass).
  std::vector<double> sd() const;
  // The guide's scale: [dim, dim] row-major lower triangular L, its
  // covariance L L' (diagonal for mean field, 0 for a point mass; not for
  // a low-rank guide).
  std::vector<double> scale() const;
  // A low-rank guide's W ([dim, rank], row-major) and d ([dim]).
  std::vector<double> factor() const;
  std::vector<double> diagonal() const;
  // Puts the guide back where the bound was last finite: as it was before
  // the last step that moved it (as it is, before any step or after
  // set_guide()). A fit whose optimiser diverged (its bound no longer
  // finite) ends there.
  void restore_last_finite();
  // Between iterations: everything the next ones depend on (the iteration,
  // the guide, its last finite copy, the optimiser's moments: saved_state.hpp;
  // the particles and minibatches are drawn by the iteration's number). A
  // fit made with the same settings and seeds over the same target and given
  // this state by restore_state() goes on exactly as this one would: a
  // checkpoint's resume (R/checkpoint.R). Refused when of another shape.
  SavedState save_state() const;
  void restore_state(const SavedState& s);
  // Replaces the guide's parameters: its mean, and its scale ([dim, dim]
  // lower triangular, positive diagonal; off-diagonal values must be 0 but
  // for a full-rank guide; ignored for a point mass).
  void set_guide(const std::vector<double>& mean, const std::vector<double>& scale);

 private:
  // The particles at iteration t (1-based) for the current guide, into z_,
  // their normals into eps_; then their log weights into w and the bound's
  // weights (the softmax) into v. Returns the bound, or NaN.
  double evaluate(long t, bool gradient, std::vector<double>& w, std::vector<double>& v);
  // Iteration t's minibatch (keyed by the run's keys and t).
  Minibatch minibatch(long t) const;
  // Where iteration t's normals start in each particle's stream: (k + the
  // whole state's) normals an iteration, in pairs (a low-rank guide's k
  // first; k = 0 for the others).
  uint64_t normals_position(long t) const;
  // Iteration t's normals for a guide on the vectors (MeanFieldDraw).
  MeanFieldDraw draw_at(long t) const;

  enum class Kind { mean_field, full_rank, low_rank, delta };
  static Kind kind_of(const std::string& guide);
  // the guide's parameters after mu: omega's D, or theta's D (D + 1) / 2
  // (row i's entries j <= i at i (i + 1) / 2 + j), or W's D k then rho's
  // D, or none
  static long scale_parameters(Kind kind, long D, long k);
  // The particles at iteration t into z_ and, but for log q's constant
  // (its sums made whole over the parts), -log q at each into w: from D
  // normals each (eps_) for a mean-field, full-rank or point mass guide;
  // from k + D for a low-rank one, which also keeps what the gradient needs
  // (e1_, u_ [C, D], Sigma^-1 W, diag(Sigma^-1)).
  void normal_particles(long t, std::vector<double>& w);
  // f(k) for k in [0, n): on the pool()'s threads where there are some
  // (each task writes its own values only).
  template <class F> void parallel(long n, F&& f);
  // SviSettings::threads', else the target's threads (nullptr: none).
  ThreadPool* pool();
  // The coordinates in fixed blocks of particle_block (svi.cpp), so that
  // sums over them are the same on any number of threads: how many, and
  // block b's [a0, a1).
  long coordinate_blocks() const;
  void coordinate_block(long b, long* a0, long* a1) const;
  // A sum of `width` values over the coordinates: add(a0, a1, s) adds
  // [a0, a1)'s terms into s, each block's on the pool's threads, then the
  // blocks' sums in order.
  template <class F> std::vector<double> sum_in_blocks(long width, F&& add);
  void low_rank_particles(long t, std::vector<double>& w);
  void low_rank_gradient(const std::vector<double>& v);
  // L's entry (i, j), j <= i, from phi
  double l_at(long i, long j) const;
  // A resident guide (resident()): the particles into its vectors, w as
  // normal_particles makes it; and its phi into phi_ when phi_ is stale.
  void resident_particles(long t, std::vector<double>& w);
  // A low-rank guide's resident_particles: K's sums and each particle's p
  // and u'W (into uw_, for the gradient) from the vectors, K's algebra here.
  void resident_low_rank_particles(long t, std::vector<double>& w);
  // K^-1 (into kinv) and log |Sigma| (returned) from K's sums (K - I's k^2
  // entries, then sum log d); each particle's K^-1 p (kp [C, k]) and -log q
  // but for its constant (w) from its p [C, k + 1].
  double low_rank_solve(const std::vector<double>& sums, std::vector<double>& kinv) const;
  void low_rank_weights(const std::vector<double>& p, const std::vector<double>& kinv,
                        double log_det_sigma, std::vector<double>& kp, std::vector<double>& w) const;
  void pull() const;

  Target& target_;
  SviSettings s_;
  Kind kind_;
  long C_, D_, K_;  // K_: a low-rank guide's rank (0 otherwise)
  const std::vector<long>* full_index_;  // each coordinate's in the whole state, or nullptr
  long full_dim_, counted_from_;         // the whole state's size; this part's first counted
  uint32_t key0_, key1_;
  long t_ = 0;
  double lr0_;
  // the optimiser's row: mu, then the scale's parameters (for a resident
  // guide, a copy of its vectors' when not phi_stale_)
  mutable std::vector<double> phi_;
  mutable bool phi_stale_ = false;
  // phi before the last step that moved it (restore_last_finite; a
  // resident guide's is its vectors' phi_before), and whether there was one
  std::vector<double> phi_before_;
  bool stepped_ = false;
  std::vector<double> grad_;
  std::vector<double> z_, eps_, lp_, g_;
  // low rank: each particle's first k normals [C, k], u = Sigma^-1 (z - mu)
  // [C, D], Sigma^-1 W [D, k] and diag(Sigma^-1) [D]
  std::vector<double> e1_, u_, sw_, sdiag_;
  std::vector<double> uw_;  // a resident low-rank guide's u'W [C, k], from particles to gradient
  FirstOrder rule_;
  std::unique_ptr<ThreadPool> own_pool_;
  // A resident guide's arrays on the target's vectors: phi, its gradient and
  // the optimiser's state a, b, u (FirstOrder's) [2 dim] ([dim] for a point
  // mass); the particles, their normals and gradients [chains, dim].
  // A low-rank guide's too: u [chains, dim] (whitened), Sigma^-1 W [dim,
  // k], diag(Sigma^-1) [dim], and the host's K^-1 [k, k], first normals,
  // K^-1 p and u'W [chains, k] and the bound's weights [chains].
  struct Resident {
    std::unique_ptr<ChainVectors> vectors;
    double *phi, *grad, *a, *b, *u, *z, *eps, *g, *phi_before;
    double *whitened = nullptr, *sw = nullptr, *sdiag = nullptr, *kinv = nullptr, *e1 = nullptr,
           *kp = nullptr, *uw = nullptr, *v = nullptr;
  };
  std::unique_ptr<Resident> resident_;
};

}  // namespace lockstep

#endif
