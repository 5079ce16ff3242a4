// The executor over several GPUs in one process (cuda_executor.hpp,
// make_multi_device_executor; DESIGN.md, "Devices and communication"): shard
// s of the program's rows (shards.hpp) on GPU gpus[s], each run by a
// CudaExecutor of its own, and one sum of their partial log densities and
// gradients per call.
//
// The sampler's state, log density and gradient live on gpus[0]. A call:
//   1. sends the state from gpus[0] to every other shard;
//   2. queues every shard's log density and gradient, each on its own
//      device and stream, so that the GPUs work at the same time;
//   3. sums the partials into gpus[0]'s buffers.
// With NCCL (devices distinct, libnccl found at run time), 1 is an
// ncclBroadcast and 3 an ncclReduce, both over the GPUs' own links. Without
// it (a device named twice, as tests on one GPU do; no libnccl;
// LOCKSTEP_NCCL=no), 1 is a peer copy and 3 a peer copy of each later shard's
// partials into a buffer on gpus[0] and an addition (AddPartial), in shard
// order. The host never waits inside a call: the streams are ordered by
// events. Every call leaves the first GPU the current device, where callers
// allocate the buffers they pass. NCCL's reduction order is its own (it
// depends on the topology), so results agree with one GPU's up to the
// reassociation of sums, as the shards' own atomics already do.
//
// NCCL is loaded with dlopen, not linked (backends/nccl_library.cuh).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/backends/cuda_executor_impl.cuh"
#include "lockstep/kernels/chain_vectors.hpp"
#include "lockstep/shards.hpp"

#include "lockstep/backends/nccl_library.cuh"

namespace lockstep {
namespace cuda {

namespace {

#ifdef LOCKSTEP_HAS_NCCL
bool distinct(std::vector<int> gpus) {
  std::sort(gpus.begin(), gpus.end());
  return std::adjacent_find(gpus.begin(), gpus.end()) == gpus.end();
}
#endif


class MultiDeviceExecutor final : public DeviceExecutor {
 public:
  MultiDeviceExecutor(const Program& program, long chains, const ExecOptions& options, bool single)
      : gpus_(options.gpus), chains_(chains), dim_(program.n_free) {
    const int S = static_cast<int>(gpus_.size());
    if (S < 2) throw std::invalid_argument("a multi-GPU executor needs two or more devices");
    try {
      for (int s = 0; s < S; ++s) {
        ExecOptions o = shard_options(options, s);
        o.gpu = gpus_[s];
        o.gpus.clear();
        const Program shard = shard_program(program, s, S);
        shards_.push_back(make_executor(shard, chains, o, single));  // keeps its own copy
      }
#ifdef LOCKSTEP_HAS_NCCL
      if (distinct(gpus_) && NcclLibrary::get().ok()) {
        // where NCCL cannot set up its communicators, copies do the work
        comms_.assign(S, nullptr);
        nccl_ = NcclLibrary::get().comm_init_all(comms_.data(), S, gpus_.data()) == ncclSuccess;
        if (!nccl_) comms_.clear();
        cudaGetLastError();
      }
#endif
      const long n = chains_ * dim_;
      // Per shard: the state, lp and gradient it computes with (shard 0's
      // are the caller's), and an event marking its partials done.
      buffers_.resize(S);
      for (int s = 0; s < S; ++s) {
        select_device(gpus_[s]);
        Buffers& b = buffers_[s];
        check(cudaEventCreateWithFlags(&b.done, cudaEventDisableTiming), "cudaEventCreate");
        if (s == 0) continue;
        b.state = allocate(gpus_[s], n);
        b.lp = allocate(gpus_[s], chains_);
        b.grad = allocate(gpus_[s], n);
      }
      select_device(gpus_[0]);
      check(cudaEventCreateWithFlags(&state_ready_, cudaEventDisableTiming), "cudaEventCreate");
      if (!nccl_) {  // where later shards' partials land on gpus[0]
        received_lp_ = allocate(gpus_[0], chains_);
        received_grad_ = allocate(gpus_[0], n);
      }
      state_ = allocate(gpus_[0], n);
      lp_ = allocate(gpus_[0], chains_);
      grad_ = allocate(gpus_[0], n);
    } catch (...) {
      release();
      throw;
    }
  }

  ~MultiDeviceExecutor() override { release(); }

  long dim() const override { return dim_; }
  long chains() const override { return chains_; }
  void* stream() const override { return shards_[0]->stream(); }
  int gpu() const override { return gpus_[0]; }
  int multiprocessors() const override { return shards_[0]->multiprocessors(); }
  std::unique_ptr<ChainVectors> vectors() override {
    return make_device_vectors(*this, stream(), gpus_[0], multiprocessors());
  }

  double device_bytes() const override {
    double total = own_bytes_;
    for (const auto& s : shards_) total += s->device_bytes();
    return total;
  }

  std::string profile_report() const override {
    std::string out = std::string("lockstep CUDA: ") + std::to_string(shards_.size()) +
                      " shards, summed by " + (nccl_ ? "NCCL" : "copies between devices") + "\n";
    for (size_t s = 0; s < shards_.size(); ++s) {
      const std::string r = shards_[s]->profile_report();
      if (!r.empty()) out += "shard " + std::to_string(s) + " (GPU " + std::to_string(gpus_[s]) + "):\n" + r;
    }
    return out;
  }

  // (calls: gradients; bytes: the state to each other shard, and its log
  // densities and gradient back)
  CommunicatorStats exchanged() const override { return exchanged_; }
  // Each GPU draws from its own rows (the part: its shard).
  void set_minibatch(const Minibatch& batch) override {
    for (size_t s = 0; s < shards_.size(); ++s)
      shards_[s]->set_minibatch(batch.of_part(static_cast<uint32_t>(s)));
  }

  void log_density_device(const double* state, double* lp, double* grad) override {
    const int S = static_cast<int>(shards_.size());
    const long n = chains_ * dim_;
    ++exchanged_.calls;
    exchanged_.bytes += (S - 1) * (n + chains_ + (grad ? n : 0)) * static_cast<long>(sizeof(double));
    cudaStream_t first = stream_of(0);
    select_device(gpus_[0]);
    // 1. the state to every other shard
    if (nccl_) {
#ifdef LOCKSTEP_HAS_NCCL
      const NcclLibrary& nccl = NcclLibrary::get();
      nccl_check(nccl.group_start(), "ncclGroupStart");
      for (int s = 0; s < S; ++s)
        nccl_check(nccl.broadcast(s == 0 ? state : buffers_[s].state,
                                  s == 0 ? const_cast<double*>(state) : buffers_[s].state, n,
                                  ncclDouble, 0, comms_[s], stream_of(s)),
                   "ncclBroadcast");
      nccl_check(nccl.group_end(), "ncclGroupEnd");
#endif
    } else {
      check(cudaEventRecord(state_ready_, first), "recording an event");
      for (int s = 1; s < S; ++s) {
        select_device(gpus_[s]);
        check(cudaStreamWaitEvent(stream_of(s), state_ready_, 0), "waiting for an event");
        check(cudaMemcpyPeerAsync(buffers_[s].state, gpus_[s], state, gpus_[0],
                                  n * sizeof(double), stream_of(s)),
              "copying the state between GPUs");
      }
    }
    // 2. every shard's partials, at the same time
    for (int s = 0; s < S; ++s) {
      const Buffers& b = buffers_[s];
      shards_[s]->log_density_device(s == 0 ? state : b.state, s == 0 ? lp : b.lp,
                                     s == 0 ? grad : (grad ? b.grad : nullptr));
    }
    // 3. their sum on gpus[0]
    if (nccl_) {
#ifdef LOCKSTEP_HAS_NCCL
      const NcclLibrary& nccl = NcclLibrary::get();
      nccl_check(nccl.group_start(), "ncclGroupStart");
      for (int s = 0; s < S; ++s) {
        double* l = s == 0 ? lp : buffers_[s].lp;
        nccl_check(nccl.reduce(l, l, chains_, ncclDouble, ncclSum, 0, comms_[s], stream_of(s)),
                   "ncclReduce");
        if (grad) {
          double* g = s == 0 ? grad : buffers_[s].grad;
          nccl_check(nccl.reduce(g, g, n, ncclDouble, ncclSum, 0, comms_[s], stream_of(s)),
                     "ncclReduce");
        }
      }
      nccl_check(nccl.group_end(), "ncclGroupEnd");
#endif
      select_device(gpus_[0]);  // callers allocate on the current device: the first GPU's
      return;
    }
    for (int s = 1; s < S; ++s) {
      select_device(gpus_[s]);
      check(cudaEventRecord(buffers_[s].done, stream_of(s)), "recording an event");
    }
    select_device(gpus_[0]);
    for (int s = 1; s < S; ++s) {
      check(cudaStreamWaitEvent(first, buffers_[s].done, 0), "waiting for an event");
      add_from(s, lp, buffers_[s].lp, received_lp_, chains_);
      if (grad) add_from(s, grad, buffers_[s].grad, received_grad_, n);
    }
  }

  void synchronize() override {
    for (size_t s = 0; s < shards_.size(); ++s) shards_[s]->synchronize();
    select_device(gpus_[0]);
  }

  void log_density(const double* state, double* lp, double* grad) override {
    log_density_via(*this, state, lp, grad, state_, lp_, grad_);
  }

 private:
  struct Buffers {
    double *state = nullptr, *lp = nullptr, *grad = nullptr;  // on gpus[s]; shard 0: none
    cudaEvent_t done = nullptr;
  };

  cudaStream_t stream_of(int s) const { return static_cast<cudaStream_t>(shards_[s]->stream()); }

  // total (on gpus[0]) += shard s's partial, through `landing` (on gpus[0]),
  // on the first shard's stream. The current device is gpus[0].
  void add_from(int s, double* total, const double* partial, double* landing, long count) {
    cudaStream_t first = stream_of(0);
    check(cudaMemcpyPeerAsync(landing, gpus_[0], partial, gpus_[s], count * sizeof(double), first),
          "copying a shard's partials between GPUs");
    StreamLaunch{first, count, shards_[0]->multiprocessors()}(AddPartial{{}, total, landing, count});
  }

  double* allocate(int gpu, long n) {
    select_device(gpu);
    const size_t bytes = static_cast<size_t>(std::max<long>(n, 1)) * sizeof(double);
    void* p = device_malloc(bytes, gpu, "the multi-GPU executor");
    owned_.push_back({gpu, p});
    own_bytes_ += static_cast<double>(bytes);
    return static_cast<double*>(p);
  }

  // Frees everything, errors ignored (it runs from the destructor).
  void release() {
    for (size_t s = 0; s < shards_.size(); ++s) {
      cudaSetDevice(gpus_[s]);
      cudaStreamSynchronize(stream_of(static_cast<int>(s)));
    }
#ifdef LOCKSTEP_HAS_NCCL
    for (ncclComm_t c : comms_)
      if (c) NcclLibrary::get().comm_destroy(c);
    comms_.clear();
#endif
    for (size_t s = 0; s < buffers_.size(); ++s)
      if (buffers_[s].done) {
        cudaSetDevice(gpus_[s]);
        cudaEventDestroy(buffers_[s].done);
        buffers_[s].done = nullptr;
      }
    if (state_ready_) {
      cudaSetDevice(gpus_[0]);
      cudaEventDestroy(state_ready_);
      state_ready_ = nullptr;
    }
    for (const auto& o : owned_) {
      cudaSetDevice(o.first);
      cudaFree(o.second);
    }
    owned_.clear();
    shards_.clear();
    cudaGetLastError();
  }

  std::vector<int> gpus_;
  long chains_, dim_;
  std::vector<std::unique_ptr<DeviceExecutor>> shards_;
  std::vector<Buffers> buffers_;
  cudaEvent_t state_ready_ = nullptr;
  bool nccl_ = false;
#ifdef LOCKSTEP_HAS_NCCL
  std::vector<ncclComm_t> comms_;
#endif
  std::vector<std::pair<int, void*>> owned_;  // (device, allocation)
  double own_bytes_ = 0;
  CommunicatorStats exchanged_;
  double *received_lp_ = nullptr, *received_grad_ = nullptr;  // on gpus[0], without NCCL
  double *state_ = nullptr, *lp_ = nullptr, *grad_ = nullptr;  // for log_density, on gpus[0]
};

}  // namespace

bool nccl_available() {
#ifdef LOCKSTEP_HAS_NCCL
  return NcclLibrary::get().ok();
#else
  return false;
#endif
}

std::unique_ptr<DeviceExecutor> make_multi_device_executor(const Program& program, long chains,
                                                           const ExecOptions& options,
                                                           bool single) {
  return std::make_unique<MultiDeviceExecutor>(program, chains, options, single);
}

}  // namespace cuda
}  // namespace lockstep
