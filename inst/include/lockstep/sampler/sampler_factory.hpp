// A sampler of a given kind over a model, with its metric rules and its
// executor: what R's mcmc() asks for (R/samplers.R), in plain C++, so that the
// Rcpp glue (src/rcpp_engine.cpp) only converts its arguments and calls.
#ifndef LOCKSTEP_SAMPLER_SAMPLER_FACTORY_HPP
#define LOCKSTEP_SAMPLER_SAMPLER_FACTORY_HPP

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "../executor.hpp"
#include "../group_slice.hpp"
#include "chees.hpp"
#include "dense_metric.hpp"
#include "hmc.hpp"
#include "nuts.hpp"
#include "rwmh.hpp"
#include "sampler.hpp"
#include "slice.hpp"

namespace lockstep {

// A sampler's kind and settings. The settings every kind shares are given
// once here and copied into the kind's own; the kind's own settings struct
// holds the rest (and its defaults).
struct SamplerSpec {
  std::string kind = "nuts";  // "hmc", "nuts", "chees", "rwmh" or "slice"
  // "diagonal"; "dense" (hmc, nuts, chees: the sampler works in the dense
  // metric's coordinates, sampler/dense_metric.hpp); or "auto": dense where a
  // dense metric may be chosen (uses_dense_metric()), warmup then picking a
  // dense or a diagonal factor at each window's end.
  std::string metric = "diagonal";
  // A dense factor that warmup tuned ([k, g, g], k = 1 or chains, row-major
  // lower factors over g coordinates), restarting a run: kept whatever the
  // options; and the coordinates it covers (0-based, increasing), empty for
  // every one.
  std::vector<double> metric_factor;
  std::vector<long> metric_coordinates;
  double epsilon = 0.1;
  // Each chain's step size (restarting a run: [chains]), empty: epsilon for
  // every chain; and whether warmup adapts each chain's alone (hmc, nuts)
  std::vector<double> step_sizes;
  bool per_chain_step_size = false;
  // whether warmup moves stuck chains (hmc, nuts, chees)
  bool warmup_rescue = true;
  // one value, one per free parameter, or [chains, dim] (restarting a run
  // whose warmup adapted a metric per chain)
  std::vector<double> diag_sd = {1.0};
  // warmup's first metric from the gradient, where diag_sd was left at its
  // default
  bool diag_sd_from_gradient = false;
  bool per_chain_metric = false;  // adapt each chain's metric alone
  HmcSettings hmc;
  NutsSettings nuts;
  CheesSettings chees;
  RwmhSettings rwmh;
  SliceSettings slice;
};

// Whether the sampler works in a dense metric's coordinates: metric "dense",
// or "auto" on a model of at most max_auto_dense_dim free parameters on the
// CPU in one process (elsewhere the sampler's vectors stay with the
// executor: a GPU's, or every rank's), or a tuned factor given.
bool uses_dense_metric(const SamplerSpec& spec, long dim, const ExecOptions& o);

// The dense metric's first factor ([chains, g, g], row-major lower factors
// over the g coordinates `dense`, empty for every one): the tuned one; with
// "auto" and a diag_sd other than the default 1, diag_sd on the diagonal;
// else empty (the identity).
std::vector<double> initial_dense_factor(const SamplerSpec& spec, long chains, long dim,
                                         const std::vector<long>& dense = {});

// The coordinates of planned `program` that a dense metric covers (empty:
// every one): those spec names (a restarted run's), every one for a model of
// at most max_dense_dim free parameters, else the global ones
// (global_coordinates()), the group-level ones keeping a diagonal metric.
std::vector<long> dense_metric_coordinates(const Program& program, const SamplerSpec& spec);

// A sampler and what it steps. The executor (and the dense metric over it)
// must outlive the sampler: members are destroyed in reverse order.
struct SamplerBundle {
  // In a run across processes whose ranks own their groups (owned_shard.hpp):
  // this rank's slice of the program, which its executor runs; the sampler's
  // state is then the slice's ([chains, slice dim]), not the model's.
  std::unique_ptr<GroupSlice> slice;
  std::unique_ptr<Target> executor;
  // a dense metric's change of variables over the executor (the sampler's
  // target), or nullptr
  std::unique_ptr<DenseMetric> dense;
  std::unique_ptr<Sampler> sampler;
  // 1: every chain in lockstep; more: NUTS's or HMC's chain groups, one per
  // thread (sampler/chain_groups.hpp)
  long chain_groups = 1;
};

// A sampler of spec.kind over the planned `program` (which must outlive it)
// from `init` ([chains, dim], chain-major, in the model's coordinates), its
// executor made with `o` (make_target(); `single`: float32), its random
// streams keyed by (key0, key1). NUTS or HMC on a model whose gradient is too
// small to share between threads steps its chains in groups, one per thread
// (chain_group_count()); its own executor then runs on one thread. Throws
// std::invalid_argument for an unknown kind. Across processes (o.world),
// every sampler shards by groups where the ranks' rows allow
// (plan_owned_shards()): each rank then holds the global coordinates and its
// groups' local ones, and a dense metric covers the global ones alone. On the devices of one process
// (runs_on_device_shards(): several GPUs, or emulated devices), every
// sampler runs over devices that own their groups where the model has groups
// to own (device_shards.hpp): HMC, NUTS and ChEES with a diagonal metric keep
// their vectors split among the devices; a dense metric, rwmh() and slice()
// keep the state on the host.
SamplerBundle make_sampler(const Program& program, const SamplerSpec& spec,
                           const std::vector<double>& init, long chains, ExecOptions o,
                           bool single, uint32_t key0, uint32_t key1);

}  // namespace lockstep

#endif
