// The executor on a CUDA GPU: the log density and gradient of a planned
// Program for C chains in one call, every node's value and adjoint in device
// memory, every node run by the same lanes-policy kernel bodies (through
// node_kernels.hpp) that the CPU and emulated backends run. Plain C++ (no CUDA
// types), so that g++-compiled code can hold one; the definitions are in
// src/cuda/cuda_executor*.cu and exist only where configure found nvcc
// (LOCKSTEP_HAS_CUDA).
//
// What runs where:
// * Nodes without the chain dimension (data and what is computed from data
//   alone) are evaluated once on the host when the executor is built and
//   copied to the device.
// * Every other live node runs op by op, one kernel per op (plus the small
//   per-chain bookkeeping kernels of a sum or a density), in program order on
//   one stream; the backward pass in reverse order. Row-aligned values are
//   whole [chains, rows] buffers here, unless options.tile_kernel: then each
//   observation stage is one launch of the tile kernel (tile_kernel.hpp,
//   backends/tile_kernel.cuh), its row-aligned values in shared memory tile
//   by tile, between the global stage's forward and backward passes, where
//   the kernel holds the stages' ops and families (LinearTileKernels: row
//   dot products, matmul, gathers and row sums under the common
//   likelihoods) and a 32-row tile fits in shared memory; else op by op.
//   The executor runs its own copy of the
//   program with each extent's rows in row_order (row_order.hpp), so that
//   gathers and their scatter-adds walk memory in order.
//
// Sums are not bit-reproducible between runs: per-chain sums (densities,
// Jacobians, sum(), the partials of a logpdf's scalar parameters) add each
// block's partial with an atomic, and gathers' backward passes scatter-add
// with atomics (a run of equal indices summed first, where the rows are
// sorted by group), and the tile kernel adds each tile's partials to the
// global adjoints, the terms and the log density with atomics, so the order
// of the additions, and hence the last bits, may change from run to run;
// nothing else does.
#ifndef LOCKSTEP_BACKENDS_CUDA_EXECUTOR_HPP
#define LOCKSTEP_BACKENDS_CUDA_EXECUTOR_HPP

#include <memory>
#include <string>

#include "../communicator.hpp"
#include "../executor.hpp"
#include "../ir.hpp"

namespace lockstep {
namespace cuda {

class DeviceExecutor : public Target {
 public:
  // The Target interface: host arrays in and out (copied to and from the
  // device in each call). Synchronous.
  // state: [chains, dim]; lp: [chains]; grad: [chains, dim] or nullptr.
  // log_density_device: the same with state, lp and grad in device memory
  // (device_alloc), asynchronous on the executor's stream: call synchronize()
  // before reading them.
  virtual void log_density_device(const double* state, double* lp, double* grad) = 0;
  virtual void synchronize() = 0;
  // Bytes of device memory the executor holds.
  virtual double device_bytes() const = 0;
  // With LOCKSTEP_CUDA_PROFILE set in the environment when the executor was
  // made: a table of each node's forward and backward milliseconds per call
  // (each node synchronised, so slower than unprofiled calls); else "".
  virtual std::string profile_report() const = 0;
  // The cudaStream_t its calls are queued on, its device and that device's
  // multiprocessors: where a sampler's vectors go (make_device_vectors).
  virtual void* stream() const = 0;
  virtual int gpu() const = 0;
  virtual int multiprocessors() const = 0;
};

// The program must be planned (the executor keeps a copy); options.gpu picks the
// device, or options.gpus, when it names more than one, the devices of a
// multi-GPU executor (make_multi_device_executor); `single` computes in
// float32 with sums in double. Throws
// std::runtime_error when no CUDA device is visible, when options.gpu is not
// one of them, or when the device has too little free memory for the model
// (the message says how much was needed and how much is free), and
// std::invalid_argument for options the GPU does not support (a run across
// MPI processes).
std::unique_ptr<DeviceExecutor> make_executor(const Program& program, long chains,
                                              const ExecOptions& options, bool single);

// The executor over several GPUs, options.gpus (at least two; a device may be
// named more than once, for tests on one GPU): shard s of the program's rows
// (shards.hpp) on GPU gpus[s], each an executor of its own; the state, the log
// density and the gradient of log_density_device in the memory of gpus[0],
// where a sampler's vectors live. Each call sends the state to the other
// shards and sums their partials into gpus[0]'s: with NCCL (a broadcast and a
// reduction) where the devices are distinct and libnccl loads, else by copies
// between devices and additions in shard order. LOCKSTEP_NCCL=no in the
// environment turns NCCL off.
std::unique_ptr<DeviceExecutor> make_multi_device_executor(const Program& program, long chains,
                                                           const ExecOptions& options, bool single);

// A GPU rank of an MPI run (src/cuda/rank_executor.cu): `local` runs this
// rank's program, rank_program() of its rows (shards.hpp), on its GPU, and
// every call's log density and gradient are summed over the ranks of `world`
// by NCCL in device memory (its communicator set up from a unique id that
// rank 0 makes and `world` broadcasts), so that the sampler's vectors stay
// on the GPU. Collective: every rank must make it, and call it, together.
// Throws std::runtime_error where NCCL is not available (nccl_available())
// or cannot set up its communicator (two ranks on one GPU).
std::unique_ptr<DeviceExecutor> make_rank_executor(std::unique_ptr<DeviceExecutor> local,
                                                   Communicator* world);

// A sampler's vectors in the memory of GPU `gpu`, their operations queued on
// `stream` (the executor's cudaStream_t, so they are ordered with its
// log_density_device calls) and sized for `multiprocessors`
// (src/cuda/chain_vectors.cu). The executor's vectors() makes them.
std::unique_ptr<ChainVectors> make_device_vectors(DeviceExecutor& target, void* stream, int gpu,
                                                  int multiprocessors);

// Device memory for tests and benchmarks: n doubles on options' device.
double* device_alloc(long n);
void device_free(double* p);
void copy_to_device(double* dst, const double* src, long n);
void copy_to_host(double* dst, const double* src, long n);

}  // namespace cuda
}  // namespace lockstep

#endif
