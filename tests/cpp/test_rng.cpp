// Philox4x32-10 (rng.hpp): known answers from the Random123 distribution
// (kat_vectors, philox4x32_10), then the statistical and stream properties the
// samplers rely on.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <set>
#include <vector>

#include "lockstep/rng.hpp"

using lockstep::Philox4x32;
using lockstep::Stream;

namespace {

void check_kat(Philox4x32 ctr, uint32_t k0, uint32_t k1, Philox4x32 expected) {
  const Philox4x32 got = lockstep::philox4x32_10(ctr, k0, k1);
  for (int i = 0; i < 4; ++i) {
    INFO("word " << i << ": got 0x" << std::hex << got.v[i] << ", expected 0x" << expected.v[i]);
    CHECK(got.v[i] == expected.v[i]);
  }
}

Stream stream(uint32_t id, uint32_t key0 = 12345, uint32_t key1 = 67890, uint32_t purpose = 0) {
  return Stream{key0, key1, id, purpose, 0};
}

}  // namespace

TEST_CASE("Philox4x32-10 known-answer tests from Random123", "[rng][kat]") {
  check_kat({{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}});
  check_kat({{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}}, 0xffffffffu, 0xffffffffu,
            {{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}});
  check_kat({{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}}, 0xa4093822u, 0x299f31d0u,
            {{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}});
}

TEST_CASE("Stream: the counter is (position, id, purpose) under the stream's key",
          "[rng][stream]") {
  Stream s = stream(7, 11, 13, 3);
  s.position = (uint64_t(5) << 32) | 9u;
  const Philox4x32 a = s.next();
  const Philox4x32 b = lockstep::philox4x32_10({{9u, 5u, 7u, 3u}}, 11, 13);
  for (int i = 0; i < 4; ++i) CHECK(a.v[i] == b.v[i]);
  CHECK(s.position == ((uint64_t(5) << 32) | 10u));
}

TEST_CASE("uniforms lie in (0, 1) with the mean and variance of U(0, 1)", "[rng][uniform]") {
  Stream s = stream(0);
  const int n = 200000;
  double sum = 0, sum2 = 0, lo = 1, hi = 0;
  long outside = 0;
  for (int i = 0; i < n; ++i) {
    const double u = s.uniform();
    outside += !(u > 0 && u < 1);
    sum += u;
    sum2 += u * u;
    lo = std::fmin(lo, u);
    hi = std::fmax(hi, u);
  }
  CHECK(outside == 0);
  const double mean = sum / n, var = sum2 / n - mean * mean;
  // sd of the mean: sqrt(1/12 / n) = 6.5e-4; of the variance: sqrt(1/180 / n) = 1.7e-4
  CHECK(std::fabs(mean - 0.5) < 5 * std::sqrt(1.0 / 12 / n));
  CHECK(std::fabs(var - 1.0 / 12) < 5 * std::sqrt(1.0 / 180 / n));
  CHECK(lo < 1e-4);
  CHECK(hi > 1 - 1e-4);
  // deciles hold a tenth each: a chi-squared test with 9 degrees of freedom
  Stream t = stream(1);
  std::vector<int> bins(10, 0);
  for (int i = 0; i < n; ++i) ++bins[static_cast<int>(t.uniform() * 10)];
  double chi2 = 0;
  for (int b : bins) chi2 += (b - n / 10.0) * (b - n / 10.0) / (n / 10.0);
  CHECK(chi2 < 33.7);  // qchisq(1 - 1e-4, 9) = 33.72
}

TEST_CASE("to_unit never returns 0 or 1, even at the extreme bit patterns", "[rng][uniform]") {
  // rng.hpp promises a uniform on (0, 1) "never exactly 0 or 1". With all 53
  // bits set, bits + 0.5 = 2^53 - 0.5 is not a double and rounds (to even) to
  // 2^53, so the result is exactly 1.
  CHECK(Stream::to_unit(0, 0) > 0);
  CHECK(Stream::to_unit(0xffffffffu, 0xffffffffu) < 1);
}

TEST_CASE("normals have mean 0, variance 1 and no correlation within a pair", "[rng][normal]") {
  Stream s = stream(2);
  const int pairs = 100000, n = 2 * pairs;
  double sum = 0, sum2 = 0, sum4 = 0, cross = 0;
  long non_finite = 0;
  for (int i = 0; i < pairs; ++i) {
    double a, b;
    s.normal2(&a, &b);
    non_finite += !std::isfinite(a) + !std::isfinite(b);
    sum += a + b;
    sum2 += a * a + b * b;
    sum4 += a * a * a * a + b * b * b * b;
    cross += a * b;
  }
  CHECK(non_finite == 0);
  const double mean = sum / n, var = sum2 / n - mean * mean;
  // sd of the mean 1 / sqrt(n); of the variance sqrt(2 / n); of E[ab] 1 / sqrt(pairs)
  CHECK(std::fabs(mean) < 5 / std::sqrt(n));
  CHECK(std::fabs(var - 1) < 5 * std::sqrt(2.0 / n));
  CHECK(std::fabs(cross / pairs) < 5 / std::sqrt(pairs));
  // the fourth moment of a normal is 3 (sd of the estimate sqrt(96 / n))
  CHECK(std::fabs(sum4 / n - 3) < 5 * std::sqrt(96.0 / n));
}

TEST_CASE("streams are deterministic, and distinct streams differ", "[rng][stream]") {
  const int n = 64;
  auto draws = [&](Stream s) {
    std::vector<double> v(n);
    for (double& x : v) x = s.uniform();
    return v;
  };
  // the same (key, id, purpose) repeats exactly
  CHECK(draws(stream(3)) == draws(stream(3)));
  // another id, key word or purpose gives other numbers
  const std::vector<double> base = draws(stream(3));
  const std::vector<std::vector<double>> others = {
      draws(stream(4)), draws(stream(3, 12346, 67890)), draws(stream(3, 12345, 67891)),
      draws(stream(3, 12345, 67890, 1))};
  for (const auto& o : others) {
    int equal = 0;
    for (int i = 0; i < n; ++i) equal += o[i] == base[i];
    CHECK(equal == 0);
  }
  // successive positions of one stream do not repeat
  Stream s = stream(5);
  std::set<double> seen;
  for (int i = 0; i < 10000; ++i) seen.insert(s.uniform());
  CHECK(seen.size() == 10000);
  // uniforms of neighbouring streams are uncorrelated
  Stream a = stream(10), b = stream(11);
  const int m = 50000;
  double sab = 0;
  for (int i = 0; i < m; ++i) sab += (a.uniform() - 0.5) * (b.uniform() - 0.5);
  // sd of the mean product: (1/12) / sqrt(m)
  CHECK(std::fabs(sab / m) < 5 * (1.0 / 12) / std::sqrt(m));
}

TEST_CASE("normals_at: the normals normal_at gives, by pairs where indices run on", "[rng]") {
  const lockstep::Stream stream{5u, 6u, 2u, 11u, 1000u};
  std::vector<double> e(9), f(5);
  lockstep::normals_at(stream, 0, nullptr, 9, e.data());
  for (long k = 0; k < 9; ++k) CHECK(e[k] == stream.normal_at(static_cast<uint64_t>(k)));
  // a part's coordinates by their index in the whole, from an odd first
  const std::vector<long> index = {0, 1, 4, 5, 6, 9};
  lockstep::normals_at(stream, 3, index.data(), 5, f.data());
  for (long k = 0; k < 5; ++k) CHECK(f[k] == stream.normal_at(static_cast<uint64_t>(3 + index[k])));
  CHECK(f[0] != f[1]);
}
