# The seed model sampled with nuts() through mcmc(), at scale: a short run of the whole
# path a user takes (warmup's adaptation, the trajectories, the kept draws).
#
#   Rscript bench/hlogit_nuts.R [--N 1e6] [--G N/10] [--chains 4] [--threads 2]
#                               [--precision double] [--warmup 200] [--samples 200]
#                               [--rstan-grad seconds] [--rstan-run no|yes]
#                               [--start gradient|unit] [--seed 1] [--save file.rds]
#                               [--max_energy_error default|number]
#
# Prints the wall time, the leapfrog steps of warmup and sampling, the time per
# chain-gradient, the traced parameters' posterior means against the values the data were
# drawn from, their R-hat and bulk ESS, and the slowest one's ESS per second of sampling
# (sampling's share of the wall time taken as its share of the leapfrog steps). With
# --rstan-grad (rstan's seconds per gradient, from bench/hlogit.R at the same N), the
# time rstan would take for the same number of gradients: an estimate, not a run (at
# N = 1e6 that is hours), which assumes its NUTS needs as many steps as lockstep's.
# --start unit runs nuts(diag_sd = 1), whose warmup starts from the unit metric as Stan's
# does, rather than from the gradient at the initial values (nuts()'s default). With
# --rstan-run yes, rstan's NUTS (Stan's defaults, diag_e) samples the same data with
# the same chains, cores and iterations (peers/hlogit.stan, compiled once and cached in
# bench/cache/ as hlogit.R does), and the same measures are printed for it beside
# lockstep's, with the ratio of the slowest parameter's ESS per second (wall time of the
# whole run, warmup included, and of sampling alone): the sampler's quality at scale
# (steps per iteration, step size, ESS per draw) as well as the gradient's cost. Only for
# small N: rstan's NUTS at N = 2e4, G = 500 takes about half an hour on 2 cores.
# --max_energy_error passes nuts() its WALNUTS threshold (split steps, ?nuts).
# With --save, lockstep's sampler parameters by iteration (warmup included, a data frame
# per chain) and the traced draws are saved there, to see where the leapfrog steps went.
suppressPackageStartupMessages(library(lockstep))

script <- normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1]))
source(file.path(dirname(script), "hlogit_model.R"))
opt <- bench_options(list(N = "1e6", G = "", chains = "4", threads = "2", precision = "double",
                          warmup = "200", samples = "200", `rstan-grad` = "", `rstan-run` = "no",
                          start = "gradient", seed = "1", save = "",
                          max_energy_error = "default"))
if (!opt$start %in% c("gradient", "unit")) stop("--start must be gradient or unit", call. = FALSE)
N <- as.numeric(opt$N); chains <- as.integer(opt$chains); threads <- as.integer(opt$threads)
G <- if (nzchar(opt$G)) as.integer(opt$G) else NULL
warmup <- as.integer(opt$warmup); samples <- as.integer(opt$samples)

repo_root <- dirname(dirname(script))
shared <- Sys.getenv("LOCKSTEP_SHARED", file.path(dirname(repo_root), "shared"))
sim <- hlogit_sim(N, shared, G)
m <- hlogit_model(sim$data, opt$precision)

# The measures of one run: `wall` seconds, `params` a list per chain of its sampler's
# parameters by iteration (warmup first: n_leapfrog__, treedepth__, divergent__,
# stepsize__), `draws` an mcmc.list of the traced parameters' kept draws.
report <- function(label, wall, params, draws) {
  leapfrogs <- function(rows) sum(vapply(params, function(p) sum(p$n_leapfrog__[rows]), 0))
  kept <- warmup + seq_len(samples)
  steps_warmup <- leapfrogs(seq_len(warmup)) / chains       # per chain
  steps_sampling <- leapfrogs(kept) / chains
  sampling_seconds <- wall * steps_sampling / (steps_warmup + steps_sampling)
  per_gradient <- wall / ((steps_warmup + steps_sampling) * chains)
  depth <- mean(vapply(params, function(p) mean(p$treedepth__[kept]), 0))
  step <- mean(vapply(params, function(p) mean(p$stepsize__[kept]), 0))
  divergent <- sum(vapply(params, function(p) sum(p$divergent__[kept]), 0))
  cat(sprintf("%s: wall %.1f s; leapfrog steps per chain: warmup %.0f, sampling %.0f (%.1f per iteration, mean tree depth %.2f, step size %.3g); %d divergent\n",
              label, wall, steps_warmup, steps_sampling, steps_sampling / samples, depth, step,
              divergent))
  cat(sprintf("  %.2f ms per chain-gradient, the sampler's work included\n", 1e3 * per_gradient))
  # the traced alpha, beta, sigma_alpha, sigma_gamma in the order of simdata.R's truth
  x <- as.matrix(draws)
  ess <- lockstep::ess_bulk(draws)  # (rstan, attached later, has its own ess_bulk and rhat)
  tab <- data.frame(truth = unname(unlist(sim$truth)), mean = colMeans(x), sd = apply(x, 2, sd),
                    rhat = lockstep::rhat(draws), ess_bulk = ess)
  print(format(tab, digits = 3))
  cat(sprintf("  slowest: %s, bulk ESS %.0f (%.3f per draw), %.3f ESS per second of the whole run, %.3f of sampling (%.0f s)\n",
              names(which.min(ess)), min(ess), min(ess) / (samples * chains), min(ess) / wall,
              min(ess) / sampling_seconds, sampling_seconds))
  invisible(list(wall = wall, ess = min(ess), sampling_seconds = sampling_seconds,
                 gradients = (steps_warmup + steps_sampling) * chains))
}

cat(sprintf("N = %g, G = %d, %d chains, %d threads, %s: %d warmup + %d sampling iterations (%d free parameters), warmup's metric starting from %s\n",
            N, sim$data$G, chains, threads, opt$precision, warmup, samples, m$n_free,
            if (opt$start == "unit") "the unit metric" else "the gradient"))
sampler_args <- if (opt$start == "unit") list(diag_sd = 1) else list()
# (default: nuts()'s own, also for a lockstep from before the argument)
if (opt$max_energy_error != "default") {
  sampler_args$max_energy_error <- as.numeric(opt$max_energy_error)
}
sampler <- do.call(nuts, sampler_args)
set.seed(as.integer(opt$seed))
wall <- system.time(draws <- mcmc(m, sampler = sampler, warmup = warmup, n_samples = samples,
                                  chains = chains, verbose = TRUE,  # progress on stderr: a run at scale is long
                                  compute_options = cpu_only(threads = threads)))[["elapsed"]]
params <- lapply(get_sampler_params(draws, inc_warmup = TRUE), as.data.frame)
ours <- report("lockstep nuts()", wall, params, draws)
if (nzchar(opt$save)) saveRDS(list(params = params, draws = draws, wall = wall), opt$save)
if (nzchar(opt$`rstan-grad`)) {
  rstan_s <- as.numeric(opt$`rstan-grad`) * ours$gradients
  cat(sprintf("  rstan for as many gradients (estimate): %.0f s (%.1f h), %.0fx lockstep's wall time\n",
              rstan_s, rstan_s / 3600, rstan_s / wall))
}

if (opt$`rstan-run` == "yes") {
  suppressPackageStartupMessages(library(rstan))
  source(file.path(repo_root, "bench", "peer_helpers.R"))
  fix_boost()
  # the model hlogit.R caches as bench/cache/hlogit.rds
  sm <- readRDS(cached_stan_model(file.path(shared, "peers", "hlogit.stan"),
                                  file.path(repo_root, "bench", "cache", "hlogit.rds"),
                                  file.path(shared, "peers")))
  wall_stan <- system.time(fit <- sampling(
    sm, data = sim$data, chains = chains, cores = threads, iter = warmup + samples,
    warmup = warmup, seed = as.integer(opt$seed), refresh = max(1, (warmup + samples) %/% 10)))[["elapsed"]]
  stan_params <- lapply(get_sampler_params(fit, inc_warmup = TRUE), as.data.frame)
  stan_draws <- As.mcmc.list(fit, pars = c("alpha", "beta", "sigma_alpha", "sigma_gamma"))
  theirs <- report("rstan NUTS", wall_stan, stan_params, stan_draws)
  cat(sprintf("lockstep / rstan, slowest parameter's ESS per second: %.1fx over the whole run, %.1fx in sampling\n",
              (ours$ess / ours$wall) / (theirs$ess / theirs$wall),
              (ours$ess / ours$sampling_seconds) / (theirs$ess / theirs$sampling_seconds)))
}
