# Seed 003's hierarchical demand model fitted by svi() (issue 36): milliseconds per
# iteration of a mean-field guide with 4 particles, and the elasticities against the
# simulation's truth.
#
#   Rscript bench/svi_demand.R [--products 1e4] [--iterations 300] [--threads 2]
#                              [--precision double,single] [--fit 3000] [--batch 0.1]
#                              [--fit-batch 0] [--mcmc 0] [--gpu 0] [--export FILE]
#                              [--guide mean_field]
#
# --guide times another of svi()'s guides (low_rank: rank 10 here) per iteration.
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
# means of the elasticities against the truth. The per-iteration times are also taken with
# minibatches of --batch of the rows (batch_size), and with --fit-batch 1 the fit uses them
# too. With --mcmc N, mcmc() draws N samples after N warmup iterations (4 chains) on the
# same data, and the fit's elasticities are compared with its posterior means (run it on a
# smaller dataset: --products 1e3 is a tenth of the seed's).
# With --gpu 1 the fits run on GPU 0 (gpu_only(0, tile_kernel = TRUE): the tile kernel,
# which minibatches need; the guide lives in the GPU's memory), and --threads is unused.
# With --export FILE the data are written to FILE for bench/svi_demand_numpyro.py (the
# seed's NumPyro model on the same rows: bench/svi_demand_gpu.sh runs both), and --fit 0
# skips the accuracy fit.
suppressMessages(library(lockstep))
args <- commandArgs(TRUE)
opt <- list(products = "1e4", iterations = "300", threads = "2", precision = "double,single",
            fit = "3000", lr = "0.01", batch = "0.1", "fit-batch" = "0", mcmc = "0", gpu = "0",
            export = "", guide = "mean_field")
for (i in seq_len(length(args) / 2) * 2 - 1) opt[[sub("^--", "", args[i])]] <- args[i + 1]
script <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
shared <- normalizePath(file.path(dirname(script), "..", "..", "shared"))
source(file.path(shared, "peers", "demand_sim.R"))

# (the large size, 1e6 products, by chunks: bench/demand_sim_chunks.R)
source(file.path(dirname(script), "demand_sim_chunks.R"))
sim <- if (as.numeric(opt$products) > 2e5) sim_demand_chunks(as.numeric(opt$products)) else
  sim_demand(as.numeric(opt$products))
d <- sim$data
cat(sprintf("sim_demand(%s): %d rows, %d products, %d categories, %d week-category cells\n",
            opt$products, d$n_obs, d$n_product, d$n_cat, d$n_week_cat))
if (nzchar(opt$export)) {
  # four sizes as float64 (rows, products, categories, week-category cells), then 0-based
  # int32 indices product and week_cat (a row each) and category_of_product (a product
  # each), float64 log_price and int32 units (a row each): bench/svi_demand_numpyro.py
  # reads them
  con <- file(opt$export, "wb")
  writeBin(as.double(c(d$n_obs, d$n_product, d$n_cat, d$n_week_cat)), con)
  writeBin(as.integer(d$product - 1L), con, size = 4)
  writeBin(as.integer(d$week_cat - 1L), con, size = 4)
  writeBin(as.integer(d$category_of_product - 1L), con, size = 4)
  writeBin(as.double(d$log_price), con)
  writeBin(as.integer(d$units), con, size = 4)
  close(con)
  cat(sprintf("data written to %s\n", opt$export))
}

built <- system.time(source(file.path(dirname(script), "demand_model.R"), local = TRUE))[["elapsed"]]

threads <- as.integer(opt$threads)
n <- as.integer(opt$iterations)
gpu <- opt$gpu == "1"
co <- if (gpu) gpu_only(0, tile_kernel = TRUE) else cpu_only(threads = threads)
where <- if (gpu) "GPU 0" else sprintf("%d threads", threads)
for (precision in strsplit(opt$precision, ",")[[1]]) {
  m <- model(global_a, category_a, product_a, precision = precision)
  fit_of <- function(iterations, batch_size) {
    set.seed(3)
    suppressWarnings(svi(m, guide = opt$guide, particles = 4, alpha = 0,
                         n_iterations = iterations, tolerance = 0,
                         n_draws = 4, initial_values = at_median, verbose = FALSE,
                         batch_size = batch_size, compute_options = co))
  }
  run <- function(iterations, batch_size) system.time(fit_of(iterations, batch_size))[["elapsed"]]
  batch <- round(as.numeric(opt$batch) * d$n_obs)
  for (batch_size in list(NULL, batch)) {
    # a fit kept while the two are timed: the model's shared copy of the rows (single
    # precision, or rows out of order: row_store.hpp) is made once, here, and not by the
    # first timed fit alone
    kept <- fit_of(1, batch_size)
    t1 <- run(n, batch_size)
    t2 <- run(2 * n, batch_size)
    ms <- 1e3 * (t2 - t1) / n
    cat(sprintf("%s, %s, %s%s: %d free parameters; %.2f ms per iteration of 4 particles (model built in %.1f s)\n",
                precision, where, if (opt$guide == "mean_field") "" else paste0(opt$guide, ", "),
                if (is.null(batch_size)) "all rows" else sprintf("batch_size %d", batch_size),
                m$n_free, ms, built))
    rm(kept)
  }
  rm(m); invisible(gc())  # (one model's engine at a time)
}

if (as.integer(opt$fit) == 0) quit(save = "no")
# accuracy: the elasticities' posterior means against the simulation's truth
m <- model(global_a, category_a, product_a)
set.seed(4)
fit_time <- system.time(
  fit <- suppressWarnings(svi(m, particles = 4, alpha = 0, n_iterations = as.integer(opt$fit),
                              optimiser = adam(learning_rate = as.numeric(opt$lr)),
                              tolerance = 0, n_draws = 200, initial_values = at_median,
                              batch_size = if (opt$`fit-batch` == "1")
                                round(as.numeric(opt$batch) * d$n_obs),
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

# against mcmc() on the same data: its posterior means of the elasticities
n_mcmc <- as.integer(opt$mcmc)
if (n_mcmc > 0) {
  set.seed(5)
  mcmc_time <- system.time(
    draws_mcmc <- mcmc(m, n_samples = n_mcmc, warmup = n_mcmc, chains = 4,
                       initial_values = fit, verbose = FALSE, compute_options = co)
  )[["elapsed"]]
  dm <- as.matrix(draws_mcmc)
  product_mcmc <- colMeans(dm[, grep("^product_a\\[", colnames(dm)), drop = FALSE])
  category_mcmc <- colMeans(dm[, grep("^category_a\\[", colnames(dm)), drop = FALSE])
  cat(sprintf("mcmc() %d + %d iterations, 4 chains: %.0f s\n", n_mcmc, n_mcmc, mcmc_time))
  cat(sprintf("mcmc(): global elasticity %.3f; product elasticities: RMSE %.3f against the truth, correlation %.3f\n",
              mean(dm[, "global_a"]), sqrt(mean((product_mcmc - truth$beta_product)^2)),
              stats::cor(product_mcmc, truth$beta_product)))
  cat(sprintf("svi() against mcmc(): category elasticities RMSE %.3f, correlation %.3f; product elasticities RMSE %.3f, correlation %.3f\n",
              sqrt(mean((category_a - category_mcmc)^2)), stats::cor(category_a, category_mcmc),
              sqrt(mean((product_a - product_mcmc)^2)), stats::cor(product_a, product_mcmc)))
}
