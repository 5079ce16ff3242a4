// The tile kernel: an observation stage's forward and backward in one launch
// (DESIGN.md, "Execution"), its intermediates in block memory (shared memory
// on a GPU).
//
// Each block takes tiles of rows in turn (tile t goes to block t mod blocks;
// with a minibatch, the k-th tile drawn to block k mod blocks)
// and runs every node of the stage on its tile: forward in program order,
// then backward in reverse, each node's kernel body run by the block's lanes
// alone (BlockRun; a barrier after every phase). A tile's row-aligned values
// and adjoints live in the block's memory from the node that writes them to
// the nodes that read them, so that no [chains, rows] buffer is written to
// or read from global memory, and a gradient is one launch instead of about
// two per node. Row data and gather indices are read from global memory in
// tile order; the global values the stage reads (parameters, and what the
// global stage computed from them) are read whole, and the tile's partials
// are added to their adjoints, to the density terms' values and to the log
// density with lane_add (atomics on a GPU: the order of the additions, and
// hence the last bits, may change from run to run).
//
// Nodes are dispatched on the device by forward_call() and backward_call(),
// the dispatch every executor uses, from TileSteps: plain data saying where
// each input of each node is on a tile. ObservationStage::tile_layout() makes
// them; the emulated backend runs them here (run_tiles_emulated: every lane
// of every block in turn, phase by phase), the CUDA backend in
// backends/tile_kernel.cuh with the code of LinearTileKernels' ops and
// families only: one kernel holding every op's and family's code took ptxas
// over 15 GB (sm_90, double) and was killed.
//
// Block memory, in doubles: the bodies' block-shared scratch (lanes x
// body_shared), the per-chain sums of a density (chains), then the tile area
// of T: every tile node's value ([chains, rows x cols] for the tile's rows,
// at its offset) and then, adjoint_offset further on, its adjoint.
#ifndef LOCKSTEP_TILE_KERNEL_HPP
#define LOCKSTEP_TILE_KERNEL_HPP

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "lanes.hpp"
#include "node_kernels.hpp"

namespace lockstep {

// Where one input (or the output) of a tile's node is.
enum class TileSource : int {
  tile,    // a row-aligned value with the chain dimension: in the tile area
  rows,    // row data: the tile's rows of `value` (every tile's, in tile order)
  global,  // a global value, whole, at `value` (and its adjoint at `adjoint`)
};

template <class T> struct TileBinding {
  TileSource source = TileSource::global;
  long cols = 1;
  long offset = 0;         // tile: where its value starts in the tile area
  bool row_major = false;  // rows: each tile's block stored row by row
  const T* value = nullptr;
  T* adjoint = nullptr;  // global: nullptr when the value has no adjoint
  long rows = 1;         // global: its rows
  bool chain = false;    // global
  long stride = -1;      // global: Slot::stride
};

// One node of the stage.
template <class T> struct TileStep {
  KernelNode node;
  TileBinding<T> out;  // a density's: its term's global value, [chains]
  TileBinding<T> in[max_node_inputs];
  const long* index = nullptr;  // every tile's, in tile order
  long index_cols = 1;          // entries per row
  bool index_in_runs = false;
};

// What one launch needs: plain data, a kernel argument on a GPU.
template <class T> struct TileKernelArgs {
  const TileStep<T>* steps = nullptr;
  int n_steps = 0;
  const long* tile_start = nullptr;  // [tiles]
  long tiles = 0, rows = 0, chains = 1;
  long adjoint_offset = 0;  // T's of the tile area before the adjoints
  int body_shared = 0;      // doubles of block-shared scratch per lane
  long n_free = 0;
  double* lp = nullptr;  // [chains], added to
  bool gradient = false;
  bool jacobian = true;
  // A minibatch (observation_stage.hpp's Minibatch): the launch runs the
  // tiles drawn[0, n_drawn) only, and its densities multiply their values
  // and partials by weight (tiles over tiles drawn). nullptr: every tile.
  const long* drawn = nullptr;
  long n_drawn = 0;
  double weight = 1;

  // How many tiles the launch runs, and the k-th of them.
  LS_HD long runs() const { return drawn ? n_drawn : tiles; }
  LS_HD long tile(long k) const { return drawn ? drawn[k] : k; }
};

// Doubles of block memory for a block of `lanes` lanes.
template <class T> long tile_block_doubles(const TileKernelArgs<T>& a, int lanes) {
  const long area = 2 * a.adjoint_offset * static_cast<long>(sizeof(T));
  return static_cast<long>(lanes) * a.body_shared + a.chains +
         (area + static_cast<long>(sizeof(double)) - 1) / static_cast<long>(sizeof(double));
}

// A body that zeroes n values (the tile's adjoints).
template <class T> struct ZeroSpan {
  T* data;
  long n;
  int phases = 1;
  int shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    for (long i = lane.index; i < n; i += lane.count) data[i] = T(0);
  }
};

template <class T>
LS_HD void bind_tile_slot(Slot<T>& s, const TileBinding<T>& b, T* area, long adjoint_offset,
                          long start, long rows, bool gradient) {
  s.row_major = false;
  s.stride = -1;
  s.cols = b.cols;
  switch (b.source) {
    case TileSource::tile:
      s.value = area + b.offset;
      s.adjoint = gradient ? area + adjoint_offset + b.offset : nullptr;
      s.rows = rows;
      s.chain = true;
      break;
    case TileSource::rows:
      s.value = b.value + start * b.cols;
      s.adjoint = nullptr;
      s.rows = rows;
      s.chain = false;
      s.row_major = b.row_major;
      break;
    case TileSource::global:
      s.value = b.value;
      s.adjoint = gradient ? b.adjoint : nullptr;
      s.rows = b.rows;
      s.chain = b.chain;
      s.stride = b.stride;
      break;
  }
}

// Step k's call on the tile [start, start + rows).
template <class T>
LS_HD void tile_step_call(NodeCall<T>& c, const TileKernelArgs<T>& a, const TileStep<T>& step,
                          long start, long rows, T* area, double* scratch) {
  c.node = &step.node;
  bind_tile_slot(c.out, step.out, area, a.adjoint_offset, start, rows, a.gradient);
  for (int k = 0; k < step.node.n_inputs; ++k)
    bind_tile_slot(c.in[k], step.in[k], area, a.adjoint_offset, start, rows, a.gradient);
  c.index = step.index ? step.index + start * step.index_cols : nullptr;
  c.index_in_runs = step.index_in_runs;
  c.chains = a.chains;
  c.state = nullptr;
  c.grad = nullptr;
  c.gradient = a.gradient;
  c.first_writer = false;
  c.n_free = a.n_free;
  c.lp = a.lp;
  c.scratch = scratch;
  c.work = nullptr;
  c.jacobian = a.jacobian;
  c.weight = a.weight;
}

// A node that is not of an op family an observation stage can hold: the
// planner never puts one there, and the kernel holds no code for it.
LS_HD void tile_op_missing() {
#if defined(__CUDA_ARCH__)
  __trap();
#else
  throw std::logic_error("lockstep: the tile kernel was given a node that is not row-aligned");
#endif
}

// Tile t, forward and backward, on one block: every lane of the block calls
// it (a GPU) or `run` runs each body on every lane (the emulated backend).
// block_memory: tile_block_doubles() doubles. Kernels: the op families and
// distribution families it holds code for (node_kernels.hpp; the steps must
// be among them: tile_kernel_holds()).
LS_HD_DISPATCH template <class Kernels = AllKernels, class T, class Run>
LS_HD void run_tile(const TileKernelArgs<T>& a, long t, double* block_memory, int lanes,
                    const Run& run) {
  const long start = a.tile_start[t];
  const long rows = (t + 1 < a.tiles ? a.tile_start[t + 1] : a.rows) - start;
  double* scratch = block_memory + static_cast<long>(lanes) * a.body_shared;
  T* area = reinterpret_cast<T*>(scratch + a.chains);
  // A density adds its partials to its target's adjoint as it goes forward.
  if (a.gradient) run(ZeroSpan<T>{area + a.adjoint_offset, a.adjoint_offset});
  NodeCall<T> c;
  for (int k = 0; k < a.n_steps; ++k) {
    tile_step_call(c, a, a.steps[k], start, rows, area, scratch);
    if (!forward_row_call<Kernels>(c, run)) tile_op_missing();
  }
  if (!a.gradient) return;
  for (int k = a.n_steps - 1; k >= 0; --k) {
    tile_step_call(c, a, a.steps[k], start, rows, area, scratch);
    if (!backward_row_call<Kernels>(c, run)) tile_op_missing();
  }
}

// The emulated backend's block: each phase of a body on every lane in turn,
// the block's lanes alone (lane.count is the block's lanes).
struct EmulatedBlockRun {
  int lanes;
  double* shared;
  template <class Body> void operator()(const Body& body) const {
    for (int p = 0; p < body.phases; ++p)
      for (int t = 0; t < lanes; ++t) run_phase(body, p, Lane{t, lanes, t, lanes, shared});
  }
};

// The whole launch on the CPU, block after block, with g's blocks and lanes.
template <class Kernels = AllKernels, class T>
void run_tiles_emulated(const TileKernelArgs<T>& a, EmulatedGeometry g) {
  std::vector<double> memory(static_cast<size_t>(tile_block_doubles(a, g.lanes_per_block)));
  for (int b = 0; b < g.blocks; ++b) {
    // a GPU's shared memory starts with whatever was there: so does this
    std::fill(memory.begin(), memory.end(), 1e300);
    const EmulatedBlockRun run{g.lanes_per_block, memory.data()};
    for (long k = b; k < a.runs(); k += g.blocks)
      run_tile<Kernels>(a, a.tile(k), memory.data(), g.lanes_per_block, run);
  }
}

// The GPU's tile kernel (backends/tile_kernel.cuh): the stages of linear and
// generalised linear models, hierarchical ones included: linear predictors
// (row dot products with group coefficients, X %*% beta, gathers of group
// effects, row sums) under the common likelihoods. A stage with other ops
// (elementwise ones, logpdf) or families runs op by op on the GPU. Every
// body is inlined into one kernel, so each family here costs ptxas time and
// memory (the binary ops took it from 1 GB to 11.9 GB: bench/RESULTS.md,
// "Why code is as it is"); wider coverage wants a kernel per model's own
// steps (NVRTC), not a wider set.
struct LinearTileKernels {
  static constexpr bool op_family(OpFamily f) {
    return f == OpFamily::rowdot_rows || f == OpFamily::matmul || f == OpFamily::gather ||
           f == OpFamily::gather_rows || f == OpFamily::rowsum || f == OpFamily::density;
  }
  // (the tile column of distributions.def)
  static constexpr bool family(Family f) { return family_in_gpu_tile_kernel(f); }
};

// Whether a tile kernel holding Kernels' code can run every step.
template <class Kernels, class T> bool tile_kernel_holds(const std::vector<TileStep<T>>& steps) {
  for (const TileStep<T>& s : steps) {
    if (!Kernels::op_family(op_family(s.node.op))) return false;
    if (s.node.op == Op::density && !Kernels::family(s.node.family)) return false;
  }
  return true;
}

}  // namespace lockstep

#endif
