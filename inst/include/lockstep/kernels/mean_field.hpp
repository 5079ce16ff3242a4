// svi()'s mean-field guide (svi.hpp) as lanes-policy bodies, so that a guide
// can live where its target's vectors do (sampler/chain_vectors.hpp): in a
// GPU's memory, next to the executor's buffers, with only the particles'
// per-chain sums and the bound's weights crossing to and from the host each
// iteration. The guide's parameters phi = (mu [dim], omega [dim]) are one
// flat array; its particles z and normals eps are [chains, dim] arrays.
//
// The per-coordinate arithmetic is written once here (mean_field_particle,
// mean_field_gradient_at) and the host's guide (svi.cpp) calls the same
// functions, as its optimiser's step is FirstOrderStep wherever the guide
// lives (kernels/first_order_step.hpp), so the two paths give the same
// numbers; only the order of the per-chain sums differs on a GPU's lanes.
#ifndef LOCKSTEP_KERNELS_MEAN_FIELD_HPP
#define LOCKSTEP_KERNELS_MEAN_FIELD_HPP

#include <cmath>
#include <cstdint>

#include "../lanes.hpp"
#include "../rng.hpp"

namespace lockstep {

// A particle's coordinate: mu + sigma e, sigma = exp(omega).
LS_HD_INLINE double mean_field_particle(double mu, double sigma, double e) { return mu + sigma * e; }

// Coordinate i's entries of the loss's gradient (minus the bound's) for a
// mean-field guide, from the particles' gradients g [chains, dim] of the log
// density and their normals eps, weighted by v [chains] (the bound's
// softmax, 1 / chains for the ELBO), particles in order:
//   d mu_i    = -sum_c v_c g_ci
//   d omega_i = -sum_c v_c (g_ci exp(omega_i) eps_ci + 1)
// (log q's own dependence on omega at fixed eps is the 1).
LS_HD_INLINE void mean_field_gradient_at(long i, long chains, long dim, double omega,
                                         const double* g, const double* eps, const double* v,
                                         double* d_mu, double* d_omega) {
  const double sigma = exp(omega);
  double gm = 0, go = 0;
  for (long c = 0; c < chains; ++c) {
    const double gc = g[c * dim + i];
    gm -= v[c] * gc;
    go -= v[c] * (gc * sigma * eps[c * dim + i] + 1);
  }
  *d_mu = gm;
  *d_omega = go;
}

// Where an iteration's normals come from: chain c's stream (key0, key1, c,
// purpose) at `position`; coordinate i takes the stream's normal i
// (Stream::normal_at), as the host's guide does (normals_at).
struct MeanFieldDraw {
  uint32_t key0 = 0, key1 = 0, purpose = 0;
  uint64_t position = 0;
};

// The term of a ChainSum (chain_sum.hpp) over the chains [c0, c1) that
// draws the particles: element (c, i) writes eps[c, i] and z[c, i] and adds
// omega_i + eps_ci^2 / 2 to chain c's sum, which is -log q(z_c) but for its
// constant dim log(2 pi) / 2. A point mass (phi = mu alone: svi()'s delta
// guide, a limit of the mean field) puts every particle at mu, with eps 0,
// and adds 0.
struct MeanFieldParticlesTerm {
  const double* phi;  // [2 dim]: mu, omega; [dim] for a point mass
  double *z, *eps;    // [chains, dim]
  MeanFieldDraw draw;
  long c0, dim;
  bool point = false;
  LS_HD double operator()(long t, long i) const {
    const long c = c0 + t, k = c * dim + i;
    if (point) {
      eps[k] = 0;
      z[k] = phi[i];
      return 0;
    }
    const Stream s{draw.key0, draw.key1, static_cast<uint32_t>(c), draw.purpose, draw.position};
    const double e = s.normal_at(static_cast<uint64_t>(i));
    const double omega = phi[dim + i];
    eps[k] = e;
    z[k] = mean_field_particle(phi[i], exp(omega), e);
    return omega + 0.5 * e * e;
  }
};

// The term of a ChainSum over one "chain" of dim elements that writes the
// loss's gradient grad [2 dim] (mean_field_gradient_at; [dim], its d mu
// alone, for a point mass) and sums 0 x each of its entries: NaN where one
// is not finite, so that the caller learns in the same pass whether the
// step may be taken.
struct MeanFieldGradientTerm {
  const double *phi, *g, *eps, *v;  // v: [chains], in the memory the body runs in
  double* grad;                     // [2 dim]; [dim] for a point mass
  long chains, dim;
  bool point = false;
  LS_HD double operator()(long, long i) const {
    double gm, go;
    // (a point mass's omega is absent: its eps are 0, so any value serves)
    mean_field_gradient_at(i, chains, dim, point ? 0.0 : phi[dim + i], g, eps, v, &gm, &go);
    grad[i] = gm;
    if (point) return 0 * gm;
    grad[dim + i] = go;
    return 0 * gm + 0 * go;
  }
};

}  // namespace lockstep

#endif
