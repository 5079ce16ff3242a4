// A sampler of a given kind over a model (sampler/sampler_factory.hpp).
#include "lockstep/sampler/sampler_factory.hpp"

#include <stdexcept>
#include <string>
#include <utility>

#include "lockstep/device_shards.hpp"
#include "lockstep/owned_shard.hpp"
#include "lockstep/sampler/chain_groups.hpp"
#include "lockstep/targets.hpp"

namespace lockstep {

bool uses_dense_metric(const SamplerSpec& spec, long dim, const ExecOptions& o) {
  if (spec.metric == "dense") return true;
  if (spec.metric != "auto") return false;
  return !spec.metric_factor.empty() ||
         (dim <= max_auto_dense_dim && o.backend == Backend::cpu && o.world == nullptr);
}

std::vector<double> initial_dense_factor(const SamplerSpec& spec, long chains, long dim,
                                         const std::vector<long>& dense) {
  if (!spec.metric_factor.empty()) return spec.metric_factor;
  const std::vector<double>& sd = spec.diag_sd;
  const long per = static_cast<long>(sd.size());
  // (the sampler refuses other lengths)
  const bool from_sd = spec.metric == "auto" && !(per == 1 && sd[0] == 1) &&
                       (per == 1 || per == dim || per == chains * dim);
  if (!from_sd) return {};
  const long g = dense.empty() ? dim : static_cast<long>(dense.size());
  std::vector<double> factor(chains * g * g, 0.0);
  for (long c = 0; c < chains; ++c)
    for (long k = 0; k < g; ++k) {
      const long i = dense.empty() ? k : dense[k];
      factor[(c * g + k) * g + k] = per == 1 ? sd[0] : per == dim ? sd[i] : sd[c * dim + i];
    }
  return factor;
}

std::vector<long> dense_metric_coordinates(const Program& program, const SamplerSpec& spec) {
  if (!spec.metric_coordinates.empty()) return spec.metric_coordinates;
  if (program.n_free <= max_dense_dim) return {};
  return global_coordinates(program);
}

namespace {

// The scales of the coordinates a dense metric leaves out: diag_sd, where it
// has one value per coordinate (a restarted run's standard deviations) or
// per chain and coordinate; else 1.
std::vector<double> dense_metric_scale(const std::vector<double>& sd, long chains, long dim) {
  const long per = static_cast<long>(sd.size());
  return per == dim || per == chains * dim ? sd : std::vector<double>();
}

// A dense metric over `model` covering `covered` (empty: every coordinate),
// its first factor and the other coordinates' scales from `spec`, chosen
// automatically under metric = "auto"; the chains' states `start` ([chains,
// model dim], the model's coordinates) move to the metric's.
std::unique_ptr<DenseMetric> dense_metric_over(Target& model, const SamplerSpec& spec, long chains,
                                               const std::vector<long>& covered,
                                               std::vector<double>& start) {
  const long dim = model.dim();
  auto metric = std::make_unique<DenseMetric>(model, initial_dense_factor(spec, chains, dim, covered),
                                              covered, dense_metric_scale(spec.diag_sd, chains, dim));
  if (spec.metric == "auto") metric->set_choice(DenseMetric::Choice::automatic);
  const std::vector<double> x = start;
  metric->to_sampler(x.data(), start.data());
  return metric;
}

// The kind's settings with the shared ones copied in.
template <class Settings> Settings with_shared(Settings s, const SamplerSpec& spec) {
  s.epsilon = spec.epsilon;
  s.diag_sd = spec.diag_sd;
  s.per_chain_metric = spec.per_chain_metric;
  return s;
}

std::unique_ptr<Sampler> new_kind(const SamplerSpec& spec, Target& target,
                                  const std::vector<double>& start, uint32_t key0,
                                  uint32_t key1) {
  if (spec.kind == "hmc") {
    HmcSettings s = with_shared(spec.hmc, spec);
    s.per_chain_step_size = spec.per_chain_step_size;
    s.warmup_rescue = spec.warmup_rescue;
    return std::make_unique<Hmc>(target, s, start, key0, key1);
  }
  if (spec.kind == "nuts") {
    NutsSettings s = with_shared(spec.nuts, spec);
    s.per_chain_step_size = spec.per_chain_step_size;
    s.warmup_rescue = spec.warmup_rescue;
    return std::make_unique<Nuts>(target, s, start, key0, key1);
  }
  if (spec.kind == "chees") {
    CheesSettings s = with_shared(spec.chees, spec);
    s.warmup_rescue = spec.warmup_rescue;
    return std::make_unique<Chees>(target, s, start, key0, key1);
  }
  if (spec.kind == "rwmh")
    return std::make_unique<Rwmh>(target, with_shared(spec.rwmh, spec), start, key0, key1);
  if (spec.kind == "slice")
    return std::make_unique<Slice>(target, with_shared(spec.slice, spec), start, key0, key1);
  throw std::invalid_argument("unknown sampler '" + spec.kind + "'");
}

// The sampler, at the step sizes of a restarted run where spec has them.
std::unique_ptr<Sampler> new_sampler(const SamplerSpec& spec, Target& target,
                                     const std::vector<double>& start, uint32_t key0,
                                     uint32_t key1) {
  std::unique_ptr<Sampler> s = new_kind(spec, target, start, key0, key1);
  if (!spec.step_sizes.empty()) {
    if (static_cast<long>(spec.step_sizes.size()) != target.chains())
      throw std::invalid_argument("step sizes: " + std::to_string(spec.step_sizes.size()) +
                                  " values for " + std::to_string(target.chains()) + " chains");
    s->set_step_sizes(spec.step_sizes);
  }
  return s;
}

}  // namespace

SamplerBundle make_sampler(const Program& program, const SamplerSpec& spec,
                           const std::vector<double>& init, long chains, ExecOptions o,
                           bool single, uint32_t key0, uint32_t key1) {
  if (spec.kind != "hmc" && spec.kind != "nuts" && spec.kind != "chees" && spec.kind != "rwmh" &&
      spec.kind != "slice")
    throw std::invalid_argument("unknown sampler '" + spec.kind + "'");
  SamplerBundle b;
  const long dim = program.n_free;
  const bool dense = uses_dense_metric(spec, dim, o);
  // Ranks that own their groups (owned_shard.hpp): every rank decides alike.
  if (o.world) b.slice = plan_owned_shards(program, *o.world);
  if (b.slice) {
    b.executor = make_owned_shard_target(*b.slice, chains, o, single, dim);
    // the model's coordinates, and any per-coordinate metric, as the slice's
    SamplerSpec mine = spec;
    const long sd_size = static_cast<long>(spec.diag_sd.size());
    if (sd_size == dim || sd_size == chains * dim)
      mine.diag_sd = b.slice->of_whole(spec.diag_sd.data(), sd_size / dim, dim);
    std::vector<double> start = b.slice->of_whole(init.data(), chains, dim);
    Target* target = b.executor.get();
    if (dense) {
      // over the replicated global coordinates, the slice's first
      std::vector<long> globals(b.slice->n_global);
      for (long k = 0; k < b.slice->n_global; ++k) globals[k] = k;
      if (globals.empty()) globals.push_back(0);  // (no globals: a diagonal "factor")
      b.dense = dense_metric_over(*b.executor, mine, chains, globals, start);
      target = b.dense.get();
    }
    b.sampler = new_sampler(mine, *target, start, key0, key1);
    if (dense) b.sampler->use_dense_metric(*b.dense);
    b.sampler->start_metric_from_gradient(spec.diag_sd_from_gradient);
    return b;
  }
  // Devices of one process that own their groups (device_shards.hpp): the
  // sampler's state stays whole, its vectors are split among the devices
  // (a dense metric's, and rwmh()'s and slice()'s, stay on the host, the
  // devices evaluating their slices of it).
  if (runs_on_device_shards(o)) b.executor = make_device_shards(program, chains, o, single);
  const bool groupable = !b.executor && (spec.kind == "nuts" || spec.kind == "hmc");
  b.chain_groups = groupable ? chain_group_count(program, chains, o) : 1;
  const int group_threads = o.threads;
  if (b.chain_groups > 1) o.threads = 1;
  if (!b.executor) b.executor = make_target(program, chains, o, single);
  Target* target = b.executor.get();
  std::vector<double> start = init;
  const std::vector<long> covered = dense ? dense_metric_coordinates(program, spec) : std::vector<long>();
  if (dense) {
    b.dense = dense_metric_over(*b.executor, spec, chains, covered, start);
    target = b.dense.get();
  }
  b.sampler = new_sampler(spec, *target, start, key0, key1);
  if (dense) b.sampler->use_dense_metric(*b.dense);
  b.sampler->start_metric_from_gradient(spec.diag_sd_from_gradient);
  if (b.chain_groups > 1) {
    b.sampler->step_in_groups(ChainGroups::make(
        chains, b.chain_groups, group_threads, [&](long n) -> std::unique_ptr<Target> {
          auto executor = make_target(program, n, o, single);
          if (!dense) return executor;
          // each group's own dense metric (its factors are the sampler's)
          return std::make_unique<DenseMetric>(std::move(executor), std::vector<double>(),
                                               covered);
        }));
  }
  return b;
}

}  // namespace lockstep
