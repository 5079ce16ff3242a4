// Optimisers for opt() (greta's names and tuning parameters): they maximise
// the log density over the free state, for several starting points at once,
// one per chain of the target, so that every start's evaluations share one
// engine call. A start that has converged keeps its state while the others go
// on.
//
//   bfgs              L-BFGS (10 pairs) with a backtracking line search
//                     satisfying the Armijo condition; converges when the
//                     sup norm of the gradient is below `tolerance`, or the
//                     objective changes by less than opt()'s tolerance (or,
//                     when set above 0, a step moves no coordinate by more
//                     than `x_tolerance`, or changes the objective by at
//                     most `f_relative_tolerance` of it or
//                     `f_absolute_tolerance`: TFP's rules, greta's arguments)
//   nelder_mead       the simplex method (TensorFlow Probability's, greta's):
//                     values only, one trial point per start per engine call;
//                     converges when the simplex's values span at most
//                     `func_tolerance` or its vertices lie within
//                     `position_tolerance` of the best
//   gradient_descent  x -= lr g, with (Nesterov) momentum
//   adam, adamax, nadam, adagrad, adadelta, rms_prop
//                     Keras's update rules (tf.keras.optimizers, which greta
//                     uses), with their defaults set from R
//
// The objective is f = -log density; "converged" for the first-order methods
// means |f_k - f_{k-1}| < tolerance (greta's rule). The first-order methods
// update each coordinate from its own gradient, so they run as well on a
// target holding part of the state (owned_shard.hpp: an MPI rank's slice),
// whose log density is the whole one's; whether f and g are finite is then
// agreed across the parts (Target::sum_over_parts). bfgs and nelder_mead need
// the whole state.
//
// Where the target's vectors are in a GPU's memory, the first-order methods
// keep every start, its gradient and the rule's state there (the rules are
// FirstOrderStep, kernels/first_order_step.hpp, the body the host runs too),
// so that an iteration moves C values each way (the log densities, and
// whether each gradient is finite) instead of two C x D arrays.
#ifndef LOCKSTEP_OPTIMISER_HPP
#define LOCKSTEP_OPTIMISER_HPP

#include <map>
#include <string>
#include <vector>

#include "executor.hpp"

namespace lockstep {

struct OptimiserSettings {
  std::string method;                     // bfgs, gradient_descent, adam, ...
  std::map<std::string, double> params;   // learning_rate, beta_1, ... (missing: defaults)
  long max_iterations = 100;
  double tolerance = 1e-6;                // on the change of the objective
  // Where a first-order method's starts, gradients and state live: 0 on
  // the target's vectors where those are in a GPU's memory
  // (ChainVectors::on_device), 1 wherever the vectors can hold them (the
  // CPU's and the emulated backend's too: tests), -1 in host memory always.
  // A target that holds part of the state keeps them in host memory.
  int resident = 0;
};

struct OptimiserResult {
  std::vector<double> par;    // [chains, dim] free state
  std::vector<double> value;  // [chains]: -log density at par
  std::vector<long> iterations;
  std::vector<int> convergence;  // 0 converged, 1 iteration limit, 2 failed (non-finite)
};

// Runs from init ([chains, dim]) until every start has converged or
// max_iterations; `interrupted` (may be null) is polled between iterations.
OptimiserResult optimise(Target& target, const OptimiserSettings& settings,
                         const std::vector<double>& init, bool (*interrupted)() = nullptr);

}  // namespace lockstep

#endif
