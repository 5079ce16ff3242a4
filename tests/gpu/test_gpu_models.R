# Models written in R and run with compute_options = gpu_only(): the path a
# user takes, from greta arrays through model() and mcmc() to the CUDA
# executor, against the same models on the CPU. tests/gpu/test_cuda_executor.cpp
# checks every op and family of the engine on the GPU from C++; this file checks
# what only R reaches: the lowering's programs, mcmc()'s chunks and traces,
# extra_samples(), opt() and calculate() with the GPU's options, single
# precision, and the errors a user sees.
#
# Run by hand where a GPU exists, from the repository root, with lockstep
# installed with CUDA (tests/gpu/run.sh runs it):
#   Rscript tests/gpu/test_gpu_models.R
# Exits non-zero when a test fails. Without a device every test is skipped.
# With LOCKSTEP_GPU_TEST_STANDIN=emulated, the emulated backend (the CUDA
# kernel bodies run lane by lane on the CPU) stands in for the GPU, to check
# the tests themselves on a machine without one (smaller sizes; the tests of
# the device itself are skipped).

if (!identical(Sys.getenv("TESTTHAT"), "true")) {
  args <- commandArgs(trailingOnly = FALSE)
  self <- sub("^--file=", "", grep("^--file=", args, value = TRUE))
  if (length(self) != 1L) self <- "tests/gpu/test_gpu_models.R"
  Sys.setenv(LOCKSTEP_REPO = normalizePath(file.path(dirname(self), "..", "..")))
  results <- as.data.frame(testthat::test_file(self, reporter = "summary"))
  bad <- results$failed > 0 | results$error
  cat(sprintf("\n%d passed, %d failed, %d skipped\n",
              sum(!bad & !results$skipped), sum(bad), sum(results$skipped & !bad)))
  quit(save = "no", status = if (any(bad)) 1L else 0L)
}

library(testthat)
library(lockstep)

# The test suite's helpers (the eight schools model and its hand-written log
# density, sample_quietly()).
repo <- Sys.getenv("LOCKSTEP_REPO", normalizePath(file.path("..", "..")))
source(file.path(repo, "tests", "testthat", "helper-lockstep.R"))

standin <- identical(Sys.getenv("LOCKSTEP_GPU_TEST_STANDIN"), "emulated")

has_device <- function() {
  info <- backend_info()
  isTRUE(info$cuda_built) && nrow(info$devices) > 0L
}

skip_without_device <- function() {
  if (!standin && !has_device()) {
    skip("no CUDA device is visible, or lockstep was built without CUDA")
  }
}

on_gpu <- function() if (standin) compute("emulated", threads = 1) else gpu_only(0)
on_cpu <- function() cpu_only(threads = 1)

density_on <- function(m, free, options) {
  lockstep:::model_log_density(m, free, gradient = TRUE, compute_options = options)
}

# The log density and gradient of `m` at random free states, on the GPU and on
# the CPU, for each chain count: equal to `tolerance` (relative, as all.equal).
expect_gpu_matches_cpu <- function(m, chains = c(1, 4, 9), sd = 0.5, tolerance = 1e-11) {
  for (n_chains in chains) {
    free <- matrix(stats::rnorm(n_chains * m$n_free, sd = sd), n_chains, m$n_free)
    cpu <- density_on(m, free, on_cpu())
    gpu <- density_on(m, free, on_gpu())
    expect_true(all(is.finite(cpu$log_density)))
    expect_equal(gpu$log_density, cpu$log_density, tolerance = tolerance,
                 label = sprintf("GPU log density, %d chains", n_chains))
    expect_equal(gpu$gradient, cpu$gradient, tolerance = tolerance,
                 label = sprintf("GPU gradient, %d chains", n_chains))
  }
}

# Posterior means of two runs agree within 5 combined Monte Carlo standard errors.
expect_means_agree <- function(a, b, names) {
  sa <- summary(a)$statistics
  sb <- summary(b)$statistics
  for (p in names) {
    se <- sqrt(sa[p, "Time-series SE"]^2 + sb[p, "Time-series SE"]^2)
    expect_lt(abs(sa[p, "Mean"] - sb[p, "Mean"]) / se, 5, label = p)
  }
}

# The seed's hierarchical logistic regression (a random intercept and random
# slopes per group, non-centred), written as bench/hlogit.R writes it, so that
# the planner fuses its linear predictor into one row dot product, on data
# simulated at alpha = 0.3, sigma_alpha = 0.8, sigma_gamma = 0.3.
hlogit_model <- function(n = 20000, groups = 200, k = 5, precision = "double", seed = 3) {
  set.seed(seed)
  x <- matrix(stats::rnorm(n * k), n, k)
  g <- sample.int(groups, n, replace = TRUE)
  eta <- 0.3 + stats::rnorm(groups, 0, 0.8)[g] + x %*% stats::rnorm(k, 0, 0.5) +
    rowSums(x * matrix(stats::rnorm(groups * k, 0, 0.3), groups, k)[g, ])
  y <- stats::rbinom(n, 1, stats::plogis(eta))
  hierarchical_logit_model(x, g, y, groups, alpha_sd = 2, precision = precision)
}

test_that("the device is there and gpu_only() describes it", {
  skip_without_device()
  if (standin) skip("the emulated backend stands in for the GPU")
  info <- backend_info()
  expect_output(print(info), "1 device visible|devices visible")
  expect_output(print(on_gpu()), "cuda backend on GPU 0")
  expect_error(gpu_only(nrow(info$devices) + 3L), "there is no GPU")
})

test_that("eight schools on the GPU: the hand-written density, and the CPU's", {
  skip_without_device()
  set.seed(11)
  m <- eight_schools_model()
  free <- matrix(stats::rnorm(4 * m$n_free, sd = 0.7), 4, m$n_free)
  gpu <- density_on(m, free, on_gpu())
  expect_equal(gpu$log_density, apply(free, 1, eight_schools_log_density), tolerance = 1e-12)
  expect_equal(gpu$gradient, t(apply(free, 1, eight_schools_gradient)), tolerance = 1e-11)
  expect_gpu_matches_cpu(m)
})

test_that("several GPUs: shares of the rows summed equal the CPU, and mcmc() runs on them", {
  skip_without_device()
  if (standin) skip("the emulated backend stands in for one GPU (tests/cpp test_shards.cpp covers shards)")
  info <- backend_info()
  sets <- list(c(0L, 0L))  # shards taking turns on one GPU, through copies
  if (nrow(info$devices) >= 2) sets <- c(sets, list(info$devices$id))  # through NCCL where it loads
  m <- hlogit_model(n = 5003, groups = 60)
  for (devices in sets) {
    options <- gpu_only(devices)
    expect_output(print(options), sprintf("on %d GPUs", length(devices)))
    for (n_chains in c(1, 4)) {
      free <- matrix(stats::rnorm(n_chains * m$n_free, sd = 0.3), n_chains, m$n_free)
      cpu <- density_on(m, free, on_cpu())
      gpu <- density_on(m, free, options)
      expect_equal(gpu$log_density, cpu$log_density, tolerance = 1e-11)
      expect_equal(gpu$gradient, cpu$gradient, tolerance = 1e-11)
    }
    set.seed(5)
    one <- sample_quietly(m, n_samples = 200, warmup = 200, chains = 2, compute_options = on_gpu())
    set.seed(5)
    several <- sample_quietly(m, n_samples = 200, warmup = 200, chains = 2,
                              compute_options = options)
    expect_means_agree(one, several, c("alpha", "sigma_alpha"))
    # the GPUs own their groups (device_shards.hpp): each holds its groups'
    # part of the sampler's vectors, and a gradient sends at most each chain's
    # log density and the 12 global coordinates' gradient from each GPU but
    # the first
    handle <- attr(several, "model_info")$run$handle
    expect_equal(dim(attr(handle, "device_groups")), c(length(devices), 2))
    sent <- lockstep:::ls_sampler_exchanged(handle)
    expect_lte(sent[["bytes"]] / sent[["calls"]], (length(devices) - 1) * 2 * (1 + 12) * 8)
    # the first iterations are one GPU's, up to the order of sums
    first <- function(options) {
      set.seed(6)
      d <- sample_quietly(m, n_samples = 10, warmup = 10, chains = 2, compute_options = options)
      do.call(rbind, lapply(attr(d, "model_info")$raw_draws, as.matrix))
    }
    a <- first(on_gpu())
    b <- first(options)
    expect_lt(max(abs(b - a) / pmax(1, abs(a))), 1e-6)
  }
})

test_that("a hierarchical logistic regression on the GPU equals the CPU's", {
  skip_without_device()
  expect_gpu_matches_cpu(hlogit_model(), chains = c(1, 4), sd = 0.3)
  # single precision: within float rounding of double
  m1 <- hlogit_model(precision = "single")
  m2 <- hlogit_model()
  free <- matrix(stats::rnorm(4 * m1$n_free, sd = 0.3), 4, m1$n_free)
  single <- density_on(m1, free, on_gpu())
  double <- density_on(m2, free, on_cpu())
  expect_equal(single$log_density, double$log_density, tolerance = 1e-5)
  expect_lt(max(abs(single$gradient - double$gradient)) / max(1, abs(double$gradient)), 1e-3)
})

test_that("a Gaussian process with chol() and a Poisson log link on the GPU", {
  skip_without_device()
  set.seed(12)
  n <- 15
  x <- seq(-5, 5, length.out = n)
  y <- stats::rpois(n, exp(sin(x)))
  rho <- gamma(2, 0.5)
  alpha <- normal(0, 2, truncation = c(0, Inf))
  f_tilde <- normal(0, 1, dim = n)
  d2 <- outer(x, x, function(a, b) (a - b)^2)
  k <- alpha^2 * exp(-as_data(d2) / (2 * rho^2)) + diag(n) * 1e-6
  f <- t(chol(k)) %*% f_tilde
  distribution(y) <- poisson(exp(f))
  expect_gpu_matches_cpu(model(rho, alpha, f))
})

test_that("multivariate families, mixtures and segment sums on the GPU", {
  skip_without_device()
  set.seed(13)
  y <- matrix(stats::rnorm(40 * 3), 40, 3)
  mu <- normal(0, 2, dim = c(1, 3))
  omega <- lkj_correlation(2, dimension = 3)
  s <- lognormal(0, 1, dim = 3)
  sigma <- sweep(sweep(omega, 1, s, `*`), 2, s, `*`)
  distribution(y) <- multivariate_normal(mu, sigma, n_realisations = 40)
  expect_gpu_matches_cpu(model(mu, omega, s), chains = c(1, 4), sd = 0.3)

  w <- wishart(6, diag(3))
  expect_gpu_matches_cpu(model(w), chains = c(1, 3), sd = 0.3)

  z <- c(stats::rnorm(30, -2), stats::rnorm(30, 2))
  loc <- normal(0, 3, dim = 2)
  p <- uniform(0, 1)
  distribution(z) <- mixture(normal(loc[1], 1), normal(loc[2], 1), weights = c(p, 1 - p))
  expect_gpu_matches_cpu(model(loc, p))

  grp <- rep(1:4, each = 5)
  v <- normal(0, 1, dim = 20)
  totals <- tapply(v, grp, "sum")
  observed <- c(1, -1, 0.5, 2)
  distribution(observed) <- normal(totals, 1)
  expect_gpu_matches_cpu(model(v))
})

test_that("mcmc() on the GPU samples eight schools as the CPU does", {
  skip_without_device()
  m <- eight_schools_model()
  set.seed(21)
  gpu <- sample_quietly(m, chains = 4, warmup = 500, n_samples = 1000,
                        compute_options = on_gpu())
  set.seed(22)
  cpu <- sample_quietly(m, chains = 4, warmup = 500, n_samples = 1000,
                        compute_options = on_cpu())
  expect_s3_class(gpu, "greta_mcmc_list")
  expect_length(gpu, 4)
  expect_equal(dim(gpu[[1]]), c(1000, 10))
  expect_means_agree(gpu, cpu, c("mu", "tau", "theta[1,1]"))
  # more draws on the same device, continuing each chain
  more <- extra_samples(gpu, 200, verbose = FALSE)
  expect_identical(attr(more, "model_info")$run$options$backend, on_gpu()$backend)
  expect_equal(dim(more[[1]]), c(1200, 10))
  expect_true(all(is.finite(as.matrix(more))))
  # sampler diagnostics came back from the GPU's run
  params <- get_sampler_params(gpu)
  expect_length(params, 4)
  expect_true(all(params[[1]][, "stepsize__"] > 0))
})

test_that("a seeded GPU run repeats to the bit", {
  skip_without_device()
  m <- eight_schools_model()
  set.seed(5)
  a <- sample_quietly(m, chains = 3, warmup = 100, n_samples = 100, compute_options = on_gpu())
  set.seed(5)
  b <- sample_quietly(m, chains = 3, warmup = 100, n_samples = 100, compute_options = on_gpu())
  expect_identical(as.matrix(a), as.matrix(b))
})

test_that("hmc(), chees(), rwmh() and slice() run on the GPU", {
  skip_without_device()
  m <- eight_schools_model()
  set.seed(23)
  h <- sample_quietly(m, sampler = hmc(), chains = 4, warmup = 300, n_samples = 300,
                      compute_options = on_gpu())
  ch <- sample_quietly(m, sampler = chees(), chains = 4, warmup = 300, n_samples = 300,
                       compute_options = on_gpu())
  for (draws in list(h, ch)) {
    expect_equal(dim(draws[[1]]), c(300, 10))
    expect_lt(abs(summary(draws)$statistics["mu", "Mean"] - 4.4), 2)
  }
  # rwmh() and slice() keep their vectors on the host and call the GPU's
  # executor with host arrays
  x <- normal(0, 1, dim = 2)
  m2 <- model(x)
  for (sampler in list(rwmh(), slice())) {
    draws <- sample_quietly(m2, sampler = sampler, chains = 4, warmup = 500, n_samples = 500,
                            compute_options = on_gpu())
    values <- as.matrix(draws)
    expect_equal(dim(values), c(2000, 2))
    expect_true(all(abs(colMeans(values)) < 0.4))
    expect_true(all(abs(apply(values, 2, stats::sd) - 1) < 0.3))
  }
})

test_that("the seed-like model samples on the GPU in both precisions", {
  skip_without_device()
  for (precision in c("double", "single")) {
    n <- if (standin) 600 else 1e5
    m <- hlogit_model(n = n, groups = n / 10, k = 5, precision = precision)
    set.seed(24)
    t0 <- proc.time()[["elapsed"]]
    draws <- sample_quietly(m, chains = 4, warmup = 200, n_samples = 200,
                            compute_options = on_gpu())
    seconds <- proc.time()[["elapsed"]] - t0
    cat(sprintf("\n  hierarchical logit, N = %g, %d parameters, %s: %.1f s for 4 x (200 + 200) iterations",
                n, m$n_free, precision, seconds))
    s <- summary(draws)$statistics
    expect_true(all(is.finite(s[, "Mean"])))
    off <- if (standin) 1 else 0.15  # the stand-in's 2000 rows say less
    expect_lt(abs(s["alpha", "Mean"] - 0.3), off)
    expect_lt(abs(s["sigma_alpha", "Mean"] - 0.8), off)
  }
})

test_that("opt() and calculate() take the GPU's options", {
  skip_without_device()
  set.seed(25)
  y <- stats::rnorm(200, 1.5, 2)
  mu <- variable()
  sd <- variable(lower = 0)
  distribution(y) <- normal(mu, sd)
  m <- model(mu, sd)
  for (optimiser in list(bfgs(), adam(learning_rate = 0.1), nelder_mead())) {
    fit <- opt(m, optimiser = optimiser, max_iterations = 2000, compute_options = on_gpu())
    expect_equal(fit$par$mu, mean(y), tolerance = 1e-2)
    expect_equal(fit$par$sd, sqrt(mean((y - mean(y))^2)), tolerance = 1e-2)
  }
  draws <- sample_quietly(m, chains = 2, warmup = 200, n_samples = 200, compute_options = on_gpu())
  twice <- calculate(2 * mu, values = draws, compute_options = on_gpu())
  expect_equal(as.matrix(twice), 2 * as.matrix(draws)[, "mu", drop = FALSE],
               ignore_attr = TRUE)
})

test_that("an interrupt ends a GPU run's iteration under way at its next leapfrog step", {
  skip_without_device()
  skip_on_os("windows")  # the test sends SIGINT, as Ctrl-C does
  # One iteration takes seconds uncut: a step far too small for the
  # posterior's scale (sd 100) and a gradient too weak to turn the momentum,
  # so every tree grows to its maximum depth.
  set.seed(26)
  y <- stats::rnorm(if (standin) 2e4 else 1e6)
  mu <- normal(0, 1e5)
  distribution(y) <- normal(mu, 1e5)
  m <- model(mu)
  depth <- if (standin) 12 else 14
  sampler <- nuts(epsilon = 1e-3, max_treedepth = depth)
  start <- initials(mu = 1.5)
  quiet <- function(x) suppressWarnings(suppressMessages(x))  # maximum tree depth, one init
  iteration <- system.time(
    one <- quiet(mcmc(m, sampler = sampler, n_samples = 1, warmup = 0, chains = 2,
                initial_values = start, verbose = FALSE, compute_options = on_gpu()))
  )[["elapsed"]]
  expect_equal(unname(get_sampler_params(one)[[1]][, "n_leapfrog__"]), 2^depth - 1)
  delay <- min(0.5, iteration / 4)
  # as at the console, where an interrupted sampling phase returns its draws
  # (in Rscript it stops with an error, the draws in stashed_samples())
  old <- options(lockstep.interactive = TRUE)
  on.exit(options(old))
  system(sprintf("(sleep %.3f; kill -INT %d)", delay, Sys.getpid()), wait = FALSE)
  started <- proc.time()[["elapsed"]]
  out <- quiet(
    mcmc(m, sampler = sampler, n_samples = 10, warmup = 0, chains = 2, initial_values = start,
         verbose = FALSE, compute_options = on_gpu())
  )
  took <- proc.time()[["elapsed"]] - started
  cat(sprintf("\n  one uncut iteration %.2f s; interrupted after %.2f s, returned after %.2f s",
              iteration, delay, took))
  expect_lt(took, delay + iteration / 2)
  expect_equal(coda::niter(out), 1)
  expect_lt(get_sampler_params(out)[[1]][, "n_leapfrog__"], 2^depth - 1)
})

test_that("svi() on the GPU gives the CPU's fit", {
  skip_without_device()
  y <- c(-0.4, 1.2, 0.9, 2.1, 0.3, 1.7, 0.8)
  mu <- normal(0, 10)
  distribution(y) <- normal(mu, 1)
  m <- model(mu)
  fit <- function(co) {
    set.seed(81)
    svi(m, particles = 8, n_iterations = 500, tolerance = 0, n_draws = 40, verbose = FALSE,
        compute_options = co)
  }
  gpu <- fit(on_gpu())
  cpu <- fit(cpu_only(threads = 1))
  # (the GPU's sums are ordered otherwise: the losses agree to rounding)
  expect_equal(gpu$loss, cpu$loss, tolerance = 1e-6)
  expect_equal(gpu$guide$mean, cpu$guide$mean, tolerance = 1e-6)
  # a mean-field guide lives in the GPU's memory
  expect_identical(gpu$guide$on_device, !standin)
  expect_false(cpu$guide$on_device)
  # whichever first-order optimiser fits it
  fit_rms <- function(co) {
    set.seed(82)
    svi(m, particles = 8, n_iterations = 300, tolerance = 0, n_draws = 10, verbose = FALSE,
        optimiser = rms_prop(learning_rate = 0.05), compute_options = co)
  }
  gpu <- fit_rms(on_gpu())
  cpu <- fit_rms(cpu_only(threads = 1))
  expect_identical(gpu$guide$on_device, !standin)
  expect_equal(gpu$loss, cpu$loss, tolerance = 1e-6)
  expect_equal(gpu$guide$mean, cpu$guide$mean, tolerance = 1e-6)
  expect_equal(gpu$guide$mean, mean(y) * 7 / (7 + 1 / 100), tolerance = 0.2)
  # and a point mass (the mode)
  set.seed(83)
  mode <- svi(m, guide = "delta", n_iterations = 1000, tolerance = 0, verbose = FALSE,
              optimiser = adam(learning_rate = 0.05), compute_options = on_gpu())
  expect_identical(mode$guide$on_device, !standin)
  # and a low-rank guide, against the CPU's
  fit_low <- function(co) {
    set.seed(84)
    suppressWarnings(svi(m, guide = "low_rank", particles = 8, n_iterations = 300,
                         tolerance = 0, n_draws = 40, verbose = FALSE, compute_options = co))
  }
  gpu <- fit_low(on_gpu())
  cpu <- fit_low(cpu_only(threads = 1))
  expect_identical(gpu$guide$on_device, !standin)
  expect_equal(gpu$loss, cpu$loss, tolerance = 1e-6)
  expect_equal(gpu$guide$mean, cpu$guide$mean, tolerance = 1e-6)
  expect_equal(mode$guide$mean, mean(y) * 7 / (7 + 1 / 100), tolerance = 1e-3)
})

test_that("svi()'s minibatches on the GPU's tile kernel are unbiased", {
  skip_without_device()
  # the GPU's tiles are its own (sized to shared memory), so its draws are
  # not the CPU's: with the guide held still, its minibatches' losses
  # average to its whole-data losses (the same particles: the same seed)
  set.seed(5)
  y <- stats::rnorm(if (standin) 600 else 1e5, 1.3, 1)
  mu <- normal(0, 10)
  distribution(y) <- normal(mu, 1)
  m <- model(mu)
  tiles <- if (standin) compute("emulated", tile_kernel = TRUE, threads = 1) else
    gpu_only(0, tile_kernel = TRUE)
  run <- function(batch_size) {
    set.seed(82)
    suppressWarnings(svi(m, batch_size = batch_size, optimiser = adam(learning_rate = 0),
                         n_iterations = 400, tolerance = 0, initial_values = initials(mu = 1),
                         n_draws = 4, verbose = FALSE, compute_options = tiles))
  }
  difference <- run(length(y) / 10)$loss - run(NULL)$loss
  expect_gt(stats::sd(difference), 1)
  expect_lt(abs(mean(difference)), 4.5 * stats::sd(difference) / sqrt(length(difference)))
  if (!standin) {
    expect_error(svi(m, batch_size = 100, compute_options = gpu_only(0)), "tile_kernel = TRUE")
  }
})
