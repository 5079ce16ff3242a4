// A sampler's vectors (sampler/chain_vectors.hpp): every operation on the CPU
// backend (with and without threads) and on the emulated backend in several
// geometries, against plain loops written here, for several chain counts and
// dimensions, with masks that leave some chains alone; and the leapfrog
// samplers (NUTS, HMC, ChEES) on an emulated executor against the CPU one.
#include <catch2/catch.hpp>

#include <cmath>
#include <initializer_list>
#include <random>
#include <iomanip>
#include <vector>

#include "helpers.hpp"
#include "lockstep/sampler/chain_vectors.hpp"
#include "lockstep/sampler/chees.hpp"
#include "lockstep/sampler/hmc.hpp"
#include "lockstep/sampler/nuts.hpp"
#include "lockstep/thread_pool.hpp"
#include "sampler_helpers.hpp"

using lockstep::ChainMask;
using lockstep::ChainVectors;
using lockstep::DotSpec;
using lockstep::HostChainVectors;
using lockstep::Launcher;
using lockstep::Stream;
using sampler_tests::sampler_trace;
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

// New arrays of v holding the values of each of `host`, in order.
std::vector<double*> uploaded(ChainVectors& v, const std::vector<std::vector<double>>& host) {
  std::vector<double*> a;
  for (const std::vector<double>& h : host) {
    a.push_back(v.make());
    v.upload(a.back(), h.data());
  }
  return a;
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
        // min_pooled 0: these small vectors go to the threads too
        HostChainVectors v(target, w.launcher, w.threads > 1 ? &pool : nullptr, 0);
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

TEST_CASE("chain vectors: dot products per chain, of every kind",
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
    using K = lockstep::DotKind;
    const DotSpec specs[6] = {{dev[0], dev[1], nullptr, K::product},
                              {dev[1], dev[2], dev[0], K::product},
                              {dev[2], dev[3], nullptr, K::square},
                              {dev[0], dev[1], dev[3], K::scaled_square_difference},
                              {dev[1], dev[0], dev[2], K::difference_product},
                              {dev[2], dev[1], nullptr, K::square}};
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
              const double a = at(sp.a, i), b = at(sp.b, i), mi = host[3][c * D + i];
              if (sp.kind == K::square) {
                want += (a * b) * (a * b);
              } else if (sp.kind == K::scaled_square_difference) {
                want += (a - b) * (a - b) / (at(sp.c, i) * at(sp.c, i));
              } else if (sp.kind == K::difference_product) {
                want += (a - b) * mi * at(sp.c, i);
              } else {
                want += mi * a * (sp.c ? b + at(sp.c, i) : b);
              }
            }
          INFO("spec " << s << " of " << ns << ", chain " << c);
          CHECK(out[c * ns + s] == Approx(want).epsilon(1e-13).margin(1e-13));
        }
    }
  });
}

TEST_CASE("chain vectors: NUTS's fused merge checks equal the checks' dot products",
          "[chain_vectors][nuts]") {
  // SubtreeChecksTerm against the unfused sums NUTS made before: the rhos
  // formed by add() and six DotKind::product dot products (the same numbers
  // up to the order in which a backend's lanes add them)
  std::mt19937 rng(41);
  each_place({1L, 7L, 300L}, [&](ChainVectors& v, long C, long D) {
    std::vector<double*> a;
    for (int k = 0; k < 8; ++k) {
      const std::vector<double> h = random_values(C * D, rng, k == 7 ? 0.1 : -2, 2);
      a.push_back(v.make());
      v.upload(a.back(), h.data());
    }
    double *S = a[0], *prefix = a[1], *left_rho = a[2], *left_begin = a[3], *p = a[4],
           *right_begin = a[5], *left_end = a[6], *m = a[7];
    const ChainMask on = C == 1 ? ChainMask::all(1) : alternate(C);
    std::vector<double> fused(C * 6, -1.0);
    v.subtree_checks({S, prefix, left_rho, left_begin, p, right_begin, left_end}, m, on,
                     fused.data());
    double *right_rho = v.make(), *both = v.make();
    v.add(right_rho, S, prefix, -1, on);
    v.add(both, left_rho, right_rho, 1, on);
    using K = lockstep::DotKind;
    const DotSpec specs[6] = {{left_begin, both, nullptr, K::product},
                              {p, both, nullptr, K::product},
                              {left_begin, left_rho, right_begin, K::product},
                              {right_begin, left_rho, right_begin, K::product},
                              {left_end, right_rho, left_end, K::product},
                              {p, right_rho, left_end, K::product}};
    std::vector<double> unfused(C * 6);
    v.dots(specs, 6, m, on, unfused.data());
    for (long k = 0; k < C * 6; ++k) {
      INFO("chain " << k / 6 << ", sum " << k % 6);
      CHECK(fused[k] == Approx(unfused[k]).epsilon(1e-13).margin(1e-13));
      if (!on[k / 6]) CHECK(fused[k] == 0);
    }
  });
}

TEST_CASE("chain vectors: NUTS's fused leaf equals its operations one by one",
          "[chain_vectors][nuts]") {
  // ChainVectors::leaf (LeafTerm) against the operations NUTS made for a
  // leaf before: the kick, the kinetic energy's dot product, the subtree's
  // rho and first momentum, three starts, two merge checks and a left store.
  // The first check and the left store read the level-0 prefix and begin
  // that the same pass writes. Vectors must be equal to the last bit (each
  // element is the same expression), sums up to the order of their terms.
  std::mt19937 rng(43);
  each_place({1L, 7L, 300L}, [&](ChainVectors& v, long C, long D) {
    // 0 p, 1 g, 2 sd, 3 S, 4 first, 5-7 begin, 8-10 prefix, 11 left_end,
    // 12 left_rho, 13-16 check 0's left_rho, left_begin, left_end and check
    // 1's prefix, 17-20 check 1's left_rho, left_begin, right_begin,
    // left_end, 21 m
    const int n = 22;
    std::vector<std::vector<double>> host;
    for (int k = 0; k < n; ++k)
      host.push_back(random_values(C * D, rng, k == 2 || k == 21 ? 0.1 : -2, 2));
    const std::vector<double*> f = uploaded(v, host), r = uploaded(v, host);
    const ChainMask on = C == 1 ? ChainMask::all(1) : alternate(C);
    ChainMask back;
    for (long c = 0; c < C; c += 3) back.set(c);
    const double kick = 0.037;
    auto check0 = [](const std::vector<double*>& a) {
      return lockstep::SubtreeVectors{a[3], a[8], a[13], a[14], a[0], a[5], a[15]};
    };
    auto check1 = [](const std::vector<double*>& a) {
      return lockstep::SubtreeVectors{a[3], a[16], a[17], a[18], a[0], a[19], a[20]};
    };
    lockstep::LeafVectors lv{};
    lv.p = f[0], lv.g = f[1], lv.kick = kick, lv.sd = f[2], lv.S = f[3], lv.first = f[4];
    lv.starts = 3;
    for (int j = 0; j < 3; ++j) lv.begin[j] = f[5 + j], lv.prefix[j] = f[8 + j];
    lv.left_end = f[11], lv.left_rho = f[12], lv.left_prefix = f[8];
    lv.checks = 2;
    lv.check[0] = check0(f), lv.check[1] = check1(f);
    REQUIRE(lv.sums() == 13);
    std::vector<double> fused(C * 13, -1.0);
    v.leaf(lv, f[21], on, back, fused.data());

    // one by one, on the copy r
    v.leapfrog(nullptr, nullptr, r[0], r[1], r[21], kick, 1.0, false, on, back);
    const DotSpec kin{r[0], r[2], nullptr, lockstep::DotKind::square};
    std::vector<double> unfused(C * 13, 0.0), part(C * 6);
    v.dots(&kin, 1, r[21], on, part.data());
    for (long c = 0; c < C; ++c) unfused[c * 13] = part[c];
    v.add(r[3], r[3], r[0], 1, on);
    v.copy(r[4], r[0], on);
    for (int j = 0; j < 3; ++j) {
      v.copy(r[5 + j], r[0], on);
      v.add(r[8 + j], r[3], r[0], -1, on);
    }
    for (int j = 0; j < 2; ++j) {
      v.subtree_checks(j == 0 ? check0(r) : check1(r), r[21], on, part.data());
      for (long c = 0; c < C; ++c)
        for (int s = 0; s < 6; ++s) unfused[c * 13 + 1 + 6 * j + s] = part[c * 6 + s];
    }
    v.copy(r[11], r[0], on);
    v.add(r[12], r[3], r[8], -1, on);

    for (long k = 0; k < C * 13; ++k) {
      INFO("chain " << k / 13 << ", sum " << k % 13);
      CHECK(fused[k] == Approx(unfused[k]).epsilon(1e-13).margin(1e-13));
      if (!on[k / 13]) CHECK(fused[k] == 0);
    }
    std::vector<double> got(C * D), want(C * D);
    for (int a = 0; a < n; ++a) {
      v.download(got.data(), f[a]);
      v.download(want.data(), r[a]);
      for (long k = 0; k < C * D; ++k) {
        INFO("vector " << a << ", element " << k);
        CHECK(got[k] == want[k]);
        if (!on[k / D]) CHECK(got[k] == host[a][k]);  // chains outside `on` untouched
      }
    }
  });
}

TEST_CASE("chain vectors: NUTS's fused leaf with level 0's prefix inline, as NUTS calls it",
          "[chain_vectors][nuts]") {
  // What NutsTrajectory asks of an odd leaf (a level-0 merge check whose
  // prefix is null, S - p, whose right begin is the leaf's own momentum and
  // whose left end is the left sibling's begin, then a level-1 check) and of
  // an even one (a start shared by its levels, and the level-0 left store:
  // no left end, the prefix S - p), against the operations one by one with
  // the prefix S - p made by add(). Dims past the CPU pass's chunk of 512
  // elements, so that the chunk's inline prefixes change within a vector.
  std::mt19937 rng(47);
  each_place({5L, 1300L}, [&](ChainVectors& v, long C, long D) {
    // 0 p, 1 g, 2 sd, 3 S, 4 begin, 5 prefix, 6 left_rho, 7 check 0's
    // left_rho, 8 its left_begin, 9-13 check 1's prefix, left_rho,
    // left_begin, right_begin, left_end, 14 m
    const int n = 15;
    std::vector<std::vector<double>> host;
    for (int k = 0; k < n; ++k)
      host.push_back(random_values(C * D, rng, k == 2 || k == 14 ? 0.1 : -2, 2));
    const ChainMask on = C == 1 ? ChainMask::all(1) : alternate(C);
    ChainMask back;
    for (long c = 0; c < C; c += 2) back.set(c);
    const double kick = -0.021;
    for (const bool odd : {true, false}) {
      INFO((odd ? "odd" : "even") << " leaf");
      const std::vector<double*> f = uploaded(v, host), r = uploaded(v, host);
      auto check0 = [](const std::vector<double*>& a, const double* prefix) {
        return lockstep::SubtreeVectors{a[3], prefix, a[7], a[8], a[0], a[0], a[8]};
      };
      auto check1 = [](const std::vector<double*>& a) {
        return lockstep::SubtreeVectors{a[3], a[9], a[10], a[11], a[0], a[12], a[13]};
      };
      lockstep::LeafVectors lv{};
      lv.p = f[0], lv.g = f[1], lv.kick = kick, lv.sd = f[2], lv.S = f[3];
      if (odd) {
        lv.checks = 2;
        lv.check[0] = check0(f, nullptr), lv.check[1] = check1(f);
      } else {
        lv.starts = 1;
        lv.begin[0] = f[4], lv.prefix[0] = f[5];
        lv.left_rho = f[6];  // left_end and left_prefix null
      }
      const int sums = lv.sums();
      std::vector<double> fused(C * sums, -1.0);
      v.leaf(lv, f[14], on, back, fused.data());

      v.leapfrog(nullptr, nullptr, r[0], r[1], r[14], kick, 1.0, false, on, back);
      const DotSpec kin{r[0], r[2], nullptr, lockstep::DotKind::square};
      std::vector<double> unfused(C * sums, 0.0), part(C * 6);
      v.dots(&kin, 1, r[14], on, part.data());
      for (long c = 0; c < C; ++c) unfused[c * sums] = part[c];
      v.add(r[3], r[3], r[0], 1, on);
      double* inline_prefix = v.make();
      v.add(inline_prefix, r[3], r[0], -1, on);
      if (odd) {
        for (int j = 0; j < 2; ++j) {
          v.subtree_checks(j == 0 ? check0(r, inline_prefix) : check1(r), r[14], on,
                           part.data());
          for (long c = 0; c < C; ++c)
            for (int s = 0; s < 6; ++s) unfused[c * sums + 1 + 6 * j + s] = part[c * 6 + s];
        }
      } else {
        v.copy(r[4], r[0], on);
        v.copy(r[5], inline_prefix, on);
        v.add(r[6], r[3], inline_prefix, -1, on);
      }
      for (long k = 0; k < C * sums; ++k) {
        INFO("chain " << k / sums << ", sum " << k % sums);
        CHECK(fused[k] == Approx(unfused[k]).epsilon(1e-13).margin(1e-13));
        if (!on[k / sums]) CHECK(fused[k] == 0);
      }
      std::vector<double> got(C * D), want(C * D);
      for (int a = 0; a < n; ++a) {
        v.download(got.data(), f[a]);
        v.download(want.data(), r[a]);
        long differ = 0;
        for (long k = 0; k < C * D; ++k) differ += got[k] != want[k];
        INFO("vector " << a);
        CHECK(differ == 0);
      }
    }
  });
}

// Every chain, and every third chain from the second on (the first alone when
// there is one): the chains a masked operation reads.
std::vector<ChainMask> some_masks(long C) {
  ChainMask thirds;
  for (long c = C > 1 ? 1 : 0; c < C; c += 3) thirds.set(c);
  return {ChainMask::all(C), thirds};
}

TEST_CASE("chain vectors: the mean over some chains, in every row", "[chain_vectors]") {
  std::mt19937 rng(31);
  each_place({1L, 7L, 300L}, [&](ChainVectors& v, long C, long D) {
    for (const ChainMask& from : some_masks(C)) {
      const long n = from.count();
      INFO("chains averaged: " << n);
      const std::vector<double> a = random_values(C * D, rng);
      double *x = v.make(), *mean = v.make();
      v.upload(x, a.data());
      v.mean_over_chains(mean, x, from);
      std::vector<double> got(C * D);
      v.download(got.data(), mean);
      for (long i = 0; i < D; ++i) {
        double want = 0;
        for (long c = 0; c < C; ++c)
          if (from[c]) want += a[c * D + i] / static_cast<double>(n);
        for (long c = 0; c < C; ++c) CHECK(got[c * D + i] == want);
      }
    }
  });
}

TEST_CASE("chain vectors: warmup's window sums and the metric from them", "[chain_vectors]") {
  std::mt19937 rng(37);
  each_place({1L, 7L, 300L}, [&](ChainVectors& v, long C, long D) {
    for (bool pooled : {true, false}) {
      INFO((pooled ? "pooled" : "per chain"));
      const long rows = pooled ? 1 : C;
      std::vector<double> mean(rows * D, 0.0), m2(rows * D, 0.0);
      double *x = v.make(), *mean_v = v.make(), *m2_v = v.make(), *sd = v.make(), *sd2 = v.make();
      double n = 0;  // draws per row so far
      for (int draw = 0; draw < 4; ++draw) {
        // pooled, the chains in `from` alone, which change from draw to draw
        const ChainMask from = some_masks(C)[draw % 2];
        const std::vector<double> a = random_values(C * D, rng);
        v.upload(x, a.data());
        v.window_update(mean_v, m2_v, x, n, pooled, from);
        // Welford by hand
        double pooled_count = n;
        for (long c = 0; c < C; ++c) {
          if (pooled && !from[c]) continue;
          const long r = pooled ? 0 : c;
          const double count = pooled ? (pooled_count += 1) : n + 1;
          for (long i = 0; i < D; ++i) {
            const double val = a[c * D + i], d = val - mean[r * D + i];
            mean[r * D + i] += d / count;
            m2[r * D + i] += d * (val - mean[r * D + i]);
          }
        }
        n += pooled ? from.count() : 1;
      }
      std::vector<double> got_mean(C * D), got_m2(C * D);
      v.download(got_mean.data(), mean_v);
      v.download(got_m2.data(), m2_v);
      for (long k = 0; k < rows * D; ++k) {
        CHECK(got_mean[k] == mean[k]);
        CHECK(got_m2[k] == m2[k]);
      }
      v.metric_from_window(sd, sd2, m2_v, n, pooled);
      std::vector<double> got_sd(C * D), got_sd2(C * D);
      v.download(got_sd.data(), sd);
      v.download(got_sd2.data(), sd2);
      for (long c = 0; c < C; ++c)
        for (long i = 0; i < D; ++i) {
          const double var = m2[(pooled ? 0 : c) * D + i] / (n - 1);
          const double want = std::sqrt(n / (n + 5) * var + 1e-3 * 5 / (n + 5));
          CHECK(got_sd[c * D + i] == Approx(want).epsilon(1e-15));
          CHECK(got_sd2[c * D + i] == got_sd[c * D + i] * got_sd[c * D + i]);
        }
    }
  });
}

// The same sampler on the cpu and emulated backends: eight schools' shape
// from one start; the emulated backend's sums differ only in their last bits,
// far too little to change a decision in a few iterations. The trajectories
// amplify those bits: after 8 warmup and 3 kept iterations of nuts a state
// differed by 2e-10 relative, so the traces are compared to 1e-8 (a changed
// decision would differ in the first digits).
// min_steps: the fewest leapfrog steps per chain-iteration expected on average.
template <class Sampler, class Settings>
void emulated_follows_cpu(const Settings& s, double min_steps) {
  const Program p = eight_schools_shape();
  const long C = 3;
  std::vector<double> init(C * 9);
  for (size_t k = 0; k < init.size(); ++k) init[k] = 0.1 * static_cast<double>(k % 7) - 0.3;
  for (int warmup : {0, 8}) {
    INFO("warmup " << warmup);
    Executor<double> cpu_ex(p, C, Backend::cpu);
    const std::vector<double> cpu = sampler_trace<Sampler>(cpu_ex, s, init, warmup, 3, 4);
    double steps = 0;
    for (size_t k = 0; k + 1 < cpu.size(); k += 9 * C + 2 * C)
      for (long c = 0; c < C; ++c) steps += cpu[k + 9 * C + C + c];
    CHECK(steps >= min_steps * C * (warmup + 5));
    for (EmulatedGeometry g : {EmulatedGeometry{3, 5}, EmulatedGeometry{2, 4}}) {
      Executor<double> emu_ex(p, C, Backend::emulated, g);
      const std::vector<double> emu = sampler_trace<Sampler>(emu_ex, s, init, warmup, 3, 4);
      REQUIRE(emu.size() == cpu.size());
      for (size_t k = 0; k < cpu.size(); ++k) {
        INFO("trace entry " << k << ": " << std::setprecision(17) << emu[k] << " against "
                            << cpu[k]);
        CHECK(emu[k] == Approx(cpu[k]).epsilon(1e-8));
      }
    }
  }
}

TEST_CASE("nuts, hmc and chees on the emulated backend follow them on the cpu backend",
          "[chain_vectors][nuts][hmc][chees][emulated]") {
  lockstep::NutsSettings nuts;
  nuts.epsilon = 0.7;
  emulated_follows_cpu<lockstep::Nuts>(nuts, 3);
  lockstep::HmcSettings hmc;
  hmc.epsilon = 0.5;
  emulated_follows_cpu<lockstep::Hmc>(hmc, hmc.Lmin);
  lockstep::CheesSettings chees;
  chees.epsilon = 0.5;
  emulated_follows_cpu<lockstep::Chees>(chees, 1);  // its trajectory starts at one step
}

TEST_CASE("nuts refuses more chains than its masks hold", "[chain_vectors][nuts][errors]") {
  sampler_tests::IndependentGaussian t({0}, {1}, lockstep::max_mask_chains + 1);
  std::vector<double> init(lockstep::max_mask_chains + 1, 0.0);
  CHECK_THROWS_AS(lockstep::Nuts(t, lockstep::NutsSettings(), init, 1, 2), std::invalid_argument);
}
