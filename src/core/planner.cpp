// The planner: chain marking and stage assignment (planner.hpp).
#include "lockstep/planner.hpp"

#include <map>
#include <vector>

namespace lockstep {

namespace {

// The families whose row-aligned nodes the stage rules below (inputs_allowed)
// and the tiled executors handle. An op that ops.def marks row-aligned in
// another family would be left global without a word: refused here instead.
constexpr bool family_has_row_rules(OpFamily f) {
  return f == OpFamily::leaf || f == OpFamily::unary || f == OpFamily::binary ||
         f == OpFamily::rowsum || f == OpFamily::matmul || f == OpFamily::gather ||
         f == OpFamily::gather_rows || f == OpFamily::rowdot_rows || f == OpFamily::density ||
         f == OpFamily::logpdf;
}
constexpr bool alignment_column_consistent() {
#define LS_OP(name, arity, family, alignment)                          \
  if (Alignment::alignment == Alignment::rows && !family_has_row_rules(OpFamily::family)) \
    return false;
#include "lockstep/ops.def"
#undef LS_OP
  return true;
}
static_assert(alignment_column_consistent(),
              "ops.def: an op marked `rows` is in a family the planner has no row rules for");

long rows_of(const Node& n) { return n.dim[0]; }

// Marks the nodes that could be row-aligned, then removes, until nothing
// changes, every node whose inputs or consumers break the rules.
class StageAssigner {
 public:
  explicit StageAssigner(Program& p)
      : p_(p), consumers_(p.nodes.size()), row_preserving_(p.nodes.size(), false) {
    // Dead nodes are never run by the tiled executor: they read nothing.
    for (size_t id = 0; id < p.nodes.size(); ++id) {
      if (p.nodes[id].live)
        for (int in : p.nodes[id].inputs) consumers_[in].push_back(static_cast<int>(id));
      if (p.nodes[id].op == Op::gather) row_preserving_[id] = gathers_within_rows(p.nodes[id]);
    }
  }

  void run() {
    // Extents: the row counts of data given a likelihood (a density, or the
    // per-element log densities of a mixture's or a joint's term).
    std::map<long, int> extent_of_rows;
    for (const Node& n : p_.nodes) {
      if (n.op != Op::density && n.op != Op::logpdf) continue;
      const Node& target = p_.nodes[n.inputs[0]];
      if (!target.chain && rows_of(target) > 1 && !extent_of_rows.count(rows_of(target))) {
        extent_of_rows[rows_of(target)] = static_cast<int>(p_.extents.size());
        p_.extents.push_back(rows_of(target));
      }
    }
    if (p_.extents.empty()) return;
    // Optimistic start: every node of an extent's row count whose op can be
    // row-aligned at all.
    for (Node& n : p_.nodes) {
      const Node& shape = n.op == Op::density ? p_.nodes[n.inputs[0]] : n;
      auto it = extent_of_rows.find(rows_of(shape));
      n.extent =
          (it != extent_of_rows.end() && n.live && may_be_row_aligned(n)) ? it->second : -1;
    }
    bool changed = true;
    while (changed) {
      changed = false;
      for (size_t id = 0; id < p_.nodes.size(); ++id) {
        Node& n = p_.nodes[id];
        if (n.extent >= 0 && !(inputs_allowed(n) && consumers_allowed(static_cast<int>(id)))) {
          n.extent = -1;
          changed = true;
        }
      }
    }
    // An extent whose every node went global has no tiles.
    std::vector<int> used(p_.extents.size(), 0), renumber(p_.extents.size(), -1);
    for (const Node& n : p_.nodes)
      if (n.extent >= 0) used[n.extent] = 1;
    std::vector<long> kept;
    for (size_t e = 0; e < p_.extents.size(); ++e)
      if (used[e]) {
        renumber[e] = static_cast<int>(kept.size());
        kept.push_back(p_.extents[e]);
      }
    p_.extents = kept;
    for (Node& n : p_.nodes)
      if (n.extent >= 0) n.extent = renumber[n.extent];
  }

 private:
  // The alignment column of ops.def.
  static bool may_be_row_aligned(const Node& n) { return op_alignment(n.op) == Alignment::rows; }

  // A gather whose output row r reads only row r of an input with as many
  // rows: a selection of columns, such as X[, 1].
  bool gathers_within_rows(const Node& n) const {
    const Node& x = p_.nodes[n.inputs[0]];
    const long rows = rows_of(n);
    if (rows_of(x) != rows) return false;
    for (long k = 0; k < n.size; ++k)
      if (n.index[k] % rows != k % rows) return false;
    return true;
  }

  bool row_aligned(int id, int extent) const { return p_.nodes[id].extent == extent; }
  bool global(int id) const { return p_.nodes[id].extent < 0; }

  bool inputs_allowed(const Node& n) const {
    const int e = n.extent;
    auto in = [&](int k) { return n.inputs[k]; };
    auto size = [&](int k) { return p_.nodes[n.inputs[k]].size; };
    switch (op_family(n.op)) {
      case OpFamily::leaf:
        // Data is row data; a parameter is part of the state: global.
        return n.op == Op::data;
      case OpFamily::unary:
        return row_aligned(in(0), e);
      case OpFamily::binary: {
        // Row-aligned operands of the output's shape or a column of it
        // (broadcast across columns); global scalars or row vectors, broadcast
        // down every row.
        bool any_rows = false;
        const long cols = n.size / n.dim[0];
        for (int k = 0; k < 2; ++k) {
          const Node& x = p_.nodes[in(k)];
          const long xcols = x.size / x.dim[0];
          if (row_aligned(in(k), e) && (xcols == cols || xcols == 1))
            any_rows = true;
          else if (!(global(in(k)) && (x.size == 1 || (x.dim[0] == 1 && xcols == cols))))
            return false;
        }
        return any_rows;
      }
      case OpFamily::rowsum:
        return row_aligned(in(0), e);
      case OpFamily::gather_rows:
        // Row r is row index[r] of a global value.
        return global(in(0));
      case OpFamily::rowdot_rows: {
        // a and the offset p row-aligned (or p a global scalar), b, the scale
        // s, the gathered offset q and the shared coefficients v global
        const RowDotParts parts = rowdot_parts(n);
        if (!row_aligned(in(0), e) || !global(in(1))) return false;
        if (parts.s >= 0 && !global(in(parts.s))) return false;
        if (parts.q >= 0 && !global(in(parts.q))) return false;
        if (parts.v >= 0 && !global(in(parts.v))) return false;
        if (parts.p >= 0 &&
            !(row_aligned(in(parts.p), e) || (global(in(parts.p)) && size(parts.p) == 1)))
          return false;
        return true;
      }
      case OpFamily::matmul:
        // (t(A) %*% B sums over A's rows: never row-aligned)
        return !n.transpose_a && row_aligned(in(0), e) && global(in(1));
      case OpFamily::gather:
        // Row r of the output reads a global input at row r's own indices, or
        // row r of a row-aligned input.
        return global(in(0)) || (row_aligned(in(0), e) && row_preserving_[&n - p_.nodes.data()]);
      case OpFamily::density:
      case OpFamily::logpdf: {
        // (a logpdf is a density's value per element: mixture() and joint()
        // build their terms from them)
        if (!row_aligned(in(0), e)) return false;
        for (size_t k = 1; k < n.inputs.size(); ++k) {
          const bool rows = row_aligned(in(k), e) && size(k) == size(0);
          const bool scalar = global(in(k)) && size(k) == 1;
          if (!rows && !scalar) return false;
        }
        return true;
      }
      LS_CASE_GLOBAL_FAMILIES:
        // (global by ops.def's alignment column: never marked row-aligned)
        return false;
    }
    return false;
  }

  // Row-aligned values exist only tile by tile: every consumer must be in the
  // observation stage of the same extent, and a value nobody reads is global.
  bool consumers_allowed(int id) const {
    const Node& n = p_.nodes[id];
    if (n.op == Op::density) return true;
    if (consumers_[id].empty()) return false;
    for (int c : consumers_[id])
      if (p_.nodes[c].extent != n.extent) return false;
    return true;
  }

  Program& p_;
  std::vector<std::vector<int>> consumers_;
  std::vector<bool> row_preserving_;
};

// With live_only, the nodes that fusion left dead (Node::live, after
// mark_live) are not counted.
std::vector<std::vector<int>> consumers_of(const Program& p, bool live_only = false) {
  std::vector<std::vector<int>> consumers(p.nodes.size());
  for (size_t id = 0; id < p.nodes.size(); ++id)
    if (!live_only || p.nodes[id].live)
      for (int in : p.nodes[id].inputs) consumers[in].push_back(static_cast<int>(id));
  return consumers;
}

// rowsum(mul(a, gather_rows(b, index))), either operand order, no broadcasting,
// the product and the gather read by nothing else: becomes
// rowdot_rows(a, b, index) in the rowsum's place. When b is itself
// mul(z, s), read by nothing but the gather, with z of b's shape and s a row
// vector of b's columns or one value (the non-centred group slopes
// sweep(z, 2, sigma, "*")), the rowdot reads z and scales it by s instead:
// rowdot_rows(a, z, s), scaled, so that b (G x cols for every chain) is never
// written, read or differentiated.
void fuse_row_dots(Program& p) {
  const auto consumers = consumers_of(p);
  auto scale_of = [&](int b, int& z, int& s) {
    const Node& mul = p.nodes[b];
    if (mul.op != Op::mul || consumers[b].size() != 1) return false;
    const long cols = mul.size / mul.dim[0];
    for (int k = 0; k < 2; ++k) {
      const Node& zn = p.nodes[mul.inputs[k]];
      const Node& sn = p.nodes[mul.inputs[1 - k]];
      const bool row_vector = sn.dim.size() == 2 && sn.dim[0] == 1 && sn.size == cols;
      if (zn.dim == mul.dim && (sn.size == 1 || row_vector) && mul.inputs[0] != mul.inputs[1]) {
        z = mul.inputs[k];
        s = mul.inputs[1 - k];
        return true;
      }
    }
    return false;
  };
  for (Node& n : p.nodes) {
    if (n.op != Op::rowsum) continue;
    const int m = n.inputs[0];
    const Node& mul = p.nodes[m];
    if (mul.op != Op::mul || consumers[m].size() != 1) continue;
    for (int k = 0; k < 2; ++k) {
      const int g = mul.inputs[k], a = mul.inputs[1 - k];
      const Node& gather = p.nodes[g];
      if (gather.op != Op::gather_rows || consumers[g].size() != 1 || g == a) continue;
      if (p.nodes[a].dim != mul.dim || gather.dim != mul.dim) continue;
      n.op = Op::rowdot_rows;
      n.inputs = {a, gather.inputs[0]};
      n.index = gather.index;
      int z = -1, s = -1;
      if (scale_of(gather.inputs[0], z, s) && z != a && s != a) {
        n.inputs = {a, z, s};
        n.scaled = true;
      }
      break;
    }
  }
}

// A row dot product fused above, added to a %*% v (the same a, v a vector of
// its columns) and possibly to an offset p (a column or a scalar), becomes one
// rowdot_rows(a, b, v[, p]) in the place of the outermost add, for the shapes
//   add(R, M),  add(R, add(P, M)),  add(M, add(P, R))   (either operand order)
// where every fused-away node is read by nothing else: the linear predictor
// alpha + X %*% beta + rowSums(X * gamma[g, ]) of a hierarchical regression
// reads X once per chain instead of twice. The fused-away nodes stay, dead,
// for tracing. Only the outermost add may hold the fused node: every input it
// needs comes earlier in the program than it does.
void fuse_linear_predictors(Program& p) {
  const auto consumers = consumers_of(p);
  auto single = [&](int id) { return consumers[id].size() == 1; };
  auto column = [&](int id) {
    const Node& n = p.nodes[id];
    return n.dim.size() == 2 && n.dim[1] == 1;
  };
  auto is_rowdot = [&](int id) {  // a rowdot with no v or p yet
    const Node& n = p.nodes[id];
    const RowDotParts parts = rowdot_parts(n);
    return n.op == Op::rowdot_rows && parts.v < 0 && parts.p < 0 && single(id);
  };
  // a %*% v with the rowdot's a, v a vector of a's columns, y a column
  auto is_linear = [&](int id, int a) {
    const Node& n = p.nodes[id];
    if (n.op != Op::matmul || n.transpose_a || !single(id) || n.inputs[0] != a || !column(id))
      return false;
    const Node& an = p.nodes[a];
    return p.nodes[n.inputs[1]].size == an.size / an.dim[0];
  };
  auto is_add = [&](int id) { return p.nodes[id].op == Op::add && single(id) && column(id); };
  for (size_t id = 0; id < p.nodes.size(); ++id) {
    Node& A = p.nodes[id];
    if (A.op != Op::add || !column(static_cast<int>(id))) continue;
    int R = -1, M = -1, P = -1;
    for (int k = 0; k < 2 && R < 0; ++k) {
      const int u = A.inputs[k], w = A.inputs[1 - k];
      if (is_rowdot(u)) {
        const int a = p.nodes[u].inputs[0];
        if (is_linear(w, a)) {
          R = u, M = w;
        } else if (is_add(w)) {
          for (int j = 0; j < 2 && R < 0; ++j)
            if (is_linear(p.nodes[w].inputs[j], a))
              R = u, M = p.nodes[w].inputs[j], P = p.nodes[w].inputs[1 - j];
        }
      } else if (p.nodes[u].op == Op::matmul && is_add(w)) {
        for (int j = 0; j < 2 && R < 0; ++j) {
          const int r = p.nodes[w].inputs[j];
          if (is_rowdot(r) && is_linear(u, p.nodes[r].inputs[0]))
            R = r, M = u, P = p.nodes[w].inputs[1 - j];
        }
      }
    }
    if (R < 0) continue;
    if (P >= 0 && !(p.nodes[P].size == 1 || (column(P) && p.nodes[P].dim[0] == A.dim[0]))) continue;
    const Node& rd = p.nodes[R];
    A.op = Op::rowdot_rows;
    A.index = rd.index;
    A.scaled = rd.scaled;
    A.inputs = rd.inputs;  // a, b and, scaled, s
    A.inputs.push_back(p.nodes[M].inputs[1]);
    if (P >= 0) A.inputs.push_back(P);
  }
}


// A row dot product's offset that is, or adds, a gather q[index] from a
// column q with the row dot product's own index and b's rows (a hierarchical
// regression's random intercept alpha_g[g], beside its slopes):
//   rowdot(a, b, ..., p = gather(q))         -> rowdot(a, b, ..., q)
//   rowdot(a, b, ..., p = add(S, gather(q)))  -> rowdot(a, b, ..., q, p = S)
// (either operand order; S a scalar or a column of the rows), where the
// gather and the add are read by nothing else. The row dot product then adds
// q[g] once per row and sums its adjoint once per run of a group, and the
// gather's and the add's passes over the rows, and their adjoints, are gone.
// Counts live readers only (the linear predictor's fusion leaves the adds it
// replaced reading the gather): mark_live first.
void fuse_gathered_offsets(Program& p) {
  const auto consumers = consumers_of(p, true);
  auto single = [&](int id) { return consumers[id].size() == 1; };
  for (Node& n : p.nodes) {
    if (n.op != Op::rowdot_rows || n.gathered) continue;
    const RowDotParts parts = rowdot_parts(n);
    if (parts.p < 0) continue;
    const Node& b = p.nodes[n.inputs[1]];
    auto is_offset_gather = [&](int id) {
      const Node& g = p.nodes[id];
      if (g.op != Op::gather || !single(id) || g.index != n.index) return false;
      const Node& q = p.nodes[g.inputs[0]];
      return q.dim.size() == 2 && q.dim[1] == 1 && q.dim[0] == b.dim[0] && g.inputs[0] != n.inputs[0];
    };
    const int P = n.inputs[parts.p];
    int q = -1, rest = -1;
    if (is_offset_gather(P)) {
      q = p.nodes[P].inputs[0];
    } else if (p.nodes[P].op == Op::add && single(P)) {
      const Node& add = p.nodes[P];
      for (int k = 0; k < 2 && q < 0; ++k) {
        const int u = add.inputs[k], w = add.inputs[1 - k];
        const Node& wn = p.nodes[w];
        const bool offset = wn.size == 1 || (wn.dim.size() == 2 && wn.dim[1] == 1 && wn.dim[0] == n.dim[0]);
        if (is_offset_gather(u) && offset && u != w) q = p.nodes[u].inputs[0], rest = w;
      }
    }
    if (q < 0) continue;
    std::vector<int> inputs(n.inputs.begin(), n.inputs.begin() + (parts.s >= 0 ? 3 : 2));
    inputs.push_back(q);
    if (parts.v >= 0) inputs.push_back(n.inputs[parts.v]);
    if (rest >= 0) {
      if (parts.v < 0) continue;  // p only after v (rowdot_parts)
      inputs.push_back(rest);
    }
    n.inputs = std::move(inputs);
    n.gathered = true;
  }
}

// t(A) %*% B, where A depends on the parameters and the transpose is read by
// nothing else: the product reads A transposed in place (Node::transpose_a)
// and the transpose is left dead, so that its copy of A and its adjoint's
// copy back are not made at every gradient (a Gaussian process's
// t(chol(K)) %*% z). The transpose of data is made once, when the executor
// is built, and stays.
void fuse_transposed_products(Program& p) {
  const auto consumers = consumers_of(p, true);
  std::vector<char> varies(p.nodes.size(), 0);  // depends on a parameter
  for (size_t id = 0; id < p.nodes.size(); ++id) {
    varies[id] = p.nodes[id].op == Op::param;
    for (int in : p.nodes[id].inputs) varies[id] = varies[id] || varies[in];
  }
  for (Node& n : p.nodes) {
    if (n.op != Op::matmul || n.transpose_a) continue;
    const int t = n.inputs[0];
    const Node& tn = p.nodes[t];
    if (tn.op != Op::transpose || consumers[t].size() != 1 || !varies[tn.inputs[0]]) continue;
    n.inputs[0] = tn.inputs[0];
    n.transpose_a = true;
  }
}

}  // namespace

// The log density is its terms plus every parameter's log Jacobian: those are
// the roots.
void mark_live(Program& p) {
  for (Node& n : p.nodes) n.live = n.op == Op::param;
  for (int t : p.terms) p.nodes[t].live = true;
  for (size_t k = p.nodes.size(); k-- > 0;)
    if (p.nodes[k].live)
      for (int in : p.nodes[k].inputs) p.nodes[in].live = true;
}

void plan(Program& p, PlanOptions options) {
  validate(p);
  if (options.fuse) {
    fuse_row_dots(p);
    fuse_linear_predictors(p);
    mark_live(p);
    fuse_gathered_offsets(p);
    mark_live(p);
    fuse_transposed_products(p);
  }
  mark_live(p);
  for (Node& n : p.nodes) {
    bool chain = n.op == Op::param || n.op == Op::density;
    for (int in : n.inputs) chain = chain || p.nodes[in].chain;
    n.chain = chain;
    n.extent = -1;
  }
  p.extents.clear();
  if (options.observation_stage) StageAssigner(p).run();
}

}  // namespace lockstep
