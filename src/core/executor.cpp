// The op-by-op executor (executor.hpp).
#include "lockstep/executor.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

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
  scratch_.assign(chains, 0);
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

template <class T> NodeCall<T> Executor<T>::call(int id, const double* state, double* lp,
                                                 double* grad) {
  const Node& node = program_.nodes[id];
  NodeCall<T> c;
  c.node = &node;
  auto slot = [&](int k) {
    const Node& n = program_.nodes[k];
    Slot<T> s;
    s.value = values_[k].data();
    s.adjoint = adjoints_[k].empty() ? nullptr : adjoints_[k].data();
    s.rows = n.dim[0];
    s.cols = n.size / n.dim[0];
    s.chain = n.chain;
    return s;
  };
  c.out = slot(id);
  for (size_t k = 0; k < node.inputs.size(); ++k) c.in[k] = slot(node.inputs[k]);
  c.index = node.index.data();
  c.chains = chains_;
  c.state = state;
  c.grad = grad;
  c.n_free = program_.n_free;
  c.lp = lp;
  c.scratch = scratch_.data();
  return c;
}

template <class T>
void Executor<T>::forward_node(int id, const double* state, double* lp, double* grad) {
  forward_call(call(id, state, lp, grad), [this](const auto& body) { launch(body); });
}

template <class T> void Executor<T>::backward_node(int id, const double* state, double* grad) {
  const Node& node = program_.nodes[id];
  if (!node.chain) return;
  backward_call(call(id, state, nullptr, grad), [this](const auto& body) { launch(body); });
}

template <class T> void Executor<T>::forward(const double* state) {
  std::vector<double> lp(chains_, 0.0);
  const int n = static_cast<int>(program_.nodes.size());
  for (int t : program_.terms) std::fill(values_[t].begin(), values_[t].end(), T(0));
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
  for (int t : program_.terms) std::fill(values_[t].begin(), values_[t].end(), T(0));
  for (int id = 0; id < n; ++id)
    if (program_.nodes[id].chain) forward_node(id, state, lp, grad);
  if (grad)
    for (int id = n - 1; id >= 0; --id) backward_node(id, state, grad);
}

template class Executor<double>;

}  // namespace lockstep
