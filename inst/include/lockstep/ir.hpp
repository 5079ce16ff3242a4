// The IR: a Program is a topologically ordered list of nodes (DESIGN.md, "The IR").
// Values are column-major like R; a node that carries the chain dimension holds
// C copies of its value, chain-major ([C, size]).
#ifndef LOCKSTEP_IR_HPP
#define LOCKSTEP_IR_HPP

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace lockstep {

enum class Op : int {
#define LS_OP(name, arity, family, alignment) name,
#include "ops.def"
#undef LS_OP
};

// The family column of ops.def, so that dispatch code can select one family.
enum class OpFamily : int {
  leaf, unary, binary, reduce, rowsum, colsum, matmul, transpose, gather, gather_rows,
  rowdot_rows, density, logpdf, fold, cumulative, concat, linalg, segment
};

// The families that are never row-aligned (every op of theirs is `global` in
// ops.def) and those whose ops may be, as case labels: a switch over OpFamily
// that treats one set alike names it once, and stays exhaustive (a new family
// goes in one set or gets a case of its own, or -Werror=switch fails).
#define LS_CASE_GLOBAL_FAMILIES                                                          \
  case OpFamily::reduce:                                                                 \
  case OpFamily::colsum:                                                                 \
  case OpFamily::transpose:                                                              \
  case OpFamily::fold:                                                                   \
  case OpFamily::cumulative:                                                             \
  case OpFamily::concat:                                                                 \
  case OpFamily::linalg:                                                                 \
  case OpFamily::segment
#define LS_CASE_ROW_FAMILIES                                                             \
  case OpFamily::unary:                                                                  \
  case OpFamily::binary:                                                                 \
  case OpFamily::rowsum:                                                                 \
  case OpFamily::matmul:                                                                 \
  case OpFamily::gather:                                                                 \
  case OpFamily::gather_rows:                                                            \
  case OpFamily::rowdot_rows:                                                            \
  case OpFamily::density:                                                                \
  case OpFamily::logpdf

constexpr OpFamily op_family(Op op) {
  switch (op) {
#define LS_OP(name, arity, family, alignment) case Op::name: return OpFamily::family;
#include "ops.def"
#undef LS_OP
  }
  return OpFamily::leaf;
}

// The alignment column of ops.def: whether a node of the op may be row-aligned
// with an observation extent (the planner's optimistic start; its inputs and
// consumers then decide), or always runs in the global stage.
enum class Alignment : int { rows, global };

constexpr Alignment op_alignment(Op op) {
  switch (op) {
#define LS_OP(name, arity, family, alignment) case Op::name: return Alignment::alignment;
#include "ops.def"
#undef LS_OP
  }
  return Alignment::global;
}

constexpr int op_count = 0
#define LS_OP(name, arity, family, alignment) +1
#include "ops.def"
#undef LS_OP
    ;

enum class Family : int {
#define LS_DIST(name, n_params, continuous, tile) name,
#include "distributions.def"
#undef LS_DIST
};

// The tile column of distributions.def: whether the GPU's tile kernel holds
// the family's code (LinearTileKernels, tile_kernel.hpp).
constexpr bool family_in_gpu_tile_kernel(Family f) {
  switch (f) {
#define LS_DIST(name, n_params, continuous, tile) case Family::name: return tile;
#include "distributions.def"
#undef LS_DIST
  }
  return false;
}

// Constraint transforms of a parameter slice, as greta defines them:
//   none      x = z
//   lower     x = lower + exp(z)
//   upper     x = upper - exp(z)
//   interval  x = lower + (upper - lower) * ilogit(z)
enum class Transform : int { none, lower, upper, interval };

const char* op_name(Op op);
int op_arity(Op op);
Op op_from_name(const std::string& name);
const char* family_name(Family f);
int family_n_params(Family f);
bool family_continuous(Family f);
Family family_from_name(const std::string& name);
Transform transform_from_name(const std::string& name);

// A data node's values: its own, or borrowed from memory that another owner
// keeps (R's vector of the user's data: the engine need not copy a 10^8-row
// column, issue 50), kept alive by `keep` for as long as any copy of the node
// borrows it. Read like a const std::vector<double>; writing goes through
// mutable_data(), which first copies borrowed values into the node's own
// (copy on write), so a node never writes to the user's memory.
class DataValues {
 public:
  using value_type = double;
  DataValues() = default;
  DataValues(std::vector<double> v) : own_(std::move(v)) {}  // NOLINT: a vector is values
  DataValues(std::initializer_list<double> v) : own_(v) {}
  DataValues& operator=(std::vector<double> v) {
    own_ = std::move(v);
    drop_borrowed();
    return *this;
  }
  DataValues& operator=(std::initializer_list<double> v) { return *this = std::vector<double>(v); }
  // n values at `p`, alive while `keep` is (nullptr: the caller keeps them
  // alive longer than every copy)
  static DataValues borrow(const double* p, size_t n, std::shared_ptr<const void> keep) {
    DataValues v;
    v.borrowed_ = p;
    v.n_ = n;
    v.keep_ = std::move(keep);
    return v;
  }
  size_t size() const { return borrowed_ ? n_ : own_.size(); }
  bool empty() const { return size() == 0; }
  bool borrowed() const { return borrowed_ != nullptr; }
  const double* data() const { return borrowed_ ? borrowed_ : own_.data(); }
  const double* begin() const { return data(); }
  const double* end() const { return data() + size(); }
  const double& operator[](size_t i) const { return data()[i]; }
  double* mutable_data() {
    if (borrowed_) {
      own_.assign(borrowed_, borrowed_ + n_);
      drop_borrowed();
    }
    return own_.data();
  }
  // frees the values (an executor that has copied them elsewhere)
  void release() {
    std::vector<double>().swap(own_);
    drop_borrowed();
  }

 private:
  void drop_borrowed() {
    borrowed_ = nullptr;
    n_ = 0;
    keep_.reset();
  }
  std::vector<double> own_;
  const double* borrowed_ = nullptr;
  size_t n_ = 0;
  std::shared_ptr<const void> keep_;
};

struct Node {
  Op op = Op::data;
  std::vector<int> inputs;
  std::vector<long> dim;  // R dims, at least 2
  long size = 1;          // product of dim

  // data
  DataValues values;
  // param: a slice [offset, offset + size) of the free state
  long offset = 0;
  Transform transform = Transform::none;
  double lower = 0, upper = 0;
  // param: whether its log |Jacobian| counts in this program (with the
  // executor's own ExecOptions::jacobian): false for a global parameter on
  // the ranks other than 0 of a run whose ranks own their groups' local
  // parameters (group_slice.hpp), where rank 0 counts it for all.
  bool jacobian = true;
  // gather: flat 0-based indices into the input, one per output element;
  // gather_rows and rowdot_rows: one row of the input per output row;
  // segment: the grouping of the input's rows (segment_layout())
  std::vector<long> index;
  // density and logpdf: family, truncation bounds (-inf, inf when untruncated)
  Family family = Family::normal;
  double trunc_lower = -HUGE_VAL, trunc_upper = HUGE_VAL;
  // rowdot_rows: input 2 scales b's columns (the planner's fusion of a
  // non-centred b = z * s; see rowdot_parts)
  bool scaled = false;
  // rowdot_rows: a column q, one value per row of b, is gathered by the
  // node's index and added (the planner's fusion of a group offset
  // alpha_g[g]; see rowdot_parts)
  bool gathered = false;
  // matmul: input 0 is the transpose of the left operand (k x m for an m x k
  // operand), read transposed in place (the planner's fusion of t(A) %*% B,
  // whose transpose node it leaves dead)
  bool transpose_a = false;

  // Filled by the planner.
  bool chain = false;  // carries the leading chain dimension
  // The observation extent this node is row-aligned with (its stage: tiles of
  // rows), or -1 for the global stage. See planner.hpp.
  int extent = -1;
  // Whether the log density depends on this node. Dead nodes (left by fusion,
  // or computed only to be traced) are skipped by the sampling executor.
  bool live = true;
};

// Where rowdot_rows' optional inputs are: inputs are {a, b}, then the scale
// s when the node is scaled, then the gathered offset q when it is gathered,
// then the shared coefficients v, then the offset p (p only after v). -1:
// absent.
struct RowDotParts {
  int s = -1, q = -1, v = -1, p = -1;
};
inline RowDotParts rowdot_parts(const Node& n) {
  RowDotParts parts;
  const int count = static_cast<int>(n.inputs.size());
  int k = 2;
  if (n.scaled && k < count) parts.s = k++;
  if (n.gathered && k < count) parts.q = k++;
  if (k < count) parts.v = k++;
  if (k < count) parts.p = k++;
  return parts;
}

struct Program {
  std::vector<Node> nodes;
  long n_free = 0;           // D, the length of the free state of one chain
  std::vector<int> terms;    // density nodes summed into the log density
  // Filled by the planner: the number of rows of each observation extent
  // (Node::extent indexes this).
  std::vector<long> extents;

  int add(Node n) {
    nodes.push_back(std::move(n));
    return static_cast<int>(nodes.size()) - 1;
  }
};

// Rows [first, end) of a column-major [rows x cols] array (a node's values,
// or an index with one entry per element): how a program is cut by rows
// (shards.cpp) and by groups (group_slice.cpp).
template <class V>
std::vector<typename V::value_type> cut_rows(const V& v, long rows, long first, long end) {
  const long cols = static_cast<long>(v.size()) / rows, kept = end - first;
  std::vector<typename V::value_type> out(static_cast<size_t>(kept * cols));
  for (long j = 0; j < cols; ++j)
    for (long r = first; r < end; ++r) out[(r - first) + j * kept] = v[r + j * rows];
  return out;
}

// The index of a segment node that reduces the rows of a value with
// group.size() rows into `groups` groups (group[r] in 0 .. groups - 1, or -1
// to leave row r out): a CSR layout, so that each output element reduces its
// own group's rows in a fixed order and the backward pass needs no atomics:
//   [0, rows)                    group[r]
//   [rows, rows + groups + 1)    offsets: group g's rows are sorted[offsets[g]
//                                .. offsets[g + 1]), offsets[0] = 0
//   [rows + groups + 1, ...)     sorted: the kept rows by group, each group's
//                                in increasing order (so "first" is R's)
// Throws std::invalid_argument for a group outside -1 .. groups - 1.
std::vector<long> segment_layout(const std::vector<long>& group, long groups);

// Checks a program's structure (arity, input order, shapes, broadcasting, index
// ranges, parameter slices) and throws std::invalid_argument naming the node.
void validate(const Program& p);

// The part of a program that `outputs` are computed from (their ancestors),
// renumbered in the same order, without terms: what tracing needs, so that
// tracing a parameter never computes the observation-sized values of the
// likelihood. ids[k] is the new id of outputs[k].
Program subprogram(const Program& p, const std::vector<int>& outputs, std::vector<int>* ids);

}  // namespace lockstep

#endif
