// Where a sampler keeps its [chains, dim] vectors and how it updates them: in
// host memory (the CPU and emulated backends) or in a GPU's memory next to the
// executor's buffers (device-resident sampling: per leapfrog step only the
// chains' log densities and a few dot products per chain cross to the host,
// never a vector). NUTS is written once against this interface; the
// operations are the lanes-policy bodies of kernels/chain_vectors.hpp.
//
// Arrays are raw pointers into the vectors' own memory, made by make() and
// freed with the ChainVectors. Every operation takes a ChainMask: the chains it
// touches. Operations are ordered: each sees the results of those before it.
#ifndef LOCKSTEP_SAMPLER_CHAIN_VECTORS_HPP
#define LOCKSTEP_SAMPLER_CHAIN_VECTORS_HPP

#include <memory>
#include <utility>
#include <vector>

#include "../executor.hpp"
#include "../kernels/chain_vectors.hpp"
#include "../kernels/first_order_step.hpp"
#include "../kernels/low_rank.hpp"
#include "../kernels/mean_field.hpp"
#include "../launcher.hpp"
#include "../rng.hpp"

namespace lockstep {

class ChainVectors {
 public:
  ChainVectors(long chains, long dim) : chains_(chains), dim_(dim) {}
  virtual ~ChainVectors() = default;
  long chains() const { return chains_; }
  long dim() const { return dim_; }

  // A new [chains, dim] array of zeros.
  virtual double* make() = 0;
  // Whole arrays between host memory and the vectors' memory.
  virtual void upload(double* dst, const double* host) = 0;
  virtual void download(double* host, const double* src) = 0;
  // The first n coordinates of every chain between host memory ([chains, n])
  // and an array: what ranks that own their groups exchange after each
  // gradient (the global coordinates', owned_shard.hpp).
  virtual void read_columns(double* host, const double* src, long n) = 0;
  virtual void write_columns(double* dst, const double* host, long n) = 0;

  // dst = src on the chains in `on`.
  virtual void copy(double* dst, const double* src, const ChainMask& on) = 0;
  // dst = value.
  virtual void fill(double* dst, double value, const ChainMask& on) = 0;
  // dst = a + s b.
  virtual void add(double* dst, const double* a, const double* b, double s,
                   const ChainMask& on) = 0;
  // p += kick g, then (drift) x_out = x_in + eps m p, with kick and eps
  // negated on the chains in `back`.
  virtual void leapfrog(double* x_out, const double* x_in, double* p, const double* g,
                        const double* m, double kick, double eps, bool drift,
                        const ChainMask& on, const ChainMask& back) = 0;
  // p ~ N(0, diag(1 / sd^2)) on every chain, from streams[c] with purpose
  // `purpose`; advances each stream past the numbers drawn.
  virtual void momentum(double* p, const double* sd, std::vector<Stream>& streams,
                        uint32_t purpose) = 0;
  // dst[c, i] = the mean of src[., i] over the chains in `from` (at least
  // one), for every chain c.
  virtual void mean_over_chains(double* dst, const double* src, const ChainMask& from) = 0;
  // Warmup's window sums (WindowUpdate): x's draws into mean and m2, pooled
  // into row 0 (the draws of the chains in `from`) or per chain (every
  // chain's), n0 draws already in the window (per row).
  virtual void window_update(double* mean, double* m2, const double* x, double n0, bool pooled,
                             const ChainMask& from) = 0;
  // sd and sd2 (the inverse mass) from a window of n draws (MetricFromWindow).
  virtual void metric_from_window(double* sd, double* sd2, const double* m2, double n,
                                  bool pooled) = 0;
  // out[c * n + s] = spec s's dot product for chain c (DotSpec), n <= 6, m the
  // inverse mass; chains outside `on` get 0. Waits for the results.
  virtual void dots(const DotSpec* specs, int n, const double* m, const ChainMask& on,
                    double* out) = 0;
  // NUTS's three merge checks of a subtree (SubtreeChecksTerm), in one pass:
  // out[c * 6 + s] = the six sums for chain c (0 for chains outside `on`).
  // Waits for the results.
  virtual void subtree_checks(const SubtreeVectors& v, const double* m, const ChainMask& on,
                              double* out) = 0;
  // NUTS's work on a new leaf after its gradient, in one pass (LeafVectors,
  // LeafTerm), with `back` the chains moving backward in time:
  // out[c * v.sums() + s] = chain c's sums (0 for chains outside `on`).
  // Waits for the results.
  virtual void leaf(const LeafVectors& v, const double* m, const ChainMask& on,
                    const ChainMask& back, double* out) = 0;
  // The target's log density at x into lp[chains] (host memory) and its
  // gradient into g.
  virtual void log_density(const double* x, double* lp, double* g) = 0;
  // log_density() in two halves, so that the vectors of several devices
  // compute at once (device_shards.hpp): start_log_density() queues the work
  // and finish_log_density() waits for it, lp (host memory, the same array)
  // written by the time it returns. By default the first half does it all.
  virtual void start_log_density(const double* x, double* lp, double* g) { log_density(x, lp, g); }
  virtual void finish_log_density(double* lp) { (void)lp; }

  // For a rank that owns part of the state (sampler/owned_vectors.hpp): the
  // per-chain sums (dots, subtree_checks, leaf) count coordinates [first,
  // dim) only, and momentum() draws coordinate i as coordinate full_index[i]
  // of a state of full_dim coordinates. Backends without them throw.
  virtual void count_from(long first);
  virtual void map_coordinates(std::vector<long> full_index, long full_dim);

  // Whether the vectors are in a GPU's memory.
  virtual bool on_device() const { return false; }

  // An optimiser on the vectors, where the backend has it
  // (holds_optimiser(); the others throw): svi()'s mean-field guide and its
  // optimiser (svi.hpp, kernels/mean_field.hpp,
  // kernels/first_order_step.hpp), and opt()'s first-order methods
  // (optimiser.hpp). The guide's parameters phi = (mu, omega) and its
  // optimiser's state are flat arrays (make_flat), the particles, their
  // normals and their gradients [chains, dim] ones (make), as are opt()'s
  // starts and their state; make()'s arrays are contiguous, row c at c x
  // dim, so that a step may run on one chain's row.
  virtual bool holds_optimiser() const { return false; }
  // A new array of n zeros, and n values between it and host memory.
  virtual double* make_flat(long n);
  virtual void upload_flat(double* dst, const double* host, long n);
  virtual void download_flat(double* host, const double* src, long n);
  // dst = src, n values of two of make_flat()'s arrays.
  virtual void copy_flat(double* dst, const double* src, long n);
  // The particles z and their normals eps at phi ([2 dim]), drawn as
  // `draw` says (MeanFieldParticlesTerm), and w[c] (host memory) = chain c's
  // sum of omega_i + eps_ci^2 / 2. Waits for w. `point`: a point mass, phi
  // = mu ([dim]), every particle at mu and w 0.
  virtual void mean_field_particles(const double* phi, double* z, double* eps,
                                    const MeanFieldDraw& draw, bool point, double* w);
  // The loss's gradient grad ([2 dim]; [dim] for a point mass) from the
  // particles' gradients g, their normals eps and the bound's weights v
  // ([chains], host memory) (MeanFieldGradientTerm); whether every entry of
  // it is finite. Waits.
  virtual bool mean_field_gradient(const double* phi, const double* g, const double* eps,
                                   const double* v, bool point, double* grad);
  // svi()'s low-rank guide (kernels/low_rank.hpp): the terms' and bodies'
  // arrays the vectors' (make_flat's: phi, sw, sdiag and the host's small
  // ones; make's: z, eps, u, g), their sums into host memory (each waits):
  // K's sums [k k + 1] (LowRankGramTerm), Sigma^-1 W and diag(Sigma^-1)
  // (LowRankFactorBody), the particles and then each one's p [chains, k +
  // 1] (LowRankParticlesBody, LowRankProjectTerm), u and u'W [chains, k]
  // (LowRankWhitenTerm), and the loss's gradient, whether every entry of
  // it is finite (LowRankGradientTerm). The terms' c0 is set here.
  virtual void low_rank_gram(LowRankGramTerm term, double* sums);
  virtual void low_rank_factor(const LowRankFactorBody& body);
  virtual void low_rank_particles(const LowRankParticlesBody& body, LowRankProjectTerm project,
                                  double* p);
  virtual void low_rank_whiten(LowRankWhitenTerm term, double* uw);
  virtual bool low_rank_gradient(const LowRankGradientTerm& term);
  // A first-order optimiser's step, its arrays the vectors' (FirstOrderStep).
  virtual void first_order_step(const FirstOrderStep& step);

 protected:
  long chains_, dim_;
};

// Vectors in host memory, updated by the kernel bodies on the CPU backend
// (chains split among the pool's threads, when there is one and the vectors
// hold at least min_pooled_vector values) or on the emulated backend (every
// lane in turn).
constexpr long min_pooled_vector = 1L << 14;

class HostChainVectors final : public ChainVectors {
 public:
  // min_pooled: the fewest values (chains x dim) for which operations go to
  // the pool (tests set 0 to run the threaded path on small vectors).
  HostChainVectors(Target& target, Launcher launcher, ThreadPool* pool,
                   long min_pooled = min_pooled_vector);
  double* make() override;
  void upload(double* dst, const double* host) override;
  void download(double* host, const double* src) override;
  void read_columns(double* host, const double* src, long n) override;
  void write_columns(double* dst, const double* host, long n) override;
  void copy(double* dst, const double* src, const ChainMask& on) override;
  void fill(double* dst, double value, const ChainMask& on) override;
  void add(double* dst, const double* a, const double* b, double s, const ChainMask& on) override;
  void leapfrog(double* x_out, const double* x_in, double* p, const double* g, const double* m,
                double kick, double eps, bool drift, const ChainMask& on,
                const ChainMask& back) override;
  void momentum(double* p, const double* sd, std::vector<Stream>& streams,
                uint32_t purpose) override;
  void mean_over_chains(double* dst, const double* src, const ChainMask& from) override;
  void window_update(double* mean, double* m2, const double* x, double n0, bool pooled,
                     const ChainMask& from) override;
  void metric_from_window(double* sd, double* sd2, const double* m2, double n,
                          bool pooled) override;
  void dots(const DotSpec* specs, int n, const double* m, const ChainMask& on,
            double* out) override;
  void subtree_checks(const SubtreeVectors& v, const double* m, const ChainMask& on,
                      double* out) override;
  void leaf(const LeafVectors& v, const double* m, const ChainMask& on, const ChainMask& back,
            double* out) override;
  void log_density(const double* x, double* lp, double* g) override;
  void count_from(long first) override { counted_from_ = first; }
  void map_coordinates(std::vector<long> full_index, long full_dim) override;
  bool holds_optimiser() const override { return true; }
  double* make_flat(long n) override;
  void upload_flat(double* dst, const double* host, long n) override;
  void download_flat(double* host, const double* src, long n) override;
  void copy_flat(double* dst, const double* src, long n) override;
  void mean_field_particles(const double* phi, double* z, double* eps, const MeanFieldDraw& draw,
                            bool point, double* w) override;
  bool mean_field_gradient(const double* phi, const double* g, const double* eps, const double* v,
                           bool point, double* grad) override;
  void first_order_step(const FirstOrderStep& step) override;
  void low_rank_gram(LowRankGramTerm term, double* sums) override;
  void low_rank_factor(const LowRankFactorBody& body) override;
  void low_rank_particles(const LowRankParticlesBody& body, LowRankProjectTerm project,
                          double* p) override;
  void low_rank_whiten(LowRankWhitenTerm term, double* uw) override;
  bool low_rank_gradient(const LowRankGradientTerm& term) override;

 private:
  // Runs make_body(c0, c1) for the chain ranges this backend splits into.
  template <class MakeBody> void run(const MakeBody& make_body);
  // A term's sums over the coordinates for `rows` rows into out (zeroed
  // first), the term's c0 0: one launch.
  template <class Term> void sum_rows(Term term, long rows, double* out);
  // Whether a term that writes a gradient and sums 0 x its entries over one
  // row (MeanFieldGradientTerm, LowRankGradientTerm) found them all finite.
  template <class Term> bool all_finite(const Term& term);

  Target& target_;
  Launcher launcher_;
  ThreadPool* pool_;
  long min_pooled_;
  std::vector<std::unique_ptr<double[]>> arrays_;
  long counted_from_ = 0;
  std::vector<long> full_index_;  // empty: the coordinates are the whole state's
  long full_dim_ = 0;
};

// A ChainVectors that passes every operation to another (`inner`): the base
// of wrappers that change a few of them (shards.hpp's RankAgreedVectors,
// owned_shard.hpp's OwnedShardVectors).
class ForwardingChainVectors : public ChainVectors {
 public:
  explicit ForwardingChainVectors(std::unique_ptr<ChainVectors> inner)
      : ChainVectors(inner->chains(), inner->dim()), inner_(std::move(inner)) {}
  double* make() override { return inner_->make(); }
  void upload(double* dst, const double* host) override { inner_->upload(dst, host); }
  void download(double* host, const double* src) override { inner_->download(host, src); }
  void read_columns(double* host, const double* src, long n) override {
    inner_->read_columns(host, src, n);
  }
  void write_columns(double* dst, const double* host, long n) override {
    inner_->write_columns(dst, host, n);
  }
  void copy(double* dst, const double* src, const ChainMask& on) override {
    inner_->copy(dst, src, on);
  }
  void fill(double* dst, double value, const ChainMask& on) override {
    inner_->fill(dst, value, on);
  }
  void add(double* dst, const double* a, const double* b, double s, const ChainMask& on) override {
    inner_->add(dst, a, b, s, on);
  }
  void leapfrog(double* x_out, const double* x_in, double* p, const double* g, const double* m,
                double kick, double eps, bool drift, const ChainMask& on,
                const ChainMask& back) override {
    inner_->leapfrog(x_out, x_in, p, g, m, kick, eps, drift, on, back);
  }
  void momentum(double* p, const double* sd, std::vector<Stream>& streams,
                uint32_t purpose) override {
    inner_->momentum(p, sd, streams, purpose);
  }
  void mean_over_chains(double* dst, const double* src, const ChainMask& from) override {
    inner_->mean_over_chains(dst, src, from);
  }
  void window_update(double* mean, double* m2, const double* x, double n0, bool pooled,
                     const ChainMask& from) override {
    inner_->window_update(mean, m2, x, n0, pooled, from);
  }
  void metric_from_window(double* sd, double* sd2, const double* m2, double n,
                          bool pooled) override {
    inner_->metric_from_window(sd, sd2, m2, n, pooled);
  }
  void dots(const DotSpec* specs, int n, const double* m, const ChainMask& on,
            double* out) override {
    inner_->dots(specs, n, m, on, out);
    combine_sums(out, chains_ * n);
  }
  void subtree_checks(const SubtreeVectors& v, const double* m, const ChainMask& on,
                      double* out) override {
    inner_->subtree_checks(v, m, on, out);
    combine_sums(out, chains_ * 6);
  }
  void leaf(const LeafVectors& v, const double* m, const ChainMask& on, const ChainMask& back,
            double* out) override {
    inner_->leaf(v, m, on, back, out);
    combine_sums(out, chains_ * v.sums());
  }
  void log_density(const double* x, double* lp, double* g) override {
    inner_->log_density(x, lp, g);
  }
  void count_from(long first) override { inner_->count_from(first); }
  void map_coordinates(std::vector<long> full_index, long full_dim) override {
    inner_->map_coordinates(std::move(full_index), full_dim);
  }

 protected:
  // The n per-chain sums that dots(), subtree_checks() or leaf() just wrote
  // to `out`, which the sampler decides from: where a wrapper makes them the
  // same on every rank. Nothing by default.
  virtual void combine_sums(double* out, long n) {
    (void)out;
    (void)n;
  }

 private:
  std::unique_ptr<ChainVectors> inner_;
};

// Another target seen through the Target interface alone: a sampler on it
// keeps its vectors in host memory (Target::vectors()'s default) whatever the
// target's own vectors are; for comparing device-resident sampling with
// sampling on the host over the same GPU executor.
class WithHostVectors final : public Target {
 public:
  explicit WithHostVectors(Target& target) : target_(target) {}
  long dim() const override { return target_.dim(); }
  long chains() const override { return target_.chains(); }
  void set_minibatch(const Minibatch& batch) override { target_.set_minibatch(batch); }
  void log_density(const double* state, double* lp, double* grad) override {
    target_.log_density(state, lp, grad);
  }

 private:
  Target& target_;
};

}  // namespace lockstep

#endif
