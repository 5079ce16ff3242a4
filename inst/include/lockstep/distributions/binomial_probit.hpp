// binomial_probit(size, eta): binomial(size, iprobit(eta)), computed on the probit scale
// (greta's representation; R's binomial(size, iprobit(eta)) becomes this family):
//   log p = lchoose(size, x) + x log Phi(eta) + (size - x) log Phi(-eta),
//   d/deta = x phi(eta) / Phi(eta) - (size - x) phi(eta) / Phi(-eta),
// finite for every finite eta. Its partials and the rules for size and x are
// binomial.hpp's, through link_binomial.hpp.
#ifndef LOCKSTEP_DISTRIBUTIONS_BINOMIAL_PROBIT_HPP
#define LOCKSTEP_DISTRIBUTIONS_BINOMIAL_PROBIT_HPP

#include "../math/normal_tails.hpp"
#include "link_binomial.hpp"

namespace lockstep {

template <> struct Dist<Family::binomial_probit> : Discrete2 {
  static constexpr int n_params = 2;
  // Both tails and their Mills ratios from one erfcx (probit_tails).
  static constexpr bool straight_line = true;
  LS_HD_INLINE static double lpdf(double x, const double* p, double* dx, double* dp) {
    const ProbitTails t = probit_tails(p[1]);
    return link_binomial_lpdf(x, p[0], p[1], LinkTails{t.log_p, t.log_q, t.mills_p, t.mills_q},
                              dx, dp);
  }
};

}  // namespace lockstep

#endif
