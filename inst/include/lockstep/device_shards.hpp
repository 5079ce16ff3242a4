// Devices of one process that own their groups (DESIGN.md, "Ownership"; issue
// 35): the GPUs of gpu_only(devices = ...), each holding the global
// coordinates and only its own groups' local ones.
//
// What MPI ranks do across processes (owned_shard.hpp), shards do here within
// one: shard s runs slice s of the program (group_slice.hpp: its rows, the
// global parameters and its groups' local ones) on its own executor, and keeps
// its part of every sampler vector in that executor's memory (its own GPU's).
// One sampler steps them all: its vectors are DeviceShardsVectors, which hand
// each operation to every shard's vectors and add the shards' per-chain sums
// (kinetic energy, U-turn and merge checks, dot products) in shard order. Per
// gradient the shards' log densities and the global coordinates' gradient
// are summed through the host, C x (1 + globals) values a shard; a local
// coordinate's gradient is complete on its owner. Momentum is drawn by each
// coordinate's index in the whole state, so the draws equal one device's up
// to the order of sums.
//
// The sampler itself sees the whole state ([chains, full dim] in host memory,
// where it keeps what R reads: each kept draw is gathered from the shards),
// so nothing above the vectors changes. Any backend's vectors can be shards:
// the tests run CPU and emulated executors as shards (tests/cpp), the GPUs
// run CUDA executors.
#ifndef LOCKSTEP_DEVICE_SHARDS_HPP
#define LOCKSTEP_DEVICE_SHARDS_HPP

#include <memory>
#include <unordered_map>
#include <vector>

#include "executor.hpp"
#include "group_slice.hpp"
#include "sampler/chain_vectors.hpp"

namespace lockstep {

// The slices of planned `p` (every row, in one process) for `shards` shards
// that own their groups: by the sliceable grouping with the most local
// coordinates, its groups in contiguous ranges balanced by row count
// (balanced_group_bounds()), each other extent's rows in equal blocks
// (shard_first_row()). Rows not sorted by group are taken in the order the
// executors run them (with_rows_ordered()). Empty (the shards then hold every
// parameter) when `shards` < 2, when `p` has no sliceable grouping, when its
// rows cannot be sorted by it, or when a shard would own no group with rows.
std::vector<GroupSlice> plan_device_shards(const Program& p, int shards);

class DeviceShardsTarget;

// Whether options `o` run a model on several devices of one process that can
// own their groups: two or more GPUs (o.gpus), or two or more devices of the
// emulated backend, which stands in for GPUs in the tests (the CPU backend's
// virtual devices share one memory, and own their groups' rows without
// splitting the state: observation_stage.hpp).
bool runs_on_device_shards(const ExecOptions& o);

// The shards of planned `p` (which must outlive the target) on the devices of
// `o` (runs_on_device_shards()), each an executor (make_target(); `single`:
// float32) over its slice with o's other settings; nullptr where
// plan_device_shards() finds nothing to own.
std::unique_ptr<DeviceShardsTarget> make_device_shards(const Program& p, long chains,
                                                       const ExecOptions& o, bool single);

class DeviceShardsTarget final : public Target {
 public:
  // targets[s] runs slices[s].program (all with the same chains); full_dim:
  // the whole program's free coordinates.
  DeviceShardsTarget(std::vector<GroupSlice> slices, std::vector<std::unique_ptr<Target>> targets,
                     long full_dim);
  long dim() const override { return full_dim_; }
  long chains() const override { return chains_; }
  // The whole state (host memory) in, the whole gradient out: each shard in
  // turn (the sampler's vectors run them at once).
  void log_density(const double* state, double* lp, double* grad) override;
  std::unique_ptr<ChainVectors> vectors() override;
  // Each device draws from its own rows (the part: its shard); a GPU's
  // executor refuses (Target::set_minibatch).
  void set_minibatch(const Minibatch& batch) override {
    for (size_t s = 0; s < targets_.size(); ++s)
      targets_[s]->set_minibatch(batch.of_part(static_cast<uint32_t>(s)));
  }

  int shards() const { return static_cast<int>(targets_.size()); }
  const GroupSlice& slice(int s) const { return slices_[s]; }
  Target& shard(int s) { return *targets_[s]; }
  long n_global() const { return slices_[0].n_global; }
  // What crosses between shards, counted since construction or the last
  // reset: calls, one a gradient; bytes, what the shards but the first send
  // (each its chains' log densities and global coordinates' gradient).
  CommunicatorStats exchanged() const override { return exchanged_; }
  void reset_counts() { exchanged_ = CommunicatorStats(); }
  // (DeviceShardsVectors counts its gradients here)
  void count_gradient(bool with_gradient);

 private:
  std::vector<GroupSlice> slices_;
  std::vector<std::unique_ptr<Target>> targets_;
  long full_dim_, chains_;
  CommunicatorStats exchanged_;
};

// The sampler vectors of DeviceShardsTarget: each array is a handle to one
// array per shard ([chains, that slice's dim], in the shard's memory).
class DeviceShardsVectors final : public ChainVectors {
 public:
  // inner[s]: shard s's vectors (its target's), made to count and draw as
  // slice s of the whole state here.
  DeviceShardsVectors(DeviceShardsTarget& target, std::vector<std::unique_ptr<ChainVectors>> inner);
  double* make() override;
  // host arrays are the whole state's [chains, full dim]
  void upload(double* dst, const double* host) override;
  void download(double* host, const double* src) override;
  // (n at most the global coordinates', which every shard holds alike)
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

 private:
  int shards() const { return static_cast<int>(inner_.size()); }
  // shard s's array of handle `a` (nullptr for nullptr)
  double* at(const double* a, int s) const;
  SubtreeVectors at(const SubtreeVectors& v, int s) const;
  // out[chains * n] = the shards' sums, added in shard order, each made by
  // sum(s, part)
  template <class Sum> void add_over_shards(double* out, long n, const Sum& sum);

  DeviceShardsTarget& target_;
  std::vector<std::unique_ptr<ChainVectors>> inner_;
  std::vector<std::unique_ptr<double>> handles_;
  std::unordered_map<const double*, std::vector<double*>> arrays_;  // handle -> per shard
  std::vector<std::vector<double>> part_;  // per shard: host scratch
  std::vector<double> sum_;
};

}  // namespace lockstep

#endif
