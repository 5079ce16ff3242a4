// rowdot_rows: the linear predictor of a hierarchical regression, per chain,
//   y[r] = p[r] + q[g_r] + sum_j a[r, j] (b[g_r, j] s[j] + v[j]),  g_r = index[r]
// for a (rows x cols, the covariates), b (G x cols, the group slopes), and the
// optional s (a scale of b's columns: 1 x cols or one value), v (cols, the
// slopes shared by every row: X %*% beta), p (an offset, rows x 1 or a
// scalar) and q (G x 1, the group intercepts). The planner fuses
// rowSums(a * b[index, ]) into it, then a non-centred b = z * s (the scale; b
// is then z), then X %*% beta and an added offset, then the offset's gather
// q[index] (planner.cpp), so that X is read once per chain and no rows x cols
// or G x cols intermediate is written or differentiated.
//   forward    y[r] = p[r] + q[g_r] + sum_j a[r, j] w[r, j],  w[r, j] = b[g_r, j] s[j] + v[j]
//   backward   da[r, j] += dy[r] w[r, j]
//              with t[r, j] = dy[r] a[r, j]:
//              db[g_r, j] += t s[j];  ds[j] += t b[g_r, j];  dv[j] += t
//              dp[r] += dy[r];  dq[g_r] += dy[r]
// Sums are kept in double.
//
// The CPU (one lane), with rows sorted by group (the observation stage's row
// order) and row data a, takes four chains at a time through a table of the
// tile's groups (cpu_chain_block); otherwise it goes chain by chain through
// runs of rows of one group, w formed once per run and the run's partials
// added to db and dv once per run (cpu_chain). In the lanes path (emulated,
// CUDA) the forward gives each lane a row of a chain; the backward gives each
// lane a column of a piece of rows and likewise sums each run's partials
// before its one atomic add to db.
#ifndef LOCKSTEP_KERNELS_ROWDOT_HPP
#define LOCKSTEP_KERNELS_ROWDOT_HPP

#include "../lanes.hpp"
#include "elementwise.hpp"

#if !defined(__CUDA_ARCH__)
#include <algorithm>
#include <utility>
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
// forward and backward bodies both multiply a's row by, computed in A. The
// CPU's one lane takes it in double; the lanes path in T itself, so that in
// single precision a term a[r, j] w[r, j] is converted to double once, for
// the sum, rather than each of its operands (a, b, s, v). An H100 converts
// float to double at 16 results per clock per multiprocessor, a quarter of
// its double rate: with four conversions per term, the seed model's forward
// took 1.6 times as long in single precision as in double, and its backward
// 1.4 times. (In double the two are the same arithmetic.)
template <class A, class T>
LS_HD A rowdot_w(const RowDotShape& s, const T* b, const T* sc, const T* v, long c, long g,
                 long j) {
  A x = static_cast<A>(b[c * s.b_stride + g + j * s.b_rows]);
  if (sc) x *= static_cast<A>(sc[c * s.s_stride + (s.s_scalar ? 0 : j)]);
  if (v) x += static_cast<A>(v[c * s.v_stride + j]);
  return x;
}

// The CPU's chains per pass over row data (kernels' cpu_chain_block): four
// doubles, one AVX2 vector.
constexpr long rowdot_chain_block = 4;
// The CPU's groups per block of its four-chain kernels: one cache line of
// each of b's columns (in double), so that a block's table stays in L1; and
// how many blocks ahead they prefetch b's (and db's) lines.
constexpr long rowdot_group_block = 8;
constexpr long rowdot_prefetch_blocks = 4;

namespace detail {
#if !defined(__CUDA_ARCH__)
// The span [first, first + count) of the groups of rows sorted by group, or
// false when they are not sorted or the span is more than four groups a row
// (the CPU's per-tile tables of groups would then be mostly empty).
inline bool sorted_group_span(const long* index, long rows, long& first, long& count) {
  if (rows <= 0) return false;
  for (long r = 1; r < rows; ++r)
    if (index[r] < index[r - 1]) return false;
  first = index[0];
  count = index[rows - 1] - first + 1;
  return count <= 4 * rows + 64;
}

// The calling thread's table of groups (kernels' cpu_chain_block), of n
// values: kept between calls, since a table of a tile is large enough that
// allocating it anew each time would map fresh pages each time.
inline std::vector<double>& group_table(long n) {
  thread_local std::vector<double> table;
  table.resize(static_cast<size_t>(n));
  return table;
}
#endif

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
  const T* q = nullptr;   // the gathered offset q ([chains, b_rows]), or nullptr
  long q_stride = 0;      // its chain stride
  int phases = 1, shared_per_lane = 0;

  LS_HD double w(long c, long g, long j) const { return rowdot_w<double>(s, b, sc, v, c, g, j); }
  LS_HD T w_t(long c, long g, long j) const { return rowdot_w<T>(s, b, sc, v, c, g, j); }
  // The part of chain c's offset that every row of group g shares: q[g] plus
  // a scalar p (0 without either). The CPU's four-chain forward keeps it in
  // its table of groups.
  LS_HD double group_offset(long c, long g) const {
    double o = p.data && p.scalar ? static_cast<double>(p.at(c, 0)) : 0.0;
    if (q) o += static_cast<double>(q[c * q_stride + g]);
    return o;
  }
  // p[r] + q[index[r]] of chain c (either may be absent)
  LS_HD double offset(long c, long r) const {
    const double o = group_offset(c, index[r]);
    return p.data && !p.scalar ? static_cast<double>(p.at(c, r)) + o : o;
  }

#if !defined(__CUDA_ARCH__)
  // The CPU's one lane. Row data a (one copy for every chain, stored row by
  // row) takes the chains four at a time (cpu_chain_block): each row's values
  // are read once for the four, and each multiply-add is one vector
  // instruction across them. Other chains go one by one (cpu_chain).
  LS_CPU_CLONES void cpu() const {
    long c = 0;
    if (s.a_row_major && s.a_stride == 0)
      for (; c + rowdot_chain_block <= chains && cpu_chain_block(c); c += rowdot_chain_block) {}
    for (; c < chains; ++c) cpu_chain(c);
  }

  // Chains [c0, c0 + 4) of rows sorted by group, a block of eight groups at
  // a time (rowdot_group_block): first a table of w for the block's groups,
  // the four chains side by side (wt[g][j][k]), filled from one cache line
  // of each of b's columns; then per row four sums per chain over alternate
  // columns, so that consecutive multiply-adds do not wait on each other.
  // The table stays in L1, and the block rowdot_prefetch_blocks ahead is
  // prefetched: b's columns are 4 x cols streams too short and too many for
  // the hardware prefetchers (a table of the whole tile, filled column by
  // column, waited on memory for a fifth of the forward's time). Prefetches
  // past the tile's groups warm the worker's next tile, whose groups follow.
  // False (nothing done) when the rows are not sorted by group.
  LS_CPU_CLONES bool cpu_chain_block(long c0) const {
    constexpr long B = rowdot_chain_block, GB = rowdot_group_block;
    const long K = s.cols;
    long g0, span;
    if (!detail::sorted_group_span(index, s.rows, g0, span)) return false;
    // Each group's row of the table: w's K columns, then the offset's part
    // that is the same for every row of the group (q, and a scalar p).
    const long L = (K + 1) * B;
    std::vector<double>& wt = detail::group_table(GB * L);
    const bool p_rows = p.data && !p.scalar;
    long r = 0;
    for (long gb = g0; gb < g0 + span; gb += GB) {
      const long n = std::min(GB, g0 + span - gb);
      const long ahead = gb + rowdot_prefetch_blocks * GB;
      for (long k = 0; k < B; ++k) {
        const long c = c0 + k;
        for (long j = 0; j < K; ++j) {
          const T* bj = b + c * s.b_stride + j * s.b_rows;
          if (ahead < s.b_rows) __builtin_prefetch(bj + ahead, 0, 3);
          const double sj = rowdot_scale(sc, s, c, j);
          const double vj = v ? static_cast<double>(v[c * s.v_stride + j]) : 0.0;
          double* out = wt.data() + j * B + k;
          for (long g = 0; g < n; ++g) out[g * L] = static_cast<double>(bj[gb + g]) * sj + vj;
        }
        double* out = wt.data() + K * B + k;
        for (long g = 0; g < n; ++g) out[g * L] = group_offset(c, gb + g);
      }
      for (; r < s.rows && index[r] < gb + n; ++r) {
        const T* ar = a + r * K;
        const double* w4 = wt.data() + (index[r] - gb) * L;
        double a0[B] = {}, a1[B] = {}, a2[B] = {}, a3[B] = {};
        long j = 0;
        for (; j + 4 <= K; j += 4) {
          const double x0 = static_cast<double>(ar[j]), x1 = static_cast<double>(ar[j + 1]),
                       x2 = static_cast<double>(ar[j + 2]), x3 = static_cast<double>(ar[j + 3]);
          const double* wj = w4 + j * B;
          for (long k = 0; k < B; ++k) a0[k] += x0 * wj[k];
          for (long k = 0; k < B; ++k) a1[k] += x1 * wj[B + k];
          for (long k = 0; k < B; ++k) a2[k] += x2 * wj[2 * B + k];
          for (long k = 0; k < B; ++k) a3[k] += x3 * wj[3 * B + k];
        }
        for (; j < K; ++j) {
          const double x = static_cast<double>(ar[j]);
          for (long k = 0; k < B; ++k) a0[k] += x * w4[j * B + k];
        }
        const double* o4 = w4 + K * B;  // group_offset(), then offset()'s per-row p
        for (long k = 0; k < B; ++k) {
          const double o = p_rows ? static_cast<double>(p.at(c0 + k, r)) + o4[k] : o4[k];
          y[(c0 + k) * s.rows + r] = static_cast<T>(o + ((a0[k] + a1[k]) + (a2[k] + a3[k])));
        }
      }
    }
    return true;
  }

  // One chain: column by column over each run of rows of one group, so that
  // a's reads are contiguous and the row loop vectorises.
  void cpu_chain(long c) const {
    std::vector<double> acc(s.rows), wr(s.cols);
    const T* ac = a + c * s.a_stride;
    for (long r = 0; r < s.rows; ++r) acc[r] = offset(c, r);
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
#endif

  LS_HD void operator()(int, const Lane& lane) const {
#if !defined(__CUDA_ARCH__)
    if (lane.count == 1) return cpu();
#endif
    for_each_element(lane, chains, s.rows, [&](long k, long c, long r) {
      const T* ac = a + c * s.a_stride;
      double acc = offset(c, r);
      const long g = index[r];
      for (long j = 0; j < s.cols; ++j) acc += static_cast<double>(ac[s.a_at(r, j)] * w_t(c, g, j));
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
  T* db;           // b's layout (chain stride b_stride) or nullptr
  T* dv;           // [chains, cols] or nullptr
  AdjointSink<T> dp;  // dp.data == nullptr: none
  long chains;
  const T* sc = nullptr;  // the scale s, or nullptr
  T* ds = nullptr;        // its adjoint (s's layout), or nullptr
  T* dq = nullptr;        // the gathered offset's adjoint ([chains, b_rows]), or nullptr
  long q_stride = 0;      // its chain stride
  // With dv or ds, the lanes go through the chains one by one, two phases
  // each. Each lane keeps one column (lane % cols) and takes every
  // (count / cols)-th piece of rows of it (see column_of_piece); phase 2c adds
  // chain c's terms and puts the lane's dv and ds partials of its column in
  // its block-shared slots; phase 2c + 1 sums each column's slots over the
  // block and adds the totals to dv and ds with one atomic per block and
  // column. (One atomic per row and column instead, as for db, would make
  // every lane of the GPU queue on the same cols addresses.) A scalar
  // offset p (the model's intercept) is summed the same way, in a third slot
  // of the lanes of column 0: one atomic per row on its one adjoint made the
  // backward ten times slower on a GPU. With fewer lanes than columns (only
  // in small emulated launches), lanes take several columns and add their
  // partials to dv, ds and dp directly. Set by with_dv_phases().
  int phases = 1, shared_per_lane = 0;

  LS_HD RowDotBackward& with_dv_phases() {
    if (slots() > 0) {
      phases = static_cast<int>(2 * chains);
      shared_per_lane = slots();
    }
    return *this;
  }
  LS_HD bool dp_scalar() const { return dp.data && dp.scalar; }
  // Per-lane partials of the lane's column: dv's, then ds's, then the scalar
  // dp's (column 0's lanes only).
  LS_HD int slots() const { return (dv ? 1 : 0) + (ds ? 1 : 0) + (dp_scalar() ? 1 : 0); }
  LS_HD int ds_slot() const { return dv ? 1 : 0; }
  LS_HD int dp_slot() const { return (dv ? 1 : 0) + (ds ? 1 : 0); }

  LS_HD double w(long c, long g, long j) const { return rowdot_w<double>(s, b, sc, v, c, g, j); }
  LS_HD T w_t(long c, long g, long j) const { return rowdot_w<T>(s, b, sc, v, c, g, j); }
  LS_HD void add_ds(long c, long j, double total) const {
    lane_add(ds + c * s.s_stride + (s.s_scalar ? 0 : j), static_cast<T>(total));
  }

#if !defined(__CUDA_ARCH__)
  // The CPU's one lane, run by run of rows of one group. Row data a (one
  // copy for every chain, stored row by row, so no da) takes the chains four
  // at a time (cpu_chain_block); other chains go one by one (cpu_chain).
  LS_CPU_CLONES void cpu() const {
    long c = 0;
    if (s.a_row_major && s.a_stride == 0 && !da)
      for (; c + rowdot_chain_block <= chains && cpu_chain_block(c); c += rowdot_chain_block) {}
    for (; c < chains; ++c) cpu_chain(c);
  }

  // Adds a run's sums run[j] = sum_r dy[r] a[r, j] of chain c, group g, to
  // db and ds (and to the chain's dv and ds sums).
  void add_run(long c, long g, const double* run, const double* scale, double* dv_acc,
               double* ds_acc) const {
    const T* bc = b + c * s.b_stride;
    for (long j = 0; j < s.cols; ++j) {
      if (db) db[c * s.b_stride + g + j * s.b_rows] += static_cast<T>(run[j] * scale[j]);
      if (ds) ds_acc[j] += run[j] * static_cast<double>(bc[g + j * s.b_rows]);
      dv_acc[j] += run[j];
    }
  }

  // A chain's dv and ds sums, its dp and its dq, once its runs are done.
  void finish_chain(long c, const double* dv_acc, const double* ds_acc) const {
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
    if (dp.data) add_dp(c);
    if (dq) add_dq_runs(c, 0, s.rows);
  }

  // dp[r] += dy[r] for chain c; a scalar p's one adjoint gets the sum, in
  // four running sums (one addition per row to one address would each wait
  // on the one before).
  void add_dp(long c) const {
    const T* dyc = dy + c * s.rows;
    if (!dp.scalar) {
      for (long r = 0; r < s.rows; ++r) dp.add(c, r, dyc[r]);
      return;
    }
    double part[4] = {0, 0, 0, 0};
    long r = 0;
    for (; r + 4 <= s.rows; r += 4)
      for (long u = 0; u < 4; ++u) part[u] += static_cast<double>(dyc[r + u]);
    for (; r < s.rows; ++r) part[0] += static_cast<double>(dyc[r]);
    dp.add(c, 0, static_cast<T>((part[0] + part[1]) + (part[2] + part[3])));
  }

  // Columns [j0, j0 + J) of the sums over rows [r0, r1) of dy[r] a[r, j] for
  // chains [c0, c0 + 4), J = sizeof...(jj), written to t[jj][k]: the J sums
  // of four chains are J vectors kept in registers over the run (GCC's
  // vector type, each indexed by a constant of the pack, so that they are
  // not an array in memory). With Q, also the sums of dy[r] alone (dq's),
  // written to tq[k]. Inlined into each of cpu_chain_block's clones.
  template <bool Q, long... jj>
  inline __attribute__((always_inline)) void add_run_columns(
      long c0, long r0, long r1, long j0, double* t, double* tq,
      std::integer_sequence<long, jj...>) const {
    typedef double Four __attribute__((vector_size(4 * sizeof(double))));
    static_assert(rowdot_chain_block == 4, "Four holds one value of each chain of the block");
    Four acc[sizeof...(jj)] = {};
    Four sum = {};
    const T* dy0 = dy + c0 * s.rows;
    for (long r = r0; r < r1; ++r) {
      const Four d = {static_cast<double>(dy0[r]), static_cast<double>(dy0[s.rows + r]),
                      static_cast<double>(dy0[2 * s.rows + r]),
                      static_cast<double>(dy0[3 * s.rows + r])};
      const T* ar = a + r * s.cols + j0;
      ((acc[jj] += static_cast<double>(ar[jj]) * d), ...);
      if (Q) sum += d;
    }
    (__builtin_memcpy(t + jj * 4, &acc[jj], sizeof(Four)), ...);
    if (Q) __builtin_memcpy(tq, &sum, sizeof(Four));
  }

  // A run's sums of chains [c0, c0 + 4) into t (t[j][k], and t[cols][k] for
  // dq), eight columns at a time in registers; dq's sums with the first.
  inline __attribute__((always_inline)) void run_sums(long c0, long r0, long r1, double* t) const {
    const long K = s.cols;
    double* tq = t + K * rowdot_chain_block;
    long j = 0;
    if (dq) {
      if (K >= 8) {
        add_run_columns<true>(c0, r0, r1, 0, t, tq, std::make_integer_sequence<long, 8>());
        j = 8;
      } else if (K >= 4) {
        add_run_columns<true>(c0, r0, r1, 0, t, tq, std::make_integer_sequence<long, 4>());
        j = 4;
      } else {
        add_run_columns<true>(c0, r0, r1, 0, t, tq, std::make_integer_sequence<long, 1>());
        j = 1;
      }
    }
    for (; j + 8 <= K; j += 8)
      add_run_columns<false>(c0, r0, r1, j, t + j * 4, tq, std::make_integer_sequence<long, 8>());
    for (; j + 4 <= K; j += 4)
      add_run_columns<false>(c0, r0, r1, j, t + j * 4, tq, std::make_integer_sequence<long, 4>());
    for (; j < K; ++j)
      add_run_columns<false>(c0, r0, r1, j, t + j * 4, tq, std::make_integer_sequence<long, 1>());
  }

  // Chains [c0, c0 + 4) of rows sorted by group, a block of eight groups at
  // a time (rowdot_group_block): each run of rows of one group summed into
  // its row of the block's table (dt[g][j][k], the four chains side by side,
  // then dq's column), each row's values read once for the four chains
  // (run_sums); groups of the block with no rows get zeros. Then the table
  // is added to db and dq, one cache line of each of their columns, with
  // the dv and ds sums on the way. The table stays in L1, and db's (and
  // b's, dq's) lines rowdot_prefetch_blocks ahead are prefetched: they are
  // 4 x cols streams too short and too many for the hardware prefetchers.
  // (Adding each row's terms to the table instead made every row a load and
  // a store per column.) False (nothing done) when the rows are not sorted
  // by group.
  LS_CPU_CLONES bool cpu_chain_block(long c0) const {
    constexpr long B = rowdot_chain_block, GB = rowdot_group_block;
    const long K = s.cols;
    long g0, span;
    if (!detail::sorted_group_span(index, s.rows, g0, span)) return false;
    if (db || dv || ds || dq) {
      const long L = (K + 1) * B;
      std::vector<double>& dt = detail::group_table(GB * L + 2 * B * K);
      double* v_acc = dt.data() + GB * L;  // [k][j]: the chains' dv sums
      double* s_acc = v_acc + B * K;       // and ds sums
      std::fill(v_acc, v_acc + 2 * B * K, 0.0);
      long r0 = 0;
      for (long gb = g0; gb < g0 + span; gb += GB) {
        const long n = std::min(GB, g0 + span - gb);
        const long ahead = gb + rowdot_prefetch_blocks * GB;
        if (ahead < s.b_rows)
          for (long k = 0; k < B; ++k) {
            const long c = c0 + k;
            for (long j = 0; j < K; ++j) {
              const long at = c * s.b_stride + j * s.b_rows + ahead;
              if (db) __builtin_prefetch(db + at, 1, 3);
              if (ds) __builtin_prefetch(b + at, 0, 3);
            }
            if (dq) __builtin_prefetch(dq + c * q_stride + ahead, 1, 3);
          }
        long next = gb;  // the first group of the block not yet in the table
        for (long r1; r0 < s.rows && index[r0] < gb + n; r0 = r1) {
          r1 = detail::run_end(index, r0, s.rows);
          const long g = index[r0];
          std::fill(dt.data() + (next - gb) * L, dt.data() + (g - gb) * L, 0.0);
          next = g + 1;
          run_sums(c0, r0, r1, dt.data() + (g - gb) * L);
        }
        std::fill(dt.data() + (next - gb) * L, dt.data() + n * L, 0.0);
        for (long k = 0; k < B; ++k) {
          const long c = c0 + k;
          for (long j = 0; j < K; ++j) {
            const double* t = dt.data() + j * B + k;
            const double scale = rowdot_scale(sc, s, c, j);
            T* dbj = db ? db + c * s.b_stride + j * s.b_rows + gb : nullptr;
            const T* bj = b + c * s.b_stride + j * s.b_rows + gb;
            double sum_v = 0, sum_s = 0;
            for (long g = 0; g < n; ++g) {
              const double tg = t[g * L];
              if (dbj) dbj[g] += static_cast<T>(tg * scale);
              sum_v += tg;
              if (ds) sum_s += tg * static_cast<double>(bj[g]);
            }
            v_acc[k * K + j] += sum_v;
            s_acc[k * K + j] += sum_s;
          }
          if (dq) {
            const double* t = dt.data() + K * B + k;
            T* dqc = dq + c * q_stride + gb;
            for (long g = 0; g < n; ++g) dqc[g] += static_cast<T>(t[g * L]);
          }
        }
      }
      for (long k = 0; k < B; ++k) {
        const long c = c0 + k;
        double total_ds = 0;
        for (long j = 0; j < K; ++j) {
          if (dv) dv[c * s.v_stride + j] += static_cast<T>(v_acc[k * K + j]);
          if (ds && !s.s_scalar) add_ds(c, j, s_acc[k * K + j]);
          total_ds += s_acc[k * K + j];
        }
        if (ds && s.s_scalar) add_ds(c, 0, total_ds);
      }
    }
    if (dp.data)
      for (long k = 0; k < B; ++k) add_dp(c0 + k);
    return true;
  }

  // One chain: the run's sums row by row with the columns inside, so that
  // the cols sums are independent additions in flight together (column by
  // column, each would wait on its own previous addition); added to db and
  // dv once per run.
  void cpu_chain(long c) const {
    std::vector<double> dv_acc(s.cols, 0.0), ds_acc(s.cols, 0.0), run(s.cols), scale(s.cols);
    const T* ac = a + c * s.a_stride;
    const T* dyc = dy + c * s.rows;
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
        add_run(c, g, run.data(), scale.data(), dv_acc.data(), ds_acc.data());
      }
      if (da)
        for (long j = 0; j < s.cols; ++j) {
          T* dcol = da + c * s.rows * s.cols + j * s.rows;
          const double wj = w(c, g, j);
          for (long r = r0; r < r1; ++r) dcol[r] += static_cast<T>(static_cast<double>(dyc[r]) * wj);
        }
    }
    finish_chain(c, dv_acc.data(), ds_acc.data());
  }
#endif

  LS_HD void operator()(int phase, const Lane& lane) const {
#if !defined(__CUDA_ARCH__)
    if (lane.count == 1) {
      if (phase == 0) cpu();  // one lane: everything in phase 0
      return;
    }
#endif
    const long items = pieces() * s.cols;  // per chain
    double tv = 0, ts = 0, tp = 0;
    if (slots() == 0) {
      for (long i = lane.index; i < chains * items; i += lane.count) {
        const long c = i / items, rest = i - c * items, piece = rest / s.cols;
        column_of_piece(c, piece, rest - piece * s.cols, tv, ts, tp);
      }
      return;
    }
    const long c = phase / 2, per_col = lane.count / s.cols;
    const long busy = per_col * s.cols;  // lanes with a column of their own
    if (per_col == 0) {  // fewer lanes than columns: partials straight to dv, ds, dp
      if (phase % 2 == 1) return;
      for (long i = lane.index; i < items; i += lane.count) {
        const long piece = i / s.cols, j = i - piece * s.cols;
        tv = ts = tp = 0;
        column_of_piece(c, piece, j, tv, ts, tp);
        if (dv) lane_add(dv + c * s.v_stride + j, static_cast<T>(tv));
        if (ds) add_ds(c, j, ts);
        if (dp_scalar() && j == 0) dp.add(c, 0, static_cast<T>(tp));
      }
      return;
    }
    if (phase % 2 == 0) {
      if (lane.index < busy) {
        const long j = lane.index % s.cols;
        for (long piece = lane.index / s.cols; piece < pieces(); piece += per_col)
          column_of_piece(c, piece, j, tv, ts, tp);
      }
      double* mine = lane.shared + static_cast<long>(lane.in_block) * slots();
      if (dv) mine[0] = tv;
      if (ds) mine[ds_slot()] = ts;
      if (dp_scalar()) mine[dp_slot()] = tp;
    } else {
      // Lane t sums column jj = t (and t + lanes_in_block, ...): the slots of
      // the block's lanes u whose column (base + u) % cols is jj.
      const long base = lane.index - lane.in_block;
      for (long jj = lane.in_block; jj < s.cols; jj += lane.lanes_in_block) {
        double sv = 0, ss = 0, sp = 0;
        bool any = false;
        for (long u = ((jj - base) % s.cols + s.cols) % s.cols; u < lane.lanes_in_block; u += s.cols) {
          if (base + u >= busy) break;
          const double* theirs = lane.shared + u * slots();
          if (dv) sv += theirs[0];
          if (ds) ss += theirs[ds_slot()];
          if (dp_scalar()) sp += theirs[dp_slot()];
          any = true;
        }
        if (!any) continue;
        if (dv) lane_add(dv + c * s.v_stride + jj, static_cast<T>(sv));
        if (ds) add_ds(c, jj, ss);
        if (dp_scalar() && jj == 0) dp.add(c, 0, static_cast<T>(sp));
      }
    }
  }

  // The lanes path's unit of work: one column j of a piece of rows_per_piece
  // consecutive rows of one chain. Its terms q = dy[r] a[r, j] are summed over
  // each run of rows of one group within the piece (the row order makes runs
  // long) and added to db once per run by an atomic, not once per row (one
  // atomic per row and column made the atomics most of a GPU's time, adjacent
  // lanes, rows of one group, queueing on the same addresses). Adjacent lanes
  // take adjacent columns, so their atomics meet rarely; a lane's reads of
  // a's column walk consecutive rows. (A lane per range of rows with every
  // column instead left too few lanes to hide a GPU's loads.)
  static constexpr long rows_per_piece = 32;
  // A body with dv or ds ends each chain with a short pass over its block's
  // slots (one or two per lane): the GPU can be filled with its lanes.
  static constexpr int blocks_per_multiprocessor = 8;
  LS_HD long pieces() const { return (s.rows + rows_per_piece - 1) / rows_per_piece; }

  // dq[index[r]] += dy[r] for rows [r0, r1) of chain c, summed per run of
  // rows of one group first (one add per run).
  LS_HD void add_dq_runs(long c, long r0, long r1) const {
    const T* dyc = dy + c * s.rows;
    double sum = 0;
    long g_run = index[r0];
    for (long r = r0; r < r1; ++r) {
      if (index[r] != g_run) {
        lane_add(dq + c * q_stride + g_run, static_cast<T>(sum));
        sum = 0;
        g_run = index[r];
      }
      sum += static_cast<double>(dyc[r]);
    }
    lane_add(dq + c * q_stride + g_run, static_cast<T>(sum));
  }

  // Column j of piece `piece` of chain c: da, a row-aligned dp and dq (with
  // the first column) directly, db per run, and the piece's dv, ds and
  // scalar dp partials added to tv, ts and tp.
  LS_HD void column_of_piece(long c, long piece, long j, double& tv, double& ts,
                             double& tp) const {
    const long r0 = piece * rows_per_piece;
    const long r1 = r0 + rows_per_piece < s.rows ? r0 + rows_per_piece : s.rows;
    const T* ac = a + c * s.a_stride;
    const T* dyc = dy + c * s.rows;
    const double scale = rowdot_scale(sc, s, c, j);
    double run = 0;
    long g_run = index[r0];
    auto flush = [&] {
      if (db) lane_add(db + c * s.b_stride + g_run + j * s.b_rows, static_cast<T>(run * scale));
      tv += run;
      if (ds) ts += run * static_cast<double>(b[c * s.b_stride + g_run + j * s.b_rows]);
      run = 0;
    };
    for (long r = r0; r < r1; ++r) {
      const long g = index[r];
      if (g != g_run) {
        flush();
        g_run = g;
      }
      // each term in T, converted once (rowdot_w)
      const T d = dyc[r];
      run += static_cast<double>(d * ac[s.a_at(r, j)]);
      if (da) da[c * s.rows * s.cols + r + j * s.rows] += d * w_t(c, g, j);
    }
    flush();
    if (dp.data && j == 0) {
      if (dp.scalar)
        for (long r = r0; r < r1; ++r) tp += static_cast<double>(dyc[r]);
      else
        for (long r = r0; r < r1; ++r) dp.add(c, r, dyc[r]);
    }
    if (dq && j == 0) add_dq_runs(c, r0, r1);
  }
};

}  // namespace lockstep

#endif
