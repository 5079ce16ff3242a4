// Shards of a program's observation rows (shards.hpp).
#include "lockstep/shards.hpp"

#include "lockstep/planner.hpp"

#include <stdexcept>
#include <string>

namespace lockstep {

namespace {

// Keeps only the terms `keep` says to keep, and marks live what the kept
// ones need (mark_live: the nodes the planner's fusions left dead stay dead,
// since nothing live reads them). A term left out stays in the program as a
// dead density node, which executors skip (validate() would refuse it: the
// program is for running, not for planning again).
template <class Keep> void keep_terms(Program& p, Keep keep) {
  std::vector<int> terms;
  for (int t : p.terms)
    if (keep(p.nodes[t])) terms.push_back(t);
  p.terms = terms;
  mark_live(p);
}

// Cuts node `n` of extent `rows` rows to rows [first, last).
void slice_rows(Node& n, const Program& p, long rows, long first, long last) {
  if (n.dim.empty() || n.dim[0] != rows)
    throw std::logic_error(std::string("shard_program: a row-aligned ") + op_name(n.op) +
                           " node without its extent's rows (" + std::to_string(n.dim[0]) + ", " + std::to_string(rows) + ")");
  const long cols = n.size / rows, kept = last - first;
  switch (op_family(n.op)) {
    case OpFamily::leaf:  // (data: a parameter is never row-aligned)
      n.values = cut_rows(n.values, rows, first, last);
      break;
    case OpFamily::gather_rows:
    case OpFamily::rowdot_rows:  // one input row per row
      n.index = std::vector<long>(n.index.begin() + first, n.index.begin() + last);
      break;
    case OpFamily::gather: {  // one flat index per element
      // A gather within rows (the planner's only row-aligned gather from a
      // row-aligned input) reads its own row r of the input: renumbered.
      const bool within = p.nodes[n.inputs[0]].extent == n.extent;
      std::vector<long> index = cut_rows(n.index, rows, first, last);
      if (within)
        for (long& k : index) {
          const long r = k % rows;
          if (r < first || r >= last) throw std::logic_error("shard_program: a gather across rows");
          k = (r - first) + (k / rows) * kept;
        }
      n.index = std::move(index);
      break;
    }
    case OpFamily::unary:
    case OpFamily::binary:
    case OpFamily::rowsum:
    case OpFamily::matmul:
    case OpFamily::density:
    case OpFamily::logpdf:
      // (no per-row attributes: their values are cut as the inputs' are)
      if (!n.index.empty() || !n.values.empty())
        throw std::logic_error(std::string("shard_program: cannot cut the rows of a ") +
                               op_name(n.op) + " node");
      break;
    LS_CASE_GLOBAL_FAMILIES:
      throw std::logic_error(std::string("shard_program: a ") + op_name(n.op) +
                             " node is never row-aligned (ops.def)");
  }
  n.dim[0] = kept;
  n.size = kept * cols;
}

}  // namespace

long shard_first_row(long rows, int shard, int shards) {
  // rows * shard fits a long for any row count an extent can have
  return rows * shard / shards;
}

Program rows_program(const Program& p, const std::vector<std::pair<long, long>>& rows) {
  const int extents = static_cast<int>(p.extents.size());
  if (static_cast<int>(rows.size()) != extents)
    throw std::invalid_argument("rows_program: " + std::to_string(rows.size()) + " row ranges for " +
                                std::to_string(extents) + " extents");
  Program out = p;
  std::vector<char> empty(extents, 0);
  for (int e = 0; e < extents; ++e) {
    const long first = rows[e].first, last = rows[e].second;
    if (first < 0 || last > p.extents[e] || first > last)
      throw std::invalid_argument("rows_program: rows [" + std::to_string(first) + ", " +
                                  std::to_string(last) + ") of " + std::to_string(p.extents[e]));
    empty[e] = last == first;
    if (empty[e] || (first == 0 && last == p.extents[e])) continue;
    for (Node& n : out.nodes)  // (a term's value is one per chain, not per row)
      if (n.extent == e && n.op != Op::density) slice_rows(n, p, p.extents[e], first, last);
    out.extents[e] = last - first;
  }
  keep_terms(out, [&](const Node& t) { return t.extent < 0 || !empty[t.extent]; });
  // An extent without rows here goes: its nodes, whole and now dead, join the
  // global stage (where nothing runs them), and the later extents move down.
  std::vector<int> renumbered(extents, -1);
  std::vector<long> kept;
  for (int e = 0; e < extents; ++e)
    if (!empty[e]) {
      renumbered[e] = static_cast<int>(kept.size());
      kept.push_back(out.extents[e]);
    }
  out.extents = kept;
  for (Node& n : out.nodes)
    if (n.extent >= 0) n.extent = renumbered[n.extent];
  return out;
}

Program shard_program(const Program& p, int shard, int shards) {
  if (shards < 1 || shard < 0 || shard >= shards)
    throw std::invalid_argument("shard_program: shard " + std::to_string(shard) + " of " +
                                std::to_string(shards));
  if (shards == 1) return p;
  std::vector<std::pair<long, long>> rows;
  for (long r : p.extents)
    rows.emplace_back(shard_first_row(r, shard, shards), shard_first_row(r, shard + 1, shards));
  Program out = rows_program(p, rows);
  if (shard > 0) keep_terms(out, [](const Node& t) { return t.extent >= 0; });
  return out;
}

Program without_global_terms(const Program& p) {
  Program out = p;
  keep_terms(out, [](const Node& t) { return t.extent >= 0; });
  return out;
}

void check_rows_split(const Program& p) {
  auto refuse = [](long rows) {
    throw std::invalid_argument(
        "lockstep: across processes, every likelihood must be row-aligned with its data (a "
        "likelihood of data with " + std::to_string(rows) + " rows could not be split by rows)");
  };
  // the per-element log densities of data a global term is computed from
  // (mixture() and joint() build their terms from them), found by a walk
  // back from the global terms
  std::vector<char> read(p.nodes.size(), 0);
  for (int t : p.terms) {
    if (p.nodes[t].extent >= 0) continue;
    const Node& target = p.nodes[p.nodes[t].inputs[0]];
    if (!target.chain && target.dim[0] > 1) refuse(target.dim[0]);
    read[t] = 1;
  }
  for (size_t k = p.nodes.size(); k-- > 0;) {
    if (!read[k]) continue;
    const Node& n = p.nodes[k];
    if (n.op == Op::logpdf) {
      const Node& target = p.nodes[n.inputs[0]];
      if (!target.chain && target.dim[0] > 1) refuse(target.dim[0]);
    }
    for (int in : n.inputs) read[in] = 1;
  }
}

Program rank_program(const Program& p, int rank) {
  check_rows_split(p);
  return rank == 0 ? p : without_global_terms(p);
}

ExecOptions shard_options(ExecOptions options, int shard) {
  if (shard > 0) options.jacobian = false;
  return options;
}

template <class T>
std::unique_ptr<ShardedTarget> ShardedTarget::make(const Program& p, long chains,
                                                   const ExecOptions& options, int shards) {
  if (options.backend == Backend::cuda)
    throw std::invalid_argument("ShardedTarget runs the cpu and emulated backends");
  std::unique_ptr<ShardedTarget> t(new ShardedTarget(p.n_free, chains));
  for (int s = 0; s < shards; ++s) {
    t->programs_.push_back(std::make_unique<Program>(shard_program(p, s, shards)));
    t->targets_.push_back(
        std::make_unique<Executor<T>>(*t->programs_.back(), chains, shard_options(options, s)));
  }
  return t;
}

template std::unique_ptr<ShardedTarget> ShardedTarget::make<double>(const Program&, long,
                                                                    const ExecOptions&, int);
template std::unique_ptr<ShardedTarget> ShardedTarget::make<float>(const Program&, long,
                                                                   const ExecOptions&, int);

void ShardedTarget::log_density(const double* state, double* lp, double* grad) {
  targets_[0]->log_density(state, lp, grad);
  const long n = chains_ * dim_;
  lp_.resize(chains_);
  if (grad) grad_.resize(n);
  for (size_t s = 1; s < targets_.size(); ++s) {
    targets_[s]->log_density(state, lp_.data(), grad ? grad_.data() : nullptr);
    for (long c = 0; c < chains_; ++c) lp[c] += lp_[c];
    if (grad)
      for (long k = 0; k < n; ++k) grad[k] += grad_[k];
  }
}

}  // namespace lockstep
