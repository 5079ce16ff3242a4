# What checkpoints cost (issue 51): the seed model, sampled with nuts()
# through mcmc() twice from the same seed, with checkpoints at the default
# interval (checkpoint_every = NULL) and without, one after the other:
#
#   Rscript bench/checkpoint_cost.R [--N 1e6] [--chains 4] [--threads 2]
#                                   [--warmup 10] [--samples 10] [--every default|n]
#
# Prints the machine's memory bandwidth (bench/stream.c, when a compiler is
# there), both wall times and their ratio, whether the draws are identical,
# the checkpoints written and the bytes of the last state file, then the
# time one checkpoint takes to write at this size, in warmup (the window's
# sums included) and in sampling, timed on the run's own sampler state, and
# from it the share of a whole run (1000 + 1000 iterations at this run's
# seconds per iteration) that the default interval costs: writes every
# max(30 s, 100 x the write's time), and one at the end. A run of 1 + 1
# iterations first makes the executor (planning, the rows' order, tiles),
# which the two timed runs then share.
suppressPackageStartupMessages(library(lockstep))

script <- normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1]))
source(file.path(dirname(script), "hlogit_model.R"))
opt <- bench_options(list(N = "1e6", chains = "4", threads = "2", warmup = "10", samples = "10",
                          every = "default"))
N <- as.numeric(opt$N); chains <- as.integer(opt$chains); threads <- as.integer(opt$threads)
warmup <- as.integer(opt$warmup); samples <- as.integer(opt$samples)
every <- if (opt$every == "default") NULL else as.integer(opt$every)
repo_root <- dirname(dirname(script))
shared <- Sys.getenv("LOCKSTEP_SHARED", file.path(dirname(repo_root), "shared"))

stream <- file.path(repo_root, "bench", "stream.c")
if (nzchar(Sys.which("cc"))) {
  exe <- tempfile()
  if (system2("cc", c("-O3", "-march=native", "-fopenmp", "-o", exe, stream), stdout = FALSE, stderr = FALSE) == 0) {
    cat("memory bandwidth (bench/stream.c, triad):\n")
    for (t in 1:2) cat("  ", system2(exe, c("512", t), stdout = TRUE), sep = "\n  ")
  }
}

sim <- hlogit_sim(N, shared)
m <- hlogit_model(sim$data)
cat(sprintf("N = %g, G = %d, %d free parameters, %d chains, %d threads: %d + %d iterations\n",
            N, sim$data$G, m$n_free, chains, threads, warmup, samples))
path <- file.path(tempdir(), "checkpoint_cost.lockstep")
unlink(path, recursive = TRUE)
run <- function(checkpoint) {
  set.seed(1)
  t <- system.time(d <- mcmc(m, warmup = warmup, n_samples = samples, chains = chains,
                             verbose = FALSE, compute_options = cpu_only(threads = threads),
                             checkpoint = checkpoint,
                             checkpoint_every = if (!is.null(checkpoint)) every))
  list(draws = d, wall = t[["elapsed"]])
}
invisible(mcmc(m, warmup = 1, n_samples = 1, chains = chains, verbose = FALSE,
               compute_options = cpu_only(threads = threads)))
with <- run(path)
without <- run(NULL)
state <- lockstep:::latest_checkpoint_state(path)
state_file <- file.path(path, sprintf("state_%d.rds", state$number %% 2))
cat(sprintf("wall: %.1f s with checkpoints, %.1f s without (ratio %.3f); draws identical: %s\n",
            with$wall, without$wall, with$wall / without$wall,
            identical(as.matrix(with$draws), as.matrix(without$draws))))
cat(sprintf("checkpoints written: %d; last state file %.1f MB; directory %.1f MB\n",
            state$number, file.size(state_file) / 2^20,
            sum(file.size(list.files(path, full.names = TRUE))) / 2^20))

# One checkpoint's write at this size, on the run's sampler: in warmup (with
# the window's sums), and in sampling.
handle <- attr(with$draws, "model_info")$run$handle
time_write <- function() {
  file <- tempfile(fileext = ".rds")
  t <- system.time(lockstep:::write_state_file(list(sampler = lockstep:::ls_sampler_state(handle)),
                                               file))[["elapsed"]]
  size <- file.size(file)
  unlink(file)
  c(seconds = t, mb = size / 2^20)
}
sampling <- time_write()
lockstep:::ls_sampler_begin_warmup(handle, 1000)  # (a warmup under way: its sums are saved)
in_warmup <- time_write()
per_iteration <- without$wall / (warmup + samples)
whole <- 2000 * per_iteration
share <- function(w) {
  writes <- whole / max(30, 100 * w) + 1
  writes * w / whole
}
cat(sprintf("one checkpoint: %.2f s (%.0f MB) in warmup, %.2f s (%.0f MB) in sampling\n",
            in_warmup[["seconds"]], in_warmup[["mb"]], sampling[["seconds"]], sampling[["mb"]]))
cat(sprintf(paste0("a whole run of 1000 + 1000 iterations at %.1f s an iteration (%.0f s): ",
                   "the default interval costs %.2f%% of it (every %.0f s in warmup)\n"),
            per_iteration, whole, 100 * share(in_warmup[["seconds"]]),
            max(30, 100 * in_warmup[["seconds"]])))
unlink(path, recursive = TRUE)
