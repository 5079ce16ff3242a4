# Checkpoints across MPI processes (issue 51): a hierarchical model whose two
# ranks own their groups (each holds its own groups' coordinates), sampled
# with checkpoints, killed part-way (tests/mpi/faults.sh kills the ranks with
# SIGKILL), and resumed under mpirun again:
#   mpirun -np 2 Rscript tests/mpi/checkpoint.R reference <out.rds>
#   mpirun -np 2 Rscript tests/mpi/checkpoint.R run <dir>
#   mpirun -np 2 Rscript tests/mpi/checkpoint.R resume <dir> <out.rds>
# reference and resume save each rank's draws (rank r into <out.rds>.r) for
# faults.sh to compare; resume prints "checkpoint.R: resumed" on rank 0.
suppressPackageStartupMessages(library(lockstep))
args <- commandArgs(TRUE)
mode <- args[1]
G <- 1500
grp <- rep(seq_len(G), times = rep(c(4, 8, 12), length.out = G))
N <- length(grp)
set.seed(11)
x <- rnorm(N)
y <- rnorm(N, 0.5 + rnorm(G, 0, 0.7)[grp] + 1.5 * x, 1)
rows <- mpi_rows(N, groups = grp)
a <- normal(0, 5)
b <- normal(0, 5)
sd_g <- normal(0, 1, truncation = c(0, Inf))
z <- normal(0, 1, dim = G)
alpha <- z * sd_g
distribution(y[rows]) <- normal(a + alpha[grp[rows]] + b * x[rows], 1)
m <- model(a, b, sd_g, alpha)
fit <- function(path = NULL) {
  set.seed(21)
  mcmc(m, sampler = nuts(metric = "diagonal"), warmup = 400, n_samples = 400, chains = 2,
       verbose = FALSE, compute_options = cpu_only(threads = 1, mpi = TRUE), checkpoint = path,
       checkpoint_every = if (!is.null(path)) 25)
}
# what must be identical: each rank's draws, diagnostics and warmup's
result <- function(d) {
  info <- attr(d, "model_info")
  list(draws = lapply(d, unclass), params = attr(d, "sampler_params"),
       warmup = info$warmup_diagnostics, last = info$last_free)
}
out <- function(file) saveRDS(result(d), paste0(file, ".", mpi_rank()))
if (mode == "reference") {
  d <- fit()
  out(args[2])
} else if (mode == "run") {
  d <- fit(args[2])
} else if (mode == "resume") {
  d <- resume(args[2], m, verbose = FALSE)
  out(args[3])
  if (mpi_rank() == 0) cat("checkpoint.R: resumed\n")
}
