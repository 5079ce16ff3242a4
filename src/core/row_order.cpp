// Row order of the observation extents (row_order.hpp).
#include "lockstep/row_order.hpp"

#include <algorithm>
#include <numeric>

namespace lockstep {

namespace {

// The gather whose index orders the extent's rows: the one from the largest
// global value (nullptr: none, the rows keep their order).
const Node* order_key(const Program& p, int extent) {
  const Node* key = nullptr;
  // the value a gather reads from (rowdot_rows: its b)
  auto source = [&](const Node& x) {
    return p.nodes[x.op == Op::rowdot_rows ? x.inputs[1] : x.inputs[0]];
  };
  for (const Node& n : p.nodes) {
    if (n.extent != extent || !n.chain) continue;
    // gather's first rows' indices and gather_rows' indices both address
    // row r's first element; a selection within rows is no key
    const bool gathers = n.op == Op::gather || n.op == Op::gather_rows || n.op == Op::rowdot_rows;
    if (gathers && source(n).extent < 0 && (!key || source(n).size > source(*key).size)) key = &n;
  }
  return key;
}

}  // namespace

std::vector<long> row_order(const Program& p, int extent) {
  const long rows = p.extents[extent];
  std::vector<long> perm(rows);
  std::iota(perm.begin(), perm.end(), 0L);
  if (const Node* key = order_key(p, extent)) {
    const std::vector<long>& index = key->index;
    std::stable_sort(perm.begin(), perm.end(), [&](long a, long b) { return index[a] < index[b]; });
  }
  return perm;
}

bool rows_in_order(const Program& p, int extent) {
  const Node* key = order_key(p, extent);
  return !key || std::is_sorted(key->index.begin(), key->index.begin() + p.extents[extent]);
}

Program with_rows_ordered(const Program& p) {
  Program out = p;
  for (size_t e = 0; e < p.extents.size(); ++e) {
    const long rows = p.extents[e];
    const std::vector<long> perm = row_order(p, static_cast<int>(e));
    std::vector<long> inverse(rows);
    for (long r = 0; r < rows; ++r) inverse[perm[r]] = r;
    for (size_t id = 0; id < p.nodes.size(); ++id) {
      const Node& n = p.nodes[id];
      Node& m = out.nodes[id];
      if (n.extent != static_cast<int>(e)) continue;
      const long cols = n.size / n.dim[0];
      if (n.op == Op::data) {
        double* to = m.values.mutable_data();  // (the reordered copy is the program's own)
        for (long j = 0; j < cols; ++j)
          for (long r = 0; r < rows; ++r) to[r + j * rows] = n.values[perm[r] + j * rows];
      } else if (n.op == Op::gather_rows || n.op == Op::rowdot_rows) {
        for (long r = 0; r < rows; ++r) m.index[r] = n.index[perm[r]];
      } else if (n.op == Op::gather) {
        // one index per element; a row-aligned input's row r is now row inverse[r]
        const bool within = p.nodes[n.inputs[0]].extent == static_cast<int>(e);
        for (long j = 0; j < cols; ++j)
          for (long r = 0; r < rows; ++r) {
            const long k = n.index[perm[r] + j * rows];
            m.index[r + j * rows] = within ? inverse[k % rows] + k / rows * rows : k;
          }
      }
    }
  }
  return out;
}

}  // namespace lockstep
