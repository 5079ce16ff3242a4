# The seed model sampled with nuts() through mcmc(), at scale: a short run of the whole
# path a user takes (warmup's adaptation, the trajectories, the kept draws).
#
#   Rscript bench/hlogit_nuts.R [--N 1e6] [--chains 4] [--threads 2] [--precision double]
#                               [--warmup 200] [--samples 200] [--rstan-grad seconds]
#
# Prints the wall time, the leapfrog steps of warmup and sampling, the time per
# chain-gradient, the traced parameters' posterior means against the values the data were
# drawn from, their R-hat and bulk ESS, and the slowest one's ESS per second of sampling
# (sampling's share of the wall time taken as its share of the leapfrog steps). With
# --rstan-grad (rstan's seconds per gradient, from bench/hlogit.R at the same N), the
# time rstan would take for the same number of gradients: an estimate, not a run (at
# N = 1e6 that is hours), which assumes its NUTS needs as many steps as lockstep's.
suppressPackageStartupMessages(library(lockstep))

script <- normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1]))
source(file.path(dirname(script), "hlogit_model.R"))
opt <- bench_options(list(N = "1e6", chains = "4", threads = "2", precision = "double",
                          warmup = "200", samples = "200", `rstan-grad` = ""))
N <- as.numeric(opt$N); chains <- as.integer(opt$chains); threads <- as.integer(opt$threads)
warmup <- as.integer(opt$warmup); samples <- as.integer(opt$samples)

repo_root <- dirname(dirname(script))
shared <- Sys.getenv("LOCKSTEP_SHARED", file.path(dirname(repo_root), "shared"))
sim <- hlogit_sim(N, shared)
m <- hlogit_model(sim$data, opt$precision)

set.seed(1)
wall <- system.time(draws <- mcmc(m, warmup = warmup, n_samples = samples, chains = chains,
                                  verbose = TRUE,  # progress on stderr: a run at scale is long
                                  compute_options = cpu_only(threads = threads)))[["elapsed"]]
params <- get_sampler_params(draws, inc_warmup = TRUE)
leapfrogs <- function(rows) sum(vapply(params, function(p) sum(p$n_leapfrog__[rows]), 0))
steps_warmup <- leapfrogs(seq_len(warmup)) / chains       # per chain
steps_sampling <- leapfrogs(warmup + seq_len(samples)) / chains
sampling_seconds <- wall * steps_sampling / (steps_warmup + steps_sampling)
per_gradient <- wall / ((steps_warmup + steps_sampling) * chains)
depth <- mean(vapply(params, function(p) mean(p$treedepth__[warmup + seq_len(samples)]), 0))
divergent <- sum(vapply(params, function(p) sum(p$divergent__[warmup + seq_len(samples)]), 0))

cat(sprintf("N = %g, %d chains, %d threads, %s: nuts(), %d warmup + %d sampling iterations (%d free parameters)\n",
            N, chains, threads, opt$precision, warmup, samples, m$n_free))
cat(sprintf("  wall %.1f s; leapfrog steps per chain: warmup %.0f, sampling %.0f (%.1f per iteration, mean tree depth %.2f); %d divergent\n",
            wall, steps_warmup, steps_sampling, steps_sampling / samples, depth, divergent))
cat(sprintf("  %.2f ms per chain-gradient, the sampler's work included\n", 1e3 * per_gradient))
# the traced alpha, beta, sigma_alpha, sigma_gamma in the order of simdata.R's truth
x <- as.matrix(draws)
ess <- ess_bulk(draws)
tab <- data.frame(truth = unname(unlist(sim$truth)), mean = colMeans(x), sd = apply(x, 2, sd),
                  rhat = rhat(draws), ess_bulk = ess)
print(format(tab, digits = 3))
cat(sprintf("  slowest: %s, bulk ESS %.0f, %.2f ESS per second of sampling (%.0f s)\n",
            names(which.min(ess)), min(ess), min(ess) / sampling_seconds, sampling_seconds))
if (nzchar(opt$`rstan-grad`)) {
  rstan_s <- as.numeric(opt$`rstan-grad`) * (steps_warmup + steps_sampling) * chains
  cat(sprintf("  rstan for as many gradients (estimate): %.0f s (%.1f h), %.0fx lockstep's wall time\n",
              rstan_s, rstan_s / 3600, rstan_s / wall))
}
