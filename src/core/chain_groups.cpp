// Chain-parallel stepping (sampler/chain_groups.hpp).
#include "lockstep/sampler/chain_groups.hpp"

#include <algorithm>
#include <stdexcept>

namespace lockstep {

std::unique_ptr<ChainGroups> ChainGroups::make(
    long chains, long groups, int threads,
    const std::function<std::unique_ptr<Target>(long)>& make_target) {
  if (groups < 1 || groups > chains)
    throw std::invalid_argument("chain groups: between 1 and the number of chains");
  auto g = std::make_unique<ChainGroups>();
  for (long k = 0; k <= groups; ++k) g->first.push_back(k * chains / groups);
  for (long k = 0; k < groups; ++k) {
    const long n = g->first[k + 1] - g->first[k];
    g->targets.push_back(make_target(n));
    if (g->targets.back()->chains() != n)
      throw std::logic_error("chain groups: a group's target has the wrong number of chains");
  }
  g->pool = std::make_unique<ThreadPool>(std::max(1, std::min<int>(threads, groups)));
  return g;
}

long chain_group_count(const Program& program, long chains, const ExecOptions& options) {
  if (options.backend != Backend::cpu || options.world != nullptr || options.devices != 1 ||
      options.threads < 2 || chains < 2)
    return 1;
  ExecOptions automatic = options;
  automatic.threads_auto = true;
  if (effective_threads(program, chains, automatic) > 1) return 1;
  return std::min<long>(options.threads, chains);
}

}  // namespace lockstep
