# Where one process's memory goes for the seed model (issues 50 and 53): resident memory after
# each stage (the data simulated, the greta arrays, model(), a first log density of 4 chains, 3
# iterations of hmc()), beside the data R holds (X, y, g) and the peak.
#   Rscript bench/hlogit_memory.R [N = 1e6]    (under /usr/bin/time -v for the peak too)
suppressMessages(library(lockstep))
rss <- function() as.numeric(sub("^VmRSS:[[:space:]]*([0-9]+) kB.*$", "\\1", grep("^VmRSS", readLines("/proc/self/status"), value = TRUE))) / 1024
hwm <- function() as.numeric(sub("^VmHWM:[[:space:]]*([0-9]+) kB.*$", "\\1", grep("^VmHWM", readLines("/proc/self/status"), value = TRUE))) / 1024
script <- sub("^--file=", "", grep("^--file=", commandArgs(FALSE), value = TRUE))
shared <- Sys.getenv("LOCKSTEP_SHARED", normalizePath(file.path(dirname(script), "..", "..", "shared")))
source(file.path(dirname(script), "hlogit_model.R"))
r0 <- rss()
N <- if (length(commandArgs(TRUE))) as.numeric(commandArgs(TRUE)[1]) else 1e6
d <- hlogit_data(N, shared)
invisible(gc()); r1 <- rss()
user <- (object.size(d$X) + object.size(d$y) + object.size(d$g)) / 2^20
K <- d$K; G <- d$G; g <- d$g; X <- d$X; y <- d$y
alpha <- normal(0, 1.5); beta <- normal(0, 1, dim = K)
sigma_alpha <- normal(0, 1, truncation = c(0, Inf)); sigma_gamma <- normal(0, 0.5, dim = K, truncation = c(0, Inf))
z_alpha <- normal(0, 1, dim = G); z_gamma <- normal(0, 1, dim = c(G, K))
alpha_g <- sigma_alpha * z_alpha
Xd <- as_data(X)
gamma <- lockstep::sweep(z_gamma, 2, sigma_gamma, "*")
eta <- alpha + alpha_g[g] + Xd %*% beta + lockstep::rowSums(Xd * gamma[g, ])
distribution(y) <- bernoulli(ilogit(eta))
invisible(gc()); r2 <- rss()
m <- model(alpha, beta, sigma_alpha, sigma_gamma)
invisible(gc()); r3 <- rss()
free <- matrix(rnorm(4 * m$n_free, 0, 0.1), 4)
ld <- lockstep:::model_log_density(m, free, TRUE, cpu_only(threads = 1)); rm(ld)
invisible(gc()); r4 <- rss()
options(lockstep.max_raw_draws_mb = 0)
dr <- mcmc(m, sampler = hmc(Lmin = 10, Lmax = 10), warmup = 0, n_samples = 3, chains = 4, compute_options = cpu_only(threads = 1), verbose = FALSE)
invisible(gc()); r5 <- rss()
cat(sprintf("user data %.0f MB; RSS: start %.0f, data %.0f, greta arrays %.0f, model() %.0f, first log density (4 chains) %.0f, mcmc 3 its %.0f; peak %.0f MB (%.1fx the data)\n",
  user, r0, r1, r2, r3, r4, r5, hwm(), hwm() / user))
