// Names and structural checks of the IR (ir.hpp).
#include "lockstep/ir.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

namespace lockstep {

const char* op_name(Op op) {
  switch (op) {
#define LS_OP(name, arity, family, alignment) case Op::name: return #name;
#include "lockstep/ops.def"
#undef LS_OP
  }
  return "?";
}

int op_arity(Op op) {
  switch (op) {
#define LS_OP(name, arity, family, alignment) case Op::name: return arity;
#include "lockstep/ops.def"
#undef LS_OP
  }
  return 0;
}

Op op_from_name(const std::string& name) {
#define LS_OP(n, arity, family, alignment) if (name == #n) return Op::n;
#include "lockstep/ops.def"
#undef LS_OP
  throw std::invalid_argument("unknown op '" + name + "'");
}

const char* family_name(Family f) {
  switch (f) {
#define LS_DIST(name, n_params, continuous, tile) case Family::name: return #name;
#include "lockstep/distributions.def"
#undef LS_DIST
  }
  return "?";
}

int family_n_params(Family f) {
  switch (f) {
#define LS_DIST(name, n_params, continuous, tile) case Family::name: return n_params;
#include "lockstep/distributions.def"
#undef LS_DIST
  }
  return 0;
}

bool family_continuous(Family f) {
  switch (f) {
#define LS_DIST(name, n_params, continuous, tile) case Family::name: return continuous;
#include "lockstep/distributions.def"
#undef LS_DIST
  }
  return false;
}

Family family_from_name(const std::string& name) {
#define LS_DIST(n, n_params, continuous, tile) if (name == #n) return Family::n;
#include "lockstep/distributions.def"
#undef LS_DIST
  throw std::invalid_argument("unknown distribution '" + name + "'");
}

Transform transform_from_name(const std::string& name) {
  if (name == "none") return Transform::none;
  if (name == "lower") return Transform::lower;
  if (name == "upper") return Transform::upper;
  if (name == "interval") return Transform::interval;
  throw std::invalid_argument("unknown transform '" + name + "'");
}

std::vector<long> segment_layout(const std::vector<long>& group, long groups) {
  const long rows = static_cast<long>(group.size());
  std::vector<long> out(group);
  out.resize(rows + groups + 1, 0);
  long* offsets = out.data() + rows;
  for (long g : group) {
    if (g < -1 || g >= groups)
      throw std::invalid_argument("segment_layout: group " + std::to_string(g) +
                                  " outside -1 .. " + std::to_string(groups - 1));
    if (g >= 0) ++offsets[g + 1];
  }
  for (long g = 0; g < groups; ++g) offsets[g + 1] += offsets[g];
  // a counting sort, stable: each group's rows stay in increasing order
  const long kept = offsets[groups];
  std::vector<long> next(offsets, offsets + groups);
  out.resize(rows + groups + 1 + kept);
  long* sorted = out.data() + rows + groups + 1;
  for (long r = 0; r < rows; ++r)
    if (group[r] >= 0) sorted[next[group[r]]++] = r;
  return out;
}

namespace {

[[noreturn]] void fail(size_t id, const Node& n, const std::string& what) {
  throw std::invalid_argument("node " + std::to_string(id) + " (" + op_name(n.op) + "): " + what);
}

// A segment node's index is the layout segment_layout() gives for its groups
// (the output's rows) and the input's rows: the kernels trust it.
void check_segment_layout(size_t id, const Node& n, long rows, long groups) {
  const std::vector<long>& index = n.index;
  if (static_cast<long>(index.size()) < rows + groups + 1)
    fail(id, n, "the grouping needs a group per input row and the group offsets");
  const std::vector<long> group(index.begin(), index.begin() + rows);
  std::vector<long> expected;
  try {
    expected = segment_layout(group, groups);
  } catch (const std::invalid_argument&) {
    fail(id, n, "a group outside -1 .. " + std::to_string(groups - 1));
  }
  if (expected != index) fail(id, n, "the grouping is not in segment_layout()'s layout");
}

long product(const std::vector<long>& dim) {
  long s = 1;
  for (long d : dim) s *= d;
  return s;
}

// A density's or logpdf's inputs (the target, then the family's parameters,
// each a scalar or the target's size) and truncation.
template <class InSize> void check_distribution(size_t id, const Node& n, InSize in_size) {
  const int k = family_n_params(n.family);
  if (static_cast<int>(n.inputs.size()) != k + 1)
    fail(id, n, std::string(family_name(n.family)) + " needs the target and " +
                    std::to_string(k) + " parameters");
  const long target = in_size(0);
  for (int j = 1; j <= k; ++j)
    if (in_size(j) != 1 && in_size(j) != target)
      fail(id, n, "parameter " + std::to_string(j) + " must be a scalar or match the target");
  if (!(n.trunc_lower < n.trunc_upper)) fail(id, n, "truncation needs lower < upper");
  if (!family_continuous(n.family) && !(std::isinf(n.trunc_lower) && std::isinf(n.trunc_upper)))
    fail(id, n, "a discrete distribution cannot be truncated");
}

}  // namespace

void validate(const Program& p) {
  if (p.n_free < 0) throw std::invalid_argument("program: negative number of free parameters");
  for (size_t id = 0; id < p.nodes.size(); ++id) {
    const Node& n = p.nodes[id];
    if (n.dim.size() < 2) fail(id, n, "a shape needs at least two dimensions");
    for (long d : n.dim)
      if (d < 1) fail(id, n, "every dimension must be at least 1");
    if (n.size != product(n.dim)) fail(id, n, "size does not match dim");
    const int arity = op_arity(n.op);
    if (arity >= 0 && static_cast<int>(n.inputs.size()) != arity)
      fail(id, n, "expected " + std::to_string(arity) + " inputs, got " +
                      std::to_string(n.inputs.size()));
    for (int in : n.inputs) {
      if (in < 0 || static_cast<size_t>(in) >= id) fail(id, n, "inputs must come earlier in the program");
      if (p.nodes[in].op == Op::density) fail(id, n, "a density term cannot be an input");
    }
    auto in_size = [&](int k) { return p.nodes[n.inputs[k]].size; };
    // Values are rows x cols: rows = dim[0], cols = size / rows (ops.def).
    auto in_rows = [&](int k) { return p.nodes[n.inputs[k]].dim[0]; };
    auto in_cols = [&](int k) { return in_size(k) / in_rows(k); };
    const long rows = n.dim[0], cols = n.size / rows;
    switch (op_family(n.op)) {
      case OpFamily::leaf:
        if (n.op == Op::data && static_cast<long>(n.values.size()) != n.size)
          fail(id, n, "data has " + std::to_string(n.values.size()) + " values for " +
                          std::to_string(n.size) + " elements");
        if (n.op == Op::param) {
          if (n.offset < 0 || n.offset + n.size > p.n_free) fail(id, n, "slice outside the free state");
          if (n.transform == Transform::interval && !(n.lower < n.upper))
            fail(id, n, "interval needs lower < upper");
        }
        break;
      case OpFamily::unary:
        if (in_size(0) != n.size) fail(id, n, "output size differs from input size");
        break;
      case OpFamily::binary: {
        // Each operand is the output's shape, a scalar, a row vector (1 x cols)
        // or a column vector (rows x 1), and the output is the shape they
        // broadcast to (an R x 1 and a 1 x C operand give R x C).
        long need_rows = 1, need_cols = 1;
        for (int k = 0; k < 2; ++k) {
          const long r = in_rows(k), c = in_cols(k);
          const bool fits = (r == rows && c == cols) || (r == 1 && c == 1) ||
                            (r == 1 && c == cols) || (c == 1 && r == rows);
          if (!fits)
            fail(id, n, "operand " + std::to_string(k + 1) + " (" + std::to_string(r) + " x " +
                            std::to_string(c) + ") cannot be broadcast to " +
                            std::to_string(rows) + " x " + std::to_string(cols));
          need_rows = r > need_rows ? r : need_rows;
          need_cols = c > need_cols ? c : need_cols;
        }
        if (need_rows != rows || need_cols != cols)
          fail(id, n, "output shape is not the broadcast shape of its operands");
        break;
      }
      case OpFamily::reduce:
        if (n.size != 1) fail(id, n, "a sum has one element");
        break;
      case OpFamily::rowsum:
        if (n.dim[0] != in_rows(0) || n.size != in_rows(0))
          fail(id, n, "row sums of " + std::to_string(in_rows(0)) + " rows are " +
                          std::to_string(in_rows(0)) + " x 1");
        break;
      case OpFamily::colsum:
        if (n.size != in_cols(0))
          fail(id, n, "column sums of " + std::to_string(in_cols(0)) + " columns have " +
                          std::to_string(in_cols(0)) + " elements");
        break;
      case OpFamily::transpose: {
        const Node& a = p.nodes[n.inputs[0]];
        if (a.dim.size() != 2 || n.dim.size() != 2)
          fail(id, n, "transpose needs a two-dimensional input");
        if (n.dim[0] != a.dim[1] || n.dim[1] != a.dim[0]) fail(id, n, "wrong output shape");
        break;
      }
      case OpFamily::rowdot_rows: {
        const int least = 2 + (n.scaled ? 1 : 0) + (n.gathered ? 1 : 0), most = least + 2;
        if (static_cast<int>(n.inputs.size()) < least || static_cast<int>(n.inputs.size()) > most)
          fail(id, n, "a row dot product " + std::string(n.scaled ? "scaled " : "") +
                          std::string(n.gathered ? "with a gathered offset " : "") + "has " +
                          std::to_string(least) + " to " + std::to_string(most) + " inputs");
        const RowDotParts parts = rowdot_parts(n);
        if (parts.q >= 0 && !(in_cols(parts.q) == 1 && in_rows(parts.q) == in_rows(1)))
          fail(id, n, "the gathered offset must be a column with one value per row of b");
        if (cols != 1) fail(id, n, "a row dot product has one column");
        if (parts.s >= 0 && in_size(parts.s) != 1 &&
            !(in_rows(parts.s) == 1 && in_cols(parts.s) == in_cols(0)))
          fail(id, n, "the scale must be one value or one value per column");
        if (parts.v >= 0 && in_size(parts.v) != in_cols(0))
          fail(id, n, "the shared coefficients need one value per column");
        if (parts.p >= 0 && in_size(parts.p) != 1 && !(in_rows(parts.p) == rows && in_cols(parts.p) == 1))
          fail(id, n, "the offset must be a scalar or one value per row");
        if (in_rows(0) != rows) fail(id, n, "the left operand must have the output's rows");
        if (in_cols(1) != in_cols(0)) fail(id, n, "operands must have as many columns");
        if (static_cast<long>(n.index.size()) != rows) fail(id, n, "one index per output row");
        for (long i : n.index)
          if (i < 0 || i >= in_rows(1)) fail(id, n, "row index out of range");
        break;
      }
      case OpFamily::gather_rows:
        if (cols != in_cols(0))
          fail(id, n, "output has " + std::to_string(cols) + " columns, input " +
                          std::to_string(in_cols(0)));
        if (static_cast<long>(n.index.size()) != rows) fail(id, n, "one index per output row");
        for (long i : n.index)
          if (i < 0 || i >= in_rows(0)) fail(id, n, "row index out of range");
        break;
      case OpFamily::matmul: {
        const Node& a = p.nodes[n.inputs[0]];
        const Node& b = p.nodes[n.inputs[1]];
        if (a.dim.size() != 2 || b.dim.size() != 2 || n.dim.size() != 2)
          fail(id, n, "matrix product needs two-dimensional operands");
        // (a transposed in place: its rows are the product's inner extent)
        const long a_rows = n.transpose_a ? a.dim[1] : a.dim[0];
        const long a_cols = n.transpose_a ? a.dim[0] : a.dim[1];
        if (a_cols != b.dim[0]) fail(id, n, "non-conformable operands");
        if (n.dim[0] != a_rows || n.dim[1] != b.dim[1]) fail(id, n, "wrong output shape");
        break;
      }
      case OpFamily::gather:
        if (static_cast<long>(n.index.size()) != n.size) fail(id, n, "one index per output element");
        for (long i : n.index)
          if (i < 0 || i >= in_size(0)) fail(id, n, "index out of range");
        break;
      case OpFamily::fold:
        if (n.size != 1) fail(id, n, std::string("a ") + op_name(n.op) + " has one element");
        break;
      case OpFamily::cumulative:
        if (n.size != in_size(0)) fail(id, n, "output size differs from input size");
        break;
      case OpFamily::concat:
        if (n.size != in_size(0) + in_size(1))
          fail(id, n, "output has " + std::to_string(n.size) + " elements, the operands " +
                          std::to_string(in_size(0)) + " and " + std::to_string(in_size(1)));
        break;
      case OpFamily::linalg: {
        const Node& a = p.nodes[n.inputs[0]];
        if (a.dim.size() != 2 || a.dim[0] != a.dim[1])
          fail(id, n, "the first operand must be a square matrix");
        if (n.dim.size() != 2) fail(id, n, "the output must be two-dimensional");
        if (n.op == Op::eigen) {  // values and vectors side by side
          if (n.dim[0] != a.dim[0] || n.dim[1] != a.dim[0] + 1)
            fail(id, n, "the output must be n x (n + 1) for an n x n input");
        } else if (n.inputs.size() == 1) {  // chol, chol2inv
          if (n.dim != a.dim) fail(id, n, "the output must have the input's shape");
        } else {  // the solves: n x k right-hand side, n x k output
          const Node& b = p.nodes[n.inputs[1]];
          if (b.dim.size() != 2 || b.dim[0] != a.dim[0])
            fail(id, n, "the right-hand side must have " + std::to_string(a.dim[0]) + " rows");
          if (n.dim != b.dim) fail(id, n, "the output must have the right-hand side's shape");
        }
        break;
      }
      case OpFamily::segment:
        if (cols != in_cols(0))
          fail(id, n, "the output must be groups x " + std::to_string(in_cols(0)));
        check_segment_layout(id, n, in_rows(0), rows);
        break;
      case OpFamily::density:
        check_distribution(id, n, in_size);
        if (n.size != 1) fail(id, n, "a density term has one element");
        break;
      case OpFamily::logpdf: {
        check_distribution(id, n, in_size);
        // log_jacobian and target are terms of the log density, not families
        // with a density of their own
        if (family_n_params(n.family) == 0)
          fail(id, n, std::string(family_name(n.family)) + " has no elementwise log density");
        if (n.dim != p.nodes[n.inputs[0]].dim) fail(id, n, "the output must have the target's shape");
        break;
      }
    }
  }
  // The executor fuses each density's gradient into its forward pass, so the
  // log density must be exactly the sum of the density nodes, each once.
  std::vector<int> listed(p.nodes.size(), 0);
  for (int t : p.terms) {
    if (t < 0 || static_cast<size_t>(t) >= p.nodes.size() || p.nodes[t].op != Op::density)
      throw std::invalid_argument("program: terms must be density nodes");
    if (++listed[t] > 1) throw std::invalid_argument("program: a term is listed twice");
  }
  for (size_t id = 0; id < p.nodes.size(); ++id)
    if (p.nodes[id].op == Op::density && listed[id] == 0)
      fail(id, p.nodes[id], "a density node must be one of the program's terms");
}

Program subprogram(const Program& p, const std::vector<int>& outputs, std::vector<int>* ids) {
  std::vector<char> keep(p.nodes.size(), 0);
  for (int o : outputs) {
    if (o < 0 || static_cast<size_t>(o) >= p.nodes.size())
      throw std::invalid_argument("subprogram: node id out of range");
    keep[o] = 1;
  }
  for (size_t k = p.nodes.size(); k-- > 0;)
    if (keep[k])
      for (int in : p.nodes[k].inputs) keep[in] = 1;
  std::vector<int> renumber(p.nodes.size(), -1);
  Program q;
  q.n_free = p.n_free;
  for (size_t k = 0; k < p.nodes.size(); ++k) {
    if (!keep[k]) continue;
    Node n = p.nodes[k];
    for (int& in : n.inputs) in = renumber[in];
    renumber[k] = q.add(std::move(n));
  }
  if (ids) {
    ids->clear();
    for (int o : outputs) ids->push_back(renumber[o]);
  }
  return q;
}

}  // namespace lockstep
