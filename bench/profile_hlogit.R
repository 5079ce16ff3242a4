# A profiling target for bench/hlogit.R's model: builds the issue-3 model (hlogit_model.R,
# the same as hlogit.R's build_lockstep(variant = "api")) and repeats one engine call for C chains
# until `seconds` have passed, so that `perf record -p PID` can be attached once it
# prints READY. See bench/README.md ("Profiling").
#
#   Rscript bench/profile_hlogit.R N C threads precision seconds
#   e.g. Rscript bench/profile_hlogit.R 1e5 4 1 double 10
args <- commandArgs(TRUE)
if (length(args) != 5) stop("usage: profile_hlogit.R N C threads double|single seconds", call. = FALSE)
N <- as.numeric(args[1]); C <- as.integer(args[2]); threads <- as.integer(args[3])
precision <- args[4]; seconds <- as.numeric(args[5])
script <- normalizePath(sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE)[1]))
repo_root <- dirname(dirname(script))
shared <- Sys.getenv("LOCKSTEP_SHARED", file.path(dirname(repo_root), "shared"))
suppressPackageStartupMessages(library(lockstep))
source(file.path(dirname(script), "hlogit_model.R"))
co <- lockstep:::cpu_only(threads = threads)
m <- hlogit_model(hlogit_data(N, shared), precision)
set.seed(1)
free <- matrix(rnorm(C * m$n_free, 0, 0.5), C, m$n_free)
mld <- lockstep:::model_log_density
invisible(mld(m, free, compute_options = co))
cat("READY", Sys.getpid(), "\n")
flush(stdout())
t0 <- Sys.time(); n <- 0
while (as.numeric(Sys.time() - t0, units = "secs") < seconds) {
  invisible(mld(m, free, compute_options = co))
  n <- n + 1
}
cat(sprintf("%d calls, %.3f ms per chain-gradient\n", n,
            1e3 * as.numeric(Sys.time() - t0, units = "secs") / n / C))
