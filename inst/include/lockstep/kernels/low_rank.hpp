// svi()'s low-rank guide (svi.hpp) as lanes-policy bodies, so that it can
// live where its target's vectors do (a GPU's memory), as the mean-field
// guide does (kernels/mean_field.hpp). The guide's parameters phi = (mu
// [dim], W [dim, k] row-major, rho [dim]) are one flat array, d = exp(rho);
// its particles z, their last dim normals eps and u = Sigma^-1 (z - mu)
// are [chains, dim] arrays. What is k x k or a per-particle k-vector (K =
// I + W' diag(d^-2) W and its inverse, each particle's first k normals e1,
// K^-1 p) is the host's, uploaded to small flat arrays.
//
// The per-coordinate arithmetic is written once here and the host's guide
// (svi.cpp) calls the same functions, so the two give the same numbers but
// for the order of the sums over coordinates.
#ifndef LOCKSTEP_KERNELS_LOW_RANK_HPP
#define LOCKSTEP_KERNELS_LOW_RANK_HPP

#include <cmath>
#include <cstdint>

#include "../lanes.hpp"
#include "../rng.hpp"
#include "mean_field.hpp"

namespace lockstep {

// d^-2 from rho (d = exp(rho)).
LS_HD_INLINE double low_rank_inv_d2(double rho) {
  const double d = exp(rho);
  return 1 / (d * d);
}

// Row a of Sigma^-1 W = diag(d^-2) W K^-1 into sw [k], from W's row Wa and
// K^-1 [k, k]; returns diag(Sigma^-1)_a.
LS_HD_INLINE double low_rank_factor_at(const double* Wa, const double* kinv, long k, double delta,
                                       double* sw) {
  double diag_correction = 0;
  for (long b = 0; b < k; ++b) {
    double s = 0;
    for (long c = 0; c < k; ++c) s += Wa[c] * kinv[c * k + b];
    sw[b] = delta * s;
    diag_correction += delta * s * Wa[b] * delta;
  }
  return delta - diag_correction;
}

// A particle's offset from mu at a coordinate: d e2 + W_a . e1.
LS_HD_INLINE double low_rank_offset(const double* Wa, const double* e1, long k, double d,
                                    double e2) {
  double r = d * e2;
  for (long b = 0; b < k; ++b) r += Wa[b] * e1[b];
  return r;
}

// u_a = d_a^-2 (z_a - mu_a) - d_a^-2 W_a . K^-1 p (kp: the particle's K^-1 p).
LS_HD_INLINE double low_rank_whitened(const double* Wa, const double* kp, long k, double delta,
                                      double z, double mu) {
  double s = 0;
  for (long b = 0; b < k; ++b) s += Wa[b] * kp[b];
  return delta * (z - mu) - delta * s;
}

// Coordinate a's entries of the loss's gradient: d mu_a (-sum_c v_c g_ca)
// into *gmu, d W_a into gw [k], d rho_a into *grho (svi.hpp's formulas),
// the particles in order; g, u, eps [chains, dim], e1 and uw [chains, k].
LS_HD_INLINE void low_rank_gradient_at(long a, long chains, long dim, long k, double rho, const double* g, const double* u,
                                       const double* eps, const double* e1, const double* uw,
                                       const double* sw, double sdiag, const double* v,
                                       double* gmu, double* gw, double* grho) {
  const double d = exp(rho);
  double m = 0, r = 0;
  for (long b = 0; b < k; ++b) gw[b] = 0;
  for (long c = 0; c < chains; ++c) {
    const double gc = g[c * dim + a], uc = u[c * dim + a], gu = gc + uc;
    m -= v[c] * gc;
    for (long b = 0; b < k; ++b)
      gw[b] -= v[c] * (gu * e1[c * k + b] - uc * uw[c * k + b] + sw[b]);
    r -= v[c] * (gu * d * eps[c * dim + a] - d * d * (uc * uc - sdiag));
  }
  *gmu = m;
  *grho = r;
}

// The terms of ChainSums (chain_sum.hpp) and the bodies, over the whole
// state (a guide on the vectors is never a rank's part):

// Rows t in [0, k k]: sum_a W_ab W_ac d_a^-2 (t = b k + c); row k k: sum_a
// log d_a. (c0: the first row of the ChainSum's group.)
struct LowRankGramTerm {
  const double* phi;
  long k, dim, c0;
  LS_HD double operator()(long t, long a) const {
    const long row = c0 + t;
    const double rho = phi[dim + dim * k + a];
    if (row == k * k) return log(exp(rho));
    const double* Wa = phi + dim + a * k;
    return Wa[row / k] * Wa[row % k] * low_rank_inv_d2(rho);
  }
};

// Sigma^-1 W (sw [dim, k]) and diag(Sigma^-1) (sdiag [dim]) from K^-1, one
// lane per coordinate.
struct LowRankFactorBody {
  int phases = 1, shared_per_lane = 0;
  const double *phi, *kinv;
  double *sw, *sdiag;
  long k, dim;
  LS_HD void operator()(int, const Lane& lane) const {
    for (long a = lane.index; a < dim; a += lane.count)
      sdiag[a] = low_rank_factor_at(phi + dim + a * k, kinv, k,
                                    low_rank_inv_d2(phi[dim + dim * k + a]), sw + a * k);
  }
};

// The particles: element (c, a) draws chain c's normal k + a (its first k,
// e1, the host drew) into eps and writes z = mu + d eps + W_a . e1.
struct LowRankParticlesBody {
  int phases = 1, shared_per_lane = 0;
  const double *phi, *e1;  // e1 [chains, k]
  double *z, *eps;
  MeanFieldDraw draw;
  long chains, k, dim;
  LS_HD void operator()(int, const Lane& lane) const {
    for (long j = lane.index; j < chains * dim; j += lane.count) {
      const long c = j / dim, a = j % dim;
      const Stream s{draw.key0, draw.key1, static_cast<uint32_t>(c), draw.purpose, draw.position};
      const double e = s.normal_at(static_cast<uint64_t>(k + a));
      eps[j] = e;
      z[j] = phi[a] + low_rank_offset(phi + dim + a * k, e1 + c * k, k,
                                      exp(phi[dim + dim * k + a]), e);
    }
  }
};

// Rows t = c (k + 1) + s: for s < k, sum_a W_as d_a^-2 r_ca; for s = k,
// sum_a d_a^-2 r_ca^2 (r = z - mu, recomputed from the normals as the host
// does: W' diag(d^-2) r and r' diag(d^-2) r, the particle's p).
struct LowRankProjectTerm {
  const double *phi, *e1, *eps;
  long k, dim, c0;
  LS_HD double operator()(long t, long a) const {
    const long row = c0 + t, c = row / (k + 1), s = row % (k + 1);
    const double* Wa = phi + dim + a * k;
    const double rho = phi[dim + dim * k + a];
    const double delta = low_rank_inv_d2(rho);
    const double r = low_rank_offset(Wa, e1 + c * k, k, exp(rho), eps[c * dim + a]);
    return s < k ? Wa[s] * delta * r : delta * r * r;
  }
};

// Rows t = c k + b: sum_a u_ca W_ab (u' W), where u_ca (low_rank_whitened,
// from kp [chains, k]) is written by row b = 0.
struct LowRankWhitenTerm {
  const double *phi, *kp, *z;
  double* u;
  long k, dim, c0;
  LS_HD double operator()(long t, long a) const {
    const long row = c0 + t, c = row / k, b = row % k;
    const double* Wa = phi + dim + a * k;
    const double uc = low_rank_whitened(Wa, kp + c * k, k, low_rank_inv_d2(phi[dim + dim * k + a]),
                                        z[c * dim + a], phi[a]);
    if (b == 0) u[c * dim + a] = uc;
    return uc * Wa[b];
  }
};

// One row over the coordinates that writes the loss's gradient grad (d mu,
// d W, d rho: phi's layout; low_rank_gradient_at) and sums 0 x each entry:
// NaN where one is not finite.
struct LowRankGradientTerm {
  const double *phi, *g, *u, *eps, *e1, *uw, *sw, *sdiag, *v;
  double* grad;
  long chains, k, dim;
  LS_HD double operator()(long, long a) const {
    double* gw = grad + dim + a * k;
    low_rank_gradient_at(a, chains, dim, k, phi[dim + dim * k + a], g, u, eps,
                         e1, uw, sw + a * k, sdiag[a], v, grad + a, gw,
                         grad + dim + dim * k + a);
    double bad = 0 * grad[a] + 0 * grad[dim + dim * k + a];
    for (long b = 0; b < k; ++b) bad += 0 * gw[b];
    return bad;
  }
};

}  // namespace lockstep

#endif
