// Chain-parallel stepping, where one gradient is too small to share between
// threads.
//
// lockstep's samplers step every chain together, one engine call per
// gradient for all chains, and the executor shares that call between
// threads (executor.hpp). A small model's gradient (posteriordb's
// kilpisjarvi: a few microseconds for 4 chains) is too short for that: a
// hand-over to another thread costs about a microsecond, several per
// gradient, so effective_threads() gives it one thread, and the other cores
// would idle while Stan runs one chain per core.
//
// Such a sampler instead splits its chains into groups, each with a target
// (an executor) of its own over its chains alone and a sampler of its own
// over them (its vectors apart from the other groups', so that no cache line
// is written by two threads), and runs each group's trajectories on its own
// thread, through a whole iteration: in warmup the groups meet once per
// iteration, where the step size and metric adapt from all chains as
// before; in sampling, where nothing adapts, each group makes a batch of
// iterations on its own (Sampler::iterate_apart(); mcmc() asks for
// up to pb_update at a time), so a group whose trees were short does not
// wait for the others. Within a group the chains still step in lockstep.
// Each chain's arithmetic does not depend on the chains beside it, so a
// chain's draws are the same in groups as in lockstep
// (tests/cpp/test_nuts.cpp), and the same whatever the number of threads.
//
// This departs from DESIGN.md's "all chains step together" only for models
// whose gradient effective_threads() would not split: there, reading the
// data once for all chains saves less than the idle cores cost.
#ifndef LOCKSTEP_SAMPLER_CHAIN_GROUPS_HPP
#define LOCKSTEP_SAMPLER_CHAIN_GROUPS_HPP

#include <functional>
#include <memory>
#include <vector>

#include "../executor.hpp"
#include "../thread_pool.hpp"

namespace lockstep {

struct ChainGroups {
  // Group g steps chains [first[g], first[g + 1]) of the sampler through
  // targets[g], whose chain 0 is the sampler's chain first[g].
  std::vector<std::unique_ptr<Target>> targets;
  std::vector<long> first;
  std::unique_ptr<ThreadPool> pool;  // runs the groups, one per item

  long size() const { return static_cast<long>(targets.size()); }

  // `chains` split into `groups` contiguous groups, as even as can be, run on
  // `threads` threads; make_target(n) makes a target over n chains.
  static std::unique_ptr<ChainGroups> make(
      long chains, long groups, int threads,
      const std::function<std::unique_ptr<Target>(long)>& make_target);
};

// The number of chain groups a sampler over `chains` chains of this program
// should step in parallel with these options: 1 (lockstep) unless the
// options allow several threads on the CPU backend, in one process and one
// device, and the program's gradient is too small for the executor to split
// (effective_threads() with automatic threads gives 1); then one group per
// thread, at most one per chain.
long chain_group_count(const Program& program, long chains, const ExecOptions& options);

}  // namespace lockstep

#endif
