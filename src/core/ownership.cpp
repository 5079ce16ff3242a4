// Which variables are local to a grouping of rows (ownership.hpp).
#include "lockstep/ownership.hpp"

#include <algorithm>

namespace lockstep {

namespace {

long cols_of(const Node& n) { return n.size / n.dim[0]; }

class OwnershipAnalysis {
 public:
  explicit OwnershipAnalysis(const Program& p) : p_(p), consumers_(p.nodes.size()) {
    for (size_t id = 0; id < p.nodes.size(); ++id)
      if (p.nodes[id].live)
        for (int in : p.nodes[id].inputs) consumers_[in].push_back(static_cast<int>(id));
  }

  std::vector<Grouping> run() {
    std::vector<Grouping> out;
    for (size_t id = 0; id < p_.nodes.size(); ++id) {
      const Node& n = p_.nodes[id];
      if (n.op != Op::param || !n.live || n.dim[0] < 2) continue;
      Use use;
      if (!local(static_cast<int>(id), use)) continue;
      auto same = [&](const Grouping& g) {
        return g.extent == use.extent && g.group_of_row == use.group_of_row &&
               g.groups == n.dim[0];
      };
      auto it = std::find_if(out.begin(), out.end(), same);
      if (it == out.end()) {
        out.push_back(Grouping{use.extent, use.group_of_row, n.dim[0], {}});
        it = out.end() - 1;
      }
      it->locals.push_back(static_cast<int>(id));
    }
    return out;
  }

 private:
  // The row gather a parameter's observation-stage uses share.
  struct Use {
    int extent = -1;
    std::vector<long> group_of_row;
  };

  // Whether the gather `c` (observation stage) reads `x`, G rows, one group
  // per output row; the groups into `rows`.
  bool row_gather(const Node& c, int x, std::vector<long>& rows) const {
    const Node& xn = p_.nodes[x];
    const long G = xn.dim[0];
    switch (c.op) {
      case Op::gather_rows:
        rows = c.index;
        return true;
      case Op::rowdot_rows: {
        // b (the group slopes) or q (a gathered offset), by the node's index
        const RowDotParts parts = rowdot_parts(c);
        const bool b = c.inputs[1] == x;
        const bool q = parts.q >= 0 && c.inputs[parts.q] == x;
        for (int k = 0; k < static_cast<int>(c.inputs.size()); ++k)
          if (c.inputs[k] == x && k != 1 && k != parts.q) return false;
        if (!b && !q) return false;
        rows = c.index;
        return true;
      }
      case Op::gather: {
        // one element per row, each in its own row's group
        if (cols_of(c) != 1) return false;
        rows.resize(c.index.size());
        for (size_t r = 0; r < c.index.size(); ++r) rows[r] = c.index[r] % G;
        return true;
      }
      default:
        return false;
    }
  }

  // Whether the binary node `c` keeps the rows of `x` (in `mine`) apart.
  bool rowwise_binary(const Node& c, const std::vector<char>& mine) const {
    for (int in : c.inputs) {
      if (mine[in]) continue;
      const Node& o = p_.nodes[in];
      const bool scalar = o.size == 1;
      const bool row_vector = o.dim[0] == 1 && o.size == cols_of(c);
      const bool group_data = o.op == Op::data && o.dim[0] == c.dim[0];
      if (!scalar && !row_vector && !group_data) return false;
    }
    return true;
  }

  // Whether the density `c` factorises over the groups: each input derived
  // from the parameter elementwise (`mine`), or a scalar or a value of the
  // target's size that does not depend on it at all.
  bool factorising_density(const Node& c, const std::vector<char>& mine,
                           const std::vector<char>& depends) const {
    const long target = p_.nodes[c.inputs[0]].size;
    for (int in : c.inputs) {
      const Node& o = p_.nodes[in];
      if (mine[in] && o.size == target) continue;
      if (!depends[in] && (o.size == 1 || o.size == target)) continue;
      return false;
    }
    return true;
  }

  bool local(int param, Use& use) {
    const long G = p_.nodes[param].dim[0];
    std::vector<char> mine(p_.nodes.size(), 0);  // derived from param, rows apart
    mine[param] = 1;
    std::vector<char> depends(p_.nodes.size(), 0);  // derived from param at all
    for (size_t id = static_cast<size_t>(param); id < p_.nodes.size(); ++id) {
      depends[id] = static_cast<int>(id) == param;
      for (int in : p_.nodes[id].inputs) depends[id] = depends[id] || depends[in];
    }
    bool gathered = false;
    // Program order: a node's inputs are decided before it.
    for (size_t id = static_cast<size_t>(param); id < p_.nodes.size(); ++id) {
      if (!mine[id]) continue;
      for (int c : consumers_[id]) {
        const Node& cn = p_.nodes[c];
        if (cn.extent >= 0) {
          std::vector<long> rows;
          if (!row_gather(cn, static_cast<int>(id), rows)) return false;
          if (gathered && (cn.extent != use.extent || rows != use.group_of_row)) return false;
          use.extent = cn.extent;
          use.group_of_row = std::move(rows);
          gathered = true;
          continue;
        }
        switch (op_family(cn.op)) {
          case OpFamily::unary:
            if (cn.dim[0] != G) return false;
            mine[c] = 1;
            break;
          case OpFamily::binary:
            if (cn.dim[0] != G || !rowwise_binary(cn, mine)) return false;
            mine[c] = 1;
            break;
          case OpFamily::density:
            if (!factorising_density(cn, mine, depends)) return false;
            break;
          case OpFamily::leaf:
          case OpFamily::reduce:
          case OpFamily::rowsum:
          case OpFamily::colsum:
          case OpFamily::matmul:
          case OpFamily::transpose:
          case OpFamily::gather:
          case OpFamily::gather_rows:
          case OpFamily::rowdot_rows:
          case OpFamily::logpdf:
          case OpFamily::fold:
          case OpFamily::cumulative:
          case OpFamily::concat:
          case OpFamily::linalg:
          case OpFamily::segment:
            // (a global-stage use that mixes its rows, or that this
            // analysis does not follow)
            return false;
        }
      }
    }
    return gathered;
  }

  const Program& p_;
  std::vector<std::vector<int>> consumers_;
};

}  // namespace

std::vector<Grouping> find_groupings(const Program& p) { return OwnershipAnalysis(p).run(); }

}  // namespace lockstep
