# Seed 003's hierarchical demand model fitted by svi() (issue 36): milliseconds per
# iteration of a mean-field guide with 4 particles, and the elasticities against the
# simulation's truth.
#
#   Rscript bench/svi_demand.R [--products 1e4] [--iterations 300] [--threads 2]
#                              [--precision double,single] [--fit 3000]
#
# The data: ../shared/peers/demand_sim.R's sim_demand(products) (1e4: 1.57M rows, 10
# categories, 1,570 week-category cells). The model: the seed's priors, every level
# non-centred as its LocScaleReparam makes them (21,581 free parameters at 1e4 products):
#
#   global_a ~ normal(-2, 1); category_a ~ normal(global_a, 1);
#   product_a ~ normal(category_a[category], 2); product_effect ~ normal(0, 3);
#   time_cat_effects ~ normal(0, 3);
#   units ~ poisson(exp(product_a[product] log_price + time_cat_effects[week_cat]
#                       + product_effect[product]))
#
# (the seed clips the log demand to [-4, 20] for stability; this leaves it unclipped).
# Time per iteration: two fits of n and 2n iterations (tolerance 0), their difference over
# n, so that building the model, the guide's draws and the Pareto k do not count. Then a
# fit of --fit iterations (adam at 0.01, as the seed's schedule starts) and the posterior
# means of the elasticities against the truth.
suppressMessages(library(lockstep))
args <- commandArgs(TRUE)
opt <- list(products = "1e4", iterations = "300", threads = "2", precision = "double,single",
            fit = "3000", lr = "0.01")
for (i in seq_len(length(args) / 2) * 2 - 1) opt[[sub("^--", "", args[i])]] <- args[i + 1]
script <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
shared <- normalizePath(file.path(dirname(script), "..", "..", "shared"))
source(file.path(shared, "peers", "demand_sim.R"))

sim <- sim_demand(as.numeric(opt$products))
d <- sim$data
cat(sprintf("sim_demand(%s): %d rows, %d products, %d categories, %d week-category cells\n",
            opt$products, d$n_obs, d$n_product, d$n_cat, d$n_week_cat))

built <- system.time({
  z_global <- normal(0, 1)
  z_category <- normal(0, 1, dim = d$n_cat)
  z_product <- normal(0, 1, dim = d$n_product)
  z_effect <- normal(0, 1, dim = d$n_product)
  z_time <- normal(0, 1, dim = d$n_week_cat)
  global_a <- -2 + z_global
  category_a <- global_a + z_category
  product_a <- category_a[d$category_of_product] + 2 * z_product
  product_effect <- 3 * z_effect
  time_cat_effects <- 3 * z_time
  log_demand <- product_a[d$product] * d$log_price + time_cat_effects[d$week_cat] +
    product_effect[d$product]
  units <- d$units
  distribution(units) <- poisson(exp(log_demand))
})[["elapsed"]]
# every guide starts at the priors' medians (NumPyro's init_to_median): z = 0
at_median <- initials(z_global = 0, z_category = rep(0, d$n_cat), z_product = rep(0, d$n_product),
                      z_effect = rep(0, d$n_product), z_time = rep(0, d$n_week_cat))

threads <- as.integer(opt$threads)
n <- as.integer(opt$iterations)
co <- cpu_only(threads = threads)
for (precision in strsplit(opt$precision, ",")[[1]]) {
  m <- model(global_a, category_a, product_a, precision = precision)
  run <- function(iterations) {
    set.seed(3)
    system.time(svi(m, particles = 4, alpha = 0, n_iterations = iterations, tolerance = 0,
                    n_draws = 4, initial_values = at_median, verbose = FALSE,
                    compute_options = co))[["elapsed"]]
  }
  t1 <- run(n)
  t2 <- run(2 * n)
  ms <- 1e3 * (t2 - t1) / n
  cat(sprintf("%s, %d threads: %d free parameters; %.1f ms per iteration of 4 particles (model built in %.1f s)\n",
              precision, threads, m$n_free, ms, built))
}

# accuracy: the elasticities' posterior means against the simulation's truth
m <- model(global_a, category_a, product_a)
set.seed(4)
fit_time <- system.time(
  fit <- suppressWarnings(svi(m, particles = 4, alpha = 0, n_iterations = as.integer(opt$fit),
                              optimiser = adam(learning_rate = as.numeric(opt$lr)),
                              tolerance = 0, n_draws = 200, initial_values = at_median,
                              verbose = FALSE, compute_options = co))
)[["elapsed"]]
draws <- as.matrix(fit$draws)
product_a <- colMeans(draws[, grep("^product_a\\[", colnames(draws)), drop = FALSE])
category_a <- colMeans(draws[, grep("^category_a\\[", colnames(draws)), drop = FALSE])
truth <- sim$truth
cat(sprintf("fit of %s iterations: %.0f s; ELBO (IW) %.1f; Pareto k %.2f\n", opt$fit, fit_time,
            fit$elbo, fit$k_hat))
cat(sprintf("global elasticity %.3f (truth %.3f)\n", mean(draws[, "global_a"]), truth$beta_g))
cat(sprintf("category elasticities: RMSE %.3f against the truth, correlation %.3f\n",
            sqrt(mean((category_a - truth$beta_cat)^2)), stats::cor(category_a, truth$beta_cat)))
cat(sprintf("product elasticities: RMSE %.3f against the truth, correlation %.3f\n",
            sqrt(mean((product_a - truth$beta_product)^2)),
            stats::cor(product_a, truth$beta_product)))
