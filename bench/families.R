# Benchmark: a regression's likelihood in each of seventeen families, lockstep vs
# rstan, in one run. Each model is y ~ family(X b, phi): N rows, K covariates,
# b ~ normal(0, 1), one dispersion phi ~ lognormal(0, 0.5) per chain (shape,
# scale, size or precision, as the family has it), the family's mean or
# location a function of X b. This is where a family's per-element cost shows:
# the special functions of its log density (lgamma, digamma, pow) at every row
# and chain, or, where the family prepares them (dist.hpp's Prepared), once per
# chain.
#
#   Rscript bench/families.R [--N 1e5] [--K 5] [--chains 4] [--threads 1]
#                            [--families gamma,negbin,...] [--rstan yes|no]
#
# Prints per family the seconds per gradient of one chain through
# model_log_density() (4 chains in one call, divided by 4), rstan's seconds
# per gradient (rstan::grad_log_prob, one chain, one thread; one Stan program
# with the family picked by its data, compiled once), their ratio, and how far
# apart their log densities are at the same point (relative), as a check that
# they are the same model.
suppressPackageStartupMessages(library(lockstep))

args <- commandArgs(TRUE)
opt <- list(N = "1e5", K = "5", chains = "4", threads = "1", families = "all", rstan = "yes")
for (i in seq(1, length(args) - 1, by = 2)) opt[[sub("^--", "", args[i])]] <- args[i + 1]
N <- as.numeric(opt$N)
K <- as.integer(opt$K)
chains <- as.integer(opt$chains)
threads <- as.integer(opt$threads)
use_rstan <- opt$rstan == "yes" && requireNamespace("rstan", quietly = TRUE)
if (opt$rstan == "yes" && !use_rstan) {
  cat("rstan is not installed (make bench-setup installs it): timing lockstep only\n")
}

source("bench/peer_helpers.R")  # per_call(), fix_boost()

# Each family: its likelihood in lockstep (mu = X %*% b, phi the dispersion),
# which simulated response it takes, and its number in the Stan program below.
families <- list(
  normal = list(function(y, mu, phi) distribution(y) <- normal(mu, phi), "real", 1),
  student = list(function(y, mu, phi) distribution(y) <- student(4, mu, phi), "real", 2),
  lognormal = list(function(y, mu, phi) distribution(y) <- lognormal(mu, phi), "positive", 3),
  gamma = list(function(y, mu, phi) distribution(y) <- gamma(phi, phi / exp(mu)), "positive", 4),
  inverse_gamma = list(function(y, mu, phi) {
    distribution(y) <- inverse_gamma(phi, phi * exp(mu))
  }, "positive", 5),
  weibull = list(function(y, mu, phi) distribution(y) <- weibull(phi, exp(mu)), "positive", 6),
  logistic = list(function(y, mu, phi) distribution(y) <- logistic(mu, phi), "real", 7),
  cauchy = list(function(y, mu, phi) distribution(y) <- cauchy(mu, phi), "real", 8),
  laplace = list(function(y, mu, phi) distribution(y) <- laplace(mu, phi), "real", 9),
  exponential = list(function(y, mu, phi) distribution(y) <- exponential(exp(-mu)), "positive", 10),
  beta = list(function(y, mu, phi) {
    distribution(y) <- beta(phi * ilogit(mu), phi * (1 - ilogit(mu)))
  }, "unit", 11),
  poisson = list(function(y, mu, phi) distribution(y) <- poisson(exp(mu)), "count", 12),
  negbin = list(function(y, mu, phi) {
    distribution(y) <- negative_binomial(phi, 1 / (1 + exp(mu)))
  }, "count", 13),
  binomial = list(function(y, mu, phi) distribution(y) <- binomial(20, ilogit(mu)), "trials", 14),
  bernoulli = list(function(y, mu, phi) distribution(y) <- bernoulli(ilogit(mu)), "binary", 15),
  probit = list(function(y, mu, phi) distribution(y) <- bernoulli(iprobit(mu)), "binary", 16),
  binomial_probit = list(function(y, mu, phi) {
    distribution(y) <- binomial(20, iprobit(mu))
  }, "trials", 17)
)
if (opt$families != "all") families <- families[strsplit(opt$families, ",")[[1]]]

# target += keeps the constants lockstep keeps; the free state is (b, log phi)
# in both
stan_code <- "
data {
  int<lower=1> N; int<lower=1> K; matrix[N, K] X; int fam;
  vector[N] y; int yc[N];
}
parameters { vector[K] b; real<lower=0> phi; }
model {
  vector[N] mu = X * b;
  target += normal_lpdf(b | 0, 1) + lognormal_lpdf(phi | 0, 0.5);
  if (fam == 1) target += normal_lpdf(y | mu, phi);
  else if (fam == 2) target += student_t_lpdf(y | 4, mu, phi);
  else if (fam == 3) target += lognormal_lpdf(y | mu, phi);
  else if (fam == 4) target += gamma_lpdf(y | phi, phi ./ exp(mu));
  else if (fam == 5) target += inv_gamma_lpdf(y | phi, phi * exp(mu));
  else if (fam == 6) target += weibull_lpdf(y | phi, exp(mu));
  else if (fam == 7) target += logistic_lpdf(y | mu, phi);
  else if (fam == 8) target += cauchy_lpdf(y | mu, phi);
  else if (fam == 9) target += double_exponential_lpdf(y | mu, phi);
  else if (fam == 10) target += exponential_lpdf(y | exp(-mu));
  else if (fam == 11) target += beta_lpdf(y | phi * inv_logit(mu), phi * (1 - inv_logit(mu)));
  else if (fam == 12) target += poisson_log_lpmf(yc | mu);
  else if (fam == 13) target += neg_binomial_lpmf(yc | phi, exp(-mu));
  else if (fam == 14) target += binomial_logit_lpmf(yc | 20, mu);
  else if (fam == 15) target += bernoulli_logit_lpmf(yc | mu);
  else if (fam == 16) target += bernoulli_lpmf(yc | Phi(mu));
  else target += binomial_lpmf(yc | 20, Phi(mu));
}"
if (use_rstan) {
  suppressPackageStartupMessages(library(rstan))
  fix_boost()
  cat("compiling the Stan program (about a minute)\n")
  sm <- rstan::stan_model(model_code = stan_code)
}

set.seed(1)
X <- matrix(stats::rnorm(N * K), N, K)
eta <- as.vector(X %*% stats::rnorm(K, 0, 0.2))
responses <- list(
  real = eta + stats::rnorm(N), positive = stats::rgamma(N, 2, 2 / exp(eta)),
  unit = stats::rbeta(N, 2, 2), count = stats::rpois(N, exp(eta)),
  trials = stats::rbinom(N, 20, stats::plogis(eta)), binary = stats::rbinom(N, 1, stats::plogis(eta))
)

fmt <- function(s) if (s >= 1e-3) sprintf("%.3f ms", s * 1e3) else sprintf("%.1f us", s * 1e6)
cat(sprintf("lockstep %s, N = %g, K = %d, %d chains, %d threads; %s\n", packageVersion("lockstep"),
            N, K, chains, threads, if (use_rstan) paste("rstan", packageVersion("rstan")) else "no rstan"))
cat(sprintf("%-14s %14s %10s %14s %9s %11s\n", "family", "per chain-grad", "ns/row", "rstan /grad",
            "x rstan", "lp agrees"))
for (name in names(families)) {
  fam <- families[[name]]
  y <- responses[[fam[[2]]]]
  b <- normal(0, 1, dim = K)
  phi <- lognormal(0, 0.5)
  fam[[1]](y, X %*% b, phi)
  m <- model(b, phi)
  free <- matrix(stats::rnorm(chains * m$n_free, 0, 0.1), chains, m$n_free)
  density <- function() {
    lockstep:::model_log_density(m, free, gradient = TRUE,
                                 compute_options = cpu_only(threads = threads))
  }
  sec <- per_call(density) / chains
  lp <- density()$log_density
  stan_sec <- NA
  agrees <- "-"
  if (use_rstan) {
    discrete <- fam[[2]] %in% c("count", "trials", "binary")
    data <- list(N = N, K = K, X = X, fam = fam[[3]], y = if (discrete) rep(0, N) else y,
                 yc = if (discrete) as.integer(y) else rep(0L, N))
    utils::capture.output(f <- suppressMessages(suppressWarnings(
      rstan::sampling(sm, data = data, chains = 0))))
    u <- free[1, ]
    stan_sec <- per_call(function() rstan::grad_log_prob(f, u))
    stan_lp <- rstan::log_prob(f, u, adjust_transform = TRUE)
    agrees <- sprintf("%.1e", abs(stan_lp - lp[1]) / abs(lp[1]))
  }
  cat(sprintf("%-14s %14s %10.1f %14s %9s %11s\n", name, fmt(sec), sec / N * 1e9,
              if (is.na(stan_sec)) "-" else fmt(stan_sec),
              if (is.na(stan_sec)) "-" else sprintf("%.1fx", stan_sec / sec), agrees))
}
