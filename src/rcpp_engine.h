// What other parts of the Rcpp boundary (rcpp_svi.cpp) take from the
// engine's (rcpp_engine.cpp): its program and precision, and compute options
// read from R.
#ifndef LOCKSTEP_RCPP_ENGINE_H
#define LOCKSTEP_RCPP_ENGINE_H

#include <Rcpp.h>

#include <memory>

#include "lockstep/executor.hpp"
#include "lockstep/ir.hpp"

// An engine's planned program (shared: it outlives the engine's pointer
// while anything made from it holds it) and whether it runs in float32;
// an R error for what is not an engine. With `rows`, also the store of the
// program's row data that its executors share (ExecOptions::row_store).
std::shared_ptr<lockstep::Program> engine_program(SEXP engine, bool* single,
                                                  std::shared_ptr<lockstep::RowStore>* rows = nullptr);
// Compute options from R (R/compute_options.R), as the engine reads them.
lockstep::ExecOptions engine_exec_options(const Rcpp::List& options);

#endif
