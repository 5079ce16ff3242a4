// The CUDA executor's implementation (cuda_executor.hpp), a template over the
// value type, instantiated once per precision in src/cuda/cuda_executor_*.cu
// (two files, so that nvcc compiles them in parallel). Include only from .cu
// files.
#ifndef LOCKSTEP_BACKENDS_CUDA_EXECUTOR_IMPL_CUH
#define LOCKSTEP_BACKENDS_CUDA_EXECUTOR_IMPL_CUH

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "../launcher.hpp"
#include "../cpu_kernels.hpp"
#include "../node_kernels.hpp"
#include "../observation_stage.hpp"
#include "../row_order.hpp"
#include "../sampler/chain_vectors.hpp"
#include "cuda_executor.hpp"
#include "cuda_launch.cuh"
#include "tile_kernel.cuh"

namespace lockstep {
namespace cuda {

// Makes `gpu` the calling thread's current device, checking that it exists.
void select_device(int gpu);

// Launches a body on the executor's stream with a grid sized to `work` (the
// elements the node touches, over all chains). Bodies loop with a grid
// stride, so the grid only needs to be large enough to fill the GPU; lanes per
// block are halved while a body's block-shared scratch (per lane: the chains,
// for a per-chain sum) would pass the 48 KiB that needs no opt-in. A body
// with block-shared scratch ends each sum with a pass over its block's lanes:
// those get two blocks per multiprocessor (so that serial passes run side by
// side rather than thousands of blocks queueing for them), or as many as the
// body declares (ChainSum's tree-shaped pass is short).
// Blocks per multiprocessor for a body with block-shared scratch: its own
// blocks_per_multiprocessor (ChainSum's sums end in a tree), else 2.
template <class Body, class = void> struct declares_blocks : std::false_type {};
template <class Body>
struct declares_blocks<Body, std::void_t<decltype(Body::blocks_per_multiprocessor)>>
    : std::true_type {};
template <class Body> constexpr long blocks_per_multiprocessor() {
  if constexpr (declares_blocks<Body>::value)
    return Body::blocks_per_multiprocessor;
  else
    return 2;
}

struct StreamLaunch {
  cudaStream_t stream = 0;
  long work = 1;
  int multiprocessors = 132;

  template <class Body> void operator()(const Body& body) const {
    const long per_lane = body.shared_per_lane > 0 ? body.shared_per_lane : 0;
    const int threads = lanes_within_shared(per_lane);
    const long wanted = (std::max<long>(work, 1) + threads - 1) / threads;
    const long most = per_lane > 0 ? blocks_per_multiprocessor<Body>() * multiprocessors : 4096L;
    const int blocks = static_cast<int>(std::min<long>(wanted, most));
    launch_cuda(body, blocks, threads, stream);
  }
};

// DeviceExecutor::log_density through device buffers on ex.gpu() (state_dev,
// lp_dev, grad_dev: [chains, dim], [chains], [chains, dim]): the host state
// copied in, log_density_device, lp and gradient copied back, on ex's stream,
// waited for. Every executor's host entry point.
inline void log_density_via(DeviceExecutor& ex, const double* state, double* lp, double* grad,
                            double* state_dev, double* lp_dev, double* grad_dev) {
  select_device(ex.gpu());
  const long C = ex.chains(), n = C * ex.dim();
  cudaStream_t stream = static_cast<cudaStream_t>(ex.stream());
  check(cudaMemcpyAsync(state_dev, state, n * sizeof(double), cudaMemcpyHostToDevice, stream),
        "copying the state to the device");
  ex.log_density_device(state_dev, lp_dev, grad ? grad_dev : nullptr);
  select_device(ex.gpu());
  check(cudaMemcpyAsync(lp, lp_dev, C * sizeof(double), cudaMemcpyDeviceToHost, stream),
        "copying the log density to the host");
  if (grad)
    check(cudaMemcpyAsync(grad, grad_dev, n * sizeof(double), cudaMemcpyDeviceToHost, stream),
          "copying the gradient to the host");
  ex.synchronize();
}

template <class T> class CudaExecutor final : public DeviceExecutor {
 public:
  CudaExecutor(const Program& program, long chains, const ExecOptions& options);
  ~CudaExecutor() override;
  CudaExecutor(const CudaExecutor&) = delete;
  CudaExecutor& operator=(const CudaExecutor&) = delete;

  long dim() const override { return program_.n_free; }
  long chains() const override { return chains_; }
  void log_density(const double* state, double* lp, double* grad) override;
  void log_density_device(const double* state, double* lp, double* grad) override;
  void synchronize() override;
  // Minibatches run in the tile kernel only (each stage's drawn tiles, sent
  // to the device per call, and its densities weighted): an executor that
  // runs a stage op by op refuses them.
  void set_minibatch(const Minibatch& batch) override {
    if (batch.active() && (!tile_kernel_ || tile_stages_.empty()))
      throw std::invalid_argument(
          "lockstep: minibatches (batch_size) on a GPU run in its tile kernel only: use "
          "gpu_only(tile_kernel = TRUE) with a likelihood the kernel holds, or cpu_only()");
    minibatch_ = batch;
  }
  double device_bytes() const override { return bytes_; }
  std::string profile_report() const override;
  void* stream() const override { return stream_; }
  int gpu() const override { return options_.gpu; }
  int multiprocessors() const override { return multiprocessors_; }
  // Device-resident sampling: the sampler's vectors next to this executor's.
  std::unique_ptr<ChainVectors> vectors() override {
    return make_device_vectors(*this, stream_, options_.gpu, multiprocessors_);
  }

 private:
  bool runs(int id) const {
    const Node& n = program_.nodes[id];
    return n.chain && n.live && !(tile_kernel_ && n.extent >= 0);
  }
  // With options.tile_kernel, each observation stage runs as one launch of
  // the tile kernel (backends/tile_kernel.cuh), its row-aligned values in
  // shared memory: its nodes have no buffers here but for a density's
  // value ([chains]), and the global nodes run op by op around it.
  bool tile_kernel_ = false;
  struct TileStage {
    TileKernelArgs<T> args;  // device pointers; lp and gradient set per call
    TileLaunch launch;
    // a minibatch's tiles, drawn on the host and copied to the device per call
    DrawnTiles drawn;
    long* drawn_device = nullptr;  // [tiles]
  };
  Minibatch minibatch_;
  std::vector<TileStage> tile_stages_;
  // Stage e's tiles and their layout in shared memory, on the host: tiles
  // of as many rows as fit tile_shared_bytes; nullptr where the GPU's tile
  // kernel does not hold the stage's ops and families (LinearTileKernels)
  // or not even 32 rows fit (very many chains): the executor then runs every
  // stage op by op.
  std::unique_ptr<ObservationStage<T>> plan_tile_stage(int e,
                                                       const std::vector<std::vector<T>>& host,
                                                       int* lanes) const;
  // The stage's row data, indices, tiles and steps copied to the device.
  TileStage place_tile_stage(const ObservationStage<T>& stage, int lanes);
  std::vector<double> tile_s_;  // profile: each stage's milliseconds
  template <class U> U* allocate(long n);
  NodeCall<T> call(int id, const double* state, double* lp, double* grad);
  long work(int id) const;
  // With LOCKSTEP_CUDA_PROFILE set in the environment, each node's forward and
  // backward kernels are timed (synchronising after each node, so the totals
  // are slower than unprofiled calls), for profile_report(): where a model's
  // time goes, op by op.
  template <class F> void timed(int id, bool backward, F&& f);
  bool profile_ = std::getenv("LOCKSTEP_CUDA_PROFILE") != nullptr;
  // Queues one evaluation's memsets and kernels on the stream.
  void enqueue(const double* state, double* lp, double* grad);
  // A call's memsets and kernels (about two per node) are captured once into a
  // CUDA graph and replayed, one launch per gradient instead of one per
  // kernel: the host's launch overhead, not the GPU, bounded small models.
  // A graph holds the pointers it was captured with, so one is kept for each
  // of the last few (state, lp, grad) a caller passed (log_density's own
  // buffers with and without a gradient, a sampler's device buffers). Off with
  // LOCKSTEP_CUDA_GRAPHS=no (or while profiling), and off for good if capture
  // fails, for the plain launches.
  bool replay(const double* state, double* lp, double* grad);
  bool graphs_ = !(std::getenv("LOCKSTEP_CUDA_GRAPHS") &&
                   std::string(std::getenv("LOCKSTEP_CUDA_GRAPHS")) == "no");
  struct Captured {
    const double* state;
    double *lp, *grad;
    cudaGraphExec_t graph;
  };
  std::vector<Captured> graphs_held_;  // newest last, at most 4
  std::vector<double> forward_s_, backward_s_;
  long profiled_calls_ = 0;

  // The program with its rows in row_order (unless options.reorder_rows is
  // off): gathers and scatter-adds then walk memory in order. Its data values
  // are dropped once on the device.
  Program program_;
  std::vector<KernelNode> kernel_nodes_;  // per node: what its calls point at
  long chains_;
  ExecOptions options_;
  cudaStream_t stream_ = nullptr;
  std::vector<void*> owned_;  // every device allocation, freed by the destructor
  double bytes_ = 0;
  std::vector<T*> values_, adjoints_;  // per node; nullptr where not held
  std::vector<long*> index_;           // per node: its gather index on the device
  std::vector<char> index_in_runs_;    // per node: NodeCall::index_in_runs
  double* scratch_ = nullptr;          // [chains]
  double* work_ = nullptr;             // [chains, the largest workspace_per_chain]
  int multiprocessors_ = 132;          // of the device
  double *state_ = nullptr, *lp_ = nullptr, *grad_ = nullptr;  // for log_density
};

template <class T> template <class U> U* CudaExecutor<T>::allocate(long n) {
  void* p = nullptr;
  const size_t bytes = static_cast<size_t>(std::max<long>(n, 1)) * sizeof(U);
  check(cudaMalloc(&p, bytes), "cudaMalloc");
  owned_.push_back(p);
  bytes_ += static_cast<double>(bytes);
  return static_cast<U*>(p);
}

template <class T>
CudaExecutor<T>::CudaExecutor(const Program& program, long chains, const ExecOptions& options)
    : chains_(chains), options_(options) {
  if (chains < 1) throw std::invalid_argument("chains must be at least 1");
  if (options.world)
    throw std::invalid_argument(
        "lockstep: the cuda backend does not run across MPI processes yet; use cpu_only(mpi = TRUE)");
  select_device(options.gpu);
  program_ = options.reorder_rows ? with_rows_ordered(program) : program;
  kernel_nodes_ = kernel_nodes(program_);
  check(cudaDeviceGetAttribute(&multiprocessors_, cudaDevAttrMultiProcessorCount, options.gpu),
        "reading the device's multiprocessor count");
  const size_t n = program_.nodes.size();
  const long D = program_.n_free;
  long work = 0;  // workspace doubles per chain (linalg ops), the largest of any node
  for (const Node& node : program_.nodes) work = std::max(work, workspace_per_chain(program_, node));

  // Constant nodes on the host, once, by the CPU backend's kernels.
  std::vector<std::vector<T>> host(n);
  {
    std::vector<double> host_scratch(1, 0.0), host_work(std::max<long>(work, 1), 0.0);
    const Launcher cpu{Backend::cpu, EmulatedGeometry()};
    for (size_t id = 0; id < n; ++id) {
      const Node& node = program_.nodes[id];
      if (node.chain) continue;
      host[id].assign(node.size, T(0));
      NodeCall<T> c;
      c.node = &kernel_nodes_[id];
      auto slot = [&](int k) { return whole_slot<T>(program_.nodes[k], host[k].data(), nullptr); };
      c.out = slot(static_cast<int>(id));
      for (size_t k = 0; k < node.inputs.size(); ++k) c.in[k] = slot(node.inputs[k]);
      c.index = node.index.data();
      c.chains = 1;
      c.scratch = host_scratch.data();
      c.work = host_work.data();
      run_forward(c, cpu);
    }
  }

  // The observation stages' tiles, where they run as the tile kernel.
  std::vector<std::unique_ptr<ObservationStage<T>>> stages;
  std::vector<int> stage_lanes;
  if (options.tile_kernel && !program_.extents.empty()) {
    tile_kernel_ = true;
    for (size_t e = 0; e < program_.extents.size() && tile_kernel_; ++e) {
      int lanes = 0;
      stages.push_back(plan_tile_stage(static_cast<int>(e), host, &lanes));
      stage_lanes.push_back(lanes);
      tile_kernel_ = stages.back() != nullptr;
    }
    if (!tile_kernel_) stages.clear();
  }

  // What the device must hold, counted before anything is allocated so that a
  // model too large for the GPU is refused with the figures.
  // constant nodes read by a node that runs, or global ones a tile kernel reads
  std::vector<bool> needed(n, false);
  for (size_t id = 0; id < n; ++id) {
    const Node& node = program_.nodes[id];
    const bool tiled = tile_kernel_ && node.chain && node.live && node.extent >= 0;
    if (runs(static_cast<int>(id)) || tiled)
      for (int in : node.inputs)
        if (!program_.nodes[in].chain && !(tiled && program_.nodes[in].extent >= 0))
          needed[in] = true;
  }
  double total = 3.0 * chains * D * sizeof(double) + 2.0 * chains * sizeof(double) +
                 static_cast<double>(chains) * work * sizeof(double);
  for (size_t id = 0; id < n; ++id) {
    const Node& node = program_.nodes[id];
    if (runs(static_cast<int>(id)))
      total += (node.op == Op::density ? 1.0 : 2.0) * chains * node.size * sizeof(T) +
               node.index.size() * sizeof(long);
    else if (needed[id])
      total += node.size * sizeof(T);
    else if (tile_kernel_ && node.extent >= 0)  // row data, indices, a density's value
      total += (node.chain ? (node.op == Op::density ? chains : 0) : node.size) * sizeof(T) +
               node.index.size() * sizeof(long);
  }
  size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  if (total > 0.95 * static_cast<double>(free_bytes)) {
    char msg[256];
    std::snprintf(msg, sizeof msg,
                  "lockstep CUDA: the model needs %.2f GiB of GPU memory for %ld chains; GPU %d "
                  "has %.2f GiB free (of %.2f GiB)",
                  total / 1073741824.0, chains, options.gpu, free_bytes / 1073741824.0,
                  total_bytes / 1073741824.0);
    throw std::runtime_error(msg);
  }

  try {
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    values_.assign(n, nullptr);
    adjoints_.assign(n, nullptr);
    index_.assign(n, nullptr);
    index_in_runs_.assign(n, 0);
    for (size_t id = 0; id < n; ++id) {
      const Node& node = program_.nodes[id];
      if (tile_kernel_ && node.op == Op::density && node.live && node.extent >= 0) {
        values_[id] = allocate<T>(chains);  // the term's value: the tile kernel adds to it
      } else if (runs(static_cast<int>(id))) {
        const long len = node.op == Op::density ? chains : chains * node.size;
        values_[id] = allocate<T>(len);
        if (node.op != Op::density) adjoints_[id] = allocate<T>(len);
        if (!node.index.empty()) {
          index_[id] = allocate<long>(static_cast<long>(node.index.size()));
          check(cudaMemcpy(index_[id], node.index.data(), node.index.size() * sizeof(long),
                           cudaMemcpyHostToDevice),
                "copying an index to the device");
          index_in_runs_[id] = index_in_runs(node.index);
        }
      } else if (needed[id]) {
        values_[id] = allocate<T>(node.size);
        check(cudaMemcpy(values_[id], host[id].data(), node.size * sizeof(T),
                         cudaMemcpyHostToDevice),
              "copying data to the device");
      }
    }
    for (size_t e = 0; e < stages.size(); ++e)
      tile_stages_.push_back(place_tile_stage(*stages[e], stage_lanes[e]));
    stages.clear();  // (their host copies of the row data)
    for (Node& node : program_.nodes) node.values.release();
    for (KernelNode& k : kernel_nodes_) k.values = nullptr;
    scratch_ = allocate<double>(chains);
    work_ = allocate<double>(chains * work);
    state_ = allocate<double>(chains * D);
    grad_ = allocate<double>(chains * D);
    lp_ = allocate<double>(chains);
  } catch (...) {
    for (void* p : owned_) cudaFree(p);
    if (stream_) cudaStreamDestroy(stream_);
    throw;
  }
}

// Shared memory for a block of the tile kernel: its bodies' scratch, a
// density's per-chain sums and the tile. A third of an H100's multiprocessor,
// so that three blocks run on each.
constexpr long tile_shared_bytes = 72 * 1024;

template <class T>
std::unique_ptr<ObservationStage<T>> CudaExecutor<T>::plan_tile_stage(
    int e, const std::vector<std::vector<T>>& host, int* lanes) const {
  StageOptions so;
  so.tile_kernel = true;
  so.reorder_rows = false;  // program_'s rows are in row_order already
  so.jacobian = options_.jacobian;
  so.tile_rows = 32;
  so.row_data = false;
  // The bodies' scratch does not depend on the tile's rows: found on a
  // stage of 32-row tiles (its layout alone: no copy of the row data), it
  // fixes the lanes, and what is left of the budget the rows.
  auto stage = std::make_unique<ObservationStage<T>>(program_, e, chains_, so, host);
  const TileLayout<T> first = stage->tile_layout(TilePlacement<T>(program_.nodes.size()));
  if (!tile_kernel_holds<LinearTileKernels>(first.steps)) return nullptr;
  *lanes = lanes_within_shared(first.body_shared);
  long per_row = 0;  // bytes of a row's values and adjoints, all chains
  for (int id : stage->nodes()) {
    const Node& node = program_.nodes[id];
    if (node.op != Op::density) per_row += 2 * chains_ * (node.size / node.dim[0]) * sizeof(T);
  }
  const long fixed = (static_cast<long>(*lanes) * first.body_shared + chains_ + 1) * 8;
  const long rows = per_row > 0 ? (tile_shared_bytes - fixed) / per_row : 4096;
  if (rows < 32) return nullptr;
  so.tile_rows = std::min(rows, 4096L);
  so.row_data = true;
  return std::make_unique<ObservationStage<T>>(program_, e, chains_, so, host);
}

template <class T>
typename CudaExecutor<T>::TileStage CudaExecutor<T>::place_tile_stage(
    const ObservationStage<T>& stage, int lanes) {
  const size_t n = program_.nodes.size();
  TilePlacement<T> at(n);
  auto copy = [&](const auto& v) {
    using U = typename std::decay_t<decltype(v)>::value_type;
    U* d = allocate<U>(static_cast<long>(v.size()));
    check(cudaMemcpy(d, v.data(), v.size() * sizeof(U), cudaMemcpyHostToDevice),
          "copying a tile kernel's data to the device");
    return d;
  };
  for (size_t id = 0; id < n; ++id) {
    if (!stage.row_data(static_cast<int>(id)).empty())
      at.rows[id] = copy(stage.row_data(static_cast<int>(id)));
    if (!stage.row_index(static_cast<int>(id)).empty())
      at.index[id] = copy(stage.row_index(static_cast<int>(id)));
    at.value[id] = values_[id];
    at.adjoint[id] = adjoints_[id];
  }
  for (int id : stage.nodes())
    if (program_.nodes[id].op == Op::density) at.term[id] = values_[id];
  const TileLayout<T> layout = stage.tile_layout(at);
  TileStage ts;
  ts.args = stage.tile_kernel_args(layout, copy(layout.steps), copy(stage.tile_starts()));
  ts.launch = plan_tile_launch(ts.args, options_.gpu, lanes);
  ts.drawn_device = allocate<long>(ts.args.tiles);
  return ts;
}

template <class T> template <class F> void CudaExecutor<T>::timed(int id, bool backward, F&& f) {
  if (!profile_) {
    f();
    return;
  }
  if (forward_s_.empty()) {
    forward_s_.assign(program_.nodes.size(), 0.0);
    backward_s_.assign(program_.nodes.size(), 0.0);
  }
  check(cudaStreamSynchronize(stream_), "profiling");
  const auto t0 = std::chrono::steady_clock::now();
  f();
  check(cudaStreamSynchronize(stream_), "profiling");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (id < 0) {  // the tile kernel of stage -1 - id
    tile_s_.resize(tile_stages_.size(), 0.0);
    tile_s_[-1 - id] += seconds;
    return;
  }
  (backward ? backward_s_ : forward_s_)[id] += seconds;
}

template <class T> std::string CudaExecutor<T>::profile_report() const {
  if (!profile_ || profiled_calls_ == 0 || (forward_s_.empty() && tile_s_.empty())) return "";
  std::vector<int> ids;
  for (size_t id = 0; id < forward_s_.size(); ++id)
    if (forward_s_[id] + backward_s_[id] > 0) ids.push_back(static_cast<int>(id));
  std::sort(ids.begin(), ids.end(), [&](int a, int b) {
    return forward_s_[a] + backward_s_[a] > forward_s_[b] + backward_s_[b];
  });
  std::string out;
  char line[160];
  std::snprintf(line, sizeof line, "lockstep CUDA profile: %ld calls, %ld chains, %s; ms per call\n",
                profiled_calls_, chains_, sizeof(T) == 4 ? "single" : "double");
  out += line;
  std::snprintf(line, sizeof line, "%6s %-14s %12s %10s %10s\n", "node", "op", "size", "forward",
                "backward");
  out += line;
  for (size_t e = 0; e < tile_s_.size(); ++e) {
    // forward and backward of every row-aligned node, in one launch
    std::snprintf(line, sizeof line, "%6s %-14s %12ld %10.4f %10s\n", "stage", "tile kernel",
                  static_cast<long>(tile_stages_[e].args.rows),
                  1e3 * tile_s_[e] / profiled_calls_, "(fused)");
    out += line;
  }
  for (size_t k = 0; k < ids.size() && k < 20; ++k) {
    const int id = ids[k];
    const Node& n = program_.nodes[id];
    std::snprintf(line, sizeof line, "%6d %-14s %12ld %10.4f %10.4f\n", id, op_name(n.op), n.size,
                  1e3 * forward_s_[id] / profiled_calls_, 1e3 * backward_s_[id] / profiled_calls_);
    out += line;
  }
  return out;
}

template <class T> CudaExecutor<T>::~CudaExecutor() {
  // Errors are not reported from a destructor; a failed free leaves nothing to do.
  cudaSetDevice(options_.gpu);
  if (stream_) cudaStreamSynchronize(stream_);
  for (const Captured& g : graphs_held_) cudaGraphExecDestroy(g.graph);
  for (void* p : owned_) cudaFree(p);
  if (stream_) cudaStreamDestroy(stream_);
  cudaGetLastError();
}

template <class T>
NodeCall<T> CudaExecutor<T>::call(int id, const double* state, double* lp, double* grad) {
  const Node& node = program_.nodes[id];
  NodeCall<T> c;
  c.node = &kernel_nodes_[id];
  auto slot = [&](int k) { return whole_slot<T>(program_.nodes[k], values_[k], adjoints_[k]); };
  c.out = slot(id);
  for (size_t k = 0; k < node.inputs.size(); ++k) c.in[k] = slot(node.inputs[k]);
  c.index = index_[id];
  c.index_in_runs = index_in_runs_[id];
  c.chains = chains_;
  c.state = state;
  c.grad = grad;
  c.gradient = grad != nullptr;
  c.n_free = program_.n_free;
  c.lp = lp;
  c.scratch = scratch_;
  c.work = work_;
  c.jacobian = options_.jacobian && node.jacobian;
  return c;
}

template <class T> long CudaExecutor<T>::work(int id) const {
  const Node& node = program_.nodes[id];
  long most = node.size;
  for (int in : node.inputs) most = std::max(most, program_.nodes[in].size);
  return chains_ * most;
}

template <class T>
void CudaExecutor<T>::log_density_device(const double* state, double* lp, double* grad) {
  select_device(options_.gpu);
  // A minibatch's call is its own: its drawn tiles are copied from the host
  // and its weight is an argument of the tile kernel, which a replayed graph
  // would keep from the call it captured.
  if (!profile_ && graphs_ && !minibatch_.active() && replay(state, lp, grad)) return;
  enqueue(state, lp, grad);
}

template <class T> bool CudaExecutor<T>::replay(const double* state, double* lp, double* grad) {
  cudaGraphExec_t graph = nullptr;
  for (const Captured& g : graphs_held_)
    if (g.state == state && g.lp == lp && g.grad == grad) graph = g.graph;
  if (!graph) {
    cudaGraph_t captured = nullptr;
    check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), "capturing a CUDA graph");
    bool queued = true;
    try {
      enqueue(state, lp, grad);
    } catch (const std::exception&) {
      queued = false;
    }
    const cudaError_t ended = cudaStreamEndCapture(stream_, &captured);
    if (!(queued && ended == cudaSuccess && cudaGraphInstantiate(&graph, captured, 0) == cudaSuccess)) {
      graph = nullptr;
      graphs_ = false;  // plain launches from now on
    }
    if (captured) cudaGraphDestroy(captured);
    cudaGetLastError();  // a failed capture's error is not the caller's
    if (!graph) return false;
    if (graphs_held_.size() == 4) {
      check(cudaStreamSynchronize(stream_), "releasing a CUDA graph");
      cudaGraphExecDestroy(graphs_held_.front().graph);
      graphs_held_.erase(graphs_held_.begin());
    }
    graphs_held_.push_back(Captured{state, lp, grad, graph});
  }
  check(cudaGraphLaunch(graph, stream_), "launching the model's CUDA graph");
  return true;
}

template <class T> void CudaExecutor<T>::enqueue(const double* state, double* lp, double* grad) {
  const int n = static_cast<int>(program_.nodes.size());
  const long D = program_.n_free;
  check(cudaMemsetAsync(lp, 0, chains_ * sizeof(double), stream_), "clearing lp");
  for (int t : program_.terms)
    check(cudaMemsetAsync(values_[t], 0, chains_ * sizeof(T), stream_), "clearing a term");
  if (grad) {
    check(cudaMemsetAsync(grad, 0, chains_ * D * sizeof(double), stream_), "clearing grad");
    for (int id = 0; id < n; ++id)
      if (adjoints_[id])
        check(cudaMemsetAsync(adjoints_[id], 0, chains_ * program_.nodes[id].size * sizeof(T),
                              stream_),
              "clearing adjoints");
  }
  StreamLaunch launch{stream_, 1, multiprocessors_};
  profiled_calls_ += profile_;
  for (int id = 0; id < n; ++id)
    if (runs(id)) {
      launch.work = work(id);
      timed(id, false, [&] { forward_call(call(id, state, lp, grad), launch); });
    }
  for (size_t e = 0; e < tile_stages_.size(); ++e) {
    TileStage& ts = tile_stages_[e];
    ts.args.lp = lp;
    ts.args.gradient = grad != nullptr;
    ts.args.drawn = nullptr;
    ts.args.weight = 1;
    if (minibatch_.active()) {
      // (from pageable memory: the copy is staged before the call returns,
      // so the next call may redraw)
      ts.drawn = draw_tiles(minibatch_, ts.args.tiles, static_cast<int>(e));
      const std::vector<long>& tiles = ts.drawn.tiles;
      check(cudaMemcpyAsync(ts.drawn_device, tiles.data(), tiles.size() * sizeof(long),
                            cudaMemcpyHostToDevice, stream_),
            "copying a minibatch's tiles to the device");
      ts.args.drawn = ts.drawn_device;
      ts.args.n_drawn = static_cast<long>(tiles.size());
      ts.args.weight = ts.drawn.weight;
    }
    timed(-1 - static_cast<int>(e), false, [&] { launch_tile_kernel(ts.args, ts.launch, stream_); });
  }
  if (!grad) return;
  for (int id = n - 1; id >= 0; --id)
    if (runs(id)) {
      launch.work = work(id);
      timed(id, true, [&] { backward_call(call(id, state, nullptr, grad), launch); });
    }
}

template <class T> void CudaExecutor<T>::synchronize() {
  select_device(options_.gpu);
  check(cudaStreamSynchronize(stream_), "running the model's kernels");
}

template <class T>
void CudaExecutor<T>::log_density(const double* state, double* lp, double* grad) {
  log_density_via(*this, state, lp, grad, state_, lp_, grad_);
}

}  // namespace cuda
}  // namespace lockstep

#endif
