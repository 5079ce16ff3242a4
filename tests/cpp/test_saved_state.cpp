// A sampler's saved state (saved_state.hpp, Sampler::save_state()): a sampler made anew
// with the same settings and seeds, given the state another saved between
// iterations, goes on to make exactly the draws the first makes, wherever it
// was saved (warmup's initial buffer, inside a metric window, at a window's
// end, in sampling), for every kind of sampler, metric and chain grouping:
// what a checkpoint's resume rests on (R/checkpoint.R).
#include <catch2/catch.hpp>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "helpers.hpp"
#include "lockstep/sampler/sampler_factory.hpp"
#include "lockstep/svi.hpp"
#include "models.hpp"

using namespace lstest;
using lockstep::ExecOptions;
using lockstep::SamplerSpec;

namespace {

// A hierarchical normal of 2 + 6 free parameters: correlated enough that
// the automatic metric picks dense factors for some, with a scale that
// warmup must learn.
Program small_hierarchy() {
  Program p;
  const int mu = p.add(param_node(1, 0));
  const int log_tau = p.add(param_node(1, 1));
  const int eta = p.add(param_node(6, 2));
  p.n_free = 8;
  const int zero = p.add(data_node({0}));
  const int one = p.add(data_node({1}));
  const int five = p.add(data_node({5}));
  add_term(p, density_node(Family::normal, {mu, zero, five}));
  add_term(p, density_node(Family::normal, {log_tau, zero, one}));
  add_term(p, density_node(Family::normal, {eta, zero, one}));
  const int tau = p.add(unary_node(Op::exp, log_tau, p));
  const int scaled = p.add(binary_node(Op::mul, eta, tau, p));
  const int theta = p.add(binary_node(Op::add, scaled, mu, p));
  const int y = p.add(data_node({2.8, 0.8, -0.3, 0.7, -0.1, 1.8}));
  const int sigma = p.add(data_node({1.5, 1.0, 1.6, 1.1, 0.9, 1.8}));
  add_term(p, density_node(Family::normal, {y, theta, sigma}));
  lockstep::plan(p);
  return p;
}

std::vector<double> start_values(long chains, long dim) {
  std::vector<double> init(chains * dim);
  for (long k = 0; k < chains * dim; ++k) init[k] = 0.8 * std::sin(1.3 * k + 0.2);
  return init;
}

// Iterations `from` (0-based) to `to` of a run of `warmup` warmup
// iterations then sampling, each iteration's state appended to `out`.
void run_span(lockstep::Sampler& s, long warmup, long from, long to, std::vector<double>& out) {
  for (long it = from; it < to; ++it) {
    s.iterate(it < warmup);
    out.insert(out.end(), s.state().begin(), s.state().end());
    for (double a : s.last().accept_stat) out.push_back(a);
    for (double e : s.step_sizes()) out.push_back(e);
  }
}

}  // namespace

TEST_CASE("sampler state: a sampler restored from a saved state makes the same draws as the one "
          "that saved it",
          "[saved_state][sampler]") {
  const Program p = small_hierarchy();
  const long C = 4, D = 8, warmup = 150, total = 200;
  const std::vector<double> init = start_values(C, D);
  struct Case {
    std::string kind, metric;
    int threads;
    bool per_chain_step, per_chain_metric;
  };
  const std::vector<Case> cases = {
      {"nuts", "diagonal", 1, false, false}, {"nuts", "auto", 1, false, false},
      {"nuts", "diagonal", 2, false, false}, {"nuts", "diagonal", 1, true, true},
      {"nuts", "dense", 2, false, false},    {"hmc", "diagonal", 2, true, false},
      {"chees", "diagonal", 1, false, false}, {"chees", "dense", 1, false, true},
      {"rwmh", "diagonal", 1, false, false}, {"slice", "diagonal", 1, false, false}};
  for (const Case& k : cases) {
    SamplerSpec spec;
    spec.kind = k.kind;
    spec.metric = k.metric;
    spec.epsilon = 0.2;
    spec.per_chain_step_size = k.per_chain_step;
    spec.per_chain_metric = k.per_chain_metric;
    spec.diag_sd_from_gradient = true;
    spec.hmc.Lmin = 3;
    spec.hmc.Lmax = 6;
    spec.nuts.max_treedepth = 6;
    spec.chees.max_leapfrog = 30;
    ExecOptions o;
    o.threads = k.threads;
    // the whole run, uninterrupted
    lockstep::SamplerBundle whole = lockstep::make_sampler(p, spec, init, C, o, false, 7, 9);
    whole.sampler->begin_warmup(warmup);
    std::vector<double> expected;
    run_span(*whole.sampler, warmup, 0, total, expected);
    const long per_iteration = C * D + 2 * C;
    // saved at the initial buffer, inside a window, at a window's end (100),
    // in the terminal buffer and in sampling
    for (long at : {30L, 88L, 100L, 140L, 170L}) {
      INFO(k.kind << " " << k.metric << ", " << k.threads << " threads, per-chain step size "
                  << k.per_chain_step << ", per-chain metric " << k.per_chain_metric
                  << ": saved after iteration " << at);
      lockstep::SamplerBundle first = lockstep::make_sampler(p, spec, init, C, o, false, 7, 9);
      first.sampler->begin_warmup(warmup);
      std::vector<double> before;
      run_span(*first.sampler, warmup, 0, at, before);
      const lockstep::SavedState saved = first.sampler->save_state();
      // a new sampler of the same settings and seeds, from other initial
      // values: only the state says where the chains are
      std::vector<double> elsewhere = start_values(C, D);
      for (double& v : elsewhere) v = -0.5 * v;
      lockstep::SamplerBundle second = lockstep::make_sampler(p, spec, elsewhere, C, o, false, 7, 9);
      second.sampler->restore_state(saved);
      std::vector<double> after = before;
      run_span(*second.sampler, warmup, at, total, after);
      REQUIRE(after.size() == expected.size());
      long differ = 0;
      for (size_t i = 0; i < after.size(); ++i) differ += after[i] != expected[i];
      CHECK(differ == 0);
      // and the tallies
      CHECK(second.sampler->accepted() == whole.sampler->accepted());
      CHECK(second.sampler->bad() == whole.sampler->bad());
      CHECK(second.sampler->rescues().size() == whole.sampler->rescues().size());
      (void)per_iteration;
    }
  }
}

TEST_CASE("sampler state: a state of another shape or sampler is refused, naming what differs",
          "[saved_state][sampler]") {
  const Program p = small_hierarchy();
  const long C = 2, D = 8;
  SamplerSpec spec;
  spec.kind = "nuts";
  ExecOptions o;
  lockstep::SamplerBundle a = lockstep::make_sampler(p, spec, start_values(C, D), C, o, false, 1, 2);
  a.sampler->begin_warmup(10);
  a.sampler->iterate(true);
  const lockstep::SavedState saved = a.sampler->save_state();
  // more chains
  lockstep::SamplerBundle b = lockstep::make_sampler(p, spec, start_values(3, D), 3, o, false, 1, 2);
  CHECK_THROWS_WITH(b.sampler->restore_state(saved),
                    Catch::Contains("2 chains of 8 free parameters, this sampler has 3 of 8"));
  // per-chain step sizes against a shared one
  SamplerSpec per_chain = spec;
  per_chain.per_chain_step_size = true;
  lockstep::SamplerBundle c =
      lockstep::make_sampler(p, per_chain, start_values(C, D), C, o, false, 1, 2);
  CHECK_THROWS_WITH(c.sampler->restore_state(saved), Catch::Contains("step size shared"));
  // a dense metric against a diagonal one
  SamplerSpec dense = spec;
  dense.metric = "dense";
  lockstep::SamplerBundle d = lockstep::make_sampler(p, dense, start_values(C, D), C, o, false, 1, 2);
  CHECK_THROWS_WITH(d.sampler->restore_state(saved), Catch::Contains("metric is diagonal"));
  // a part missing, or of the wrong length
  lockstep::SavedState damaged;
  for (const auto& part : saved.parts())
    if (part.first != "grad") damaged.put(part.first, part.second);
  lockstep::SamplerBundle e = lockstep::make_sampler(p, spec, start_values(C, D), C, o, false, 1, 2);
  CHECK_THROWS_WITH(e.sampler->restore_state(damaged), Catch::Contains("no `grad`"));
  damaged.put("grad", std::vector<double>(3, 0.0));
  CHECK_THROWS_WITH(e.sampler->restore_state(damaged),
                    Catch::Contains("`grad` has 3 values where this one has 16"));
}

// A variational fit's saved state (Svi::save_state()): a fit made anew with
// the same settings and seeds, given the state of another after t
// iterations, makes the same losses and guide as the first, for every guide,
// with the guide on the host or on the target's vectors (resident: a GPU's
// memory, run lane by lane by the emulated backend), a decaying learning
// rate and minibatches.
TEST_CASE("saved state: a variational fit restored from a saved state goes on as the one that "
          "saved it",
          "[saved_state][svi]") {
  std::mt19937 rng(17);
  lstest::Demand d = lstest::demand(300, 7, 4, rng);
  lockstep::plan(d.p);
  struct Case {
    std::string guide, method;
    int resident;
    lockstep::Backend backend;
    double fraction;
  };
  const std::vector<Case> cases = {
      {"mean_field", "adam", -1, lockstep::Backend::cpu, 1.0},
      {"mean_field", "adam", 1, lockstep::Backend::emulated, 0.5},
      {"low_rank", "adam", -1, lockstep::Backend::cpu, 0.5},
      {"low_rank", "rms_prop", 1, lockstep::Backend::emulated, 1.0},
      {"full_rank", "adam", -1, lockstep::Backend::cpu, 1.0},
      {"delta", "nadam", -1, lockstep::Backend::cpu, 1.0},
      {"delta", "adam", 1, lockstep::Backend::cpu, 0.5}};
  for (const Case& k : cases) {
    INFO(k.guide << " " << k.method << ", resident " << k.resident << ", backend "
                 << static_cast<int>(k.backend) << ", fraction " << k.fraction);
    lockstep::SviSettings s;
    s.guide = k.guide;
    s.rank = 2;
    s.optimiser.method = k.method;
    s.optimiser.params["learning_rate"] = 0.05;
    s.decay_rate = 0.5;
    s.decay_steps = 10;
    s.batch_fraction = k.fraction;
    s.resident = k.resident;
    lockstep::ExecOptions o;
    o.backend = k.backend;
    o.tile_rows = 16;
    const long particles = k.guide == "delta" ? 1 : 3;
    const std::vector<double> init(d.p.n_free, 0.1);
    auto fit = [&](lockstep::Executor<double>& target) {
      return std::make_unique<lockstep::Svi>(target, s, init, 7, 8);
    };
    lockstep::Executor<double> t1(d.p, particles, o), t2(d.p, particles, o), t3(d.p, particles, o);
    auto whole = fit(t1);
    CHECK(whole->resident() == (k.resident == 1));
    std::vector<double> expected;
    for (int t = 0; t < 30; ++t) expected.push_back(whole->step());
    auto first = fit(t2);
    std::vector<double> got;
    for (int t = 0; t < 12; ++t) got.push_back(first->step());
    const lockstep::SavedState saved = first->save_state();
    auto second = fit(t3);
    second->restore_state(saved);
    CHECK(second->iterations() == 12);
    for (int t = 12; t < 30; ++t) got.push_back(second->step());
    REQUIRE(got.size() == expected.size());
    for (size_t t = 0; t < got.size(); ++t) {
      INFO("iteration " << t);
      CHECK(got[t] == expected[t]);
    }
    CHECK(second->mean() == whole->mean());
    if (k.guide != "delta") CHECK(second->sd() == whole->sd());
    // restore_last_finite() goes back to the same guide in both
    second->restore_last_finite();
    whole->restore_last_finite();
    CHECK(second->mean() == whole->mean());
  }
  // a fit of another shape is refused
  lockstep::Executor<double> t4(d.p, 3, lockstep::ExecOptions{}), t5(d.p, 2, lockstep::ExecOptions{});
  lockstep::SviSettings s;
  s.optimiser.method = "adam";
  lockstep::Svi a(t4, s, std::vector<double>(d.p.n_free, 0.0), 1, 2);
  lockstep::Svi b(t5, s, std::vector<double>(d.p.n_free, 0.0), 1, 2);
  CHECK_THROWS_WITH(b.restore_state(a.save_state()), Catch::Contains("saved fit has 3 particles"));
}
