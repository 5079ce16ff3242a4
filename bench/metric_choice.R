# The two measures with which nuts()'s metric = "auto" chooses between a dense and
# a diagonal metric (DenseMetric::dense_is_worth_it() and dense_fits_gradients()),
# computed from 4000 draws of a diagonal-metric run of each posteriordb reference
# posterior and the engine's gradients at them:
#   - the condition number of the draws' correlation matrix;
#   - in the dense metric's coordinates (the Cholesky factor L of the draws'
#     covariance), the largest eigenvalue of L' E[g g'] L; in the diagonal's, that
#     of D E[g g'] D (D the standard deviations) over the correlations' condition
#     number times their largest eigenvalue: both 1 for a Gaussian.
#
#   Rscript bench/metric_choice.R [name,name,...]
#
# Run from the repository root with an installed lockstep and ../shared/posteriordb
# (or LOCKSTEP_SHARED). Uses the models of tests/testthat/test_posteriordb.R.
suppressPackageStartupMessages(library(lockstep))
source("bench/posteriordb_models.R")
defs <- posteriordb_definitions()
args <- commandArgs(TRUE)
which <- if (length(args)) strsplit(args[1], ",")[[1]] else names(defs$posteriordb_posteriors)
eigen_values <- function(A) eigen((A + t(A)) / 2, symmetric = TRUE, only.values = TRUE)$values
cat("| posterior | condition number of the correlations | dense: curvature x variance |",
    "diagonal: the same / condition number |\n| --- | ---: | ---: | ---: |\n")
for (p in which) {
  d <- defs$posteriordb_data(p)
  m <- defs$posteriordb_posteriors[[p]]$build(d)
  set.seed(1)
  draws <- suppressWarnings(mcmc(m, sampler = nuts(metric = "diagonal"), n_samples = 1000,
                                 warmup = 1000, chains = 4, verbose = FALSE,
                                 compute_options = cpu_only(threads = 1)))
  free <- attr(draws, "model_info")$free
  g <- lockstep:::model_log_density(m, free, gradient = TRUE,
                                    compute_options = cpu_only(threads = 1))$gradient
  S <- stats::cov(free)
  G <- crossprod(g) / nrow(g)
  L <- t(chol(S))
  sd <- diag(sqrt(diag(S)))
  r <- eigen_values(stats::cov2cor(S))
  kappa <- max(r) / min(r)
  dense <- max(eigen_values(t(L) %*% G %*% L))
  diagonal <- max(eigen_values(sd %*% G %*% sd)) * max(r) / kappa
  cat(sprintf("| %s | %.0f | %.2f | %.2f |\n", p, kappa, dense, diagonal))
}
