# Fixed-seed draws of nuts(), chees() and hmc() on every posteriordb posterior
# of the acceptance tests, for checking that a refactor leaves the samplers'
# draws bit-identical: run it with each build installed, then compare.
#
#   R_LIBS=/lib/before Rscript bench/fixed_seed_draws.R before.rds
#   R_LIBS=/lib/after  Rscript bench/fixed_seed_draws.R after.rds
#   Rscript bench/fixed_seed_draws.R --compare before.rds after.rds
#
# Run from the repository root (the models are tests/testthat/test_posteriordb.R's,
# through bench/posteriordb_models.R). Each run: set.seed(17), 150 warmup and
# 150 kept iterations of 4 chains on one thread; the draws and the sampler's
# diagnostics (get_sampler_params()) are saved.
args <- commandArgs(trailingOnly = TRUE)
if (length(args) == 3 && args[1] == "--compare") {
  a <- readRDS(args[2])
  b <- readRDS(args[3])
  if (!identical(names(a), names(b))) stop("the two files hold different runs")
  same <- vapply(names(a), function(k) identical(a[[k]], b[[k]]), logical(1))
  cat(sprintf("%d of %d runs bit-identical (draws and sampler diagnostics)\n", sum(same),
              length(same)))
  if (!all(same)) cat("differ:", names(a)[!same], sep = "\n  ")
  quit(status = if (all(same)) 0 else 1)
}
if (length(args) != 1) stop("usage: Rscript bench/fixed_seed_draws.R OUT.rds")
suppressMessages(library(lockstep))
source("bench/posteriordb_models.R")
defs <- posteriordb_definitions()
out <- list()
for (name in names(defs$posteriordb_posteriors)) {
  spec <- defs$posteriordb_posteriors[[name]]
  m <- spec$build(defs$posteriordb_data(name))
  for (s in c("nuts", "chees", "hmc")) {
    sampler <- switch(s, nuts = nuts(), chees = chees(), hmc = hmc())
    set.seed(17)
    draws <- suppressWarnings(mcmc(m, sampler = sampler, n_samples = 150, warmup = 150,
                                   chains = 4, verbose = FALSE,
                                   compute_options = cpu_only(threads = 1)))
    out[[paste(name, s)]] <- list(draws = as.matrix(draws), params = get_sampler_params(draws))
    cat(name, s, "\n")
  }
}
saveRDS(out, args[1])
