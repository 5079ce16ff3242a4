// A rank's slice of a program by groups (group_slice.hpp): over ranks that
// own every group once, the slices' log densities add up to the whole
// program's, the gradients' global coordinates too, and each local
// coordinate's gradient is its owner's. On the seed model (fused and not, in
// R's order), a hierarchical prior with a constrained local parameter, for 1,
// 2 and 3 ranks and several chain counts; and the errors.
#include <catch2/catch.hpp>

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "helpers.hpp"
#include "lockstep/executor.hpp"
#include "lockstep/group_slice.hpp"
#include "lockstep/owned_shard.hpp"
#include "lockstep/ownership.hpp"
#include "lockstep/sampler/chain_vectors.hpp"
#include "lockstep/planner.hpp"
#include "lockstep/shards.hpp"
#include "models.hpp"

using namespace lstest;
using lockstep::GroupSlice;
using lockstep::Grouping;

namespace {

// The rank programs of planned `p` (rows sorted by the grouping) over
// `ranks` ranks, each owning a balanced range of groups.
std::vector<GroupSlice> slices(const Program& p, int ranks) {
  const std::vector<Grouping> found = lockstep::find_groupings(p);
  REQUIRE(found.size() == 1);
  const Grouping& whole = found[0];
  REQUIRE(p.extents.size() == 1);
  const std::vector<long> bounds =
      lockstep::balanced_group_bounds(whole.group_of_row, whole.groups, ranks);
  std::vector<GroupSlice> out;
  for (int r = 0; r < ranks; ++r) {
    // the rows of the rank's groups (contiguous: rows are sorted by group)
    const auto& g = whole.group_of_row;
    const long first = std::lower_bound(g.begin(), g.end(), bounds[r]) - g.begin();
    const long last = std::lower_bound(g.begin(), g.end(), bounds[r + 1]) - g.begin();
    const Program rows = lockstep::rows_program(p, {{first, last}});
    const std::vector<Grouping> mine = lockstep::find_groupings(rows);
    // (a rank with no rows has no grouping: its slice owns no groups)
    Grouping grouping = mine.empty() ? whole : mine[0];
    if (mine.empty()) grouping.group_of_row.clear();
    out.push_back(lockstep::slice_groups(rows, grouping, bounds[r], bounds[r + 1], r == 0));
  }
  return out;
}

// The slices' log densities and gradients, assembled, against the whole
// program's at random states.
void check_assembled(const Program& p, int ranks, long chains, std::mt19937& rng) {
  INFO("ranks " << ranks << " chains " << chains);
  const std::vector<GroupSlice> parts = slices(p, ranks);
  const std::vector<double> state = random_state(rng, chains, p.n_free);
  const Result whole = run(p, chains, state, lockstep::ExecOptions{});
  std::vector<double> lp(chains, 0.0), grad(chains * p.n_free, 0.0);
  std::vector<int> owners(p.n_free, 0);
  for (const GroupSlice& s : parts) {
    const long D = s.program.n_free;
    REQUIRE(static_cast<long>(s.full_index.size()) == D);
    CHECK(s.n_global == parts[0].n_global);
    const std::vector<double> mine = s.of_whole(state.data(), chains, p.n_free);
    const Result r = run(s.program, chains, mine, lockstep::ExecOptions{});
    for (long c = 0; c < chains; ++c) {
      lp[c] += r.lp[c];
      for (long j = 0; j < D; ++j) grad[c * p.n_free + s.full_index[j]] += r.grad[c * D + j];
    }
    for (long j = s.n_global; j < D; ++j) ++owners[s.full_index[j]];
    for (long j = 0; j < s.n_global; ++j) CHECK(s.full_index[j] == parts[0].full_index[j]);
  }
  // every local coordinate has one owner, and no global coordinate is local
  for (long j = 0; j < parts[0].n_global; ++j) owners[parts[0].full_index[j]] += 1;
  for (long k = 0; k < p.n_free; ++k) CHECK(owners[k] == 1);
  for (long c = 0; c < chains; ++c) CHECK(lp[c] == Approx(whole.lp[c]).epsilon(1e-11));
  for (long k = 0; k < chains * p.n_free; ++k)
    CHECK(grad[k] == Approx(whole.grad[k]).epsilon(1e-10).margin(1e-11));
}

}  // namespace

TEST_CASE("group slices: the seed model's ranks add up to the whole program",
          "[group_slice][ownership][shards]") {
  std::mt19937 rng(81);
  const long N = 240, G = 17, K = 3;
  const std::vector<long> g = random_groups(rng, N, G, true);
  for (bool fuse : {true, false})
    for (bool as_r_lowers : {false, true}) {
      INFO("fuse " << fuse << " in R's order " << as_r_lowers);
      std::mt19937 data_rng(82);
      Seed s = seed_model(N, G, K, data_rng, g, false, as_r_lowers);
      lockstep::plan(s.p, lockstep::PlanOptions{true, fuse});
      for (int ranks : {1, 2, 3})
        for (long chains : {1L, 4L}) check_assembled(s.p, ranks, chains, rng);
      // what each rank holds: the 2K + 2 globals and its groups' K + 1 values each
      const std::vector<GroupSlice> two = slices(s.p, 2);
      for (const GroupSlice& part : two) {
        CHECK(part.n_global == 2 * K + 2);
        CHECK(part.program.n_free == 2 * K + 2 + (part.end_group - part.first_group) * (K + 1));
      }
      CHECK(two[0].end_group == two[1].first_group);
      CHECK(two[1].end_group == G);
    }
}

TEST_CASE("group slices: a hierarchical prior, a constrained local parameter and group-level "
          "data",
          "[group_slice][ownership][shards]") {
  // product_a ~ normal(category_a[category_of_product], s);
  // product_sd ~ lognormal(0, 1) (a positive local, with its Jacobian);
  // y ~ normal(product_a[product] * w[product], product_sd[product]) where
  // w is group-level data read beside product_a
  std::mt19937 rng(83);
  const long N = 120, P = 11, Cats = 3;
  const std::vector<long> product = random_groups(rng, N, P, true);
  std::uniform_int_distribution<long> cat(0, Cats - 1);
  std::vector<long> category(P);
  for (long& v : category) v = cat(rng);
  Program p;
  const int category_a = p.add(param_node(Cats, 0));
  const int product_a = p.add(param_node(P, Cats));
  const int s = p.add(param_node(1, Cats + P, lockstep::Transform::lower));
  const int product_sd = p.add(param_node(P, Cats + P + 1, lockstep::Transform::lower));
  p.n_free = Cats + 2 * P + 1;
  const int zero = p.add(data_node({0}));
  const int one = p.add(data_node({1}));
  add_term(p, density_node(Family::normal, {category_a, zero, one}));
  add_term(p, density_node(Family::normal, {s, zero, one}, 0, inf));
  add_term(p, density_node(Family::lognormal, {product_sd, zero, one}));
  const int mean = p.add(gather_node(category_a, category));
  add_term(p, density_node(Family::normal, {product_a, mean, s}));
  std::vector<double> w(P);
  for (double& v : w) v = 0.5 + std::uniform_real_distribution<double>()(rng);
  const int weighted = p.add(binary_node(Op::mul, product_a, p.add(data_node(w)), p));
  const int pg = p.add(gather_node(weighted, product));
  const int sg = p.add(gather_node(product_sd, product));
  std::vector<double> y(N);
  for (double& v : y) v = std::normal_distribution<double>()(rng);
  add_term(p, density_node(Family::normal, {p.add(data_node(y)), pg, sg}));
  lockstep::plan(p);
  const std::vector<Grouping> found = lockstep::find_groupings(p);
  REQUIRE(found.size() == 1);
  CHECK(found[0].locals == std::vector<int>{product_a, product_sd});
  CHECK(lockstep::why_not_sliceable(p, found[0]).empty());
  for (int ranks : {1, 2, 3})
    for (long chains : {1L, 3L}) check_assembled(p, ranks, chains, rng);
}

TEST_CASE("group slices: which values depend on the local parameters",
          "[group_slice][ownership]") {
  std::mt19937 rng(87);
  const long N = 60, G = 6, K = 2;
  Seed s = seed_model(N, G, K, rng, random_groups(rng, N, G, true));
  lockstep::plan(s.p);
  const std::vector<int> locals = lockstep::find_groupings(s.p).at(0).locals;
  CHECK(lockstep::depends_on_any(s.p, {s.alpha_g}, locals));      // z_a * sigma_a
  CHECK(lockstep::depends_on_any(s.p, {s.sigma_g, s.alpha_g}, locals));
  CHECK_FALSE(lockstep::depends_on_any(s.p, {s.beta, s.sigma_g}, locals));
  CHECK_FALSE(lockstep::depends_on_any(s.p, {}, locals));
  CHECK(lockstep::depends_on_any(s.p, {s.lik}, locals));          // the likelihood reads them
}

TEST_CASE("group slices: a rank whose rows reach outside its groups is refused, and bounds are "
          "balanced by rows",
          "[group_slice][ownership][shards]") {
  std::mt19937 rng(84);
  const long N = 100, G = 10, K = 2;
  const std::vector<long> g = random_groups(rng, N, G, true);
  Seed s = seed_model(N, G, K, rng, g);
  lockstep::plan(s.p);
  const Grouping grouping = lockstep::find_groupings(s.p).at(0);
  // the whole rows, but owning groups 1..5 only
  CHECK_THROWS_WITH(lockstep::slice_groups(s.p, grouping, 0, 5, true),
                    Catch::Contains("must all be on one rank"));
  CHECK_THROWS_AS(lockstep::slice_groups(s.p, grouping, 3, 2, true), std::invalid_argument);
  CHECK_THROWS_AS(lockstep::slice_groups(s.p, grouping, 0, G + 1, true), std::invalid_argument);
  // bounds: contiguous, covering, each shard near N / S rows
  const std::vector<long> counts = {50, 1, 1, 1, 1, 30, 10, 2, 2, 2};  // rows per group
  std::vector<long> rows_of;
  for (long k = 0; k < 10; ++k) rows_of.insert(rows_of.end(), counts[k], k);
  CHECK(lockstep::balanced_group_bounds(rows_of, 10, 1) == std::vector<long>{0, 10});
  CHECK(lockstep::balanced_group_bounds(rows_of, 10, 2) == std::vector<long>{0, 1, 10});
  CHECK(lockstep::balanced_group_bounds(rows_of, 10, 3) == std::vector<long>{0, 1, 5, 10});
  // more shards than groups: some own none
  const std::vector<long> b = lockstep::balanced_group_bounds({0, 0, 1}, 2, 4);
  CHECK(b.front() == 0);
  CHECK(b.back() == 2);
  CHECK(std::is_sorted(b.begin(), b.end()));
  CHECK_THROWS_AS(lockstep::balanced_group_bounds({0, 3}, 2, 2), std::invalid_argument);
}

TEST_CASE("owned shards: ranks' momenta are one process's, and their per-chain sums add up to "
          "one process's",
          "[group_slice][owned_shard][chain_vectors]") {
  using lockstep::ChainMask;
  using lockstep::DotKind;
  using lockstep::DotSpec;
  using lockstep::Executor;
  using lockstep::HostChainVectors;
  std::mt19937 rng(85);
  const long N = 200, G = 13, K = 2;
  const std::vector<long> g = random_groups(rng, N, G, true);
  Seed s = seed_model(N, G, K, rng, g);
  lockstep::plan(s.p);
  const long D = s.p.n_free;
  for (int ranks : {1, 2, 3})
    for (long chains : {1L, 4L}) {
      INFO("ranks " << ranks << " chains " << chains);
      const std::vector<GroupSlice> parts = slices(s.p, ranks);
      Executor<double> whole(s.p, chains, lockstep::ExecOptions{});
      HostChainVectors full(whole, lockstep::Launcher{}, nullptr);
      std::vector<lockstep::Stream> streams;
      for (long c = 0; c < chains; ++c)
        streams.push_back(lockstep::Stream{7u, 11u, static_cast<uint32_t>(c), 0u,
                                           static_cast<uint64_t>(3 * c)});
      const std::vector<double> sd = uniform_vector(rng, chains * D, 0.5, 2.0);
      const std::vector<double> a = uniform_vector(rng, chains * D, -1, 1);
      const std::vector<double> b = uniform_vector(rng, chains * D, -1, 1);
      const std::vector<double> m = uniform_vector(rng, chains * D, 0.5, 2.0);
      std::vector<double> p_full(chains * D);
      std::vector<lockstep::Stream> after_full = streams;
      full.momentum(p_full.data(), sd.data(), after_full, 5u);
      const DotSpec specs_full[] = {{a.data(), b.data(), nullptr, DotKind::product},
                                    {a.data(), sd.data(), nullptr, DotKind::square}};
      ChainMask on = ChainMask::all(chains);
      std::vector<double> dots_full(chains * 2);
      full.dots(specs_full, 2, m.data(), on, dots_full.data());
      std::vector<double> dots_sum(chains * 2, 0.0);
      for (size_t r = 0; r < parts.size(); ++r) {
        const GroupSlice& part = parts[r];
        const long Dr = part.program.n_free;
        Executor<double> local(part.program, chains, lockstep::ExecOptions{});
        HostChainVectors v(local, lockstep::Launcher{}, nullptr);
        v.count_from(r == 0 ? 0 : part.n_global);
        v.map_coordinates(part.full_index, D);
        auto mine = [&](const std::vector<double>& x) { return part.of_whole(x.data(), chains, D); };
        const std::vector<double> sd_r = mine(sd), a_r = mine(a), b_r = mine(b), m_r = mine(m);
        std::vector<double> p_r(chains * Dr);
        std::vector<lockstep::Stream> after = streams;
        v.momentum(p_r.data(), sd_r.data(), after, 5u);
        for (long c = 0; c < chains; ++c) {
          CHECK(after[c].position == after_full[c].position);
          for (long j = 0; j < Dr; ++j) CHECK(p_r[c * Dr + j] == p_full[c * D + part.full_index[j]]);
        }
        const DotSpec specs[] = {{a_r.data(), b_r.data(), nullptr, DotKind::product},
                                 {a_r.data(), sd_r.data(), nullptr, DotKind::square}};
        std::vector<double> out(chains * 2);
        v.dots(specs, 2, m_r.data(), on, out.data());
        for (long k = 0; k < chains * 2; ++k) dots_sum[k] += out[k];
      }
      for (long k = 0; k < chains * 2; ++k) CHECK(dots_sum[k] == Approx(dots_full[k]).epsilon(1e-12));
    }
}

TEST_CASE("owned shards: one rank's target sends the log density and the globals' gradient only",
          "[group_slice][owned_shard]") {
  std::mt19937 rng(86);
  const long N = 150, G = 12, K = 2, C = 3;
  Seed s = seed_model(N, G, K, rng, random_groups(rng, N, G, true));
  lockstep::plan(s.p);
  const std::vector<GroupSlice> one = slices(s.p, 1);
  lockstep::InProcessCommunicator world(1);
  lockstep::OwnedShardTarget target(
      std::make_unique<lockstep::Executor<double>>(one[0].program, C, lockstep::ExecOptions{}),
      one[0], s.p.n_free, &world);
  CHECK(target.n_global() == 2 * K + 2);
  const long D = target.dim();
  const std::vector<double> state = random_state(rng, C, D);
  std::vector<double> lp(C), grad(C * D);
  target.log_density(state.data(), lp.data(), grad.data());
  CHECK(world.stats().calls == 1);
  CHECK(world.stats().bytes == C * (1 + target.n_global()) * static_cast<long>(sizeof(double)));
  const Result direct = run(one[0].program, C, state, lockstep::ExecOptions{});
  for (long c = 0; c < C; ++c) CHECK(lp[c] == direct.lp[c]);
  for (long k = 0; k < C * D; ++k) CHECK(grad[k] == direct.grad[k]);
  // its vectors count every coordinate on rank 0 and draw by the whole state's index
  std::unique_ptr<lockstep::ChainVectors> v = target.vectors();
  CHECK(v->dim() == D);
}
