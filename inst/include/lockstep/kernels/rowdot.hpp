// rowdot_rows: the linear predictor of a hierarchical regression, per chain,
//   y[r] = p[r] + sum_j a[r, j] (b[index[r], j] s[j] + v[j])
// for a (rows x cols, the covariates), b (G x cols, the group slopes), and the
// optional s (a scale of b's columns: 1 x cols or one value), v (cols, the
// slopes shared by every row: X %*% beta) and p (an offset, rows x 1 or a
// scalar). The planner fuses rowSums(a * b[index, ]) into it, then a
// non-centred b = z * s (the scale; b is then z), then X %*% beta and an added
// offset (planner.cpp), so that X is read once per chain and no rows x cols or
// G x cols intermediate is written or differentiated.
//   forward    y[r] = p[r] + sum_j a[r, j] w[r, j],  w[r, j] = b[g_r, j] s[j] + v[j]
//   backward   da[r, j] += dy[r] w[r, j]
//              with q[r, j] = dy[r] a[r, j]:
//              db[g_r, j] += q s[j];  ds[j] += q b[g_r, j];  dv[j] += q;  dp[r] += dy[r]
// Sums are kept in double.
//
// The CPU (one lane) walks runs of rows with the same group, which the
// observation stage's row order makes long: w is formed once per run, and the
// run's partials sum_r dy[r] a[r, j] are added to db and dv once per run,
// not once per row. Lanes (emulated, CUDA) own whole rows: their da writes are
// their own, their db and dv writes are scatter-adds.
#ifndef LOCKSTEP_KERNELS_ROWDOT_HPP
#define LOCKSTEP_KERNELS_ROWDOT_HPP

#include "../lanes.hpp"
#include "elementwise.hpp"

#if !defined(__CUDA_ARCH__)
#include <algorithm>
#include <vector>
#endif

namespace lockstep {

struct RowDotShape {
  long rows, cols;  // of a (and y has rows)
  long b_rows;      // G
  long a_stride, b_stride, v_stride;  // chain strides (0 without the chain dimension)
  long s_stride = 0;                  // the scale's chain stride
  bool s_scalar = false;              // the scale is one value for every column
  bool a_row_major = false;           // a stored row by row (data only: no da)

  // Where a[r, j] is within a chain's a.
  LS_HD long a_at(long r, long j) const { return a_row_major ? r * cols + j : r + j * rows; }
};

// The scale of b's column j for chain c (1 without a scale).
template <class T> LS_HD double rowdot_scale(const T* sc, const RowDotShape& s, long c, long j) {
  return sc ? static_cast<double>(sc[c * s.s_stride + (s.s_scalar ? 0 : j)]) : 1.0;
}

// w[r, j] = b[g, j] s[j] + v[j] for a row r of group g, chain c: what the
// forward and backward bodies both multiply a's row by.
template <class T>
LS_HD double rowdot_w(const RowDotShape& s, const T* b, const T* sc, const T* v, long c, long g,
                      long j) {
  double x = static_cast<double>(b[c * s.b_stride + g + j * s.b_rows]);
  if (sc) x *= rowdot_scale(sc, s, c, j);
  if (v) x += static_cast<double>(v[c * s.v_stride + j]);
  return x;
}

namespace detail {
// Rows [r, end) with the group of row r.
LS_HD long run_end(const long* index, long r, long rows) {
  long e = r + 1;
  while (e < rows && index[e] == index[r]) ++e;
  return e;
}
}  // namespace detail

template <class T> struct RowDotForward {
  RowDotShape s;
  const T* a;
  const T* b;
  const long* index;  // [rows]
  const T* v;         // [chains, cols] or nullptr
  Operand<T> p;       // p.data == nullptr: no offset
  T* y;               // [chains, rows]
  long chains;
  const T* sc = nullptr;  // the scale s, or nullptr
  int phases = 1, shared_per_lane = 0;

  LS_HD double w(long c, long g, long j) const { return rowdot_w(s, b, sc, v, c, g, j); }

#if !defined(__CUDA_ARCH__)
  // The CPU's one lane: column by column over each run of rows of one group,
  // so that a's reads are contiguous and the row loop vectorises.
  LS_CPU_CLONES void cpu() const {
    std::vector<double> acc(s.rows), wr(s.cols);
    for (long c = 0; c < chains; ++c) {
      const T* ac = a + c * s.a_stride;
      for (long r = 0; r < s.rows; ++r) acc[r] = p.data ? static_cast<double>(p.at(c, r)) : 0.0;
      for (long r0 = 0, r1; r0 < s.rows; r0 = r1) {
        r1 = detail::run_end(index, r0, s.rows);
        for (long j = 0; j < s.cols; ++j) wr[j] = w(c, index[r0], j);
        if (s.a_row_major) {
          // Row by row, each a contiguous dot product with w, in four
          // running sums that the compiler turns into one vector's lanes.
          for (long r = r0; r < r1; ++r) {
            const T* ar = ac + r * s.cols;
            double part[4] = {0, 0, 0, 0};
            long j = 0;
            for (; j + 4 <= s.cols; j += 4)
              for (int k = 0; k < 4; ++k) part[k] += static_cast<double>(ar[j + k]) * wr[j + k];
            for (; j < s.cols; ++j) part[0] += static_cast<double>(ar[j]) * wr[j];
            acc[r] += (part[0] + part[1]) + (part[2] + part[3]);
          }
          continue;
        }
        for (long j = 0; j < s.cols; ++j) {
          const T* col = ac + j * s.rows;
          const double wj = wr[j];
          for (long r = r0; r < r1; ++r) acc[r] += static_cast<double>(col[r]) * wj;
        }
      }
      for (long r = 0; r < s.rows; ++r) y[c * s.rows + r] = static_cast<T>(acc[r]);
    }
  }
#endif

  LS_HD void operator()(int, const Lane& lane) const {
#if !defined(__CUDA_ARCH__)
    if (lane.count == 1) return cpu();
#endif
    for_each_element(lane, chains, s.rows, [&](long k, long c, long r) {
      const T* ac = a + c * s.a_stride;
      double acc = p.data ? static_cast<double>(p.at(c, r)) : 0.0;
      for (long j = 0; j < s.cols; ++j) acc += static_cast<double>(ac[s.a_at(r, j)]) * w(c, index[r], j);
      y[k] = static_cast<T>(acc);
    });
  }
};

template <class T> struct RowDotBackward {
  RowDotShape s;
  const T* a;
  const T* b;
  const long* index;
  const T* v;
  const T* dy;
  T* da;           // [chains, rows * cols] or nullptr
  T* db;           // [chains, b_rows * cols] or nullptr
  T* dv;           // [chains, cols] or nullptr
  AdjointSink<T> dp;  // dp.data == nullptr: none
  long chains;
  const T* sc = nullptr;  // the scale s, or nullptr
  T* ds = nullptr;        // its adjoint (s's layout), or nullptr
  // With dv or ds, the lanes go through the chains one by one, two phases
  // each: phase 2c adds chain c's terms, its dv and ds partials into the
  // lane's block-shared slots (cols doubles each per lane); phase 2c + 1 sums
  // each column's slots over the block and adds the totals to dv and ds with
  // one atomic per block and column. (One atomic per row and column instead,
  // as for db, would make every lane of the GPU queue on the same cols
  // addresses.) Set by with_dv_phases().
  int phases = 1, shared_per_lane = 0;

  RowDotBackward& with_dv_phases() {
    if (dv || ds) {
      phases = static_cast<int>(2 * chains);
      shared_per_lane = static_cast<int>(slots() * s.cols);
    }
    return *this;
  }
  // Per-lane partials: dv's cols, then ds's cols.
  LS_HD int slots() const { return (dv ? 1 : 0) + (ds ? 1 : 0); }
  LS_HD long ds_slot() const { return dv ? s.cols : 0; }

  LS_HD double w(long c, long g, long j) const { return rowdot_w(s, b, sc, v, c, g, j); }
  LS_HD void add_ds(long c, long j, double total) const {
    lane_add(ds + c * s.s_stride + (s.s_scalar ? 0 : j), static_cast<T>(total));
  }

#if !defined(__CUDA_ARCH__)
  // The CPU's one lane, run by run of rows of one group: the run's sums
  // sum_r dy[r] a[r, j] row by row with the columns inside, so that the cols
  // sums are independent additions in flight together (column by column,
  // each would wait on its own previous addition); added to db and dv once
  // per run.
  LS_CPU_CLONES void cpu() const {
    std::vector<double> dv_acc(s.cols), ds_acc(s.cols), run(s.cols), scale(s.cols);
    for (long c = 0; c < chains; ++c) {
      const T* ac = a + c * s.a_stride;
      const T* dyc = dy + c * s.rows;
      const T* bc = b + c * s.b_stride;
      std::fill(dv_acc.begin(), dv_acc.end(), 0.0);
      std::fill(ds_acc.begin(), ds_acc.end(), 0.0);
      for (long j = 0; j < s.cols; ++j) scale[j] = rowdot_scale(sc, s, c, j);
      for (long r0 = 0, r1; r0 < s.rows; r0 = r1) {
        r1 = detail::run_end(index, r0, s.rows);
        const long g = index[r0];
        if (db || dv || ds) {
          std::fill(run.begin(), run.end(), 0.0);
          if (s.a_row_major)  // contiguous: the column loop vectorises
            for (long r = r0; r < r1; ++r) {
              const double d = static_cast<double>(dyc[r]);
              const T* ar = ac + r * s.cols;
              for (long j = 0; j < s.cols; ++j) run[j] += d * static_cast<double>(ar[j]);
            }
          else
            for (long r = r0; r < r1; ++r) {
              const double d = static_cast<double>(dyc[r]);
              for (long j = 0; j < s.cols; ++j) run[j] += d * static_cast<double>(ac[r + j * s.rows]);
            }
          for (long j = 0; j < s.cols; ++j) {
            if (db) db[c * s.b_rows * s.cols + g + j * s.b_rows] += static_cast<T>(run[j] * scale[j]);
            if (ds) ds_acc[j] += run[j] * static_cast<double>(bc[g + j * s.b_rows]);
            dv_acc[j] += run[j];
          }
        }
        if (da)
          for (long j = 0; j < s.cols; ++j) {
            T* dcol = da + c * s.rows * s.cols + j * s.rows;
            const double wj = w(c, g, j);
            for (long r = r0; r < r1; ++r) dcol[r] += static_cast<T>(static_cast<double>(dyc[r]) * wj);
          }
      }
      if (dv)
        for (long j = 0; j < s.cols; ++j) dv[c * s.v_stride + j] += static_cast<T>(dv_acc[j]);
      if (ds) {
        if (s.s_scalar) {
          double total = 0;
          for (long j = 0; j < s.cols; ++j) total += ds_acc[j];
          add_ds(c, 0, total);
        } else {
          for (long j = 0; j < s.cols; ++j) add_ds(c, j, ds_acc[j]);
        }
      }
      if (dp.data)
        for (long r = 0; r < s.rows; ++r) dp.add(c, r, dyc[r]);
    }
  }
#endif

  LS_HD void operator()(int phase, const Lane& lane) const {
#if !defined(__CUDA_ARCH__)
    if (lane.count == 1) {
      if (phase == 0) cpu();  // one lane: everything in phase 0
      return;
    }
#endif
    if (!dv && !ds) {
      for_each_element(lane, chains, s.rows, [&](long k, long c, long r) { row(c, r, dy[k], nullptr); });
      return;
    }
    const long c = phase / 2, per_lane = slots() * s.cols;
    double* mine = lane.shared + static_cast<long>(lane.in_block) * per_lane;
    if (phase % 2 == 0) {
      for (long j = 0; j < per_lane; ++j) mine[j] = 0;
      for (long r = lane.index; r < s.rows; r += lane.count) row(c, r, dy[c * s.rows + r], mine);
    } else {
      for (long j = lane.in_block; j < s.cols; j += lane.lanes_in_block) {
        double tv = 0, ts = 0;
        for (int t = 0; t < lane.lanes_in_block; ++t) {
          const double* theirs = lane.shared + t * per_lane;
          if (dv) tv += theirs[j];
          if (ds) ts += theirs[ds_slot() + j];
        }
        if (dv) lane_add(dv + c * s.v_stride + j, static_cast<T>(tv));
        if (ds) add_ds(c, j, ts);
      }
    }
  }

  // Row r of chain c, whose adjoint is g: da and dp directly, db by atomics
  // (rows of one group meet there), dv's and ds's terms into part (the lane's
  // slots: dv's cols, then ds's).
  LS_HD void row(long c, long r, T g, double* part) const {
    const T* ac = a + c * s.a_stride;
    const long gr = index[r];
    for (long j = 0; j < s.cols; ++j) {
      if (da) da[c * s.rows * s.cols + r + j * s.rows] += static_cast<T>(g * w(c, gr, j));
      const double q = static_cast<double>(g) * static_cast<double>(ac[s.a_at(r, j)]);
      if (db)
        lane_add(db + c * s.b_rows * s.cols + gr + j * s.b_rows,
                 static_cast<T>(sc ? q * rowdot_scale(sc, s, c, j) : q));
      if (part && dv) part[j] += q;
      if (part && ds) part[ds_slot() + j] += q * static_cast<double>(b[c * s.b_stride + gr + j * s.b_rows]);
    }
    if (dp.data) dp.add(c, r, g);
  }
};

}  // namespace lockstep

#endif
