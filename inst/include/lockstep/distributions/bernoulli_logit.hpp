// bernoulli_logit(eta): bernoulli(ilogit(eta)), computed on the logit scale so
// that neither tail under- or overflows (greta's "representations": R's
// bernoulli(ilogit(eta)) becomes this family). With log1p_exp(z) =
// log1p(exp(z)) = max(z, 0) + log1p(exp(-|z|)) (math/special.hpp):
//   log p(1) = log ilogit(eta)      = -log1p_exp(-eta)
//   log p(0) = log(1 - ilogit(eta)) = -log1p_exp(eta)
// i.e. x eta - log1p(exp(eta)) for x in {0, 1};
//   d/deta = x - ilogit(eta):  ilogit(-eta) for x = 1, -ilogit(eta) for x = 0.
// Both are finite for every finite eta (log p(0) at eta = 40 is -40, where
// log(1 - plogis(40)) is -Inf in double), and exact at eta = +-Inf. x is
// discrete (d/dx = 0); x outside {0, 1} has log density -Inf. NaN eta gives NaN.
#ifndef LOCKSTEP_DISTRIBUTIONS_BERNOULLI_LOGIT_HPP
#define LOCKSTEP_DISTRIBUTIONS_BERNOULLI_LOGIT_HPP

#include "../math/elementary.hpp"
#include "../math/unary.hpp"
#include "dist.hpp"

namespace lockstep {

template <> struct Dist<Family::bernoulli_logit> : Discrete {
  static constexpr int n_params = 1;
  LS_HD_INLINE static double lpdf(double x, const double* p, double* dx, double* dp) {
    const double eta = p[0];
    *dx = 0;
    // One exp serves the density and its derivative (logit_tails): selects
    // rather than branches, and the straight-line exp and log1p of
    // math/elementary.hpp, so that a loop over rows vectorises.
    const LogitTails t = logit_tails(eta);
    const bool one = x == 1, valid = one || x == 0;
    dp[0] = valid ? (one ? t.q : -t.p) : 0.0;
    return valid ? (one ? t.log_p : t.log_q) : -ls_inf();
  }
};

}  // namespace lockstep

#endif
