// The tile kernel (tile_kernel.hpp) on the emulated backend: an observation
// stage's forward and backward run block by block, each node's body on the
// block's lanes alone, the tile's values and adjoints in block memory. It
// must equal the plain op-by-op executor on the CPU up to floating-point
// reassociation (1e-12 relative), for geometries with one lane, odd lane
// counts and more lanes than a tile has elements, tiles that do and do not
// divide the rows, more blocks than tiles, and several chain counts; and its
// gradient must match finite differences.
#include <catch2/catch.hpp>

#include <random>
#include <stdexcept>
#include <vector>

#include "helpers.hpp"
#include "models.hpp"
#include "lockstep/communicator.hpp"
#include "lockstep/executor.hpp"
#include "lockstep/planner.hpp"

using namespace lstest;
using lockstep::ExecOptions;

namespace {

ExecOptions tile_kernel(EmulatedGeometry g, long tile_rows) {
  ExecOptions o;
  o.backend = Backend::emulated;
  o.geometry = g;
  o.tile_kernel = true;
  o.tile_rows = tile_rows;
  return o;
}

const std::vector<EmulatedGeometry> geometries = {{1, 1}, {3, 5}, {2, 32}, {1, 300}, {9, 3}};

// A two-component mixture over rows, from logpdf nodes, as mixture() lowers
// it: log(w exp(lp1) + (1 - w) exp(lp2)) = log_add_exp(lp1 + log w,
// lp2 + log(1 - w)), a target term; the components' sd per row
// (exp(X[, 1] * s)), a location per group, and a truncated second component.
Program mixture_rows(long N, long G, std::mt19937& rng) {
  Program p;
  std::normal_distribution<double> norm;
  const int mu = p.add(param_node(G, 0));
  const int s = p.add(param_node(1, G));
  const int w = p.add(param_node(1, G + 1, Transform::interval, 0, 1));
  const int shift = p.add(param_node(1, G + 2, Transform::lower, 0));
  p.n_free = G + 3;
  std::vector<double> y(N), x(N);
  for (double& v : y) v = norm(rng) + 0.5;
  for (double& v : x) v = 0.5 * norm(rng);
  std::vector<long> g(N);
  for (long r = 0; r < N; ++r) g[r] = (r * 5 + 1) % G;
  const int yd = p.add(data_node(y));
  const int xd = p.add(data_node(x));
  const int xs = p.add(binary_node(Op::mul, xd, s, p));
  const int sd = p.add(unary_node(Op::exp, xs, p));
  const int loc = p.add(gather_node(mu, g));
  const int loc2 = p.add(binary_node(Op::add, loc, shift, p));
  Node a;
  a.op = Op::logpdf;
  a.dim = p.nodes[yd].dim;
  a.size = N;
  a.inputs = {yd, loc, sd};
  a.family = Family::normal;
  const int lp1 = p.add(a);
  Node b = a;
  b.inputs = {yd, loc2, sd};
  b.trunc_lower = -1.5;
  const int lp2 = p.add(b);
  const int lw = p.add(unary_node(Op::log, w, p));
  const int one = p.add(data_node({1}));
  const int zero = p.add(data_node({0}));
  const int lw2 = p.add(unary_node(Op::log, p.add(binary_node(Op::sub, one, w, p)), p));
  const int t1 = p.add(binary_node(Op::add, lp1, lw, p));
  const int t2 = p.add(binary_node(Op::add, lp2, lw2, p));
  const int mix = p.add(binary_node(Op::log_add_exp, t1, t2, p));
  add_term(p, density_node(Family::target, {mix}));
  add_term(p, density_node(Family::normal, {mu, zero, one}));
  add_term(p, density_node(Family::normal, {s, zero, one}));
  add_term(p, density_node(Family::exponential, {shift, one}));
  return p;
}

void check_tile_kernel(const Program& p, long chains, const std::vector<double>& state,
                       const std::vector<long>& tiles) {
  ExecOptions plain;
  plain.observation_stage = false;
  const Result reference = run(p, chains, state, plain);
  for (const EmulatedGeometry& g : geometries)
    for (long tile : tiles) {
      INFO("chains " << chains << ", blocks " << g.blocks << " x " << g.lanes_per_block
                     << " lanes, tile rows " << tile);
      check_same(run(p, chains, state, tile_kernel(g, tile)), reference);
    }
}

}  // namespace

TEST_CASE("tile kernel, emulated: the regression (matmul, gathers, broadcasts, four terms on "
          "one extent) equals the plain cpu executor",
          "[tiles][tile_kernel][emulated]") {
  std::mt19937 rng(61);
  for (long N : {5L, 23L, 64L}) {
    Regression r = regression(N, 3, 4, rng);
    lockstep::plan(r.p);
    REQUIRE(r.p.extents.size() == 1);
    for (long chains : {1L, 3L}) {
      INFO("N " << N);
      check_tile_kernel(r.p, chains, random_state(rng, chains, r.p.n_free), {0, 1, 7, N + 3});
    }
  }
}

TEST_CASE("tile kernel, emulated: the seed model, fused (row dot products) and not (row "
          "gathers and rowSums), equals the plain cpu executor",
          "[tiles][tile_kernel][emulated][seed]") {
  std::mt19937 rng(62);
  for (bool row_offset : {false, true}) {
    Seed s = seed_model(59, 6, 5, rng, {}, true, true, row_offset);
    Program unfused = s.p;
    lockstep::PlanOptions no_fusion;
    no_fusion.fuse = false;
    lockstep::plan(unfused, no_fusion);
    lockstep::plan(s.p);
    REQUIRE(s.p.nodes[s.eta].op == Op::rowdot_rows);
    REQUIRE(unfused.nodes[s.rs].op == Op::rowsum);
    for (long chains : {1L, 4L, 5L}) {
      INFO("row_offset " << row_offset);
      const std::vector<double> state = random_state(rng, chains, s.p.n_free);
      check_tile_kernel(s.p, chains, state, {0, 8});
      check_tile_kernel(unfused, chains, state, {5});
    }
  }
  // rows sorted by group, as the CUDA executor orders them (row_order.hpp):
  // the gathers' backward sums runs of equal indices
  std::vector<long> sorted(80);
  for (long r = 0; r < 80; ++r) sorted[r] = r / 9;
  Seed s = seed_model(80, 9, 4, rng, sorted, false, true);
  lockstep::plan(s.p);
  check_tile_kernel(s.p, 3, random_state(rng, 3, s.p.n_free), {0, 16});
}

TEST_CASE("tile kernel, emulated: a mixture of logpdf terms with per-row scales equals the "
          "plain cpu executor, and its gradient matches finite differences",
          "[tiles][tile_kernel][emulated][logpdf]") {
  std::mt19937 rng(63);
  Program p = mixture_rows(41, 5, rng);
  lockstep::plan(p);
  REQUIRE(p.extents == std::vector<long>{41});
  for (long chains : {1L, 3L}) check_tile_kernel(p, chains, random_state(rng, chains, p.n_free), {0, 6});
  const long chains = 2;
  const std::vector<double> state = random_state(rng, chains, p.n_free);
  const ExecOptions o = tile_kernel(EmulatedGeometry{3, 5}, 6);
  Executor<double> ex(p, chains, o);
  std::vector<double> lp(chains), grad(chains * p.n_free);
  ex.log_density(state.data(), lp.data(), grad.data());
  const FdResult fd = fd_gradient(p, chains, state);
  for (size_t k = 0; k < grad.size(); ++k) {
    INFO("coordinate " << k);
    CHECK(close(grad[k], fd.grad[k], 1e-6, 1e-7));
  }
}

TEST_CASE("tile kernel, emulated: single precision within float tolerance of double, and "
          "without a gradient the same log density",
          "[tiles][tile_kernel][emulated][single]") {
  std::mt19937 rng(64);
  Seed s = seed_model(47, 5, 3, rng, {}, false, true);
  lockstep::plan(s.p);
  const long chains = 3;
  const std::vector<double> state = random_state(rng, chains, s.p.n_free);
  ExecOptions plain;
  plain.observation_stage = false;
  const Result reference = run(s.p, chains, state, plain);
  Executor<float> ex(s.p, chains, tile_kernel(EmulatedGeometry{2, 7}, 10));
  std::vector<double> lp(chains), grad(chains * s.p.n_free), lp_only(chains);
  ex.log_density(state.data(), lp.data(), grad.data());
  ex.log_density(state.data(), lp_only.data(), nullptr);
  for (long c = 0; c < chains; ++c) {
    CHECK(close(lp[c], reference.lp[c], 1e-5, 1e-4));
    CHECK(lp_only[c] == lp[c]);
  }
  for (size_t k = 0; k < grad.size(); ++k) CHECK(close(grad[k], reference.grad[k], 1e-4, 1e-4));
}

TEST_CASE("tile kernel: the layout puts every row-aligned value in the tile area and asks "
          "block memory for the bodies' sums",
          "[tiles][tile_kernel]") {
  std::mt19937 rng(65);
  Regression r = regression(30, 3, 4, rng);
  lockstep::plan(r.p);
  const long chains = 3;
  const std::vector<double> state = random_state(rng, chains, r.p.n_free);
  Executor<double> ex(r.p, chains, tile_kernel(EmulatedGeometry{2, 4}, 8));
  std::vector<double> lp(chains);
  ex.log_density(state.data(), lp.data(), nullptr);
  const lockstep::ObservationStage<double>& stage = ex.stage(0);
  // one worker: tiles of at most 8 rows, evenly split: 4 tiles of 7 or 8
  CHECK(stage.tiles() == 4);
  std::vector<std::vector<double>> values(r.p.nodes.size());
  for (int t : r.p.terms) values[t].assign(chains, 0.0);
  lockstep::GlobalBuffers<double> global{&values, &values};
  const lockstep::TileLayout<double> layout = stage.tile_layout(stage.host_placement(global));
  long area = 0, densities = 0;
  for (int id : stage.nodes()) {
    const Node& n = r.p.nodes[id];
    if (n.op == Op::density)
      ++densities;
    else
      area += chains * 8 * (n.size / n.dim[0]);
  }
  CHECK(layout.steps.size() == stage.nodes().size());
  CHECK(densities == 4);
  CHECK(layout.adjoint_offset == area);
  // a density's ChainSum: one double per chain per lane, at least
  CHECK(layout.body_shared >= chains);
  for (size_t k = 0; k < layout.steps.size(); ++k) {
    const lockstep::TileStep<double>& step = layout.steps[k];
    const Node& n = r.p.nodes[stage.nodes()[k]];
    CHECK(step.node.op == n.op);
    CHECK(step.node.n_inputs == static_cast<int>(n.inputs.size()));
    if (n.op == Op::density) CHECK(step.out.source == lockstep::TileSource::global);
    else CHECK(step.out.source == lockstep::TileSource::tile);
  }

  // A stage made for its layout alone (how CudaExecutor sizes its tiles)
  // copies no row data and lays out the same steps and block memory.
  std::vector<std::vector<double>> host(r.p.nodes.size());
  for (size_t id = 0; id < r.p.nodes.size(); ++id) host[id].assign(r.p.nodes[id].values.begin(), r.p.nodes[id].values.end());
  lockstep::StageOptions so;
  so.tile_kernel = true;
  so.tile_rows = 8;
  so.row_data = false;
  lockstep::ObservationStage<double> bare(r.p, 0, chains, so, host);
  long with_rows = 0;
  for (size_t id = 0; id < r.p.nodes.size(); ++id) {
    CHECK(bare.row_data(static_cast<int>(id)).empty());
    with_rows += !stage.row_data(static_cast<int>(id)).empty();
  }
  CHECK(with_rows > 0);
  const lockstep::TileLayout<double> bare_layout =
      bare.tile_layout(lockstep::TilePlacement<double>(r.p.nodes.size()));
  CHECK(bare_layout.steps.size() == layout.steps.size());
  CHECK(bare_layout.adjoint_offset == layout.adjoint_offset);
  CHECK(bare_layout.body_shared == layout.body_shared);
  CHECK(bare.tile_starts() == stage.tile_starts());
}

TEST_CASE("tile kernel: the GPU's kernel (LinearTileKernels) holds the seed model's and a "
          "regression's stages, and not those with elementwise ops or logpdf",
          "[tiles][tile_kernel]") {
  std::mt19937 rng(67);
  auto steps_of = [](const Program& p) {
    Executor<double> ex(p, 2, tile_kernel(EmulatedGeometry{2, 4}, 8));
    const lockstep::ObservationStage<double>& stage = ex.stage(0);
    return stage.tile_layout(lockstep::TilePlacement<double>(p.nodes.size())).steps;
  };
  using lockstep::LinearTileKernels;
  for (bool row_offset : {false, true}) {
    Seed s = seed_model(40, 5, 3, rng, {}, false, true, row_offset);
    lockstep::plan(s.p);
    CHECK(lockstep::tile_kernel_holds<LinearTileKernels>(steps_of(s.p)));
    Program unfused = seed_model(40, 5, 3, rng).p;
    lockstep::PlanOptions no_fusion;
    no_fusion.fuse = false;
    lockstep::plan(unfused, no_fusion);
    // X * gamma[g, ] is an elementwise product
    CHECK_FALSE(lockstep::tile_kernel_holds<LinearTileKernels>(steps_of(unfused)));
  }
  Program mixture = mixture_rows(30, 4, rng);
  lockstep::plan(mixture);
  CHECK_FALSE(lockstep::tile_kernel_holds<LinearTileKernels>(steps_of(mixture)));
  // every family it names has a density term; none beyond them
  CHECK(LinearTileKernels::family(Family::poisson_log));
  CHECK_FALSE(LinearTileKernels::family(Family::hypergeometric));
  CHECK_FALSE(LinearTileKernels::op_family(lockstep::OpFamily::logpdf));
}

TEST_CASE("tile kernel: a run across processes is refused", "[tiles][tile_kernel]") {
  std::mt19937 rng(66);
  Regression r = regression(12, 2, 3, rng);
  lockstep::plan(r.p);
  lockstep::InProcessCommunicator world(1);
  ExecOptions o = tile_kernel(EmulatedGeometry{}, 0);
  o.world = &world;
  CHECK_THROWS_WITH((Executor<double>(r.p, 1, o)),
                    Catch::Contains("tile kernel does not run across processes"));
}
