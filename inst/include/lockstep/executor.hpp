// The op-by-op executor: log density and gradient of a planned Program for C
// chains in one call (DESIGN.md, "Execution", global stage).
//
// Every kernel is a lanes-policy body (kernels/) launched on the chosen backend:
//   cpu       one lane per launch: plain loops
//   emulated  the CUDA execution model, lane by lane on the CPU
// The observation stage (tiles and shards, issue 3) will be a second executor
// over the same kernels; this one is the reference it is tested against.
#ifndef LOCKSTEP_EXECUTOR_HPP
#define LOCKSTEP_EXECUTOR_HPP

#include <vector>

#include "ir.hpp"
#include "lanes.hpp"
#include "node_kernels.hpp"

namespace lockstep {

enum class Backend : int { cpu, emulated };

Backend backend_from_name(const std::string& name);

// Something with a log density and gradient over a [chains, dim] state: what
// samplers need. Executor is one; tests use analytic targets.
class Target {
 public:
  virtual ~Target() = default;
  virtual long dim() const = 0;
  virtual long chains() const = 0;
  // state: [chains, dim] chain-major; lp: [chains]; grad: [chains, dim] or nullptr.
  virtual void log_density(const double* state, double* lp, double* grad) = 0;
};

template <class T> class Executor : public Target {
 public:
  // The program must outlive the executor and be planned.
  Executor(const Program& program, long chains, Backend backend = Backend::cpu,
           EmulatedGeometry geometry = EmulatedGeometry());

  long dim() const override { return program_.n_free; }
  long chains() const override { return chains_; }
  void log_density(const double* state, double* lp, double* grad) override;

  // Forward pass only: fills every node's value (used to trace arrays).
  void forward(const double* state);
  // A node's value after log_density or forward: [chains, size] when the node
  // carries the chain dimension, [size] otherwise.
  const std::vector<T>& value(int node) const { return values_[node]; }

 private:
  template <class Body> void launch(const Body& body) const;
  NodeCall<T> call(int id, const double* state, double* lp, double* grad);
  void forward_node(int id, const double* state, double* lp, double* grad);
  void backward_node(int id, const double* state, double* grad);

  const Program& program_;
  long chains_;
  Backend backend_;
  EmulatedGeometry geometry_;
  std::vector<std::vector<T>> values_, adjoints_;
  std::vector<double> scratch_;  // [chains]
};

extern template class Executor<double>;

}  // namespace lockstep

#endif
