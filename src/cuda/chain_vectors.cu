// A sampler's vectors in GPU memory (device-resident sampling; see
// sampler/chain_vectors.hpp): the bodies of kernels/chain_vectors.hpp launched
// on the executor's stream, so that they and its log density calls run in
// order without the host waiting, except where it needs numbers back (the log
// densities, the dot products, the draw). Every operation makes its GPU the
// current device first: the vectors of several GPUs are used in turn from one
// thread (device_shards.hpp).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "lockstep/backends/cuda_executor_impl.cuh"
#include "lockstep/kernels/chain_sum.hpp"

namespace lockstep {
namespace cuda {

namespace {

class DeviceChainVectors final : public ChainVectors {
 public:
  DeviceChainVectors(DeviceExecutor& target, cudaStream_t stream, int gpu, int multiprocessors)
      : ChainVectors(target.chains(), target.dim()), target_(target), stream_(stream), gpu_(gpu),
        multiprocessors_(multiprocessors) {
    select_device(gpu_);
    lp_ = static_cast<double*>(allocate(sizeof(double) * chains_));
    out_ = static_cast<double*>(allocate(sizeof(double) * chains_ * sums_per_chain));
    out_size_ = chains_ * sums_per_chain;
    streams_ = static_cast<Stream*>(allocate(sizeof(Stream) * chains_));
  }
  ~DeviceChainVectors() override {
    cudaSetDevice(gpu_);
    cudaStreamSynchronize(stream_);
    for (void* p : owned_) cudaFree(p);
  }

  double* make() override {
    select_device(gpu_);
    double* a = static_cast<double*>(allocate(sizeof(double) * chains_ * dim_));
    check(cudaMemsetAsync(a, 0, sizeof(double) * chains_ * dim_, stream_), "clearing a vector");
    return a;
  }
  void upload(double* dst, const double* host) override {
    select_device(gpu_);
    // from pageable memory: returns once the host array is no longer needed
    check(cudaMemcpyAsync(dst, host, bytes(), cudaMemcpyHostToDevice, stream_),
          "copying a sampler vector to the device");
  }
  void download(double* host, const double* src) override {
    select_device(gpu_);
    check(cudaMemcpyAsync(host, src, bytes(), cudaMemcpyDeviceToHost, stream_),
          "copying a sampler vector to the host");
    wait("copying a sampler vector to the host");
  }
  void read_columns(double* host, const double* src, long n) override {
    select_device(gpu_);
    if (n <= 0) return;
    check(cudaMemcpy2DAsync(host, sizeof(double) * n, src, sizeof(double) * dim_,
                            sizeof(double) * n, chains_, cudaMemcpyDeviceToHost, stream_),
          "copying a sampler vector's columns to the host");
    wait("copying a sampler vector's columns to the host");
  }
  void write_columns(double* dst, const double* host, long n) override {
    select_device(gpu_);
    if (n <= 0) return;
    // from pageable memory: returns once the host array is no longer needed
    check(cudaMemcpy2DAsync(dst, sizeof(double) * dim_, host, sizeof(double) * n,
                            sizeof(double) * n, chains_, cudaMemcpyHostToDevice, stream_),
          "copying columns of a sampler vector to the device");
  }
  void copy(double* dst, const double* src, const ChainMask& on) override {
    select_device(gpu_);
    if (on.any()) launch(RowsCopy{{}, dst, src, 0.0, on, 0, chains_, dim_});
  }
  void fill(double* dst, double value, const ChainMask& on) override {
    select_device(gpu_);
    if (on.any()) launch(RowsCopy{{}, dst, nullptr, value, on, 0, chains_, dim_});
  }
  void add(double* dst, const double* a, const double* b, double s, const ChainMask& on) override {
    select_device(gpu_);
    if (on.any()) launch(RowsAdd{{}, dst, a, b, s, on, 0, chains_, dim_});
  }
  void leapfrog(double* x_out, const double* x_in, double* p, const double* g, const double* m,
                double kick, double eps, bool drift, const ChainMask& on,
                const ChainMask& back) override {
    select_device(gpu_);
    if (on.any())
      launch(KickDrift{{}, x_out, p, x_in, g, m, kick, eps, drift, on, back, 0, chains_, dim_});
  }
  void momentum(double* p, const double* sd, std::vector<Stream>& streams,
                uint32_t purpose) override {
    select_device(gpu_);
    for (Stream& s : streams) s.purpose = purpose;
    check(cudaMemcpyAsync(streams_, streams.data(), sizeof(Stream) * chains_,
                          cudaMemcpyHostToDevice, stream_),
          "copying the random streams to the device");
    if (full_index_) {  // each coordinate's numbers are those of its index in the whole state
      launch(MomentumDrawMapped{{}, p, sd, streams_, full_index_, 0, chains_, dim_});
      for (Stream& s : streams) s.position += static_cast<uint64_t>((full_dim_ + 1) / 2);
      return;
    }
    launch(MomentumDraw{{}, p, sd, streams_, 0, chains_, dim_});
    for (Stream& s : streams) s.position += static_cast<uint64_t>((dim_ + 1) / 2);
  }
  void count_from(long first) override { counted_from_ = first; }
  void map_coordinates(std::vector<long> full_index, long full_dim) override {
    if (static_cast<long>(full_index.size()) != dim_)
      throw std::invalid_argument("map_coordinates: one index per coordinate");
    for (long f : full_index)
      if (f < 0 || f >= full_dim)
        throw std::invalid_argument("map_coordinates: an index out of range");
    select_device(gpu_);
    if (!full_index_) full_index_ = static_cast<long*>(allocate(sizeof(long) * std::max<long>(dim_, 1)));
    check(cudaMemcpy(full_index_, full_index.data(), sizeof(long) * dim_, cudaMemcpyHostToDevice),
          "copying the coordinates' indices to the device");
    full_dim_ = full_dim;
  }
  void mean_over_chains(double* dst, const double* src, const ChainMask& from) override {
    select_device(gpu_);
    StreamLaunch{stream_, dim_, multiprocessors_}(
        ChainMean{{}, dst, src, from, from.count(), chains_, dim_});
  }
  void window_update(double* mean, double* m2, const double* x, double n0, bool pooled,
                     const ChainMask& from) override {
    select_device(gpu_);
    StreamLaunch{stream_, pooled ? dim_ : chains_ * dim_, multiprocessors_}(
        WindowUpdate{{}, mean, m2, x, n0, pooled, from, chains_, dim_});
  }
  void metric_from_window(double* sd, double* sd2, const double* m2, double n,
                          bool pooled) override {
    select_device(gpu_);
    launch(MetricFromWindow{{}, sd, sd2, m2, n, pooled, chains_, dim_});
  }
  void dots(const DotSpec* specs, int n, const double* m, const ChainMask& on,
            double* out) override {
    select_device(gpu_);
    DotTerm term = DotTerm::make(specs, n, m, on, dim_);
    term.counted_from = counted_from_;
    sum_chains(n, on, out, [&](long c0, long c1) {
      DotTerm t = term;
      t.c0 = c0;
      return ChainSum<DotTerm>(t, out_ + c0 * n, (c1 - c0) * n, dim_);
    });
  }
  void subtree_checks(const SubtreeVectors& sv, const double* m, const ChainMask& on,
                      double* out) override {
    select_device(gpu_);
    sum_chains(6, on, out, [&](long c0, long c1) {
      return ChainSum<SubtreeChecksTerm>(SubtreeChecksTerm{sv, m, on, c0, dim_, out_, counted_from_},
                                         out_ + c0 * 6, c1 - c0, dim_, 6);
    });
  }
  void leaf(const LeafVectors& v, const double* m, const ChainMask& on, const ChainMask& back,
            double* out) override {
    select_device(gpu_);
    const int n = v.sums();
    sum_chains(n, on, out, [&](long c0, long c1) {
      return ChainSum<LeafTerm>(LeafTerm{v, m, on, back, c0, dim_, out_, counted_from_}, out_ + c0 * n, c1 - c0,
                                dim_, n);
    });
  }
  void log_density(const double* x, double* lp, double* g) override {
    select_device(gpu_);
    start_log_density(x, lp, g);
    finish_log_density(lp);
  }
  void start_log_density(const double* x, double* lp, double* g) override {
    select_device(gpu_);
    (void)lp;  // (a copy to pageable memory would wait for the kernels)
    target_.log_density_device(x, lp_, g);
  }
  void finish_log_density(double* lp) override {
    select_device(gpu_);
    check(cudaMemcpyAsync(lp, lp_, sizeof(double) * chains_, cudaMemcpyDeviceToHost, stream_),
          "copying the log density to the host");
    wait("the model's kernels");
  }

  bool on_device() const override { return true; }
  // svi()'s mean-field guide in GPU memory: per iteration the particles'
  // sums come back and the bound's weights go over, C values each way.
  bool holds_optimiser() const override { return true; }
  double* make_flat(long n) override {
    select_device(gpu_);
    double* a = static_cast<double*>(allocate(sizeof(double) * std::max<long>(n, 1)));
    check(cudaMemsetAsync(a, 0, sizeof(double) * std::max<long>(n, 1), stream_), "clearing a guide's array");
    return a;
  }
  void upload_flat(double* dst, const double* host, long n) override {
    select_device(gpu_);
    if (n <= 0) return;
    // from pageable memory: returns once the host array is no longer needed
    check(cudaMemcpyAsync(dst, host, sizeof(double) * n, cudaMemcpyHostToDevice, stream_),
          "copying a guide's parameters to the device");
  }
  void copy_flat(double* dst, const double* src, long n) override {
    select_device(gpu_);
    if (n <= 0 || dst == src) return;
    check(cudaMemcpyAsync(dst, src, sizeof(double) * n, cudaMemcpyDeviceToDevice, stream_),
          "copying a guide's parameters");
  }
  void download_flat(double* host, const double* src, long n) override {
    select_device(gpu_);
    if (n <= 0) return;
    check(cudaMemcpyAsync(host, src, sizeof(double) * n, cudaMemcpyDeviceToHost, stream_),
          "copying a guide's parameters to the host");
    wait("copying a guide's parameters to the host");
  }
  void mean_field_particles(const double* phi, double* z, double* eps, const MeanFieldDraw& draw,
                            bool point, double* w) override {
    select_device(gpu_);
    sum_rows(MeanFieldParticlesTerm{phi, z, eps, draw, 0, dim_, point}, chains_, w);
  }
  bool mean_field_gradient(const double* phi, const double* g, const double* eps, const double* v,
                           bool point, double* grad) override {
    select_device(gpu_);
    if (!weights_) weights_ = static_cast<double*>(allocate(sizeof(double) * chains_));
    check(cudaMemcpyAsync(weights_, v, sizeof(double) * chains_, cudaMemcpyHostToDevice, stream_),
          "copying the bound's weights to the device");
    return all_finite(MeanFieldGradientTerm{phi, g, eps, weights_, grad, chains_, dim_, point});
  }
  // svi()'s low-rank guide in GPU memory: per iteration K's sums, each
  // particle's p and u'W come back (k^2 + 1 + C (2k + 1) values), K^-1, the
  // first normals, K^-1 p, u'W and the bound's weights go over.
  void low_rank_gram(LowRankGramTerm term, double* sums) override {
    select_device(gpu_);
    sum_rows(term, term.k * term.k + 1, sums);
  }
  void low_rank_factor(const LowRankFactorBody& body) override {
    select_device(gpu_);
    if (body.dim > 0) StreamLaunch{stream_, body.dim, multiprocessors_}(body);
  }
  void low_rank_particles(const LowRankParticlesBody& body, LowRankProjectTerm project,
                          double* p) override {
    select_device(gpu_);
    launch(body);
    sum_rows(project, chains_ * (project.k + 1), p);
  }
  void low_rank_whiten(LowRankWhitenTerm term, double* uw) override {
    select_device(gpu_);
    sum_rows(term, chains_ * term.k, uw);
  }
  bool low_rank_gradient(const LowRankGradientTerm& term) override {
    select_device(gpu_);
    return all_finite(term);
  }
  void first_order_step(const FirstOrderStep& step) override {
    select_device(gpu_);
    if (step.n > 0) StreamLaunch{stream_, step.n, multiprocessors_}(step);
  }

 private:
  size_t bytes() const { return sizeof(double) * static_cast<size_t>(chains_ * dim_); }
  template <class Body> void launch(const Body& body) {
    StreamLaunch{stream_, chains_ * dim_, multiprocessors_}(body);
  }
  void wait(const char* what) { check(cudaStreamSynchronize(stream_), what); }
  // A term's sums over the coordinates for `rows` rows (at most
  // max_mask_chains) into out (host memory), in groups of rows (the term's
  // c0 each group's first). Waits.
  template <class Term> void sum_rows(Term term, long rows, double* out) {
    ensure_out(rows);
    sum_chains(1, ChainMask::all(rows), out, [&](long c0, long c1) {
      Term t = term;
      t.c0 = c0;
      return ChainSum<Term>(t, out_ + c0, c1 - c0, dim_);
    }, rows);
  }
  // Whether a term that writes a gradient and sums 0 x its entries over one
  // row (MeanFieldGradientTerm, LowRankGradientTerm) found them all finite.
  template <class Term> bool all_finite(const Term& term) {
    double bad = 0;
    sum_chains(1, ChainMask::all(1), &bad, [&](long, long) { return ChainSum<Term>(term, out_, 1, dim_); },
               1);
    return bad == 0;
  }
  // out_ holds at least n sums.
  void ensure_out(long n) {
    if (n <= out_size_) return;
    out_ = static_cast<double*>(allocate(sizeof(double) * n));
    out_size_ = n;
  }
  // n sums per chain into out[chains, n] (host memory) through out_: the
  // ChainSums make_sum(c0, c1) makes, over groups of chains (a ChainSum's
  // block-shared scratch holds every sum it makes per lane, and groups keep
  // it within 48 KiB at 32 lanes per block), skipping groups with no chain
  // in `on`. Waits for the results.
  // (`chains`: how many rows of sums, the vectors' chains unless given: a
  // guide's gradient makes one.)
  template <class MakeSum>
  void sum_chains(int n, const ChainMask& on, double* out, const MakeSum& make_sum,
                  long chains = -1) {
    if (chains < 0) chains = chains_;
    std::fill(out, out + chains * n, 0.0);
    if (!on.any()) return;
    check(cudaMemsetAsync(out_, 0, sizeof(double) * chains * n, stream_), "clearing sums");
    const long group = std::max<long>(1, 192 / n);
    for (long c0 = 0; c0 < chains; c0 += group) {
      const long c1 = std::min(chains, c0 + group);
      bool any = false;
      for (long c = c0; c < c1; ++c) any = any || on[c];
      if (any) StreamLaunch{stream_, (c1 - c0) * dim_, multiprocessors_}(make_sum(c0, c1));
    }
    check(cudaMemcpyAsync(out, out_, sizeof(double) * chains * n, cudaMemcpyDeviceToHost,
                          stream_),
          "copying the sampler's sums to the host");
    wait("the sampler's sums");
  }
  void* allocate(size_t n) {
    void* p = device_malloc(n, gpu_, "the sampler",
                            " for a vector of " + std::to_string(chains_) + " chains x " +
                                std::to_string(dim_) + " parameters");
    owned_.push_back(p);
    return p;
  }

  DeviceExecutor& target_;
  cudaStream_t stream_;
  int gpu_, multiprocessors_;
  std::vector<void*> owned_;
  // the most sums per chain of any operation: a leaf's (LeafVectors::sums())
  static constexpr int sums_per_chain = 1 + 6 * LeafVectors::max_checks;
  static_assert(sums_per_chain >= DotTerm::max_specs && sums_per_chain >= 6,
                "out_ holds the dot products' and the merge checks' sums per chain too");
  double *lp_ = nullptr, *out_ = nullptr;  // [chains], [chains, sums_per_chain]: sums
  long out_size_ = 0;                       // out_'s (a low-rank guide's sums may need more)
  Stream* streams_ = nullptr;              // [chains]
  double* weights_ = nullptr;              // [chains]: a guide's bound's weights
  // a rank's part of the state (count_from, map_coordinates): its sums
  // count coordinates [counted_from_, dim), and its momentum draws
  // coordinate i as coordinate full_index_[i] of full_dim_
  long counted_from_ = 0;
  long* full_index_ = nullptr;  // [dim] on the GPU; null: the whole state's own
  long full_dim_ = 0;
};

}  // namespace

std::unique_ptr<ChainVectors> make_device_vectors(DeviceExecutor& target, void* stream, int gpu,
                                                  int multiprocessors) {
  return std::make_unique<DeviceChainVectors>(target, static_cast<cudaStream_t>(stream), gpu,
                                               multiprocessors);
}

}  // namespace cuda
}  // namespace lockstep
