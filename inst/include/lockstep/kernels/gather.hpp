// Gathers: forward reads, backward scatter-adds (several outputs may read one
// input element, so lanes may add to one address).
//   gather       y[i] = x[index[i]], one flat index per output element
//   gather_rows  y[r, j] = x[index[r], j], one row index per output row: x is
//                G x cols, y is rows x cols (R's x[i, ] with i row numbers).
//                The index of N rows is N longs, not N * cols. A tile of y's
//                rows reads the tile's entries of the index; x is whole.
#ifndef LOCKSTEP_KERNELS_GATHER_HPP
#define LOCKSTEP_KERNELS_GATHER_HPP

#include <vector>

#include "cells.hpp"
#include "elementwise.hpp"

namespace lockstep {

// The pieces of `sequences` sequences of n elements each, `piece` consecutive
// elements to a piece, shared out among the lanes: for each piece, the run
// sums of its values (values(s, first) points at sequence s's elements from
// `first`) grouped by equal index[i] (i within the sequence; the same
// index for every sequence), each run's total handed to add(s, first, at,
// total) with at = the run's index. The lanes of a warp take adjacent pieces.
template <class Values, class Add>
LS_HD void run_sums(const Lane& lane, long sequences, long n, long piece, const long* index,
                    Values&& values, Add&& add) {
  const long per_sequence = (n + piece - 1) / piece;
  const long total = sequences * per_sequence;
  for (long q = lane.index; q < total; q += lane.count) {
    const long s = q / per_sequence, first = (q - s * per_sequence) * piece;
    const long len = n - first < piece ? n - first : piece;
    const auto* v = values(s, first);
    long at = index[first];
    double sum = static_cast<double>(v[0]);
    for (long i = 1; i < len; ++i) {
      const long next = index[first + i];
      if (next != at) {
        add(s, first, at, sum);
        at = next;
        sum = 0;
      }
      sum += static_cast<double>(v[i]);
    }
    add(s, first, at, sum);
  }
}

// The CPU's loops over an index a run at a time: the end of the run of
// equal entries (or, `steps`, of consecutive ones) that starts at i. Each
// run is found once for every sequence (chain) it serves: finding them was
// most of the time of a gather that looked again for each chain.
inline long run_end(const long* index, long i, long n, bool steps) {
  const long at = index[i];
  long j = i + 1;
  if (steps)
    while (j < n && index[j] == at + (j - i)) ++j;
  else
    while (j < n && index[j] == at) ++j;
  return j;
}

// The runs of an index the caller found beforehand (the observation stage,
// for each tile, when it is built: NodeCall::index_runs): starts[r] is run
// r's first element, starts[n_runs] = n.
struct RunStarts {
  const long* starts = nullptr;
  long n_runs = 0;
};

// Calls f(i, j) for each run [i, j) of index[0, n), from `known` where
// given, else found as it goes (run_end).
template <class F>
inline void for_each_run(const long* index, long n, bool steps, RunStarts known, F&& f) {
  if (known.starts) {
    for (long r = 0; r < known.n_runs; ++r) f(known.starts[r], known.starts[r + 1]);
    return;
  }
  for (long i = 0; i < n;) {
    const long j = run_end(index, i, n, steps);
    f(i, j);
    i = j;
  }
}

// The starts of index[0, n)'s runs of equal (or, `steps`, consecutive)
// entries, appended to `out`, with n after the last.
inline void append_run_starts(const long* index, long n, bool steps, std::vector<long>& out) {
  for_each_run(index, n, steps, RunStarts{}, [&](long i, long) { out.push_back(i); });
  out.push_back(n);
}

// The CPU's scatter-add by index (index_in_runs()) of `sequences` sequences
// of n values, sequence s's at v + s * v_stride into out + s * out_stride:
// each run of equal entries summed in running sums (running_sums.hpp), then
// added once. Element by element, each addition to a group's adjoint waited
// on the store of the one before it (1.7 ns an element, most of a
// hierarchical model's gradient); the runs' sums overlap their additions.
template <class T>
inline void add_run_sums(const long* index, long n, long sequences, const T* v, long v_stride,
                         T* out, long out_stride, RunStarts known = {}) {
  for_each_run(index, n, false, known, [&](long i, long j) {
    const long at = index[i];
    for (long s = 0; s < sequences; ++s) {
      const T* run = v + s * v_stride + i;
      out[s * out_stride + at] += static_cast<T>(detail::running_sum(j - i, [run](long k) {
        return static_cast<double>(run[k]);
      }));
    }
  });
}

// The CPU's scatter-add by an index that comes in steps (index_in_steps():
// runs of consecutive entries, as a panel's week index is within each
// product's rows), sequences as add_run_sums's: each run's additions are one
// loop over neighbouring elements, which vectorises. Every element of `out`
// is added to in the same order as element by element: the same sums.
template <class T>
inline void add_in_steps(const long* index, long n, long sequences, const T* v, long v_stride,
                         T* out, long out_stride, RunStarts known = {}) {
  for_each_run(index, n, true, known, [&](long i, long j) {
    const long at = index[i];
    for (long s = 0; s < sequences; ++s) {
      T* __restrict o = out + s * out_stride + at;
      const T* __restrict from = v + s * v_stride + i;
      for (long k = 0; k < j - i; ++k) o[k] += from[k];
    }
  });
}

// The CPU's gather y[s, i] = x[s, index[i]] of `sequences` sequences of n
// (x's at x_stride, y's at n) for an index in runs of equal entries (each
// run one value spread) or in steps (each run a copy).
template <class T>
inline void gather_in_runs(const T* x, long x_stride, const long* index, long n, long sequences,
                           T* y, bool steps, RunStarts known = {}) {
  for_each_run(index, n, steps, known, [&](long i, long j) {
    const long at = index[i];
    for (long s = 0; s < sequences; ++s) {
      const T* __restrict from = x + s * x_stride + at;
      T* __restrict o = y + s * n + i;
      if (steps)
        for (long k = 0; k < j - i; ++k) o[k] = from[k];
      else
        for (long k = 0; k < j - i; ++k) o[k] = from[0];
    }
  });
}

// `runs`, `steps`: the index comes in runs of equal or of consecutive
// entries (index_in_runs(), index_in_steps()), which the CPU reads a run at a
// time (gather_in_runs); lanes gather element by element.
template <class T> struct GatherForward {
  const T* x;
  long x_chain_stride;
  const long* index;
  T* y;
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  bool runs = false, steps = false;
  RunStarts known{};
  LS_HD void operator()(int, const Lane& lane) const {
#ifndef __CUDA_ARCH__
    if ((runs || steps) && lane.count == 1) {
      gather_in_runs(x, x_chain_stride, index, size, chains, y, steps, known);
      return;
    }
#endif
    for_each_element(lane, chains, size, [&](long k, long c, long i) {
      y[k] = x[c * x_chain_stride + index[i]];
    });
  }
};

// The scatter-add of several lanes: by default one atomic per element. Where
// the index comes in runs of equal entries (rows sorted by group, row_order.hpp:
// the lanes of a warp would all add to one group's address, each waiting on
// the one before), `piece` > 0: a lane takes `piece` consecutive elements of
// one chain, sums each run of equal entries in a register and adds the run's
// total with one atomic. Only the order of additions changes. One lane (the
// CPU) sums each whole run (add_run_sums), adds runs of consecutive entries
// (`steps`) a run at a time (add_in_steps), or adds element by element, in
// order.
template <class T> struct GatherBackward {
  const long* index;
  const T* dy;
  T* dx;
  long x_size;
  long chains, size;
  int phases = 1, shared_per_lane = 0;
  long piece = 0;
  bool steps = false;
  RunStarts known{};
  LS_HD void operator()(int, const Lane& lane) const {
#ifndef __CUDA_ARCH__
    if (piece > 0 && lane.count == 1) {
      add_run_sums(index, size, chains, dy, size, dx, x_size, known);
      return;
    }
    if (steps && lane.count == 1) {
      add_in_steps(index, size, chains, dy, size, dx, x_size, known);
      return;
    }
#endif
    if (piece > 0 && lane.count > 1) {
      run_sums(lane, chains, size, piece, index, [&](long c, long first) {
        return dy + c * size + first;
      }, [&](long c, long, long at, double total) {
        lane_add(dx + c * x_size + at, static_cast<T>(total));
      });
      return;
    }
    for_each_element(lane, chains, size, [&](long k, long c, long i) {
      lane_add(dx + c * x_size + index[i], dy[k]);
    });
  }
};

// x_rows: G, the rows of x; rows, cols: the output's extents.
template <class T> struct GatherRowsForward {
  const T* x;
  long x_chain_stride;
  long x_rows;
  const long* index;  // [rows], 0-based rows of x
  T* y;               // [chains, rows * cols]
  long chains, rows, cols;
  int phases = 1, shared_per_lane = 0;
  LS_HD void operator()(int, const Lane& lane) const {
    for_each_cell(lane, chains, rows, cols, [&](long k, long c, long r, long j) {
      y[k] = x[c * x_chain_stride + index[r] + j * x_rows];
    });
  }
};

// As GatherBackward, `piece` > 0 summing runs of equal row indices down
// each column (a chain's column j is one sequence of rows).
template <class T> struct GatherRowsBackward {
  const long* index;
  const T* dy;  // [chains, rows * cols]
  T* dx;        // [chains, x_rows * cols]
  long x_rows;
  long chains, rows, cols;
  int phases = 1, shared_per_lane = 0;
  long piece = 0;
  RunStarts known{};
  LS_HD void operator()(int, const Lane& lane) const {
    const long x_size = x_rows * cols;
#ifndef __CUDA_ARCH__
    if (piece > 0 && lane.count == 1) {
      // sequence s = c * cols + j, chain c's column j: dy's at s * rows, dx's
      // at c * x_size + j * x_rows = s * x_rows
      add_run_sums(index, rows, chains * cols, dy, rows, dx, x_rows, known);
      return;
    }
#endif
    if (piece > 0 && lane.count > 1) {
      // sequence s = c * cols + j: chain c's column j, rows long
      run_sums(lane, chains * cols, rows, piece, index, [&](long s, long first) {
        return dy + s * rows + first;
      }, [&](long s, long, long at, double total) {
        const long c = s / cols, j = s - c * cols;
        lane_add(dx + c * x_size + at + j * x_rows, static_cast<T>(total));
      });
      return;
    }
    for_each_cell(lane, chains, rows, cols, [&](long k, long c, long r, long j) {
      lane_add(dx + c * x_size + index[r] + j * x_rows, dy[k]);
    });
  }
};

// Whether an index (host memory) of at least 64 entries comes in runs four
// long or more on average: of equal entries, or (`steps`) of consecutive
// ones (run_end's).
inline bool index_has_long_runs(const std::vector<long>& index, bool steps) {
  const long n = static_cast<long>(index.size());
  if (n < 64) return false;
  const long step = steps ? 1 : 0;
  long runs = 1;
  for (long i = 1; i < n; ++i) runs += index[i] != index[i - 1] + step;
  return runs * 4 <= n;
}

// Whether a gather's index comes in runs of equal entries: where the
// backward's lanes sum runs (`piece`). Unsorted indices keep one atomic per
// element, which reads dy coalesced.
inline bool index_in_runs(const std::vector<long>& index) { return index_has_long_runs(index, false); }

// Whether a gather's index comes in steps, runs of consecutive entries
// (index[i] = index[i - 1] + 1): a panel's time index, rows sorted by unit
// then time. The CPU then reads and adds a run at a time (gather_in_runs,
// add_in_steps).
inline bool index_in_steps(const std::vector<long>& index) { return index_has_long_runs(index, true); }

}  // namespace lockstep

#endif
