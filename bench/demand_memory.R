# Bytes per row lockstep keeps for seed 003's demand model (issue 50): the process's
# resident memory after each stage (the data simulated, the greta arrays, model(),
# a 5-iteration svi()), over the rows, beside the 20 bytes a row of the data R holds.
#   Rscript bench/demand_memory.R [products = 1e4]   (1e5: 15.7M rows)
# Run it under /usr/bin/time -v for the peak.
suppressMessages(library(lockstep))
rss <- function() as.numeric(sub("^VmRSS:[[:space:]]*([0-9]+) kB.*$", "\\1", grep("^VmRSS", readLines("/proc/self/status"), value = TRUE))) / 1024
script <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
shared <- Sys.getenv("LOCKSTEP_SHARED", normalizePath(file.path(dirname(script), "..", "..", "shared")))
source(file.path(shared, "peers", "demand_sim.R"))
products <- if (length(commandArgs(TRUE))) as.numeric(commandArgs(TRUE)[1]) else 1e4
r0 <- rss()
# (the large size, 1e6 products, by chunks: bench/demand_sim_chunks.R)
source(file.path(dirname(script), "demand_sim_chunks.R"))
sim <- if (products > 2e5) sim_demand_chunks(products) else sim_demand(products)
d <- sim$data; rm(sim); invisible(gc())
r1 <- rss()
N <- d$n_obs
user_mb <- (object.size(d$units) + object.size(d$log_price) + object.size(d$product) + object.size(d$week_cat)) / 2^20
source(file.path(dirname(script), "demand_model.R"), local = TRUE)
invisible(gc()); r2 <- rss()
m <- model(global_a, category_a, product_a)
invisible(gc()); r3 <- rss()
f <- suppressWarnings(svi(m, particles = 4, n_iterations = 5, tolerance = 0, n_draws = 4, verbose = FALSE))
invisible(gc()); r4 <- rss()
cat(sprintf("N = %d rows; the data R holds (units, log_price, product, week_cat): %.0f MB = %.1f bytes a row\n", N, user_mb, user_mb * 2^20 / N))
cat(sprintf("RSS (MB): start %.0f, data %.0f, greta arrays %.0f (+%.1f B/row), model() %.0f (+%.1f B/row), svi() %.0f (+%.1f B/row)\n",
            r0, r1, r2, (r2 - r1) * 2^20 / N, r3, (r3 - r2) * 2^20 / N, r4, (r4 - r3) * 2^20 / N))
cat(sprintf("total above the data: %.1f bytes a row; peak RSS / user data: see /usr/bin/time\n", (r4 - r1) * 2^20 / N))
