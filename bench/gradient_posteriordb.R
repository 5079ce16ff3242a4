# The engine alone on posteriordb's reference posteriors: microseconds per log
# density and gradient of 1, 2 and 4 chains on one thread (`ls_engine_time`),
# the fastest of five runs (this VM's timings swing by 20% and more between
# runs; the fastest is the one least disturbed). The models are the acceptance
# tests' (tests/testthat/test_posteriordb.R), at random points near the origin
# of their unconstrained space.
#
#   R_LIBS=<library with lockstep> LOCKSTEP_SHARED=../shared \
#     Rscript bench/gradient_posteriordb.R [--posteriors name,name,...] [--reps 30000]
#
# Default: gp_pois_regr-gp_pois_regr and kilpisjarvi_mod-kilpisjarvi, the two
# whose gradients cost the most per leapfrog step among the small ones. Results in
# bench/RESULTS.md ("Small models' kernels").
suppressMessages(library(lockstep))
ns <- asNamespace("lockstep")

args <- commandArgs(trailingOnly = TRUE)
opt <- list(posteriors = "gp_pois_regr-gp_pois_regr,kilpisjarvi_mod-kilpisjarvi",
            reps = "30000")
for (k in seq(1, length(args), by = 2)) {
  if (length(args) < k + 1) break
  opt[[sub("^--", "", args[k])]] <- args[k + 1]
}

source("bench/posteriordb_models.R")
defs <- posteriordb_definitions()

cat(sprintf("lockstep %s (%s); one thread; the fastest of 5 runs of %s gradients\n",
            utils::packageVersion("lockstep"), dirname(system.file(package = "lockstep")),
            opt$reps))
for (p in strsplit(opt$posteriors, ",")[[1]]) {
  m <- defs$posteriordb_posteriors[[p]]$build(defs$posteriordb_data(p))
  eng <- ns$model_engine(m)
  set.seed(1)
  free <- matrix(rnorm(4 * m$n_free, sd = 0.3), 4)
  for (C in c(1L, 2L, 4L)) {
    t <- replicate(5, ns$ls_engine_time(eng, free[seq_len(C), , drop = FALSE],
                                        ns$check_compute_options(cpu_only(threads = 1)),
                                        as.integer(opt$reps)))
    cat(sprintf("%-40s %d chains: %6.2f us per gradient (%5.2f per chain)\n", p, C,
                1e6 * min(t), 1e6 * min(t) / C))
  }
}
