// log_jacobian: not a distribution but the log |Jacobian| of a constrained
// variable built in R from free variables and ordinary ops (simplex, ordered
// and Cholesky variables, R/constrained.R). Its "target" is that log |J|,
// computed by the program, and the term adds it to the log density:
//   lpdf = x;  d/dx = 1.
// It has no parameters. Like the parameters' own transforms' Jacobians, the
// term is left out when the executor is asked for no Jacobian
// (ExecOptions::jacobian false, opt(adjust = FALSE)): the density kernel
// (node_kernels.hpp) skips it. It is never truncated (it is listed as not
// continuous in distributions.def, which refuses truncation), so its CDFs
// are never called.
#ifndef LOCKSTEP_DISTRIBUTIONS_LOG_JACOBIAN_HPP
#define LOCKSTEP_DISTRIBUTIONS_LOG_JACOBIAN_HPP

#include "target.hpp"

namespace lockstep {

// The same term as target's; only the density kernel's skip tells them apart.
template <> struct Dist<Family::log_jacobian> : Dist<Family::target> {};

}  // namespace lockstep

#endif
