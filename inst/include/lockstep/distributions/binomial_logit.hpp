// binomial_logit(size, eta): binomial(size, ilogit(eta)), computed on the logit scale
// (greta's representation; R's binomial(size, ilogit(eta)) becomes this family):
//   log p = lchoose(size, x) + x lp(eta) + (size - x) lp(-eta),
// with lp the log inverse link of link.hpp, finite for every finite eta. Its
// partials and the rules for size and x are binomial.hpp's.
#ifndef LOCKSTEP_DISTRIBUTIONS_BINOMIAL_LOGIT_HPP
#define LOCKSTEP_DISTRIBUTIONS_BINOMIAL_LOGIT_HPP

#include "link.hpp"

namespace lockstep {

template <> struct Dist<Family::binomial_logit> : Discrete2 {
  static constexpr int n_params = 2;
  LS_HD static double lpdf(double x, const double* p, double* dx, double* dp) {
    return link_binomial_lpdf<LogitLink>(x, p, dx, dp);
  }
};

}  // namespace lockstep

#endif
