// The planner's stage assignment and the tiled, sharded observation stage.
//
// The tiled executor must equal the plain op-by-op one (observation_stage =
// false) on the same program up to floating-point reassociation: the tests
// compare log density, gradient and term values to 1e-12 relative across
// virtual devices, threads, tile sizes that do and do not divide N, N smaller
// than a tile, reordered rows, chain counts and backends.
#include <catch2/catch.hpp>

#include <algorithm>
#include <memory>
#include <random>

#include "helpers.hpp"
#include "models.hpp"
#include "lockstep/executor.hpp"
#include "lockstep/planner.hpp"
#include "lockstep/row_order.hpp"
#include "lockstep/shards.hpp"

using namespace lstest;
using lockstep::ExecOptions;

TEST_CASE("planner: a regression's row-wise nodes go to the observation stage",
          "[planner][stages]") {
  std::mt19937 rng(1);
  Regression r = regression(11, 3, 4, rng);
  lockstep::plan(r.p);
  REQUIRE(r.p.extents == std::vector<long>{11});
  for (int id : {r.X, r.xb, r.g_alpha, r.eta, r.y, r.lik, r.xs, r.xcol}) {
    INFO("node " << id << " (" << lockstep::op_name(r.p.nodes[id].op) << ")");
    CHECK(r.p.nodes[id].extent == 0);
  }
  for (int id : {r.beta, r.alpha, r.sigma}) CHECK(r.p.nodes[id].extent == -1);
  // the priors are over parameters: global
  for (int t : {r.p.terms[0], r.p.terms[1], r.p.terms[3]}) CHECK(r.p.nodes[t].extent == -1);
  lockstep::plan(r.p, lockstep::PlanOptions{false});
  CHECK(r.p.extents.empty());
  for (const Node& n : r.p.nodes) CHECK(n.extent == -1);
}

TEST_CASE("planner: a sum over rows feeding a parameter's density stays global",
          "[planner][stages]") {
  std::mt19937 rng(2);
  Regression r = regression(9, 2, 3, rng);
  Program& p = r.p;
  // s = sum(X beta) is the mean of sigma's extra prior: X beta is read by a
  // global consumer, so it cannot exist only tile by tile.
  const int s = p.add(sum_node(r.xb));
  const int one = p.add(data_node({1}));
  add_term(p, density_node(Family::normal, {r.sigma, s, one}));
  lockstep::plan(p);
  CHECK(p.nodes[r.xb].extent == -1);
  CHECK(p.nodes[s].extent == -1);
  // eta = X beta + ... reads a global non-scalar value of N rows: global too
  CHECK(p.nodes[r.eta].extent == -1);
  // the gather alone still qualifies, and so do its consumers up to the term?
  // No: eta is global, so everything after it is global.
  CHECK(p.nodes[r.lik].extent == -1);
  // X itself is read by a global node: global
  CHECK(p.nodes[r.X].extent == -1);
}

TEST_CASE("planner: a product over rows (A %*% v, A global) and a non-scalar global "
          "operand keep nodes global",
          "[planner][stages]") {
  Program p;
  const long N = 6;
  // theta (a parameter of N elements) + data: eight schools' shape
  const int theta = p.add(param_node(N, 0));
  p.n_free = N;
  const int y = p.add(data_node({1, 2, 3, 4, 5, 6}));
  const int one = p.add(data_node({1}));
  const int lik = add_term(p, density_node(Family::normal, {y, theta, one}));
  // A (2 x N) %*% theta-like row vector v (N x 1, row data): not row-aligned
  std::vector<double> a(2 * N, 0.5);
  const int A = p.add(data_node(a, {2, N}));
  const int v = p.add(data_node({1, 1, 2, 2, 3, 3}));
  const int Av = p.add(matmul_node(A, v, p));
  const int z = p.add(data_node({0.5, 0.1}));
  add_term(p, density_node(Family::normal, {z, Av, one}));
  lockstep::plan(p);
  CHECK(p.nodes[lik].extent == -1);  // theta is a global value of N elements
  CHECK(p.nodes[y].extent == -1);
  CHECK(p.nodes[v].extent == -1);  // the right operand of a product: read whole
  // Row r of A v is A[r, ] . v: row-aligned with z's two rows, legitimately.
  REQUIRE(p.nodes[z].extent >= 0);
  CHECK(p.nodes[Av].extent == p.nodes[z].extent);
  CHECK(p.nodes[A].extent == p.nodes[z].extent);
  // With a global left operand (exp of a parameter matrix) nothing is row-aligned.
  Program q;
  const int w = q.add(param_node(2 * N, 0, Transform::none, 0, 0, {2, N}));
  q.n_free = 2 * N;
  const int ew = q.add(unary_node(Op::exp, w, q));
  const int v2 = q.add(data_node({1, 1, 2, 2, 3, 3}));
  const int prod = q.add(matmul_node(ew, v2, q));
  const int z2 = q.add(data_node({0.5, 0.1}));
  const int one2 = q.add(data_node({1}));
  add_term(q, density_node(Family::normal, {z2, prod, one2}));
  lockstep::plan(q);
  CHECK(q.nodes[prod].extent == -1);
  CHECK(q.nodes[v2].extent == -1);
  CHECK(q.extents.empty());
}

// A likelihood whose mean is op(x, b) (binary) or op(x + b) (unary) for row
// data x and a scalar parameter b, as R lowers y ~ normal(f(x, b), 1).
struct ElementwiseLikelihood {
  Program p;
  int value = -1, term = -1;
};
ElementwiseLikelihood elementwise_likelihood(Op op, long N, std::mt19937& rng) {
  ElementwiseLikelihood m;
  Program& p = m.p;
  const int b = p.add(param_node(1, 0));
  p.n_free = 1;
  const int x = p.add(data_node(uniform_vector(rng, N, 0.2, 0.8)));
  const int y = p.add(data_node(uniform_vector(rng, N, -1, 1)));
  const int one = p.add(data_node({1}));
  if (lockstep::op_family(op) == lockstep::OpFamily::binary) {
    m.value = p.add(binary_node(op, x, b, p));
  } else {
    const int xb = p.add(binary_node(Op::add, x, b, p));
    m.value = p.add(unary_node(op, xb, p));
  }
  m.term = add_term(p, density_node(Family::normal, {y, m.value, one}));
  return m;
}

TEST_CASE("planner: every elementwise op of ops.def marked `rows` is tiled with its likelihood "
          "(x > beta among them)",
          "[planner][stages]") {
  std::mt19937 rng(31);
  int checked = 0;
  for (const OpInfo& info : all_ops()) {
    const auto family = info.family;
    if (family != lockstep::OpFamily::unary && family != lockstep::OpFamily::binary) continue;
    INFO(info.name);
    // ops.def is the single source: every elementwise op may be row-aligned
    CHECK(lockstep::op_alignment(info.op) == lockstep::Alignment::rows);
    ElementwiseLikelihood m = elementwise_likelihood(info.op, 9, rng);
    lockstep::plan(m.p);
    REQUIRE(m.p.extents == std::vector<long>{9});
    CHECK(m.p.nodes[m.value].extent == 0);
    CHECK(m.p.nodes[m.term].extent == 0);
    ++checked;
  }
  CHECK(checked == 49);  // 37 unary and 12 binary ops
}

TEST_CASE("observation stage: comparisons (greater, greater_equal, equal) tiled equal the plain "
          "executor",
          "[stages][executor][tiles]") {
  std::mt19937 rng(32);
  for (Op op : {Op::greater, Op::greater_equal, Op::equal}) {
    ElementwiseLikelihood m = elementwise_likelihood(op, 41, rng);
    // equal: some rows equal to b's values below, so that both outcomes occur
    if (op == Op::equal)
      for (long r = 0; r < 41; r += 3) m.p.nodes[1].values.mutable_data()[r] = 0.5;
    lockstep::plan(m.p);
    REQUIRE(m.p.nodes[m.value].extent == 0);
    for (long chains : {1L, 2L, 4L}) {
      std::vector<double> state = uniform_vector(rng, chains, 0.3, 0.7);
      state[0] = 0.5;
      ExecOptions plain;
      plain.observation_stage = false;
      const Result reference = run(m.p, chains, state, plain);
      for (Backend backend : {Backend::cpu, Backend::emulated})
        for (int devices : {1, 3}) {
          INFO(lockstep::op_name(op) << " chains " << chains << " devices " << devices);
          ExecOptions o;
          o.backend = backend;
          o.devices = devices;
          o.threads = 2;
          o.tile_rows = 8;
          check_same(run(m.p, chains, state, o), reference);
        }
    }
  }
}

TEST_CASE("tiled, sharded executor equals the plain one: devices, threads, tiles, row order",
          "[stages][executor][tiles]") {
  std::mt19937 rng(3);
  for (long N : {1L, 5L, 23L, 64L}) {
    Regression r = regression(N, 3, 4, rng);
    lockstep::plan(r.p);
    for (long chains : {1L, 3L}) {
      const std::vector<double> state = random_state(rng, chains, r.p.n_free);
      ExecOptions plain;
      plain.observation_stage = false;
      const Result reference = run(r.p, chains, state, plain);
      for (int devices : {1, 2, 3, 7})
        for (int threads : {1, 2})
          for (long tile : {0L, 1L, 4L, 7L, N + 5})
            for (bool reorder : {false, true}) {
              INFO("N " << N << " chains " << chains << " devices " << devices << " threads "
                        << threads << " tile " << tile << " reorder " << reorder);
              ExecOptions o;
              o.devices = devices;
              o.threads = threads;
              o.tile_rows = tile;
              o.reorder_rows = reorder;
              check_same(run(r.p, chains, state, o), reference);
            }
    }
  }
}

// The CPU stage's own ways with a count model: gathers' backward summing
// runs of equal entries (add_run_sums) and the likelihood's log(x!) summed
// once per tile, when the stage is built, for every chain (NodeCall::
// data_term). Against the log density by hand and the plain executor, at
// several chain counts, threads, devices and tile sizes, in double and float.
TEST_CASE("the demand model's shape: tiled equals the plain executor and the hand-written "
          "log density", "[stages][executor][tiles][demand]") {
  std::mt19937 rng(36);
  for (long N : {40L, 700L, 1800L}) {
    // (1,800 rows: a panel of 300 products x 6 weeks, rows by product, the
    // cell index in steps, as the seed's data)
    const bool panel = N == 1800;
    Demand d = demand(N, panel ? 300 : 9, 5, rng, panel);
    if (panel) REQUIRE(lockstep::index_in_steps(d.cell));
    lockstep::plan(d.p);
    REQUIRE(d.p.nodes[d.lik].extent == 0);  // the observation stage
    for (long chains : {1L, 2L, 4L}) {
      std::vector<double> state = random_state(rng, chains, d.p.n_free);
      for (double& v : state) v *= 0.5;
      ExecOptions plain;
      plain.observation_stage = false;
      const Result reference = run(d.p, chains, state, plain);
      for (long c = 0; c < chains; ++c)
        CHECK(close(reference.lp[c], d.log_density(state.data() + c * d.p.n_free), 1e-10, 1e-10));
      for (Backend backend : {Backend::cpu, Backend::emulated})
        for (int threads : {1, 2})
          for (int devices : {1, 3})
            for (long tile : {0L, 7L, 64L}) {
              INFO("N " << N << " chains " << chains << " backend " << static_cast<int>(backend)
                        << " threads " << threads << " devices " << devices << " tile " << tile);
              ExecOptions o;
              o.backend = backend;
              o.threads = threads;
              o.devices = devices;
              o.tile_rows = tile;
              check_same(run(d.p, chains, state, o), reference);
              // and again: a second call gives the same (the tiles' sums are kept)
              Executor<double> ex(d.p, chains, o);
              std::vector<double> lp1(chains), lp2(chains), g(chains * d.p.n_free);
              ex.log_density(state.data(), lp1.data(), g.data());
              ex.log_density(state.data(), lp2.data(), nullptr);
              CHECK(lp1 == lp2);
            }
      ExecOptions single;
      single.threads = 2;
      single.tile_rows = 16;
      Executor<float> ex(d.p, chains, single);
      std::vector<double> lp(chains), g(chains * d.p.n_free);
      ex.log_density(state.data(), lp.data(), g.data());
      for (long c = 0; c < chains; ++c) CHECK(close(lp[c], reference.lp[c], 1e-5, 1e-3));
      for (size_t k = 0; k < g.size(); ++k) CHECK(close(g[k], reference.grad[k], 1e-4, 1e-3));
    }
  }
  Demand d = demand(200, 6, 4, rng);
  lockstep::plan(d.p);
  const std::vector<double> state = random_state(rng, 3, d.p.n_free);
  check_gradient(d.p, 3, state, 1e-6, 1e-7);  // default options: tiled
}

// The CPU's gathers a run at a time (kernels/gather.hpp): an index in runs
// of equal entries or in steps of consecutive ones, and one that mixes
// them with jumps, gathered and scatter-added by the run equal the element
// by element loop (to the bit, but for the runs' sums of equal entries,
// whose additions are reassociated), on 3 chains.
TEST_CASE("the CPU's gathers by runs and steps equal the element by element loop",
          "[stages][gather]") {
  std::mt19937 rng(37);
  std::uniform_real_distribution<double> u(-1, 1);
  std::uniform_int_distribution<long> jump(0, 49), length(1, 9);
  const long C = 3, G = 60, n = 500;
  for (int kind = 0; kind < 3; ++kind) {  // runs, steps, and a mix with jumps
    std::vector<long> index;
    while (static_cast<long>(index.size()) < n) {
      const long at = jump(rng), len = length(rng);
      for (long k = 0; k < len && static_cast<long>(index.size()) < n; ++k)
        index.push_back(kind == 0 ? at : kind == 1 ? at + k : (k % 2 ? jump(rng) : at + k));
    }
    INFO("kind " << kind);
    CHECK(lockstep::index_in_runs(index) == (kind == 0));
    CHECK(lockstep::index_in_steps(index) == (kind == 1));
    std::vector<double> x(C * G), dy(C * n);
    for (double& v : x) v = u(rng);
    for (double& v : dy) v = u(rng);
    for (int mode = 1; mode < 3; ++mode) {  // the index read as runs, as steps
      std::vector<double> y0(C * n), y1(C * n), dx0(C * G, 0.5), dx1(C * G, 0.5);
      lockstep::Launcher launch;
      launch(lockstep::GatherForward<double>{x.data(), G, index.data(), y0.data(), C, n});
      lockstep::GatherForward<double> f{x.data(), G, index.data(), y1.data(), C, n};
      f.runs = mode == 1;
      f.steps = mode == 2;
      launch(f);
      CHECK(y1 == y0);
      launch(lockstep::GatherBackward<double>{index.data(), dy.data(), dx0.data(), G, C, n});
      lockstep::GatherBackward<double> b{index.data(), dy.data(), dx1.data(), G, C, n};
      b.piece = mode == 1 ? lockstep::gather_piece : 0;
      b.steps = mode == 2;
      launch(b);
      for (long k = 0; k < C * G; ++k) {
        if (mode == 2) CHECK(dx1[k] == dx0[k]);
        else CHECK(close(dx1[k], dx0[k], 1e-13, 1e-14));
      }
      // and with the runs found beforehand (the stage's, NodeCall::index_runs)
      std::vector<long> starts;
      lockstep::append_run_starts(index.data(), n, mode == 2, starts);
      REQUIRE(starts.back() == n);
      f.known = b.known = lockstep::RunStarts{starts.data(), static_cast<long>(starts.size()) - 1};
      std::vector<double> y2(C * n), dx2(C * G, 0.5);
      f.y = y2.data();
      b.dx = dx2.data();
      launch(f);
      launch(b);
      CHECK(y2 == y1);
      CHECK(dx2 == dx1);
    }
  }
}

TEST_CASE("tiled executor on the emulated backend equals the plain cpu one",
          "[stages][executor][tiles][emulated]") {
  std::mt19937 rng(4);
  Regression r = regression(37, 4, 5, rng);
  lockstep::plan(r.p);
  const long chains = 3;
  const std::vector<double> state = random_state(rng, chains, r.p.n_free);
  ExecOptions plain;
  plain.observation_stage = false;
  const Result reference = run(r.p, chains, state, plain);
  for (int devices : {1, 3}) {
    ExecOptions o;
    o.backend = Backend::emulated;
    o.devices = devices;
    o.threads = 2;
    o.tile_rows = 6;
    check_same(run(r.p, chains, state, o), reference);
  }
}

TEST_CASE("tiled executor: gradient against finite differences, and repeated calls agree",
          "[stages][executor][gradient]") {
  std::mt19937 rng(5);
  Regression r = regression(19, 2, 3, rng);
  lockstep::plan(r.p);
  const long chains = 2;
  const std::vector<double> state = random_state(rng, chains, r.p.n_free);
  check_gradient(r.p, chains, state, 1e-6, 1e-7);  // default options: tiled
  ExecOptions o;
  o.threads = 2;
  o.devices = 3;
  o.tile_rows = 4;
  Executor<double> ex(r.p, chains, o);
  std::vector<double> lp1(chains), g1(chains * r.p.n_free), lp2(chains), g2(chains * r.p.n_free);
  ex.log_density(state.data(), lp1.data(), g1.data());
  ex.log_density(state.data(), lp2.data(), nullptr);
  ex.log_density(state.data(), lp2.data(), g2.data());
  CHECK(lp1 == lp2);
  CHECK(g1 == g2);
}

TEST_CASE("thread pool: every item runs once, exceptions propagate", "[threads]") {
  lockstep::ThreadPool pool(3);
  CHECK(pool.threads() == 3);
  for (int round = 0; round < 50; ++round) {
    std::vector<int> hits(1000, 0);
    pool.parallel_for(1000, [&](long i) { hits[i] += 1; });
    CHECK(std::count(hits.begin(), hits.end(), 1) == 1000);
  }
  CHECK_THROWS_AS(pool.parallel_for(10,
                                    [](long i) {
                                      if (i == 7) throw std::runtime_error("item 7");
                                    }),
                  std::runtime_error);
  // still usable afterwards
  long total = 0;
  std::mutex m;
  pool.parallel_for(100, [&](long i) {
    std::lock_guard<std::mutex> lock(m);
    total += i;
  });
  CHECK(total == 4950);
  CHECK_THROWS_AS(lockstep::ThreadPool(0), std::invalid_argument);
}

TEST_CASE("in-process communicator: all-reduce leaves the sum on every rank", "[comm]") {
  lockstep::InProcessCommunicator comm(3);
  std::vector<double> a = {1, 2}, b = {10, 20}, c = {100, 200};
  double* bufs[] = {a.data(), b.data(), c.data()};
  comm.all_reduce_sum(bufs, 2);
  for (auto* v : {&a, &b, &c}) CHECK(*v == std::vector<double>{111, 222});
}

TEST_CASE("communicators count their calls and the payload bytes of each", "[comm]") {
  lockstep::InProcessCommunicator comm(3);
  std::vector<double> a = {1, 2}, b = {10, 20}, c = {100, 200};
  double* bufs[] = {a.data(), b.data(), c.data()};
  comm.all_reduce_sum(bufs, 2);
  CHECK(comm.stats().calls == 1);
  CHECK(comm.stats().bytes == 16);
  std::vector<float> f(15, 1.0f), g(15, 2.0f), h(15, 3.0f);
  float* fbufs[] = {f.data(), g.data(), h.data()};
  comm.all_reduce_sum(fbufs, 5);
  char data[7] = {};
  comm.broadcast_bytes(data, 7);
  CHECK(comm.stats().calls == 3);
  CHECK(comm.stats().bytes == 16 + 20 + 7);
  comm.reset_stats();
  CHECK(comm.stats().calls == 0);
  CHECK(comm.stats().bytes == 0);

  // A rank of a run across processes that sums an executor's partials
  // (WorldSumTarget): each gradient of C chains and D free parameters sends
  // C log densities and C x D adjoints; a log density alone, C values.
  std::mt19937 rng(33);
  Regression r = regression(20, 3, 4, rng);
  lockstep::plan(r.p);
  const long C = 3, D = r.p.n_free;
  lockstep::InProcessCommunicator world(1);
  lockstep::WorldSumTarget target(std::make_unique<Executor<double>>(r.p, C), &world);
  const std::vector<double> state = random_state(rng, C, D);
  std::vector<double> lp(C), grad(C * D);
  target.log_density(state.data(), lp.data(), grad.data());
  CHECK(world.stats().calls == 2);
  CHECK(world.stats().bytes == 8 * (C + C * D));
  target.log_density(state.data(), lp.data(), nullptr);
  CHECK(world.stats().calls == 3);
  CHECK(world.stats().bytes == 8 * (C + C * D) + 8 * C);

  // An executor summing across processes itself (ExecOptions::world): every
  // gradient sends the same
  lockstep::InProcessCommunicator ranks(1);
  ExecOptions o;
  o.world = &ranks;
  Executor<double> ex(r.p, C, o);
  ex.log_density(state.data(), lp.data(), grad.data());
  const lockstep::CommunicatorStats first = ranks.stats();
  ex.log_density(state.data(), lp.data(), grad.data());
  CHECK(first.calls > 0);
  CHECK(first.bytes >= 8 * C);
  CHECK(ranks.stats().calls == 2 * first.calls);
  CHECK(ranks.stats().bytes == 2 * first.bytes);
}

TEST_CASE("single precision: log density and gradient within float tolerance of double",
          "[executor][float]") {
  std::mt19937 rng(6);
  Regression r = regression(200, 3, 7, rng);
  lockstep::plan(r.p);
  const long chains = 3;
  const std::vector<double> state = random_state(rng, chains, r.p.n_free);
  for (bool tiled : {false, true}) {
    ExecOptions o;
    o.observation_stage = tiled;
    o.threads = 2;
    o.tile_rows = 17;
    Executor<double> d(r.p, chains, o);
    Executor<float> f(r.p, chains, o);
    std::vector<double> lpd(chains), lpf(chains), gd(chains * r.p.n_free), gf(chains * r.p.n_free);
    d.log_density(state.data(), lpd.data(), gd.data());
    f.log_density(state.data(), lpf.data(), gf.data());
    double gscale = 0;
    for (double v : gd) gscale = std::max(gscale, std::fabs(v));
    for (long c = 0; c < chains; ++c) {
      CHECK(std::fabs(lpf[c] - lpd[c]) <= 1e-5 * std::fabs(lpd[c]) + 1e-4);
      CHECK(lpf[c] != lpd[c]);  // it really ran in float
    }
    for (size_t k = 0; k < gd.size(); ++k) {
      INFO("coordinate " << k << " tiled " << tiled);
      CHECK(std::fabs(gf[k] - gd[k]) <= 1e-4 * gscale);
    }
  }
}

namespace {

// The tiled executor against `reference`: devices 1 and 3, threads 1 and 2,
// the given tile sizes (0: chosen from the cache), rows in and out of group
// order.
void check_tilings(const Program& p, long chains, const std::vector<double>& state,
                   const Result& reference, const std::vector<long>& tiles) {
  for (int devices : {1, 3})
    for (int threads : {1, 2})
      for (long tile : tiles)
        for (bool reorder : {false, true}) {
          INFO("chains " << chains << " devices " << devices << " threads " << threads
                         << " tile " << tile << " reorder " << reorder);
          ExecOptions o;
          o.devices = devices;
          o.threads = threads;
          o.tile_rows = tile;
          o.reorder_rows = reorder;
          check_same(run(p, chains, state, o), reference);
        }
}

}  // namespace

TEST_CASE("the seed model: row gathers, rowSums and the logit likelihood are tiled, "
          "and agree with the plain executor",
          "[stages][executor][tiles][seed]") {
  std::mt19937 rng(7);
  Seed s = seed_model(41, 6, 3, rng);
  Program unfused = s.p;
  lockstep::plan(unfused, lockstep::PlanOptions{true, false});
  lockstep::plan(s.p);
  REQUIRE(s.p.extents == std::vector<long>{41});
  // rowSums(X * gamma[g, ]) is fused into one row-dot node; the product and
  // the row gather are left dead
  CHECK(s.p.nodes[s.rs].op == Op::rowdot_rows);
  CHECK_FALSE(s.p.nodes[s.prod].live);
  CHECK_FALSE(s.p.nodes[s.gamma_rows].live);
  // ... reading the non-centred gamma = z_g * sigma_g as z_g scaled by
  // sigma_g, (X %*% beta + alpha_g[g]) + that row dot product into one
  // rowdot_rows(X, z_g, sigma_g, beta, alpha_g[g]) in the outer add's place,
  // and the offset alpha_g[g] as the gathered offset alpha_g
  const Node& lin = s.p.nodes[s.e2];
  CHECK(lin.op == Op::rowdot_rows);
  CHECK(lin.scaled);
  CHECK(lin.gathered);
  CHECK(lin.inputs == std::vector<int>{s.X, s.z_g, s.sigma_g, s.alpha_g, s.beta});
  for (int id : {s.xb, s.e1, s.rs, s.gamma, s.ga}) CHECK_FALSE(s.p.nodes[id].live);
  for (int id : {s.X, s.e2, s.eta, s.lik}) {
    INFO("node " << id << " (" << lockstep::op_name(s.p.nodes[id].op) << ")");
    CHECK(s.p.nodes[id].extent == 0);
  }
  CHECK(s.p.nodes[s.gamma].extent == -1);
  // unfused, the gather and the product are row-aligned too
  CHECK(unfused.nodes[s.rs].op == Op::rowsum);
  for (int id : {s.gamma_rows, s.prod, s.rs}) CHECK(unfused.nodes[id].extent == 0);
  // 4 and 6 chains: the CPU's row dot product takes four chains at a time
  // (the rest one by one) when the rows are sorted by group
  for (long chains : {1L, 4L, 6L}) {
    const std::vector<double> state = random_state(rng, chains, s.p.n_free);
    ExecOptions plain;
    plain.observation_stage = false;
    const Result reference = run(s.p, chains, state, plain);
    check_same(run(unfused, chains, state, plain), reference);
    check_same(run(unfused, chains, state, ExecOptions()), reference);
    check_tilings(s.p, chains, state, reference, {0, 5});
    ExecOptions em;
    em.backend = Backend::emulated;
    em.tile_rows = 6;
    em.devices = 2;
    check_same(run(s.p, chains, state, em), reference);
  }
  check_gradient(s.p, 2, random_state(rng, 2, s.p.n_free), 1e-6, 1e-7);
}

TEST_CASE("the seed model as R lowers it: a + alpha_g[g] becomes the row dot product's "
          "scalar offset and gathered offset",
          "[stages][executor][tiles][seed]") {
  std::mt19937 rng(17);
  Seed s = seed_model(53, 7, 3, rng, {}, false, true);
  Program plain_plan = s.p;
  lockstep::PlanOptions no_fusion;
  no_fusion.fuse = false;
  lockstep::plan(plain_plan, no_fusion);
  lockstep::plan(s.p);
  const Node& lin = s.p.nodes[s.eta];
  REQUIRE(lin.op == Op::rowdot_rows);
  CHECK(lin.scaled);
  CHECK(lin.gathered);
  const int a = s.p.nodes[s.e1].inputs[0];
  CHECK(lin.inputs == std::vector<int>{s.X, s.z_g, s.sigma_g, s.alpha_g, s.beta, a});
  const lockstep::RowDotParts parts = lockstep::rowdot_parts(lin);
  CHECK(parts.s == 2);
  CHECK(parts.q == 3);
  CHECK(parts.v == 4);
  CHECK(parts.p == 5);
  for (int id : {s.ga, s.e1, s.e2, s.xb, s.rs}) CHECK_FALSE(s.p.nodes[id].live);
  CHECK(s.p.nodes[s.alpha_g].extent == -1);
  for (long chains : {1L, 4L, 5L}) {
    const std::vector<double> state = random_state(rng, chains, s.p.n_free);
    ExecOptions plain;
    plain.observation_stage = false;
    // the reference: no fusion at all, op by op
    const Result reference = run(plain_plan, chains, state, plain);
    check_same(run(s.p, chains, state, plain), reference);
    check_tilings(s.p, chains, state, reference, {0, 6});
    for (long tile : {5L, 0L}) {
      ExecOptions em;
      em.backend = Backend::emulated;
      em.tile_rows = tile;
      em.devices = 2;
      check_same(run(s.p, chains, state, em), reference);
    }
  }
  check_gradient(s.p, 2, random_state(rng, 2, s.p.n_free), 1e-6, 1e-7);
}

TEST_CASE("the seed model with 13 covariates and groups without rows: the row dot "
          "product's blocks of columns and chains agree with the plain executor",
          "[stages][executor][tiles][seed]") {
  // 13 columns take the CPU's backward through blocks of 8, 4 and 1 column
  // (RowDotBackward::add_run_columns); only every third group of 40 has rows,
  // so each tile's span of groups has groups without rows between its runs;
  // 4 and 9 chains take one and two blocks of four chains, and one chain
  // by itself.
  std::mt19937 rng(29);
  std::vector<long> groups(97);
  for (long r = 0; r < 97; ++r) groups[r] = 3 * ((r * 7) % 13) + 1;
  // the offset: the intercept (one value, in the forward's table of groups)
  // or a column of data (added row by row)
  for (bool row_offset : {false, true}) {
    INFO("row_offset " << row_offset);
    Seed s = seed_model(97, 40, 13, rng, groups, false, true, row_offset);
    Program plain_plan = s.p;
    lockstep::PlanOptions no_fusion;
    no_fusion.fuse = false;
    lockstep::plan(plain_plan, no_fusion);
    lockstep::plan(s.p);
    REQUIRE(s.p.nodes[s.eta].op == Op::rowdot_rows);
    CHECK(lockstep::rowdot_parts(s.p.nodes[s.eta]).p >= 0);
    for (long chains : {4L, 9L}) {
      const std::vector<double> state = random_state(rng, chains, s.p.n_free);
      ExecOptions plain;
      plain.observation_stage = false;
      const Result reference = run(plain_plan, chains, state, plain);
      check_tilings(s.p, chains, state, reference, {0, 7});
      ExecOptions aliased;
      aliased.alias_parameters = true;
      aliased.tile_rows = 11;
      check_same(run(s.p, chains, state, aliased), reference);
    }
  }
}

TEST_CASE("aliased parameters: values and adjoints in the state and the gradient agree with "
          "parameters' own buffers",
          "[stages][executor][tiles][alias]") {
  std::mt19937 rng(23);
  for (bool intercept_first : {false, true})
    for (bool extra_reader : {false, true}) {
      Seed s = seed_model(61, 8, 3, rng, {}, extra_reader, intercept_first);
      lockstep::plan(s.p);
      for (long chains : {1L, 4L, 5L}) {
        const std::vector<double> state = random_state(rng, chains, s.p.n_free);
        ExecOptions plain;
        plain.observation_stage = false;
        const Result reference = run(s.p, chains, state, plain);
        plain.alias_parameters = true;
        check_same(run(s.p, chains, state, plain), reference);
        for (int devices : {1, 3})
          for (int threads : {1, 2})
            for (bool reorder : {false, true}) {
              INFO("intercept_first " << intercept_first << " extra_reader " << extra_reader
                                      << " chains " << chains << " devices " << devices
                                      << " threads " << threads << " reorder " << reorder);
              ExecOptions o;
              o.devices = devices;
              o.threads = threads;
              o.reorder_rows = reorder;
              o.alias_parameters = true;
              check_same(run(s.p, chains, state, o), reference);
              Executor<double> ex(s.p, chains, o);
              // z_g, read by the row dot product and its prior, is aliased when
              // the stage adds to it directly (rows sorted by group, on any
              // number of shards); with the extra reader, gamma = z_g * sigma_g
              // is computed in the global stage (an elementwise reader) and z_g
              // is always aliased
              const bool direct = ex.stage(0).direct(s.z_g);
              CHECK(ex.value(s.z_g).empty() == (extra_reader || direct));
              if (!reorder && threads * devices > 1) CHECK_FALSE(direct);
              // sigma_g is constrained: never aliased
              CHECK_FALSE(ex.value(s.sigma_g).empty());
            }
        // single precision and the emulated backend keep the parameters' buffers
        ExecOptions em;
        em.backend = Backend::emulated;
        em.alias_parameters = true;
        check_same(run(s.p, chains, state, em), reference);
        Executor<float> single(s.p, chains, ExecOptions{});
        CHECK_FALSE(single.value(s.z_g).empty());
      }
    }
  // a parameter read by a gather (whose kernel addresses [chains, size]) keeps
  // its buffers; one read only by its density is aliased
  Program p;
  const int x = p.add(param_node(3, 0, Transform::none, 0, 0, {3, 1}));
  const int u = p.add(param_node(2, 3, Transform::none, 0, 0, {2, 1}));
  p.n_free = 5;
  const int picked = p.add(gather_node(x, {2, 0, 1, 1}));
  const int zero = p.add(data_node({0})), one = p.add(data_node({1}));
  add_term(p, density_node(Family::normal, {p.add(data_node({0.3, -1, 2, 0.5})), picked, one}));
  add_term(p, density_node(Family::normal, {u, zero, one}));
  lockstep::plan(p);
  const std::vector<double> state = random_state(rng, 3, p.n_free);
  ExecOptions o;
  o.alias_parameters = true;
  Executor<double> ex(p, 3, o);
  CHECK_FALSE(ex.value(x).empty());
  CHECK(ex.value(u).empty());
  check_same(run(p, 3, state, o), run(p, 3, state, ExecOptions{}));
}

TEST_CASE("subprogram: tracing a value computes only what it is computed from",
          "[ir][trace]") {
  std::mt19937 rng(8);
  Seed s = seed_model(30, 5, 2, rng);
  lockstep::plan(s.p);
  std::vector<int> ids;
  Program q = lockstep::subprogram(s.p, {s.gamma}, &ids);
  REQUIRE(ids.size() == 1);
  // gamma = sweep(z_gamma, sigma_gamma): two parameters and the product
  CHECK(q.nodes.size() == 3);
  for (const Node& n : q.nodes) CHECK(n.size < 30);  // nothing observation-sized
  CHECK(q.terms.empty());
  CHECK(q.n_free == s.p.n_free);
  lockstep::plan(q);
  const long chains = 2;
  const std::vector<double> state = random_state(rng, chains, s.p.n_free);
  ExecOptions plain;
  plain.observation_stage = false;
  Executor<double> whole(s.p, chains, plain), part(q, chains, plain);
  whole.forward(state.data());
  part.forward(state.data());
  CHECK(part.value(ids[0]) == whole.value(s.gamma));
  CHECK_THROWS_AS(lockstep::subprogram(s.p, {-1}, &ids), std::invalid_argument);
}

TEST_CASE("with_rows_ordered: permuted rows give the same log density and gradient",
          "[planner][row_order]") {
  std::mt19937 rng(71);
  for (long N : {2L, 13L, 200L}) {
    Regression r = regression(N, 3, 5, rng);
    Program& p = r.p;
    // varying slopes: rowsum(X * gamma[g, ]) (fused into rowdot_rows) by a
    // second grouping, on 7 groups: the largest gather, so the rows' key
    const long K = 3, G2 = 7;
    const long off = p.n_free;
    const int gamma = p.add(param_node(G2 * K, off, Transform::none, 0, 0, {G2, K}));
    p.n_free += G2 * K;
    std::vector<long> g2(N);
    for (long& v : g2) v = static_cast<long>(rng() % G2);
    const int rows = p.add(gather_rows_node(gamma, g2, p));
    const int prod = p.add(binary_node(Op::mul, r.X, rows, p));
    const int dot = p.add(rowsum_node(prod, p));
    const int zero = p.add(data_node({0}));
    const int two = p.add(data_node({2}));
    add_term(p, density_node(Family::normal, {gamma, zero, two}));
    add_term(p, density_node(Family::normal, {r.y, dot, r.sigma}));
    lockstep::plan(p);
    REQUIRE(p.extents == std::vector<long>{N});
    const Program q = lockstep::with_rows_ordered(p);
    // the key is the rowdot's index (7 x 3 values beat alpha's 5): sorted now
    const Node* key = nullptr;
    for (const Node& n : q.nodes)
      if (n.op == Op::rowdot_rows) key = &n;
    REQUIRE(key != nullptr);
    CHECK(std::is_sorted(key->index.begin(), key->index.end()));
    const std::vector<long> perm = lockstep::row_order(p, 0);
    for (long i = 0; i < N; ++i) CHECK(key->index[i] == g2[perm[i]]);
    for (long chains : {1L, 3L}) {
      INFO("N " << N << ", chains " << chains);
      const std::vector<double> state = random_state(rng, chains, p.n_free);
      ExecOptions plain;
      plain.observation_stage = false;
      check_same(run(p, chains, state, plain), run(q, chains, state, plain));
      check_same(run(p, chains, state, ExecOptions{}), run(q, chains, state, plain));
    }
  }
}

namespace {

long longest_group(const std::vector<long>& g) {
  std::vector<long> count(*std::max_element(g.begin(), g.end()) + 1, 0);
  for (long v : g) ++count[v];
  return *std::max_element(count.begin(), count.end());
}

}  // namespace

TEST_CASE("observation stage: with rows sorted by group the workers add to the global "
          "adjoints directly",
          "[stages][executor][tiles][direct]") {
  std::mt19937 rng(72);
  Seed s = seed_model(400, 30, 3, rng);
  lockstep::plan(s.p);
  REQUIRE(s.p.extents == std::vector<long>{400});
  // every tile size below reaches the start of a group from any row
  REQUIRE(longest_group(s.p.nodes[s.ga].index) < 40);
  for (long chains : {1L, 4L}) {
    const std::vector<double> state = random_state(rng, chains, s.p.n_free);
    ExecOptions plain;
    plain.observation_stage = false;
    const Result reference = run(s.p, chains, state, plain);
    for (int threads : {1, 2, 3})
      for (long tile : {0L, 40L, 57L}) {
        INFO("chains " << chains << " threads " << threads << " tile " << tile);
        ExecOptions o;
        o.threads = threads;
        o.tile_rows = tile;
        Executor<double> ex(s.p, chains, o);
        const lockstep::ObservationStage<double>& stage = ex.stage(0);
        CHECK(stage.direct(slopes(s)));
        CHECK(stage.direct(s.alpha_g));
        // beta is read whole by every row (X %*% beta): direct with one worker only
        CHECK(stage.direct(s.beta) == (threads == 1));
        check_same(run(s.p, chains, state, o), reference);
      }
    ExecOptions em;
    em.backend = Backend::emulated;
    em.threads = 2;
    em.tile_rows = 45;
    CHECK(Executor<double>(s.p, chains, em).stage(0).direct(slopes(s)));
    check_same(run(s.p, chains, state, em), reference);
  }
}

TEST_CASE("observation stage: private adjoint copies where workers may meet: a reader not "
          "by row and shards and unsorted rows",
          "[stages][executor][tiles][direct]") {
  std::mt19937 rng(73);
  // gamma is also read by flat element index: no rows can be told apart
  Seed s = seed_model(300, 20, 3, rng, {}, true);
  lockstep::plan(s.p);
  REQUIRE(s.p.extents == std::vector<long>{300});
  REQUIRE(s.p.nodes[s.p.terms.back()].extent == 0);
  for (long chains : {1L, 3L}) {
    const std::vector<double> state = random_state(rng, chains, s.p.n_free);
    ExecOptions plain;
    plain.observation_stage = false;
    const Result reference = run(s.p, chains, state, plain);
    for (int threads : {2, 3}) {
      INFO("chains " << chains << " threads " << threads);
      ExecOptions o;
      o.threads = threads;
      o.tile_rows = 50;
      CHECK_FALSE(Executor<double>(s.p, chains, o).stage(0).direct(slopes(s)));
      CHECK(Executor<double>(s.p, chains, o).stage(0).direct(s.alpha_g));
      check_same(run(s.p, chains, state, o), reference);
      // rows in their given (random) order: every worker meets most groups
      o.reorder_rows = false;
      CHECK_FALSE(Executor<double>(s.p, chains, o).stage(0).direct(slopes(s)));
      CHECK_FALSE(Executor<double>(s.p, chains, o).stage(0).direct(s.alpha_g));
      check_same(run(s.p, chains, state, o), reference);
      // shards own their groups' rows: alpha_g's adjoint is added in place,
      // gamma's (read by flat index too) all-reduced whole
      o.reorder_rows = true;
      o.devices = 2;
      CHECK(Executor<double>(s.p, chains, o).stage(0).direct(s.alpha_g));
      CHECK_FALSE(Executor<double>(s.p, chains, o).stage(0).direct(slopes(s)));
      check_same(run(s.p, chains, state, o), reference);
    }
  }
}

TEST_CASE("observation stage: worker boundaries move to a group's first row and N below "
          "one tile",
          "[stages][executor][tiles][direct]") {
  std::mt19937 rng(74);
  // 4 groups of 10 rows, in scrambled order
  std::vector<long> g(40);
  for (long r = 0; r < 40; ++r) g[r] = (r * 7 % 40) / 10;
  Seed s = seed_model(40, 4, 3, rng, g);
  lockstep::plan(s.p);
  // one group of 30 rows and one of 10: no group's start near row 21
  std::vector<long> h(40);
  for (long r = 0; r < 40; ++r) h[r] = (r * 7 % 40) < 30 ? 1 : 0;
  Seed big = seed_model(40, 2, 3, rng, h);
  lockstep::plan(big.p);
  Seed few = seed_model(5, 2, 3, rng);
  lockstep::plan(few.p);
  for (long chains : {1L, 3L}) {
    const std::vector<double> state = random_state(rng, chains, s.p.n_free);
    ExecOptions plain;
    plain.observation_stage = false;
    const Result reference = run(s.p, chains, state, plain);
    for (int threads : {2, 3})
      for (long tile : {3L, 7L, 15L}) {
        INFO("chains " << chains << " threads " << threads << " tile " << tile);
        ExecOptions o;
        o.threads = threads;
        o.tile_rows = tile;
        Executor<double> ex(s.p, chains, o);
        // three workers with tiles of 3 rows: the nominal boundary at row 27
        // is 3 rows from a group's first row, out of reach: private copies
        const bool reach = !(threads == 3 && tile == 3);
        CHECK(ex.stage(0).direct(slopes(s)) == reach);
        CHECK(ex.stage(0).direct(s.alpha_g) == reach);
        // two workers, tiles of 15: the boundary at row 15 moves back to row
        // 10, and the second worker's 30 rows are two tiles
        if (threads == 2 && tile == 15) CHECK(ex.stage(0).tiles() == 3);
        check_same(run(s.p, chains, state, o), reference);
      }
    // the boundary of two workers with tiles of 3 rows falls at row 21, in the
    // group of rows 10 to 39 (after sorting): it stays, and so do the copies
    const std::vector<double> big_state = random_state(rng, chains, big.p.n_free);
    ExecOptions o;
    o.observation_stage = false;
    const Result big_reference = run(big.p, chains, big_state, o);
    o.observation_stage = true;
    o.threads = 2;
    o.tile_rows = 3;
    CHECK_FALSE(Executor<double>(big.p, chains, o).stage(0).direct(slopes(big)));
    check_same(run(big.p, chains, big_state, o), big_reference);
    // N = 5 below one tile of 8: one worker has all the rows
    const std::vector<double> few_state = random_state(rng, chains, few.p.n_free);
    o.observation_stage = false;
    const Result few_reference = run(few.p, chains, few_state, o);
    o.observation_stage = true;
    for (int threads : {1, 2, 3}) {
      INFO("N 5 chains " << chains << " threads " << threads);
      o.threads = threads;
      o.tile_rows = 8;
      Executor<double> ex(few.p, chains, o);
      CHECK(ex.stage(0).tiles() == 1);
      CHECK(ex.stage(0).direct(slopes(few)));
      CHECK(ex.stage(0).direct(few.beta));
      check_same(run(few.p, chains, few_state, o), few_reference);
    }
  }
}

TEST_CASE("observation stage: across virtual devices only the global values' adjoints and "
          "per-chain scalars are all-reduced, whatever N and G",
          "[stages][executor][tiles][direct][shards]") {
  // The seed model (issue 35): beta, a, sigma_a and sigma_g are global (2K + 2
  // coordinates), z_a and z_g local to the rows' groups. Across 2 shards a
  // gradient of C chains sends at most C x (globals + 8) doubles, the same
  // at every N and G; before shards owned their groups it was C x (G (K + 1) + ...).
  std::mt19937 rng(75);
  const long K = 3;
  const long C = 4;
  std::vector<long> sent;
  for (long G : {40L, 160L}) {
    Seed s = seed_model(25 * G, G, K, rng);
    lockstep::plan(s.p);
    const long globals = 2 * K + 2;
    REQUIRE(s.p.n_free == globals + G * (K + 1));
    const std::vector<double> state = random_state(rng, C, s.p.n_free);
    ExecOptions plain;
    plain.observation_stage = false;
    const Result reference = run(s.p, C, state, plain);
    for (int threads : {1, 2}) {
      INFO("G " << G << " threads " << threads);
      ExecOptions o;
      o.devices = 2;
      o.threads = threads;
      Executor<double> ex(s.p, C, o);
      CHECK(ex.stage(0).direct(slopes(s)));
      CHECK(ex.stage(0).direct(s.alpha_g));
      std::vector<double> lp(C), grad(C * s.p.n_free);
      ex.log_density(state.data(), lp.data(), grad.data());
      ex.reset_shard_stats();
      ex.log_density(state.data(), lp.data(), grad.data());
      const long bytes = ex.shard_stats().bytes;
      CHECK(bytes <= C * (globals + 8) * static_cast<long>(sizeof(double)));
      CHECK(bytes >= C * K * static_cast<long>(sizeof(double)));  // beta's adjoint at least
      sent.push_back(bytes);
      check_same(run(s.p, C, state, o), reference);
    }
  }
  for (long b : sent) CHECK(b == sent[0]);
}

// Minibatches (svi()'s batch_size, Minibatch): each draw evaluates a random
// quarter of the stage's tiles, scaled by tiles over tiles drawn, so the mean
// over many draws of the log density, the gradient and the density terms'
// values is the whole data's, within Monte Carlo error (4.5 standard errors
// per coordinate; exact where a coordinate does not vary). Over one worker,
// several workers (the group-local adjoints, direct in a whole-data run, go
// through private copies), virtual devices, and the tile kernel on the
// emulated backend (the drawn tiles' densities weighted, on the lanes).
TEST_CASE("observation stage: minibatches of tiles are unbiased estimates of the whole data's "
          "log density, gradient and terms",
          "[stages][executor][minibatch]") {
  std::mt19937 rng(91);
  Seed s = seed_model(240, 12, 3, rng, random_groups(rng, 240, 12, true));
  lockstep::plan(s.p);
  const long chains = 2, D = s.p.n_free;
  const std::vector<double> state = random_state(rng, chains, D);
  ExecOptions plain;
  plain.observation_stage = false;
  const Result whole = run(s.p, chains, state, plain);
  for (int config = 0; config < 5; ++config) {
    const int threads = config == 1 ? 2 : config == 2 ? 3 : 1;
    INFO("config " << config << ": threads " << threads);
    ExecOptions o;
    o.threads = threads;
    o.devices = config == 2 ? 2 : 1;
    o.tile_rows = 10;
    // the emulated backend's lanes, op by op and as the tile kernel
    if (config >= 3) o.backend = Backend::emulated;
    o.tile_kernel = config == 4;
    Executor<double> ex(s.p, chains, o);
    REQUIRE(ex.stage(0).tiles() >= 24);
    lockstep::Minibatch batch;
    batch.fraction = 0.25;
    batch.key0 = 7;
    batch.key1 = 9;
    // each draw's values: lp, then the gradient, then the terms
    const long n = 3000;
    std::vector<double> sum, sum2;
    Result one;
    one.lp.assign(chains, 0);
    one.grad.assign(chains * D, 0);
    for (long d = 1; d <= n; ++d) {
      batch.draw = d;
      ex.set_minibatch(batch);
      ex.log_density(state.data(), one.lp.data(), one.grad.data());
      std::vector<double> v = one.lp;
      v.insert(v.end(), one.grad.begin(), one.grad.end());
      for (int t : s.p.terms) v.insert(v.end(), ex.value(t).begin(), ex.value(t).end());
      if (sum.empty()) sum.assign(v.size(), 0.0), sum2.assign(v.size(), 0.0);
      for (size_t k = 0; k < v.size(); ++k) sum[k] += v[k], sum2[k] += v[k] * v[k];
    }
    std::vector<double> expected = whole.lp;
    expected.insert(expected.end(), whole.grad.begin(), whole.grad.end());
    for (const auto& t : whole.terms) expected.insert(expected.end(), t.begin(), t.end());
    REQUIRE(expected.size() == sum.size());
    long varying = 0;
    for (size_t k = 0; k < sum.size(); ++k) {
      INFO("value " << k << " (lp, then the gradient, then the terms)");
      const double mean = sum[k] / n;
      const double se = std::sqrt(std::max(0.0, sum2[k] / n - mean * mean) / n);
      if (se > 1e-9 * (1 + std::fabs(mean))) ++varying;
      CHECK(std::fabs(mean - expected[k]) <= 4.5 * se + 1e-9 * (1 + std::fabs(expected[k])));
    }
    CHECK(varying > chains);  // the draws do differ: lp and likelihood gradients at least
    // a draw repeats; another draw differs; fraction 1 is the whole data again
    Result a, b, c;
    for (Result* r : {&a, &b, &c}) r->lp.assign(chains, 0), r->grad.assign(chains * D, 0);
    batch.draw = 5;
    ex.set_minibatch(batch);
    ex.log_density(state.data(), a.lp.data(), a.grad.data());
    ex.log_density(state.data(), b.lp.data(), b.grad.data());
    CHECK(a.lp == b.lp);
    CHECK(a.grad == b.grad);
    batch.draw = 6;
    ex.set_minibatch(batch);
    ex.log_density(state.data(), c.lp.data(), c.grad.data());
    CHECK(c.lp != a.lp);
    ex.set_minibatch(lockstep::Minibatch());
    ex.log_density(state.data(), c.lp.data(), c.grad.data());
    for (int t : s.p.terms) c.terms.push_back(ex.value(t));
    check_same(c, whole);
  }
}

TEST_CASE("observation stage: a minibatch draws fraction x tiles distinct tiles, each as often",
          "[stages][minibatch]") {
  std::mt19937 rng(92);
  Regression r = regression(200, 2, 3, rng);
  lockstep::plan(r.p);
  ExecOptions o;
  o.tile_rows = 10;
  Executor<double> ex(r.p, 1, o);
  const lockstep::ObservationStage<double>& stage = ex.stage(0);
  REQUIRE(stage.tiles() == 20);
  lockstep::Minibatch batch;
  batch.fraction = 0.1;
  std::vector<long> count(20, 0);
  const long n = 4000;
  for (long d = 0; d < n; ++d) {
    batch.draw = d;
    const lockstep::DrawnTiles draw = stage.draw_tiles(batch);
    const std::vector<long>& drawn = draw.tiles;
    REQUIRE(draw.weight == 10);
    REQUIRE(drawn.size() == 2);
    CHECK(drawn[0] < drawn[1]);  // distinct, in order
    for (long t : drawn) ++count[t];
  }
  // each tile drawn with probability 0.1: 400 of 4000, sd 19
  for (long t = 0; t < 20; ++t) CHECK(std::abs(count[t] - 400) < 5 * 19);
  batch.fraction = 0.001;  // at least one tile
  CHECK(stage.draw_tiles(batch).tiles.size() == 1);
  // max_tile_rows caps the automatic tile size
  ExecOptions capped;
  capped.max_tile_rows = 7;
  CHECK(Executor<double>(r.p, 1, capped).stage(0).tile_rows() <= 7);
}

TEST_CASE("minibatches are refused where they cannot run", "[stages][minibatch][errors]") {
  std::mt19937 rng(93);
  Regression r = regression(50, 2, 3, rng);
  lockstep::plan(r.p);
  lockstep::Minibatch batch;
  batch.fraction = 0.5;
  ExecOptions plain;
  plain.observation_stage = false;
  Executor<double> untiled(r.p, 1, plain);
  CHECK_THROWS_WITH(untiled.set_minibatch(batch), Catch::Contains("observation stage"));
  ExecOptions aliased;
  aliased.alias_parameters = true;
  Executor<double> with_alias(r.p, 1, aliased);
  CHECK_THROWS_WITH(with_alias.set_minibatch(batch), Catch::Contains("aliased"));
  untiled.set_minibatch(lockstep::Minibatch());  // inactive: fine anywhere
}
