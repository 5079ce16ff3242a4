// The observation stage of one extent (observation_stage.hpp).
#include "lockstep/observation_stage.hpp"

#include "lockstep/rng.hpp"
#include "lockstep/row_order.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace lockstep {

namespace {

// About the L2 cache of one core: a tile's values and adjoints for all chains
// should stay there between its forward and backward.
constexpr long tile_bytes = 1L << 20;

// The minibatches' stream purpose (one per extent from here; the samplers'
// and svi's are below it: sampler.hpp, svi.cpp).
constexpr uint32_t purpose_minibatch = 256;

long cols_of(const Node& n) { return n.size / n.dim[0]; }

// Whether input k of the tiled node n, a global value b, is addressed by row
// index (row gathers, row dot products, gathers from a column vector): one
// entry of the node's index per tile row names the only row of b that the row
// reads, and whose adjoint its backward adds to.
bool reads_by_row(const Node& n, size_t k, const Node& b) {
  const bool rowdot_groups =
      n.op == Op::rowdot_rows && (k == 1 || static_cast<int>(k) == rowdot_parts(n).q);
  return (n.op == Op::gather_rows && k == 0) || rowdot_groups ||
         (n.op == Op::gather && b.size == b.dim[0] && n.size == n.dim[0]);
}

// Copies a column-major [rows, cols] array into tile order: tile t's rows, in
// the order given by perm (nullptr: their own), as a column-major block
// starting at start[t] * cols. With row_major, each tile's block is stored
// row by row instead.
template <class In, class Out>
std::vector<Out> to_tile_order(const In* x, long rows, long cols, const long* perm,
                               const std::vector<long>& start, bool row_major = false) {
  std::vector<Out> out(static_cast<size_t>(rows * cols));
  for (size_t t = 0; t < start.size(); ++t) {
    const long r0 = start[t], r1 = t + 1 < start.size() ? start[t + 1] : rows, n = r1 - r0;
    Out* block = out.data() + r0 * cols;
    for (long j = 0; j < cols; ++j)
      for (long r = 0; r < n; ++r)
        block[row_major ? r * cols + j : r + j * n] =
            static_cast<Out>(x[(perm ? perm[r0 + r] : r0 + r) + j * rows]);
  }
  return out;
}

// Whether gather-like node n of `extent` has one index entry a row in an
// order that is the rows' alone (row gathers, row dot products, gathers of
// one column from a global value): every stage of the program holds the
// same array (row_store.hpp), the program's own when the rows are in order.
bool per_row_index(const Program& p, const Node& n, int extent) {
  return n.op == Op::gather_rows || n.op == Op::rowdot_rows ||
         (n.op == Op::gather && cols_of(n) == 1 && p.nodes[n.inputs[0]].extent != extent);
}

// A data node's values as a stage's row data, where they are that already
// (double, and the rows in order): the program's own array (which may be
// the user's, borrowed). Else none.
template <class T> RowArray<T> program_values(const Node& n) {
  if constexpr (std::is_same<T, double>::value) return RowArray<T>::of(n.values.data(), n.values.size());
  else return RowArray<T>();
}

}  // namespace

DrawnTiles draw_tiles(const Minibatch& batch, long tiles, int extent) {
  const long b = std::max(1L, std::min(tiles, std::lround(batch.fraction * static_cast<double>(tiles))));
  // b steps of a Fisher-Yates shuffle: a uniform draw of b tiles without
  // replacement, from the draw's own positions of the part's stream (one
  // purpose per extent)
  DrawnTiles drawn;
  std::vector<long>& order = drawn.tiles;
  order.resize(tiles);
  std::iota(order.begin(), order.end(), 0L);
  Stream stream{batch.key0, batch.key1, batch.part, purpose_minibatch + static_cast<uint32_t>(extent),
                batch.draw * static_cast<uint64_t>(tiles)};
  for (long j = 0; j < b; ++j) {
    const long r = j + std::min(tiles - j - 1, static_cast<long>(stream.uniform() * (tiles - j)));
    std::swap(order[j], order[r]);
  }
  order.resize(b);
  std::sort(order.begin(), order.end());
  drawn.weight = static_cast<double>(tiles) / static_cast<double>(b);
  return drawn;
}

long stage_row_bytes(const Program& program, long value_bytes) {
  long bytes = 0;
  for (size_t e = 0; e < program.extents.size(); ++e) {
    const int extent = static_cast<int>(e);
    const bool in_order = rows_in_order(program, extent);
    if (!in_order) bytes += program.extents[e] * static_cast<long>(sizeof(long));
    for (const Node& n : program.nodes) {
      if (n.extent != extent) continue;
      if (!n.chain) {
        // (as the stage's constructor: the program's array where it is one)
        const bool own = n.op == Op::data && in_order && cols_of(n) == 1 && value_bytes == 8;
        if (!own) bytes += n.size * value_bytes;
      } else if (n.op == Op::gather || n.op == Op::gather_rows || n.op == Op::rowdot_rows) {
        const bool own = in_order && per_row_index(program, n, extent);
        if (!own) bytes += static_cast<long>(n.index.size() * sizeof(long));
      }
    }
  }
  return bytes;
}

template <class T>
ObservationStage<T>::ObservationStage(const Program& program, int extent, long chains,
                                      StageOptions options,
                                      const std::vector<std::vector<T>>& values)
    : program_(program),
      extent_(extent),
      rows_(program.extents[extent]),
      chains_(chains),
      options_(options) {
  if (options_.tile_kernel) options_.workers = options_.shards = 1;
  options = options_;
  const size_t n_nodes = program.nodes.size();
  kernel_nodes_ = kernel_nodes(program);
  std::set<int> boundary;
  long bytes_per_row = 0;
  for (size_t id = 0; id < n_nodes; ++id) {
    const Node& n = program.nodes[id];
    if (n.extent != extent) continue;
    if (n.chain) {
      nodes_.push_back(static_cast<int>(id));
      if (n.op != Op::density) bytes_per_row += 2 * chains * cols_of(n) * sizeof(T);
      for (int in : n.inputs)
        if (program.nodes[in].extent < 0 && program.nodes[in].chain) boundary.insert(in);
    } else {
      bytes_per_row += cols_of(n) * sizeof(T);
    }
  }
  boundary_.assign(boundary.begin(), boundary.end());

  // Row data read only as the covariates (input 0) of row dot products is
  // stored row by row: the CPU's dot product of a row with the group's
  // coefficients, and the backward's sums over a run of rows, then read
  // contiguous values (kernels/rowdot.hpp).
  row_major_.assign(n_nodes, false);
  for (int id : nodes_) {
    const Node& n = program.nodes[id];
    if (n.op != Op::rowdot_rows) continue;
    const Node& a = program.nodes[n.inputs[0]];
    if (!a.chain && a.extent == extent) row_major_[n.inputs[0]] = true;
  }
  for (int id : nodes_) {
    const Node& n = program.nodes[id];
    for (size_t k = 0; k < n.inputs.size(); ++k)
      if (!(n.op == Op::rowdot_rows && k == 0)) row_major_[n.inputs[k]] = false;
  }

  // Row order: by the index of the gather from the largest global value,
  // made only when the rows are not in it already and some array must be
  // copied in it (a 64-bit entry a row).
  const bool in_order = !options.reorder_rows || rows_in_order(program, extent);
  std::vector<long> perm_made;
  auto perm = [&]() -> const long* {
    if (in_order) return nullptr;
    if (perm_made.empty()) perm_made = row_order(program, extent);
    return perm_made.data();
  };

  // The arrays that are the same in every stage of the program (one column,
  // or stored row by row, and the per-row indices of gathers from global
  // values: their tile order is the rows' order alone): the program's own
  // where the rows are in order, else from the row store.
  row_data_.resize(n_nodes);
  row_index_.resize(n_nodes);
  RowStore* store = options.row_store && options.row_store->holds(program) ? options.row_store : nullptr;
  const std::vector<long> whole = {0};  // one block: the rows' order alone
  // Node id's row data in tile order for tiles starting at `starts`, from
  // the executor's values or, where it left them to the program, the
  // program's data.
  auto copy_rows = [&](int id, const std::vector<long>& starts) {
    const Node& n = program.nodes[id];
    const bool own = values[id].empty();
    if (own && n.op != Op::data)
      throw std::logic_error("lockstep: row data of node " + std::to_string(id) + " was not computed");
    return std::make_shared<const std::vector<T>>(
        own ? to_tile_order<double, T>(n.values.data(), rows_, cols_of(n), perm(), starts, row_major_[id])
            : to_tile_order<T, T>(values[id].data(), rows_, cols_of(n), perm(), starts, row_major_[id]));
  };
  auto shared = [&](int id, auto make) {
    using V = typename decltype(make())::element_type::value_type;
    return store ? store->get<V>(id, options.reorder_rows, make) : make();
  };
  for (size_t i = 0; i < n_nodes; ++i) {
    const int id = static_cast<int>(i);
    const Node& n = program.nodes[id];
    if (n.extent != extent) continue;
    const long cols = cols_of(n);
    if (!n.chain) {
      if (!options.row_data || !(cols == 1 || row_major_[id])) continue;
      // (a data node the executor left to the program, in order: its array)
      if (values[id].empty() && in_order && cols == 1)
        if ((row_data_[id] = program_values<T>(n))) continue;
      row_data_[id] = shared(id, [&] { return copy_rows(id, whole); });
    } else if (per_row_index(program, n, extent)) {
      if (in_order) {
        row_index_[id] = unowned(n.index);
        continue;
      }
      row_index_[id] = shared(id, [&] {
        return std::make_shared<const std::vector<long>>(
            to_tile_order<long, long>(n.index.data(), rows_, 1, perm(), whole));
      });
    }
  }

  // Tiles: as many rows as fit the cache budget, and at least one tile for
  // every worker of every shard when there are rows enough.
  const long contexts = static_cast<long>(options.shards) * options.workers;
  tile_rows_ = options.tile_rows > 0 ? options.tile_rows
                                     : std::max(16L, tile_bytes / std::max(1L, bytes_per_row));
  if (options.tile_rows <= 0) tile_rows_ = std::min(tile_rows_, (rows_ + contexts - 1) / contexts);
  if (options.tile_rows <= 0 && options.max_tile_rows > 0)
    tile_rows_ = std::min(tile_rows_, options.max_tile_rows);
  tile_rows_ = std::max(1L, std::min(tile_rows_, rows_));

  // Workers' rows: bound[k] is worker k's first row. Nominally whole tiles of
  // tile_rows_, shared out evenly among shards, then among each shard's
  // workers.
  const long S = options.shards, W = options.workers;
  const long uniform = (rows_ + tile_rows_ - 1) / tile_rows_;
  std::vector<long> bound(contexts + 1);
  for (long k = 0; k <= contexts; ++k) {
    const long s = k / W, w = k % W, a = uniform * s / S, b = uniform * (s + 1) / S;
    bound[k] = std::min(rows_, (a + (b - a) * w / W) * tile_rows_);
  }
  // Then each boundary moved to the nearest row where every sorted by-row
  // index of a global value read only by row changes value (the first row of
  // a group), at most a tile's rows away: a group's rows then belong to one
  // worker, and so do the rows of the global value they scatter-add to, which
  // the workers can then add to the global adjoint directly (direct_ below).
  // Where no such row is near (a group longer than a tile, or indices that
  // disagree), the boundary stays, and so do the private copies.
  std::vector<const long*> keys;
  for (int b : boundary_) {
    std::vector<int> readers;
    bool by_row = true;
    for (int id : nodes_) {
      const Node& n = program.nodes[id];
      for (size_t k = 0; k < n.inputs.size(); ++k)
        if (n.inputs[k] == b) {
          by_row = by_row && reads_by_row(n, k, program.nodes[b]);
          readers.push_back(id);
        }
    }
    if (!by_row) continue;
    // (each such reader's index is one a row, from a global value: shared above)
    for (int id : readers) {
      const long* key = row_index_[id]->data();
      bool known = false;
      for (const long* k : keys) known = known || std::equal(k, k + rows_, key);
      if (std::is_sorted(key, key + rows_) && !known) keys.push_back(key);
    }
  }
  auto starts_group = [&](long r) {
    if (r <= 0 || r >= rows_) return true;
    for (const long* key : keys)
      if (key[r - 1] == key[r]) return false;
    return true;
  };
  if (!keys.empty())
    for (long k = 1; k < contexts; ++k) {
      const long nominal = std::max(bound[k], bound[k - 1]);  // bound[k - 1] may have moved
      bound[k] = nominal;
      for (long d = 0; d < tile_rows_; ++d) {
        if (nominal - d >= bound[k - 1] && starts_group(nominal - d)) {
          bound[k] = nominal - d;
          break;
        }
        if (nominal + d <= rows_ && starts_group(nominal + d)) {
          bound[k] = nominal + d;
          break;
        }
      }
    }
  // Tiles: each worker's rows split evenly into tiles of at most tile_rows_.
  worker_tiles_.resize(contexts);
  for (long k = 0; k < contexts; ++k) {
    const long r0 = bound[k], n = std::max(0L, bound[k + 1] - r0);
    const long count = (n + tile_rows_ - 1) / tile_rows_;
    worker_tiles_[k].first = tiles();
    for (long t = 0; t < count; ++t) tile_start_.push_back(r0 + n * t / count);
    worker_tiles_[k].second = tiles();
  }
  long longest = 0;
  for (long t = 0; t < tiles(); ++t) longest = std::max(longest, tile_length(t));

  // The arrays whose tile order depends on the tiles (row data of several
  // columns, stored column by column in each tile, and gathers' indices of
  // several entries a row or within rows of this extent): the stage's own.
  for (size_t i = 0; i < n_nodes; ++i) {
    const int id = static_cast<int>(i);
    const Node& n = program.nodes[id];
    if (n.extent != extent) continue;
    const long cols = cols_of(n);
    if (!n.chain) {
      if (options.row_data && !row_data_[id]) row_data_[id] = copy_rows(id, tile_start_);
    } else if (n.op == Op::gather && !row_index_[id]) {
      std::vector<long> index = to_tile_order<long, long>(n.index.data(), rows_, cols, perm(), tile_start_);
      if (program.nodes[n.inputs[0]].extent == extent) {
        // A selection within rows of a row-aligned input, which exists as a
        // tile: input row r, column j is at r + j * (the tile's rows).
        for (long t = 0; t < tiles(); ++t) {
          const long r0 = tile_start_[t], rows = tile_length(t);
          long* block = index.data() + r0 * cols;
          for (long k = 0; k < rows * cols; ++k) block[k] = k % rows + block[k] / rows_ * rows;
        }
      }
      row_index_[id] = std::make_shared<const std::vector<long>>(std::move(index));
    }
  }
  // (the CPU's gathers read a run of equal or consecutive entries at a time)
  index_in_runs_.assign(n_nodes, 0);
  index_in_steps_.assign(n_nodes, 0);
  run_starts_.assign(n_nodes, {});
  run_offsets_.assign(n_nodes, {});
  for (size_t id = 0; id < n_nodes; ++id) {
    index_in_runs_[id] = index_in_runs(row_index(id));
    index_in_steps_[id] = index_in_steps(row_index(id));
    const Op op = program.nodes[id].op;
    if (!(index_in_runs_[id] || index_in_steps_[id]) || !(op == Op::gather || op == Op::gather_rows))
      continue;
    // each tile's runs, found once (NodeCall::index_runs): a gather's index
    // has cols entries a row, a row gather's one
    const long per_row = op == Op::gather ? cols_of(program.nodes[id]) : 1;
    for (long t = 0; t < tiles(); ++t) {
      run_offsets_[id].push_back(static_cast<long>(run_starts_[id].size()));
      append_run_starts(row_index(id).data() + tile_start_[t] * per_row, tile_length(t) * per_row,
                        index_in_steps_[id], run_starts_[id]);
    }
    run_offsets_[id].push_back(static_cast<long>(run_starts_[id].size()));
  }
  // A density of row data whose family splits off a data_term (dist.hpp): its
  // sum over each tile, once (the workers' terms add it to every chain).
  data_terms_.resize(n_nodes);
  for (int id : nodes_) {
    const Node& n = program.nodes[id];
    if (n.op != Op::density || n.inputs.empty()) continue;
    const int x = n.inputs[0];
    if (row_data(x).empty()) continue;
    std::vector<double> sums(tiles());
    bool splits = true;
    for (long t = 0; t < tiles() && splits; ++t)
      splits = sum_data_term(n.family, row_data(x).data() + tile_start_[t] * cols_of(program.nodes[x]),
                             tile_length(t) * cols_of(program.nodes[x]), &sums[t]);
    if (splits) data_terms_[id] = std::move(sums);
  }

  find_stored();

  lps_.resize(options.shards);
  bufs_.resize(options.shards);
  workers_.resize(contexts);
  for (long k = 0; k < contexts; ++k) {
    Worker& w = workers_[k];
    w.touched.resize(n_nodes);
    const auto tiles = tile_range(k);
    for (int id : boundary_) w.touched[id] = touched_rows(id, tiles.first, tiles.second);
  }
  // Direct accumulation into the global adjoints: race-free when the workers
  // of every shard touch pairwise disjoint rows, as they do when the node is
  // local to the grouping the rows are sorted by (ownership.hpp): each shard
  // then owns its groups' rows of the adjoint, and nothing of it crosses
  // shards (only a run across processes reduces such a node whole).
  direct_.assign(n_nodes, 0);
  for (int id : boundary_) {
    std::vector<std::pair<long, long>> spans;
    for (const Worker& w : workers_)
      if (w.touched[id].first < w.touched[id].second) spans.push_back(w.touched[id]);
    std::sort(spans.begin(), spans.end());
    bool disjoint = true;
    for (size_t i = 1; i < spans.size(); ++i)
      disjoint = disjoint && spans[i - 1].second <= spans[i].first;
    direct_[id] = disjoint;
  }
  for (long k = 0; k < contexts; ++k) {
    Worker& w = workers_[k];
    w.values.resize(n_nodes);
    w.adjoints.resize(n_nodes);
    w.boundary.resize(n_nodes);
    w.sink.assign(n_nodes, nullptr);
    for (int id : nodes_) {
      const Node& n = program.nodes[id];
      if (n.op == Op::density) continue;
      w.values[id].assign(chains * longest * cols_of(n), T(0));
      w.adjoints[id].assign(chains * longest * cols_of(n), T(0));
    }
    // (a run across processes allocates the direct ones' when it needs them)
    for (int id : boundary_)
      if (!direct_[id]) w.boundary[id].assign(chains * program.nodes[id].size, T(0));
    w.terms.resize(n_nodes);
    for (int id : nodes_)
      if (program.nodes[id].op == Op::density) w.terms[id].assign(chains, T(0));
    w.lp.assign(chains, 0.0);
    w.scratch.assign(chains, 0.0);
  }
}

// Rows of a boundary node that tiles [first, end) can touch: when every tiled
// reader addresses it by row index (row gathers, row dot products, gathers
// from a column vector), the span of those indices over the tiles, which with
// rows sorted by group is a narrow band; otherwise every row. No tiles touch
// nothing.
template <class T>
std::pair<long, long> ObservationStage<T>::touched_rows(int b, long first, long end) const {
  const Node& bn = program_.nodes[b];
  const long all = bn.dim[0];
  if (first >= end) return {0, 0};
  long lo = all, hi = 0;
  for (int id : nodes_) {
    const Node& n = program_.nodes[id];
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      if (n.inputs[k] != b) continue;
      if (!reads_by_row(n, k, bn)) return {0, all};
      const long r0 = first < tiles() ? tile_start_[first] : rows_;
      const long r1 = end < tiles() ? tile_start_[end] : rows_;
      const long* index = row_index(id).data();
      for (long r = r0; r < r1; ++r) {
        lo = std::min(lo, index[r]);
        hi = std::max(hi, index[r] + 1);
      }
    }
  }
  return lo < hi ? std::make_pair(lo, hi) : std::make_pair(0L, 0L);
}

// A tile adjoint is stored by its writer when exactly one input of one node
// of the whole program reads it, that reader is a node of the stage whose
// CPU path stores what it writes there (AdjointSink::store), and the two
// have the same elements, so that the writer writes every element of it:
// - an elementwise op (unary, binary) whose operands are each the output's
//   shape or one value (no broadcast along an axis);
// - a density term of the extent's rows, for its target (dx_store) or its
//   first parameter, of the target's shape (the chunked loop's lean path);
//   not a Jacobian's, which does not run without the Jacobian.
// In reverse program order the writer's backward (or a density's forward)
// comes before anything reads the adjoint.
template <class T> void ObservationStage<T>::find_stored() {
  const size_t n_nodes = program_.nodes.size();
  stored_.assign(n_nodes, 0);
  stores_inputs_.assign(n_nodes, 0u);
  if (!options_.first_writers) return;
  std::vector<int> readers(n_nodes, 0);
  for (const Node& n : program_.nodes)
    for (int in : n.inputs) ++readers[in];
  auto tiled = [&](int k) {
    const Node& n = program_.nodes[k];
    return n.extent == extent_;
  };
  for (int w : nodes_) {
    const Node& n = program_.nodes[w];
    const OpFamily family = op_family(n.op);
    for (size_t j = 0; j < n.inputs.size(); ++j) {
      const int k = n.inputs[j];
      const Node& in = program_.nodes[k];
      if (!tiled(k) || !in.chain || in.op == Op::density || readers[k] != 1) continue;
      bool stores = false;
      if (family == OpFamily::unary || family == OpFamily::binary) {
        stores = cols_of(in) == cols_of(n);
        for (int o : n.inputs)
          stores = stores && ((tiled(o) && cols_of(program_.nodes[o]) == cols_of(n)) ||
                              program_.nodes[o].size == 1);
      } else if (n.op == Op::density && n.family != Family::log_jacobian && j <= 1) {
        const int target = n.inputs[0];
        stores = tiled(target) && cols_of(in) == cols_of(program_.nodes[target]);
      }
      if (!stores) continue;
      stored_[k] = 1;
      stores_inputs_[w] |= 1u << j;
    }
  }
}

template <class T>
template <class F>
void ObservationStage<T>::over_rows(int id, std::pair<long, long> rows, F&& f) const {
  const Node& n = program_.nodes[id];
  const long R = n.dim[0], cols = n.size / R;
  for (long c = 0; c < chains_; ++c)
    for (long j = 0; j < cols; ++j)
      for (long r = rows.first; r < rows.second; ++r) f(c * n.size + r + j * R);
}

template <class T>
void ObservationStage<T>::tile_call(Worker& w, int id, long tile, const GlobalBuffers<T>& global,
                                    const double* state, bool gradient, bool stores,
                                    NodeCall<T>& c) {
  const long start = tile_start_[tile], rows = tile_length(tile);
  // Written field by field into the call's own slot: a Slot returned by
  // value was read back from the stack before its stores had landed, a
  // store-forwarding stall per slot that perf put at a third of this function.
  auto set_slot = [&](Slot<T>& s, int k) {
    const Node& n = program_.nodes[k];
    if (n.extent != extent_) {  // a global value, whole
      set_whole_slot(s, n, global.value(k), gradient && n.chain ? w.sink[k] : nullptr);
      if (global.stride(k)) s.stride = global.stride(k);
      return;
    }
    s.row_major = false;
    s.stride = -1;
    s.fresh = false;
    s.cols = cols_of(n);
    s.chain = n.chain;
    s.rows = rows;
    if (n.chain) {  // a tile of a row-aligned value
      s.value = w.values[k].data();
      s.adjoint = gradient ? w.adjoints[k].data() : nullptr;
    } else {  // a tile of row data
      s.value = row_data(k).data() + start * s.cols;
      s.adjoint = nullptr;
      s.row_major = row_major_[k];
    }
  };
  const Node& node = program_.nodes[id];
  c.node = &kernel_nodes_[id];
  if (node.op == Op::density) {
    c.out = Slot<T>();
    c.out.value = w.terms[id].data();  // the worker's accumulator of this term
    c.out.chain = true;
  } else {
    set_slot(c.out, id);
  }
  for (size_t k = 0; k < node.inputs.size(); ++k) {
    set_slot(c.in[k], node.inputs[k]);
    // (an adjoint this call alone writes, not zeroed: stored())
    c.in[k].fresh = gradient && stores && (stores_inputs_[id] >> k & 1u);
  }
  c.index = nullptr;
  if (node.op == Op::gather) c.index = row_index(id).data() + start * cols_of(node);
  if (node.op == Op::gather_rows || node.op == Op::rowdot_rows)
    c.index = row_index(id).data() + start;
  c.index_in_runs = index_in_runs_[id];
  c.index_in_steps = index_in_steps_[id];
  c.index_runs = RunStarts{};
  if (!run_offsets_[id].empty()) {
    const long first = run_offsets_[id][tile];
    c.index_runs = RunStarts{run_starts_[id].data() + first, run_offsets_[id][tile + 1] - first - 1};
  }
  c.data_term = data_terms_[id].empty() ? nullptr : &data_terms_[id][tile];
  c.chains = chains_;
  c.state = state;
  c.gradient = gradient;
  c.lp = w.lp.data();
  c.scratch = w.scratch.data();
  c.jacobian = options_.jacobian;
}

template <class T>
void ObservationStage<T>::run_worker(Worker& w, const long* order, long first, long end,
                                     GlobalBuffers<T> global, const double* state, bool gradient,
                                     const Launcher& launch, bool direct_ok, bool whole) {
  std::fill(w.lp.begin(), w.lp.end(), 0.0);
  for (int id : nodes_)
    if (program_.nodes[id].op == Op::density) std::fill(w.terms[id].begin(), w.terms[id].end(), T(0));
  // In one process a direct node's partials go straight to its global
  // adjoint (zeroed by the executor or stored by its first writer, and only
  // added to). With one shard the other nodes' private copies are added to
  // theirs by rows, so only the rows the worker can touch need zeroing;
  // across shards they are all-reduced whole, and across processes every
  // node is.
  if (gradient)
    for (int id : boundary_) {
      if (direct_ok && direct_[id]) {
        w.sink[id] = global.adjoint(id);
        continue;
      }
      std::vector<T>& buf = w.boundary[id];
      if (!whole && !buf.empty())
        over_rows(id, w.touched[id], [&](long i) { buf[i] = T(0); });
      else
        buf.assign(chains_ * program_.nodes[id].size, T(0));  // allocates a direct node's
      w.sink[id] = buf.data();
    }
  NodeCall<T> call;  // each node's in turn (tile_call())
  // (the emulated backend's lanes add every partial)
  const bool stores = gradient && launch.backend == Backend::cpu;
  for (long k = first; k < end; ++k) {
    const long t = order ? order[k] : k;
    if (gradient)
      for (int id : nodes_) {
        // only the tile's rows of the buffer are used: [chains, length * cols]
        const Node& n = program_.nodes[id];
        if (n.op != Op::density && !(stores && stored_[id]))
          std::fill_n(w.adjoints[id].begin(), chains_ * tile_length(t) * cols_of(n), T(0));
      }
    for (int id : nodes_) {
      tile_call(w, id, t, global, state, gradient, stores, call);
      run_forward(call, launch);
    }
    if (gradient)
      for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it) {
        tile_call(w, *it, t, global, state, gradient, stores, call);
        run_backward(call, launch);
      }
  }
}

template <class T> TilePlacement<T> ObservationStage<T>::host_placement(GlobalBuffers<T> global) const {
  const size_t n = program_.nodes.size();
  TilePlacement<T> at(n);
  for (size_t id = 0; id < n; ++id) {
    at.rows[id] = row_data(id).empty() ? nullptr : row_data(id).data();
    at.index[id] = row_index(id).empty() ? nullptr : row_index(id).data();
  }
  // every global value a node reads: the boundary's, and constants
  for (int id : nodes_)
    for (int k : program_.nodes[id].inputs) {
      if (program_.nodes[k].extent == extent_) continue;
      at.value[k] = global.value(k);
      if (!program_.nodes[k].chain) continue;
      at.adjoint[k] = global.adjoint(k);
      if (global.stride(k)) at.stride[k] = global.stride(k);
    }
  for (int id : nodes_)
    if (program_.nodes[id].op == Op::density) at.term[id] = (*global.values)[id].data();
  return at;
}

template <class T>
TileKernelArgs<T> ObservationStage<T>::tile_kernel_args(const TileLayout<T>& layout,
                                                        const TileStep<T>* steps,
                                                        const long* tile_start) const {
  TileKernelArgs<T> a;
  a.steps = steps;
  a.n_steps = static_cast<int>(layout.steps.size());
  a.tile_start = tile_start;
  a.tiles = tiles();
  a.rows = rows_;
  a.chains = chains_;
  a.adjoint_offset = layout.adjoint_offset;
  a.body_shared = layout.body_shared;
  a.n_free = program_.n_free;
  a.jacobian = options_.jacobian;
  return a;
}

template <class T> TileLayout<T> ObservationStage<T>::tile_layout(const TilePlacement<T>& at) const {
  TileLayout<T> layout;
  long longest = 0;
  for (long t = 0; t < tiles(); ++t) longest = std::max(longest, tile_length(t));
  // the tile area: each node's value, [chains, longest x cols]
  std::vector<long> offset(program_.nodes.size(), -1);
  for (int id : nodes_) {
    const Node& n = program_.nodes[id];
    if (n.op == Op::density) continue;
    offset[id] = layout.adjoint_offset;
    layout.adjoint_offset += chains_ * longest * cols_of(n);
  }
  auto binding = [&](int k) {
    const Node& n = program_.nodes[k];
    TileBinding<T> b;
    b.cols = cols_of(n);
    if (n.extent != extent_) {
      b.source = TileSource::global;
      b.value = at.value[k];
      b.adjoint = n.chain ? at.adjoint[k] : nullptr;
      b.rows = n.dim[0];
      b.chain = n.chain;
      b.stride = at.stride[k];
    } else if (n.chain) {
      b.source = TileSource::tile;
      b.offset = offset[k];
    } else {
      b.source = TileSource::rows;
      b.value = at.rows[k];
      b.row_major = row_major_[k];
    }
    return b;
  };
  for (int id : nodes_) {
    const Node& n = program_.nodes[id];
    TileStep<T> step;
    step.node = kernel_nodes_[id];
    step.node.values = nullptr;
    if (n.op == Op::density) {
      step.out.source = TileSource::global;
      step.out.value = at.term[id];
      step.out.chain = true;
    } else {
      step.out = binding(id);
    }
    for (size_t k = 0; k < n.inputs.size(); ++k) step.in[k] = binding(n.inputs[k]);
    if (!row_index(id).empty()) {
      step.index = at.index[id];
      step.index_cols = n.op == Op::gather ? cols_of(n) : 1;
      step.index_in_runs = index_in_runs_[id];
    }
    layout.steps.push_back(step);
  }
  // The bodies' block-shared scratch: the most any of them asks for, found
  // by dispatching every step on the longest tile without running anything.
  std::vector<T> area(std::max(1L, 2 * layout.adjoint_offset));
  std::vector<double> scratch(chains_);
  TileKernelArgs<T> a;
  a.chains = chains_;
  a.adjoint_offset = layout.adjoint_offset;
  a.gradient = true;
  int most = 0;
  auto measure = [&most](const auto& body) { most = std::max(most, body.shared_per_lane); };
  NodeCall<T> c;
  for (const TileStep<T>& step : layout.steps) {
    tile_step_call(c, a, step, 0, longest, area.data(), scratch.data());
    if (!forward_row_call(c, measure) || !backward_row_call(c, measure)) tile_op_missing();
  }
  layout.body_shared = most;
  return layout;
}

template <class T>
void ObservationStage<T>::add_partials(GlobalBuffers<T> global, int id, const T* buf,
                                       std::pair<long, long> rows, double weight) const {
  T* adj = global.adjoint(id);
  if (weight == 1) {
    over_rows(id, rows, [&](long i) { adj[i] += buf[i]; });
  } else {
    const T w = static_cast<T>(weight);
    over_rows(id, rows, [&](long i) { adj[i] += w * buf[i]; });
  }
}

template <class T>
void ObservationStage<T>::run(GlobalBuffers<T> global, const double* state, double* lp,
                              bool gradient, ThreadPool& pool, Communicator& comm,
                              const Launcher& launch, Communicator* world, const Minibatch* batch) {
  const bool sampled = batch && batch->active();
  // With a minibatch, the drawn tiles' partials are scaled by their weight:
  // in the tile kernel by its densities, here as they are added to the
  // global buffers (none go there directly).
  if (sampled) drawn_ = draw_tiles(*batch);
  const double weight = sampled ? drawn_.weight : 1;
  if (options_.tile_kernel) {
    if (world)
      throw std::invalid_argument("lockstep: the tile kernel does not run across processes");
    // (a layout scans every gather's index: once, not per call)
    TilePlacement<T> at = host_placement(global);
    if (!placed_ || !(*placed_ == at)) {
      layout_ = tile_layout(at);
      placed_ = std::make_unique<TilePlacement<T>>(std::move(at));
    }
    TileKernelArgs<T> a = tile_kernel_args(layout_, layout_.steps.data(), tile_start_.data());
    a.lp = lp;
    a.gradient = gradient;
    if (sampled) {  // the drawn tiles, their densities weighted
      a.drawn = drawn_.tiles.data();
      a.n_drawn = static_cast<long>(drawn_.tiles.size());
      a.weight = weight;
    }
    // the GPU's kernel where it holds the stage's ops and families (the GPU
    // runs the others op by op; here they run with every op's code)
    emulate_tile_kernel(a, launch.geometry, tile_kernel_holds<LinearTileKernels>(layout_.steps));
    return;
  }
  const long S = options_.shards, W = options_.workers;
  const bool across = world != nullptr;
  const bool direct_ok = !across && !sampled;
  // Whether node id's adjoint partials are summed whole across shards (and
  // processes), rather than added in place (direct) or by touched rows.
  auto whole = [&](int id) { return across || (S > 1 && !(direct_ok && direct_[id])); };
  pool.parallel_for(S * W, [&](long k) {
    // the worker's tiles, or the drawn ones among them
    auto [first, end] = tile_range(k);
    const std::vector<long>& drawn = drawn_.tiles;
    if (sampled) {
      first = std::lower_bound(drawn.begin(), drawn.end(), first) - drawn.begin();
      end = std::lower_bound(drawn.begin(), drawn.end(), end) - drawn.begin();
    }
    run_worker(workers_[k], sampled ? drawn.data() : nullptr, first, end, global, state, gradient,
               launch, direct_ok, across || S > 1);
  });
  // Within a shard: its workers' partials into its first worker's buffers.
  std::vector<double*>& lps = lps_;
  for (long s = 0; s < S; ++s) {
    Worker& lead = workers_[s * W];
    for (long w = 1; w < W; ++w) {
      Worker& other = workers_[s * W + w];
      for (long c = 0; c < chains_; ++c) lead.lp[c] += other.lp[c];
      for (int id : nodes_)
        for (size_t c = 0; c < other.terms[id].size(); ++c) lead.terms[id][c] += other.terms[id][c];
      if (gradient)
        for (int id : boundary_)
          if (whole(id))
            for (size_t i = 0; i < lead.boundary[id].size(); ++i)
              lead.boundary[id][i] += other.boundary[id][i];
    }
    lps[s] = lead.lp.data();
  }
  // Across shards: the all-reduce a multi-device run would do; then across
  // processes.
  comm.all_reduce_sum(lps.data(), chains_);
  if (world) world->all_reduce_sum(lps.data(), chains_);
  for (long c = 0; c < chains_; ++c) lp[c] += weight * lps[0][c];
  std::vector<T*>& bufs = bufs_;
  for (int id : nodes_) {
    if (program_.nodes[id].op != Op::density) continue;
    for (long s = 0; s < S; ++s) bufs[s] = workers_[s * W].terms[id].data();
    comm.all_reduce_sum(bufs.data(), chains_);
    if (world) world->all_reduce_sum(bufs.data(), chains_);
    for (long c = 0; c < chains_; ++c)
      (*global.values)[id][c] += static_cast<T>(weight * static_cast<double>(bufs[0][c]));
  }
  if (!gradient) return;
  if (!across && S == 1) {
    // One shard: every worker adds the rows it touched to the global adjoints
    // (the direct nodes' partials are there already).
    for (int id : boundary_) {
      if (direct_ok && direct_[id]) continue;
      for (long k = 0; k < W; ++k)
        add_partials(global, id, workers_[k].boundary[id].data(), workers_[k].touched[id], weight);
    }
    return;
  }
  for (int id : boundary_) {
    if (!whole(id)) continue;  // a direct node's partials are in place
    for (long s = 0; s < S; ++s) bufs[s] = workers_[s * W].boundary[id].data();
    comm.all_reduce_sum(bufs.data(), static_cast<long>(workers_[0].boundary[id].size()));
    if (world) world->all_reduce_sum(bufs.data(), static_cast<long>(workers_[0].boundary[id].size()));
    add_partials(global, id, bufs[0], {0, program_.nodes[id].dim[0]}, weight);
  }
}

template class ObservationStage<double>;
template class ObservationStage<float>;

}  // namespace lockstep
