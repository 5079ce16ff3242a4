// The Rcpp boundary of svi() (R/svi.R): a variational fit (svi.hpp) over an
// engine's program lives behind an external pointer, and R steps it in
// chunks, between which it draws its progress bar and checks for interrupts
// and convergence.
#include <Rcpp.h>

#include <memory>
#include <string>
#include <vector>

#include "lockstep/svi.hpp"
#include "lockstep/targets.hpp"
#include "rcpp_engine.h"

using namespace Rcpp;

namespace {

// A fit, the target whose chains are its particles, and the program (shared
// with the engine, so that the fit stays valid whatever happens to the
// engine's pointer).
struct SviHandle {
  std::shared_ptr<lockstep::Program> program;
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

// A fit of `guide` ("mean_field" or "delta") over the engine's program with
// `particles` particles, the guide's mean from `init` (one value per free
// parameter), Renyi's `alpha`, the first-order optimiser `method` with its
// `parameters`, the learning rate's exponential decay, and the particles'
// random streams keyed by (key0, key1).
// [[Rcpp::export]]
SEXP ls_svi_new(SEXP engine, NumericVector init, int particles, std::string guide, double alpha,
                std::string method, List parameters, double decay_rate, double decay_steps,
                double init_scale, double key0, double key1, List options) {
  auto h = std::make_unique<SviHandle>();
  bool single = false;
  h->program = engine_program(engine, &single);
  if (init.size() != h->program->n_free)
    stop("the initial values do not match the model's free parameters");
  lockstep::SviSettings s;
  s.guide = guide;
  s.alpha = alpha;
  s.optimiser.method = method;
  const CharacterVector names = parameters.names();
  for (R_xlen_t k = 0; k < parameters.size(); ++k)
    s.optimiser.params[as<std::string>(names[k])] = as<double>(parameters[k]);
  s.decay_rate = decay_rate;
  s.decay_steps = decay_steps;
  s.init_scale = init_scale;
  h->target = lockstep::make_target(*h->program, particles, engine_exec_options(options), single);
  h->svi = std::make_unique<lockstep::Svi>(*h->target, s, as<std::vector<double>>(init),
                                           static_cast<uint32_t>(key0), static_cast<uint32_t>(key1));
  XPtr<SviHandle> ptr(h.release(), false);
  R_RegisterCFinalizerEx(ptr, finalize_svi, TRUE);
  ptr.attr("class") = "lockstep_svi_handle";
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

// The guide's mean and standard deviations over the free state, and the
// iterations made.
// [[Rcpp::export]]
List ls_svi_guide(SEXP handle) {
  SviHandle* h = checked_svi(handle);
  const std::vector<double> sd = h->svi->sd();
  return List::create(_["mean"] = NumericVector(h->svi->mean().begin(), h->svi->mean().end()),
                      _["sd"] = NumericVector(sd.begin(), sd.end()),
                      _["iterations"] = static_cast<double>(h->svi->iterations()));
}
