// Ownership (ownership.hpp): which parameters are local to a grouping of an
// extent's rows, on the seed model (fused and not, with a second reader of its
// slopes), a hierarchical prior, and uses that must keep a parameter global.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "helpers.hpp"
#include "lockstep/ownership.hpp"
#include "lockstep/planner.hpp"
#include "models.hpp"

using namespace lstest;
using lockstep::Grouping;

namespace {

// y ~ normal(x[index], 1) for a parameter x of G rows, plus x's prior.
struct Gathered {
  Program p;
  int x = -1;
};
Gathered gathered_model(long G, const std::vector<long>& index) {
  Gathered m;
  Program& p = m.p;
  m.x = p.add(param_node(G, 0));
  p.n_free = G;
  const int zero = p.add(data_node({0}));
  const int one = p.add(data_node({1}));
  add_term(p, density_node(Family::normal, {m.x, zero, one}));
  const int xg = p.add(gather_node(m.x, index));
  std::vector<double> y(index.size(), 0.5);
  add_term(p, density_node(Family::normal, {p.add(data_node(y)), xg, one}));
  return m;
}

}  // namespace

TEST_CASE("ownership: the seed model's group effects are local to its grouping, fused or not",
          "[ownership][planner]") {
  std::mt19937 rng(71);
  const long N = 60, G = 7, K = 3;
  const std::vector<long> g = random_groups(rng, N, G);
  for (bool fuse : {true, false})
    for (bool extra_reader : {false, true})
      for (bool as_r_lowers : {false, true}) {
        INFO("fuse " << fuse << ", a second reader of gamma " << extra_reader
                     << ", in R's order " << as_r_lowers);
        std::mt19937 data_rng(72);
        Seed s = seed_model(N, G, K, data_rng, g, extra_reader, as_r_lowers);
        lockstep::plan(s.p, lockstep::PlanOptions{true, fuse});
        const std::vector<Grouping> found = lockstep::find_groupings(s.p);
        REQUIRE(found.size() == 1);
        const Grouping& grouping = found[0];
        CHECK(grouping.extent == 0);
        CHECK(grouping.groups == G);
        CHECK(grouping.group_of_row == g);
        // z_a (the node alpha_g reads) and z_g: the group effects; a, beta,
        // sigma_a and sigma_g are global
        const int z_a = s.p.nodes[s.alpha_g].inputs[0];
        CHECK(grouping.locals == std::vector<int>{z_a, s.z_g});
      }
}

TEST_CASE("ownership: a hierarchical prior keeps the upper level global", "[ownership][planner]") {
  // product_a ~ normal(category_a[category_of_product], s); y ~ normal(product_a[product], 1)
  std::mt19937 rng(73);
  const long N = 50, P = 9, Cats = 3;
  const std::vector<long> product = random_groups(rng, N, P);
  const std::vector<long> category = random_groups(rng, P, Cats);
  Program p;
  const int category_a = p.add(param_node(Cats, 0));
  const int product_a = p.add(param_node(P, Cats));
  const int s = p.add(param_node(1, Cats + P, lockstep::Transform::lower));
  p.n_free = Cats + P + 1;
  const int zero = p.add(data_node({0}));
  const int one = p.add(data_node({1}));
  add_term(p, density_node(Family::normal, {category_a, zero, one}));
  add_term(p, density_node(Family::normal, {s, zero, one}));
  const int mean = p.add(gather_node(category_a, category));
  add_term(p, density_node(Family::normal, {product_a, mean, s}));
  const int pg = p.add(gather_node(product_a, product));
  std::vector<double> y(N, 0.2);
  add_term(p, density_node(Family::normal, {p.add(data_node(y)), pg, one}));
  lockstep::plan(p);
  const std::vector<Grouping> found = lockstep::find_groupings(p);
  REQUIRE(found.size() == 1);
  CHECK(found[0].locals == std::vector<int>{product_a});
  CHECK(found[0].group_of_row == product);
  CHECK(found[0].groups == P);
}

TEST_CASE("ownership: uses that mix a parameter's rows, or two groupings, keep it global",
          "[ownership][planner]") {
  std::mt19937 rng(74);
  const long N = 40, G = 5;
  const std::vector<long> g = random_groups(rng, N, G);
  {
    Gathered m = gathered_model(G, g);
    lockstep::plan(m.p);
    const auto found = lockstep::find_groupings(m.p);
    REQUIRE(found.size() == 1);
    CHECK(found[0].locals == std::vector<int>{m.x});
  }
  {  // its sum in a prior: the groups do not factorise
    Gathered m = gathered_model(G, g);
    const int total = m.p.add(sum_node(m.x));
    const int one = m.p.add(data_node({1}));
    add_term(m.p, density_node(Family::normal, {total, m.p.add(data_node({0})), one}));
    lockstep::plan(m.p);
    CHECK(lockstep::find_groupings(m.p).empty());
  }
  {  // a second likelihood gathers it by another index
    Gathered m = gathered_model(G, g);
    std::vector<long> other = g;
    std::reverse(other.begin(), other.end());
    const int xg = m.p.add(gather_node(m.x, other));
    const int one = m.p.add(data_node({1}));
    std::vector<double> y(N, 0.1);
    add_term(m.p, density_node(Family::normal, {m.p.add(data_node(y)), xg, one}));
    lockstep::plan(m.p);
    CHECK(lockstep::find_groupings(m.p).empty());
  }
  {  // a product of two of its rows' values with another parameter's (not a
     // scalar or a row vector): its rows meet another variable's
    Gathered m = gathered_model(G, g);
    const int w = m.p.add(param_node(G, G));
    m.p.n_free = 2 * G;
    const int one = m.p.add(data_node({1}));
    add_term(m.p, density_node(Family::normal, {w, m.p.add(data_node({0})), one}));
    const int xw = m.p.add(binary_node(Op::mul, m.x, w, m.p));
    const int xg = m.p.add(gather_node(xw, g));
    std::vector<double> y(N, 0.1);
    add_term(m.p, density_node(Family::normal, {m.p.add(data_node(y)), xg, one}));
    lockstep::plan(m.p);
    CHECK(lockstep::find_groupings(m.p).empty());
  }
  {  // no row gather: eight schools' theta, read whole by its likelihood
    Program p = eight_schools_shape();
    lockstep::plan(p);
    CHECK(lockstep::find_groupings(p).empty());
  }
}
