// The executor of a GPU rank of an MPI run (cuda_executor.hpp,
// make_rank_executor; DESIGN.md, "Devices and communication"): this
// process's rows on its GPU, run by a CudaExecutor over rank_program()
// (shards.hpp: the global terms on rank 0 only), and every call's log
// density and gradient summed over the processes by NCCL in device memory,
// over a communicator that rank 0 set up (ncclGetUniqueId) and MPI handed to
// the others (NCCL "bootstrapped through MPI"). The sampler's vectors then
// stay on each rank's GPU, and every rank runs the same sampler on the same
// totals; the sums it decides from are rank 0's (RankAgreedVectors), so
// ranks on GPUs whose sums differ in their last bits still agree.
//
// The sum is an ncclReduce to rank 0 followed by an ncclBroadcast from it,
// not an ncclAllReduce: every rank must hold bitwise the same sums, or the
// ranks' samplers could decide differently (accept, tree depth), make
// different numbers of collective calls and hang; NCCL does not promise that
// an all-reduce's result is bitwise the same on every rank, and a broadcast
// of one rank's sum is.
#include <cuda_runtime.h>

#include <cstring>
#include <memory>
#include <string>

#include "lockstep/backends/cuda_executor_impl.cuh"
#include "lockstep/backends/nccl_library.cuh"
#include "lockstep/shards.hpp"

namespace lockstep {
namespace cuda {

#ifdef LOCKSTEP_HAS_NCCL

namespace {

class RankExecutor final : public DeviceExecutor {
 public:
  RankExecutor(std::unique_ptr<DeviceExecutor> local, Communicator* world)
      : local_(std::move(local)), gpu_(local_->gpu()), world_(world) {
    const NcclLibrary& nccl = NcclLibrary::get();
    if (!nccl.ok()) throw std::runtime_error("lockstep NCCL: libnccl.so.2 is not available");
    // NCCL bootstrapped through MPI: rank 0's unique id to every rank
    ncclUniqueId unique;
    std::memset(&unique, 0, sizeof unique);
    if (world->rank() == 0) nccl_check(nccl.get_unique_id(&unique), "ncclGetUniqueId");
    world->broadcast_bytes(&unique, static_cast<long>(sizeof unique));
    select_device(gpu_);
    nccl_check(nccl.comm_init_rank(&comm_, world->ranks(), unique, world->rank()),
               "ncclCommInitRank");
    const long n = local_->chains() * local_->dim();
    state_ = device_alloc(n);
    grad_ = device_alloc(n);
    lp_ = device_alloc(local_->chains());
  }

  ~RankExecutor() override {
    cudaSetDevice(gpu_);
    cudaStreamSynchronize(stream_of());
    if (comm_) NcclLibrary::get().comm_destroy(comm_);
    device_free(state_);
    device_free(grad_);
    device_free(lp_);
    cudaGetLastError();
  }

  long dim() const override { return local_->dim(); }
  long chains() const override { return local_->chains(); }
  void* stream() const override { return local_->stream(); }
  int gpu() const override { return gpu_; }
  int multiprocessors() const override { return local_->multiprocessors(); }
  double device_bytes() const override {
    return local_->device_bytes() + (2.0 * chains() * dim() + chains()) * sizeof(double);
  }
  std::string profile_report() const override { return local_->profile_report(); }
  // Each rank draws from its own rows (the part: its rank).
  void set_minibatch(const Minibatch& batch) override {
    local_->set_minibatch(batch.of_part(static_cast<uint32_t>(world_->rank())));
  }
  // on the GPU, with the sums the sampler decides from made the same on
  // every rank (shards.hpp)
  std::unique_ptr<ChainVectors> vectors() override {
    return std::make_unique<RankAgreedVectors>(
        make_device_vectors(*this, stream(), gpu_, multiprocessors()), world_);
  }

  void log_density_device(const double* state, double* lp, double* grad) override {
    local_->log_density_device(state, lp, grad);
    select_device(gpu_);
    const NcclLibrary& nccl = NcclLibrary::get();
    const size_t C = static_cast<size_t>(chains()), n = C * static_cast<size_t>(dim());
    // one communicator, one stream: the four run in this order
    // (counted as the MPI communicator's own calls: mpi_stats())
    world_->count_call(static_cast<long>(C * sizeof(double)));
    nccl_check(nccl.reduce(lp, lp, C, ncclDouble, ncclSum, 0, comm_, stream_of()), "ncclReduce");
    if (grad) {
      world_->count_call(static_cast<long>(n * sizeof(double)));
      nccl_check(nccl.reduce(grad, grad, n, ncclDouble, ncclSum, 0, comm_, stream_of()),
                 "ncclReduce");
    }
    world_->count_call(static_cast<long>(C * sizeof(double)));
    nccl_check(nccl.broadcast(lp, lp, C, ncclDouble, 0, comm_, stream_of()), "ncclBroadcast");
    if (grad) {
      world_->count_call(static_cast<long>(n * sizeof(double)));
      nccl_check(nccl.broadcast(grad, grad, n, ncclDouble, 0, comm_, stream_of()),
                 "ncclBroadcast");
    }
  }

  void synchronize() override { local_->synchronize(); }

  void log_density(const double* state, double* lp, double* grad) override {
    log_density_via(*this, state, lp, grad, state_, lp_, grad_);
  }

 private:
  cudaStream_t stream_of() const { return static_cast<cudaStream_t>(local_->stream()); }

  std::unique_ptr<DeviceExecutor> local_;
  int gpu_;
  Communicator* world_;
  ncclComm_t comm_ = nullptr;
  double *state_ = nullptr, *grad_ = nullptr, *lp_ = nullptr;  // for log_density
};

}  // namespace

std::unique_ptr<DeviceExecutor> make_rank_executor(std::unique_ptr<DeviceExecutor> local,
                                                   Communicator* world) {
  return std::make_unique<RankExecutor>(std::move(local), world);
}

#else  // no NCCL at build time

std::unique_ptr<DeviceExecutor> make_rank_executor(std::unique_ptr<DeviceExecutor>, Communicator*) {
  throw std::runtime_error("lockstep was built without NCCL (configure found no nccl.h)");
}

#endif

}  // namespace cuda
}  // namespace lockstep
