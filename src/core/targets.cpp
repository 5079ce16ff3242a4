// Which executor runs a model's log density (targets.hpp).
#include "lockstep/targets.hpp"

#include <stdexcept>
#include <string>
#include <utility>

#include "lockstep/backends/cuda.hpp"
#include "lockstep/backends/cuda_executor.hpp"
#include "lockstep/owned_shard.hpp"
#include "lockstep/shards.hpp"

namespace lockstep {

namespace {

#ifdef LOCKSTEP_HAS_CUDA
// A GPU rank of an MPI run: this rank's program on its GPU, its partials
// summed across the ranks by NCCL in device memory where every rank can (the
// sampler's vectors then stay on the GPU), else on the host by MPI
// (shards.hpp, WorldSumTarget). The ranks decide each step together: all
// must take the same path, and none may wait in a collective call that
// another, having failed, never makes.
std::unique_ptr<Target> gpu_rank(const Program& p, long chains, const ExecOptions& o,
                                 bool single) {
  Communicator& world = *o.world;
  const int rank = world.rank(), ranks = world.ranks();
  ExecOptions local = shard_options(o, rank);
  local.world = nullptr;
  // (every rank checks the same kind of program, so all throw or none)
  const Program mine = rank_program(p, rank);
  auto everyone = [&](bool ok) {
    double count = ok ? 1 : 0;
    double* counts[] = {&count};
    world.all_reduce_sum(counts, 1);
    return count == ranks;
  };
  std::unique_ptr<cuda::DeviceExecutor> executor =
      on_every_rank(world, [&] { return cuda::make_executor(mine, chains, local, single); }, "its GPU");
  if (everyone(cuda::nccl_available())) {
    std::unique_ptr<cuda::DeviceExecutor> ranked;
    try {
      ranked = cuda::make_rank_executor(std::move(executor), o.world);
    } catch (const std::exception&) {
      // NCCL could not set up (two ranks on one GPU): MPI on the host
    }
    if (everyone(ranked != nullptr)) return ranked;
    ranked.reset();
    executor = cuda::make_executor(mine, chains, local, single);
  }
  return std::make_unique<WorldSumTarget>(std::move(executor), o.world);
}
#endif

}  // namespace

std::unique_ptr<Target> make_target(const Program& program, long chains, const ExecOptions& o,
                                    bool single) {
  if (o.backend == Backend::cuda) {
#ifdef LOCKSTEP_HAS_CUDA
    if (o.world) return gpu_rank(program, chains, o, single);
    return cuda::make_executor(program, chains, o, single);
#else
    throw std::invalid_argument(cuda::built_without_cuda);
#endif
  }
  if (single) return std::make_unique<Executor<float>>(program, chains, o);
  return std::make_unique<Executor<double>>(program, chains, o);
}

Target& TargetCache::get(long chains, const ExecOptions& options) {
  ExecOptions o = options;
  if (rows_) o.row_store = rows_;
  for (Entry& e : entries_)
    if (e.chains == chains && e.options.fields() == o.fields()) return *e.target;
  std::unique_ptr<Target> target = make_target(program_, chains, o, single_);
  if (entries_.size() >= max_kept) entries_.clear();
  entries_.push_back(Entry{chains, o, std::move(target)});
  return *entries_.back().target;
}

}  // namespace lockstep
