// binomial_logit(size, eta): binomial(size, ilogit(eta)), computed on the logit scale
// (greta's representation; R's binomial(size, ilogit(eta)) becomes this family):
//   log p = lchoose(size, x) + x log ilogit(eta) + (size - x) log ilogit(-eta),
//   d/deta = x ilogit(-eta) - (size - x) ilogit(eta),
// finite for every finite eta (log ilogit(-eta) at eta = 40 is -40, where
// log(1 - plogis(40)) is -Inf). Its partials and the rules for size and x are
// binomial.hpp's, through link_binomial.hpp.
#ifndef LOCKSTEP_DISTRIBUTIONS_BINOMIAL_LOGIT_HPP
#define LOCKSTEP_DISTRIBUTIONS_BINOMIAL_LOGIT_HPP

#include "../math/elementary.hpp"
#include "link_binomial.hpp"

namespace lockstep {

template <> struct Dist<Family::binomial_logit> : Discrete2 {
  static constexpr int n_params = 2;
  // One exp serves both tails' logs and probabilities (logit_tails, as
  // bernoulli_logit's): d/deta log ilogit(eta) = ilogit(-eta).
  static constexpr bool straight_line = true;
  LS_HD_INLINE static double lpdf(double x, const double* p, double* dx, double* dp) {
    const LogitTails t = logit_tails(p[1]);
    return link_binomial_lpdf(x, p[0], p[1], LinkTails{t.log_p, t.log_q, t.q, t.p}, dx, dp);
  }
};

}  // namespace lockstep

#endif
