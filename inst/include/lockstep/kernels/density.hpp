// A distribution term: the log density of the target summed per chain, with the
// partials of every element added to the adjoints of the target and parameters
// in the same pass. Density terms are sinks of the program whose adjoint is
// one, which is what lets the gradient be fused into the forward pass.
#ifndef LOCKSTEP_KERNELS_DENSITY_HPP
#define LOCKSTEP_KERNELS_DENSITY_HPP

#include "../distributions.hpp"
#include "chain_sum.hpp"
#include "elementwise.hpp"

namespace lockstep {

// One family's term (the family a template argument, so that its math is
// inlined into the element loop instead of dispatched per element).
template <class T, Family F> struct DensityTerm {
  static constexpr int n_params = Dist<F>::n_params;
  double lower, upper;  // truncation
  bool truncated;       // lower or upper finite
  Operand<T> x;
  Operand<T> p[max_dist_params];
  AdjointSink<T> dx;  // data == nullptr: no gradient wanted
  AdjointSink<T> dp[max_dist_params];

  // Sums per chain (ChainSum's slots) for the adjoints of scalar parameters
  // (and a scalar target) that the term's elements all add to, when asked
  // for with with_slots(): slot_x, slot_p[k] their slot, or -1.
  static_assert(max_dist_params == 3, "slot_p's initialiser lists every parameter");
  int n_slots = 0, slot_x = -1, slot_p[max_dist_params] = {-1, -1, -1};

  DensityTerm& with_slots() {
    n_slots = 0;
    slot_x = dx.data && dx.scalar ? n_slots++ : -1;
    for (int k = 0; k < n_params; ++k) slot_p[k] = dp[k].data && dp[k].scalar ? n_slots++ : -1;
    return *this;
  }
  int slots() const { return n_slots; }
  LS_HD void add_sum(long c, int slot, double total) const {
    if (slot == slot_x) dx.add(c, 0, static_cast<T>(total));
    for (int k = 0; k < n_params; ++k)
      if (slot == slot_p[k]) dp[k].add(c, 0, static_cast<T>(total));
  }

  LS_HD double operator()(long c, long i) const { return (*this)(c, i, nullptr); }

  // sums: the chain's slots, or nullptr to add every partial to its adjoint
  LS_HD double operator()(long c, long i, double* sums) const {
    double pv[max_dist_params] = {0}, gp[max_dist_params] = {0}, gx = 0;
    for (int k = 0; k < n_params; ++k) pv[k] = static_cast<double>(p[k].at(c, i));
    const double xv = static_cast<double>(x.at(c, i));
    // Untruncated (the common case) calls the family's lpdf directly, so that
    // its math is inlined into the element loop.
    const double lp = truncated ? truncated_lpdf_of<F>(xv, pv, lower, upper, &gx, gp)
                                : Dist<F>::lpdf(xv, pv, &gx, gp);
    if (sums && slot_x >= 0) sums[slot_x] += gx;
    else if (dx.data) dx.add(c, i, static_cast<T>(gx));
    for (int k = 0; k < n_params; ++k) {
      if (sums && slot_p[k] >= 0) sums[slot_p[k]] += gp[k];
      else if (dp[k].data) dp[k].add(c, i, static_cast<T>(gp[k]));
    }
    return lp;
  }

  // One chain's sum over elements [0, size) (the CPU's loop, see ChainSum):
  // when every parameter is one value for the chain and the family can
  // prepare, its parameter-only math (log sd, 1 / sd) is done once here, and
  // the parameters' partials are summed locally and added once.
  double sum_chain(long c, long size) const {
    using D = Dist<F>;
    if constexpr (has_prepared<D>::value) {
      bool scalars = !truncated;
      for (int k = 0; k < n_params; ++k) scalars = scalars && p[k].scalar;
      if (scalars) {
        double pv[max_dist_params] = {0}, gp[max_dist_params] = {0}, sum_gp[max_dist_params] = {0};
        for (int k = 0; k < n_params; ++k) pv[k] = static_cast<double>(p[k].at(c, 0));
        const typename D::Prepared q = D::prepare(pv);
        double lp = 0, gx = 0;
        for (long i = 0; i < size; ++i) {
          lp += D::lpdf(static_cast<double>(x.at(c, i)), q, &gx, gp);
          if (dx.data) dx.add(c, i, static_cast<T>(gx));
          for (int k = 0; k < n_params; ++k) sum_gp[k] += gp[k];
        }
        for (int k = 0; k < n_params; ++k)
          if (dp[k].data) dp[k].add(c, 0, static_cast<T>(sum_gp[k]));
        return lp;
      }
    }
    double lp = 0;
    for (long i = 0; i < size; ++i) lp += (*this)(c, i);
    return lp;
  }
};

}  // namespace lockstep

#endif
