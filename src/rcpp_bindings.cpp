// The values bound in an R environment, read without evaluating anything.
// model() and simulate() look for greta arrays among the objects of the
// function they are called from (greta's rule). mget() would force every
// promise there: an argument the caller left missing then fails ("argument
// "offset" is missing, with no default") and an argument not yet used is
// evaluated for nothing, side effects and all. A promise not yet forced
// cannot hold a greta array of the model (the model's arrays exist already),
// so it is skipped here, as is a missing argument.
#include <Rcpp.h>

#include <vector>

using namespace Rcpp;

// The values of `names` in `env` (its own frame, not its parents), as a named
// list, leaving out the names that are unbound, missing arguments or promises
// not yet forced; a forced promise gives its value. Active bindings are read
// (as mget() would).
// [[Rcpp::export]]
List ls_bound_values(Environment env, CharacterVector names) {
  // The values stay protected by `env`, which binds them, until they are
  // copied into the list.
  std::vector<SEXP> values;
  std::vector<R_xlen_t> kept;
  SEXP frame = env;
  for (R_xlen_t i = 0; i < names.size(); ++i) {
    SEXP value = Rf_findVarInFrame(frame, Rf_installChar(STRING_ELT(names, i)));
    if (value == R_UnboundValue || value == R_MissingArg) continue;
    if (TYPEOF(value) == PROMSXP) {
      value = PRVALUE(value);
      if (value == R_UnboundValue) continue;
    }
    values.push_back(value);
    kept.push_back(i);
  }
  List out(values.size());
  CharacterVector out_names(values.size());
  for (size_t k = 0; k < values.size(); ++k) {
    out[k] = values[k];
    out_names[k] = names[kept[k]];
  }
  out.attr("names") = out_names;
  return out;
}
