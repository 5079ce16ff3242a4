// A sampler's vectors in GPU memory (device-resident sampling; see
// sampler/chain_vectors.hpp): the bodies of kernels/chain_vectors.hpp launched
// on the executor's stream, so that they and its log density calls run in
// order without the host waiting, except where it needs numbers back (the log
// densities, the dot products, the draw).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
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
    // from pageable memory: returns once the host array is no longer needed
    check(cudaMemcpyAsync(dst, host, bytes(), cudaMemcpyHostToDevice, stream_),
          "copying a sampler vector to the device");
  }
  void download(double* host, const double* src) override {
    check(cudaMemcpyAsync(host, src, bytes(), cudaMemcpyDeviceToHost, stream_),
          "copying a sampler vector to the host");
    wait("copying a sampler vector to the host");
  }
  void copy(double* dst, const double* src, const ChainMask& on) override {
    if (on.any()) launch(RowsCopy{{}, dst, src, 0.0, on, 0, chains_, dim_});
  }
  void fill(double* dst, double value, const ChainMask& on) override {
    if (on.any()) launch(RowsCopy{{}, dst, nullptr, value, on, 0, chains_, dim_});
  }
  void add(double* dst, const double* a, const double* b, double s, const ChainMask& on) override {
    if (on.any()) launch(RowsAdd{{}, dst, a, b, s, on, 0, chains_, dim_});
  }
  void leapfrog(double* x_out, const double* x_in, double* p, const double* g, const double* m,
                double kick, double eps, bool drift, const ChainMask& on,
                const ChainMask& back) override {
    if (on.any())
      launch(KickDrift{{}, x_out, p, x_in, g, m, kick, eps, drift, on, back, 0, chains_, dim_});
  }
  void momentum(double* p, const double* sd, std::vector<Stream>& streams,
                uint32_t purpose) override {
    for (Stream& s : streams) s.purpose = purpose;
    check(cudaMemcpyAsync(streams_, streams.data(), sizeof(Stream) * chains_,
                          cudaMemcpyHostToDevice, stream_),
          "copying the random streams to the device");
    launch(MomentumDraw{{}, p, sd, streams_, 0, chains_, dim_});
    for (Stream& s : streams) s.position += static_cast<uint64_t>((dim_ + 1) / 2);
  }
  void mean_over_chains(double* dst, const double* src, const ChainMask& from) override {
    StreamLaunch{stream_, dim_, multiprocessors_}(
        ChainMean{{}, dst, src, from, from.count(), chains_, dim_});
  }
  void window_update(double* mean, double* m2, const double* x, double n0, bool pooled,
                     const ChainMask& from) override {
    StreamLaunch{stream_, pooled ? dim_ : chains_ * dim_, multiprocessors_}(
        WindowUpdate{{}, mean, m2, x, n0, pooled, from, chains_, dim_});
  }
  void metric_from_window(double* sd, double* sd2, const double* m2, double n,
                          bool pooled) override {
    launch(MetricFromWindow{{}, sd, sd2, m2, n, pooled, chains_, dim_});
  }
  void dots(const DotSpec* specs, int n, const double* m, const ChainMask& on,
            double* out) override {
    const DotTerm term = DotTerm::make(specs, n, m, on, dim_);
    sum_chains(n, on, out, [&](long c0, long c1) {
      DotTerm t = term;
      t.c0 = c0;
      return ChainSum<DotTerm>(t, out_ + c0 * n, (c1 - c0) * n, dim_);
    });
  }
  void subtree_checks(const SubtreeVectors& sv, const double* m, const ChainMask& on,
                      double* out) override {
    sum_chains(6, on, out, [&](long c0, long c1) {
      return ChainSum<SubtreeChecksTerm>(SubtreeChecksTerm{sv, m, on, c0, dim_, out_},
                                         out_ + c0 * 6, c1 - c0, dim_, 6);
    });
  }
  void leaf(const LeafVectors& v, const double* m, const ChainMask& on, const ChainMask& back,
            double* out) override {
    const int n = v.sums();
    sum_chains(n, on, out, [&](long c0, long c1) {
      return ChainSum<LeafTerm>(LeafTerm{v, m, on, back, c0, dim_, out_}, out_ + c0 * n, c1 - c0,
                                dim_, n);
    });
  }
  void log_density(const double* x, double* lp, double* g) override {
    target_.log_density_device(x, lp_, g);
    check(cudaMemcpyAsync(lp, lp_, sizeof(double) * chains_, cudaMemcpyDeviceToHost, stream_),
          "copying the log density to the host");
    wait("the model's kernels");
  }

 private:
  size_t bytes() const { return sizeof(double) * static_cast<size_t>(chains_ * dim_); }
  template <class Body> void launch(const Body& body) {
    StreamLaunch{stream_, chains_ * dim_, multiprocessors_}(body);
  }
  void wait(const char* what) { check(cudaStreamSynchronize(stream_), what); }
  // n sums per chain into out[chains, n] (host memory) through out_: the
  // ChainSums make_sum(c0, c1) makes, over groups of chains (a ChainSum's
  // block-shared scratch holds every sum it makes per lane, and groups keep
  // it within 48 KiB at 32 lanes per block), skipping groups with no chain
  // in `on`. Waits for the results.
  template <class MakeSum>
  void sum_chains(int n, const ChainMask& on, double* out, const MakeSum& make_sum) {
    std::fill(out, out + chains_ * n, 0.0);
    if (!on.any()) return;
    check(cudaMemsetAsync(out_, 0, sizeof(double) * chains_ * n, stream_), "clearing sums");
    const long group = std::max<long>(1, 192 / n);
    for (long c0 = 0; c0 < chains_; c0 += group) {
      const long c1 = std::min(chains_, c0 + group);
      bool any = false;
      for (long c = c0; c < c1; ++c) any = any || on[c];
      if (any) StreamLaunch{stream_, (c1 - c0) * dim_, multiprocessors_}(make_sum(c0, c1));
    }
    check(cudaMemcpyAsync(out, out_, sizeof(double) * chains_ * n, cudaMemcpyDeviceToHost,
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
  Stream* streams_ = nullptr;              // [chains]
};

}  // namespace

std::unique_ptr<ChainVectors> make_device_vectors(DeviceExecutor& target, void* stream, int gpu,
                                                  int multiprocessors) {
  return std::make_unique<DeviceChainVectors>(target, static_cast<cudaStream_t>(stream), gpu,
                                               multiprocessors);
}

}  // namespace cuda
}  // namespace lockstep
