// The op-by-op executor (executor.hpp).
#include "lockstep/executor.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "lockstep/kernels/density.hpp"
#include "lockstep/kernels/elementwise.hpp"
#include "lockstep/kernels/gather.hpp"
#include "lockstep/kernels/matmul.hpp"
#include "lockstep/kernels/param.hpp"
#include "lockstep/kernels/reduce.hpp"

namespace lockstep {

Backend backend_from_name(const std::string& name) {
  if (name == "cpu") return Backend::cpu;
  if (name == "emulated") return Backend::emulated;
  throw std::invalid_argument("unknown backend '" + name + "' (expected 'cpu' or 'emulated')");
}

template <class T>
Executor<T>::Executor(const Program& program, long chains, Backend backend,
                      EmulatedGeometry geometry)
    : program_(program), chains_(chains), backend_(backend), geometry_(geometry) {
  if (chains < 1) throw std::invalid_argument("chains must be at least 1");
  const size_t n = program.nodes.size();
  values_.resize(n);
  adjoints_.resize(n);
  term_sums_.assign(chains, 0);
  for (size_t id = 0; id < n; ++id) {
    const Node& node = program.nodes[id];
    const long len = node.chain ? chains * node.size : node.size;
    values_[id].assign(len, T(0));
    if (node.chain && node.op != Op::density) adjoints_[id].assign(len, T(0));
  }
  // Nodes without the chain dimension do not depend on the state: evaluate
  // them once, here.
  for (size_t id = 0; id < n; ++id)
    if (!program.nodes[id].chain) forward_node(static_cast<int>(id), nullptr, nullptr, nullptr);
}

template <class T>
template <class Body>
void Executor<T>::launch(const Body& body) const {
  if (backend_ == Backend::emulated)
    run_emulated(body, geometry_);
  else
    run_serial(body);
}

namespace {

template <class T> Operand<T> operand(const Node& in, const std::vector<T>& v, const Node& out) {
  return Operand<T>{v.data(), in.chain ? in.size : 0, in.size == 1 && out.size != 1};
}

template <class T> AdjointSink<T> sink(const Node& in, std::vector<T>& adj, const Node& out) {
  if (!in.chain) return AdjointSink<T>{nullptr, 0, false};
  return AdjointSink<T>{adj.data(), in.size, in.size == 1 && out.size != 1};
}

}  // namespace

template <class T>
void Executor<T>::forward_node(int id, const double* state, double* lp, double* grad) {
  const Node& node = program_.nodes[id];
  const long C = node.chain ? chains_ : 1;
  T* y = values_[id].data();
  auto in = [&](int k) -> const Node& { return program_.nodes[node.inputs[k]]; };
  auto val = [&](int k) -> const std::vector<T>& { return values_[node.inputs[k]]; };
  switch (op_family(node.op)) {
    case OpFamily::leaf:
      if (node.op == Op::data) {
        for (long i = 0; i < node.size; ++i) y[i] = static_cast<T>(node.values[i]);
      } else {
        const ConstraintMath g{node.transform, node.lower, node.upper};
        launch(ParamForward<T>{g, state, program_.n_free, node.offset, y, C, node.size});
        if (node.transform != Transform::none) {
          launch(ChainSum<ParamJacobianTerm>(
              ParamJacobianTerm{g, state, grad, program_.n_free, node.offset}, lp, C, node.size));
        }
      }
      break;
    case OpFamily::unary:
      launch(UnaryForward<T>{node.op, operand(in(0), val(0), node), y, C, node.size});
      break;
    case OpFamily::binary:
      launch(BinaryForward<T>{node.op, operand(in(0), val(0), node), operand(in(1), val(1), node),
                              y, C, node.size});
      break;
    case OpFamily::reduce: {
      std::fill(term_sums_.begin(), term_sums_.end(), 0.0);
      launch(ChainSum<SumTerm<T>>(SumTerm<T>{operand(in(0), val(0), in(0))}, term_sums_.data(), C,
                                  in(0).size));
      for (long c = 0; c < C; ++c) y[c] = static_cast<T>(term_sums_[c]);
      break;
    }
    case OpFamily::matmul: {
      const MatmulShape s{in(0).dim[0], in(0).dim[1], in(1).dim[1], in(0).chain ? in(0).size : 0,
                          in(1).chain ? in(1).size : 0};
      launch(MatmulForward<T>{s, val(0).data(), val(1).data(), y, C});
      break;
    }
    case OpFamily::gather:
      launch(GatherForward<T>{val(0).data(), in(0).chain ? in(0).size : 0, node.index.data(), y,
                              C, node.size});
      break;
    case OpFamily::density: {
      const Node& target = in(0);
      DensityTerm<T> term{};
      term.family = node.family;
      term.n_params = family_n_params(node.family);
      term.lower = node.trunc_lower;
      term.upper = node.trunc_upper;
      term.x = operand(target, val(0), target);
      term.dx = grad ? sink(target, adjoints_[node.inputs[0]], target) : AdjointSink<T>{};
      for (int k = 0; k < term.n_params; ++k) {
        // parameters broadcast over the target's elements
        term.p[k] = operand(in(k + 1), val(k + 1), target);
        term.dp[k] = grad ? sink(in(k + 1), adjoints_[node.inputs[k + 1]], target) : AdjointSink<T>{};
      }
      std::fill(term_sums_.begin(), term_sums_.end(), 0.0);
      launch(ChainSum<DensityTerm<T>>(term, term_sums_.data(), chains_, target.size));
      for (long c = 0; c < chains_; ++c) y[c] = static_cast<T>(term_sums_[c]);
      break;
    }
  }
}

template <class T>
void Executor<T>::backward_node(int id, const double* state, double* grad) {
  const Node& node = program_.nodes[id];
  if (!node.chain || node.op == Op::density) return;  // density partials were fused forward
  const long C = chains_;
  const T* dy = adjoints_[id].data();
  const T* y = values_[id].data();
  auto in = [&](int k) -> const Node& { return program_.nodes[node.inputs[k]]; };
  auto val = [&](int k) -> const std::vector<T>& { return values_[node.inputs[k]]; };
  auto adj = [&](int k) -> std::vector<T>& { return adjoints_[node.inputs[k]]; };
  switch (op_family(node.op)) {
    case OpFamily::leaf:
      if (node.op == Op::param) {
        const ConstraintMath g{node.transform, node.lower, node.upper};
        launch(ParamBackward<T>{g, state, grad, program_.n_free, node.offset, dy, C, node.size});
      }
      break;
    case OpFamily::unary:
      launch(UnaryBackward<T>{node.op, operand(in(0), val(0), node), y, dy,
                              sink(in(0), adj(0), node), C, node.size});
      break;
    case OpFamily::binary:
      launch(BinaryBackward<T>{node.op, operand(in(0), val(0), node), operand(in(1), val(1), node),
                               y, dy, sink(in(0), adj(0), node), sink(in(1), adj(1), node), C,
                               node.size});
      break;
    case OpFamily::reduce:
      launch(SumBackward<T>{dy, sink(in(0), adj(0), in(0)), C, in(0).size});
      break;
    case OpFamily::matmul: {
      const MatmulShape s{in(0).dim[0], in(0).dim[1], in(1).dim[1], in(0).chain ? in(0).size : 0,
                          in(1).chain ? in(1).size : 0};
      if (in(0).chain) launch(MatmulBackwardA<T>{s, val(1).data(), dy, adj(0).data(), C});
      if (in(1).chain) launch(MatmulBackwardB<T>{s, val(0).data(), dy, adj(1).data(), C});
      break;
    }
    case OpFamily::gather:
      if (in(0).chain)
        launch(GatherBackward<T>{node.index.data(), dy, adj(0).data(), in(0).size, C, node.size});
      break;
    case OpFamily::density:
      break;
  }
}

template <class T> void Executor<T>::forward(const double* state) {
  std::vector<double> lp(chains_, 0.0);
  const int n = static_cast<int>(program_.nodes.size());
  for (int id = 0; id < n; ++id)
    if (program_.nodes[id].chain) forward_node(id, state, lp.data(), nullptr);
}

template <class T>
void Executor<T>::log_density(const double* state, double* lp, double* grad) {
  const int n = static_cast<int>(program_.nodes.size());
  std::fill(lp, lp + chains_, 0.0);
  if (grad) {
    std::fill(grad, grad + chains_ * program_.n_free, 0.0);
    for (auto& a : adjoints_) std::fill(a.begin(), a.end(), T(0));
  }
  for (int id = 0; id < n; ++id)
    if (program_.nodes[id].chain) forward_node(id, state, lp, grad);
  for (int t : program_.terms) {
    const std::vector<T>& v = values_[t];
    for (long c = 0; c < chains_; ++c) lp[c] += static_cast<double>(v[c]);
  }
  if (grad)
    for (int id = n - 1; id >= 0; --id) backward_node(id, state, grad);
}

template class Executor<double>;

}  // namespace lockstep
