// target: not a distribution of its own but a log density that R builds from
// ordinary ops of the program (the multivariate distributions of
// R/multivariate.R: multivariate_normal, dirichlet, categorical, multinomial).
// Its "target" is that log density (one value per realisation), computed by
// the program, and the term adds it, summed, to the model's log density:
//   lpdf = x;  d/dx = 1.
// It is exactly log_jacobian's term except that it is a real density, so it is
// never skipped without the Jacobian (opt(adjust = FALSE)). It has no
// parameters and is never truncated (listed as not continuous in
// distributions.def, which refuses truncation), so its CDFs are never called.
#ifndef LOCKSTEP_DISTRIBUTIONS_TARGET_HPP
#define LOCKSTEP_DISTRIBUTIONS_TARGET_HPP

#include "dist.hpp"

namespace lockstep {

template <> struct Dist<Family::target> {
  static constexpr int n_params = 0;
  LS_HD static double lpdf(double x, const double*, double* dx, double*) {
    *dx = 1;
    return x;
  }
  LS_HD static double cdf(double, const double*, double*) { return ls_nan(); }
  LS_HD static double ccdf(double, const double*, double*) { return ls_nan(); }
};

}  // namespace lockstep

#endif
