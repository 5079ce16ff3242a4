# Seed 003's demand model at 15.7M rows (issue 50): one whole svi() run of 60 iterations (building, fitting,
# 4 draws), timed as a user sees it; run it under perf record to see where the time goes.
#   Rscript bench/demand_svi_run.R   (LOCKSTEP_SHARED: the shared folder, default /work/shared)
suppressMessages(library(lockstep))
source(file.path(Sys.getenv("LOCKSTEP_SHARED", "/work/shared"), "peers", "demand_sim.R"))
d <- sim_demand(1e5)$data
bench_dir <- dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)))
source(file.path(bench_dir, "demand_model.R"), local = TRUE)
m <- model(global_a)
cat("start\n")
t <- system.time(f <- suppressWarnings(svi(m, particles = 4, alpha = 0, n_iterations = 60, tolerance = 0, n_draws = 4, verbose = FALSE, compute_options = cpu_only(threads = 2))))
print(t)
