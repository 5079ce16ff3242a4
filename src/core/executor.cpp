// The executor (executor.hpp).
#include "lockstep/executor.hpp"
#include "lockstep/shards.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace lockstep {

Backend backend_from_name(const std::string& name) {
  if (name == "cpu") return Backend::cpu;
  if (name == "emulated") return Backend::emulated;
  if (name == "cuda") return Backend::cuda;
  throw std::invalid_argument("unknown backend '" + name +
                              "' (expected 'cpu', 'emulated' or 'cuda')");
}

namespace {
ExecOptions with_backend(Backend backend, EmulatedGeometry geometry) {
  ExecOptions o;
  o.backend = backend;
  o.geometry = geometry;
  return o;
}
}  // namespace

long work_per_call(const Program& program, long chains) {
  long work = 0;
  for (const Node& n : program.nodes) {
    if (n.chain && n.live) work += chains * n.size;
    else if (n.extent >= 0) work += n.size;  // row data, read once for all chains
  }
  return work;
}

int effective_threads(const Program& program, long chains, const ExecOptions& options) {
  if (!options.threads_auto || options.threads <= 1) return options.threads;
  const long supported = work_per_call(program, chains) / min_work_per_thread;
  return static_cast<int>(std::max(1L, std::min<long>(options.threads, supported)));
}

template <class T>
Executor<T>::Executor(const Program& program, long chains, Backend backend,
                      EmulatedGeometry geometry)
    : Executor(program, chains, with_backend(backend, geometry)) {}

template <class T>
Executor<T>::Executor(const Program& program, long chains, ExecOptions options)
    : program_(program),
      chains_(chains),
      options_(options),
      launch_{options.backend, options.geometry},
      tiled_(options.observation_stage && !program.extents.empty()) {
  if (chains < 1) throw std::invalid_argument("chains must be at least 1");
  if (options.backend == Backend::cuda)
    throw std::invalid_argument(
        "lockstep: the cuda backend has its own executor (cuda::make_executor)");
  if (options.threads < 1) throw std::invalid_argument("threads must be at least 1");
  options_.threads = effective_threads(program, chains, options);
  if (options.devices < 1) throw std::invalid_argument("devices must be at least 1");
  const size_t n = program.nodes.size();
  kernel_nodes_ = kernel_nodes(program);
  values_.resize(n);
  adjoints_.resize(n);
  alias_stride_.assign(n, 0);
  first_writer_.assign(n, 0);
  adjoint_stored_.assign(n, 0);
  // gathers' backward sums runs of equal entries: on lanes (the emulated
  // backend, as a GPU does) or, on the CPU, in registers (add_run_sums)
  index_in_runs_.assign(n, 0);
  index_in_steps_.assign(n, 0);
  for (size_t id = 0; id < n; ++id) {
    index_in_runs_[id] = index_in_runs(program.nodes[id].index);
    index_in_steps_[id] = options.backend == Backend::cpu && index_in_steps(program.nodes[id].index);
  }
  grad_zero_spans_.assign(1, {0L, program.n_free});
  scratch_.assign(chains, 0);
  for (const Node& node : program.nodes)
    work_per_chain_ = std::max(work_per_chain_, workspace_per_chain(program, node));
  work_.assign(chains * work_per_chain_, 0.0);
  // Nodes without the chain dimension do not depend on the state: evaluate
  // them once, here (the observation stage copies its row data from them).
  // When tiled, the stages read the row data of data nodes from the program
  // itself (or share one copy of it: row_store.hpp), so those are left
  // empty, a whole copy of the data fewer at the peak, unless another node
  // without the chain dimension is computed from them.
  std::vector<char> computed(n, 0);
  for (size_t k = n; k-- > 0;) {
    const Node& node = program.nodes[k];
    if (node.chain) continue;
    if (!(tiled_ && node.op == Op::data && node.extent >= 0)) computed[k] = 1;
    if (computed[k])
      for (int in : node.inputs) computed[in] = 1;
  }
  for (size_t id = 0; id < n; ++id) {
    const Node& node = program.nodes[id];
    // Row-aligned values with the chain dimension exist only tile by tile (a
    // density's value is its per-chain sum, which the stage adds up); dead
    // nodes are not computed at all when tiled (the plain executor computes
    // them, for tracing).
    if (node.chain && !global(static_cast<int>(id)) && node.op != Op::density) continue;
    if (node.chain && tiled_ && !node.live) continue;
    if (!node.chain && !computed[id]) continue;
    const long len = node.chain ? chains * node.size : node.size;
    values_[id].assign(len, T(0));
    if (node.chain && node.op != Op::density) adjoints_[id].assign(len, T(0));
  }
  for (size_t id = 0; id < n; ++id)
    if (computed[id]) run_forward(make_call(static_cast<int>(id), nullptr, nullptr, nullptr, 0, 1), launch_);
  if (options.world) {
    // Every rank holds different rows: a likelihood over data that is not in
    // the observation stage would be evaluated on each rank's rows without
    // being summed across ranks, silently wrong.
    if (!tiled_)
      throw std::invalid_argument("lockstep: a run across processes needs the observation stage");
    check_rows_split(program);
  }
  pool_ = std::make_unique<ThreadPool>(options_.threads);
  comm_ = std::make_unique<InProcessCommunicator>(options.devices);
  if (tiled_) {
    StageOptions so;
    so.tile_rows = options.tile_rows;
    so.max_tile_rows = options.max_tile_rows;
    so.workers = options_.threads;
    so.shards = options.devices;
    so.reorder_rows = options.reorder_rows;
    so.jacobian = options.jacobian;
    so.tile_kernel = options.tile_kernel && options.backend == Backend::emulated;
    so.row_store = options.row_store;
    so.first_writers = options.first_writers;
    if (so.tile_kernel && options.world)
      throw std::invalid_argument("lockstep: the tile kernel does not run across processes");
    for (size_t e = 0; e < program.extents.size(); ++e)
      stages_.push_back(
          std::make_unique<ObservationStage<T>>(program, static_cast<int>(e), chains, so, values_));
    // The stages keep their row data in tile order: the whole copies can go.
    for (size_t id = 0; id < n; ++id)
      if (!global(static_cast<int>(id)) && !program.nodes[id].chain)
        std::vector<T>().swap(values_[id]);
  }
  // Which values every live reader addresses through its chain stride
  // (elementwise ops and densities through their operands, row dot products
  // as b, s, q or v; the other kernels assume [chains, size]): one pass over
  // the readers, not one per parameter.
  std::vector<char> strided(n, 1);
  for (const Node& reader : program.nodes) {
    if (!reader.live) continue;
    const OpFamily f = op_family(reader.op);
    for (size_t k = 0; k < reader.inputs.size(); ++k)
      if (!(f == OpFamily::unary || f == OpFamily::binary || f == OpFamily::density ||
            (f == OpFamily::rowdot_rows && k >= 1)))
        strided[reader.inputs[k]] = 0;
  }
  for (size_t id = 0; id < n; ++id)
    if (strided[id] && can_alias(static_cast<int>(id))) {
      alias_stride_[id] = program.n_free;
      std::vector<T>().swap(values_[id]);
      std::vector<T>().swap(adjoints_[id]);
    }
  alias_value_.assign(n, nullptr);
  alias_adjoint_.assign(n, nullptr);
  find_first_writers();
  // the buffers are all in place: each node's call over every chain
  calls_.resize(n);
  for (size_t id = 0; id < n; ++id)
    calls_[id] = make_call(static_cast<int>(id), nullptr, nullptr, nullptr, 0, chains);
}

// An unconstrained, live parameter in double on the cpu backend (whose
// readers all address it through its chain stride: the constructor checks
// that), which every observation stage reading it adds to directly (no
// private copies, which are [chains, size]).
template <class T> bool Executor<T>::can_alias(int id) const {
  const Node& n = program_.nodes[id];
  if (!std::is_same<T, double>::value || !options_.alias_parameters ||
      options_.backend != Backend::cpu || options_.world || n.op != Op::param ||
      n.transform != Transform::none || !n.live)
    return false;
  for (const auto& stage : stages_)
    if (stage->reads(id) && !stage->direct(id)) return false;
  return true;
}

// Two kinds of first writer, which store what they write in a gradient
// instead of adding it to zeros (saving, for a prior on millions of
// parameters, a pass zeroing them and a read of each before its add):
// - A density term adds its partials to the adjoints of its operands in its
//   forward call (kernels/density.hpp), and no other call of the global
//   stage's forward pass writes an adjoint; the observation stage and the
//   backward pass come after. So the first density of the forward pass that
//   reads a node whose adjoint exists is the first to write that adjoint:
//   when the node is its target (and none of its other operands) it stores
//   its partials. Only on the cpu backend, whose one lane runs
//   DensityTerm::sum_chain (the lanes path adds element by element).
// - An unconstrained parameter that runs op by op (not aliased: single
//   precision) is the only writer of its slice of the gradient (a
//   constrained one's Jacobian adds there too), unless another parameter's
//   slice overlaps it.
template <class T> void Executor<T>::find_first_writers() {
  if (options_.backend != Backend::cpu || !options_.first_writers) return;
  const int n = static_cast<int>(program_.nodes.size());
  std::vector<char> read(n, 0);  // by a density already
  for (int id = 0; id < n; ++id) {
    const Node& d = program_.nodes[id];
    if (d.op != Op::density || !runs(id)) continue;
    const int t = d.inputs[0];
    const bool has_adjoint = alias_stride_[t] || !adjoints_[t].empty();
    // (a Jacobian's term is not run at all without the Jacobian)
    if (d.family != Family::log_jacobian && has_adjoint && !read[t] &&
        std::count(d.inputs.begin(), d.inputs.end(), t) == 1) {
      first_writer_[id] = 1;
      adjoint_stored_[t] = 1;
    }
    for (int in : d.inputs) read[in] = 1;
  }
  // Which parameters' slices of the state overlap another's, by one sweep
  // over the slices in the order of their starts (a program lowered from R
  // may have tens of thousands of parameters): a slice overlaps an earlier
  // one when it starts before the furthest end so far, and a later one when
  // the next starts before its own end. (An empty slice may be counted as
  // overlapping: that only keeps a parameter from storing.)
  std::vector<std::pair<std::pair<long, long>, int>> slices;  // ((start, end), id)
  for (int id = 0; id < n; ++id) {
    const Node& p = program_.nodes[id];
    if (p.op == Op::param) slices.push_back({{p.offset, p.offset + p.size}, id});
  }
  std::sort(slices.begin(), slices.end());
  std::vector<char> overlapping(n, 0);
  long furthest = std::numeric_limits<long>::min();
  for (size_t k = 0; k < slices.size(); ++k) {
    const long start = slices[k].first.first, end = slices[k].first.second;
    if (start < furthest || (k + 1 < slices.size() && slices[k + 1].first.first < end))
      overlapping[slices[k].second] = 1;
    furthest = std::max(furthest, end);
  }
  // Slices of the gradient a first writer stores: aliased parameters whose
  // adjoint a density stores, and parameters that store their own.
  std::vector<std::pair<long, long>> stored;
  for (int id = 0; id < n; ++id) {
    const Node& p = program_.nodes[id];
    if (p.op == Op::param && runs(id) && p.transform == Transform::none && !overlapping[id])
      first_writer_[id] = 1;
    if ((adjoint_stored_[id] && alias_stride_[id]) || (p.op == Op::param && first_writer_[id]))
      stored.push_back({p.offset, p.offset + p.size});
  }
  std::sort(stored.begin(), stored.end());
  grad_zero_spans_.clear();
  long from = 0;
  for (const auto& s : stored) {
    if (s.first > from) grad_zero_spans_.push_back({from, s.first});
    from = std::max(from, s.second);
  }
  if (from < program_.n_free) grad_zero_spans_.push_back({from, program_.n_free});
}

template <class T>
GlobalBuffers<T> Executor<T>::global_buffers(const double* state, double* grad) {
  GlobalBuffers<T> g{&values_, &adjoints_};
  if constexpr (std::is_same<T, double>::value) {
    for (size_t id = 0; id < alias_stride_.size(); ++id)
      if (alias_stride_[id]) {
        alias_value_[id] = state + program_.nodes[id].offset;
        alias_adjoint_[id] = grad ? grad + program_.nodes[id].offset : nullptr;
      }
    g.alias_stride = &alias_stride_;
    g.alias_value = &alias_value_;
    g.alias_adjoint = &alias_adjoint_;
  }
  return g;
}

template <class T>
const NodeCall<T>& Executor<T>::call(int id, const double* state, double* lp, double* grad,
                                     long c0, long nc, NodeCall<T>& scratch) {
  if (c0 != 0 || nc != chains_) {
    scratch = make_call(id, state, lp, grad, c0, nc);
    return scratch;
  }
  // Over every chain, so on one thread: the node's own call, brought up to
  // date in place (a copy of its 440 bytes took as long as making it anew).
  NodeCall<T>& c = calls_[id];
  if constexpr (std::is_same<T, double>::value) {
    // an aliased parameter's slot is its slice of this call's state and gradient
    auto alias = [&](Slot<T>& s, int k) {
      if (!alias_stride_[k]) return;
      const long at = program_.nodes[k].offset;
      s.value = state ? state + at : nullptr;
      s.adjoint = grad ? grad + at : nullptr;
    };
    const Node& node = program_.nodes[id];
    alias(c.out, id);
    for (size_t k = 0; k < node.inputs.size(); ++k) alias(c.in[k], node.inputs[k]);
  }
  c.state = state;
  c.grad = grad;
  c.gradient = grad != nullptr;
  c.lp = lp;
  return c;
}

template <class T>
NodeCall<T> Executor<T>::make_call(int id, const double* state, double* lp, double* grad, long c0,
                                   long nc) {
  const Node& node = program_.nodes[id];
  NodeCall<T> c;
  c.node = &kernel_nodes_[id];
  // Chain group [c0, c0 + nc): chain-carrying buffers are chain-major, so the
  // group's part starts c0 values in.
  auto slot = [&](int k) {
    const Node& n = program_.nodes[k];
    if constexpr (std::is_same<T, double>::value) {
      if (alias_stride_[k]) {  // the state's and the gradient's own slices
        const long at = c0 * program_.n_free + n.offset;
        Slot<T> s = whole_slot(n, state ? state + at : nullptr, grad ? grad + at : nullptr);
        s.stride = program_.n_free;
        return s;
      }
    }
    const long offset = n.chain ? c0 * n.size : 0;
    return whole_slot(n, values_[k].data() + offset,
                      adjoints_[k].empty() ? nullptr : adjoints_[k].data() + offset);
  };
  c.out = slot(id);
  for (size_t k = 0; k < node.inputs.size(); ++k) c.in[k] = slot(node.inputs[k]);
  c.index = node.index.data();
  c.chains = nc;
  c.state = state ? state + c0 * program_.n_free : nullptr;
  c.grad = grad ? grad + c0 * program_.n_free : nullptr;
  c.gradient = grad != nullptr;
  c.first_writer = first_writer_[id];
  c.index_in_runs = index_in_runs_[id];
  c.index_in_steps = index_in_steps_[id];
  c.n_free = program_.n_free;
  c.lp = lp ? lp + c0 : nullptr;
  c.scratch = scratch_.data() + c0;
  // Chain groups run different nodes at the same time, so a group's
  // workspace starts where the largest per chain puts it, whatever the
  // node's own (its chains then use the first nc of theirs).
  c.work = work_.data() + c0 * work_per_chain_;
  c.jacobian = options_.jacobian && node.jacobian;
  return c;
}

template <class T> template <class F> void Executor<T>::for_chain_groups(F&& f) {
  const long groups = std::min<long>(options_.threads, chains_);
  pool_->parallel_for(groups, [&](long g) {
    const long c0 = chains_ * g / groups, c1 = chains_ * (g + 1) / groups;
    f(c0, c1 - c0);
  });
}

template <class T> void Executor<T>::forward(const double* state) {
  std::vector<double> lp(chains_, 0.0);
  const int n = static_cast<int>(program_.nodes.size());
  for (int t : program_.terms) std::fill(values_[t].begin(), values_[t].end(), T(0));
  for_chain_groups([&](long c0, long nc) {
    NodeCall<T> scratch;
    for (int id = 0; id < n; ++id)
      if (program_.nodes[id].chain && global(id) && (program_.nodes[id].live || !tiled_) &&
          !alias_stride_[id])
        run_forward(call(id, state, lp.data(), nullptr, c0, nc, scratch), launch_);
  });
  for (auto& stage : stages_)
    stage->run(global_buffers(state, nullptr), state, lp.data(), false, *pool_, *comm_, launch_,
               options_.world, batch());
}

template <class T>
template <class L>
void Executor<T>::forward_pass(const double* state, double* lp, double* grad, long c0, long nc,
                               L& launch) {
  NodeCall<T> scratch;
  for (int id = 0; id < static_cast<int>(program_.nodes.size()); ++id)
    if (runs(id)) run_forward(call(id, state, lp, grad, c0, nc, scratch), launch);
}

template <class T>
template <class L>
void Executor<T>::backward_pass(const double* state, double* grad, long c0, long nc, L& launch) {
  NodeCall<T> scratch;
  for (int id = static_cast<int>(program_.nodes.size()) - 1; id >= 0; --id)
    if (runs(id)) run_backward(call(id, state, nullptr, grad, c0, nc, scratch), launch);
}

template <class T>
void Executor<T>::record(Recording& r, const double* state, double* lp, double* grad) {
  if (r.valid && r.state == state && r.lp == lp && r.grad == grad) return;
  r.forward.clear();
  r.backward.clear();
  forward_pass(state, lp, grad, 0, chains_, r.forward);
  if (grad) backward_pass(state, grad, 0, chains_, r.backward);
  r.state = state;
  r.lp = lp;
  r.grad = grad;
  r.valid = true;
}

template <class T>
void Executor<T>::log_density(const double* state, double* lp, double* grad) {
  const int n = static_cast<int>(program_.nodes.size());
  std::fill(lp, lp + chains_, 0.0);
  for (int t : program_.terms) std::fill(values_[t].begin(), values_[t].end(), T(0));
  // (but not what first writers store: find_first_writers())
  auto zero_gradient = [&](long c0, long nc) {
    for (long c = c0; c < c0 + nc; ++c)
      for (const auto& s : grad_zero_spans_)
        std::fill(grad + c * program_.n_free + s.first, grad + c * program_.n_free + s.second, 0.0);
    for (int id = 0; id < n; ++id) {
      auto& a = adjoints_[id];
      if (!a.empty() && !adjoint_stored_[id]) {
        const long size = program_.nodes[id].size;
        std::fill(a.begin() + c0 * size, a.begin() + (c0 + nc) * size, T(0));
      }
    }
  };
  // Every chain on one thread: the recorded launches. Chain groups on
  // several threads: each group's calls, made for it.
  Recording* recording = nullptr;
  if (std::min<long>(options_.threads, chains_) == 1) {
    recording = grad ? &with_gradient_ : &without_gradient_;
    record(*recording, state, lp, grad);
    if (grad) zero_gradient(0, chains_);
    recording->forward.replay(launch_);
  } else {
    for_chain_groups([&](long c0, long nc) {
      if (grad) zero_gradient(c0, nc);
      forward_pass(state, lp, grad, c0, nc, launch_);
    });
  }
  for (auto& stage : stages_)
    stage->run(global_buffers(state, grad), state, lp, grad != nullptr, *pool_, *comm_, launch_,
               options_.world, batch());
  if (!grad) return;
  if (recording) {
    recording->backward.replay(launch_);
    return;
  }
  for_chain_groups([&](long c0, long nc) { backward_pass(state, grad, c0, nc, launch_); });
}

template <class T> void Executor<T>::set_minibatch(const Minibatch& batch) {
  if (batch.active()) {
    if (!tiled_ || stages_.empty())
      throw std::invalid_argument(
          "lockstep: minibatches need a likelihood whose rows are independent observations "
          "(an observation stage); this model has none");
    for (long stride : alias_stride_)
      if (stride)
        throw std::invalid_argument(
            "lockstep: minibatches need an executor without aliased parameters");
  }
  minibatch_ = batch;
  if (options_.world) minibatch_.part = static_cast<uint32_t>(options_.world->rank());
}

template class Executor<double>;
template class Executor<float>;

}  // namespace lockstep
