// One node's kernels, dispatched from the op table: the single place that maps
// an op to its forward and backward kernel bodies. The op-by-op executor binds
// whole buffers; the tiled executor binds a tile's buffers (a tile's rows of a
// row-aligned value, the whole of a global one), so every op is born into both.
#ifndef LOCKSTEP_NODE_KERNELS_HPP
#define LOCKSTEP_NODE_KERNELS_HPP

#include <stdexcept>
#include <string>
#include <vector>

#include "ir.hpp"
#include "kernels/axis_sum.hpp"
#include "kernels/concat.hpp"
#include "kernels/cumulative.hpp"
#include "kernels/density.hpp"
#include "kernels/elementwise.hpp"
#include "kernels/fold.hpp"
#include "kernels/gather.hpp"
#include "kernels/linalg.hpp"
#include "kernels/logpdf.hpp"
#include "kernels/matmul.hpp"
#include "kernels/param.hpp"
#include "kernels/reduce.hpp"
#include "kernels/rowdot.hpp"
#include "kernels/segment.hpp"
#include "kernels/transpose.hpp"

namespace lockstep {

// A value of the program as one call's kernels see it.
template <class T> struct Slot {
  const T* value = nullptr;  // [chains, rows * cols] when chain, else [rows * cols]
  T* adjoint = nullptr;      // same layout; nullptr when no gradient flows here
  long rows = 1, cols = 1;   // the extent bound: a tile's rows, or the whole value
  bool chain = false;
  // A tile of row data stored row by row (value[r * cols + j]) rather than
  // column-major: the CPU observation stage's layout for the covariates of a
  // row dot product, its only reader (observation_stage.cpp).
  bool row_major = false;
  // The distance between chains' values (and adjoints) when it is not the
  // size: a parameter whose value and adjoint are its slices of the state and
  // the gradient ([chains, n_free]; ExecOptions::alias_parameters). -1: the size.
  long stride = -1;
  // The adjoint was not zeroed: the call is its only writer and stores its
  // partials there (AdjointSink::store). Set by the CPU's observation stage
  // alone, for the inputs of the calls whose CPU paths store
  // (ObservationStage::stored()).
  bool fresh = false;

  LS_HD long size() const { return rows * cols; }
  LS_HD long chain_stride() const { return stride >= 0 ? stride : chain ? rows * cols : 0; }
};

// A node's whole value (and adjoint) as a Slot: how the op-by-op executors
// bind every buffer, and the tiled stage its global ones.
template <class T> void set_whole_slot(Slot<T>& s, const Node& n, const T* value, T* adjoint) {
  s.value = value;
  s.adjoint = adjoint;
  s.rows = n.dim[0];
  s.cols = n.size / n.dim[0];
  s.chain = n.chain;
  s.row_major = false;
  s.stride = -1;
  s.fresh = false;
}
template <class T> Slot<T> whole_slot(const Node& n, const T* value, T* adjoint) {
  Slot<T> s;
  set_whole_slot(s, n, value, adjoint);
  return s;
}

// What a node's kernels read of the node itself (its op, family and
// constants), as plain data: a kernel that dispatches nodes on the device
// itself (the tile kernel, tile_kernel.hpp) reads it from device memory,
// where a Node, with its vectors, cannot go. Executors make one per node
// (kernel_nodes()) and point their calls at it.
struct KernelNode {
  Op op = Op::data;
  Family family = Family::normal;
  Transform transform = Transform::none;
  double lower = 0, upper = 0;                          // param
  double trunc_lower = -HUGE_VAL, trunc_upper = HUGE_VAL;  // density, logpdf
  long offset = 0;                                      // param
  int n_inputs = 0;
  bool transpose_a = false;  // matmul
  RowDotParts parts;         // rowdot_rows
  const double* values = nullptr;  // data (host memory: data runs on the host only)
};

inline KernelNode kernel_node(const Node& n) {
  KernelNode k;
  k.op = n.op;
  k.family = n.family;
  k.transform = n.transform;
  k.lower = n.lower;
  k.upper = n.upper;
  k.trunc_lower = n.trunc_lower;
  k.trunc_upper = n.trunc_upper;
  k.offset = n.offset;
  k.n_inputs = static_cast<int>(n.inputs.size());
  k.transpose_a = n.transpose_a;
  k.parts = rowdot_parts(n);
  k.values = n.values.data();
  return k;
}

inline std::vector<KernelNode> kernel_nodes(const Program& p) {
  std::vector<KernelNode> out;
  out.reserve(p.nodes.size());
  for (const Node& n : p.nodes) out.push_back(kernel_node(n));
  return out;
}

// A density's target and parameters, or rowdot_rows' a, b, s, q, v and p
// (ir.cpp's validate() allows a row dot product no more).
constexpr int max_node_inputs = 1 + max_dist_params > 6 ? 1 + max_dist_params : 6;

// Consecutive elements a lane of a gather's backward takes, where the index
// comes in runs (GatherBackward::piece): 32, as the row dot product's
// backward takes rows (kernels/rowdot.hpp).
constexpr long gather_piece = 32;

// Doubles of workspace per chain that a node's kernels need (NodeCall::work):
// the linalg ops' factors and columns; 0 for every other op. Executors
// allocate chains times the largest over the nodes they run.
inline long workspace_per_chain(const Program& p, const Node& n) {
  if (op_family(n.op) != OpFamily::linalg) return 0;
  return linalg_workspace(n.op, p.nodes[n.inputs[0]].dim[0]);
}

// Everything one node's kernels need, for `chains` chains.
template <class T> struct NodeCall {
  const KernelNode* node = nullptr;
  Slot<T> out;  // out.value is written (const only to share Slot)
  Slot<T> in[max_node_inputs];
  // gather: one index per output element of this call; gather_rows: one per
  // output row of this call (a tile's rows); segment: the node's grouping
  const long* index = nullptr;
  long chains = 1;
  const double* state = nullptr;  // param: [chains, n_free]
  double* grad = nullptr;         // [chains, n_free] (parameters write here)
  bool gradient = false;          // densities add their partials to the adjoints
  // The node is the first to write what it writes in this gradient, which
  // was not zeroed, and stores rather than adds: a density, its target's
  // partials (DensityTerm::dx_store); a parameter, its slice of the
  // gradient (ParamBackward::store). Set by the CPU executor
  // (Executor::find_first_writers()).
  bool first_writer = false;
  long n_free = 0;
  double* lp = nullptr;       // [chains]: densities and Jacobians add to it
  double* scratch = nullptr;  // [chains] doubles of scratch
  // [chains, workspace_per_chain(node)] doubles of workspace (linalg ops; null
  // for the others), the same chain group as the values
  double* work = nullptr;
  bool jacobian = true;       // parameters and log_jacobian terms add their log |Jacobian|
                              // (false: opt(adjust = FALSE))
  // A gather's index comes in runs of equal entries (index_in_runs(),
  // kernels/gather.hpp): its backward on several lanes sums runs. Set by the
  // executors that run whole buffers on lanes (CUDA, emulated).
  bool index_in_runs = false;
  // A gather's index comes in steps, runs of consecutive entries
  // (index_in_steps()): the CPU reads and adds it a run at a time. Set by
  // the CPU's executor and observation stage.
  bool index_in_steps = false;
  // Where the CPU's observation stage found this call's runs (equal entries,
  // or steps) of a gather's index when it was built (none: found as it goes).
  RunStarts index_runs;
  // What a density multiplies its value and partials by (DensityTerm::
  // weight): a minibatch's tiles over tiles drawn, in the tile kernel.
  double weight = 1;
  // A density's sum of its family's data_term over the target (DensityTerm::
  // data_term_total), where the caller knows it: the CPU's observation
  // stage, which sums each tile's when built. Null: not known.
  const double* data_term = nullptr;

  LS_HD T* y() const { return const_cast<T*>(out.value); }
};

namespace detail {

// How an input is addressed at the elements of an output, from the extents the
// call binds (so a tile of rows is addressed as a tile): the same size (the
// same shape), a scalar, a row vector 1 x out.cols broadcast down the rows, or
// a column vector out.rows x 1 broadcast across the columns (kernels/
// elementwise.hpp). The same size comes first, so a 1 x cols operand of a
// 1 x cols output is simply the same shape.
struct Addressing {
  bool scalar, axis;
  long row_stride, col_stride;
};

// Out of line, so that addressing() (once per operand of every elementwise
// call) inlines without the message's string building.
[[noreturn]] __attribute__((noinline, cold)) inline void not_broadcastable(long in_rows,
                                                                          long in_cols,
                                                                          long out_rows,
                                                                          long out_cols) {
  throw std::invalid_argument("lockstep: an operand of " + std::to_string(in_rows) + " x " +
                              std::to_string(in_cols) + " cannot be broadcast to " +
                              std::to_string(out_rows) + " x " + std::to_string(out_cols));
}

template <class T> LS_HD Addressing addressing(const Slot<T>& in, const Slot<T>& out) {
  if (in.size() == out.size()) return Addressing{false, false, 1, out.rows};
  if (in.size() == 1) return Addressing{true, false, 0, 0};
  if (in.rows == 1 && in.cols == out.cols) return Addressing{false, true, 0, 1};
  if (in.cols == 1 && in.rows == out.rows) return Addressing{false, true, 1, 0};
#if defined(__CUDA_ARCH__)
  __trap();  // (never: the host made the same calls first, and would have thrown)
  return Addressing{};
#else
  not_broadcastable(in.rows, in.cols, out.rows, out.cols);
#endif
}

template <class T> LS_HD Operand<T> operand(const Slot<T>& in, const Slot<T>& out) {
  const Addressing a = addressing(in, out);
  return Operand<T>{in.value, in.chain_stride(), a.scalar, a.axis, a.row_stride, a.col_stride};
}

template <class T> LS_HD AdjointSink<T> sink(const Slot<T>& in, const Slot<T>& out) {
  if (!in.adjoint) return AdjointSink<T>{nullptr, 0, false};
  const Addressing a = addressing(in, out);
  return AdjointSink<T>{in.adjoint, in.chain_stride(), a.scalar, a.axis, a.row_stride,
                        a.col_stride, in.fresh};
}

template <class T> LS_HD MatmulShape matmul_shape(const NodeCall<T>& call) {
  // a transposed in place (Node::transpose_a) is stored k x m
  const bool ta = call.node->transpose_a;
  MatmulShape s{ta ? call.in[0].cols : call.in[0].rows, ta ? call.in[0].rows : call.in[0].cols,
                call.in[1].cols, call.in[0].chain_stride(), call.in[1].chain_stride()};
  s.a_transposed = ta;
  return s;
}

template <class T> LS_HD LinalgShape linalg_shape(const NodeCall<T>& call) {
  const long n = call.in[0].rows;
  return LinalgShape{n, call.out.size() / n, call.in[0].chain_stride(),
                     call.node->n_inputs > 1 ? call.in[1].chain_stride() : 0,
                     linalg_workspace(call.node->op, n)};
}

template <class T> LS_HD RowDotShape rowdot_shape(const NodeCall<T>& call) {
  const RowDotParts parts = call.node->parts;
  RowDotShape s{call.in[0].rows, call.in[0].cols, call.in[1].rows, call.in[0].chain_stride(),
                call.in[1].chain_stride(), parts.v >= 0 ? call.in[parts.v].chain_stride() : 0};
  s.a_row_major = call.in[0].row_major;
  if (parts.s >= 0) {
    s.s_stride = call.in[parts.s].chain_stride();
    s.s_scalar = call.in[parts.s].size() == 1;
  }
  return s;
}

// rowdot_rows' optional inputs (ir.hpp's rowdot_parts): the scale s, the
// shared coefficients v and the offset p, or nullptr.
template <class T> LS_HD const Slot<T>* rowdot_input(const NodeCall<T>& call, int k) {
  return k >= 0 ? &call.in[k] : nullptr;
}

// A logpdf node's target and parameters, addressed at its output's elements.
template <class T> LS_HD LogpdfInputs<T> logpdf_inputs(const NodeCall<T>& call) {
  const KernelNode& node = *call.node;
  LogpdfInputs<T> in{node.family, node.trunc_lower, node.trunc_upper,
                     operand(call.in[0], call.out), {}};
  for (int k = 1; k < node.n_inputs; ++k)
    in.p[k - 1] = operand(call.in[k], call.out);
  return in;
}

}  // namespace detail

// Which op families and distribution families one instantiation of the
// dispatch holds code for. Every executor's holds all of them; a GPU tile
// kernel (tile_kernel.hpp) holds a subset, because one kernel that reaches
// every op's and family's code took ptxas over 15 GB to compile.
struct AllKernels {
  static constexpr bool op_family(OpFamily) { return true; }
  static constexpr bool family(Family) { return true; }
};

// A density's ChainSum over its target, for family F: out of line from
// forward_call()'s dispatch over families, so that the launch is a call in
// a function nvcc is told about (LS_HD_DISPATCH), not in a lambda.
LS_HD_DISPATCH template <class T, Family F, class Launch>
LS_HD void launch_density_term(const NodeCall<T>& call, Launch&& launch) {
  using namespace detail;
  const KernelNode& node = *call.node;
  const Slot<T>& target = call.in[0];
  using Term = DensityTerm<T, F>;
  Term term{};
  term.lower = node.trunc_lower;
  term.upper = node.trunc_upper;
  term.truncated = !(ls_isinf(term.lower) && ls_isinf(term.upper));
  term.x = operand(target, target);
  term.dx = call.gradient ? sink(target, target) : AdjointSink<T>{};
  term.dx_store = call.gradient && (call.first_writer || target.fresh);
  term.weight = call.weight;
  if (call.data_term) {
    term.data_term_given = true;
    term.data_term_total = *call.data_term;
  }
  for (int k = 0; k < Term::n_params; ++k) {
    // parameters broadcast over the target's elements
    term.p[k] = operand(call.in[k + 1], target);
    term.dp[k] = call.gradient ? sink(call.in[k + 1], target) : AdjointSink<T>{};
  }
  launch(ChainSum<Term>(term.with_slots(), call.scratch, call.chains, target.size()));
}

// Forward of the op families an observation stage can hold (the planner's
// may_be_row_aligned()), the only ones the tile kernel (tile_kernel.hpp)
// compiles; false for the others, which forward_call() runs, and for those
// that Kernels leaves out.
LS_HD_DISPATCH template <class Kernels = AllKernels, class T, class Launch>
LS_HD bool forward_row_call(const NodeCall<T>& call, Launch&& launch) {
  using namespace detail;
  const KernelNode& node = *call.node;
  [[maybe_unused]] const long C = call.out.chain ? call.chains : 1;
  [[maybe_unused]] const long n = call.out.size();
  [[maybe_unused]] T* y = call.y();
  switch (op_family(node.op)) {
    case OpFamily::unary:
      if constexpr (!Kernels::op_family(OpFamily::unary)) return false;
      else {
        launch(UnaryForward<T>{node.op, operand(call.in[0], call.out), y, C, n});
        return true;
      }
    case OpFamily::binary:
      if constexpr (!Kernels::op_family(OpFamily::binary)) return false;
      else {
        BinaryForward<T> body{node.op, operand(call.in[0], call.out), operand(call.in[1], call.out),
                              y, C, n};
        body.rows = call.out.rows;
        launch(body);
        return true;
      }
    case OpFamily::rowsum:
      if constexpr (!Kernels::op_family(OpFamily::rowsum)) return false;
      else {
        launch(RowSumForward<T>{call.in[0].value, call.in[0].chain_stride(), y, C, call.in[0].rows,
                                call.in[0].cols});
        return true;
      }
    case OpFamily::matmul:
      if constexpr (!Kernels::op_family(OpFamily::matmul)) return false;
      else {
        launch(MatmulForward<T>{matmul_shape(call), call.in[0].value, call.in[1].value, y, C});
        return true;
      }
    case OpFamily::gather:
      if constexpr (!Kernels::op_family(OpFamily::gather)) return false;
      else {
        GatherForward<T> body{call.in[0].value, call.in[0].chain_stride(), call.index, y, C, n};
        body.runs = call.index_in_runs;
        body.steps = call.index_in_steps;
        body.known = call.index_runs;
        launch(body);
        return true;
      }
    case OpFamily::gather_rows:
      if constexpr (!Kernels::op_family(OpFamily::gather_rows)) return false;
      else {
        launch(GatherRowsForward<T>{call.in[0].value, call.in[0].chain_stride(), call.in[0].rows,
                                    call.index, y, C, call.out.rows, call.out.cols});
        return true;
      }
    case OpFamily::rowdot_rows:
      if constexpr (!Kernels::op_family(OpFamily::rowdot_rows)) return false;
      else {
        const RowDotParts parts = node.parts;
        const Slot<T>* sc = rowdot_input(call, parts.s);
        const Slot<T>* v = rowdot_input(call, parts.v);
        const Slot<T>* p = rowdot_input(call, parts.p);
        const Slot<T>* q = rowdot_input(call, parts.q);
        RowDotForward<T> body{rowdot_shape(call), call.in[0].value, call.in[1].value, call.index,
                              v ? v->value : nullptr,
                              p ? operand(*p, call.out) : Operand<T>{nullptr, 0, false}, y, C,
                              sc ? sc->value : nullptr};
        if (q) {
          body.q = q->value;
          body.q_stride = q->chain_stride();
        }
        launch(body);
        return true;
      }
    case OpFamily::density:
      if constexpr (!Kernels::op_family(OpFamily::density)) return false;
      else {
        // A density always carries the chain dimension: its value, per chain, is
        // added to the term's own value (which a tiled pass accumulates over its
        // tiles) and to the log density.
        bool held = false;  // (Kernels' families only)
        with_family(node.family, [&](auto tag) { held = Kernels::family(decltype(tag)::value); });
        if (!held) return false;
        launch(ZeroChains{call.scratch, call.chains});
        // A constrained variable's log |Jacobian| (family log_jacobian) goes
        // with the parameters' own: without the Jacobian, the term is zero.
        if (node.family != Family::log_jacobian || call.jacobian)
          with_family(node.family, [&](auto tag) {
            if constexpr (Kernels::family(decltype(tag)::value))
              launch_density_term<T, decltype(tag)::value>(call, launch);
          });
        launch(StoreChains<T>{call.scratch, y, call.lp, true, call.chains});
        return true;
      }
    case OpFamily::logpdf:
      if constexpr (!Kernels::op_family(OpFamily::logpdf)) return false;
      else {
        launch(LogpdfForward<T>{logpdf_inputs(call), y, C, n});
        return true;
      }
    // (the global stage's families: forward_call() runs them)
    case OpFamily::leaf:
    LS_CASE_GLOBAL_FAMILIES:
      return false;
  }
  return false;
}

// Forward: writes the node's value; densities add theirs to their value and to
// call.lp, Jacobians to call.lp; with call.gradient, densities add their
// partials to the adjoints (fused), and Jacobians theirs to call.grad.
LS_HD_DISPATCH template <class T, class Launch>
LS_HD void forward_call(const NodeCall<T>& call, Launch&& launch) {
  if (forward_row_call(call, launch)) return;
  using namespace detail;
  const KernelNode& node = *call.node;
  const long C = call.out.chain ? call.chains : 1;
  const long n = call.out.size();
  T* y = call.y();
  switch (op_family(node.op)) {
    case OpFamily::leaf:
      if (node.op == Op::data) {
        for (long i = 0; i < n; ++i) y[i] = static_cast<T>(node.values[i]);
      } else {
        const ConstraintMath g{node.transform, node.lower, node.upper};
        launch(ParamForward<T>{g, call.state, call.n_free, node.offset, y, C, n});
        if (node.transform != Transform::none && call.jacobian)
          launch(ChainSum<ParamJacobianTerm>(
              ParamJacobianTerm{g, call.state, call.grad, call.n_free, node.offset}, call.lp, C, n));
      }
      break;
    case OpFamily::reduce: {
      launch(ZeroChains{call.scratch, C});
      launch(ChainSum<SumTerm<T>>(SumTerm<T>{operand(call.in[0], call.in[0])}, call.scratch, C,
                                  call.in[0].size()));
      launch(StoreChains<T>{call.scratch, y, nullptr, false, C});
      break;
    }
    case OpFamily::colsum:
      launch(ColSumForward<T>{call.in[0].value, call.in[0].chain_stride(), y, C, call.in[0].rows,
                              call.in[0].cols});
      break;
    case OpFamily::transpose:
      launch(TransposeForward<T>{call.in[0].value, call.in[0].chain_stride(), y, C,
                                 call.in[0].rows, call.in[0].cols});
      break;
    case OpFamily::fold:
      launch(FoldForward<T>{node.op, call.in[0].value, call.in[0].chain_stride(), y, C,
                            call.in[0].size()});
      break;
    case OpFamily::cumulative:
      launch(CumulativeForward<T>{node.op, call.in[0].value, call.in[0].chain_stride(), y, C, n});
      break;
    case OpFamily::linalg: {
      const bool rhs = node.n_inputs > 1;
      launch(LinalgForward<T>{node.op, linalg_shape(call), call.in[0].value,
                              rhs ? call.in[1].value : nullptr, y, call.work, C});
      break;
    }
    case OpFamily::segment:
      launch(SegmentForward<T>{segment_fold(node.op), call.in[0].value, call.in[0].chain_stride(),
                               call.in[0].rows, call.index, y, C, call.out.rows, call.out.cols});
      break;
    case OpFamily::concat:
      launch(ConcatForward<T>{call.in[0].value, call.in[0].chain_stride(), call.in[0].size(),
                              call.in[1].value, call.in[1].chain_stride(), y, C, n});
      break;
    // (forward_row_call() ran these, with every family's code)
    LS_CASE_ROW_FAMILIES:
      break;
  }
}

// Backward of the op families forward_row_call() runs; false for the others.
LS_HD_DISPATCH template <class Kernels = AllKernels, class T, class Launch>
LS_HD bool backward_row_call(const NodeCall<T>& call, Launch&& launch) {
  using namespace detail;
  const KernelNode& node = *call.node;
  if (!call.out.adjoint) return true;  // (nothing to do, whatever the op)
  [[maybe_unused]] const long C = call.chains;
  [[maybe_unused]] const long n = call.out.size();
  [[maybe_unused]] const T* dy = call.out.adjoint;
  [[maybe_unused]] const T* y = call.out.value;
  switch (op_family(node.op)) {
    case OpFamily::unary:
      if constexpr (!Kernels::op_family(OpFamily::unary)) return false;
      else {
        launch(UnaryBackward<T>{node.op, operand(call.in[0], call.out), y, dy,
                                sink(call.in[0], call.out), C, n});
        return true;
      }
    case OpFamily::binary:
      if constexpr (!Kernels::op_family(OpFamily::binary)) return false;
      else {
        BinaryBackward<T> body{node.op, operand(call.in[0], call.out),
                               operand(call.in[1], call.out), y, dy, sink(call.in[0], call.out),
                               sink(call.in[1], call.out), C, n};
        body.rows = call.out.rows;
        launch(body.with_block_sums());
        return true;
      }
    case OpFamily::rowsum:
      if constexpr (!Kernels::op_family(OpFamily::rowsum)) return false;
      else {
        if (call.in[0].adjoint)
          launch(RowSumBackward<T>{dy, call.in[0].adjoint, C, call.in[0].rows, call.in[0].cols});
        return true;
      }
    case OpFamily::matmul:
      if constexpr (!Kernels::op_family(OpFamily::matmul)) return false;
      else {
        const MatmulShape s = matmul_shape(call);
        if (call.in[0].adjoint)
          launch(MatmulBackwardA<T>{s, call.in[1].value, dy, call.in[0].adjoint, C});
        if (call.in[1].adjoint)
          launch(MatmulBackwardB<T>{s, call.in[0].value, dy, call.in[1].adjoint, C});
        return true;
      }
    case OpFamily::gather:
      if constexpr (!Kernels::op_family(OpFamily::gather)) return false;
      else {
        if (call.in[0].adjoint) {
          GatherBackward<T> body{call.index, dy, call.in[0].adjoint, call.in[0].size(), C, n};
          body.piece = call.index_in_runs ? gather_piece : 0;
          body.steps = call.index_in_steps;
          body.known = call.index_runs;
          launch(body);
        }
        return true;
      }
    case OpFamily::gather_rows:
      if constexpr (!Kernels::op_family(OpFamily::gather_rows)) return false;
      else {
        if (call.in[0].adjoint) {
          GatherRowsBackward<T> body{call.index, dy, call.in[0].adjoint, call.in[0].rows, C,
                                     call.out.rows, call.out.cols};
          body.piece = call.index_in_runs ? gather_piece : 0;
          body.known = call.index_runs;
          launch(body);
        }
        return true;
      }
    case OpFamily::rowdot_rows:
      if constexpr (!Kernels::op_family(OpFamily::rowdot_rows)) return false;
      else {
        const RowDotParts parts = node.parts;
        const Slot<T>* sc = rowdot_input(call, parts.s);
        const Slot<T>* v = rowdot_input(call, parts.v);
        const Slot<T>* p = rowdot_input(call, parts.p);
        T* dv = v ? v->adjoint : nullptr;
        T* ds = sc ? sc->adjoint : nullptr;
        const AdjointSink<T> dp = p ? sink(*p, call.out) : AdjointSink<T>{nullptr, 0, false};
        const Slot<T>* q = rowdot_input(call, parts.q);
        T* dq = q ? q->adjoint : nullptr;
        if (call.in[0].adjoint || call.in[1].adjoint || dv || ds || dp.data || dq) {
          RowDotBackward<T> body{rowdot_shape(call), call.in[0].value, call.in[1].value, call.index,
                                 v ? v->value : nullptr, dy, call.in[0].adjoint,
                                 call.in[1].adjoint, dv, dp, C, sc ? sc->value : nullptr, ds};
          body.dq = dq;
          body.q_stride = q ? q->chain_stride() : 0;
          launch(body.with_dv_phases());
        }
        return true;
      }
    case OpFamily::density:
      if constexpr (!Kernels::op_family(OpFamily::density)) return false;
      else {
        return true;
      }
    case OpFamily::logpdf:
      if constexpr (!Kernels::op_family(OpFamily::logpdf)) return false;
      else {
        LogpdfBackward<T> body{logpdf_inputs(call), dy, sink(call.in[0], call.out), {}, C, n};
        bool any = body.dx.data != nullptr;
        for (int k = 1; k < node.n_inputs; ++k) {
          body.dp[k - 1] = sink(call.in[k], call.out);
          any = any || body.dp[k - 1].data;
        }
        if (any) launch(body.with_block_sums());
        return true;
      }
    // (the global stage's families: backward_call() runs them)
    case OpFamily::leaf:
    LS_CASE_GLOBAL_FAMILIES:
      return false;
  }
  return false;
}

// Backward: adds the node's adjoint, through its partials, to its inputs'
// adjoints (and a parameter's to the state gradient). Densities do nothing
// here: their partials were fused into the forward pass.
LS_HD_DISPATCH template <class T, class Launch>
LS_HD void backward_call(const NodeCall<T>& call, Launch&& launch) {
  if (backward_row_call(call, launch)) return;
  using namespace detail;
  const KernelNode& node = *call.node;
  if (!call.out.adjoint) return;
  const long C = call.chains;
  const long n = call.out.size();
  const T* dy = call.out.adjoint;
  const T* y = call.out.value;
  switch (op_family(node.op)) {
    case OpFamily::leaf:
      if (node.op == Op::param) {
        const ConstraintMath g{node.transform, node.lower, node.upper};
        ParamBackward<T> body{g, call.state, call.grad, call.n_free, node.offset, dy, C, n};
        body.store = call.first_writer;
        launch(body);
      }
      break;
    case OpFamily::reduce:
      if (call.in[0].adjoint)
        launch(SumBackward<T>{dy, sink(call.in[0], call.in[0]), C, call.in[0].size()});
      break;
    case OpFamily::colsum:
      if (call.in[0].adjoint)
        launch(ColSumBackward<T>{dy, call.in[0].adjoint, C, call.in[0].rows, call.in[0].cols});
      break;
    case OpFamily::transpose:
      if (call.in[0].adjoint)
        launch(TransposeBackward<T>{dy, call.in[0].adjoint, C, call.in[0].rows, call.in[0].cols});
      break;
    case OpFamily::fold:
      if (call.in[0].adjoint)
        launch(FoldBackward<T>{node.op, call.in[0].value, call.in[0].chain_stride(), dy,
                               sink(call.in[0], call.in[0]), C, call.in[0].size()});
      break;
    case OpFamily::cumulative:
      if (call.in[0].adjoint)
        launch(CumulativeBackward<T>{node.op, call.in[0].value, call.in[0].chain_stride(), y,
                                     call.out.chain_stride(), dy, call.in[0].adjoint,
                                     call.in[0].chain_stride(), C, n});
      break;
    case OpFamily::linalg: {
      T* db = node.n_inputs > 1 ? call.in[1].adjoint : nullptr;
      if (call.in[0].adjoint || db)
        launch(LinalgBackward<T>{node.op, linalg_shape(call), call.in[0].value, y, dy,
                                 call.in[0].adjoint, db, call.work, C});
      break;
    }
    case OpFamily::segment:
      if (call.in[0].adjoint)
        launch(SegmentBackward<T>{segment_fold(node.op), call.in[0].value,
                                  call.in[0].chain_stride(), call.in[0].rows, call.index, dy,
                                  call.in[0].adjoint, C, call.out.rows, call.out.cols});
      break;
    case OpFamily::concat:
      if (call.in[0].adjoint || call.in[1].adjoint)
        launch(ConcatBackward<T>{dy, call.in[0].adjoint, call.in[0].chain_stride(),
                                 call.in[0].size(), call.in[1].adjoint, call.in[1].chain_stride(),
                                 C, n});
      break;
    // (backward_row_call() ran these, with every family's code)
    LS_CASE_ROW_FAMILIES:
      break;
  }
}

}  // namespace lockstep

#endif
