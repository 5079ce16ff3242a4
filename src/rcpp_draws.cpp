// Raw draws (free states) gathered by chain for R (R/output.R). mcmc() keeps
// them as each call of ls_sampler_run() returns them, rows iteration-major
// with chains within; coda wants one matrix per chain. For a model of
// millions of parameters, R's rbind() of the calls' matrices and its row
// subsetting by chain each cost more than the draws' gradients (a row of a
// column-major matrix is spread over every column). Here one pass writes each
// chain's matrix column by column.
#include <Rcpp.h>

#include <algorithm>
#include <cstring>

using namespace Rcpp;

// `previous`: a list of one matrix per chain (draws x coordinates, earlier
// draws: extra_samples()), or an empty list; `chunks`: matrices whose rows are
// draws, iteration-major with `chains` chains within (so a multiple of
// `chains` rows each), all with the same columns. Returns one matrix per
// chain: its previous rows, then its rows of each chunk in order, made a coda
// mcmc object numbered from `thin` by `thin` (set here, where R would copy
// the matrix to set them).
// [[Rcpp::export]]
List ls_rows_by_chain(List previous, List chunks, int chains, double thin) {
  if (chains < 1) stop("`chains` must be at least 1");
  const R_xlen_t n_chunks = chunks.size();
  if (previous.size() != 0 && previous.size() != chains)
    stop("`previous` must hold one matrix per chain");
  long cols = -1, n_new = 0;
  std::vector<NumericMatrix> parts;
  for (R_xlen_t k = 0; k < n_chunks; ++k) {
    NumericMatrix m = chunks[k];
    if (m.nrow() % chains != 0) stop("a chunk's rows are not a multiple of the chains");
    if (cols >= 0 && m.ncol() != cols) stop("the chunks' columns differ");
    cols = m.ncol();
    n_new += m.nrow() / chains;
    parts.push_back(m);
  }
  std::vector<NumericMatrix> before;
  for (R_xlen_t c = 0; c < previous.size(); ++c) {
    NumericMatrix m = previous[c];
    if (cols >= 0 && m.ncol() != cols) stop("the earlier draws' columns differ");
    cols = m.ncol();
    before.push_back(m);
  }
  if (cols < 0) return List(chains);
  List out(chains);
  for (int c = 0; c < chains; ++c) {
    const long n_before = before.empty() ? 0 : before[c].nrow();
    const long rows = n_before + n_new;
    NumericMatrix m(no_init(static_cast<int>(rows), static_cast<int>(cols)));
    double* to = m.begin();
    for (long j = 0; j < cols; ++j) {
      double* col = to + j * rows;
      if (n_before) std::memcpy(col, before[c].begin() + j * n_before, n_before * sizeof(double));
      long at = n_before;
      for (const NumericMatrix& p : parts) {
        const long n = p.nrow();
        const double* from = p.begin() + j * n + c;
        for (long r = 0; r < n; r += chains) col[at++] = from[r];
      }
    }
    m.attr("mcpar") = NumericVector::create(thin, thin * static_cast<double>(rows), thin);
    m.attr("class") = "mcmc";
    out[c] = m;
  }
  return out;
}
