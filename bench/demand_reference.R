# A NUTS reference posterior for seed 003's demand model at the small size, and svi()'s
# guides against it (issue 50): what SVI's speed costs in accuracy.
#
#   Rscript bench/demand_reference.R [--products 1e4] [--warmup 300] [--samples 300]
#                                    [--svi-minutes 10] [--save FILE] [--reference FILE]
#                                    [--progress 1]
#
# mcmc() (NUTS, 4 chains, 2 threads) on the model of bench/svi_demand.R, started at the
# priors' medians; extra_samples() then adds --samples draws at a time until every product
# elasticity's bulk ESS is at least 200 (or three rounds have been added). Then svi() with
# a mean-field and a low-rank guide (adam at 0.01, 4 particles), each for --svi-minutes of
# iterations at the rate a short run measures, and each guide's posterior means and sds of
# the product elasticities against NUTS's: correlation of the means, RMSE, and the median
# ratio of the sds. --save writes NUTS's means and sds (an .rds) for later runs;
# --reference reads such a file instead of running NUTS (the SVI comparison alone).
suppressMessages(library(lockstep))
args <- commandArgs(TRUE)
opt <- list(products = "1e4", warmup = "300", samples = "300", "svi-minutes" = "10", save = "",
            reference = "", progress = "1")
# (mcmc()'s progress bars, to a log when run in the background: NUTS here takes hours)
show <- opt$progress == "1"
for (i in seq_len(length(args) / 2) * 2 - 1) opt[[sub("^--", "", args[i])]] <- args[i + 1]
script <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
shared <- Sys.getenv("LOCKSTEP_SHARED", normalizePath(file.path(dirname(script), "..", "..", "shared")))
source(file.path(shared, "peers", "demand_sim.R"))
d <- sim_demand(as.numeric(opt$products))$data
source(file.path(dirname(script), "demand_model.R"), local = TRUE)
m <- model(product_a)
co <- cpu_only(threads = 2)
cat(sprintf("%d rows, %d free parameters; 2 threads\n", d$n_obs, m$n_free))

if (nzchar(opt$reference)) {
  ref <- readRDS(opt$reference)
  ref_mean <- ref$mean; ref_sd <- ref$sd
  cat(sprintf("NUTS reference from %s: %.0f s (%.1f min); bulk ESS min %.0f\n", opt$reference,
              ref$seconds, ref$seconds / 60, min(ref$ess)))
} else {
  set.seed(50)
  t_nuts <- system.time({
    draws <- mcmc(m, n_samples = as.integer(opt$samples), warmup = as.integer(opt$warmup), chains = 4,
                  initial_values = at_median, compute_options = co, verbose = show)
    ess <- ess_bulk(draws)
    rounds <- 0
    while (min(ess) < 200 && rounds < 3) {
      cat(sprintf("  %d draws a chain: smallest bulk ESS %.0f; adding %s\n", coda::niter(draws),
                  min(ess), opt$samples))
      draws <- extra_samples(draws, n_samples = as.integer(opt$samples), verbose = show)
      ess <- ess_bulk(draws)
      rounds <- rounds + 1
    }
  })[["elapsed"]]
  nuts <- as.matrix(draws)
  ref_mean <- colMeans(nuts); ref_sd <- apply(nuts, 2, sd)
  cat(sprintf("NUTS: %d + %d draws a chain, 4 chains, %.0f s (%.1f min); product elasticities' bulk ESS: min %.0f, median %.0f; max R-hat %.3f\n",
              as.integer(opt$warmup), coda::niter(draws), t_nuts, t_nuts / 60, min(ess), median(ess),
              max(rhat(draws))))
  if (nzchar(opt$save)) saveRDS(list(mean = ref_mean, sd = ref_sd, ess = ess, seconds = t_nuts,
                                     draws_a_chain = coda::niter(draws), max_rhat = max(rhat(draws))), opt$save)
}

compare <- function(guide, extra = list()) {
  fit_for <- function(n) {
    set.seed(51)
    do.call(svi, c(list(m, guide = guide, particles = 4, alpha = 0, n_iterations = n, tolerance = 0,
                        optimiser = adam(learning_rate = 0.01), n_draws = 1000,
                        initial_values = at_median, compute_options = co, verbose = FALSE), extra))
  }
  rate <- 200 / system.time(suppressWarnings(fit_for(200)))[["elapsed"]]
  n <- max(200L, as.integer(rate * 60 * as.numeric(opt$`svi-minutes`)))
  t <- system.time(fit <- suppressWarnings(fit_for(n)))[["elapsed"]]
  s <- as.matrix(fit$draws)[, names(ref_mean)]
  mu <- colMeans(s); sdv <- apply(s, 2, sd)
  cat(sprintf("svi(%s): %d iterations, %.0f s: means' correlation with NUTS %.3f, RMSE %.3f; sd / NUTS's sd: median %.2f (10%% %.2f, 90%% %.2f)\n",
              guide, n, t, stats::cor(mu, ref_mean), sqrt(mean((mu - ref_mean)^2)),
              median(sdv / ref_sd), quantile(sdv / ref_sd, 0.1), quantile(sdv / ref_sd, 0.9)))
}
compare("mean_field")
compare("low_rank", list(rank = 10))
