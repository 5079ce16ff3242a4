// Philox4x32-10 (Salmon et al. 2011), a counter-based generator: the numbers
// are a pure function of (key, counter), so each chain has its own stream
// (the chain index is part of the counter) and draws the same numbers on
// every backend. The key comes from R's RNG, so set.seed() repeats a run.
#ifndef LOCKSTEP_RNG_HPP
#define LOCKSTEP_RNG_HPP

#include <cmath>
#include <cstdint>
#include "hd.hpp"

namespace lockstep {

struct Philox4x32 {
  uint32_t v[4];
};

LS_HD Philox4x32 philox4x32_10(Philox4x32 ctr, uint32_t k0, uint32_t k1) {
  const uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u, W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = static_cast<uint64_t>(M0) * ctr.v[0];
    const uint64_t p1 = static_cast<uint64_t>(M1) * ctr.v[2];
    const uint32_t hi0 = static_cast<uint32_t>(p0 >> 32), lo0 = static_cast<uint32_t>(p0);
    const uint32_t hi1 = static_cast<uint32_t>(p1 >> 32), lo1 = static_cast<uint32_t>(p1);
    ctr = Philox4x32{{hi1 ^ ctr.v[1] ^ k0, lo1, hi0 ^ ctr.v[3] ^ k1, lo0}};
    k0 += W0;
    k1 += W1;
  }
  return ctr;
}

// One stream: a key shared by a run, a stream id (chain, or a run-wide id) and
// a 64-bit position that advances with each block of four numbers.
struct Stream {
  uint32_t key0, key1;
  uint32_t id;
  uint32_t purpose;  // separates independent uses within one stream id
  uint64_t position;

  LS_HD Philox4x32 next() {
    Philox4x32 ctr{{static_cast<uint32_t>(position), static_cast<uint32_t>(position >> 32), id,
                    purpose}};
    ++position;
    return philox4x32_10(ctr, key0, key1);
  }
  // Uniform on (0, 1) from 52 random bits, at the centres of 2^52 equal cells:
  // never exactly 0 or 1 (with 53 bits, the top cell's centre rounds to 1).
  LS_HD static double to_unit(uint32_t hi, uint32_t lo) {
    const uint64_t bits = ((static_cast<uint64_t>(hi) << 20) ^ (lo >> 12)) & ((1ull << 52) - 1);
    return (static_cast<double>(bits) + 0.5) * (1.0 / 4503599627370496.0);
  }
  LS_HD double uniform() {
    const Philox4x32 r = next();
    return to_unit(r.v[0], r.v[1]);
  }
  // Two independent standard normals (Box-Muller).
  LS_HD void normal2(double* a, double* b) {
    const Philox4x32 r = next();
    const double u1 = to_unit(r.v[0], r.v[1]), u2 = to_unit(r.v[2], r.v[3]);
    const double rad = sqrt(-2 * log(u1)), ang = 6.283185307179586476925 * u2;
    *a = rad * cos(ang);
    *b = rad * sin(ang);
  }
  // Without advancing: the normal that drawing pairs in order from here
  // (normal2) gives the i-th value (a for even i, b for odd), and the i-th
  // of uniform() in order. What a part of a state draws for the coordinate
  // whose index in the whole state is i, as the whole state would.
  LS_HD double normal_at(uint64_t i) const {
    Stream s = *this;
    s.position += i / 2;
    double a, b;
    s.normal2(&a, &b);
    return i % 2 == 0 ? a : b;
  }
  LS_HD double uniform_at(uint64_t i) const {
    Stream s = *this;
    s.position += i;
    return s.uniform();
  }
};

// e[k] = stream.normal_at(first + index[k]) for k in [0, n) (index nullptr:
// k itself), each pair of consecutive indices (an even one and the next)
// from one Box-Muller draw instead of two: half the generator's work for a
// contiguous run, the same numbers. What a part of a state (an MPI rank's
// coordinates, by their index in the whole state) draws as the whole would.
inline void normals_at(const Stream& stream, uint64_t first, const long* index, long n, double* e) {
  auto at = [&](long k) { return first + static_cast<uint64_t>(index ? index[k] : k); };
  for (long k = 0; k < n;) {
    const uint64_t a = at(k);
    if (a % 2 == 0 && k + 1 < n && at(k + 1) == a + 1) {
      Stream s = stream;
      s.position += a / 2;
      s.normal2(&e[k], &e[k + 1]);
      k += 2;
    } else {
      e[k++] = stream.normal_at(a);
    }
  }
}

}  // namespace lockstep

#endif
