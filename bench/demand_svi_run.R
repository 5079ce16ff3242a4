# Seed 003's demand model at 15.7M rows (issue 50): one whole svi() run of 60 iterations (building, fitting,
# 4 draws), timed as a user sees it; run it under perf record to see where the time goes.
#   Rscript bench/demand_svi_run.R   (LOCKSTEP_SHARED: the shared folder, default /work/shared)
suppressMessages(library(lockstep))
source(file.path(Sys.getenv("LOCKSTEP_SHARED", "/work/shared"), "peers", "demand_sim.R"))
d <- sim_demand(1e5)$data
z_global <- normal(0, 1); z_category <- normal(0, 1, dim = d$n_cat)
z_product <- normal(0, 1, dim = d$n_product); z_effect <- normal(0, 1, dim = d$n_product)
z_time <- normal(0, 1, dim = d$n_week_cat)
global_a <- -2 + z_global; category_a <- global_a + z_category
product_a <- category_a[d$category_of_product] + 2 * z_product
log_demand <- product_a[d$product] * d$log_price + (3 * z_time)[d$week_cat] + (3 * z_effect)[d$product]
units <- as_data(d$units)
distribution(units) <- poisson(exp(log_demand))
m <- model(global_a)
cat("start\n")
t <- system.time(f <- suppressWarnings(svi(m, particles = 4, alpha = 0, n_iterations = 60, tolerance = 0, n_draws = 4, verbose = FALSE, compute_options = cpu_only(threads = 2))))
print(t)
