# The seed model fitted through mcmc() across MPI processes, as a user runs it (issue 53):
# each rank builds the model from its own rows (mpi_rows(N, groups = g): whole groups per
# rank, each rank holding its groups' intercepts and slopes), then mcmc() runs `--sampler`
# for n and 2n iterations; the second run's extra cost over the first is the cost of n
# iterations. Prints, per rank: ms per gradient of all chains, mpi_stats()'s calls and bytes
# (and bytes per gradient and per call) of each run, and the process's peak RSS: while every
# rank simulates all N rows (to take its own from them), and from then on.
#
#   mpirun -np 2 Rscript bench/mpi_fit.R [--N 1e6] [--chains 4] [--iterations 10]
#                                        [--sampler hmc|nuts] [--threads 1] [--raw 0]
#   Rscript bench/mpi_fit.R ...           (one process, for the ratio)
#
# hmc: hmc(Lmin = 10, Lmax = 10) with warmup = 0; nuts: nuts() with `--iterations` of
# warmup before the n (and 2n) draws. --raw 1 keeps the raw draws (the whole free state at
# each draw, gathered to rank 0: chains x the free parameters a draw), which mcmc() keeps
# up to getOption("lockstep.max_raw_draws_mb"); by default they are not kept, as at the
# seed's size, so that the bytes are the sampler's own.
suppressMessages(library(lockstep))
script <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
bench <- dirname(script)
shared <- Sys.getenv("LOCKSTEP_SHARED", normalizePath(file.path(bench, "..", "..", "shared")))
source(file.path(bench, "hlogit_model.R"))
opt <- bench_options(list(N = "1e6", chains = "4", iterations = "10", sampler = "hmc",
                          threads = "1", raw = "0"))
if (opt$raw != "1") options(lockstep.max_raw_draws_mb = 0)
N <- as.numeric(opt$N); C <- as.integer(opt$chains); n <- as.integer(opt$iterations)
across <- mpi_available() && mpi_size() > 1
peak_mb <- function() {
  line <- grep("^VmHWM", readLines("/proc/self/status"), value = TRUE)
  as.numeric(sub("^VmHWM:[[:space:]]*([0-9]+) kB.*$", "\\1", line)) / 1024
}

d <- hlogit_data(N, shared)
rows <- if (across) mpi_rows(N, groups = d$g) else seq_len(N)
# this rank's rows of the seed model (hlogit_model.R), its group effects over all G groups
d <- list(K = d$K, G = d$G, g = d$g[rows], X = d$X[rows, , drop = FALSE], y = d$y[rows])
invisible(gc())
# the peak from here on (Linux: 5 into clear_refs resets VmHWM): what the fit
# takes beside the rank's rows, without the whole simulation every rank made
# to take its rows from (a user's rank reads its own)
peak_simulation <- peak_mb()
reset_peak <- tryCatch({ writeLines("5", "/proc/self/clear_refs"); TRUE }, error = function(e) FALSE)
m <- hlogit_model(d)
co <- cpu_only(threads = as.integer(opt$threads), mpi = across)

fit <- function(iterations) {
  set.seed(53)
  if (across) mpi_stats(reset = TRUE)
  t <- system.time(draws <- if (opt$sampler == "hmc") {
    mcmc(m, sampler = hmc(Lmin = 10, Lmax = 10), warmup = 0, n_samples = iterations,
         chains = C, compute_options = co, verbose = FALSE)
  } else {
    mcmc(m, sampler = nuts(), warmup = n, n_samples = iterations, chains = C,
         compute_options = co, verbose = FALSE)
  })[["elapsed"]]
  p <- get_sampler_params(draws)
  # (the chains step together: a lockstep gradient per leapfrog step of the longest)
  leapfrogs <- sum(apply(do.call(cbind, lapply(p, function(x) x[, "n_leapfrog__"])), 1, max))
  s <- if (across) mpi_stats() else list(calls = 0, bytes = 0)
  list(seconds = t, leapfrogs = leapfrogs, calls = s$calls, bytes = s$bytes)
}
first <- fit(n)
second <- fit(2L * n)
gradients <- second$leapfrogs - first$leapfrogs
ms <- 1000 * (second$seconds - first$seconds) / max(1, gradients)
cat(sprintf(paste0("rank %d of %d: N = %g rows (this rank %d), %d free parameters, %d chains, %s; ",
                   "%.1f ms a gradient of all chains (%d gradients' difference); ",
                   "mpi_stats: %g calls, %.0f bytes (%d iterations), %g calls, %.0f bytes (%d): ",
                   "%.0f bytes a gradient (the runs' difference), %.0f a call; peak RSS %.0f MB ",
                   "after the rows were in place (%s), %.0f MB while simulating every row\n"),
            if (across) mpi_rank() else 0L, if (across) mpi_size() else 1L, N, length(rows),
            m$n_free, C, opt$sampler, ms, gradients, first$calls, first$bytes, n,
            second$calls, second$bytes, 2L * n,
            (second$bytes - first$bytes) / max(1, gradients),
            second$bytes / max(1, second$calls), peak_mb(),
            if (reset_peak) "VmHWM reset" else "could not reset VmHWM: the whole run's", peak_simulation))
