# Benchmark: a two-component normal mixture over N rows, lockstep vs rstan, in
# one run. The likelihood is mixture()'s: per-element log densities (logpdf)
# combined by a log-sum-exp and summed, which the planner now tiles (and shards)
# with its rows; before, those ops ran over whole [chains, N] buffers.
#
#   Rscript bench/mixture.R [--N 1e5,1e6] [--chains 4] [--threads 2] [--rstan yes|no]
#                           [--gpu yes|no]
#
# Prints, per N, the seconds per gradient of all chains through
# model_log_density() (which includes R's copies of the state and gradient,
# negligible here: 4 free parameters), with the observation stage (tiled, as
# by default) and without it (options(lockstep.observation_stage = FALSE): the
# op-by-op executor the tiles replaced), per chain-gradient; and rstan's seconds
# per gradient of one chain (rstan::grad_log_prob on the Stan program below,
# log_mix per row), and the ratios. Prints how far apart their log densities
# are at the same point (relative), as a check that they are the same model.
# Where the package was built with CUDA and a GPU is visible (and --gpu is
# not no), also the same gradient on the first GPU, in double and single.
suppressPackageStartupMessages(library(lockstep))

args <- commandArgs(TRUE)
opt <- list(N = "1e5,1e6", chains = "4", threads = "2", rstan = "yes", gpu = "yes")
for (i in seq(1, length(args) - 1, by = 2)) opt[[sub("^--", "", args[i])]] <- args[i + 1]
Ns <- as.numeric(strsplit(opt$N, ",")[[1]])
chains <- as.integer(opt$chains)
threads <- as.integer(opt$threads)
use_rstan <- opt$rstan == "yes" && requireNamespace("rstan", quietly = TRUE)
info <- backend_info()
use_gpu <- opt$gpu == "yes" && isTRUE(info$cuda_built) && nrow(info$devices) > 0
if (opt$rstan == "yes" && !use_rstan) {
  cat("rstan is not installed (make bench-setup installs it): timing lockstep only\n")
}

source("bench/peer_helpers.R")  # per_call(), fix_boost()

stan_code <- "
data { int<lower=1> N; vector[N] y; }
parameters { real mu1; real mu2; real<lower=0> sigma; real<lower=0, upper=1> w; }
model {
  // (target += keeps the constants lockstep keeps; log(2): sigma's truncation)
  target += normal_lpdf(mu1 | 0, 5) + normal_lpdf(mu2 | 0, 5) + normal_lpdf(sigma | 0, 2) + log(2);
  for (n in 1:N)
    target += log_mix(w, normal_lpdf(y[n] | mu1, sigma), normal_lpdf(y[n] | mu2, sigma));
}"
if (use_rstan) {
  suppressPackageStartupMessages(library(rstan))
  fix_boost()
  cat("compiling the Stan program (about a minute)\n")
  sm <- rstan::stan_model(model_code = stan_code)
}

fmt <- function(s) if (s >= 1e-3) sprintf("%.3f ms", s * 1e3) else sprintf("%.1f us", s * 1e6)
cat(sprintf("lockstep %s, %d chains, %d threads; %s\n", packageVersion("lockstep"), chains,
            threads, if (use_rstan) paste("rstan", packageVersion("rstan")) else "no rstan"))
cat(sprintf("%9s %16s %16s %8s %16s %12s %14s\n", "N", "tiled /chgrad", "untiled /chgrad",
            "speedup", "rstan /grad", "x rstan", "lp agrees"))
for (N in Ns) {
  set.seed(1)
  pick <- stats::runif(N) < 0.3
  y <- ifelse(pick, stats::rnorm(N, -1, 0.7), stats::rnorm(N, 2, 0.7))
  mu1 <- normal(0, 5)
  mu2 <- normal(0, 5)
  sigma <- normal(0, 2, truncation = c(0, Inf))
  w <- uniform(0, 1)
  distribution(y) <- mixture(normal(mu1, sigma), normal(mu2, sigma), weights = c(w, 1 - w))
  m <- model(mu1, mu2, sigma, w)
  free <- matrix(stats::rnorm(chains * m$n_free, 0, 0.3), chains, m$n_free)
  density <- function() {
    lockstep:::model_log_density(m, free, gradient = TRUE,
                                 compute_options = cpu_only(threads = threads))
  }
  tiled <- per_call(density)
  lp <- density()$log_density
  old <- options(lockstep.observation_stage = FALSE)
  untiled <- per_call(density)
  lp_untiled <- density()$log_density
  options(old)
  stopifnot(isTRUE(all.equal(lp, lp_untiled, tolerance = 1e-10)))
  stan_sec <- NA
  agrees <- "-"
  if (use_rstan) {
    fit <- suppressMessages(suppressWarnings(utils::capture.output(
      f <- rstan::sampling(sm, data = list(N = N, y = y), chains = 0))))
    # lockstep's free state is (mu1, mu2, log sigma, logit w), as Stan's
    # unconstrained one; both add the same log |Jacobian|s
    u <- free[1, ]
    stan_sec <- per_call(function() rstan::grad_log_prob(f, u))
    stan_lp <- rstan::log_prob(f, u, adjust_transform = TRUE)
    agrees <- sprintf("%.1e", abs(stan_lp - lp[1]) / abs(lp[1]))
  }
  cat(sprintf("%9g %16s %16s %7.1fx %16s %12s %14s\n", N, fmt(tiled / chains),
              fmt(untiled / chains), untiled / tiled, if (is.na(stan_sec)) "-" else fmt(stan_sec),
              if (is.na(stan_sec)) "-" else sprintf("%.0fx", stan_sec / (tiled / chains)), agrees))
  if (use_gpu) {
    # the same gradient on the first GPU, in both precisions (state and
    # gradient cross PCIe in each call: 4 values per chain here)
    for (precision in c("double", "single")) {
      mg <- if (precision == "double") m else model(mu1, mu2, sigma, w, precision = "single")
      on_gpu <- function() {
        lockstep:::model_log_density(mg, free, gradient = TRUE, compute_options = gpu_only())
      }
      gpu <- per_call(on_gpu)
      lp_gpu <- on_gpu()$log_density
      cat(sprintf("%9g   GPU, %s: %s per chain-gradient (CPU tiled / GPU %.1fx), lp %.1e from the CPU's\n",
                  N, precision, fmt(gpu / chains), tiled / gpu, max(abs(lp_gpu - lp) / abs(lp))))
    }
  }
}
