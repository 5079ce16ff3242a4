// A sampler's vectors (sampler/chain_vectors.hpp): every operation on the CPU
// backend (with and without threads) and on the emulated backend in several
// geometries, against plain loops written here, for several chain counts and
// dimensions, with masks that leave some chains alone; and NUTS on an
// emulated executor against NUTS on the CPU one.
#include <catch2/catch.hpp>

#include <cmath>
#include <initializer_list>
#include <random>
#include <vector>

#include "helpers.hpp"
#include "lockstep/sampler/chain_vectors.hpp"
#include "lockstep/sampler/nuts.hpp"
#include "lockstep/thread_pool.hpp"
#include "sampler_helpers.hpp"

using lockstep::ChainMask;
using lockstep::ChainVectors;
using lockstep::DotSpec;
using lockstep::HostChainVectors;
using lockstep::Launcher;
using lockstep::Stream;
using namespace lstest;

namespace {

struct Where {
  const char* label;
  Launcher launcher;
  int threads;
};

const Where places[] = {
    {"cpu", Launcher{Backend::cpu, {}}, 1},
    {"cpu, 2 threads", Launcher{Backend::cpu, {}}, 2},
    {"emulated 3 x 5", Launcher{Backend::emulated, {3, 5}}, 1},
    {"emulated 2 x 32", Launcher{Backend::emulated, {2, 32}}, 1},
    {"emulated 1 x 1", Launcher{Backend::emulated, {1, 1}}, 1},
};

std::vector<double> random_values(long n, std::mt19937& rng, double lo = -2, double hi = 2) {
  std::uniform_real_distribution<double> u(lo, hi);
  std::vector<double> v(n);
  for (double& x : v) x = u(rng);
  return v;
}

// Runs f(v, C, D) with fresh host vectors of C chains and dimension D, for
// every chain count, dimension and place (backend and threads).
template <class F> void each_place(std::initializer_list<long> dims, F&& f) {
  for (long C : {1L, 3L, 6L})
    for (long D : dims)
      for (const Where& w : places) {
        INFO(w.label << ", " << C << " chains, dim " << D);
        sampler_tests::IndependentGaussian target(std::vector<double>(D, 0.0),
                                                  std::vector<double>(D, 1.0), C);
        lockstep::ThreadPool pool(w.threads);
        HostChainVectors v(target, w.launcher, w.threads > 1 ? &pool : nullptr);
        f(v, C, D);
      }
}

// Every other chain, starting with the second: some chains on, some off.
ChainMask alternate(long chains) {
  ChainMask m;
  for (long c = 1; c < chains; c += 2) m.set(c);
  return m;
}

}  // namespace

TEST_CASE("chain vectors: copy, fill, add and the leapfrog touch only the masked chains",
          "[chain_vectors]") {
  std::mt19937 rng(17);
  each_place({1L, 7L, 40L}, [&](ChainVectors& v, long C, long D) {
    const long n = C * D;
    const ChainMask on = C == 1 ? ChainMask::all(1) : alternate(C);
    ChainMask back;
    back.set(C - 1);
    const std::vector<double> a = random_values(n, rng), b = random_values(n, rng),
                              g = random_values(n, rng), m = random_values(n, rng, 0.1, 3);
    double *x = v.make(), *y = v.make(), *p = v.make(), *gv = v.make(), *mv = v.make();
    std::vector<double> out(n);
    v.download(out.data(), x);
    CHECK(out == std::vector<double>(n, 0.0));
    v.upload(x, a.data());
    v.upload(y, b.data());
    v.upload(gv, g.data());
    v.upload(mv, m.data());

    v.copy(y, x, on);
    v.download(out.data(), y);
    for (long k = 0; k < n; ++k) CHECK(out[k] == (on[k / D] ? a[k] : b[k]));

    v.fill(y, 2.5, on);
    v.download(out.data(), y);
    for (long k = 0; k < n; ++k) CHECK(out[k] == (on[k / D] ? 2.5 : b[k]));

    v.upload(y, b.data());
    v.add(y, y, x, -1, on);
    v.download(out.data(), y);
    for (long k = 0; k < n; ++k) CHECK(out[k] == (on[k / D] ? b[k] - a[k] : b[k]));

    // p starts at b; x moves by the drift
    v.upload(p, b.data());
    v.leapfrog(x, x, p, gv, mv, 0.25, 0.5, true, on, back);
    std::vector<double> xo(n), po(n);
    v.download(xo.data(), x);
    v.download(po.data(), p);
    for (long k = 0; k < n; ++k) {
      const long c = k / D;
      const double s = back[c] ? -1 : 1;
      const double pk = on[c] ? b[k] + (s * 0.25) * g[k] : b[k];
      CHECK(po[k] == pk);
      CHECK(xo[k] == (on[c] ? a[k] + (s * 0.5) * m[k] * pk : a[k]));
    }
    // the kick alone leaves x
    v.leapfrog(nullptr, nullptr, p, gv, mv, 1.0, 0.0, false, ChainMask::all(C), back);
    std::vector<double> po2(n), xo2(n);
    v.download(po2.data(), p);
    v.download(xo2.data(), x);
    CHECK(xo2 == xo);
    for (long k = 0; k < n; ++k) CHECK(po2[k] == po[k] + (back[k / D] ? -1.0 : 1.0) * g[k]);
  });
}

TEST_CASE("chain vectors: momentum draws are each chain's stream, pair by pair",
          "[chain_vectors][rng]") {
  each_place({1L, 6L, 9L}, [&](ChainVectors& v, long C, long D) {
    std::mt19937 rng(5);
    const std::vector<double> sd = random_values(C * D, rng, 0.2, 4);
    std::vector<Stream> streams, expected;
    for (long c = 0; c < C; ++c)
      streams.push_back(Stream{11u, 22u, static_cast<uint32_t>(c), 0, static_cast<uint64_t>(3 * c + 1)});
    expected = streams;
    double *p = v.make(), *s = v.make();
    v.upload(s, sd.data());
    for (int draw = 0; draw < 2; ++draw) {
      v.momentum(p, s, streams, 7);
      std::vector<double> got(C * D);
      v.download(got.data(), p);
      for (long c = 0; c < C; ++c) {
        Stream& e = expected[c];
        e.purpose = 7;
        for (long i = 0; i < D; i += 2) {
          double n0, n1;
          e.normal2(&n0, &n1);
          CHECK(got[c * D + i] == n0 / sd[c * D + i]);
          if (i + 1 < D) CHECK(got[c * D + i + 1] == n1 / sd[c * D + i + 1]);
        }
        CHECK(streams[c].position == e.position);
        CHECK(streams[c].purpose == 7u);
      }
    }
  });
}

TEST_CASE("chain vectors: dot products per chain, plain, extended and squared",
          "[chain_vectors][dots]") {
  std::mt19937 rng(23);
  each_place({1L, 7L, 300L}, [&](ChainVectors& v, long C, long D) {
    const long n = C * D;
    std::vector<std::vector<double>> host;
    std::vector<double*> dev;
    for (int k = 0; k < 4; ++k) {
      host.push_back(random_values(n, rng, k == 3 ? 0.1 : -2, 2));
      dev.push_back(v.make());
      v.upload(dev.back(), host.back().data());
    }
    const double* m = dev[3];
    const ChainMask on = C == 1 ? ChainMask::all(1) : alternate(C);
    const DotSpec specs[6] = {{dev[0], dev[1], nullptr, false}, {dev[1], dev[2], dev[0], false},
                              {dev[2], dev[3], nullptr, true},  {dev[0], dev[0], nullptr, false},
                              {dev[1], dev[0], dev[2], false},  {dev[2], dev[1], nullptr, true}};
    for (int ns : {1, 3, 6}) {
      std::vector<double> out(C * ns, -99.0);
      v.dots(specs, ns, m, on, out.data());
      for (long c = 0; c < C; ++c)
        for (int s = 0; s < ns; ++s) {
          double want = 0;
          auto at = [&](const double* d, long i) {
            for (int k = 0; k < 4; ++k)
              if (d == dev[k]) return host[k][c * D + i];
            return 0.0;
          };
          if (on[c])
            for (long i = 0; i < D; ++i) {
              const DotSpec& sp = specs[s];
              if (sp.square) {
                const double t = at(sp.a, i) * at(sp.b, i);
                want += t * t;
              } else {
                want += host[3][c * D + i] * at(sp.a, i) *
                        (sp.c ? at(sp.b, i) + at(sp.c, i) : at(sp.b, i));
              }
            }
          INFO("spec " << s << " of " << ns << ", chain " << c);
          CHECK(out[c * ns + s] == Approx(want).epsilon(1e-13).margin(1e-13));
        }
    }
  });
}

TEST_CASE("nuts on the emulated backend follows nuts on the cpu backend",
          "[chain_vectors][nuts][emulated]") {
  // eight schools' shape, five iterations at a fixed step size from one start:
  // the emulated backend's sums differ only in their last bits
  const Program p = eight_schools_shape();
  const long C = 3;
  std::vector<double> init(C * 9);
  for (size_t k = 0; k < init.size(); ++k) init[k] = 0.1 * static_cast<double>(k % 7) - 0.3;
  lockstep::NutsSettings s;
  s.epsilon = 0.7;
  auto draws = [&](Backend backend, EmulatedGeometry g) {
    Executor<double> ex(p, C, backend, g);
    lockstep::Nuts nuts(ex, s, init, 3u, 4u);
    std::vector<double> out;
    long leapfrogs = 0;
    for (int i = 0; i < 5; ++i) {
      nuts.iterate(false);
      out.insert(out.end(), nuts.state().begin(), nuts.state().end());
      for (long c = 0; c < C; ++c) leapfrogs += nuts.last().n_leapfrog[c];
    }
    out.push_back(static_cast<double>(leapfrogs));
    return out;
  };
  const std::vector<double> cpu = draws(Backend::cpu, {});
  CHECK(cpu.back() > 15);  // the trees were more than a step or two
  for (EmulatedGeometry g : {EmulatedGeometry{3, 5}, EmulatedGeometry{2, 4}}) {
    const std::vector<double> emu = draws(Backend::emulated, g);
    REQUIRE(emu.size() == cpu.size());
    for (size_t k = 0; k < cpu.size(); ++k) CHECK(emu[k] == Approx(cpu[k]).epsilon(1e-10));
  }
}

TEST_CASE("nuts refuses more chains than its masks hold", "[chain_vectors][nuts][errors]") {
  sampler_tests::IndependentGaussian t({0}, {1}, lockstep::max_mask_chains + 1);
  std::vector<double> init(lockstep::max_mask_chains + 1, 0.0);
  CHECK_THROWS_AS(lockstep::Nuts(t, lockstep::NutsSettings(), init, 1, 2), std::invalid_argument);
}
