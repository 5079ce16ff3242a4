// The executor: log density and gradient of a planned Program for C chains in
// one call (DESIGN.md, "Execution").
//
// The global stage runs op by op over whole values; with threads, the chains
// are split among them (every kernel writes only its own chains' values, so
// chain groups never race). The observation stage, when the plan has one and
// it is enabled, runs tile by tile (observation_stage.hpp). Kernels are
// lanes-policy bodies launched on the CPU or the emulated backend.
//
// With observation_stage = false every node is run op by op over whole values:
// the plain executor that the tiled one is tested against.
#ifndef LOCKSTEP_EXECUTOR_HPP
#define LOCKSTEP_EXECUTOR_HPP

#include <memory>
#include <stdexcept>
#include <tuple>
#include <vector>

#include "communicator.hpp"
#include "ir.hpp"
#include "launcher.hpp"
#include "cpu_kernels.hpp"
#include "node_kernels.hpp"
#include "observation_stage.hpp"
#include "planner.hpp"
#include "recorded_launches.hpp"
#include "thread_pool.hpp"

namespace lockstep {

struct ExecOptions {
  Backend backend = Backend::cpu;
  EmulatedGeometry geometry;
  int threads = 1;
  int devices = 1;  // virtual devices: shards of each observation stage
  bool observation_stage = true;
  long tile_rows = 0;  // 0: chosen from the cache size
  // With tile_rows 0, the most rows of a tile (0: no cap): svi()'s
  // minibatches draw tiles, so a batch wants many small ones.
  long max_tile_rows = 0;
  bool reorder_rows = true;
  // Sums the observation stage's partials across processes (MPI ranks, each
  // holding its own rows of the data; see mpi_communicator.hpp); nullptr: one
  // process. The global stage (priors, Jacobians) runs identically on every
  // rank and is not summed. Must outlive the executor.
  Communicator* world = nullptr;
  // Whether constrained parameters add the log |Jacobian| of their transform:
  // the density of the free state (sampling, and MAP estimates), or, false,
  // the model's own density at the constrained values (maximum likelihood).
  bool jacobian = true;
  // The CUDA device the cuda backend runs on (backends/cuda_executor.hpp);
  // with two or more in `gpus`, the devices a multi-GPU executor splits the
  // rows among (gpu is then gpus[0]).
  int gpu = 0;
  std::vector<int> gpus = {};
  // `threads` is a most, not a demand: the executor uses no more threads than
  // the work of one call supports (work_per_call(), at least
  // min_work_per_thread values each), so that a small model runs on one
  // thread instead of paying a hand-over to the pool at every leapfrog step.
  // R's cpu_only() sets it when the user did not choose the threads.
  bool threads_auto = false;
  // In double precision on the cpu backend, an unconstrained parameter read
  // only by elementwise ops, densities and row dot products (as b, s, q or v)
  // has no buffers of its own: its value is its slice of the state and its
  // adjoint its slice of the gradient, so that the copies in and out of a
  // large model's parameters, and the zeroing of their adjoints, are gone.
  // value() of such a node is then empty (tracing executors leave this off).
  bool alias_parameters = false;
  // On the cpu backend, the first density to write an adjoint in a gradient
  // stores its partials there instead of adding them to zeros
  // (Executor::find_first_writers()); false only to compare with.
  bool first_writers = true;
  // Each observation stage runs as the tile kernel (tile_kernel.hpp): on the
  // emulated backend block by block, each node's body on the block's lanes
  // alone, the tile's values in block memory (one shard, one worker); on the
  // cuda backend as one launch per stage, the tile in shared memory, where
  // its kernel holds the stage (backends/cuda_executor.hpp). Not with
  // `world`.
  bool tile_kernel = false;
  // Where the observation stages take the row data and indices that every
  // executor of the program holds alike (row_store.hpp): one copy for all
  // of a model's executors. nullptr: each executor's own. Read only while
  // an executor is made; a store of another program is not used.
  RowStore* row_store = nullptr;

  // Every field, for comparing options (TargetCache): a field added above is
  // added here too.
  auto fields() const {
    return std::tie(backend, geometry, threads, devices, observation_stage, tile_rows,
                    max_tile_rows, reorder_rows, world, jacobian, gpu, gpus, threads_auto, alias_parameters,
                    first_writers, tile_kernel, row_store);
  }
};

// Values one log density and gradient of `chains` chains touches, roughly:
// every live chain-carrying value for each chain, and the row data once. A
// thread's share of a call must be well above the microsecond or so a
// hand-over to the pool's spinning threads costs, several times per call
// and per leapfrog step (the threshold's measurements: bench/RESULTS.md,
// "Why code is as it is").
long work_per_call(const Program& program, long chains);
constexpr long min_work_per_thread = 1L << 13;
// The threads an executor with these options uses for this program.
int effective_threads(const Program& program, long chains, const ExecOptions& options);

class ChainVectors;  // sampler/chain_vectors.hpp


// Something with a log density and gradient over a [chains, dim] state: what
// samplers need. Executor is one; tests use analytic targets.
class Target {
 public:
  virtual ~Target() = default;
  virtual long dim() const = 0;
  virtual long chains() const = 0;
  // The whole model's free parameters, of which this target's state holds
  // dim(): fewer on a rank that owns part of the state (owned_shard.hpp).
  virtual long full_dim() const { return dim(); }
  // state: [chains, dim] chain-major; lp: [chains]; grad: [chains, dim] or nullptr.
  virtual void log_density(const double* state, double* lp, double* grad) = 0;
  // The threads a sampler may use for its own vector operations (none: serial).
  virtual ThreadPool* pool() { return nullptr; }
  // Where a sampler keeps its [chains, dim] vectors and runs their operations
  // (sampler/chain_vectors.hpp): by default host memory, the CPU backend and
  // pool()'s threads; an emulated executor's run on the emulated backend, a
  // GPU executor's in its device memory. Defined in chain_vectors.cpp.
  virtual std::unique_ptr<ChainVectors> vectors();
  // What this target's devices have sent one another since it was made
  // (calls: one per gradient or per all-reduce, as the target counts them;
  // bytes): nothing on one device. For tests and benchmarks of what crosses
  // devices per gradient.
  virtual CommunicatorStats exchanged() const { return CommunicatorStats(); }
  // For a target that holds part of the whole state (owned_shard.hpp), what
  // samplers that draw coordinates and sum over them on the host (rwmh(),
  // slice()) need to make one process's draws: each coordinate's index in
  // the whole state (nullptr: its own index), and per-chain sums over the
  // whole state made from each part's, where the coordinates before
  // counted_from() count on one part only (collective).
  virtual const std::vector<long>* full_index() const { return nullptr; }
  virtual long counted_from() const { return 0; }
  virtual void sum_over_parts(double* values, long n) {
    (void)values;
    (void)n;
  }
  // The largest of each of n values over the parts (collective): L-BFGS's
  // sup norms over the whole state.
  virtual void max_over_parts(double* values, long n) {
    (void)values;
    (void)n;
  }
  // Evaluates minibatches (active) or the whole data from the next
  // log_density on. Targets without an observation stage they can subset
  // throw std::invalid_argument for an active one.
  virtual void set_minibatch(const Minibatch& batch) {
    if (batch.active())
      throw std::invalid_argument(
          "lockstep: minibatches (batch_size) run on the cpu backend only: use cpu_only()");
  }
};

template <class T> class Executor : public Target {
 public:
  // The program must outlive the executor and be planned.
  Executor(const Program& program, long chains, ExecOptions options);
  Executor(const Program& program, long chains, Backend backend = Backend::cpu,
           EmulatedGeometry geometry = EmulatedGeometry());

  long dim() const override { return program_.n_free; }
  long chains() const override { return chains_; }
  void log_density(const double* state, double* lp, double* grad) override;
  // Minibatches of every observation stage's tiles (on an MPI rank, its own
  // rows': the part is the rank). Throws std::invalid_argument for an
  // active one when the executor has no observation stage (a model whose
  // likelihood is not row-aligned) or aliases parameters the stages read
  // (whose adjoints the stages then add to directly, unscaled).
  void set_minibatch(const Minibatch& batch) override;
  // nullptr when the executor runs on one thread (samplers then run their
  // vector operations inline).
  ThreadPool* pool() override { return options_.threads > 1 ? pool_.get() : nullptr; }
  // Host vectors on this executor's backend (cpu or emulated) and threads.
  std::unique_ptr<ChainVectors> vectors() override;
  int threads() const { return options_.threads; }

  // Forward pass only: fills the value of every node of the global stage (run
  // with observation_stage = false to see every node; used to trace arrays).
  void forward(const double* state);
  // A node's value after log_density or forward: [chains, size] when the node
  // carries the chain dimension, [size] otherwise; empty for a node of the
  // observation stage, which exists only tile by tile, and for a parameter
  // aliased to the state (ExecOptions::alias_parameters).
  const std::vector<T>& value(int node) const { return values_[node]; }
  // Whether `node` stores what it writes in a gradient as its first writer
  // (ExecOptions::first_writers): a density its target's partials, a
  // parameter its slice of the gradient. For tests.
  bool first_writer(int node) const { return first_writer_[node]; }
  // The observation stage of an extent (when tiled): how it runs, for tests.
  const ObservationStage<T>& stage(int extent) const { return *stages_[extent]; }
  // What the virtual devices' all-reduces have carried (ExecOptions::devices;
  // counted with one device too): for tests and benchmarks of what crosses
  // shards per gradient.
  const CommunicatorStats& shard_stats() const { return comm_->stats(); }
  CommunicatorStats exchanged() const override {
    return options_.devices > 1 ? comm_->stats() : CommunicatorStats();
  }
  void reset_shard_stats() { comm_->reset_stats(); }

 private:
  bool global(int id) const { return !tiled_ || program_.nodes[id].extent < 0; }
  // Whether log_density runs a node op by op: the live global nodes with the
  // chain dimension (the others are constant, tiled or do not matter).
  bool runs(int id) const {
    const Node& n = program_.nodes[id];
    return n.chain && n.live && global(id) && !alias_stride_[id];
  }
  // Whether parameter `id`, whose readers all address it through its chain
  // stride, may be aliased to the state (alias_parameters).
  bool can_alias(int id) const;
  // The stage's view of the global buffers for one call.
  GlobalBuffers<T> global_buffers(const double* state, double* grad);
  // Node id's call over chains [c0, c0 + nc): calls_[id] brought up to date
  // when that is every chain, else made into `scratch` (one per thread).
  const NodeCall<T>& call(int id, const double* state, double* lp, double* grad, long c0,
                          long nc, NodeCall<T>& scratch);
  NodeCall<T> make_call(int id, const double* state, double* lp, double* grad, long c0, long nc);
  // The pass over every chain on one thread, recorded (recorded_launches.hpp)
  // for the buffers it was given: with the gradient (forward and backward)
  // and without (forward only). record() records anew when the buffers moved.
  struct Recording {
    RecordedLaunches forward, backward;
    const double* state = nullptr;
    const double* lp = nullptr;
    const double* grad = nullptr;
    bool valid = false;
  };
  void record(Recording& r, const double* state, double* lp, double* grad);
  // The global stage's calls over chains [c0, c0 + nc), each way, launched
  // (or recorded) by `launch`: log_density()'s chain groups and record().
  template <class L>
  void forward_pass(const double* state, double* lp, double* grad, long c0, long nc, L& launch);
  template <class L> void backward_pass(const double* state, double* grad, long c0, long nc, L& launch);
  // Runs f(c0, nc) over chain groups, one per thread.
  template <class F> void for_chain_groups(F&& f);

  const Program& program_;
  long chains_;
  ExecOptions options_;
  Launcher launch_;
  bool tiled_;
  std::vector<KernelNode> kernel_nodes_;  // per node: what its calls point at
  std::vector<std::vector<T>> values_, adjoints_;
  // per node: n_free for a parameter aliased to the state, else 0
  std::vector<long> alias_stride_;
  // First writers (find_first_writers()): per node, whether it stores what
  // it writes in a gradient (NodeCall::first_writer): a density of the
  // global stage, its target's adjoint; a parameter, its slice of the
  // gradient. And whether a node's adjoint is written that way (and so is
  // not zeroed first). The spans of [0, n_free) that log_density() zeroes
  // in each chain's gradient: all but the slices that first writers store.
  std::vector<char> first_writer_, adjoint_stored_;
  std::vector<char> index_in_runs_;  // per node: NodeCall::index_in_runs
  std::vector<char> index_in_steps_;  // per node: NodeCall::index_in_steps (the CPU's)
  std::vector<std::pair<long, long>> grad_zero_spans_;
  void find_first_writers();
  std::vector<const T*> alias_value_;  // filled per call by global_buffers()
  std::vector<T*> alias_adjoint_;
  std::vector<double> scratch_;  // [chains]
  std::vector<double> work_;     // [chains, the largest workspace_per_chain]
  long work_per_chain_ = 0;      // that largest
  // Per node, its call over every chain (c0 = 0, nc = chains) made once, with
  // the state, gradient and log density pointers (and the slots of aliased
  // parameters) filled in at each call: a small model's gradient makes a
  // call per node each way, and building one (seven slots, a division each)
  // and copying it out took a tenth of gp_pois_regr's time.
  std::vector<NodeCall<T>> calls_;
  Recording with_gradient_, without_gradient_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<InProcessCommunicator> comm_;
  std::vector<std::unique_ptr<ObservationStage<T>>> stages_;
  Minibatch minibatch_;  // set_minibatch()'s (its part the rank's across processes)
  const Minibatch* batch() const { return minibatch_.active() ? &minibatch_ : nullptr; }
};

extern template class Executor<double>;
extern template class Executor<float>;

}  // namespace lockstep

#endif
