// Devices of one process that own their groups (device_shards.hpp): the plan
// gives every group one owner, the shards' log density and gradient are the
// whole program's, the samplers on them (NUTS, HMC, ChEES; warmup included)
// make one executor's draws to 1e-8 on the cpu and emulated backends (the
// emulated one runs the GPU's kernel bodies lane by lane), and what crosses
// between shards per gradient is the log densities and the globals' gradient,
// whatever the rows and groups.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <vector>

#include "helpers.hpp"
#include "lockstep/device_shards.hpp"
#include "lockstep/executor.hpp"
#include "lockstep/owned_shard.hpp"
#include "lockstep/planner.hpp"
#include "lockstep/sampler/chees.hpp"
#include "lockstep/sampler/hmc.hpp"
#include "lockstep/group_slice.hpp"
#include "lockstep/sampler/dense_metric.hpp"
#include "lockstep/sampler/nuts.hpp"
#include "lockstep/sampler/rwmh.hpp"
#include "lockstep/sampler/slice.hpp"
#include "models.hpp"
#include "sampler_helpers.hpp"

using namespace lstest;
using lockstep::Backend;
using lockstep::DeviceShardsTarget;
using lockstep::ExecOptions;
using lockstep::GroupSlice;

namespace {

// The seed model, N rows and G groups (rows sorted by group unless not
// `sorted`), K slopes.
Seed planned_seed(long N, long G, long K, uint32_t seed, bool sorted = true) {
  std::mt19937 rng(seed);
  const std::vector<long> g = random_groups(rng, N, G, sorted);
  Seed s = seed_model(N, G, K, rng, g);
  lockstep::plan(s.p);
  return s;
}

// `shards` executors of `backend` over plan_device_shards(p, shards).
std::unique_ptr<DeviceShardsTarget> device_shards(const Program& p, int shards, long chains,
                                                  Backend backend) {
  std::vector<GroupSlice> slices = lockstep::plan_device_shards(p, shards);
  REQUIRE(static_cast<int>(slices.size()) == shards);
  ExecOptions o;
  o.backend = backend;
  std::vector<std::unique_ptr<lockstep::Target>> targets;
  // (the executors keep pointers to the slices' programs, which the vector's
  // move leaves where they are)
  for (const GroupSlice& s : slices)
    targets.push_back(std::make_unique<lockstep::Executor<double>>(s.program, chains, o));
  return std::make_unique<DeviceShardsTarget>(std::move(slices), std::move(targets), p.n_free);
}

// A type passed as a value (to a generic lambda).
template <class T> struct tag {
  using type = T;
};

}  // namespace

TEST_CASE("device shards: the plan gives every group one owner, balanced by rows",
          "[device_shards][ownership]") {
  const long N = 900, G = 40, K = 3;
  const Seed s = planned_seed(N, G, K, 91);
  for (int shards : {2, 3, 5}) {
    INFO("shards " << shards);
    const std::vector<GroupSlice> slices = lockstep::plan_device_shards(s.p, shards);
    REQUIRE(static_cast<int>(slices.size()) == shards);
    std::vector<int> owners(s.p.n_free, 0);
    long rows = 0;
    for (size_t k = 0; k < slices.size(); ++k) {
      const GroupSlice& slice = slices[k];
      CHECK(slice.n_global == 2 * K + 2);
      CHECK(slice.first_group == (k == 0 ? 0 : slices[k - 1].end_group));
      for (long j = slice.n_global; j < static_cast<long>(slice.full_index.size()); ++j)
        ++owners[slice.full_index[j]];
      const long mine = slice.program.extents.at(0);
      rows += mine;
      // balanced: within a few groups' rows of an equal share
      CHECK(std::abs(mine - N / shards) < 4 * N / G);
    }
    CHECK(slices.back().end_group == G);
    CHECK(rows == N);
    for (long j = 0; j < slices[0].n_global; ++j) ++owners[slices[0].full_index[j]];
    for (long k = 0; k < s.p.n_free; ++k) CHECK(owners[k] == 1);
  }
  // nothing to own: one shard, more shards than groups, a model without groups
  CHECK(lockstep::plan_device_shards(s.p, 1).empty());
  CHECK(lockstep::plan_device_shards(planned_seed(60, 3, 2, 92).p, 4).empty());
  Program plain;
  const int mu = plain.add(param_node(1, 0));
  plain.n_free = 1;
  add_term(plain, density_node(lockstep::Family::normal,
                               {plain.add(data_node({0.1, 0.5, -0.3})), mu, plain.add(data_node({1}))}));
  lockstep::plan(plain);
  CHECK(lockstep::plan_device_shards(plain, 2).empty());
}

TEST_CASE("device shards: the log density and gradient are the whole program's, and a gradient "
          "sends the log densities and the globals' gradient alone",
          "[device_shards]") {
  std::mt19937 rng(93);
  for (long N : {400L, 1600L}) {
    const long G = N / 10, K = 3;
    // (the larger with its rows in the data's order, not sorted by group)
    const Seed s = planned_seed(N, G, K, 94, N < 1000);
    for (Backend backend : {Backend::cpu, Backend::emulated})
      for (int shards : {2, 3})
        for (long chains : {1L, 4L}) {
          INFO("N " << N << " backend " << static_cast<int>(backend) << " shards " << shards
                    << " chains " << chains);
          auto target = device_shards(s.p, shards, chains, backend);
          const long D = s.p.n_free;
          const std::vector<double> state = random_state(rng, chains, D);
          const Result whole = run(s.p, chains, state, ExecOptions{});
          std::vector<double> lp(chains), grad(chains * D);
          target->log_density(state.data(), lp.data(), grad.data());
          for (long c = 0; c < chains; ++c) CHECK(lp[c] == Approx(whole.lp[c]).epsilon(1e-11));
          CHECK(worst_relative_gap(grad, whole.grad) < 1e-11);
          // through the vectors: the same, shard by shard
          std::unique_ptr<lockstep::ChainVectors> v = target->vectors();
          double* x = v->make();
          double* g = v->make();
          v->upload(x, state.data());
          target->reset_counts();
          std::vector<double> lp_v(chains), grad_v(chains * D);
          v->log_density(x, lp_v.data(), g);
          v->download(grad_v.data(), g);
          for (long c = 0; c < chains; ++c) CHECK(lp_v[c] == Approx(whole.lp[c]).epsilon(1e-11));
          CHECK(worst_relative_gap(grad_v, whole.grad) < 1e-11);
          // (shards - 1) x chains x (1 + globals) doubles, whatever N and G
          CHECK(target->exchanged().calls == 1);
          CHECK(target->exchanged().bytes == (shards - 1) * chains * (1 + 2 * K + 2) * 8);
        }
  }
}

TEST_CASE("device shards: NUTS, HMC and ChEES (warmup included) make one executor's draws, up "
          "to the order of sums",
          "[device_shards][nuts][hmc][chees]") {
  using sampler_tests::sampler_trace;
  const Seed s = planned_seed(600, 30, 2, 95);
  const long D = s.p.n_free;
  std::mt19937 rng(96);
  for (Backend backend : {Backend::cpu, Backend::emulated})
    for (long chains : {1L, 3L}) {
      INFO("backend " << static_cast<int>(backend) << " chains " << chains);
      // The emulated backend's sums run in its lanes' order, which depends on
      // the extent: its shards' gradients differ from the whole's in the
      // 13th digit (the CPU's in the 16th), and warmup's adaptation amplifies
      // that some 1e4-fold over 20 iterations (measured: at most 4e-7).
      const double tolerance = backend == Backend::cpu ? 1e-8 : 2e-6;
      const std::vector<double> init = uniform_vector(rng, chains * D, -0.5, 0.5);
      ExecOptions o;
      o.backend = backend;
      lockstep::Executor<double> whole(s.p, chains, o);
      auto sharded = device_shards(s.p, 2, chains, backend);
      // a sampler's trace over the devices against one executor's
      auto same = [&](auto settings, auto sampler_tag, int warmup, uint32_t k0, uint32_t k1) {
        using Sampler = typename decltype(sampler_tag)::type;
        return worst_relative_gap(sampler_trace<Sampler>(*sharded, settings, init, warmup, k0, k1),
                                  sampler_trace<Sampler>(whole, settings, init, warmup, k0, k1));
      };
      lockstep::NutsSettings nuts;
      nuts.epsilon = 0.1;
      nuts.diag_sd = {1.0};
      CHECK(same(nuts, tag<lockstep::Nuts>(), 15, 3u, 4u) < tolerance);
      lockstep::HmcSettings hmc;
      hmc.epsilon = 0.05;
      hmc.diag_sd = {1.0};
      hmc.Lmin = hmc.Lmax = 8;
      CHECK(same(hmc, tag<lockstep::Hmc>(), 10, 5u, 6u) < tolerance);
      if (chains > 1) {  // (ChEES adapts from the chains' spread)
        lockstep::CheesSettings chees;
        chees.epsilon = 0.05;
        chees.diag_sd = {1.0};
        CHECK(same(chees, tag<lockstep::Chees>(), 10, 7u, 8u) < tolerance);
      }
      // rwmh() and slice() step the whole state on the host, the devices
      // evaluating their slices of it
      lockstep::RwmhSettings rwmh;
      rwmh.epsilon = 0.2;
      rwmh.diag_sd = {1.0};
      CHECK(same(rwmh, tag<lockstep::Rwmh>(), 20, 9u, 10u) < tolerance);
      lockstep::SliceSettings slice;
      slice.diag_sd = {1.0};
      CHECK(same(slice, tag<lockstep::Slice>(), 20, 11u, 12u) < tolerance);
      // a dense metric over the global coordinates, its state on the host
      const std::vector<long> globals = lockstep::global_coordinates(s.p);
      auto dense_trace = [&](lockstep::Target& model) {
        lockstep::DenseMetric metric(model, {}, globals);
        std::vector<double> y(init.size()), x(init.size()), out;
        metric.to_sampler(init.data(), y.data());
        lockstep::Nuts sampler(metric, nuts, y, 13u, 14u);
        sampler.use_dense_metric(metric);
        sampler.begin_warmup(20);
        for (int i = 0; i < 23; ++i) {
          sampler.iterate(i < 20);
          sampler.to_model(sampler.state().data(), x.data(), chains);
          out.insert(out.end(), x.begin(), x.end());
        }
        return out;
      };
      // (warmup's windows amplify the reassociated sums' last bits: see the
      // MPI test of a dense metric over ranks)
      CHECK(worst_relative_gap(dense_trace(*sharded), dense_trace(whole)) < 1e-4);
    }
}

TEST_CASE("owned shards: a rank's vectors sum the globals' gradient read from its vectors",
          "[device_shards][owned_shard]") {
  // OwnedShardVectors reads the global columns from its vectors (a GPU's
  // memory under gpu_only(mpi = TRUE)) and writes their sum back: on one rank,
  // the slice's own gradient
  std::mt19937 rng(97);
  const long C = 3, K = 2;
  const Seed s = planned_seed(150, 12, K, 98);
  const std::vector<GroupSlice> one = {
      lockstep::slice_groups(s.p, lockstep::find_groupings(s.p).at(0), 0, 12, true)};
  lockstep::InProcessCommunicator world(1);
  lockstep::OwnedShardTarget target(
      std::make_unique<lockstep::Executor<double>>(one[0].program, C, ExecOptions{}), one[0],
      s.p.n_free, &world);
  const long D = target.dim();
  const std::vector<double> state = random_state(rng, C, D);
  std::unique_ptr<lockstep::ChainVectors> v = target.vectors();
  double* x = v->make();
  double* g = v->make();
  v->upload(x, state.data());
  std::vector<double> lp(C), grad(C * D);
  v->log_density(x, lp.data(), g);
  v->download(grad.data(), g);
  CHECK(world.stats().calls == 1);
  CHECK(world.stats().bytes == C * (1 + 2 * K + 2) * static_cast<long>(sizeof(double)));
  const Result direct = run(one[0].program, C, state, ExecOptions{});
  for (long c = 0; c < C; ++c) CHECK(lp[c] == direct.lp[c]);
  CHECK(worst_relative_gap(grad, direct.grad) == 0);
  // read_columns and write_columns move the first n coordinates of each chain
  std::vector<double> cols(C * 2);
  v->read_columns(cols.data(), x, 2);
  for (long c = 0; c < C; ++c)
    for (long j = 0; j < 2; ++j) CHECK(cols[c * 2 + j] == state[c * D + j]);
  for (double& e : cols) e = -e;
  v->write_columns(x, cols.data(), 2);
  std::vector<double> back(C * D);
  v->download(back.data(), x);
  for (long c = 0; c < C; ++c)
    for (long j = 0; j < D; ++j) CHECK(back[c * D + j] == (j < 2 ? -1 : 1) * state[c * D + j]);
}
