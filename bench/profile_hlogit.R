# A profiling target for bench/hlogit.R's model: builds the issue-3 model (the same code
# as hlogit.R's build_lockstep(variant = "api")) and repeats one engine call for C chains
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
env <- new.env(parent = getNamespace("stats"))  # base's %*% / rowSums inside the generator
sys.source(file.path(shared, "peers", "simdata.R"), envir = env)
d <- env$sim_hlogit(N, round(N / 10), 20L, 20240601L)$data
K <- d$K; G <- d$G; g <- d$g
co <- lockstep:::cpu_only(threads = threads)
alpha <- normal(0, 1.5)
beta <- normal(0, 1, dim = K)
sigma_alpha <- normal(0, 1, truncation = c(0, Inf))
sigma_gamma <- normal(0, 0.5, dim = K, truncation = c(0, Inf))
z_alpha <- normal(0, 1, dim = G)
z_gamma <- normal(0, 1, dim = c(G, K))
alpha_g <- sigma_alpha * z_alpha
Xd <- as_data(d$X)
gamma <- lockstep::sweep(z_gamma, 2, sigma_gamma, "*")
eta <- alpha + alpha_g[g] + Xd %*% beta + lockstep::rowSums(Xd * gamma[g, ])
distribution(d$y) <- bernoulli(ilogit(eta))
m <- model(alpha, beta, sigma_alpha, sigma_gamma, precision = precision)
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
