# Seed 003's demand model at 15.7M rows (issue 50): model_log_density() of 4 chains with its gradient, 6 blocks of 8 calls,
# in double and in single precision (the engine alone, without svi()), with tile adjoints stored by their one writer (the default) and zeroed and added to (first_writers off), alternated in one process.
#   Rscript bench/demand_log_density.R   (LOCKSTEP_SHARED: the shared folder, default /work/shared)
suppressMessages(library(lockstep))
source(file.path(Sys.getenv("LOCKSTEP_SHARED", "/work/shared"), "peers", "demand_sim.R"))
d <- sim_demand(1e5)$data
bench_dir <- dirname(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)))
source(file.path(bench_dir, "demand_model.R"), local = TRUE)
for (precision in c("double", "single")) {
m <- model(global_a, precision = precision)
free <- matrix(rnorm(4 * m$n_free, 0, 0.1), 4)
on <- cpu_only(threads = 2); off <- on; off$first_writers <- FALSE
ld <- function(co) lockstep:::model_log_density(m, free, TRUE, co)
a <- ld(on); b <- ld(off)
cat("same lp:", all.equal(a, b), "\n")
t_on <- t_off <- numeric(0)
for (i in 1:6) {
  t_on <- c(t_on, system.time(for (k in 1:8) ld(on))[["elapsed"]] / 8 * 1000)
  t_off <- c(t_off, system.time(for (k in 1:8) ld(off))[["elapsed"]] / 8 * 1000)
}
cat(precision, "stored: min", round(min(t_on), 1), "median", round(median(t_on), 1),
    " zeroed: min", round(min(t_off), 1), "median", round(median(t_off), 1), " ratio of medians", round(median(t_off) / median(t_on), 3), "\n")
rm(m); gc()
}
