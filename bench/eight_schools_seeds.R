# greta's eight schools parameterisation at greta's defaults, over many seeds,
# lockstep beside rstan (issue 37, item 1): how often a run's mean of mu_theta
# is off by more than 4 Monte Carlo standard errors, how often a chain is
# stuck, and whether the run's own warnings named the stuck chain.
#
#   Rscript bench/eight_schools_seeds.R [--seeds 50] [--rstan yes|no]
#                                       [--adapt_delta 0.8]
#                                       [--adapt_step_size default|per_chain|shared]
#                                       [--max_energy_error default|number]
#
# (--adapt_step_size default: nuts()'s own, also for a lockstep from before
# the argument, issue 49.) The table also counts the runs whose warmup moved
# a stuck chain (mcmc()'s warmup rescue, issue 49).
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
# Per run (bench/seed_runs.R): z = |mean - exact| / MCSE, MCSE = sd /
# sqrt(bulk ESS); a chain is "stuck" when more than a quarter of its
# consecutive draws repeat; "named" when a warning of the run names it.

source("bench/seed_runs.R")  # verdict(), seeds_table()
opt <- seeds_options(list(seeds = "50", rstan = "yes", adapt_delta = "0.8",
                          adapt_step_size = "default", max_energy_error = "default"))
n_seeds <- as.integer(opt$seeds)
adapt_delta <- as.numeric(opt$adapt_delta)
use_rstan <- identical(opt$rstan, "yes")
suppressPackageStartupMessages(library(lockstep))

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

run_lockstep <- function(seed, m, exact) {
  lockstep_verdict(seed, function() {
    mcmc(m, sampler = seeds_sampler(adapt_delta, opt$adapt_step_size, opt$max_energy_error),
         verbose = FALSE)
  }, "mu_theta", exact[["mean"]])
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

run_rstan <- function(seed, sm, exact) {
  rstan_verdict(seed, function(seed) {
    rstan::sampling(sm, data = list(y = y, sigma_y = sigma_y), chains = 4, iter = 2000,
                    warmup = 1000, seed = seed, cores = 2, refresh = 0,
                    control = list(adapt_delta = adapt_delta))
  }, "mu_theta", exact[["mean"]])
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
  sm <- stan_program(stan_code, "eight_schools_greta")
  samplers$rstan <- function(seed) run_rstan(seed, sm, exact)
}

seeds_table(samplers, n_seeds, adapt_delta)
