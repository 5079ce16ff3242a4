// The first density to write an adjoint stores its partials there, and the
// executor does not zero what it stores (Executor::find_first_writers(),
// DensityTerm::dx_store). Checked against the same executor with
// first_writers off, with the gradient filled with NaN before each call, so
// that a value neither zeroed nor stored would show.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

#include "helpers.hpp"
#include "lockstep/kernels/density.hpp"
#include "lockstep/observation_stage.hpp"
#include "lockstep/planner.hpp"

using namespace lockstep;
using namespace lstest;

namespace {

struct Model {
  Program p;
  int z = -1, w = -1, sd = -1;
  int prior_z = -1, second_z = -1, prior_w = -1, prior_u = -1, twice_q = -1, prior_e = -1,
      lik = -1;
};

// z (G), w (5), u (4), q (3), mu, sd > 0: a prior on z, the lean loop's
// store; a second density on z, which must add; w's prior with parameters
// that have adjoints (the chunked loop's general path); a truncated prior on
// u (the element loop, zeroed first); q both target and location of its
// density (not a first writer); a prior on exp(w), a computed value with
// an adjoint buffer; and, with rows, a likelihood of data y whose mean is
// z[g] (an observation stage that adds to z's adjoint).
Model model(long G, long rows, std::mt19937& rng) {
  Model m;
  Program& p = m.p;
  long off = 0;
  auto par = [&](long size, Transform t = Transform::none) {
    const int id = p.add(param_node(size, off, t, 0, 0));
    off += size;
    return id;
  };
  const int z = par(G), w = par(5), u = par(4), q = par(3), mu = par(1),
            sd = par(1, Transform::lower);
  p.n_free = off;
  m.z = z;
  m.w = w;
  m.sd = sd;
  const int zero = p.add(data_node({0})), one = p.add(data_node({1}));
  m.prior_z = add_term(p, density_node(Family::normal, {z, zero, one}));
  m.second_z = add_term(p, density_node(Family::normal, {z, mu, one}));
  m.prior_w = add_term(p, density_node(Family::normal, {w, mu, sd}));
  m.prior_u = add_term(p, density_node(Family::normal, {u, zero, one}, -3, inf));
  m.twice_q = add_term(p, density_node(Family::normal, {q, q, one}));
  const int e = p.add(unary_node(Op::exp, w, p));
  m.prior_e = add_term(p, density_node(Family::normal, {e, mu, one}));
  if (rows > 0) {
    std::uniform_int_distribution<long> group(0, G - 1);
    std::normal_distribution<double> norm;
    std::vector<long> g(rows);
    std::vector<double> y(rows);
    for (long r = 0; r < rows; ++r) {
      g[r] = group(rng);
      y[r] = norm(rng);
    }
    const int zg = p.add(gather_node(z, g));
    m.lik = add_term(p, density_node(Family::normal, {p.add(data_node(y)), zg, sd}));
  }
  lockstep::plan(p);
  return m;
}

template <class T>
std::vector<double> gradient(const Program& p, long chains, const std::vector<double>& state,
                             ExecOptions o, double fill, std::vector<double>* lp = nullptr) {
  Executor<T> ex(p, chains, o);
  std::vector<double> l(chains), grad(chains * p.n_free, fill);
  ex.log_density(state.data(), l.data(), grad.data());
  if (lp) *lp = l;
  return grad;
}

template <class T>
void check_against_adding(const Program& p, long chains, const std::vector<double>& state,
                          ExecOptions o) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> lp_store, lp_add;
  o.first_writers = true;
  const std::vector<double> stored = gradient<T>(p, chains, state, o, nan, &lp_store);
  o.first_writers = false;
  const std::vector<double> added = gradient<T>(p, chains, state, o, 0.0, &lp_add);
  CHECK(lp_store == lp_add);
  long differ = 0;
  for (size_t k = 0; k < added.size(); ++k) differ += !(stored[k] == added[k]);
  CHECK(differ == 0);
}

}  // namespace

TEST_CASE("first writers: which densities store their target's adjoint", "[executor][first]") {
  std::mt19937 rng(3);
  const Model m = model(6, 0, rng);
  for (bool alias : {false, true}) {
    ExecOptions o;
    o.alias_parameters = alias;
    Executor<double> ex(m.p, 2, o);
    CHECK(ex.first_writer(m.prior_z));
    CHECK_FALSE(ex.first_writer(m.second_z));  // z's adjoint has its first writer
    CHECK(ex.first_writer(m.prior_w));
    CHECK(ex.first_writer(m.prior_u));
    CHECK_FALSE(ex.first_writer(m.twice_q));  // q is also its location
    CHECK(ex.first_writer(m.prior_e));
    // an unconstrained parameter stores its slice of the gradient unless it
    // is aliased (then its adjoint is that slice); a constrained one's
    // Jacobian adds there too
    CHECK(ex.first_writer(m.z) == !alias);
    CHECK(ex.first_writer(m.w) == !alias);
    CHECK_FALSE(ex.first_writer(m.sd));
    o.first_writers = false;
    Executor<double> off(m.p, 2, o);
    CHECK_FALSE(off.first_writer(m.prior_z));
    CHECK_FALSE(off.first_writer(m.z));
  }
  Executor<float> single(m.p, 2, ExecOptions{});
  CHECK(single.first_writer(m.z));
  CHECK(single.first_writer(m.prior_z));
  // the lanes path adds element by element: no first writers there
  ExecOptions em;
  em.backend = Backend::emulated;
  CHECK_FALSE(Executor<double>(m.p, 2, em).first_writer(m.prior_z));
}

TEST_CASE("first writers: the gradient equals the one added to zeros, whatever the buffer held",
          "[executor][first]") {
  std::mt19937 rng(5);
  for (long rows : {0L, 53L}) {
    const Model m = model(17, rows, rng);
    for (long chains : {1L, 4L, 5L}) {
      const std::vector<double> state = uniform_vector(rng, chains * m.p.n_free, -0.8, 0.8);
      for (int threads : {1, 2})
        for (int devices : {1, 3})
          for (bool alias : {false, true}) {
            INFO("rows " << rows << " chains " << chains << " threads " << threads << " devices "
                         << devices << " alias " << alias);
            ExecOptions o;
            o.threads = threads;
            o.devices = devices;
            o.alias_parameters = alias;
            check_against_adding<double>(m.p, chains, state, o);
            check_against_adding<float>(m.p, chains, state, o);
            o.observation_stage = false;
            check_against_adding<double>(m.p, chains, state, o);
          }
    }
  }
}

TEST_CASE("first writers: a target too large for the caches is stored past them",
          "[executor][first]") {
  // a chain's prior on z stores more than detail::stream_bytes
  std::mt19937 rng(7);
  const long G = detail::stream_bytes / static_cast<long>(sizeof(double)) + 37;
  const Model m = model(G, 0, rng);
  const std::vector<double> state = uniform_vector(rng, 2 * m.p.n_free, -0.8, 0.8);
  for (bool alias : {false, true}) {
    ExecOptions o;
    o.alias_parameters = alias;
    o.threads = 2;
    check_against_adding<double>(m.p, 2, state, o);
  }
}

TEST_CASE("first writers: parameters whose slices overlap add", "[executor][first]") {
  // two parameters over the same slice of the state: each adds its adjoint
  // to the gradient, so neither may store
  Program p;
  const int a = p.add(param_node(4, 0)), b = p.add(param_node(4, 0)), c = p.add(param_node(2, 4));
  p.n_free = 6;
  const int zero = p.add(data_node({0})), one = p.add(data_node({1}));
  add_term(p, density_node(Family::normal, {a, zero, one}));
  add_term(p, density_node(Family::normal, {b, one, one}));
  add_term(p, density_node(Family::normal, {c, zero, one}));
  lockstep::plan(p);
  Executor<double> ex(p, 3, ExecOptions{});
  CHECK_FALSE(ex.first_writer(a));
  CHECK_FALSE(ex.first_writer(b));
  CHECK(ex.first_writer(c));
  std::mt19937 rng(11);
  const std::vector<double> state = uniform_vector(rng, 3 * p.n_free, -1, 1);
  check_against_adding<double>(p, 3, state, ExecOptions{});
  check_against_adding<float>(p, 3, state, ExecOptions{});
  // the gradient of both: -x from a's prior, 1 - x from b's
  const std::vector<double> grad = gradient<double>(p, 3, state, ExecOptions{}, 0.0);
  for (long k = 0; k < 3; ++k)
    for (long i = 0; i < 4; ++i)
      CHECK(close(grad[k * 6 + i], 1 - 2 * state[k * 6 + i], 1e-14, 1e-14));
}

TEST_CASE("first writers: slices that contain, cross or touch one another", "[executor][first]") {
  // [0, 5) contains [3, 4); [5, 7) touches both neighbours without overlap;
  // [7, 9) and [8, 10) cross; [10, 12) touches [8, 10); listed out of order
  Program p;
  const std::vector<std::pair<long, long>> at = {{8, 2}, {0, 5}, {10, 2}, {5, 2}, {3, 1}, {7, 2}};
  std::vector<int> ids;
  for (const auto& s : at) ids.push_back(p.add(param_node(s.second, s.first)));
  p.n_free = 12;
  const int zero = p.add(data_node({0})), one = p.add(data_node({1}));
  for (int id : ids) add_term(p, density_node(Family::normal, {id, zero, one}));
  lockstep::plan(p);
  Executor<double> ex(p, 2, ExecOptions{});
  const std::vector<bool> alone = {false, false, true, true, false, false};
  for (size_t k = 0; k < ids.size(); ++k) {
    INFO("slice at " << at[k].first << ", size " << at[k].second);
    CHECK(ex.first_writer(ids[k]) == alone[k]);
  }
  std::mt19937 rng(13);
  const std::vector<double> state = uniform_vector(rng, 2 * p.n_free, -1, 1);
  check_against_adding<double>(p, 2, state, ExecOptions{});
  check_against_adding<float>(p, 2, state, ExecOptions{});
}

namespace {

// Rows of data y, x and groups g (G groups), parameters a (G), b, sd > 0:
//   ax = a[g] * x       (read once: its adjoint stored by the sum below)
//   eta = ax + b        (b one value: stored by exp)
//   mu = exp(eta)       (stored by the likelihood, its first parameter)
//   y ~ normal(mu, sd)
//   v = a[g] + x        (stored by its density, whose target it is)
//   v ~ normal(0, 1)
//   w = a[g] * a[g]     (one gather read twice: zeroed, added to)
//   sq = w * w          (w read twice by one op: not stored)
//   sq ~ normal(1, 2)   (sq stored by its density, the target)
//   j = a[g] + b; log_jacobian(j)   (a Jacobian's target: zeroed, added to)
struct Tiled {
  Program p;
  int ax = -1, eta = -1, mu = -1, v = -1, w = -1, sq = -1, ag = -1, ag2 = -1, j = -1;
};

Tiled tiled_model(long G, long rows, std::mt19937& rng) {
  Tiled m;
  Program& p = m.p;
  const int a = p.add(param_node(G, 0)), b = p.add(param_node(1, G)),
            sd = p.add(param_node(1, G + 1, Transform::lower, 0, 0));
  p.n_free = G + 2;
  std::uniform_int_distribution<long> group(0, G - 1);
  std::normal_distribution<double> norm;
  std::vector<long> g(rows);
  std::vector<double> x(rows), y(rows);
  for (long r = 0; r < rows; ++r) {
    g[r] = group(rng);
    x[r] = norm(rng);
    y[r] = norm(rng) + 1;
  }
  const int xd = p.add(data_node(x)), yd = p.add(data_node(y));
  m.ag = p.add(gather_node(a, g));
  m.ax = p.add(binary_node(Op::mul, m.ag, xd, p));
  m.eta = p.add(binary_node(Op::add, m.ax, b, p));
  m.mu = p.add(unary_node(Op::exp, m.eta, p));
  add_term(p, density_node(Family::normal, {yd, m.mu, sd}));
  m.ag2 = p.add(gather_node(a, g));
  m.v = p.add(binary_node(Op::add, m.ag2, xd, p));
  const int zero = p.add(data_node({0})), one = p.add(data_node({1})), two = p.add(data_node({2}));
  add_term(p, density_node(Family::normal, {m.v, zero, one}));
  const int ag3 = p.add(gather_node(a, g));
  m.w = p.add(binary_node(Op::mul, ag3, ag3, p));
  m.sq = p.add(binary_node(Op::mul, m.w, m.w, p));
  add_term(p, density_node(Family::normal, {m.sq, one, two}));
  const int ag4 = p.add(gather_node(a, g));
  m.j = p.add(binary_node(Op::add, ag4, b, p));
  add_term(p, density_node(Family::log_jacobian, {m.j}));
  lockstep::plan(p);
  return m;
}

}  // namespace

TEST_CASE("first writers in the observation stage: a tile adjoint one later op alone writes is "
          "stored, not zeroed, and the gradient equals the one added to zeros",
          "[stages][first]") {
  std::mt19937 rng(11);
  const Tiled m = tiled_model(9, 61, rng);
  for (int id : {m.ax, m.eta, m.mu, m.v, m.w, m.sq, m.j}) REQUIRE(m.p.nodes[id].extent == 0);
  const std::vector<std::vector<double>> values(m.p.nodes.size());
  StageOptions so;
  so.tile_rows = 7;
  ObservationStage<double> stage(m.p, 0, 3, so, values);
  CHECK(stage.stored(m.ax));   // by eta = ax + b (b one value)
  CHECK(stage.stored(m.eta));  // by exp
  CHECK(stage.stored(m.mu));   // by the likelihood, its first parameter
  CHECK(stage.stored(m.v));    // by its density, as the target
  CHECK(stage.stored(m.ag));   // by ax = a[g] * x
  CHECK_FALSE(stage.stored(m.w));  // read twice by sq = w * w
  CHECK(stage.stored(m.sq));       // by its density, as the target
  CHECK_FALSE(stage.stored(m.j));  // a Jacobian's target
  so.first_writers = false;
  ObservationStage<double> off(m.p, 0, 3, so, values);
  CHECK_FALSE(off.stored(m.ax));
  CHECK_FALSE(off.stored(m.mu));

  for (long chains : {1L, 3L, 4L}) {
    const std::vector<double> state = uniform_vector(rng, chains * m.p.n_free, -0.7, 0.7);
    for (long tile : {0L, 5L, 16L})
      for (int threads : {1, 2})
        for (int devices : {1, 2}) {
          INFO("chains " << chains << " tile " << tile << " threads " << threads << " devices "
                         << devices);
          ExecOptions o;
          o.tile_rows = tile;
          o.threads = threads;
          o.devices = devices;
          check_against_adding<double>(m.p, chains, state, o);
          check_against_adding<float>(m.p, chains, state, o);
          // and against the plain executor, which adds every partial to zeros
          ExecOptions plain;
          plain.observation_stage = false;
          std::vector<double> lp, lp_plain;
          const std::vector<double> g = gradient<double>(m.p, chains, state, o, 0.0, &lp);
          const std::vector<double> g_plain = gradient<double>(m.p, chains, state, plain, 0.0, &lp_plain);
          for (long c = 0; c < chains; ++c) CHECK(close(lp[c], lp_plain[c], 1e-12, 1e-12));
          for (size_t k = 0; k < g.size(); ++k) CHECK(close(g[k], g_plain[k], 1e-11, 1e-11));
        }
    // the finite differences of the stage that stores
    check_gradient(m.p, chains, state, 1e-6, 1e-7);
  }
}
