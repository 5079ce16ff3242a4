# greta's eight schools parameterisation at greta's defaults, over many seeds,
# lockstep beside rstan (issue 37, item 1): how often a run's mean of mu_theta
# is off by more than 4 Monte Carlo standard errors, how often a chain is
# stuck, and whether the run's own warnings named the stuck chain.
#
#   Rscript bench/eight_schools_seeds.R [--seeds 50] [--rstan yes|no]
#                                       [--adapt_delta 0.8]
#
# Run from the repository root, with an installed lockstep (R_LIBS may point
# at a private library) and, for the peer, rstan (make bench-setup). The Stan
# program is compiled once and cached in bench/cache/ (git-ignored).
#
# The model (greta's vignettes/example_models.Rmd):
#   sigma_eta ~ inverse_gamma(1, 1); eta ~ normal(0, sigma_eta) (8);
#   mu_theta ~ normal(0, 100); xi ~ normal(0, 5);
#   y ~ normal(mu_theta + xi * eta, sigma_y)
# at greta's defaults: 4 chains of 1000 warmup and 1000 kept iterations,
# nuts() (adapt_delta 0.8, max tree depth 10); rstan: the same, its defaults.
#
# The exact posterior mean and sd of mu_theta: given tau = |xi| sigma_eta,
# y_j ~ normal(mu_theta, sqrt(sigma_j^2 + tau^2)) and mu_theta's posterior is
# conjugate; tau's two factors are integrated on a 1200 x 1200 grid of their
# logarithms (xi's sign does not matter).
#
# Per run: z = |mean - exact| / MCSE, MCSE = sd / sqrt(bulk ESS) (lockstep's
# ess_bulk(), the same estimator for both samplers' draws); a chain is
# "stuck" when more than a quarter of its consecutive draws repeat (it rejects
# its proposals); "named" when a warning of the run names that chain.

args <- commandArgs(trailingOnly = TRUE)
opt <- list(seeds = "50", rstan = "yes", adapt_delta = "0.8")
i <- 1
while (i <= length(args)) {
  key <- sub("^--", "", args[i])
  if (!key %in% names(opt) || i == length(args)) stop("unknown or incomplete argument ", args[i])
  opt[[key]] <- args[i + 1]
  i <- i + 2
}
n_seeds <- as.integer(opt$seeds)
adapt_delta <- as.numeric(opt$adapt_delta)
use_rstan <- identical(opt$rstan, "yes")
suppressPackageStartupMessages(library(lockstep))
source("bench/peer_helpers.R")  # fix_boost()

y <- c(28, 8, -3, 7, -1, 1, 18, 12)
sigma_y <- c(15, 10, 16, 11, 9, 11, 10, 18)

exact_mu_theta <- function(points = 1200) {
  given_tau <- function(tau) {
    v <- sigma_y^2 + tau^2
    prec <- 1 / 100^2 + sum(1 / v)
    m <- sum(y / v) / prec
    c(log_marginal = -0.5 * sum(log(v)) - 0.5 * log(100^2 * prec) -
        0.5 * (sum(y^2 / v) - m^2 * prec), mean = m, var = 1 / prec)
  }
  grid <- expand.grid(log_xi = seq(log(1e-6), log(100), length.out = points),
                      log_se = seq(log(1e-6), log(1e4), length.out = points))
  xi <- exp(grid$log_xi)
  se <- exp(grid$log_se)
  at <- t(vapply(xi * se, given_tau, numeric(3)))
  # half-normal(0, 5) on |xi| and inverse-gamma(1, 1) on sigma_eta, with the
  # Jacobians of the logarithms
  lw <- at[, "log_marginal"] + stats::dnorm(xi, 0, 5, log = TRUE) + grid$log_xi -
    2 * log(se) - 1 / se + grid$log_se
  w <- exp(lw - max(lw))
  mean <- sum(w * at[, "mean"]) / sum(w)
  c(mean = mean, sd = sqrt(sum(w * (at[, "var"] + at[, "mean"]^2)) / sum(w) - mean^2))
}

# A run's verdict from its draws of mu_theta (a list of per-chain vectors)
# and the warnings it gave.
verdict <- function(chains, warnings, exact) {
  all <- unlist(chains)
  ess <- ess_bulk(coda::mcmc.list(lapply(chains, coda::mcmc)))
  mcse <- stats::sd(all) / sqrt(ess)
  repeats <- vapply(chains, function(v) mean(diff(v) == 0), numeric(1))
  stuck <- which(repeats > 0.25)
  named <- vapply(stuck, function(k) {
    any(grepl(sprintf("chains? ([0-9]+, )*%d\\b|chain %d:", k, k), warnings))
  }, logical(1))
  list(mean = mean(all), z = abs(mean(all) - exact[["mean"]]) / mcse, ess = ess,
       stuck = length(stuck), named = all(named), warned = length(warnings) > 0)
}

run_lockstep <- function(seed, m, exact) {
  warnings <- character()
  d <- withCallingHandlers({
    set.seed(seed)
    mcmc(m, sampler = nuts(adapt_delta = adapt_delta), verbose = FALSE)
  }, warning = function(w) {
    warnings <<- c(warnings, conditionMessage(w))
    invokeRestart("muffleWarning")
  })
  verdict(lapply(d, function(ch) as.numeric(ch[, "mu_theta"])), warnings, exact)
}

stan_code <- "
data { real y[8]; real<lower=0> sigma_y[8]; }
parameters { real mu_theta; real xi; vector[8] eta; real<lower=0> sigma_eta; }
model {
  sigma_eta ~ inv_gamma(1, 1);
  eta ~ normal(0, sigma_eta);
  mu_theta ~ normal(0, 100);
  xi ~ normal(0, 5);
  y ~ normal(mu_theta + xi * eta, sigma_y);
}
"

stan_program <- function() {
  path <- file.path("bench", "cache", "eight_schools_greta.rds")
  if (file.exists(path)) {
    cached <- readRDS(path)
    if (identical(cached$code, stan_code)) return(cached$model)
  }
  dir.create(dirname(path), showWarnings = FALSE, recursive = TRUE)
  fix_boost()
  cat("compiling the Stan program (about a minute) ...\n")
  sm <- rstan::stan_model(model_code = stan_code, model_name = "eight_schools_greta",
                          save_dso = TRUE)
  saveRDS(list(code = stan_code, model = sm), path)
  sm
}

run_rstan <- function(seed, sm, exact) {
  warnings <- character()
  fit <- withCallingHandlers(
    rstan::sampling(sm, data = list(y = y, sigma_y = sigma_y), chains = 4, iter = 2000,
                    warmup = 1000, seed = seed, cores = 2, refresh = 0,
                    control = list(adapt_delta = adapt_delta)),
    warning = function(w) {
      warnings <<- c(warnings, conditionMessage(w))
      invokeRestart("muffleWarning")
    })
  arr <- as.array(fit)[, , "mu_theta"]
  verdict(lapply(seq_len(ncol(arr)), function(k) as.numeric(arr[, k])), warnings, exact)
}

exact <- exact_mu_theta()
cat(sprintf("exact posterior of mu_theta: mean %.3f, sd %.3f\n", exact[["mean"]], exact[["sd"]]))
m <- local({
  sigma_eta <- inverse_gamma(1, 1)
  eta <- normal(0, sigma_eta, dim = 8)
  mu_theta <- normal(0, 100)
  xi <- normal(0, 5)
  distribution(y) <- normal(mu_theta + xi * eta, sigma_y)
  model(mu_theta, xi, eta, sigma_eta)
})
samplers <- list(lockstep = function(seed) run_lockstep(seed, m, exact))
if (use_rstan) {
  sm <- stan_program()
  samplers$rstan <- function(seed) run_rstan(seed, sm, exact)
}

rows <- list()
for (name in names(samplers)) {
  seconds <- system.time(runs <- lapply(seq_len(n_seeds), samplers[[name]]))[["elapsed"]]
  z <- vapply(runs, `[[`, numeric(1), "z")
  stuck <- vapply(runs, `[[`, numeric(1), "stuck")
  named <- vapply(runs, `[[`, logical(1), "named")
  off <- z > 4
  silent_bad <- (off | stuck > 0) & !(stuck > 0 & named)
  rows[[name]] <- data.frame(
    sampler = name, seeds = n_seeds, adapt_delta = adapt_delta,
    off_by_4_mcse = sum(off), with_stuck_chain = sum(stuck > 0),
    stuck_named = sum(stuck > 0 & named), bad_and_unnamed = sum(silent_bad),
    median_z = round(stats::median(z), 2), median_ess = round(stats::median(
      vapply(runs, `[[`, numeric(1), "ess"))),
    seconds = round(seconds, 1))
  cat(sprintf("%s: seeds with |mean - exact| > 4 MCSE: %s; with a stuck chain: %s\n", name,
              paste(which(off), collapse = " "), paste(which(stuck > 0), collapse = " ")))
}
print(do.call(rbind, rows), row.names = FALSE)
