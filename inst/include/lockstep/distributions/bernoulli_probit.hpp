// bernoulli_probit(eta): bernoulli(iprobit(eta)), computed on the probit scale
// (greta's representation; R's bernoulli(iprobit(eta)) becomes this family):
//   log p(1) = log Phi(eta),  log p(0) = log Phi(-eta),
//   d/deta = phi(eta) / Phi(eta) for x = 1, -phi(eta) / Phi(-eta) for x = 0,
// both finite for every finite eta (log(1 - pnorm(40)) is -Inf in double, log
// Phi(-40) = -804.6), through link.hpp. x is discrete (d/dx = 0); x outside
// {0, 1} has log density -Inf. NaN eta gives NaN.
#ifndef LOCKSTEP_DISTRIBUTIONS_BERNOULLI_PROBIT_HPP
#define LOCKSTEP_DISTRIBUTIONS_BERNOULLI_PROBIT_HPP

#include "link.hpp"

namespace lockstep {

template <> struct Dist<Family::bernoulli_probit> : Discrete {
  static constexpr int n_params = 1;
  LS_HD static double lpdf(double x, const double* p, double* dx, double* dp) {
    return link_bernoulli_lpdf<ProbitLink>(x, p, dx, dp);
  }
};

}  // namespace lockstep

#endif
