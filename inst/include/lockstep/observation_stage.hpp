// The observation stage of one extent (DESIGN.md, "Execution"): its rows split
// into tiles, tiles grouped into shards (one per virtual device), each shard's
// tiles shared out among workers. A worker runs a tile's forward and backward
// back to back while the tile is in cache, with its own buffers for the tile's
// values and adjoints, its own partial log density, and its own copy of the
// adjoints of the global values the tile reads (so a gather's backward is a
// private scatter-add). Workers' partials are summed within a shard, then
// across shards by the Communicator, then added to the global pass's buffers.
// No [chains, rows] buffer is ever allocated.
//
// Rows may be reordered when the stage is built (by the index of the largest
// gather, so that gathers and scatter-adds walk memory in order): the log
// density is a sum over rows, so only floating-point reassociation changes.
//
// With rows sorted by group, the boundaries between workers are moved to the
// start of a group, so that no group's rows are split between two workers.
// Then, in one process, the workers' scatter-adds into a global value's
// adjoint hit disjoint rows, and they add straight into the global adjoint
// (direct()): no private copy to zero and add up afterwards, which for a G x K
// coefficient matrix read by row is as large as the gradient itself. Shard
// boundaries are worker boundaries, so each shard owns its groups' rows and
// what crosses shards is the rest: the log density and the adjoints of values
// read by every row (DESIGN.md, "Ownership").
// Tiles therefore have varying lengths (a worker's rows split evenly into
// tiles of at most tile_rows()).
#ifndef LOCKSTEP_OBSERVATION_STAGE_HPP
#define LOCKSTEP_OBSERVATION_STAGE_HPP

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "communicator.hpp"
#include "ir.hpp"
#include "launcher.hpp"
#include "cpu_kernels.hpp"
#include "node_kernels.hpp"
#include "row_store.hpp"
#include "tile_kernel.hpp"
#include "thread_pool.hpp"

namespace lockstep {

// A minibatch of the observations (svi()'s batch_size): each observation
// stage evaluates a random `fraction` of its tiles, drawn afresh for each
// `draw` from the stream keyed by (key0, key1) and the `part` (an MPI rank
// or shard: each draws its own tiles), and scales what they add (the log
// density, the density terms' values, the adjoints of the global values
// they read) by its tiles over the tiles drawn. Each tile is drawn with the
// same probability, so the log density and its gradient are unbiased
// estimates of the whole data's; the global stage (priors, Jacobians) runs
// whole. Inactive (fraction 1): every tile, unscaled.
struct Minibatch {
  double fraction = 1;
  uint32_t key0 = 0, key1 = 0;
  uint64_t draw = 0;
  uint32_t part = 0;
  bool active() const { return fraction < 1; }
  // The same draw for another part (each shard or rank draws its own rows).
  Minibatch of_part(uint32_t p) const {
    Minibatch mine = *this;
    mine.part = p;
    return mine;
  }
};

// The tiles of a stage of `tiles` tiles (of extent `extent`) that `batch`
// draws, in order: fraction x tiles of them (rounded, at least one), a
// uniform draw without replacement from the stream of the batch's keys,
// part and draw (one purpose per extent); and the weight that makes their
// sums unbiased estimates of the whole stage's, tiles over tiles drawn.
struct DrawnTiles {
  std::vector<long> tiles;
  double weight = 1;
};
DrawnTiles draw_tiles(const Minibatch& batch, long tiles, int extent);

struct StageOptions {
  long tile_rows = 0;  // 0: sized so that one tile's buffers for all chains fit in L2
  long max_tile_rows = 0;  // with tile_rows 0: the most rows of a tile (0: no cap)
  int workers = 1;     // per shard
  int shards = 1;      // virtual devices
  bool reorder_rows = true;
  bool jacobian = true;  // log_jacobian terms count (ExecOptions::jacobian)
  // Run as the tile kernel (tile_kernel.hpp) on the emulated backend: one
  // shard and one worker, whatever workers and shards say.
  bool tile_kernel = false;
  // false: a stage made for its tile layout alone (CudaExecutor sizes its
  // tile kernel so), without the host copy of its row data, which it then
  // cannot run.
  bool row_data = true;
  // Where the stage takes the row data and indices that every stage of the
  // program holds alike (row_store.hpp), or nullptr: copies of its own.
  // Used only while the stage is made.
  RowStore* row_store = nullptr;
  // Tile adjoints that one later op alone writes are stored by it rather
  // than zeroed and added to (stored()), on the cpu backend; false only to
  // compare with (ExecOptions::first_writers).
  bool first_writers = true;
};

// Where the tile kernel finds what a stage reads and writes, per program
// node: the stage's own host copies and the executor's buffers
// (ObservationStage::host_placement()), or their copies on a GPU.
template <class T> struct TilePlacement {
  // Nowhere yet, for a program of n nodes.
  explicit TilePlacement(size_t n)
      : rows(n, nullptr), index(n, nullptr), value(n, nullptr), adjoint(n, nullptr),
        stride(n, -1), term(n, nullptr) {}
  std::vector<const T*> rows;      // row data, in tile order
  std::vector<const long*> index;  // gather indices, in tile order
  std::vector<const T*> value;     // the global values the stage reads
  std::vector<T*> adjoint;         // and their adjoints
  std::vector<long> stride;        // Slot::stride of those
  std::vector<T*> term;            // a density's value, [chains]

  bool operator==(const TilePlacement& o) const {
    return rows == o.rows && index == o.index && value == o.value && adjoint == o.adjoint &&
           stride == o.stride && term == o.term;
  }
};

// A stage as the tile kernel runs it: its steps (TileStep) and the sizes of
// a block's memory.
template <class T> struct TileLayout {
  std::vector<TileStep<T>> steps;
  long adjoint_offset = 0;  // TileKernelArgs::adjoint_offset
  int body_shared = 0;      // TileKernelArgs::body_shared
};

// The global pass's buffers, which the stage reads and whose adjoints it adds to.
// A parameter aliased to the state (ExecOptions::alias_parameters) has its
// value and adjoint at chain 0's slice of the state and the gradient, chain c
// `stride` further on; the stage then adds to its adjoint directly (the
// executor aliases only parameters the stage reads directly).
template <class T> struct GlobalBuffers {
  std::vector<std::vector<T>>* values;
  std::vector<std::vector<T>>* adjoints;
  const std::vector<long>* alias_stride = nullptr;  // per node: 0 when not aliased
  const std::vector<const T*>* alias_value = nullptr;
  const std::vector<T*>* alias_adjoint = nullptr;

  long stride(int k) const { return alias_stride ? (*alias_stride)[k] : 0; }
  const T* value(int k) const { return stride(k) ? (*alias_value)[k] : (*values)[k].data(); }
  T* adjoint(int k) const { return stride(k) ? (*alias_adjoint)[k] : (*adjoints)[k].data(); }
};

// The bytes the first executor of planned `program` in values of
// `value_bytes` (8: double, 4: single) allocates for its observation stages'
// row data and indices, at most (while it is made: the rows' order too),
// beyond the program's own arrays: nothing for arrays the program holds in
// the stages' order already, a copy for the others (shared by the
// program's later executors: row_store.hpp). What R's model() checks
// against the memory free before it plans a large model's runs.
long stage_row_bytes(const Program& program, long value_bytes);

template <class T> class ObservationStage {
 public:
  // `values` holds the full values of the extent's nodes that do not carry the
  // chain dimension (row data), which the stage copies into tile order; a
  // data node's may be empty, and the stage then reads the program's.
  ObservationStage(const Program& program, int extent, long chains, StageOptions options,
                   const std::vector<std::vector<T>>& values);

  // Adds the extent's log density to lp[chains] and each of its density
  // terms' values to the term's global value; with `gradient`, adds its
  // partials to the adjoints of the global values it reads.
  // `world`, when given, sums the process's partials across processes (MPI
  // ranks, each with its own rows) after `comm` has summed its shards.
  // `batch`, when active, draws the tiles the run evaluates (Minibatch):
  // every adjoint partial then goes through the workers' private copies
  // (none is direct), scaled as they are added.
  void run(GlobalBuffers<T> global, const double* state, double* lp, bool gradient,
           ThreadPool& pool, Communicator& comm, const Launcher& launch,
           Communicator* world = nullptr, const Minibatch* batch = nullptr);
  // The tiles a run with `batch` evaluates, in order: fraction x tiles() of
  // them (rounded, at least one), each tile as likely as any other.
  DrawnTiles draw_tiles(const Minibatch& batch) const {
    return lockstep::draw_tiles(batch, tiles(), extent_);
  }

  long tile_rows() const { return tile_rows_; }
  long rows() const { return rows_; }
  // The first row of each tile, in tile order.
  const std::vector<long>& tile_starts() const { return tile_start_; }
  // The tile kernel's steps with the stage's nodes placed `at`.
  TileLayout<T> tile_layout(const TilePlacement<T>& at) const;
  // The stage's own row data and indices, and the global buffers of one call.
  TilePlacement<T> host_placement(GlobalBuffers<T> global) const;
  // A launch's arguments for `layout`, its steps and this stage's tile
  // starts at `steps` and `tile_start` (host or device copies); lp and
  // gradient are the caller's, per call.
  TileKernelArgs<T> tile_kernel_args(const TileLayout<T>& layout, const TileStep<T>* steps,
                                     const long* tile_start) const;
  // Row data of the extent in tile order (empty for other nodes), and a
  // gather's index in tile order (empty for other nodes).
  const RowArray<T>& row_data(int id) const { return row_data_[id]; }
  const std::vector<long>& row_index(int id) const {
    return row_index_[id] ? *row_index_[id] : no_index_;
  }
  // The stage's nodes that carry the chain dimension, in program order, and
  // the global values they read.
  const std::vector<int>& nodes() const { return nodes_; }
  const std::vector<int>& boundary() const { return boundary_; }
  long tiles() const { return static_cast<long>(tile_start_.size()); }
  // Whether the workers add the adjoint partials of the global value `node`
  // (one the stage reads) straight into its global adjoint, in a run without
  // `world`: when no two workers' tiles, in any shard, touch the same row of
  // it (a value read by row gathers of the grouping the rows are sorted by,
  // whose groups each shard owns). Otherwise each worker has a private copy,
  // summed afterwards (all-reduced across shards).
  bool direct(int node) const { return direct_[node]; }
  // Whether a tile's adjoint of `node` (one of nodes()) is stored by its
  // only writer, a later elementwise op or density whose CPU path stores
  // (AdjointSink::store), rather than zeroed before each tile and added to:
  // a pass over the tile's buffers saved per node (13% of the samples of
  // seed 003's demand model's tiled gradient; 7-11% of its time, measured
  // by bench/demand_log_density.R). On the cpu backend with
  // StageOptions::first_writers; the emulated backend's lanes add.
  bool stored(int node) const { return stored_[node]; }
  // Whether the stage reads the global value `node`.
  bool reads(int node) const {
    return std::find(boundary_.begin(), boundary_.end(), node) != boundary_.end();
  }

 private:
  struct Worker {
    std::vector<std::vector<T>> values, adjoints;  // per program node: tile buffers
    std::vector<std::vector<T>> boundary;          // per program node: adjoints of global inputs
    // per boundary node: the rows [first, second) of it this worker's tiles
    // can touch (all rows unless every reader addresses it by row index)
    std::vector<std::pair<long, long>> touched;
    // per boundary node: where this run's tiles add its adjoint partials (the
    // private copy above, or the global adjoint when direct)
    std::vector<T*> sink;
    std::vector<std::vector<T>> terms;             // per density node: its value [chains]
    std::vector<double> lp, scratch;
  };

  // Worker w's tiles [first, end) of `order` (all tiles when null), the
  // adjoint partials of the global values to the global adjoint where
  // `direct_ok` and direct(), else to private copies, zeroed whole where
  // `whole` and by touched rows otherwise.
  void run_worker(Worker& w, const long* order, long first, long end, GlobalBuffers<T> global,
                  const double* state, bool gradient, const Launcher& launch, bool direct_ok,
                  bool whole);
  // Adds weight times a worker's private copy of boundary node id's adjoint
  // partials, rows `rows`, to the global adjoint.
  void add_partials(GlobalBuffers<T> global, int id, const T* buf, std::pair<long, long> rows,
                    double weight) const;
  // Node id's call on one tile, into c: a NodeCall the worker reuses from
  // node to node (making a fresh one, 440 bytes of defaults, and copying it
  // out was most of a small model's cost here). Sets every field a tile's
  // kernels read.
  void tile_call(Worker& w, int id, long tile, const GlobalBuffers<T>& global,
                 const double* state, bool gradient, bool stores, NodeCall<T>& c);
  // The tiles [first, second) of worker k (shard k / workers).
  std::pair<long, long> tile_range(long k) const { return worker_tiles_[k]; }
  long tile_length(long t) const {
    return (t + 1 < tiles() ? tile_start_[t + 1] : rows_) - tile_start_[t];
  }
  std::pair<long, long> touched_rows(int boundary, long first_tile, long end_tile) const;
  // Sets stored_ and stores_inputs_ (stored()).
  void find_stored();
  // Calls f(i) for the offset i of every element in rows [first, second), of
  // every column and chain, of a boundary node's [chains, rows x cols] buffer.
  template <class F> void over_rows(int id, std::pair<long, long> rows, F&& f) const;

  const Program& program_;
  std::vector<KernelNode> kernel_nodes_;  // per program node: what its calls point at
  int extent_;
  long rows_, chains_;
  StageOptions options_;
  std::vector<int> nodes_;        // chain-carrying nodes of the extent, in program order
  std::vector<int> boundary_;     // global chain nodes they read
  std::vector<long> tile_start_;  // first row of each tile (in tile order)
  std::vector<std::pair<long, long>> worker_tiles_;  // per worker: its tiles [first, second)
  long tile_rows_ = 0;            // the longest a tile may be
  std::vector<char> direct_;      // per program node: see direct()
  std::vector<char> stored_;      // per program node: see stored()
  // per program node: the inputs (bit k: input k) whose adjoints its call
  // stores (stored())
  std::vector<unsigned> stores_inputs_;
  // Row data and gather indices in tile order: tile t's block starts at
  // tile_start_[t] * cols (cols = 1 for a per-row index). Shared with the
  // program's other stages where they hold the same (row_store.hpp), or the
  // program's own arrays; null for other nodes.
  std::vector<RowArray<T>> row_data_;
  std::vector<bool> row_major_;  // row data stored row by row within each tile
  std::vector<std::shared_ptr<const std::vector<long>>> row_index_;
  std::vector<long> no_index_;
  std::vector<char> index_in_runs_;  // per node: index_in_runs(row_index_) (NodeCall's)
  std::vector<char> index_in_steps_;  // per node: index_in_steps(row_index_) (NodeCall's)
  // per gather node in runs or steps: its tiles' run starts (each tile's
  // list ending with its length: append_run_starts), tile t's from
  // run_offsets_[t] (NodeCall::index_runs)
  std::vector<std::vector<long>> run_starts_, run_offsets_;
  // per density node of row data: each tile's sum of its family's data_term
  // (NodeCall::data_term), or empty
  std::vector<std::vector<double>> data_terms_;
  std::vector<Worker> workers_;  // shards * workers
  // The tile kernel's layout on the emulated backend, made at the first run
  // and again only when the buffers it was placed at move.
  std::unique_ptr<TilePlacement<T>> placed_;
  TileLayout<T> layout_;
  // per shard: run()'s pointers to the partials it all-reduces (members, so
  // that a call allocates nothing)
  std::vector<double*> lps_;
  std::vector<T*> bufs_;
  DrawnTiles drawn_;  // run()'s tiles with a minibatch
};

extern template class ObservationStage<double>;
extern template class ObservationStage<float>;

}  // namespace lockstep

#endif
