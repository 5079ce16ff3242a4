// Shards of a program's rows (shards.hpp), as the multi-GPU executor runs
// them: the shards' log densities and gradients, summed, must equal the whole
// program's up to reassociation, on the cpu backend (plain and tiled) and on
// the emulated one (the CUDA kernel bodies run lane by lane), for several
// shard and chain counts, extents with fewer rows than shards, and both
// precisions.
#include <catch2/catch.hpp>

#include <random>

#include "helpers.hpp"
#include "lockstep/kernels/chain_vectors.hpp"
#include "lockstep/launcher.hpp"
#include "lockstep/planner.hpp"
#include "lockstep/shards.hpp"
#include "models.hpp"

using namespace lstest;
using lockstep::ShardedTarget;

namespace {

Result run_sharded(const Program& p, long chains, const std::vector<double>& state,
                   const ExecOptions& o, int shards) {
  auto t = ShardedTarget::make<double>(p, chains, o, shards);
  Result r;
  r.lp.assign(chains, 0);
  r.grad.assign(chains * p.n_free, 0);
  t->log_density(state.data(), r.lp.data(), r.grad.data());
  // without the gradient, the same log density
  std::vector<double> lp(chains);
  t->log_density(state.data(), lp.data(), nullptr);
  for (long c = 0; c < chains; ++c) CHECK(close(lp[c], r.lp[c], 1e-14, 1e-14));
  return r;
}

std::vector<ExecOptions> shard_backends() {
  ExecOptions plain;
  plain.observation_stage = false;
  ExecOptions tiled;
  tiled.tile_rows = 3;
  tiled.devices = 2;
  ExecOptions emulated;
  emulated.backend = Backend::emulated;
  emulated.geometry = EmulatedGeometry{3, 5};
  emulated.observation_stage = false;  // op by op over whole rows, as on a GPU
  return {plain, tiled, emulated};
}

}  // namespace

TEST_CASE("shard_first_row: blocks cover the rows once, in order, as evenly as can be",
          "[shards]") {
  for (long rows : {1L, 2L, 7L, 100L, 1000003L})
    for (int shards : {1, 2, 3, 4, 8}) {
      CHECK(lockstep::shard_first_row(rows, 0, shards) == 0);
      CHECK(lockstep::shard_first_row(rows, shards, shards) == rows);
      for (int s = 0; s < shards; ++s) {
        const long n = lockstep::shard_first_row(rows, s + 1, shards) -
                       lockstep::shard_first_row(rows, s, shards);
        CHECK(n >= rows / shards);
        CHECK(n <= rows / shards + 1);
      }
    }
}

TEST_CASE("shard_program: each shard holds its block of rows, and only shard 0 the global "
          "terms",
          "[shards]") {
  std::mt19937 rng(41);
  Regression r = regression(10, 3, 4, rng);
  lockstep::plan(r.p);
  REQUIRE(r.p.extents == std::vector<long>{10});
  long global_terms = 0, row_terms = 0;
  for (int t : r.p.terms) (r.p.nodes[t].extent < 0 ? global_terms : row_terms) += 1;
  REQUIRE(global_terms == 4);
  REQUIRE(row_terms == 4);
  const int shards = 3;
  long rows = 0;
  for (int s = 0; s < shards; ++s) {
    const Program q = lockstep::shard_program(r.p, s, shards);
    const long n = q.extents[0];
    rows += n;
    CHECK(q.nodes[r.X].dim == std::vector<long>{n, 3});
    CHECK(q.nodes[r.y].values.size() == static_cast<size_t>(n));
    // the rows of y are the block's
    const long first = lockstep::shard_first_row(10, s, shards);
    for (long i = 0; i < n; ++i) CHECK(q.nodes[r.y].values[i] == r.p.nodes[r.y].values[first + i]);
    CHECK(q.nodes[r.g_alpha].index ==
          std::vector<long>(r.p.nodes[r.g_alpha].index.begin() + first,
                            r.p.nodes[r.g_alpha].index.begin() + first + n));
    CHECK(q.terms.size() == static_cast<size_t>(s == 0 ? 8 : 4));
    // global values are computed on every shard: the parameters stay live
    CHECK(q.nodes[r.beta].live);
    CHECK(q.nodes[r.sigma].live);
    CHECK(lockstep::shard_options(ExecOptions(), s).jacobian == (s == 0));
  }
  CHECK(rows == 10);
  CHECK_THROWS_AS(lockstep::shard_program(r.p, 3, 3), std::invalid_argument);
  CHECK_THROWS_AS(lockstep::shard_program(r.p, -1, 3), std::invalid_argument);
}

TEST_CASE("sharded targets equal the whole program: regressions, shards, chains, backends, "
          "fewer rows than shards",
          "[shards][emulated]") {
  std::mt19937 rng(42);
  for (long N : {1L, 2L, 5L, 23L}) {
    Regression r = regression(N, 3, 4, rng);
    lockstep::plan(r.p);
    for (long chains : {1L, 3L}) {
      const std::vector<double> state = uniform_vector(rng, chains * r.p.n_free, -0.7, 0.7);
      ExecOptions plain;
      plain.observation_stage = false;
      const Result whole = run(r.p, chains, state, plain);
      for (int shards : {1, 2, 3, 4})
        for (const ExecOptions& o : shard_backends()) {
          INFO("N " << N << " chains " << chains << " shards " << shards << " backend "
                    << static_cast<int>(o.backend) << " tiled " << o.observation_stage);
          // (its terms are per shard: compared through their sum, lp)
          check_same(run_sharded(r.p, chains, state, o, shards), whole);
        }
    }
  }
}

TEST_CASE("sharded targets equal the whole program: the seed model with its fused row dot "
          "product",
          "[shards][seed][emulated]") {
  std::mt19937 rng(43);
  for (bool intercept_first : {false, true}) {
    Seed s = seed_model(37, 6, 3, rng, {}, false, intercept_first);
    lockstep::plan(s.p);
    REQUIRE(s.p.nodes[intercept_first ? s.eta : s.e2].op == lockstep::Op::rowdot_rows);
    for (long chains : {1L, 4L}) {
      const std::vector<double> state = uniform_vector(rng, chains * s.p.n_free, -0.7, 0.7);
      ExecOptions plain;
      plain.observation_stage = false;
      Result whole = run(s.p, chains, state, plain);
      whole.terms.clear();
      for (int shards : {2, 3})
        for (const ExecOptions& o : shard_backends()) {
          INFO("chains " << chains << " shards " << shards << " backend "
                         << static_cast<int>(o.backend) << " tiled " << o.observation_stage);
          check_same(run_sharded(s.p, chains, state, o, shards), whole);
        }
    }
  }
}

TEST_CASE("sharded targets in single precision: within float tolerance of double",
          "[shards][float]") {
  std::mt19937 rng(44);
  Regression r = regression(60, 3, 5, rng);
  lockstep::plan(r.p);
  const long chains = 2;
  const std::vector<double> state = uniform_vector(rng, chains * r.p.n_free, -0.7, 0.7);
  ExecOptions o;
  o.observation_stage = false;
  const Result whole = run(r.p, chains, state, o);
  auto t = ShardedTarget::make<float>(r.p, chains, o, 3);
  std::vector<double> lp(chains), grad(chains * r.p.n_free);
  t->log_density(state.data(), lp.data(), grad.data());
  double gscale = 0;
  for (double v : whole.grad) gscale = std::max(gscale, std::fabs(v));
  for (long c = 0; c < chains; ++c) CHECK(std::fabs(lp[c] - whole.lp[c]) <= 1e-5 * std::fabs(whole.lp[c]) + 1e-4);
  for (size_t k = 0; k < grad.size(); ++k) CHECK(std::fabs(grad[k] - whole.grad[k]) <= 1e-4 * gscale);
}

TEST_CASE("without_global_terms: what is left is the terms of the rows", "[shards]") {
  std::mt19937 rng(45);
  Regression r = regression(17, 2, 3, rng);
  lockstep::plan(r.p);
  const Program rows = lockstep::without_global_terms(r.p);
  for (int t : rows.terms) CHECK(rows.nodes[t].extent == 0);
  CHECK(rows.terms.size() == 4);
  const long chains = 3;
  const std::vector<double> state = uniform_vector(rng, chains * r.p.n_free, -0.7, 0.7);
  ExecOptions o;
  o.observation_stage = false;
  o.jacobian = false;
  const Result whole = run(r.p, chains, state, o);
  const Result part = run(rows, chains, state, o);
  // the whole program's log density less its global terms' values
  for (long c = 0; c < chains; ++c) {
    double global = 0;
    for (size_t k = 0; k < r.p.terms.size(); ++k)
      if (r.p.nodes[r.p.terms[k]].extent < 0) global += whole.terms[k][c];
    CHECK(close(part.lp[c], whole.lp[c] - global, 1e-12, 1e-12));
  }
}

TEST_CASE("AddPartial: a later shard's partials added in place, on every lane layout",
          "[shards][emulated]") {
  std::mt19937 rng(46);
  for (long n : {1L, 7L, 100L}) {
    const std::vector<double> total = uniform_vector(rng, n, -2, 2),
                              partial = uniform_vector(rng, n, -2, 2);
    for (const lockstep::Launcher& launch :
         {lockstep::Launcher{Backend::cpu, {}}, lockstep::Launcher{Backend::emulated, {3, 5}},
          lockstep::Launcher{Backend::emulated, {2, 32}}}) {
      std::vector<double> sum = total;
      launch(lockstep::AddPartial{{}, sum.data(), partial.data(), n});
      for (long k = 0; k < n; ++k) CHECK(sum[k] == total[k] + partial[k]);
    }
  }
}

namespace {

// A two-component normal mixture over N rows, as R's mixture() lowers it:
// a = logpdf(normal, y, mu1, sigma) + log(w), b = logpdf(normal, y, mu2,
// sigma) + log(1 - w), log_add_exp(a, b) = (a + b + |a - b|) / 2 +
// log1p(exp(-|a - b|)), summed by a term of family target; with priors.
Program mixture_program(long N, std::mt19937& rng) {
  Program p;
  const int mu1 = p.add(param_node(1, 0)), mu2 = p.add(param_node(1, 1));
  const int sigma = p.add(param_node(1, 2, Transform::lower, 0));
  const int w = p.add(param_node(1, 3, Transform::interval, 0, 1));
  p.n_free = 4;
  const int zero = p.add(data_node({0})), one = p.add(data_node({1})), half = p.add(data_node({0.5}));
  for (int v : {mu1, mu2}) add_term(p, density_node(Family::normal, {v, zero, one}));
  add_term(p, density_node(Family::normal, {sigma, zero, one}, 0, inf));
  std::normal_distribution<double> norm;
  std::vector<double> y(N);
  for (long i = 0; i < N; ++i) y[i] = (i % 3 == 0 ? 2.0 : -1.0) + norm(rng);
  const int yd = p.add(data_node(y));
  auto logpdf = [&](int mu) {
    Node n;
    n.op = Op::logpdf;
    n.dim = p.nodes[yd].dim;
    n.size = p.nodes[yd].size;
    n.inputs = {yd, mu, sigma};
    n.family = Family::normal;
    return p.add(n);
  };
  const int lw = p.add(unary_node(Op::log, w, p));
  const int lw1 = p.add(unary_node(Op::log1p, p.add(unary_node(Op::neg, w, p)), p));
  const int a = p.add(binary_node(Op::add, logpdf(mu1), lw, p));
  const int b = p.add(binary_node(Op::add, logpdf(mu2), lw1, p));
  const int gap = p.add(unary_node(Op::abs, p.add(binary_node(Op::sub, a, b, p)), p));
  const int top = p.add(binary_node(
      Op::mul, p.add(binary_node(Op::add, p.add(binary_node(Op::add, a, b, p)), gap, p)), half, p));
  const int tail = p.add(unary_node(
      Op::log1p, p.add(unary_node(Op::exp, p.add(unary_node(Op::neg, gap, p)), p)), p));
  add_term(p, density_node(Family::target, {p.add(binary_node(Op::add, top, tail, p))}));
  return p;
}

}  // namespace

TEST_CASE("a mixture's per-element log densities (logpdf) are tiled and sharded with its rows",
          "[shards][stages][logpdf]") {
  std::mt19937 rng(47);
  for (long N : {3L, 29L, 200L}) {
    Program p = mixture_program(N, rng);
    lockstep::plan(p);
    REQUIRE(p.extents == std::vector<long>{N});
    for (const Node& n : p.nodes)
      if (n.op == Op::logpdf) CHECK(n.extent == 0);
    CHECK(p.nodes[p.terms.back()].extent == 0);  // the mixture's term
    for (long chains : {1L, 3L}) {
      INFO("N " << N << ", chains " << chains);
      const std::vector<double> state = uniform_vector(rng, chains * p.n_free, -0.7, 0.7);
      ExecOptions plain;
      plain.observation_stage = false;
      const Result whole = run(p, chains, state, plain);
      for (int threads : {1, 2})
        for (long tile : {0L, 4L}) {
          ExecOptions o;
          o.threads = threads;
          o.tile_rows = tile;
          o.devices = 2;
          check_same(run(p, chains, state, o), whole);
        }
      ExecOptions em;
      em.backend = Backend::emulated;
      em.tile_rows = 5;
      check_same(run(p, chains, state, em), whole);
      Result no_terms = whole;
      no_terms.terms.clear();
      for (int shards : {2, 3})
        for (const ExecOptions& o : shard_backends())
          check_same(run_sharded(p, chains, state, o, shards), no_terms);
    }
    check_gradient(p, 2, uniform_vector(rng, 2 * p.n_free, -0.7, 0.7), 1e-6, 1e-7);
    // across processes each rank holds its own rows: a mixture the planner
    // could not tile (here: planned without the observation stage) would be
    // counted on each rank's rows alone, and is refused
    CHECK_NOTHROW(lockstep::rank_program(p, 1));
    Program global = mixture_program(N, rng);
    lockstep::PlanOptions no_stage;
    no_stage.observation_stage = false;
    lockstep::plan(global, no_stage);
    CHECK_THROWS_AS(lockstep::rank_program(global, 1), std::invalid_argument);
    CHECK_THROWS_AS(lockstep::check_rows_split(global), std::invalid_argument);
  }
}
