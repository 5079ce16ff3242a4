# greta's hierarchical linear regression with random slopes (its
# vignettes/example_models.Rmd, hierarchical_linear_slopes), at greta's
# defaults over many seeds, lockstep beside rstan (issue 49): how often a
# run's mean of `int` is off by more than 4 Monte Carlo standard errors from
# a long reference run, how often a chain is stuck, whether the run's
# warnings named it, and how often lockstep's warmup moved a stuck chain.
#
#   Rscript bench/slopes_seeds.R [--seeds 50] [--rstan yes|no]
#                                [--adapt_delta 0.8]
#                                [--adapt_step_size default|per_chain|shared]
#                                [--max_energy_error default|number]
#
# Run from the repository root, with an installed lockstep (R_LIBS may point
# at a private library) and rstan (make bench-setup), which also makes the
# reference: 4 chains of 25,000 kept draws at adapt_delta 0.99 (cached in
# bench/cache/, git-ignored). Its mean of `int` has an MCSE far below the
# runs' own.
#
# The model, on iris (150 rows, 3 species; species 1 the baseline):
#   int ~ normal(0, 10); coef ~ normal(0, 10); sd ~ half-cauchy(0, 3);
#   species_int_sd, species_slope_sd ~ lognormal(0, 1);
#   species_int, species_slope ~ normal(0, their sd) (2 each);
#   Sepal.Length ~ normal(int + coef * Sepal.Width + species_int_eff[species]
#                         + Sepal.Width * species_slope_eff[species], sd)
# at greta's defaults: 4 chains of 1000 warmup and 1000 kept iterations.
# Per run: as bench/seed_runs.R says.

source("bench/seed_runs.R")
opt <- seeds_options(list(seeds = "50", rstan = "yes", adapt_delta = "0.8",
                          adapt_step_size = "default", max_energy_error = "default"))
n_seeds <- as.integer(opt$seeds)
adapt_delta <- as.numeric(opt$adapt_delta)
use_rstan <- identical(opt$rstan, "yes")
suppressPackageStartupMessages(library(lockstep))

species_id <- as.numeric(iris$Species)
width <- iris$Sepal.Width
length_y <- iris$Sepal.Length

m <- local({
  int <- normal(0, 10)
  coef <- normal(0, 10)
  sd <- cauchy(0, 3, truncation = c(0, Inf))
  species_int_sd <- lognormal(0, 1)
  species_int <- normal(0, species_int_sd, dim = 2)
  species_int_eff <- rbind(0, species_int)
  species_slope_sd <- lognormal(0, 1)
  species_slope <- normal(0, species_slope_sd, dim = 2)
  species_slope_eff <- rbind(0, species_slope)
  mu <- int + coef * width + species_int_eff[species_id] + width * species_slope_eff[species_id]
  distribution(length_y) <- normal(mu, sd)
  model(int, coef, sd, species_int_sd, species_slope_sd)
})

stan_code <- "
data { int N; vector[N] width; vector[N] y; int species[N]; }
parameters {
  real int0; real coef; real<lower=0> sd_y;
  real<lower=0> species_int_sd; vector[2] species_int;
  real<lower=0> species_slope_sd; vector[2] species_slope;
}
model {
  vector[3] ie = append_row(0, species_int);
  vector[3] se = append_row(0, species_slope);
  int0 ~ normal(0, 10);
  coef ~ normal(0, 10);
  sd_y ~ cauchy(0, 3);
  species_int_sd ~ lognormal(0, 1);
  species_slope_sd ~ lognormal(0, 1);
  species_int ~ normal(0, species_int_sd);
  species_slope ~ normal(0, species_slope_sd);
  y ~ normal(int0 + coef * width + ie[species] + width .* se[species], sd_y);
}
"
stan_data <- list(N = length(length_y), width = width, y = length_y, species = species_id)

if (!requireNamespace("rstan", quietly = TRUE)) stop("rstan is needed for the reference (make bench-setup)")
sm <- stan_program(stan_code, "slopes_greta")
reference <- local({
  path <- file.path("bench", "cache", "slopes_reference.rds")
  if (file.exists(path) && identical(readRDS(path)$code, stan_code)) return(readRDS(path)$int)
  cat("the reference run (4 chains of 25,000, adapt_delta 0.99) ...\n")
  fit <- rstan::sampling(sm, data = stan_data, chains = 4, iter = 27000, warmup = 2000,
                         seed = 4242, cores = 2, refresh = 0,
                         control = list(adapt_delta = 0.99, max_treedepth = 12))
  draws <- as.array(fit)[, , "int0"]
  ref <- c(mean = mean(draws), sd = stats::sd(draws),
           mcse = stats::sd(draws) / sqrt(ess_bulk(coda::mcmc.list(
             lapply(seq_len(ncol(draws)), function(k) coda::mcmc(draws[, k]))))))
  saveRDS(list(code = stan_code, int = ref), path)
  ref
})
cat(sprintf("reference posterior of int: mean %.4f (MCSE %.4f), sd %.4f\n", reference[["mean"]],
            reference[["mcse"]], reference[["sd"]]))

samplers <- list(lockstep = function(seed) {
  lockstep_verdict(seed, function() {
    mcmc(m, sampler = seeds_sampler(adapt_delta, opt$adapt_step_size, opt$max_energy_error),
         verbose = FALSE)
  }, "int", reference[["mean"]])
})
if (use_rstan) {
  samplers$rstan <- function(seed) {
    rstan_verdict(seed, function(seed) {
      rstan::sampling(sm, data = stan_data, chains = 4, iter = 2000, warmup = 1000, seed = seed,
                      cores = 2, refresh = 0, control = list(adapt_delta = adapt_delta))
    }, "int0", reference[["mean"]])
  }
}
seeds_table(samplers, n_seeds, adapt_delta)
