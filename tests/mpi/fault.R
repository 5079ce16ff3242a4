# One rank of an SPMD job fails; every rank must end within seconds (issue
# 51), not wait in a collective call until the job's time limit:
#   mpirun -np 2 Rscript tests/mpi/fault.R <case> <stamp file>
# Both ranks build a regression from their own rows and sample it; rank 1
# fails first, as <case> says:
#   na         its data has a missing value (as_data()'s error)
#   stop       it calls stop() just before mcmc()
#   exception  a C++ exception on it (the engine refuses a bad free state)
#   shape      it builds another model (a different prior family): refused
#              on every rank at mcmc()'s first collective call
#   kill       it is killed by SIGKILL just before mcmc()
#   none       nothing fails (the job ends normally: the control)
# The failing rank writes the time it fails to <stamp file>, so that
# tests/mpi/faults.sh can time the job's end from it. Rank 0 goes on into
# mcmc(), where, unaided, it would wait forever.
suppressPackageStartupMessages(library(lockstep))
args <- commandArgs(TRUE)
case <- args[1]
stamp <- args[2]
set.seed(1)
N <- 2000
x <- rnorm(N)
y <- rnorm(N, 1 + 2 * x, 0.5)
rows <- mpi_rows(N)  # (MPI starts here)
me <- mpi_rank()
fail_now <- function() {
  if (me == 1) writeLines(format(as.numeric(Sys.time()), digits = 15), stamp)
}
if (me == 1 && case == "na") {
  x[rows[3]] <- NA
  fail_now()
}
xr <- as_data(x[rows])
alpha <- if (me == 1 && case == "shape") student(3, 0, 5) else normal(0, 5)
beta <- normal(0, 5)
sigma <- lognormal(0, 1)
distribution(y[rows]) <- normal(alpha + beta * xr, sigma)
m <- model(alpha, beta, sigma)
if (me == 1 && case == "stop") {
  fail_now()
  stop("rank 1 gave up before mcmc()")
}
if (me == 1 && case == "exception") {
  fail_now()
  lockstep:::model_log_density(m, matrix(0, 1, 7))  # 7 values for 3 parameters: C++ throws
}
if (me == 1 && case == "kill") {
  fail_now()
  tools::pskill(Sys.getpid(), tools::SIGKILL)
}
if (case == "shape") fail_now()
draws <- mcmc(m, warmup = 200, n_samples = 200, chains = 2, verbose = FALSE,
              compute_options = cpu_only(threads = 1, mpi = TRUE))
if (me == 0) cat("fault.R: mcmc() finished on rank 0\n")
