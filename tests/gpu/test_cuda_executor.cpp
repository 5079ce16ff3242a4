// The CUDA executor (backends/cuda_executor.hpp) against the CPU executor:
// log density and gradient of programs that cover every op of ops.def, every
// family of distributions.def (truncated too), every parameter transform, and
// two regressions on 100003 rows (many GPU blocks), for 1, 3 and 8 chains, in
// double precision (within 1e-11 of the CPU) and in single precision (float32
// values with double sums, within a few 1e-4 of the CPU's double).
//
// Each program is run through:
//   * log_density with a gradient, twice (the executor must reset its buffers
//     between calls), without a gradient (the same lp), and at a second state;
//   * log_density_device with state, lp and grad in device memory (device_alloc),
//     whose results must equal those of log_density.
//
// Only for machines with an NVIDIA GPU (tests/gpu/README.md): every test that
// needs the device FAILS when none is visible. Build and run:
//   bash tests/gpu/build.sh && ./build/gpu/test_cuda_executor
//
// Built with -DLOCKSTEP_GPU_TEST_STANDIN (no CUDA objects needed) the same
// comparisons run on a machine without a GPU, with the emulated backend standing
// in for the double executor and the CPU's Executor<float> for the single one:
// a check of the programs and of the tolerances, not of the GPU.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "family_programs.hpp"
#include "helpers.hpp"
#include "elementwise_ops.hpp"
#include "sampler_helpers.hpp"
#include "lockstep/backends/cuda.hpp"
#include "lockstep/backends/cuda_executor.hpp"
#include "lockstep/communicator.hpp"
#include "lockstep/device_shards.hpp"
#include "lockstep/executor.hpp"
#include "lockstep/ir.hpp"
#include "lockstep/planner.hpp"
#include "lockstep/sampler/chain_vectors.hpp"
#include "lockstep/sampler/chees.hpp"
#include "lockstep/sampler/hmc.hpp"
#include "lockstep/sampler/nuts.hpp"
#include "lockstep/owned_shard.hpp"
#include "lockstep/shards.hpp"
#include "lockstep/optimiser.hpp"
#include "lockstep/svi.hpp"
#include "models.hpp"

using namespace lstest;
using lockstep::ExecOptions;
using lockstep::OpFamily;
using lockstep::Target;

namespace {

const long chain_counts[] = {1, 3, 8};

// ------------------------------------------------------------ the device

#ifdef LOCKSTEP_GPU_TEST_STANDIN
void require_gpu() {}
#else
void require_gpu() {
  static const bool visible = !lockstep::cuda::devices().empty();
  if (!visible) {
    const int v = lockstep::cuda::runtime_version();
    FAIL("no CUDA device is visible (lockstep::cuda::devices() is empty): this binary tests "
         "the CUDA executor and must be run on a machine with an NVIDIA GPU and a driver that "
         "supports the CUDA runtime it was built with ("
         << v / 1000 << "." << (v % 1000) / 10 << ", linked statically)");
  }
}
#endif

// The GPUs the executor under test runs on: empty, options.gpu alone; two or
// more, the multi-GPU executor's shards (a device may repeat).
std::vector<int> gpus_under_test;

// The GPUs to test several shards on: device 0 twice (shards taking turns on
// one GPU, through copies), and, with two or more GPUs, every one of them
// (through NCCL where it loads).
std::vector<std::vector<int>> multi_gpu_sets() {
  std::vector<std::vector<int>> sets = {{0, 0}};
#ifndef LOCKSTEP_GPU_TEST_STANDIN
  const size_t n = lockstep::cuda::devices().size();
  if (n >= 2) {
    std::vector<int> all;
    for (size_t i = 0; i < n; ++i) all.push_back(static_cast<int>(i));
    sets.push_back(all);
  }
#endif
  return sets;
}

// The executor under test.
std::unique_ptr<Target> make_gpu(const Program& p, long chains, const ExecOptions& options,
                                 bool single) {
#ifdef LOCKSTEP_GPU_TEST_STANDIN
  if (!gpus_under_test.empty()) {  // shards on the emulated backend
    ExecOptions o = options;
    o.observation_stage = false;
    o.backend = Backend::emulated;
    o.geometry = EmulatedGeometry{5, 32};
    const int shards = static_cast<int>(gpus_under_test.size());
    if (single) return lockstep::ShardedTarget::make<float>(p, chains, o, shards);
    return lockstep::ShardedTarget::make<double>(p, chains, o, shards);
  }
  ExecOptions o = options;
  o.observation_stage = options.tile_kernel;  // the emulated tile kernel, or op by op
  if (single) {
    o.backend = Backend::cpu;
    return std::unique_ptr<Target>(new Executor<float>(p, chains, o));
  }
  o.backend = Backend::emulated;
  o.geometry = EmulatedGeometry{5, 32};
  return std::unique_ptr<Target>(new Executor<double>(p, chains, o));
#else
  ExecOptions o = options;
  if (!gpus_under_test.empty()) o.gpus = gpus_under_test, o.gpu = gpus_under_test[0];
  return lockstep::cuda::make_executor(p, chains, o, single);
#endif
}

#ifndef LOCKSTEP_GPU_TEST_STANDIN
// n doubles of device memory, freed on scope exit (a failed REQUIRE included).
struct DeviceBuffer {
  double* p;
  long n;
  explicit DeviceBuffer(long size) : p(lockstep::cuda::device_alloc(size)), n(size) {}
  ~DeviceBuffer() { lockstep::cuda::device_free(p); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
};
#endif

// log_density_device on device copies of the state, with lp and grad buffers
// filled with junk first (the executor must overwrite them); grad may be null.
void device_path(Target& ex, const std::vector<double>& state, std::vector<double>& lp,
                 std::vector<double>* grad) {
#ifdef LOCKSTEP_GPU_TEST_STANDIN
  ex.log_density(state.data(), lp.data(), grad ? grad->data() : nullptr);
#else
  auto* dev = dynamic_cast<lockstep::cuda::DeviceExecutor*>(&ex);
  REQUIRE(dev != nullptr);
  const long n_state = static_cast<long>(state.size());
  const long n_lp = static_cast<long>(lp.size());
  const long n_grad = grad ? static_cast<long>(grad->size()) : 0;
  DeviceBuffer s(n_state), l(n_lp), g(std::max(n_grad, 1L));
  lockstep::cuda::copy_to_device(s.p, state.data(), n_state);
  const std::vector<double> junk(std::max(n_lp, n_grad), 123.25);
  lockstep::cuda::copy_to_device(l.p, junk.data(), n_lp);
  if (grad) lockstep::cuda::copy_to_device(g.p, junk.data(), n_grad);
  dev->log_density_device(s.p, l.p, grad ? g.p : nullptr);
  dev->synchronize();
  lockstep::cuda::copy_to_host(lp.data(), l.p, n_lp);
  if (grad) lockstep::cuda::copy_to_host(grad->data(), g.p, n_grad);
#endif
}

// ------------------------------------------------------------ programs

// Where a coordinate of the free state is drawn from: a Domain of
// elementwise_ops.hpp (shared with the Catch2 tests of the core).
double draw(std::mt19937& rng, const Domain& d) { return d.draw(rng, 1)[0]; }

std::vector<double> draw_vector(std::mt19937& rng, long n, const Domain& d) {
  return d.draw(rng, n);
}

// Tolerances of the double-precision executor against the CPU's.
struct Tol {
  double lp_rel = 1e-11, lp_abs = 1e-12;
  double grad_rel = 1e-11, grad_abs = 1e-12;
  double grad_scale = 1e-13;  // added to grad_abs: times the chain's largest |gradient|
};

// A program, where each coordinate of its state is drawn from, and how it is run.
struct Case {
  std::string label;
  Program p;
  std::vector<Domain> domains;                // one per coordinate of the free state
  std::function<void(long, double*)> fix;     // edits chain c's drawn state (may be empty)
  Tol tol;
  ExecOptions options;
};

// Builds a program node by node; parameters take the next coordinates of the
// state, each with the domain its values are drawn from.
struct Builder {
  Program p;
  std::vector<Domain> domains;
  std::mt19937 rng;

  explicit Builder(unsigned seed) : rng(seed) {}

  long next() const { return static_cast<long>(domains.size()); }
  int param(long size, Domain d, Transform t = Transform::none, double lower = 0,
            double upper = 0, std::vector<long> dim = {}) {
    const int id = p.add(param_node(size, next(), t, lower, upper, std::move(dim)));
    domains.insert(domains.end(), size, d);
    return id;
  }
  int matrix(long rows, long cols, Domain d = any_value) {
    return param(rows * cols, d, Transform::none, 0, 0, {rows, cols});
  }
  int data(std::vector<double> v, std::vector<long> dim = {}) {
    return p.add(data_node(std::move(v), std::move(dim)));
  }
  int node(Node n) { return p.add(std::move(n)); }
  void term(Node n) { add_term(p, std::move(n)); }
  // normal(target, mean = random data of its shape, sd = 1.3): a scalar
  // objective whose gradient reaches every element of the target.
  void objective(int target) {
    const Node& t = p.nodes[target];
    const int mean = data(draw_vector(rng, t.size, Domain{-1, 1}), t.dim);
    const int sd = data({1.3}, {1, 1});
    term(density_node(Family::normal, {target, mean, sd}));
  }
  Case finish(std::string label, Tol tol = Tol()) {
    Case c;
    c.label = std::move(label);
    p.n_free = next();
    lockstep::plan(p);
    c.p = std::move(p);
    c.domains = std::move(domains);
    c.tol = tol;
    return c;
  }
};

// rowdot_rows over inputs {a, b}, {a, b, v} or {a, b, v, p}: a column of a's rows.
Node rowdot_node(std::vector<int> inputs, std::vector<long> index, const Program& p) {
  Node n;
  n.op = Op::rowdot_rows;
  n.dim = {p.nodes[inputs[0]].dim[0], 1};
  n.size = n.dim[0];
  n.inputs = std::move(inputs);
  n.index = std::move(index);
  return n;
}

std::vector<long> random_index(std::mt19937& rng, long n, long range) {
  std::vector<long> v(n);
  for (long& i : v) i = static_cast<long>(rng() % static_cast<unsigned long>(range));
  return v;
}

// ---- unary ops (their domains: elementwise_ops.hpp)

// One program per unary op: op(a 2 x 3 parameter), and op(data) (computed once,
// on the host) times op(a scalar parameter).
std::vector<Case> unary_cases() {
  std::vector<Case> out;
  unsigned seed = 1100;
  for (const OpInfo& o : all_ops()) {
    if (o.family != OpFamily::unary) continue;
    const Domain& dom = unary_domain(o.name);
    Builder b(++seed);
    const int x = b.matrix(2, 3, dom);
    const int y = b.node(unary_node(o.op, x, b.p));
    b.objective(y);
    const int dd = b.data(draw_vector(b.rng, 4, dom));
    const int yd = b.node(unary_node(o.op, dd, b.p));
    const int s = b.param(1, dom);
    const int ys = b.node(unary_node(o.op, s, b.p));
    const int z = b.node(binary_node(Op::mul, yd, ys, b.p));
    b.objective(z);
    out.push_back(b.finish("unary op " + o.name));
  }
  return out;
}

// ---- binary ops (their domains: elementwise_ops.hpp)

// An operand: F the 3 x 4 output's shape, S a scalar, R a 1 x 4 row vector, C a
// 3 x 1 column vector; a parameter or data.
struct Operand {
  char kind;
  bool param;
};

struct Instance {
  Operand a, b;
};

const Instance binary_instances[] = {
    {{'F', true}, {'F', true}},   {{'S', true}, {'F', true}},   {{'F', true}, {'S', true}},
    {{'S', true}, {'S', true}},   {{'F', true}, {'R', true}},   {{'R', true}, {'F', true}},
    {{'F', true}, {'C', true}},   {{'C', true}, {'F', true}},   {{'R', true}, {'C', true}},
    {{'C', true}, {'R', true}},   {{'F', false}, {'F', true}},  {{'F', true}, {'F', false}},
    {{'S', false}, {'F', true}},  {{'F', true}, {'S', false}},  {{'R', false}, {'F', true}},
    {{'F', true}, {'C', false}},  {{'C', false}, {'R', true}},  {{'S', true}, {'R', false}},
    {{'F', false}, {'R', false}},  // data only: reaches a parameter through an add
};

// One program per binary op holding every instance above, x op x, and for pow
// a negative base to integer powers.
std::vector<Case> binary_cases() {
  std::vector<Case> out;
  unsigned seed = 1200;
  const long rows = 3, cols = 4;
  for (const OpInfo& o : all_ops()) {
    if (o.family != OpFamily::binary) continue;
    const BinaryRef* bd = &binary_domain(o.name);
    Builder b(++seed);
    auto make = [&](const Operand& x, const Domain& d) {
      const long r = x.kind == 'F' || x.kind == 'C' ? rows : 1;
      const long c = x.kind == 'F' || x.kind == 'R' ? cols : 1;
      if (x.param) return b.param(r * c, d, Transform::none, 0, 0, {r, c});
      return b.data(draw_vector(b.rng, r * c, d), {r, c});
    };
    for (const Instance& in : binary_instances) {
      const int x = make(in.a, bd->a);
      const int y = make(in.b, bd->b);
      const int z = b.node(broadcast_node(o.op, x, y, b.p));
      if (in.a.param || in.b.param) {
        b.objective(z);
      } else {
        const int q = b.param(b.p.nodes[z].size, any_value, Transform::none, 0, 0, b.p.nodes[z].dim);
        b.objective(b.node(binary_node(Op::add, z, q, b.p)));
      }
    }
    const int same = b.matrix(rows, cols, bd->same);
    b.objective(b.node(binary_node(o.op, same, same, b.p)));
    if (o.op == Op::pow) {
      const int base = b.matrix(rows, cols, Domain{-2, -0.5});
      const int k = b.data({2, 3, -1, -2, 1, 0, 3, -3, 2, 4, -1, 1}, {rows, cols});
      b.objective(b.node(binary_node(Op::pow, base, k, b.p)));
    }
    out.push_back(b.finish("binary op " + o.name));
  }
  return out;
}

// ---- the other ops, as in test_ops.cpp and test_ops_shapes.cpp

Case sum_case() {
  Builder b(1301);
  const int x = b.matrix(2, 3);
  const int s = b.node(sum_node(x));
  const int xs = b.param(1, any_value);
  const int ss = b.node(sum_node(xs));  // a scalar's sum
  const int d = b.data(draw_vector(b.rng, 5, Domain{-1, 1}));
  const int sd = b.node(sum_node(d));  // data only
  const int centred = b.node(binary_node(Op::sub, x, s, b.p));  // the sum broadcast back
  const int scaled = b.node(binary_node(Op::mul, centred, sd, b.p));
  const int shifted = b.node(binary_node(Op::add, ss, scaled, b.p));
  b.objective(s);
  b.objective(shifted);
  return b.finish("sum");
}

Case rowsum_colsum_case() {
  Builder b(1302);
  const long R = 3, K = 4;
  const int x = b.matrix(R, K, Domain{-1.5, 1.5});
  const int row = b.matrix(1, K, Domain{-1.5, 1.5});
  const int d = b.data(draw_vector(b.rng, 10, Domain{-1, 1}), {5, 2});
  const int s = b.param(1, Domain{-1.5, 1.5});
  const int ex = b.node(unary_node(Op::exp, x, b.p));
  for (int t : {b.node(rowsum_node(x, b.p)), b.node(colsum_node(x, b.p)),
                b.node(rowsum_node(row, b.p)), b.node(colsum_node(row, b.p)),
                b.node(binary_node(Op::mul, b.node(rowsum_node(d, b.p)), s, b.p)),
                b.node(binary_node(Op::mul, s, b.node(colsum_node(d, b.p)), b.p)),
                b.node(rowsum_node(ex, b.p))})
    b.objective(t);
  return b.finish("rowsum and colsum");
}

Case matmul_case() {
  Builder b(1303);
  auto data_matrix = [&](long r, long c) {
    return b.data(draw_vector(b.rng, r * c, any_value), {r, c});
  };
  const int A = b.matrix(3, 4), B = b.matrix(4, 2);
  b.objective(b.node(matmul_node(A, B, b.p)));  // param %*% param
  const int D1 = data_matrix(3, 4), B1 = b.matrix(4, 2);
  b.objective(b.node(matmul_node(D1, B1, b.p)));  // data %*% param (param on the right)
  const int A2 = b.matrix(3, 4), D2 = data_matrix(4, 2);
  b.objective(b.node(matmul_node(A2, D2, b.p)));  // param %*% data (param on the left)
  const int D3 = data_matrix(5, 3), v = b.matrix(3, 1);
  b.objective(b.node(matmul_node(D3, v, b.p)));  // data %*% param vector
  const int r = b.matrix(1, 3), M = b.matrix(3, 2);
  b.objective(b.node(matmul_node(r, M, b.p)));  // param row %*% param
  const int sc = b.matrix(1, 1), r2 = b.matrix(1, 3);
  b.objective(b.node(matmul_node(sc, r2, b.p)));  // param scalar %*% param row
  const int D4 = data_matrix(2, 3), D5 = data_matrix(3, 2);
  const int dd = b.node(matmul_node(D4, D5, b.p));  // data %*% data: no chain
  const int q = b.matrix(2, 2);
  b.objective(b.node(binary_node(Op::mul, dd, q, b.p)));
  return b.finish("matmul");
}

Case transpose_case() {
  Builder b(1304);
  const long R = 3, K = 4;
  const Domain dom{-1.5, 1.5};
  const int x = b.matrix(R, K, dom);
  const int tx = b.node(transpose_node(x, b.p));
  const int ttx = b.node(transpose_node(tx, b.p));
  const int v = b.param(5, dom);
  const int tv = b.node(transpose_node(v, b.p));
  const int d = b.data(draw_vector(b.rng, 6, Domain{-1, 1}), {2, 3});
  const int td = b.node(transpose_node(d, b.p));
  const int s = b.param(1, dom);
  const int tds = b.node(binary_node(Op::mul, td, s, b.p));
  const int gram = b.node(matmul_node(tx, x, b.p));
  for (int t : {tx, ttx, tv, tds, gram}) b.objective(t);
  return b.finish("transpose");
}

Case gather_case() {
  Builder b(1305);
  const int x = b.param(5, any_value);
  const int g = b.node(gather_node(x, {4, 0, 0, 2, 4, 4, 1}));  // repeats 0 and 4, skips 3
  const int m = b.matrix(2, 3);
  const int gm = b.node(gather_node(m, {5, 1, 3, 3}));  // flat column-major indices
  const int s = b.param(1, any_value);
  const int gs = b.node(gather_node(s, {0, 0, 0}));
  const int d = b.data({10, 20, 30});
  const int gd = b.node(gather_node(d, {2, 2, 0, 1, 2, 0, 1}));  // data: no chain
  b.objective(b.node(binary_node(Op::mul, g, gd, b.p)));
  b.objective(gm);
  b.objective(gs);
  return b.finish("gather with repeated indices");
}

Case gather_rows_case() {
  Builder b(1306);
  const long G = 4, K = 3;
  const int x = b.matrix(G, K);
  const int g = b.node(gather_rows_node(x, {3, 0, 0, 2, 3, 3}, b.p));
  const int v = b.param(G, any_value);
  const int gv = b.node(gather_rows_node(v, {1, 1, 0, 3}, b.p));
  const int one_row = b.matrix(1, K);
  const int g1 = b.node(gather_rows_node(one_row, {0, 0, 0}, b.p));
  const int dm = b.data(draw_vector(b.rng, 6, Domain{-1, 1}), {3, 2});
  const int gd = b.node(gather_rows_node(dm, {2, 2, 0, 1, 2}, b.p));
  const int s = b.param(1, any_value);
  const int gds = b.node(binary_node(Op::mul, gd, s, b.p));
  for (int t : {g, gv, g1, gds}) b.objective(t);
  return b.finish("gather_rows with repeated rows");
}

// rowdot_rows with inputs {a, b}, {a, b, v} and {a, b, v, p} (p per row or a
// scalar, v a parameter or data), a a parameter or data; and one fused by the
// planner from rowsum(a * b[index, ]).
Case rowdot_case() {
  Builder b(1307);
  const long K = 3, G = 4;
  const std::vector<long> index = {2, 0, 0, 2, 3, 3, 3, 1, 2};  // runs, repeats, all groups
  const long N = static_cast<long>(index.size());
  const Domain dom{-1, 1};
  // scale: 0 none; 1 a row vector of parameters; 2 one parameter; 3 a row
  // vector of data (a scaled rowdot: b's columns times s, input 2)
  for (bool a_param : {false, true})
    for (int scale = 0; scale <= 3; ++scale)
    for (int extras = 0; extras <= 4; ++extras) {
      if (scale > 0 && (a_param || extras == 3)) continue;  // enough forms
      const int a = a_param ? b.matrix(N, K, dom) : b.data(draw_vector(b.rng, N * K, dom), {N, K});
      const int bb = b.matrix(G, K, dom);
      std::vector<int> inputs = {a, bb};
      if (scale == 1) inputs.push_back(b.matrix(1, K, dom));
      if (scale == 2) inputs.push_back(b.matrix(1, 1, dom));
      if (scale == 3) inputs.push_back(b.data(draw_vector(b.rng, K, dom), {1, K}));
      if (extras >= 1)
        inputs.push_back(extras == 4 ? b.data(draw_vector(b.rng, K, dom), {K, 1})
                                     : b.matrix(K, 1, dom));
      if (extras == 2) inputs.push_back(b.matrix(N, 1, dom));
      if (extras >= 3) inputs.push_back(b.matrix(1, 1, dom));
      Node n = rowdot_node(inputs, index, b.p);
      n.scaled = scale > 0;
      b.objective(b.node(n));
    }
  const int a = b.data(draw_vector(b.rng, N * K, dom), {N, K});
  const int bb = b.matrix(G, K, dom);
  const int gathered = b.node(gather_rows_node(bb, index, b.p));
  const int prod = b.node(binary_node(Op::mul, a, gathered, b.p));
  b.objective(b.node(rowsum_node(prod, b.p)));  // fused into rowdot_rows(a, b)
  return b.finish("rowdot_rows, every input form");
}

// prod and cumprod over zeros: chain c has (c % 3) zeros in z.
void zeros_in(double* z, long c, long first, long second) {
  if (c % 3 >= 1) z[first] = 0;
  if (c % 3 >= 2) z[second] = 0;
}

Case fold_case() {
  Builder b(1308);
  const long n = 6;
  const int x = b.matrix(2, 3, Domain{0.5, 1.5, true});
  const int z = b.matrix(3, 2, Domain{0.5, 1.5, true});
  const int s = b.param(1, Domain{0.5, 1.5});
  const int d = b.data({0.5, -3, 2, 2, -3, 1});  // ties: the first one counts
  const int mx = b.node(fold_node(Op::max, x));
  const int mn = b.node(fold_node(Op::min, x));
  const int pr = b.node(fold_node(Op::prod, x));
  const int pz = b.node(fold_node(Op::prod, z));
  const int ms = b.node(fold_node(Op::max, s));
  const int md = b.node(fold_node(Op::max, d));
  const int nd = b.node(fold_node(Op::min, d));
  const int pd = b.node(fold_node(Op::prod, d));
  const int mix = b.node(binary_node(Op::mul, mx, md, b.p));
  const int mix2 = b.node(binary_node(Op::add, nd, b.node(binary_node(Op::mul, pd, mn, b.p)), b.p));
  for (int t : {mn, pr, pz, ms, mix, mix2}) b.objective(t);
  Case c = b.finish("max, min and prod");
  c.fix = [n](long ch, double* st) { zeros_in(st, ch, n + 2, n + 4); };
  return c;
}

Case cumulative_case() {
  Builder b(1309);
  const long n = 6;
  const int x = b.matrix(2, 3, Domain{-1.5, 1.5});
  const int z = b.matrix(3, 2, Domain{-1.5, 1.5});
  const int d = b.data({1, 2, 3, 4}, {2, 2});
  const int cs = b.node(cumulative_node(Op::cumsum, x, b.p));
  const int cp = b.node(cumulative_node(Op::cumprod, x, b.p));
  const int cz = b.node(cumulative_node(Op::cumprod, z, b.p));
  const int cd = b.node(cumulative_node(Op::cumsum, d, b.p));  // data only
  const int s = b.param(1, Domain{-1.5, 1.5});
  const int cds = b.node(binary_node(Op::mul, cd, s, b.p));
  const int cx = b.node(cumulative_node(Op::cummax, x, b.p));
  const int cn = b.node(cumulative_node(Op::cummin, z, b.p));
  for (int t : {cs, cp, cz, cds, cx, cn}) b.objective(t);
  Case c = b.finish("cumsum, cumprod, cummax and cummin");
  c.fix = [n](long ch, double* st) { zeros_in(st, ch, n + 1, n + 4); };
  return c;
}

Case concat_case() {
  Builder b(1310);
  const int a = b.matrix(2, 2);
  const int v = b.param(3, any_value);
  const int s = b.param(1, any_value);
  const int d = b.data({10, 20, 30});
  const int ab = b.node(concat_node(a, v, b.p));            // 7 x 1
  const int ad = b.node(concat_node(d, a, b.p, {7, 1}));    // data first
  const int abs_ = b.node(concat_node(ab, s, b.p, {2, 4}));  // a 2 x 4 result
  const int ss = b.node(concat_node(s, s, b.p));             // one node twice
  for (int t : {ad, abs_, ss}) b.objective(t);
  return b.finish("concat");
}

// chol, chol2inv, solve, backsolve, forwardsolve and eigen (one lane per chain) on
// diagonally dominant matrices: parameter and data operands, a solve whose
// right-hand side is the matrix itself, and chol of a Gram matrix.
Case linalg_case() {
  Builder b(1311);
  const long n = 4;
  const Domain small{-0.5, 0.5};
  std::vector<double> eye(n * n, 0.0);
  for (long i = 0; i < n; ++i) eye[i + i * n] = 3;
  const int I3 = b.data(eye, {n, n});
  const int A = b.node(binary_node(Op::add, b.matrix(n, n, small), I3, b.p));
  const int B = b.matrix(n, 2);
  const int D = b.node(binary_node(Op::add, b.data(draw_vector(b.rng, n * n, small), {n, n}), I3, b.p));
  const int R = b.node(linalg_node(Op::chol, A, b.p));
  b.objective(R);
  b.objective(b.node(linalg_node(Op::chol2inv, R, b.p)));
  b.objective(b.node(linalg_node(Op::solve, A, b.p, B)));
  b.objective(b.node(linalg_node(Op::solve, D, b.p, B)));  // data matrix
  b.objective(b.node(linalg_node(Op::solve, A, b.p, A)));  // one node as both operands
  b.objective(b.node(linalg_node(Op::backsolve, A, b.p, B)));
  b.objective(b.node(linalg_node(Op::forwardsolve, A, b.p, b.data(draw_vector(b.rng, n, any_value), {n, 1}))));
  const int Z = b.matrix(n, n, small);
  const int G = b.node(binary_node(Op::add, b.node(matmul_node(b.node(transpose_node(Z, b.p)), Z, b.p)), I3, b.p));
  b.objective(b.node(linalg_node(Op::chol, G, b.p)));
  // eigen(G): n x (n + 1), the values then the vectors (Jacobi rotations per lane)
  Node e = linalg_node(Op::eigen, G, b.p);
  e.dim = {n, n + 1};
  e.size = n * (n + 1);
  b.objective(b.node(e));
  Tol tol;
  tol.grad_scale = 1e-12;
  return b.finish("chol, chol2inv, solve, backsolve, forwardsolve and eigen", tol);
}

std::vector<Case> shape_cases() {
  std::vector<Case> out;
  out.push_back(sum_case());
  out.push_back(rowsum_colsum_case());
  out.push_back(matmul_case());
  out.push_back(transpose_case());
  return out;
}

std::vector<Case> index_cases() {
  std::vector<Case> out;
  out.push_back(gather_case());
  out.push_back(gather_rows_case());
  out.push_back(rowdot_case());
  return out;
}

// logpdf: per-element log densities of a normal (a scalar sd broadcast), a
// truncated normal and a poisson on data, combined elementwise (a mixture's
// log-sum-exp uses them so) before the objective.
Case logpdf_case() {
  Builder b(1312);
  const long n = 5;
  const int x = b.param(n, any_value);
  const int mean = b.param(n, any_value);
  const int sd = b.node(unary_node(Op::exp, b.param(1, Domain{-0.5, 0.5}), b.p));
  Node ln;
  ln.op = Op::logpdf;
  ln.dim = b.p.nodes[x].dim;
  ln.size = n;
  ln.family = Family::normal;
  ln.inputs = {x, mean, sd};
  const int lx = b.node(ln);
  const int xt = b.param(n, Domain{-0.9, 1.9}, Transform::interval, -1, 2);
  ln.inputs = {xt, b.param(1, any_value), sd};
  ln.trunc_lower = -1;
  ln.trunc_upper = 2;
  const int lt = b.node(ln);
  Node lp = ln;
  lp.family = Family::poisson;
  lp.trunc_lower = -HUGE_VAL;
  lp.trunc_upper = HUGE_VAL;
  const int lambda = b.node(unary_node(Op::exp, b.param(n, any_value), b.p));
  lp.inputs = {b.data({0, 2, 1, 5, 3}), lambda};
  const int lq = b.node(lp);
  const int both = b.node(binary_node(Op::add, b.node(binary_node(Op::mul, lx, lt, b.p)), lq, b.p));
  b.objective(both);
  return b.finish("logpdf", Tol{1e-10, 1e-11, 1e-10, 1e-11});
}

// The grouped reductions (segment ops, tapply()'s): groups left empty, rows
// left out, and a large input whose groups span many blocks.
Case segment_case() {
  Builder b(1321);
  const int x = b.matrix(11, 2, Domain{0.5, 1.5, true});
  // sum and prod with group 3 empty (0 and 1); max and min of empty groups
  // are -Inf and Inf, whose normal density is 0, so every group has rows
  const std::vector<long> group = {1, 0, 4, 1, -1, 0, 2, 4, 1, -1, 2};
  const std::vector<long> every = {1, 0, 4, 1, -1, 0, 2, 4, 3, -1, 2};
  for (Op op : {Op::segment_sum, Op::segment_prod})
    b.objective(b.node(segment_node(op, x, group, 5, b.p)));
  for (Op op : {Op::segment_max, Op::segment_min})
    b.objective(b.node(segment_node(op, x, every, 5, b.p)));
  const long R = 4099, G = 61;
  const int big = b.matrix(R, 3);
  std::vector<long> big_group = random_index(b.rng, R, G);
  for (long r = 0; r < R; r += 97) big_group[r] = -1;
  b.objective(b.node(segment_node(Op::segment_sum, big, big_group, G, b.p)));
  b.objective(b.node(segment_node(Op::segment_max, big, big_group, G, b.p)));
  Tol tol;
  tol.lp_abs = 1e-9;
  tol.grad_scale = 1e-12;
  return b.finish("segment sum, max, min and prod", tol);
}

std::vector<Case> fold_cumulative_concat_linalg_cases() {
  std::vector<Case> out;
  out.push_back(fold_case());
  out.push_back(cumulative_case());
  out.push_back(concat_case());
  out.push_back(linalg_case());
  out.push_back(logpdf_case());
  out.push_back(segment_case());
  return out;
}

// The ops on values of thousands of elements: every kernel spans many blocks
// (grid-stride loops, cross-block sums, scans and scatter-adds).
Case many_blocks_case() {
  Builder b(1320);
  const long R = 257, K = 33;
  const int M = b.matrix(R, K);
  const int row = b.matrix(1, K);
  const int col = b.param(R, nonzero, Transform::none, 0, 0, {R, 1});
  b.objective(b.node(broadcast_node(Op::mul, M, row, b.p)));
  b.objective(b.node(broadcast_node(Op::div, M, col, b.p)));
  b.objective(b.node(broadcast_node(Op::sub, row, col, b.p)));  // outer, R x K
  b.objective(b.node(rowsum_node(M, b.p)));
  b.objective(b.node(colsum_node(M, b.p)));
  const int tM = b.node(transpose_node(M, b.p));
  b.objective(tM);
  const int W = b.matrix(K, 5);
  b.objective(b.node(matmul_node(M, W, b.p)));
  const int u = b.matrix(R, 1);
  b.objective(b.node(matmul_node(tM, u, b.p)));
  b.objective(b.node(gather_node(M, random_index(b.rng, 20000, R * K))));
  b.objective(b.node(gather_rows_node(M, random_index(b.rng, 1000, R), b.p)));
  const int x = b.param(3000, Domain{-1, 1});
  b.objective(b.node(cumulative_node(Op::cumsum, x, b.p)));
  const int q = b.param(1500, Domain{0.95, 1.05});
  b.objective(b.node(cumulative_node(Op::cumprod, q, b.p)));
  b.objective(b.node(fold_node(Op::prod, q)));
  b.objective(b.node(fold_node(Op::max, M)));
  b.objective(b.node(fold_node(Op::min, M)));
  b.objective(b.node(sum_node(M)));
  b.objective(b.node(concat_node(M, x, b.p)));
  const long Nr = 2000, Kr = 6, Gr = 37;
  const int A = b.data(draw_vector(b.rng, Nr * Kr, Domain{-1, 1}), {Nr, Kr});
  const int B = b.matrix(Gr, Kr);
  const int v = b.matrix(Kr, 1);
  const int off = b.matrix(Nr, 1);
  b.objective(b.node(rowdot_node({A, B, v, off}, random_index(b.rng, Nr, Gr), b.p)));
  Tol tol;
  tol.lp_abs = 1e-9;
  tol.grad_scale = 1e-12;
  return b.finish("every shape op on values spanning many blocks", tol);
}

// ---- every family: the programs of family_programs.hpp

Case family_case(Family f, double lo, double hi) {
  FamilyProgram fp = family_program(f, lo, hi);
  const bool truncated = !(std::isinf(lo) && std::isinf(hi));
  Case c;
  std::ostringstream label;
  label << "family " << lockstep::family_name(f);
  if (truncated) label << " truncated to (" << lo << ", " << hi << ")";
  c.label = label.str();
  c.domains.assign(fp.p.n_free, Domain{-0.8, 0.8});
  c.p = std::move(fp.p);
  // The partials of a truncation's CDF in these families' shape parameters are
  // central differences (step 1e-5 relative): the ulp-level differences
  // between the GPU's and the host's exp, log and lgamma are divided by the
  // step, so those gradients agree to about 1e-10, not 1e-15.
  const bool by_differences =
      truncated && (f == Family::student || f == Family::gamma || f == Family::inverse_gamma ||
                    f == Family::beta || f == Family::chi_squared || f == Family::f);
  if (by_differences) {
    c.tol.grad_rel = 1e-8;
    c.tol.grad_abs = 1e-9;
    c.tol.grad_scale = 1e-9;
  }
  return c;
}

std::vector<Case> family_cases_gpu() {
  std::vector<Case> out;
  for (const FamilyCase& s : family_cases()) out.push_back(family_case(s.f, s.lo, s.hi));
  return out;
}

// ---- parameter transforms, with and without the Jacobian

std::vector<Case> transform_cases() {
  std::vector<Case> out;
  for (bool jacobian : {true, false}) {
    Builder b(1400);
    const Domain dom{-1, 1};
    const int a = b.param(3, dom);                                           // none
    const int lo = b.param(2, dom, Transform::lower, 1.5);                   // > 1.5
    const int up = b.param(2, dom, Transform::upper, 0, -0.5);               // < -0.5
    const int iv = b.param(3, dom, Transform::interval, -2, 3);              // (-2, 3)
    const int pr = b.param(1, dom, Transform::interval, 0, 1);               // a probability
    const int mu = b.param(1, dom);
    const int sd = b.param(1, dom, Transform::lower, 0);
    const int zero = b.data({0});
    const int one = b.data({1});
    const int two = b.data({2});
    b.term(density_node(Family::normal, {a, zero, two}));
    b.term(density_node(Family::normal, {lo, two, one}));
    b.term(density_node(Family::normal, {up, b.data({-1}), one}));
    b.term(density_node(Family::normal, {iv, b.data({0.5}), two}));
    b.term(density_node(Family::bernoulli, {b.data({1, 0, 0, 1, 1, 1}), pr}));
    // scalar parameters for every element: the CPU's prepared loop
    b.term(density_node(Family::normal, {b.data(draw_vector(b.rng, 9, Domain{-2, 2})), mu, sd}));
    b.term(density_node(Family::exponential, {sd, one}));
    // the constrained values inside the program too
    b.objective(b.node(binary_node(Op::mul, lo, up, b.p)));
    b.objective(b.node(binary_node(Op::add, iv, pr, b.p)));
    Case c = b.finish(std::string("parameter transforms none, lower, upper, interval, ") +
                      (jacobian ? "with" : "without") + " the Jacobian");
    c.options.jacobian = jacobian;
    out.push_back(std::move(c));
  }
  return out;
}

// ---- two regressions on N = 100003 rows

const long big_rows = 100003;

// eta = X beta + alpha[group]; y ~ bernoulli_logit(eta) and y ~ bernoulli(ilogit(eta));
// beta ~ normal(0, 2), alpha ~ normal(0, sigma_a), sigma_a ~ exponential(1).
Case logistic_regression_case() {
  const long N = big_rows, K = 4, G = 50;
  Builder b(1500);
  const Domain dom{-1, 1};
  const int beta = b.param(K, dom);
  const int alpha = b.param(G, dom);
  const int sigma_a = b.param(1, dom, Transform::lower, 0);
  const std::vector<double> X = draw_vector(b.rng, N * K, Domain{-1, 1});
  const std::vector<long> group = random_index(b.rng, N, G);
  // y from a "true" model, so that the gradient at a random state is not noise
  const std::vector<double> beta0 = {0.8, -0.5, 0.3, 1.1};
  const std::vector<double> alpha0 = draw_vector(b.rng, G, Domain{-1, 1});
  std::vector<double> y(N);
  for (long i = 0; i < N; ++i) {
    double eta = alpha0[group[i]];
    for (long k = 0; k < K; ++k) eta += X[i + k * N] * beta0[k];
    y[i] = std::uniform_real_distribution<double>(0, 1)(b.rng) < 1 / (1 + std::exp(-eta)) ? 1 : 0;
  }
  const int Xd = b.data(X, {N, K});
  const int eta0 = b.node(matmul_node(Xd, beta, b.p));
  const int a = b.node(gather_node(alpha, group));
  const int eta = b.node(binary_node(Op::add, eta0, a, b.p));
  const int yd = b.data(y);
  b.term(density_node(Family::bernoulli_logit, {yd, eta}));
  const int prob = b.node(unary_node(Op::ilogit, eta, b.p));
  b.term(density_node(Family::bernoulli, {yd, prob}));
  b.term(density_node(Family::normal, {beta, b.data({0}), b.data({2})}));
  b.term(density_node(Family::normal, {alpha, b.data({0}), sigma_a}));
  b.term(density_node(Family::exponential, {sigma_a, b.data({1})}));
  Tol tol;
  tol.lp_abs = 1e-9;
  tol.grad_abs = 1e-9;
  tol.grad_scale = 1e-12;
  return b.finish("hierarchical logistic regression on 100003 rows", tol);
}

// mu = rowSums(X * B[group, ]) + (intercept + X %*% v), which the planner fuses
// into one rowdot_rows(X, B, v, intercept); y ~ normal(mu, sigma).
Case varying_slopes_case() {
  const long N = big_rows, K = 3, G = 40;
  Builder b(1501);
  const Domain dom{-1, 1};
  const int B = b.matrix(G, K, dom);
  const int v = b.matrix(K, 1, dom);
  const int intercept = b.param(1, dom);
  const int sigma = b.param(1, dom, Transform::lower, 0);
  const std::vector<double> X = draw_vector(b.rng, N * K, Domain{-1, 1});
  const std::vector<long> group = random_index(b.rng, N, G);
  const std::vector<double> B0 = draw_vector(b.rng, G * K, Domain{-1, 1});
  std::vector<double> y(N);
  std::normal_distribution<double> noise(0, 0.7);
  for (long i = 0; i < N; ++i) {
    double m = 0.4;
    for (long k = 0; k < K; ++k) m += X[i + k * N] * (B0[group[i] + k * G] + 0.5);
    y[i] = m + noise(b.rng);
  }
  const int Xd = b.data(X, {N, K});
  const int gathered = b.node(gather_rows_node(B, group, b.p));
  const int prod = b.node(binary_node(Op::mul, Xd, gathered, b.p));
  const int rs = b.node(rowsum_node(prod, b.p));
  const int lin = b.node(matmul_node(Xd, v, b.p));
  const int shifted = b.node(binary_node(Op::add, intercept, lin, b.p));
  const int mu = b.node(binary_node(Op::add, rs, shifted, b.p));
  b.term(density_node(Family::normal, {b.data(y), mu, sigma}));
  b.term(density_node(Family::normal, {B, b.data({0}), b.data({1})}));
  b.term(density_node(Family::normal, {v, b.data({0}), b.data({1})}));
  b.term(density_node(Family::normal, {intercept, b.data({0}), b.data({5})}));
  b.term(density_node(Family::exponential, {sigma, b.data({1})}));
  Tol tol;
  tol.lp_abs = 1e-9;
  tol.grad_abs = 1e-9;
  tol.grad_scale = 1e-12;
  return b.finish("varying slopes regression on 100003 rows, fused rowdot_rows", tol);
}

// ------------------------------------------------------------ checks

std::vector<double> draw_state(const Case& k, long chains, std::mt19937& rng) {
  const long D = k.p.n_free;
  std::vector<double> s(chains * D);
  for (long c = 0; c < chains; ++c) {
    for (long j = 0; j < D; ++j) s[c * D + j] = draw(rng, k.domains[j]);
    if (k.fix) k.fix(c, s.data() + c * D);
  }
  return s;
}

struct Reference {
  std::vector<double> lp, grad;
  std::vector<double> scale;  // per chain: |lp| + the sum of |term|, what float rounding scales with
  std::vector<double> gmax;   // per chain: the largest |gradient element|
};

Reference reference(const Program& p, long chains, const std::vector<double>& state,
                    const ExecOptions& options) {
  const long D = p.n_free;
  ExecOptions o = options;
  o.backend = Backend::cpu;
  Reference r;
  r.lp.assign(chains, 0);
  r.grad.assign(chains * D, 0);
  Executor<double> cpu(p, chains, o);
  cpu.log_density(state.data(), r.lp.data(), r.grad.data());
  // the terms' values, from the plain (untiled) executor
  o.observation_stage = false;
  Executor<double> plain(p, chains, o);
  plain.forward(state.data());
  r.scale.assign(chains, 0);
  r.gmax.assign(chains, 0);
  for (long c = 0; c < chains; ++c) {
    r.scale[c] = std::fabs(r.lp[c]);
    for (int t : p.terms) r.scale[c] += std::fabs(plain.value(t)[c]);
    for (long j = 0; j < D; ++j) r.gmax[c] = std::max(r.gmax[c], std::fabs(r.grad[c * D + j]));
  }
  return r;
}

// Mismatches of one comparison, the first few spelled out.
struct Mismatches {
  long count = 0;
  std::ostringstream text;
  Mismatches() { text.precision(17); }
  void add(const char* what, long c, long j, double got, double want) {
    if (count++ < 8) {
      text << "\n  " << what << ", chain " << c;
      if (j >= 0) text << ", coordinate " << j;
      text << ": got " << got << ", want " << want;
    }
  }
  std::string report() const {
    std::ostringstream s;
    s << count << " mismatch(es):" << text.str();
    return s.str();
  }
};

// The double executor's lp and gradient (grad may be null) against the CPU's.
void expect_double(const char* what, const Reference& ref, const std::vector<double>& lp,
                   const std::vector<double>* grad, long chains, long D, const Tol& tol) {
  Mismatches m;
  for (long c = 0; c < chains; ++c) {
    if (!close(lp[c], ref.lp[c], tol.lp_rel, tol.lp_abs)) m.add("lp", c, -1, lp[c], ref.lp[c]);
    if (!grad) continue;
    const double slack = tol.grad_abs + tol.grad_scale * ref.gmax[c];
    for (long j = 0; j < D; ++j) {
      const long k = c * D + j;
      if (!close((*grad)[k], ref.grad[k], tol.grad_rel, slack))
        m.add("gradient", c, j, (*grad)[k], ref.grad[k]);
    }
  }
  INFO(what << " against the cpu executor (double): " << m.report());
  CHECK(m.count == 0);
}

// The single-precision executor against the CPU's double: lp within 2e-4 of
// the sum of the magnitudes it is made of, gradients within 1e-3 relative plus
// 1e-4 of the chain's largest gradient element.
void expect_single(const char* what, const Reference& ref, const std::vector<double>& lp,
                   const std::vector<double>* grad, long chains, long D) {
  Mismatches m;
  for (long c = 0; c < chains; ++c) {
    if (!close(lp[c], ref.lp[c], 0, 1e-6 + 2e-4 * ref.scale[c])) m.add("lp", c, -1, lp[c], ref.lp[c]);
    if (!grad) continue;
    const double slack = 1e-6 + 1e-4 * ref.gmax[c];
    for (long j = 0; j < D; ++j) {
      const long k = c * D + j;
      if (!close((*grad)[k], ref.grad[k], 1e-3, slack))
        m.add("gradient", c, j, (*grad)[k], ref.grad[k]);
    }
  }
  INFO(what << " against the cpu executor (double): " << m.report());
  CHECK(m.count == 0);
}

// Two runs of the same executor: equal up to the order of atomic additions
// (and, in single precision, the float roundings that order can flip).
void expect_same(const char* what, const std::vector<double>& a, const std::vector<double>& b,
                 double rel_tol, double abs_tol) {
  Mismatches m;
  for (size_t i = 0; i < a.size(); ++i)
    if (!close(a[i], b[i], rel_tol, abs_tol)) m.add(what, static_cast<long>(i), -1, a[i], b[i]);
  INFO(what << ": " << m.report());
  CHECK(m.count == 0);
}

void run_case(const Case& k, std::mt19937& rng) {
  const Program& p = k.p;
  const long D = p.n_free;
  for (long chains : chain_counts) {
    INFO(k.label << ", " << chains << " chain(s), " << D << " free coordinates");
    const std::vector<double> state = draw_state(k, chains, rng);
    const std::vector<double> state2 = draw_state(k, chains, rng);
    const Reference ref = reference(p, chains, state, k.options);
    const Reference ref2 = reference(p, chains, state2, k.options);
    for (long c = 0; c < chains; ++c) {
      INFO("the cpu executor's lp of chain " << c << ": " << ref.lp[c] << ", " << ref2.lp[c]);
      REQUIRE(std::isfinite(ref.lp[c]));
      REQUIRE(std::isfinite(ref2.lp[c]));
    }

    {  // double precision
      std::unique_ptr<Target> gpu = make_gpu(p, chains, k.options, false);
      REQUIRE(gpu->dim() == D);
      REQUIRE(gpu->chains() == chains);
      std::vector<double> lp(chains, 99), grad(chains * D, 99);
      gpu->log_density(state.data(), lp.data(), grad.data());
      expect_double("double, first call", ref, lp, &grad, chains, D, k.tol);
      std::vector<double> lp2(chains, 99), grad2(chains * D, 99);
      gpu->log_density(state.data(), lp2.data(), grad2.data());
      expect_double("double, second call at the same state", ref, lp2, &grad2, chains, D, k.tol);
      std::vector<double> lp_only(chains, 99);
      gpu->log_density(state.data(), lp_only.data(), nullptr);
      expect_double("double, without a gradient", ref, lp_only, nullptr, chains, D, k.tol);
      expect_same("double: lp without a gradient vs with one", lp_only, lp, 1e-13, k.tol.lp_abs);
      std::vector<double> lp3(chains, 99), grad3(chains * D, 99);
      gpu->log_density(state2.data(), lp3.data(), grad3.data());
      expect_double("double, at a second state", ref2, lp3, &grad3, chains, D, k.tol);
      // device memory: the same as log_density
      std::vector<double> lp_dev(chains, 99), grad_dev(chains * D, 99);
      device_path(*gpu, state, lp_dev, &grad_dev);
      expect_double("double, log_density_device", ref, lp_dev, &grad_dev, chains, D, k.tol);
      expect_same("double: log_density_device lp vs log_density", lp_dev, lp, 1e-13, k.tol.lp_abs);
      std::vector<double> lp_dev2(chains, 99);
      device_path(*gpu, state2, lp_dev2, nullptr);
      expect_same("double: log_density_device lp without a gradient vs log_density", lp_dev2, lp3,
                  1e-13, k.tol.lp_abs);
    }

    {  // single precision
      std::unique_ptr<Target> gpu = make_gpu(p, chains, k.options, true);
      REQUIRE(gpu->dim() == D);
      REQUIRE(gpu->chains() == chains);
      std::vector<double> lp(chains, 99), grad(chains * D, 99);
      gpu->log_density(state.data(), lp.data(), grad.data());
      expect_single("single, first call", ref, lp, &grad, chains, D);
      std::vector<double> lp2(chains, 99), grad2(chains * D, 99);
      gpu->log_density(state.data(), lp2.data(), grad2.data());
      expect_single("single, second call at the same state", ref, lp2, &grad2, chains, D);
      std::vector<double> lp_only(chains, 99);
      gpu->log_density(state.data(), lp_only.data(), nullptr);
      expect_same("single: lp without a gradient vs with one", lp_only, lp, 1e-6, 1e-9);
      std::vector<double> lp3(chains, 99), grad3(chains * D, 99);
      gpu->log_density(state2.data(), lp3.data(), grad3.data());
      expect_single("single, at a second state", ref2, lp3, &grad3, chains, D);
      std::vector<double> lp_dev(chains, 99), grad_dev(chains * D, 99);
      device_path(*gpu, state2, lp_dev, &grad_dev);
      expect_single("single, log_density_device", ref2, lp_dev, &grad_dev, chains, D);
      expect_same("single: log_density_device lp vs log_density", lp_dev, lp3, 1e-6, 1e-9);
    }
  }
}

void run_cases(const std::vector<Case>& cases, unsigned seed) {
  require_gpu();
  std::mt19937 rng(seed);
  for (const Case& k : cases) run_case(k, rng);
}

// The cases with each observation stage run as the tile kernel
// (ExecOptions::tile_kernel, backends/tile_kernel.cuh).
std::vector<Case> in_tile_kernel(std::vector<Case> cases) {
  for (Case& k : cases) {
    k.options.tile_kernel = true;
    k.label += " (tile kernel)";
  }
  return cases;
}

}  // namespace

// ------------------------------------------------------------ tests

TEST_CASE("cuda executor: a CUDA device is visible", "[cuda]") {
#ifndef LOCKSTEP_GPU_TEST_STANDIN
  const std::vector<lockstep::cuda::DeviceInfo> devs = lockstep::cuda::devices();
  const int v = lockstep::cuda::runtime_version();
  std::printf("CUDA runtime %d.%d, %zu device(s)\n", v / 1000, (v % 1000) / 10, devs.size());
  for (const lockstep::cuda::DeviceInfo& d : devs)
    std::printf("  %d: %s (sm_%d%d, %.1f GiB, %d SMs)\n", d.id, d.name.c_str(), d.major, d.minor,
                d.memory_gb, d.multiprocessors);
#endif
  require_gpu();
  SUCCEED();
}

TEST_CASE("cuda executor: the programs cover every op and family and transform", "[cuda][coverage]") {
  // No device needed: what the programs below hold, once planned. An op counts
  // when a node of it carries the chain dimension and is live (runs on the GPU).
  std::vector<Case> all;
  for (auto make : {unary_cases, binary_cases, shape_cases, index_cases,
                    fold_cumulative_concat_linalg_cases, family_cases_gpu, transform_cases})
    for (Case& c : make()) all.push_back(std::move(c));
  all.push_back(many_blocks_case());
  all.push_back(logistic_regression_case());
  all.push_back(varying_slopes_case());
  std::set<std::string> ops, families, truncated;
  std::set<int> transforms;
  std::set<std::pair<size_t, bool>> rowdot_forms;  // (inputs, scaled)
  bool big_fused = false;
  for (const Case& k : all) {
    INFO(k.label);
    CHECK(static_cast<long>(k.domains.size()) == k.p.n_free);
    CHECK_NOTHROW(lockstep::validate(k.p));
    for (const Node& n : k.p.nodes) {
      if (n.op == Op::data) ops.insert("data");
      if (!(n.chain && n.live)) continue;
      ops.insert(lockstep::op_name(n.op));
      if (n.op == Op::param) transforms.insert(static_cast<int>(n.transform));
      if (n.op == Op::rowdot_rows) {
        rowdot_forms.insert({n.inputs.size(), n.scaled});
        if (n.size == big_rows && n.inputs.size() == 4) big_fused = true;
      }
      if (n.op == Op::density) {
        families.insert(lockstep::family_name(n.family));
        if (!(std::isinf(n.trunc_lower) && std::isinf(n.trunc_upper)))
          truncated.insert(lockstep::family_name(n.family));
      }
    }
  }
  for (const OpInfo& o : all_ops()) {
    INFO("op " << o.name);
    CHECK(ops.count(o.name) == 1);
  }
  const char* const family_names[] = {
#define LS_DIST(name, n_params, continuous, tile) #name,
#include "lockstep/distributions.def"
#undef LS_DIST
  };
  const bool continuous[] = {
#define LS_DIST(name, n_params, continuous, tile) continuous,
#include "lockstep/distributions.def"
#undef LS_DIST
  };
  for (size_t i = 0; i < sizeof continuous / sizeof continuous[0]; ++i) {
    INFO("family " << family_names[i]);
    CHECK(families.count(family_names[i]) == 1);
    // truncated wherever test_distributions.cpp truncates: every continuous family but uniform
    if (continuous[i] && std::string(family_names[i]) != "uniform")
      CHECK(truncated.count(family_names[i]) == 1);
  }
  for (Transform t : {Transform::none, Transform::lower, Transform::upper, Transform::interval})
    CHECK(transforms.count(static_cast<int>(t)) == 1);
  CHECK(rowdot_forms == std::set<std::pair<size_t, bool>>(
                          {{2, false}, {3, false}, {4, false}, {3, true}, {4, true}, {5, true}}));
  CHECK(big_fused);
}

TEST_CASE("cuda executor: unary ops match the cpu executor in double and single precision",
          "[cuda][ops][unary]") {
  require_gpu();
  run_cases(unary_cases(), 2001);
}

TEST_CASE("cuda executor: binary ops broadcasting scalars and rows and columns with and "
          "without the chain dimension",
          "[cuda][ops][binary]") {
  require_gpu();
  run_cases(binary_cases(), 2002);
}

TEST_CASE("cuda executor: sum rowsum colsum matmul transpose", "[cuda][ops][shapes]") {
  require_gpu();
  run_cases(shape_cases(), 2003);
}

TEST_CASE("cuda executor: gather and gather_rows and every form of rowdot_rows",
          "[cuda][ops][gather]") {
  require_gpu();
  run_cases(index_cases(), 2004);
}

TEST_CASE("cuda executor: max min prod cumsum cumprod concat and the linalg ops",
          "[cuda][ops][fold][linalg]") {
  require_gpu();
  run_cases(fold_cumulative_concat_linalg_cases(), 2005);
}

TEST_CASE("cuda executor: every shape op on values spanning many blocks", "[cuda][ops][blocks]") {
  require_gpu();
  run_cases({many_blocks_case()}, 2006);
}

TEST_CASE("cuda executor: every family in a program including truncated ones", "[cuda][distributions]") {
  require_gpu();
  run_cases(family_cases_gpu(), 2007);
}

TEST_CASE("cuda executor: parameter transforms with and without the Jacobian",
          "[cuda][transforms]") {
  require_gpu();
  run_cases(transform_cases(), 2008);
}

TEST_CASE("cuda executor: hierarchical logistic regression on 100003 rows", "[cuda][large]") {
  require_gpu();
  run_cases({logistic_regression_case()}, 2009);
}

TEST_CASE("cuda executor: varying slopes regression on 100003 rows with fused rowdot_rows",
          "[cuda][large]") {
  require_gpu();
  run_cases({varying_slopes_case()}, 2010);
}

TEST_CASE("cuda executor: the tile kernel equals the cpu executor on every program with "
          "row-aligned nodes",
          "[cuda][tile_kernel]") {
  require_gpu();
  // (stages the kernel does not hold, LinearTileKernels, and programs
  // without a stage run op by op as before: the regressions below are held)
  run_cases(in_tile_kernel(binary_cases()), 2014);
  run_cases(in_tile_kernel(index_cases()), 2015);
  run_cases(in_tile_kernel(family_cases_gpu()), 2016);
  run_cases(in_tile_kernel({logistic_regression_case(), varying_slopes_case(), logpdf_case()}),
            2017);
}

TEST_CASE("cuda executor on several GPUs: shards of the rows summed equal the cpu executor",
          "[cuda][multi]") {
  require_gpu();
  for (const std::vector<int>& gpus : multi_gpu_sets()) {
    INFO("GPUs " << gpus.size() << " (first " << gpus[0] << ", last " << gpus.back() << ")");
    gpus_under_test = gpus;
    try {
      run_cases({logistic_regression_case(), varying_slopes_case()}, 2011);
      run_cases(transform_cases(), 2012);  // the Jacobian on the first shard only
      run_cases({gather_rows_case(), rowdot_case(), logpdf_case()}, 2013);
      run_cases(in_tile_kernel({logistic_regression_case(), varying_slopes_case()}), 2018);
    } catch (...) {
      gpus_under_test.clear();
      throw;
    }
    gpus_under_test.clear();
  }
}

#ifndef LOCKSTEP_GPU_TEST_STANDIN
TEST_CASE("cuda executor: log_density_device in device memory equals log_density",
          "[cuda][device]") {
  // run_case compares the device path on every program; here one set of device
  // buffers is reused across calls and states, as a sampler on the device would.
  require_gpu();
  namespace cuda = lockstep::cuda;
  std::mt19937 rng(2011);
  const Case k = logistic_regression_case();
  const long chains = 8, D = k.p.n_free;
  for (bool single : {false, true}) {
    INFO((single ? "single" : "double") << " precision");
    std::unique_ptr<cuda::DeviceExecutor> ex = cuda::make_executor(k.p, chains, k.options, single);
    CHECK(ex->device_bytes() > 0);
    DeviceBuffer s(chains * D), lp(chains), grad(chains * D);
    const double same_rel = single ? 1e-6 : 1e-13;
    for (int rep = 0; rep < 3; ++rep) {
      INFO("state " << rep);
      const std::vector<double> state = draw_state(k, chains, rng);
      const Reference ref = reference(k.p, chains, state, k.options);
      std::vector<double> lp_host(chains), grad_host(chains * D), lp_dev(chains),
          grad_dev(chains * D), lp_nograd(chains);
      ex->log_density(state.data(), lp_host.data(), grad_host.data());
      cuda::copy_to_device(s.p, state.data(), chains * D);
      ex->log_density_device(s.p, lp.p, grad.p);
      ex->synchronize();
      cuda::copy_to_host(lp_dev.data(), lp.p, chains);
      cuda::copy_to_host(grad_dev.data(), grad.p, chains * D);
      ex->log_density_device(s.p, lp.p, nullptr);
      ex->synchronize();
      cuda::copy_to_host(lp_nograd.data(), lp.p, chains);
      if (single) {
        expect_single("log_density", ref, lp_host, &grad_host, chains, D);
        expect_single("log_density_device", ref, lp_dev, &grad_dev, chains, D);
        expect_single("log_density_device without a gradient", ref, lp_nograd, nullptr, chains, D);
      } else {
        expect_double("log_density", ref, lp_host, &grad_host, chains, D, k.tol);
        expect_double("log_density_device", ref, lp_dev, &grad_dev, chains, D, k.tol);
        expect_double("log_density_device without a gradient", ref, lp_nograd, nullptr, chains, D,
                      k.tol);
      }
      expect_same("lp of log_density_device vs log_density", lp_dev, lp_host, same_rel, 1e-9);
      expect_same("lp without a gradient vs with one", lp_nograd, lp_dev, same_rel, 1e-9);
    }
  }
}

TEST_CASE("cuda executor: sampler vectors in device memory equal host vectors",
          "[cuda][sampler]") {
  // Each operation of sampler/chain_vectors.hpp on the GPU executor's own
  // vectors against the CPU's, on the same random arrays and masks. The GPU
  // may fuse a multiply and add, and adds a dot product's terms in another
  // order: agreement to rounding.
  require_gpu();
  std::mt19937 rng(4242);
  std::uniform_real_distribution<double> u(-2, 2), pos(0.1, 3);
  for (long C : {1L, 3L, 6L})
    for (long D : {1L, 7L, 5003L}) {
      INFO(C << " chains, dim " << D);
      Program p;
      const int x = p.add(param_node(D, 0));
      p.n_free = D;
      add_term(p, density_node(Family::normal, {x, p.add(data_node({0})), p.add(data_node({1}))}));
      lockstep::plan(p);
      std::unique_ptr<lockstep::cuda::DeviceExecutor> ex =
          lockstep::cuda::make_executor(p, C, ExecOptions(), false);
      lockstep::WithHostVectors host_target(*ex);
      std::unique_ptr<lockstep::ChainVectors> dev = ex->vectors(), host = host_target.vectors();
      const long n = C * D;
      std::vector<std::vector<double>> init(4, std::vector<double>(n));
      for (auto& v : init)
        for (double& e : v) e = u(rng);
      for (double& e : init[3]) e = pos(rng);  // the inverse mass and sd
      lockstep::ChainMask on, back;
      for (long c = 0; c < C; c += 2) on.set(c);
      back.set(C - 1);
      std::vector<lockstep::Stream> sd_streams, sh_streams;
      for (long c = 0; c < C; ++c)
        sd_streams.push_back(lockstep::Stream{9u, 8u, static_cast<uint32_t>(c), 0, 5});
      sh_streams = sd_streams;
      // the same sequence on both; every array compared after it
      auto run = [&](lockstep::ChainVectors& v, std::vector<lockstep::Stream>& streams,
                     std::vector<double>& dots) {
        std::vector<double*> a;
        for (int k = 0; k < 4; ++k) {
          a.push_back(v.make());
          v.upload(a.back(), init[k].data());
        }
        double* mom = v.make();
        v.copy(a[1], a[0], on);
        v.add(a[2], a[2], a[0], -1, lockstep::ChainMask::all(C));
        v.leapfrog(a[0], a[0], a[1], a[2], a[3], 0.3, 0.6, true, lockstep::ChainMask::all(C), back);
        v.leapfrog(nullptr, nullptr, a[1], a[2], a[3], 0.3, 0.6, false, on, back);
        v.momentum(mom, a[3], streams, 1);
        v.fill(a[2], 1.5, on);
        double *mean = v.make(), *m2 = v.make();
        for (bool pooled : {true, false}) {
          v.window_update(mean, m2, a[0], 0, pooled, lockstep::ChainMask::all(C));
          v.window_update(mean, m2, a[1], pooled ? C : 1, pooled, on);
          v.metric_from_window(a[3], mom, m2, pooled ? C + on.count() : 2, pooled);
        }
        using K = lockstep::DotKind;
        v.mean_over_chains(a[2], a[1], on);
        const lockstep::DotSpec specs[5] = {{a[0], a[1], nullptr, K::product},
                                            {a[1], a[0], a[2], K::product},
                                            {mom, a[3], nullptr, K::square},
                                            {a[0], a[2], a[3], K::scaled_square_difference},
                                            {a[1], a[2], mom, K::difference_product}};
        dots.assign(C * 5, 0.0);
        v.dots(specs, 5, a[3], lockstep::ChainMask::all(C), dots.data());
        std::vector<double> checks(C * 6);
        v.subtree_checks({a[0], a[1], a[2], mom, mean, m2, a[1]}, a[3], on, checks.data());
        dots.insert(dots.end(), checks.begin(), checks.end());
        // NUTS's fused leaf: a kick, two starts, one check, a left store
        double *S = v.make(), *b0 = v.make(), *b1 = v.make(), *pre0 = v.make(),
               *pre1 = v.make(), *le = v.make(), *lr = v.make();
        v.copy(S, a[2], lockstep::ChainMask::all(C));
        lockstep::LeafVectors lv{};
        lv.p = mom, lv.g = a[0], lv.kick = 0.2, lv.sd = a[3], lv.S = S, lv.first = m2;
        lv.starts = 2, lv.begin[0] = b0, lv.begin[1] = b1, lv.prefix[0] = pre0, lv.prefix[1] = pre1;
        lv.left_end = le, lv.left_rho = lr, lv.left_prefix = pre0;
        lv.checks = 1;
        lv.check[0] = {S, pre0, a[1], mean, mom, b0, a[2]};
        std::vector<double> leaf(C * lv.sums());
        v.leaf(lv, a[3], on, back, leaf.data());
        dots.insert(dots.end(), leaf.begin(), leaf.end());
        // and as NUTS calls it: level 0's prefix inline (null), its right
        // begin the leaf's momentum, its left end the left begin; a left
        // store with neither left end nor prefix (S - p)
        double* lr0 = v.make();
        lockstep::LeafVectors inl{};
        inl.p = mom, inl.g = a[1], inl.kick = -0.1, inl.sd = a[3], inl.S = S;
        inl.left_rho = lr0;
        inl.checks = 1;
        inl.check[0] = {S, nullptr, a[2], b1, mom, mom, b1};
        leaf.assign(C * inl.sums(), 0.0);
        v.leaf(inl, a[3], on, back, leaf.data());
        dots.insert(dots.end(), leaf.begin(), leaf.end());
        std::vector<double> out;
        for (double* arr :
             {a[0], a[1], a[2], a[3], mom, mean, m2, S, b0, b1, pre0, pre1, le, lr, lr0}) {
          std::vector<double> h(n);
          v.download(h.data(), arr);
          out.insert(out.end(), h.begin(), h.end());
        }
        return out;
      };
      std::vector<double> dots_dev, dots_host;
      const std::vector<double> got = run(*dev, sd_streams, dots_dev);
      const std::vector<double> want = run(*host, sh_streams, dots_host);
      for (size_t k = 0; k < want.size(); ++k) {
        INFO("element " << k);
        CHECK(got[k] == Approx(want[k]).epsilon(1e-13).margin(1e-14));
      }
      for (size_t k = 0; k < dots_host.size(); ++k) {
        INFO("dot " << k);
        CHECK(dots_dev[k] == Approx(dots_host[k]).epsilon(1e-11).margin(1e-11));
      }
      for (long c = 0; c < C; ++c) CHECK(sd_streams[c].position == sh_streams[c].position);
    }
}

// The same executor, keys and start, the sampler's vectors on the GPU and on
// the host: the two differ only in rounding, far too little to change a
// decision in a few iterations.
template <class Sampler, class Settings>
void device_follows_host(const Settings& s, int warmup, std::vector<int> gpus = {}) {
  const Case k = logistic_regression_case();
  const long C = 3, D = k.p.n_free;
  ExecOptions o = k.options;
  if (!gpus.empty()) o.gpus = gpus, o.gpu = gpus[0];
  std::unique_ptr<lockstep::cuda::DeviceExecutor> ex = lockstep::cuda::make_executor(k.p, C, o, false);
  std::mt19937 rng(77);
  const std::vector<double> init = draw_state(k, C, rng);
  lockstep::WithHostVectors host_target(*ex);
  using sampler_tests::sampler_trace;
  const std::vector<double> device = sampler_trace<Sampler>(*ex, s, init, warmup, 31, 41),
                            host = sampler_trace<Sampler>(host_target, s, init, warmup, 31, 41);
  REQUIRE(device.size() == host.size());
  for (size_t j = 0; j < host.size(); ++j) {
    INFO("value " << j << " of " << host.size() << " (dim " << D << ")");
    CHECK(device[j] == Approx(host[j]).epsilon(1e-9).margin(1e-9));
  }
  // the chains moved (the trace ends with the step size)
  const size_t per_iteration = C * D + 2 * C;
  const std::vector<double> last(device.end() - 1 - per_iteration, device.end() - 1 - 2 * C);
  CHECK(last != init);
}

TEST_CASE("cuda executor: device-resident NUTS, HMC and ChEES follow them with host vectors",
          "[cuda][sampler][nuts]") {
  require_gpu();
  // step sizes stable at this start (0.02 diverged at once: no chain moved)
  lockstep::NutsSettings nuts;
  nuts.epsilon = 0.001;
  nuts.max_treedepth = 7;
  device_follows_host<lockstep::Nuts>(nuts, 0);
  lockstep::HmcSettings hmc;
  hmc.epsilon = 0.001;
  device_follows_host<lockstep::Hmc>(hmc, 0);
  lockstep::CheesSettings chees;
  chees.epsilon = 0.001;
  chees.max_leapfrog = 50;
  device_follows_host<lockstep::Chees>(chees, 6);  // adapting: the chains' means too
}

TEST_CASE("cuda executor on several GPUs: device-resident NUTS follows it with host vectors",
          "[cuda][sampler][nuts][multi]") {
  require_gpu();
  lockstep::NutsSettings nuts;
  nuts.epsilon = 0.001;
  nuts.max_treedepth = 7;
  for (const std::vector<int>& gpus : multi_gpu_sets()) {
    INFO("GPUs " << gpus.size());
    device_follows_host<lockstep::Nuts>(nuts, 0, gpus);
  }
}

TEST_CASE("cuda executor on several GPUs: GPUs that own their groups make one GPU's draws",
          "[cuda][sampler][nuts][multi][device_shards]") {
  // device_shards.hpp over CUDA executors, the sampler's vectors split among
  // the GPUs: the gradient is one GPU's, a gradient sends C x (1 + globals)
  // doubles a GPU, and NUTS (warmup included) follows one GPU's to rounding
  // grown through warmup (the GPUs' atomics add in no fixed order)
  require_gpu();
  namespace cuda = lockstep::cuda;
  using lockstep::Backend;
  std::mt19937 rng(101);
  const long N = 20000, G = 2000, K = 3, C = 3;
  const std::vector<long> g = lstest::random_groups(rng, N, G, true);
  lstest::Seed seed = lstest::seed_model(N, G, K, rng, g);
  lockstep::plan(seed.p);
  const Program& p = seed.p;
  const long D = p.n_free;
  ExecOptions one;
  one.backend = Backend::cuda;
  std::unique_ptr<cuda::DeviceExecutor> whole = cuda::make_executor(p, C, one, false);
  std::vector<double> init(C * D);
  for (double& v : init) v = std::uniform_real_distribution<double>(-0.5, 0.5)(rng);
  for (const std::vector<int>& gpus : multi_gpu_sets()) {
    INFO("GPUs " << gpus.size());
    ExecOptions o = one;
    o.gpus = gpus;
    o.gpu = gpus[0];
    std::unique_ptr<lockstep::DeviceShardsTarget> shards = lockstep::make_device_shards(p, C, o, false);
    REQUIRE(shards != nullptr);
    REQUIRE(shards->shards() == static_cast<int>(gpus.size()));
    // the gradient through the vectors, in the GPUs' memory
    std::unique_ptr<lockstep::ChainVectors> v = shards->vectors();
    double* x = v->make();
    double* gv = v->make();
    v->upload(x, init.data());
    shards->reset_counts();
    std::vector<double> lp(C), grad(C * D), lp_whole(C), grad_whole(C * D);
    v->log_density(x, lp.data(), gv);
    v->download(grad.data(), gv);
    whole->log_density(init.data(), lp_whole.data(), grad_whole.data());
    for (long c = 0; c < C; ++c) CHECK(lp[c] == Approx(lp_whole[c]).epsilon(1e-11));
    CHECK(worst_relative_gap(grad, grad_whole) < 1e-10);
    CHECK(shards->exchanged().calls == 1);
    CHECK(shards->exchanged().bytes == (shards->shards() - 1) * C * (1 + 2 * K + 2) * 8);
    // against the multi-GPU executor's whole states and gradients
    {
      std::unique_ptr<cuda::DeviceExecutor> multi = cuda::make_executor(p, C, o, false);
      std::vector<double> lp_m(C), grad_m(C * D);
      multi->log_density(init.data(), lp_m.data(), grad_m.data());
      CHECK(multi->exchanged().calls == 1);
      CHECK(multi->exchanged().bytes == static_cast<long>(gpus.size() - 1) * (2 * C * D + C) * 8);
    }
    lockstep::NutsSettings nuts;
    nuts.epsilon = 0.05;
    nuts.diag_sd = {1.0};
    using sampler_tests::sampler_trace;
    CHECK(worst_relative_gap(sampler_trace<lockstep::Nuts>(*shards, nuts, init, 10, 3u, 4u),
                             sampler_trace<lockstep::Nuts>(*whole, nuts, init, 10, 3u, 4u)) < 1e-6);
  }
}

TEST_CASE("cuda executor: a rank that owns its groups keeps its vectors on its GPU",
          "[cuda][sampler][owned_shard]") {
  // gpu_only(mpi = TRUE)'s ranks (owned_shard.hpp) over a CUDA executor of
  // their slice: one rank here, so the sums over ranks are its own; its
  // vectors draw by the whole state's index and read and write the globals'
  // columns in GPU memory
  require_gpu();
  namespace cuda = lockstep::cuda;
  using lockstep::Backend;
  std::mt19937 rng(102);
  const long N = 3000, G = 300, K = 2, C = 2;
  lstest::Seed seed = lstest::seed_model(N, G, K, rng, lstest::random_groups(rng, N, G, true));
  lockstep::plan(seed.p);
  const lockstep::GroupSlice slice =
      lockstep::slice_groups(seed.p, lockstep::find_groupings(seed.p).at(0), 0, G, true);
  ExecOptions o;
  o.backend = Backend::cuda;
  lockstep::InProcessCommunicator world(1);
  lockstep::OwnedShardTarget target(cuda::make_executor(slice.program, C, o, false), slice,
                                    seed.p.n_free, &world);
  lockstep::InProcessCommunicator cpu_world(1);
  lockstep::OwnedShardTarget cpu(
      std::make_unique<lockstep::Executor<double>>(slice.program, C, ExecOptions{}), slice,
      seed.p.n_free, &cpu_world);
  const long D = target.dim();
  std::vector<double> init(C * D);
  for (double& v : init) v = std::uniform_real_distribution<double>(-0.5, 0.5)(rng);
  lockstep::NutsSettings nuts;
  nuts.epsilon = 0.05;
  nuts.diag_sd = {1.0};
  using sampler_tests::sampler_trace;
  CHECK(worst_relative_gap(sampler_trace<lockstep::Nuts>(target, nuts, init, 10, 5u, 6u),
                           sampler_trace<lockstep::Nuts>(cpu, nuts, init, 10, 5u, 6u)) < 1e-6);
  CHECK(world.stats().bytes > 0);
}

TEST_CASE("cuda executor: running out of GPU memory is a clear error, and recoverable",
          "[cuda][memory]") {
  require_gpu();
  namespace cuda = lockstep::cuda;
  auto one_normal = [](long D) {
    Program p;
    const int x = p.add(param_node(D, 0));
    p.n_free = D;
    add_term(p, density_node(Family::normal, {x, p.add(data_node({0})), p.add(data_node({1}))}));
    lockstep::plan(p);
    return p;
  };
  // an executor larger than any GPU: refused before it allocates, with the
  // memory it needs and the memory there is
  const Program huge = one_normal(400000000);
  CHECK_THROWS_WITH(cuda::make_executor(huge, 64, ExecOptions(), false),
                    Catch::Contains("GiB of GPU memory") && Catch::Contains("GiB free"));
  // a sampler's vectors, one array after another until the GPU is full
  const long C = 4, D = 50000000;
  const Program big = one_normal(D);
  std::unique_ptr<cuda::DeviceExecutor> ex = cuda::make_executor(big, C, ExecOptions(), false);
  std::unique_ptr<lockstep::ChainVectors> v = ex->vectors();
  std::string message;
  for (int k = 0; k < 400 && message.empty(); ++k) {
    try {
      v->make();
    } catch (const std::runtime_error& e) {
      message = e.what();
    }
  }
  CHECK_THAT(message, Catch::Contains("the sampler needs another") &&
                          Catch::Contains("GiB free"));
  v.reset();  // frees them: the executor runs as before
  std::vector<double> state(C * D, 0.5), lp(C), grad(C * D);
  ex->log_density(state.data(), lp.data(), grad.data());
  for (long c = 0; c < C; ++c)
    CHECK(lp[c] == Approx(-0.5 * D * (0.25 + std::log(2 * M_PI))).epsilon(1e-9));
  CHECK(grad[0] == Approx(-0.5));
}

TEST_CASE("cuda executor: refuses a missing GPU and zero chains and MPI",
          "[cuda][errors]") {
  require_gpu();
  const Case k = sum_case();
  ExecOptions o;
  o.gpu = 99;
  CHECK_THROWS_AS(lockstep::cuda::make_executor(k.p, 2, o, false), std::runtime_error);
  CHECK_THROWS_AS(lockstep::cuda::make_executor(k.p, 2, o, true), std::runtime_error);
  o.gpu = -1;
  CHECK_THROWS_AS(lockstep::cuda::make_executor(k.p, 2, o, false), std::runtime_error);
  o.gpu = 0;
  CHECK_THROWS_AS(lockstep::cuda::make_executor(k.p, 0, o, false), std::invalid_argument);
  lockstep::InProcessCommunicator world(2);
  o.world = &world;
  CHECK_THROWS_AS(lockstep::cuda::make_executor(k.p, 2, o, false), std::invalid_argument);
  o.world = nullptr;
  CHECK_NOTHROW(lockstep::cuda::make_executor(k.p, 2, o, false));
}
#endif

TEST_CASE("cuda executor: svi()'s mean-field guide in GPU memory follows the host's guide",
          "[cuda][svi]") {
  // The guide's particles, gradient and optimiser's step as kernels on the
  // GPU (kernels/mean_field.hpp, kernels/first_order_step.hpp,
  // Svi::resident) against the same guide kept on the host over the same
  // executor: the same normals (keyed by particle and coordinate), so the
  // losses and the guide agree to the GPU's rounding of its sums. The
  // demand model's shape (an observation stage with three gathers and a
  // Poisson likelihood), whole and in minibatches of the tile kernel's
  // tiles, the ELBO and the importance-weighted bound; adam, and two other
  // rules with more state (nadam's schedule, a centred rms_prop's momentum);
  // a point mass (one particle at the guide's mean); and a low-rank guide
  // (kernels/low_rank.hpp: K's algebra on the host, the rest on the GPU).
  require_gpu();
#ifdef LOCKSTEP_GPU_TEST_STANDIN
  const int on_vectors = 1;  // the emulated backend's vectors hold it when asked
#else
  const int on_vectors = 0;  // a GPU's vectors hold it by default
#endif
  std::mt19937 rng(3636);
  lstest::Demand d = lstest::demand(20000, 300, 40, rng);
  lockstep::plan(d.p);
  struct Fit {
    bool tiles;
    double alpha;
    const char* method;
    const char* guide;
  };
  for (const Fit& f : {Fit{false, 1, "adam", "mean_field"}, Fit{false, 0, "adam", "mean_field"},
                       Fit{true, 1, "adam", "mean_field"}, Fit{true, 0, "adam", "mean_field"},
                       Fit{false, 0, "nadam", "mean_field"}, Fit{true, 0, "rms_prop", "mean_field"},
                       Fit{false, 1, "adam", "delta"}, Fit{false, 0, "adam", "low_rank"},
                       Fit{true, 1, "adam", "low_rank"}}) {
    const bool tiles = f.tiles;
    const double alpha = f.alpha;
    INFO("tile kernel " << tiles << ", alpha " << alpha << ", " << f.method << ", " << f.guide);
    const long particles = std::string(f.guide) == "delta" ? 1 : 4;
    ExecOptions o;
    o.tile_kernel = tiles;
    o.alias_parameters = false;
    std::unique_ptr<Target> ex = make_gpu(d.p, particles, o, false);
    std::vector<std::vector<double>> losses, means, sds;
    for (int resident : {on_vectors, -1}) {
      lockstep::SviSettings s;
      s.guide = f.guide;
      s.rank = 3;  // (a low-rank guide's)
      s.optimiser.method = f.method;
      s.optimiser.params["learning_rate"] = 0.02;
      if (s.optimiser.method == "rms_prop") {
        s.optimiser.params["learning_rate"] = 0.002;
        s.optimiser.params["centered"] = 1;
        s.optimiser.params["momentum"] = 0.5;
      }
      s.alpha = alpha;
      s.batch_fraction = tiles ? 0.25 : 1;
      s.resident = resident;
      lockstep::Svi svi(*ex, s, std::vector<double>(d.p.n_free, 0.0), 11, 12);
      CHECK(svi.resident() == (resident != -1));
      std::vector<double> loss;
      for (int t = 0; t < 40; ++t) loss.push_back(svi.step());
      losses.push_back(loss);
      means.push_back(svi.mean());
      sds.push_back(svi.sd());
    }
    for (size_t t = 0; t < losses[0].size(); ++t) {
      INFO("iteration " << t);
      REQUIRE(std::isfinite(losses[0][t]));
      CHECK(close(losses[0][t], losses[1][t], 1e-8, 1e-8));
    }
    for (long i = 0; i < d.p.n_free; ++i) {
      INFO("coordinate " << i);
      CHECK(close(means[0][i], means[1][i], 1e-7, 1e-9));
      CHECK(close(sds[0][i], sds[1][i], 1e-7, 1e-9));
    }
  }
  // Each minibatch call evaluates its own draw of tiles, and the same draw
  // again gives the same sum (a CUDA graph replayed would repeat the draw
  // and weight it captured: CudaExecutor launches minibatch calls plainly).
  ExecOptions o;
  o.tile_kernel = true;
  o.alias_parameters = false;
  o.max_tile_rows = 200;  // (the stand-in's tiles; a GPU's are smaller still)
  std::unique_ptr<Target> ex = make_gpu(d.p, 2, o, false);
  const std::vector<double> state(2 * d.p.n_free, 0.05);
  std::vector<double> lp(2), grad(2 * d.p.n_free);
  lockstep::Minibatch batch;
  batch.fraction = 0.25;
  batch.key0 = 5;
  batch.key1 = 6;
  std::vector<double> first;
  std::set<double> seen;
  for (uint64_t draw = 0; draw < 6; ++draw) {
    batch.draw = draw;
    ex->set_minibatch(batch);
    for (int again = 0; again < 2; ++again) {  // (a graph is captured at a second call)
      ex->log_density(state.data(), lp.data(), grad.data());
      if (draw == 0 && again == 0) first = lp;
    }
    seen.insert(lp[0]);
  }
  CHECK(seen.size() == 6);
  batch.draw = 0;
  ex->set_minibatch(batch);
  ex->log_density(state.data(), lp.data(), grad.data());
  for (long c = 0; c < 2; ++c) CHECK(close(lp[c], first[c], 1e-12, 1e-9));  // (atomics' order)
}


TEST_CASE("cuda executor: opt()'s first-order methods in GPU memory take the host's steps",
          "[cuda][opt]") {
  // The starts, their gradients and the rule's state on the GPU
  // (OptimiserSettings::resident; kernels/first_order_step.hpp) against the
  // same starts in host memory over the same executor: the same rule, so
  // the results agree to the GPU's rounding of the gradient's sums.
  require_gpu();
#ifdef LOCKSTEP_GPU_TEST_STANDIN
  const int on_vectors = 1;  // the emulated backend's vectors hold them when asked
#else
  const int on_vectors = 0;  // a GPU's vectors hold them by default
#endif
  std::mt19937 rng(3637);
  lstest::Demand d = lstest::demand(20000, 300, 40, rng);
  lockstep::plan(d.p);
  const long starts = 3;
  std::vector<double> init(starts * d.p.n_free);
  for (size_t k = 0; k < init.size(); ++k) init[k] = 0.3 * std::sin(0.7 * k);
  ExecOptions o;
  o.alias_parameters = false;
  std::unique_ptr<Target> ex = make_gpu(d.p, starts, o, false);
  for (const char* method : {"adam", "nadam", "gradient_descent"}) {
    INFO(method);
    lockstep::OptimiserSettings s;
    s.method = method;
    s.params["learning_rate"] = s.method == "gradient_descent" ? 1e-5 : 0.02;
    s.max_iterations = 50;
    s.tolerance = 1e-3;
    std::vector<lockstep::OptimiserResult> r;
    for (int resident : {on_vectors, -1}) {
      s.resident = resident;
      r.push_back(lockstep::optimise(*ex, s, init));
    }
    CHECK(r[0].iterations == r[1].iterations);
    CHECK(r[0].convergence == r[1].convergence);
    for (long c = 0; c < starts; ++c) CHECK(close(r[0].value[c], r[1].value[c], 1e-9, 1e-9));
    for (size_t k = 0; k < init.size(); ++k) {
      INFO("coordinate " << k);
      CHECK(close(r[0].par[k], r[1].par[k], 1e-7, 1e-9));
    }
    CHECK(r[0].par != init);
  }
}

TEST_CASE("Executor refuses Backend::cuda which has its own executor", "[cuda][errors]") {
  // No device needed.
  const Case k = sum_case();
  ExecOptions o;
  o.backend = Backend::cuda;
  CHECK_THROWS_AS(Executor<double>(k.p, 2, o), std::invalid_argument);
  CHECK_THROWS_AS(Executor<float>(k.p, 2, o), std::invalid_argument);
  CHECK_THROWS_AS(Executor<double>(k.p, 2, Backend::cuda), std::invalid_argument);
}

// A checkpoint's resume (issue 51) with the sampler's vectors on the GPU: its
// state (the chains' positions and gradients, warmup's window sums, kept in
// GPU memory) saved after some warmup iterations and restored into a new
// sampler over the same executor makes exactly the draws of the sampler that
// went on.
TEST_CASE("cuda executor: a device-resident sampler restored from its saved state makes the same "
          "draws",
          "[cuda][sampler][saved_state]") {
  require_gpu();
  const Case k = logistic_regression_case();
  const long C = 3;
  // (the stand-in build: the emulated backend, whose vectors are host memory
  // run lane by lane)
  std::unique_ptr<Target> ex = make_gpu(k.p, C, k.options, false);
  std::mt19937 rng(78);
  const std::vector<double> init = draw_state(k, C, rng);
  lockstep::NutsSettings s;
  s.epsilon = 0.001;
  s.max_treedepth = 6;
  const int warmup = 120, total = 130, at = 105;  // (saved inside the first metric window)
  auto trace = [&](lockstep::Nuts& n, int from, int to, std::vector<double>& out) {
    for (int i = from; i < to; ++i) {
      n.iterate(i < warmup);
      out.insert(out.end(), n.state().begin(), n.state().end());
      out.push_back(n.epsilon());
    }
  };
  std::vector<double> whole, resumed;
  {
    lockstep::Nuts a(*ex, s, init, 5, 6);
    a.begin_warmup(warmup);
    trace(a, 0, total, whole);
  }
  lockstep::SavedState saved;
  {
    lockstep::Nuts b(*ex, s, init, 5, 6);
    b.begin_warmup(warmup);
    trace(b, 0, at, resumed);
    saved = b.save_state();
  }
  lockstep::Nuts c(*ex, s, init, 5, 6);
  c.restore_state(saved);
  trace(c, at, total, resumed);
  REQUIRE(resumed.size() == whole.size());
  long differ = 0;
  for (size_t j = 0; j < whole.size(); ++j) differ += resumed[j] != whole[j];
  CHECK(differ == 0);
}
