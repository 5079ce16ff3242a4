// The Rcpp boundary of svi() (R/svi.R): a variational fit (svi.hpp) over an
// engine's program lives behind an external pointer, and R steps it in
// chunks, between which it draws its progress bar and checks for interrupts
// and convergence.
#include <Rcpp.h>

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/device_shards.hpp"
#include "lockstep/group_slice.hpp"
#include "lockstep/owned_shard.hpp"
#include "lockstep/svi.hpp"
#include "lockstep/targets.hpp"
#include "rcpp_engine.h"
#include "rcpp_saved_state.h"

using namespace Rcpp;

namespace {

// A fit, the target whose chains are its particles, and the program (shared
// with the engine, so that the fit stays valid whatever happens to the
// engine's pointer).
struct SviHandle {
  std::shared_ptr<lockstep::Program> program;
  std::shared_ptr<lockstep::RowStore> rows;  // the engine's store of its row data
  // across MPI ranks that own their groups: this rank's slice, and its part
  // of the guide made whole
  std::unique_ptr<lockstep::GroupSlice> slice;
  std::unique_ptr<lockstep::WholeState> whole;
  std::unique_ptr<lockstep::Target> target;
  std::unique_ptr<lockstep::Svi> svi;
};

void finalize_svi(SEXP x) {
  delete static_cast<SviHandle*>(R_ExternalPtrAddr(x));
  R_ClearExternalPtr(x);
}

SviHandle* checked_svi(SEXP x) {
  if (TYPEOF(x) != EXTPTRSXP || !R_ExternalPtrAddr(x))
    stop("this svi() fit's engine is gone (a saved and reloaded workspace): run svi() again");
  return static_cast<SviHandle*>(R_ExternalPtrAddr(x));
}

}  // namespace

// The rows of each of the program's row-aligned likelihoods (its
// observation stages' extents), summed over the MPI ranks (collective) when
// the options run across them: what svi()'s batch_size is a part of.
// [[Rcpp::export]]
NumericVector ls_svi_rows(SEXP engine, List options) {
  bool single = false;
  const std::shared_ptr<lockstep::Program> program = engine_program(engine, &single);
  const lockstep::ExecOptions o = engine_exec_options(options);
  std::vector<double> rows(program->extents.begin(), program->extents.end());
  if (o.world && !rows.empty()) {
    double* bufs[] = {rows.data()};
    o.world->all_reduce_sum(bufs, static_cast<long>(rows.size()));
  }
  return NumericVector(rows.begin(), rows.end());
}

// A fit of `guide` ("mean_field", "full_rank", "low_rank" of rank `rank`, or
// "delta") over the engine's program with
// `particles` particles, the guide's mean from `init` (one value per free
// parameter), Renyi's `alpha`, the first-order optimiser `method` with its
// `parameters`, the learning rate's exponential decay, and the particles'
// random streams keyed by (key0, key1); with batch_fraction below 1,
// minibatches of that fraction of each likelihood's tiles (the executor's
// tiles then small enough that a batch holds 32 of them).
// [[Rcpp::export]]
SEXP ls_svi_new(SEXP engine, NumericVector init, int particles, std::string guide, int rank,
                double alpha,
                std::string method, List parameters, double decay_rate, double decay_steps,
                double init_scale, double key0, double key1, double batch_fraction,
                List options) {
  auto h = std::make_unique<SviHandle>();
  bool single = false;
  h->program = engine_program(engine, &single, &h->rows);
  if (init.size() != h->program->n_free)
    stop("the initial values do not match the model's free parameters");
  lockstep::SviSettings s;
  s.guide = guide;
  s.rank = rank;
  s.alpha = alpha;
  s.optimiser.method = method;
  const CharacterVector names = parameters.names();
  for (R_xlen_t k = 0; k < parameters.size(); ++k)
    s.optimiser.params[as<std::string>(names[k])] = as<double>(parameters[k]);
  s.decay_rate = decay_rate;
  s.decay_steps = decay_steps;
  s.init_scale = init_scale;
  s.batch_fraction = batch_fraction;
  lockstep::ExecOptions o = engine_exec_options(options);
  o.row_store = h->rows.get();
  // a GPU's executor has no host threads: a guide kept on the host (all but
  // a mean-field guide fitted by adam, which lives on the GPU: Svi::resident)
  // gets some for its own work (4 x D normals a step)
  if (o.backend == lockstep::Backend::cuda)
    s.threads = static_cast<int>(std::min(8u, std::max(1u, std::thread::hardware_concurrency())));
  if (batch_fraction < 1) {
    // a stage's adjoints are scaled as they are added, which aliased
    // parameters (added to in place) do not allow
    o.alias_parameters = false;
    long most = 0;
    for (long rows : h->program->extents) most = std::max(most, rows);
    if (o.tile_rows <= 0)
      o.max_tile_rows = std::max(16L, static_cast<long>(batch_fraction * most / 32));
  }
  const long D = h->program->n_free;
  std::vector<double> start = as<std::vector<double>>(init);
  // Across MPI ranks whose rows are whole groups, each rank fits its own
  // groups' guide parameters (svi.hpp; collective, every rank alike)
  if (o.world && guide != "full_rank") h->slice = lockstep::plan_owned_shards(*h->program, *o.world);
  if (h->slice) {
    h->target = lockstep::make_owned_shard_target(*h->slice, particles, o, single, D);
    start = h->slice->of_whole(start.data(), 1, D);
    h->whole = std::make_unique<lockstep::WholeState>(*h->slice, D, *o.world);
  } else if (lockstep::runs_on_device_shards(o)) {
    // the GPUs of one process (or emulated devices): each evaluates its own
    // groups' slice of the particles (device_shards.hpp)
    h->target = lockstep::make_device_shards(*h->program, particles, o, single);
  }
  if (!h->target) h->target = lockstep::make_target(*h->program, particles, o, single);
  h->svi = std::make_unique<lockstep::Svi>(*h->target, s, start, static_cast<uint32_t>(key0),
                                           static_cast<uint32_t>(key1));
  XPtr<SviHandle> ptr(h.release(), false);
  R_RegisterCFinalizerEx(ptr, finalize_svi, TRUE);
  ptr.attr("class") = "lockstep_svi_handle";
  ptr.attr("device_shards") = dynamic_cast<lockstep::DeviceShardsTarget*>(ptr->target.get()) != nullptr;
  if (const lockstep::GroupSlice* slice = ptr->slice.get())
    ptr.attr("owned_groups") = NumericVector::create(static_cast<double>(slice->first_group + 1),
                                                     static_cast<double>(slice->end_group));
  return ptr;
}

// `n` iterations of the fit: each one's loss (minus the bound's estimate;
// NaN where it was not finite and the guide did not move).
// [[Rcpp::export]]
NumericVector ls_svi_step(SEXP handle, int n) {
  SviHandle* h = checked_svi(handle);
  NumericVector loss(n);
  for (int k = 0; k < n; ++k) loss[k] = h->svi->step();
  return loss;
}

// Puts the guide back where the bound was last finite (a diverged fit's end:
// Svi::restore_last_finite; every rank alike).
// [[Rcpp::export]]
void ls_svi_restore(SEXP handle) { checked_svi(handle)->svi->restore_last_finite(); }

// The fit's state between iterations (Svi::save_state()), a named list of
// numeric vectors for a checkpoint (R/checkpoint.R), and back into a fit
// made with the same settings and seeds (Svi::restore_state()).
// [[Rcpp::export]]
List ls_svi_state(SEXP handle) { return saved_state_to_list(checked_svi(handle)->svi->save_state()); }

// [[Rcpp::export]]
void ls_svi_set_state(SEXP handle, List state) {
  checked_svi(handle)->svi->restore_state(saved_state_from_list(state));
}

// The guide's mean, standard deviations and, for a full-rank guide, its
// scale (a lower triangular matrix L: the guide's covariance is L L'; NULL
// for the others, whose scale is diag(sd), as a matrix too large for a
// large model), for a low-rank guide its factor W ([dim, rank]) and
// diagonal d (covariance W W' + diag(d^2)), over the free state (made whole
// across ranks that own their groups: collective), and the iterations made.
// [[Rcpp::export]]
List ls_svi_guide(SEXP handle, bool full_rank) {
  SviHandle* h = checked_svi(handle);
  std::vector<double> mean = h->svi->mean(), sd = h->svi->sd();
  std::vector<double> W = h->svi->factor(), d = h->svi->diagonal();
  const long k = h->svi->dim() > 0 ? static_cast<long>(W.size()) / h->svi->dim() : 0;
  const long D = h->program->n_free;
  if (h->whole) {  // (collective)
    // each as rows of the slice's coordinates: W's columns as k rows
    auto made_whole = [&](const std::vector<double>& part, long rows) {
      std::vector<double> whole(rows * D);
      h->whole->to_all(part.data(), rows, whole.data());
      return whole;
    };
    mean = made_whole(mean, 1);
    sd = made_whole(sd, 1);
    if (k > 0) {  // (every rank alike)
      const long Dp = h->svi->dim();
      std::vector<double> columns(k * Dp);
      for (long a = 0; a < Dp; ++a)
        for (long b = 0; b < k; ++b) columns[b * Dp + a] = W[a * k + b];
      d = made_whole(d, 1);
      const std::vector<double> whole_columns = made_whole(columns, k);
      W.assign(D * k, 0.0);
      for (long a = 0; a < D; ++a)
        for (long b = 0; b < k; ++b) W[a * k + b] = whole_columns[b * D + a];
    }
  }
  RObject factor, diagonal;
  if (k > 0) {
    NumericMatrix m(static_cast<int>(D), static_cast<int>(k));
    for (long a = 0; a < D; ++a)
      for (long b = 0; b < k; ++b) m(static_cast<int>(a), static_cast<int>(b)) = W[a * k + b];
    factor = m;
    diagonal = NumericVector(d.begin(), d.end());
  }
  RObject scale;
  if (full_rank) {
    const long D = h->svi->dim();
    const std::vector<double> L = h->svi->scale();
    NumericMatrix m(static_cast<int>(D), static_cast<int>(D));
    for (long i = 0; i < D; ++i)
      for (long j = 0; j <= i; ++j) m(static_cast<int>(i), static_cast<int>(j)) = L[i * D + j];
    scale = m;
  }
  return List::create(_["mean"] = NumericVector(mean.begin(), mean.end()),
                      _["sd"] = NumericVector(sd.begin(), sd.end()), _["scale"] = scale,
                      _["factor"] = factor, _["diagonal"] = diagonal,
                      _["iterations"] = static_cast<double>(h->svi->iterations()),
                      _["on_device"] = h->svi->resident());
}
