// A rank's slice of a program by groups (group_slice.hpp).
#include "lockstep/group_slice.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include "lockstep/planner.hpp"

namespace lockstep {

namespace {

long cols_of(const Node& n) { return n.size / n.dim[0]; }

// Which nodes of `p` a slice by `grouping` cuts to the owned groups' rows,
// and why it cannot, if it cannot.
struct SliceParts {
  std::vector<char> local;      // the local parameters and what is computed from them row by row
  std::vector<char> companion;  // group-level values read beside them (data, gathers)
  std::vector<char> local_term; // prior terms of local values
  std::vector<char> renumber;   // observation-stage gathers of local values by the grouping
  std::string why_not;
};

SliceParts find_parts(const Program& p, const Grouping& g) {
  const size_t n = p.nodes.size();
  SliceParts s;
  s.local.assign(n, 0);
  s.companion.assign(n, 0);
  s.local_term.assign(n, 0);
  s.renumber.assign(n, 0);
  const long G = g.groups;
  for (int id : g.locals) s.local[id] = 1;
  // Program order: a node's inputs are marked before it.
  for (size_t id = 0; id < n; ++id) {
    const Node& node = p.nodes[id];
    if (s.local[id]) continue;
    bool reads_local = false;
    for (int in : node.inputs) reads_local = reads_local || s.local[in];
    if (!reads_local) continue;
    if (node.extent >= 0) {
      s.renumber[id] = 1;
      continue;
    }
    switch (op_family(node.op)) {
      case OpFamily::unary:
      case OpFamily::binary:
        if (node.dim[0] != G) {
          s.why_not = std::string("a ") + op_name(node.op) + " of a local parameter changes its rows";
          return s;
        }
        s.local[id] = 1;
        break;
      case OpFamily::density:
        s.local_term[id] = 1;
        break;
      case OpFamily::leaf:
      case OpFamily::logpdf:
      case OpFamily::rowsum:
      case OpFamily::matmul:
      case OpFamily::gather:
      case OpFamily::rowdot_rows:
      case OpFamily::gather_rows:
      LS_CASE_GLOBAL_FAMILIES:
        // (ownership allows none of these in the global stage: a dead node
        // left by a fusion, which nothing runs)
        if (node.live) {
          s.why_not = std::string("a ") + op_name(node.op) + " reads a local parameter";
          return s;
        }
        break;
    }
  }
  // Group-level values read beside local ones: cut with them.
  for (size_t id = 0; id < n; ++id) {
    if (!(s.local[id] && p.nodes[id].op != Op::param) && !s.local_term[id]) continue;
    for (int in : p.nodes[id].inputs) {
      const Node& o = p.nodes[in];
      if (s.local[in] || o.dim[0] != G || o.size <= 1) continue;
      if (o.op != Op::data && o.op != Op::gather) {
        s.why_not = std::string("a group-level ") + op_name(o.op) + " is read beside a local parameter";
        return s;
      }
      s.companion[in] = 1;
    }
  }
  // A companion is cut for its local readers: it must have no other.
  for (size_t id = 0; id < n; ++id) {
    const Node& node = p.nodes[id];
    if (s.local[id] || s.local_term[id] || !node.live) continue;
    for (int in : node.inputs)
      if (s.companion[in]) {
        s.why_not = "a group-level value is read by more than local parameters' rows";
        return s;
      }
  }
  // The observation stage reads local values through the grouping's index
  // alone, and a row dot product gathers both its slopes and its offset so.
  for (size_t id = 0; id < n; ++id) {
    if (!s.renumber[id]) continue;
    const Node& node = p.nodes[id];
    switch (node.op) {
      case Op::gather_rows:
      case Op::gather:
        break;
      case Op::rowdot_rows: {
        const RowDotParts parts = rowdot_parts(node);
        const bool b = s.local[node.inputs[1]];
        const bool q = parts.q >= 0 && s.local[node.inputs[parts.q]];
        if (!b || (parts.q >= 0 && !q)) {
          s.why_not = "a row dot product gathers a local and a global value by one index";
          return s;
        }
        break;
      }
      default:
        if (node.live) {
          s.why_not = std::string("the observation stage reads a local value by ") + op_name(node.op);
          return s;
        }
        s.renumber[id] = 0;  // dead: nothing runs it
    }
  }
  return s;
}

void cut_node(Node& node, long G, long first, long end) {
  if (node.op == Op::data) node.values = cut_rows(node.values, G, first, end);
  if (node.op == Op::gather) node.index = cut_rows(node.index, G, first, end);
  node.dim[0] = end - first;
  node.size = (end - first) * (node.size / G);
}

}  // namespace

std::string why_not_sliceable(const Program& p, const Grouping& grouping) {
  return find_parts(p, grouping).why_not;
}

GroupSlice slice_groups(const Program& p, const Grouping& grouping, long first, long end,
                        bool global_terms) {
  const long G = grouping.groups;
  if (first < 0 || end > G || first > end)
    throw std::invalid_argument("slice_groups: groups [" + std::to_string(first) + ", " +
                                std::to_string(end) + ") of " + std::to_string(G));
  const SliceParts parts = find_parts(p, grouping);
  if (!parts.why_not.empty())
    throw std::invalid_argument("lockstep: the local parameters cannot be sharded: " + parts.why_not);
  for (size_t r = 0; r < grouping.group_of_row.size(); ++r) {
    const long group = grouping.group_of_row[r];
    if (group < first || group >= end)
      throw std::invalid_argument(
          "lockstep: a row of group " + std::to_string(group + 1) + " is on a rank that owns groups " +
          std::to_string(first + 1) + " to " + std::to_string(end) +
          ": each group's rows must all be on one rank (mpi_rows(n, groups = ) splits them so)");
  }
  GroupSlice out;
  out.locals = grouping.locals;
  out.first_group = first;
  out.end_group = end;
  out.program = p;
  Program& q = out.program;
  const long kept = end - first;
  for (size_t id = 0; id < q.nodes.size(); ++id) {
    Node& node = q.nodes[id];
    if (parts.local[id] || parts.companion[id]) cut_node(node, G, first, end);
    if (!parts.renumber[id]) continue;
    if (node.op == Op::gather) {
      // one element of a [G x cols] local value per element: renumbered
      for (long& k : node.index) k = (k % G - first) + (k / G) * kept;
    } else {
      for (long& k : node.index) k -= first;
    }
  }
  // The free state: the global parameters' coordinates in order, then the
  // local parameters' owned rows.
  long at = 0, covered = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (size_t id = 0; id < q.nodes.size(); ++id) {
      Node& node = q.nodes[id];
      if (node.op != Op::param || (parts.local[id] != 0) != (pass == 1)) continue;
      const Node& whole = p.nodes[id];
      if (pass == 0) {
        for (long i = 0; i < node.size; ++i) out.full_index.push_back(whole.offset + i);
      } else {
        for (long j = 0; j < cols_of(whole); ++j)
          for (long r = first; r < end; ++r) out.full_index.push_back(whole.offset + r + j * G);
      }
      covered += whole.size;
      node.offset = at;
      at += node.size;
      if (pass == 0 && !global_terms) node.jacobian = false;  // counted on the rank with them
    }
    if (pass == 0) out.n_global = at;
  }
  if (covered != p.n_free)
    throw std::invalid_argument("slice_groups: the parameters do not partition the free state");
  q.n_free = at;
  std::vector<int> terms;
  for (int t : q.terms)
    if (q.nodes[t].extent >= 0 || parts.local_term[t] || global_terms) terms.push_back(t);
  q.terms = terms;
  mark_live(q);
  return out;
}

bool depends_on_any(const Program& p, const std::vector<int>& nodes, const std::vector<int>& locals) {
  std::vector<char> needed(p.nodes.size(), 0);
  for (int id : nodes) needed.at(id) = 1;
  for (size_t k = p.nodes.size(); k-- > 0;) {
    if (!needed[k]) continue;
    if (std::find(locals.begin(), locals.end(), static_cast<int>(k)) != locals.end()) return true;
    for (int in : p.nodes[k].inputs) needed[in] = 1;
  }
  return false;
}

const Grouping* largest_sliceable_grouping(const Program& p, const std::vector<Grouping>& found,
                                           long* size) {
  const Grouping* best = nullptr;
  long best_size = 0;
  for (const Grouping& g : found) {
    long n = 0;
    for (int id : g.locals) n += p.nodes[id].size;
    if (n > best_size && why_not_sliceable(p, g).empty()) {
      best = &g;
      best_size = n;
    }
  }
  if (size) *size = best_size;
  return best;
}

std::vector<long> global_coordinates(const Program& p) {
  const std::vector<Grouping> found = find_groupings(p);
  const Grouping* best = largest_sliceable_grouping(p, found);
  std::vector<long> out;
  if (!best) return out;
  for (size_t id = 0; id < p.nodes.size(); ++id) {
    const Node& node = p.nodes[id];
    if (node.op != Op::param ||
        std::find(best->locals.begin(), best->locals.end(), static_cast<int>(id)) != best->locals.end())
      continue;
    for (long i = 0; i < node.size; ++i) out.push_back(node.offset + i);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<long> balanced_group_bounds(const std::vector<long>& group_of_row, long groups,
                                        int shards) {
  if (shards < 1) throw std::invalid_argument("balanced_group_bounds: shards must be at least 1");
  std::vector<long> before(groups + 1, 0);  // rows in groups < g
  for (long g : group_of_row) {
    if (g < 0 || g >= groups) throw std::invalid_argument("balanced_group_bounds: a group out of range");
    ++before[g + 1];
  }
  std::partial_sum(before.begin(), before.end(), before.begin());
  const long rows = static_cast<long>(group_of_row.size());
  std::vector<long> bounds(shards + 1, groups);
  bounds[0] = 0;
  for (int s = 1; s < shards; ++s) {
    const long target = rows * s / shards;
    // the group boundary nearest the target row
    long g = std::lower_bound(before.begin(), before.end(), target) - before.begin();
    if (g > 0 && target - before[g - 1] < before[g] - target) --g;
    bounds[s] = std::max(bounds[s - 1], std::min(g, groups));
  }
  return bounds;
}

}  // namespace lockstep
