// A saved state (lockstep/saved_state.hpp) to and from R: a named list of
// numeric vectors, which a checkpoint writes (R/checkpoint.R).
#ifndef LOCKSTEP_RCPP_SAVED_STATE_H
#define LOCKSTEP_RCPP_SAVED_STATE_H

#include <Rcpp.h>

#include <string>
#include <vector>

#include "lockstep/saved_state.hpp"

inline Rcpp::List saved_state_to_list(const lockstep::SavedState& state) {
  const auto& parts = state.parts();
  Rcpp::List out(parts.size());
  Rcpp::CharacterVector names(parts.size());
  for (size_t k = 0; k < parts.size(); ++k) {
    names[k] = parts[k].first;
    out[k] = Rcpp::NumericVector(parts[k].second.begin(), parts[k].second.end());
  }
  out.attr("names") = names;
  return out;
}

inline lockstep::SavedState saved_state_from_list(const Rcpp::List& state) {
  lockstep::SavedState s;
  if (state.size() == 0) return s;
  const Rcpp::CharacterVector names = state.names();
  for (R_xlen_t k = 0; k < state.size(); ++k)
    s.put(Rcpp::as<std::string>(names[k]), Rcpp::as<std::vector<double>>(state[k]));
  return s;
}

#endif
