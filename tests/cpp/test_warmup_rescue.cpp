// Warmup's rescue of stuck chains (Sampler::rescue_stuck_chains()): at each
// metric window's end a chain far behind the others moves to a healthy
// chain's state and step size; none moves when none is stuck; with no
// healthy chain it is recorded and nothing moves; sampling never moves one.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "lockstep/sampler/chees.hpp"
#include "lockstep/sampler/hmc.hpp"
#include "lockstep/sampler/nuts.hpp"
#include "lockstep/sampler/rwmh.hpp"
#include "sampler_helpers.hpp"

using lockstep::Nuts;
using lockstep::NutsSettings;
using lockstep::Target;
using lockstep::WarmupRescue;
using namespace sampler_tests;

namespace {

// Standard normals, but chain `behind`'s log density is `offset` lower
// everywhere: it lags the others by far more than lagging_gap() wherever it
// is, so every window's end finds it stuck.
class OffsetChain : public Target {
 public:
  OffsetChain(long dim, long chains, long behind, double offset)
      : D_(dim), C_(chains), behind_(behind), offset_(offset) {}
  long dim() const override { return D_; }
  long chains() const override { return C_; }
  void log_density(const double* x, double* lp, double* grad) override {
    for (long c = 0; c < C_; ++c) {
      lp[c] = c == behind_ ? -offset_ : 0;
      for (long i = 0; i < D_; ++i) {
        lp[c] -= 0.5 * x[c * D_ + i] * x[c * D_ + i];
        if (grad) grad[c * D_ + i] = -x[c * D_ + i];
      }
    }
  }

 private:
  long D_, C_, behind_;
  double offset_;
};

// Finite at the initial values alone (the sampler's first evaluation) and
// nowhere after: every proposal diverges, however small the step, so every
// chain's acceptance is 0.
class NowhereToGo : public Target {
 public:
  explicit NowhereToGo(long chains) : C_(chains) {}
  long dim() const override { return 2; }
  long chains() const override { return C_; }
  void log_density(const double* /*x*/, double* lp, double* grad) override {
    for (long c = 0; c < C_; ++c) {
      lp[c] = calls_ == 0 ? 0 : -INFINITY;
      if (grad) grad[2 * c] = grad[2 * c + 1] = 0;
    }
    ++calls_;
  }

 private:
  long C_;
  long calls_ = 0;
};

std::vector<double> start(long chains, long dim) {
  std::vector<double> x(chains * dim);
  for (long k = 0; k < chains * dim; ++k) x[k] = 0.8 * std::sin(2.1 * k + 0.4);
  return x;
}

}  // namespace

TEST_CASE("warmup rescue: a chain far behind moves to a healthy chain's state at each window's end",
          "[rescue][nuts]") {
  const long C = 4, D = 3;
  OffsetChain t(D, C, 2, 1e4);
  NutsSettings s;
  s.per_chain_step_size = true;
  Nuts nuts(t, s, start(C, D), 41, 42);
  nuts.begin_warmup(300);  // windows end at 100, 150 and 250
  std::vector<long> at;
  for (int it = 1; it <= 300; ++it) {
    const size_t before = nuts.rescues().size();
    nuts.iterate(true);
    if (nuts.rescues().size() == before) continue;
    REQUIRE(nuts.rescues().size() == before + 1);  // chain 2 alone
    const WarmupRescue& r = nuts.rescues().back();
    at.push_back(r.iteration);
    CHECK(r.iteration == it);
    CHECK(r.chain == 2);
    CHECK(r.from != 2);
    CHECK(r.from >= 0);
    // far behind the first time; after that it rejects everything (its log
    // density, taken from a chain without the offset, is 1e4 above what its
    // proposals find)
    CHECK((r.lag > 1 || r.accept < 0.05));
    // it is where the chain it moved to is, at its step size
    for (long i = 0; i < D; ++i) CHECK(nuts.state()[2 * D + i] == nuts.state()[r.from * D + i]);
    CHECK(nuts.log_density()[2] == nuts.log_density()[r.from]);
  }
  CHECK(at == std::vector<long>({100, 150, 250}));
  // sampling moves nothing, and the moved chain samples on its own
  for (int it = 0; it < 50; ++it) nuts.iterate(false);
  CHECK(nuts.rescues().size() == 3);
  CHECK(nuts.state()[2 * D] != nuts.state()[nuts.rescues().back().from * D]);
}

TEST_CASE("warmup rescue: healthy chains are never moved, and rwmh and one chain are left alone",
          "[rescue][nuts][hmc][chees]") {
  const long C = 4, D = 3;
  IndependentGaussian t({0, 1, 2}, {1, 0.5, 2}, C);
  NutsSettings s;
  s.per_chain_step_size = true;
  Nuts nuts(t, s, start(C, D), 5, 6);
  nuts.begin_warmup(300);
  for (int it = 0; it < 300; ++it) nuts.iterate(true);
  CHECK(nuts.rescues().empty());
  lockstep::CheesSettings cs;
  lockstep::Chees chees(t, cs, start(C, D), 5, 6);
  chees.begin_warmup(300);
  for (int it = 0; it < 300; ++it) chees.iterate(true);
  CHECK(chees.rescues().empty());
  // rwmh on the lagging target: it accepts as it does, and is never moved
  OffsetChain far(D, C, 1, 1e4);
  lockstep::RwmhSettings rs;
  lockstep::Rwmh rwmh(far, rs, start(C, D), 7, 8);
  rwmh.begin_warmup(300);
  for (int it = 0; it < 300; ++it) rwmh.iterate(true);
  CHECK(rwmh.rescues().empty());
  // hmc does move it
  lockstep::HmcSettings hs;
  hs.per_chain_step_size = true;
  lockstep::Hmc hmc(far, hs, start(C, D), 7, 8);
  hmc.begin_warmup(300);
  for (int it = 0; it < 300; ++it) hmc.iterate(true);
  REQUIRE(hmc.rescues().size() == 3);
  for (const WarmupRescue& r : hmc.rescues()) CHECK(r.chain == 1);
  // turned off (warmup_rescue = false): nothing moves
  NutsSettings off = s;
  off.warmup_rescue = false;
  Nuts kept(far, off, start(C, D), 7, 8);
  REQUIRE_FALSE(kept.warmup_rescue());
  kept.begin_warmup(300);
  for (int it = 0; it < 300; ++it) kept.iterate(true);
  CHECK(kept.rescues().empty());
  CHECK(kept.lag_at_warmup_end()[1] > 1);  // still far behind
  // one chain: no other to move to, nothing recorded
  OffsetChain alone(D, 1, 0, 1e4);
  Nuts one(alone, s, start(1, D), 9, 10);
  one.begin_warmup(300);
  for (int it = 0; it < 300; ++it) one.iterate(true);
  CHECK(one.rescues().empty());
}

TEST_CASE("warmup rescue: with no healthy chain, the stuck ones are recorded and stay",
          "[rescue][nuts][errors]") {
  const long C = 3;
  NowhereToGo t(C);
  NutsSettings s;
  s.per_chain_step_size = true;
  Nuts nuts(t, s, start(C, 2), 1, 2);
  nuts.begin_warmup(300);
  for (int it = 0; it < 300; ++it) nuts.iterate(true);
  REQUIRE(nuts.rescues().size() == 3 * C);  // every chain at each of the three window ends
  for (const WarmupRescue& r : nuts.rescues()) {
    CHECK(r.from == -1);
    CHECK(r.accept == 0);
  }
  CHECK(nuts.state() == start(C, 2));  // nothing moved
}
