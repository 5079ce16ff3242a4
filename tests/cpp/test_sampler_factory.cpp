// The rules that used to live in the Rcpp glue, now the core's: which executor
// runs a model (targets.hpp: make_target, TargetCache) and which sampler a
// SamplerSpec makes, with its metric and chain groups
// (sampler/sampler_factory.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "lockstep/device_shards.hpp"
#include "lockstep/owned_shard.hpp"
#include "lockstep/sampler/chain_groups.hpp"
#include "lockstep/sampler/sampler_factory.hpp"
#include "lockstep/targets.hpp"
#include "models.hpp"

using namespace lstest;
using lockstep::ExecOptions;
using lockstep::SamplerSpec;
using lockstep::TargetCache;

namespace {

// x ~ normal(0, 1) of `dim` free parameters, and y ~ normal(x[1], 1) of
// three observations: a small model every sampler can step.
Program small_model(long dim) {
  Program p;
  const int x = p.add(param_node(dim, 0));
  p.n_free = dim;
  const int zero = p.add(data_node({0}));
  const int one = p.add(data_node({1}));
  add_term(p, density_node(Family::normal, {x, zero, one}));
  const int first = p.add(gather_node(x, {0}));
  const int y = p.add(data_node({0.3, -0.2, 0.8}));
  add_term(p, density_node(Family::normal, {y, first, one}));
  lockstep::plan(p);
  return p;
}

std::vector<double> start_values(long chains, long dim) {
  std::vector<double> init(chains * dim);
  for (long k = 0; k < chains * dim; ++k) init[k] = std::sin(1.3 * k + 0.2);
  return init;
}

// `iterations` warmup then sampling iterations of a sampler; its final state
// in the model's coordinates.
std::vector<double> final_state(lockstep::Sampler& s, long chains, int warmup, int n) {
  s.begin_warmup(warmup);
  for (int i = 0; i < warmup; ++i) s.iterate(true);
  for (int i = 0; i < n; ++i) s.iterate(false);
  std::vector<double> x(s.state().size());
  s.to_model(s.state().data(), x.data(), chains);
  return x;
}

}  // namespace

TEST_CASE("targets: make_target gives the backend's executor in the model's precision",
          "[targets]") {
  const Program p = small_model(3);
  ExecOptions o;
  auto cpu = lockstep::make_target(p, 2, o, false);
  CHECK(dynamic_cast<lockstep::Executor<double>*>(cpu.get()) != nullptr);
  CHECK(cpu->chains() == 2);
  CHECK(cpu->dim() == 3);
  auto single = lockstep::make_target(p, 2, o, true);
  CHECK(dynamic_cast<lockstep::Executor<float>*>(single.get()) != nullptr);
  o.backend = Backend::emulated;
  auto emulated = lockstep::make_target(p, 4, o, false);
  CHECK(dynamic_cast<lockstep::Executor<double>*>(emulated.get()) != nullptr);
  CHECK(emulated->chains() == 4);
#ifndef LOCKSTEP_HAS_CUDA
  o.backend = Backend::cuda;
  CHECK_THROWS_AS(lockstep::make_target(p, 2, o, false), std::invalid_argument);
#endif
}

TEST_CASE("targets: the cache keeps one executor per chain count and options, every field "
          "compared",
          "[targets]") {
  const Program p = small_model(3);
  TargetCache cache(p, false);
  const ExecOptions base;
  lockstep::Target& a = cache.get(2, base);
  CHECK(&cache.get(2, base) == &a);
  CHECK(cache.size() == 1);
  CHECK(&cache.get(3, base) != &a);
  CHECK(cache.get(3, base).chains() == 3);
  // each field of ExecOptions makes another executor
  std::vector<ExecOptions> changed(14, base);
  changed[0].backend = Backend::emulated;
  changed[1].geometry.blocks = 2;
  changed[2].threads = 2;
  changed[3].devices = 2;
  changed[4].observation_stage = false;
  changed[5].tile_rows = 7;
  changed[6].reorder_rows = false;
  changed[7].jacobian = false;
  changed[8].gpu = 1;
  changed[9].gpus = {0, 1};
  changed[10].threads_auto = true;
  changed[11].alias_parameters = true;
  changed[12].first_writers = false;
  changed[13].tile_kernel = true;
  for (size_t k = 0; k < changed.size(); ++k) {
    INFO("field " << k);
    CHECK(!(changed[k].fields() == base.fields()));
  }
  // (world: a pointer compared by address)
  lockstep::InProcessCommunicator world(1);
  ExecOptions with_world = base;
  with_world.world = &world;
  CHECK(!(with_world.fields() == base.fields()));
  // a new one beyond max_kept empties the cache first
  for (int t = 1; t <= static_cast<int>(TargetCache::max_kept) + 1; ++t) {
    ExecOptions o = base;
    o.tile_rows = 100 + t;
    cache.get(2, o);
    CHECK(cache.size() <= TargetCache::max_kept);
  }
  CHECK(cache.size() >= 1);
}

TEST_CASE("sampler factory: the dense metric's rules", "[sampler_factory][dense_metric]") {
  ExecOptions cpu;
  SamplerSpec s;
  CHECK_FALSE(lockstep::uses_dense_metric(s, 3, cpu));  // diagonal
  s.metric = "dense";
  CHECK(lockstep::uses_dense_metric(s, 3, cpu));
  CHECK(lockstep::uses_dense_metric(s, lockstep::max_auto_dense_dim + 1, cpu));
  s.metric = "auto";
  CHECK(lockstep::uses_dense_metric(s, lockstep::max_auto_dense_dim, cpu));
  CHECK_FALSE(lockstep::uses_dense_metric(s, lockstep::max_auto_dense_dim + 1, cpu));
  ExecOptions emulated;
  emulated.backend = Backend::emulated;
  CHECK_FALSE(lockstep::uses_dense_metric(s, 3, emulated));
  lockstep::InProcessCommunicator world(1);
  ExecOptions ranks;
  ranks.world = &world;
  CHECK_FALSE(lockstep::uses_dense_metric(s, 3, ranks));
  // a tuned factor is kept whatever the options
  s.metric_factor = {1, 0, 0, 1};
  CHECK(lockstep::uses_dense_metric(s, 2, emulated));
  CHECK(lockstep::initial_dense_factor(s, 1, 2) == s.metric_factor);

  // the first factor: diag_sd on the diagonal with "auto", one value, one
  // per parameter or one per chain and parameter; the identity otherwise
  SamplerSpec a;
  a.metric = "auto";
  CHECK(lockstep::initial_dense_factor(a, 2, 2).empty());  // diag_sd 1: the identity
  a.diag_sd = {3};
  CHECK(lockstep::initial_dense_factor(a, 2, 2) == std::vector<double>{3, 0, 0, 3, 3, 0, 0, 3});
  a.diag_sd = {2, 5};
  CHECK(lockstep::initial_dense_factor(a, 2, 2) == std::vector<double>{2, 0, 0, 5, 2, 0, 0, 5});
  a.diag_sd = {1, 2, 3, 4};
  CHECK(lockstep::initial_dense_factor(a, 2, 2) == std::vector<double>{1, 0, 0, 2, 3, 0, 0, 4});
  a.diag_sd = {1, 2, 3};  // (the sampler refuses it)
  CHECK(lockstep::initial_dense_factor(a, 2, 2).empty());
  SamplerSpec d;
  d.metric = "dense";
  d.diag_sd = {3};
  CHECK(lockstep::initial_dense_factor(d, 2, 2).empty());
}

TEST_CASE("sampler factory: each kind's sampler is the one its settings make, with the metric "
          "it asks for",
          "[sampler_factory]") {
  const long C = 3, D = 2;
  const Program p = small_model(D);
  const std::vector<double> init = start_values(C, D);
  const ExecOptions o;
  for (const std::string kind : {"hmc", "nuts", "chees", "rwmh", "slice"}) {
    INFO(kind);
    SamplerSpec spec;
    spec.kind = kind;
    spec.epsilon = 0.3;
    spec.diag_sd = {1.5, 0.8};
    spec.hmc.Lmin = 3;
    spec.hmc.Lmax = 4;
    spec.nuts.max_treedepth = 4;
    spec.chees.max_leapfrog = 20;
    spec.rwmh.uniform = true;
    spec.slice.max_doublings = 3;
    lockstep::SamplerBundle b = lockstep::make_sampler(p, spec, init, C, o, false, 11, 12);
    REQUIRE(b.sampler);
    CHECK(b.dense == nullptr);
    CHECK(b.chain_groups == 1);
    // the same sampler made by hand
    lockstep::Executor<double> ex(p, C, o);
    std::unique_ptr<lockstep::Sampler> direct;
    if (kind == "hmc") {
      lockstep::HmcSettings s;
      s.Lmin = 3, s.Lmax = 4, s.epsilon = 0.3, s.diag_sd = {1.5, 0.8};
      direct = std::make_unique<lockstep::Hmc>(ex, s, init, 11, 12);
    } else if (kind == "nuts") {
      lockstep::NutsSettings s;
      s.max_treedepth = 4, s.epsilon = 0.3, s.diag_sd = {1.5, 0.8};
      direct = std::make_unique<lockstep::Nuts>(ex, s, init, 11, 12);
    } else if (kind == "chees") {
      lockstep::CheesSettings s;
      s.max_leapfrog = 20, s.epsilon = 0.3, s.diag_sd = {1.5, 0.8};
      direct = std::make_unique<lockstep::Chees>(ex, s, init, 11, 12);
    } else if (kind == "rwmh") {
      lockstep::RwmhSettings s;
      s.uniform = true, s.epsilon = 0.3, s.diag_sd = {1.5, 0.8};
      direct = std::make_unique<lockstep::Rwmh>(ex, s, init, 11, 12);
    } else {
      lockstep::SliceSettings s;
      s.max_doublings = 3, s.epsilon = 0.3, s.diag_sd = {1.5, 0.8};
      direct = std::make_unique<lockstep::Slice>(ex, s, init, 11, 12);
    }
    CHECK(final_state(*b.sampler, C, 30, 10) == final_state(*direct, C, 30, 10));
  }
  // a dense metric where asked for, in the sampler's coordinates
  SamplerSpec dense;
  dense.metric = "auto";
  lockstep::SamplerBundle b = lockstep::make_sampler(p, dense, init, C, o, false, 1, 2);
  REQUIRE(b.dense != nullptr);
  CHECK(b.sampler->dense_metric() == b.dense.get());
  // an unknown kind
  SamplerSpec unknown;
  unknown.kind = "gibbs";
  CHECK_THROWS_AS(lockstep::make_sampler(p, unknown, init, C, o, false, 1, 2),
                  std::invalid_argument);
}

TEST_CASE("sampler factory: NUTS and HMC step in chain groups where the model is too small for "
          "threads",
          "[sampler_factory][chain_groups]") {
  const long C = 4, D = 2;
  const Program p = small_model(D);
  ExecOptions o;
  o.threads = 2;
  o.threads_auto = true;
  const long expected = lockstep::chain_group_count(p, C, o);
  CHECK(expected == 2);
  for (const std::string kind : {"nuts", "hmc", "rwmh"}) {
    INFO(kind);
    SamplerSpec spec;
    spec.kind = kind;
    lockstep::SamplerBundle b = lockstep::make_sampler(p, spec, start_values(C, D), C, o, false,
                                                       5, 6);
    CHECK(b.chain_groups == (kind == "rwmh" ? 1 : expected));
  }
}

TEST_CASE("sampler factory: across processes, every sampler on a grouped model shards by groups "
          "and draws what one process draws",
          "[sampler_factory][owned_shard]") {
  // One rank stands for the run (an in-process communicator of 1): the
  // slice holds every group, its state is the model's reordered (globals
  // first), and its draws, made whole, are one process's to rounding.
  std::mt19937 rng(91);
  const long N = 300, G = 20, K = 2, C = 3;
  Seed s = seed_model(N, G, K, rng, random_groups(rng, N, G));
  lockstep::plan(s.p);
  const long D = s.p.n_free;
  const std::vector<double> init = random_state(rng, C, D);
  SamplerSpec spec;
  spec.diag_sd = std::vector<double>(D, 0.9);
  lockstep::InProcessCommunicator world(1);
  ExecOptions alone, across;
  across.world = &world;
  // (rwmh and slice draw each coordinate's numbers by its index in the whole
  // state, which the slice's reordering tests)
  for (const std::string kind : {"nuts", "hmc", "chees", "rwmh", "slice"}) {
    INFO(kind);
    spec.kind = kind;
    lockstep::SamplerBundle one = lockstep::make_sampler(s.p, spec, init, C, alone, false, 5, 6);
    lockstep::SamplerBundle ranked =
        lockstep::make_sampler(s.p, spec, init, C, across, false, 5, 6);
    REQUIRE(ranked.slice != nullptr);
    CHECK(one.slice == nullptr);
    CHECK(ranked.slice->n_global == 2 * K + 2);
    CHECK(ranked.executor->dim() == D);
    CHECK(ranked.executor->full_dim() == D);
    one.sampler->begin_warmup(5);
    ranked.sampler->begin_warmup(5);
    std::vector<double> whole(C * D);
    lockstep::WholeState gather(*ranked.slice, D, world);
    for (int it = 0; it < 10; ++it) {
      one.sampler->iterate(it < 5);
      ranked.sampler->iterate(it < 5);
      gather.to_all(ranked.sampler->state().data(), C, whole.data());
      for (long k = 0; k < C * D; ++k)
        CHECK(whole[k] == Approx(one.sampler->state()[k]).epsilon(1e-9).margin(1e-9));
    }
  }
  // A dense metric shards too, covering the global coordinates alone (the
  // slice's first, in the whole state's order), the local ones diagonal:
  // one process's metric over the same coordinates draws the same, through
  // warmup's metric windows (the first ends at iteration 15 of 30).
  const std::vector<long> globals = lockstep::global_coordinates(s.p);
  spec.kind = "nuts";
  spec.metric = "dense";
  spec.diag_sd = {1.0};
  lockstep::SamplerBundle ranked = lockstep::make_sampler(s.p, spec, init, C, across, false, 5, 6);
  REQUIRE(ranked.slice != nullptr);
  REQUIRE(ranked.dense != nullptr);
  CHECK(std::vector<long>(ranked.slice->full_index.begin(),
                          ranked.slice->full_index.begin() + ranked.slice->n_global) == globals);
  CHECK(ranked.dense->dense_coordinates().size() == globals.size());
  SamplerSpec over_globals = spec;
  over_globals.metric_coordinates = globals;
  lockstep::SamplerBundle one = lockstep::make_sampler(s.p, over_globals, init, C, alone, false, 5, 6);
  REQUIRE(one.dense != nullptr);
  CHECK_FALSE(one.dense->covers_all());
  // without the coordinates, a model this small gets a whole dense metric
  CHECK(lockstep::make_sampler(s.p, spec, init, C, alone, false, 5, 6).dense->covers_all());
  const long warmup = 30;
  one.sampler->begin_warmup(warmup);
  ranked.sampler->begin_warmup(warmup);
  lockstep::WholeState gather(*ranked.slice, D, world);
  std::vector<double> x_one(C * D), x_ranked(C * D), whole(C * D);
  double worst = 0;
  for (int it = 0; it < 40; ++it) {
    one.sampler->iterate(it < warmup);
    ranked.sampler->iterate(it < warmup);
    one.sampler->to_model(one.sampler->state().data(), x_one.data(), C);
    ranked.sampler->to_model(ranked.sampler->state().data(), x_ranked.data(), C);
    gather.to_all(x_ranked.data(), C, whole.data());
    for (long k = 0; k < C * D; ++k)
      worst = std::max(worst, std::fabs(whole[k] - x_one[k]) / (1e-9 + std::fabs(x_one[k])));
  }
  CHECK(worst < 1e-8);
  CHECK(one.dense->is_dense(0));  // the windows learnt correlations
  CHECK(ranked.dense->model_sd().size() == static_cast<size_t>(C * D));
}

TEST_CASE("sampler factory: on devices of one process, every sampler runs over devices that own "
          "their groups",
          "[sampler_factory][device_shards]") {
  std::mt19937 rng(97);
  Seed s = seed_model(300, 20, 2, rng, random_groups(rng, 300, 20));
  lockstep::plan(s.p);
  const long D = s.p.n_free, C = 2;
  const std::vector<double> init = random_state(rng, C, D);
  ExecOptions o;
  o.backend = Backend::emulated;
  o.devices = 2;
  for (const std::string kind : {"nuts", "hmc", "chees", "rwmh", "slice"})
    for (const std::string metric : {"diagonal", "dense"}) {
      INFO(kind << ", " << metric);
      SamplerSpec spec;
      spec.kind = kind;
      spec.metric = metric;
      lockstep::SamplerBundle b = lockstep::make_sampler(s.p, spec, init, C, o, false, 5, 6);
      CHECK(dynamic_cast<lockstep::DeviceShardsTarget*>(b.executor.get()) != nullptr);
      CHECK((b.dense != nullptr) == (metric == "dense"));
      CHECK(b.chain_groups == 1);
      b.sampler->begin_warmup(3);
      for (int it = 0; it < 5; ++it) b.sampler->iterate(it < 3);
      for (double lp : b.sampler->log_density()) CHECK(std::isfinite(lp));
    }
}
