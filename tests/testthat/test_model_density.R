# Whole models' log densities and gradients against R functions written by
# hand, the emulated (CUDA execution model) backend against the CPU backend,
# and the Jacobians of variable()'s bounds.

test_that("eight schools (non-centred) log density matches a hand-written R function", {
  set.seed(401)
  m <- eight_schools_model()
  expect_equal(m$n_free, 10)
  expect_density_matches(m, eight_schools_log_density, chains = c(1, 3))
  # further from the mode, where every term matters
  expect_density_matches(m, eight_schools_log_density, chains = 5, sd = 3)
})

test_that("eight schools gradient matches the hand-written gradient and finite differences", {
  set.seed(402)
  m <- eight_schools_model()
  for (chains in c(1, 3)) {
    free <- random_free(m, chains)
    got <- engine_density(m, free)$gradient
    expect_equal(dim(got), c(chains, 10L))
    expect_equal(got, t(apply(free, 1, eight_schools_gradient)), tolerance = 1e-10)
  }
  expect_gradient_matches(m, chains = c(1, 3))
})

test_that("model() with no arguments traces the calling environment's greta arrays but data", {
  # greta's rule: every non-data greta array where model() is called, under
  # its name there, in ls()'s order; operations are traced too
  set.seed(31)
  x <- rnorm(10)
  y <- as_data(x)
  mu <- normal(0, 5)
  sigma <- lognormal(0, 1)
  twice <- 2 * mu
  not_greta <- 3
  distribution(y) <- normal(mu, sigma)
  m <- model()
  expect_identical(vapply(m$traced, `[[`, "", "name"), c("mu", "sigma", "twice"))
  expect_equal(m$n_free, 2)
  draws <- mcmc(m, n_samples = 50, warmup = 50, chains = 2, verbose = FALSE)
  expect_identical(colnames(draws[[1]]), c("mu", "sigma", "twice"))
  expect_equal(as.matrix(draws)[, "twice"], 2 * as.matrix(draws)[, "mu"])
  # named in a function's frame too
  f <- function() {
    z <- as_data(x)
    a <- normal(0, 1)
    distribution(z) <- normal(a, 1)
    model()
  }
  expect_identical(vapply(f()$traced, `[[`, "", "name"), "a")
})

test_that("the traced values are the constrained values the log density sees", {
  set.seed(403)
  m <- eight_schools_model()
  free <- random_free(m, 3)
  values <- traced_values(m, free)
  expect_equal(dim(values), c(3L, 10L))  # mu, tau, theta[1:8]
  expect_equal(values[, 1], free[, 1])
  expect_equal(values[, 2], exp(free[, 2]))
  expect_equal(values[, 3:10], free[, 1] + exp(free[, 2]) * free[, 3:10])
})

test_that("chains are independent: each row of a many-chain call equals a one-chain call", {
  set.seed(404)
  m <- eight_schools_model()
  free <- random_free(m, 4)
  all <- engine_density(m, free)
  for (c in 1:4) {
    one <- engine_density(m, free[c, , drop = FALSE])
    expect_equal(one$log_density, all$log_density[c], tolerance = 1e-14)
    expect_equal(one$gradient[1, ], all$gradient[c, ], tolerance = 1e-14)
  }
  # repeat calls (cached executors) give the same answers; the gradient flag
  # does not change the log density
  again <- engine_density(m, free)
  expect_identical(again, all)
  expect_equal(engine_density(m, free, gradient = FALSE)$log_density, all$log_density,
               tolerance = 1e-14)
  # a vector is one state
  expect_equal(lockstep:::model_log_density(m, free[2, ])$log_density, all$log_density[2],
               tolerance = 1e-14)
})

test_that("a centred hierarchical regression matches R, with gradients", {
  set.seed(405)
  n <- 40
  X <- cbind(1, matrix(rnorm(n * 2), n, 2))
  group <- sample(1:4, n, replace = TRUE)
  y <- rnorm(n)
  beta <- normal(0, 2, dim = 3)
  sigma_g <- cauchy(0, 1, truncation = c(0, Inf))
  alpha <- normal(0, sigma_g, dim = 4)
  sigma <- exponential(1)
  mu <- X %*% beta + alpha[group]
  distribution(y) <- normal(mu, sigma)
  m <- model(beta, alpha, sigma)
  expected <- function(z) {
    beta <- z[1:3]
    sg <- exp(z[4])
    alpha <- z[5:8]
    sigma <- exp(z[9])
    sum(dnorm(beta, 0, 2, log = TRUE)) +
      dcauchy(sg, 0, 1, log = TRUE) + log(2) + z[4] +
      sum(dnorm(alpha, 0, sg, log = TRUE)) +
      dexp(sigma, 1, log = TRUE) + z[9] +
      sum(dnorm(y, X %*% beta + alpha[group], sigma, log = TRUE))
  }
  expect_equal(m$n_free, 9)
  expect_density_matches(m, expected)
  expect_gradient_matches(m)
})

# -- the emulated backend --------------------------------------------------------

expect_backends_agree <- function(m, chains = c(1, 3, 7), sd = 1) {
  for (n_chains in chains) {
    free <- random_free(m, n_chains, sd)
    cpu <- engine_density(m, free, backend = "cpu")
    emulated <- engine_density(m, free, backend = "emulated")
    expect_equal(emulated$log_density, cpu$log_density, tolerance = 1e-10)
    expect_equal(emulated$gradient, cpu$gradient, tolerance = 1e-10)
    # the GPU's tile kernel, run lane by lane: the likelihood's rows tile by
    # tile, in one pass per gradient
    tiled <- engine_density(m, free, backend = "emulated", tile_kernel = TRUE)
    expect_equal(tiled$log_density, cpu$log_density, tolerance = 1e-10)
    expect_equal(tiled$gradient, cpu$gradient, tolerance = 1e-10)
    expect_equal(traced_values(m, free, backend = "emulated"),
                 traced_values(m, free, backend = "cpu"), tolerance = 1e-10)
  }
}

test_that("the emulated backend gives the CPU backend's log density and gradient", {
  set.seed(406)
  expect_backends_agree(eight_schools_model())
})

test_that("the emulated backend agrees on a larger model with every op", {
  set.seed(407)
  n <- 503  # not a multiple of the emulated lane count
  X <- matrix(rnorm(n * 4), n, 4)
  group <- sample(1:6, n, replace = TRUE)
  beta <- normal(0, 1, dim = 4)
  alpha <- student(4, 0, 1, dim = 6)
  sigma <- exponential(2, truncation = c(0, 5))
  p <- variable(lower = 0.1, upper = 0.9)
  k <- variable(upper = 3)
  eta <- X %*% beta + alpha[group]
  mean <- -eta / 2 + log1p(exp(eta)) * p - sqrt(sigma) + exp(k) / (1 + sum(beta[2:3]))
  y <- rnorm(n)
  distribution(y) <- normal(mean, sigma)
  w <- rexp(n)
  distribution(w) <- exponential(ilogit(eta) + 0.1)
  m <- model(beta, alpha, sigma, p, k, mean)
  expect_backends_agree(m, sd = 0.5)
})

test_that("the tile kernel agrees on the seed model, a mixture and a poisson regression", {
  set.seed(409)
  n <- 331
  G <- 7
  X <- matrix(rnorm(n * 3), n, 3)
  g <- sample(G, n, replace = TRUE)
  # the seed's hierarchical logistic regression, non-centred
  a <- normal(0, 1)
  beta <- normal(0, 1, dim = 3)
  sigma_a <- normal(0, 1, truncation = c(0, Inf))
  sigma_g <- normal(0, 1, dim = c(1, 3), truncation = c(0, Inf))
  z_a <- normal(0, 1, dim = G)
  z_g <- normal(0, 1, dim = c(G, 3))
  alpha_g <- z_a * sigma_a
  gamma <- sweep(z_g, 2, sigma_g, "*")
  eta <- a + alpha_g[g] + X %*% beta + rowSums(X * gamma[g, ])
  y <- as_data(rbinom(n, 1, 0.4))
  distribution(y) <- bernoulli(ilogit(eta))
  expect_backends_agree(model(a, beta, sigma_a, sigma_g), chains = c(1, 4), sd = 0.5)
  # a two-component normal mixture with a per-row scale
  mu <- normal(0, 2, dim = 2)
  s <- variable()
  w <- uniform(0, 1)
  obs <- rnorm(n)
  distribution(obs) <- mixture(normal(mu[1], exp(s * X[, 1])), normal(mu[2], 1),
                               weights = c(w, 1 - w))
  expect_backends_agree(model(mu, s, w), chains = c(2, 3), sd = 0.5)
  # poisson regression with a group effect and an offset
  b <- normal(0, 1, dim = 3)
  u <- normal(0, 1, dim = G)
  counts <- rpois(n, 2)
  distribution(counts) <- poisson(exp(X %*% b + u[g] + log(1 + X[, 2]^2)))
  expect_backends_agree(model(b, u), chains = 3, sd = 0.3)
})

test_that("options(lockstep.backend) selects the backend", {
  set.seed(408)
  m <- eight_schools_model()
  free <- random_free(m, 3)
  cpu <- lockstep:::model_log_density(m, free)
  old <- options(lockstep.backend = "emulated")
  on.exit(options(old), add = TRUE)
  emulated <- lockstep:::model_log_density(m, free)
  expect_equal(emulated$log_density, cpu$log_density, tolerance = 1e-10)
  expect_equal(emulated$gradient, cpu$gradient, tolerance = 1e-10)
  options(lockstep.backend = "no_such_backend")
  expect_error(lockstep:::model_log_density(m, free), "unknown backend")
})

# -- bounds of variables -------------------------------------------------------

# A bounded variable v (flat prior) with data ~ normal(v, 2): the log density is
# the likelihood at the constrained values plus the log Jacobian.
check_bounded_variable <- function(lower, upper, dim = 3, sd = 1) {
  v <- variable(lower = lower, upper = upper, dim = dim)
  y_values <- rnorm(prod(dim))
  y <- as_data(array(y_values, dim = dim(v)))
  distribution(y) <- normal(v, 2)
  m <- model(v)
  expect_equal(m$n_free, prod(dim))
  expected <- function(z) {
    tr <- constrain(z, lower, upper)
    sum(dnorm(y_values, tr$value, 2, log = TRUE)) + sum(tr$log_jacobian)
  }
  for (chains in c(1, 3)) {
    free <- random_free(m, chains, sd)
    values <- traced_values(m, free)
    expect_equal(values, t(apply(free, 1, function(z) constrain(z, lower, upper)$value)),
                 tolerance = 1e-12)
    expect_true(all(values >= lower & values <= upper))
    expect_density_matches(m, expected, free = free)
    expect_gradient_matches(m, free = free)
  }
  # to_free() inverts the transform
  x <- constrain(seq(-3, 3, by = 0.5), lower, upper)$value
  expect_equal(lockstep:::to_free(x, lower, upper), seq(-3, 3, by = 0.5), tolerance = 1e-10)
  expect_equal(lockstep:::to_free(x, lower, upper), unconstrain(x, lower, upper),
               tolerance = 1e-12)
  m
}

test_that("variable() with a lower bound adds the log Jacobian of x = lower + exp(z)", {
  set.seed(409)
  check_bounded_variable(0, Inf)
  check_bounded_variable(-2.5, Inf, dim = c(2, 2))
})

test_that("variable() with an upper bound adds the log Jacobian of x = upper - exp(z)", {
  set.seed(410)
  check_bounded_variable(-Inf, 0)
  check_bounded_variable(-Inf, 4, dim = c(1, 3))
})

test_that("variable() with both bounds adds the log Jacobian of the scaled ilogit", {
  set.seed(411)
  check_bounded_variable(0, 1)
  check_bounded_variable(-3, 5, dim = 4, sd = 2)
})

test_that("an unbounded variable adds no Jacobian", {
  set.seed(412)
  check_bounded_variable(-Inf, Inf)
})

test_that("the interval Jacobian is finite and accurate far in the tails", {
  v <- variable(lower = -1, upper = 3)
  y <- as_data(0.5)
  distribution(y) <- normal(v, 10)
  m <- model(v)
  z <- c(-40, -20, 20, 40)
  expected <- sapply(z, function(zi) {
    tr <- constrain(zi, -1, 3)
    dnorm(0.5, tr$value, 10, log = TRUE) + tr$log_jacobian
  })
  got <- engine_density(m, matrix(z, ncol = 1))
  expect_true(all(is.finite(got$log_density)))
  expect_equal(got$log_density, expected, tolerance = 1e-10)
  expect_true(all(is.finite(got$gradient)))
})

test_that("many different chain counts in one session give correct answers", {
  # the engine caches an executor per chain count and drops them when there
  # are many: every count must still be right
  set.seed(413)
  m <- eight_schools_model()
  for (chains in c(1:12, 2, 64, 1)) {
    free <- random_free(m, chains)
    got <- engine_density(m, free)
    expect_equal(got$log_density, apply(free, 1, eight_schools_log_density), tolerance = 1e-10)
    expect_equal(got$gradient, t(apply(free, 1, eight_schools_gradient)), tolerance = 1e-10)
  }
})

test_that("a model prints its free parameters and traced arrays", {
  m <- eight_schools_model()
  expect_s3_class(m, "greta_model")
  expect_output(print(m), "10 free parameters, tracing mu, tau, theta")
})

test_that("invalid parameter values give a NaN log density, not a crash", {
  sd <- variable()  # unconstrained, so it can be negative
  y <- c(0.5, 1.5)
  distribution(y) <- normal(0, sd)
  m <- model(sd)
  got <- engine_density(m, matrix(c(-1, 0, 2), ncol = 1))
  expect_true(is.nan(got$log_density[1]))
  expect_false(is.finite(got$log_density[2]))
  expect_equal(got$log_density[3], sum(dnorm(y, 0, 2, log = TRUE)), tolerance = 1e-12)
  # the other chains of the call are unaffected
  expect_equal(got$gradient[3, 1], sum((y^2 / 4 - 1) / 2), tolerance = 1e-10)
})

test_that("backend_info() describes the backends", {
  info <- backend_info()
  expect_s3_class(info, "lockstep_backend_info")
  expect_type(info$cuda_built, "logical")
  expect_s3_class(info$devices, "data.frame")
  expect_true(all(c("id", "name", "compute_capability", "memory_gb", "multiprocessors") %in%
                    names(info$devices)))
  if (!isTRUE(info$cuda_built)) {
    expect_true(is.na(info$cuda_runtime_version))
    expect_equal(nrow(info$devices), 0)
  }
  expect_output(print(info), "backends: cpu \\(always\\)")
})

# -- threads, virtual devices and tiles -----------------------------------------

test_that("threads, virtual devices and tile sizes give the same log density and gradient", {
  set.seed(71)
  N <- 57
  X <- matrix(rnorm(N * 3), N, 3)
  g <- sample.int(6, N, replace = TRUE)
  y <- rnorm(N)
  beta <- normal(0, 1, dim = 3)
  alpha <- normal(0, 1, dim = 6)
  sigma <- normal(0, 1, truncation = c(0, Inf))
  mu <- as_data(X) %*% beta + alpha[g]
  distribution(y) <- normal(mu, sigma)
  m <- model(beta, alpha, sigma)
  for (chains in c(1, 3)) {
    free <- random_free(m, chains, sd = 0.5)
    reference <- engine_density(m, free, threads = 1, devices = 1, tile_rows = N)
    # the tiled result against a hand-written log density
    expected <- apply(free, 1, function(z) {
      b <- z[1:3]; a <- z[4:9]; s <- exp(z[10])
      sum(dnorm(b, 0, 1, log = TRUE)) + sum(dnorm(a, 0, 1, log = TRUE)) +
        dnorm(s, 0, 1, log = TRUE) + log(2) + z[10] +
        sum(dnorm(y, X %*% b + a[g], s, log = TRUE))
    })
    expect_equal(reference$log_density, expected, tolerance = 1e-10)
    for (threads in 1:2) for (devices in c(1, 2, 7)) for (tile in c(5, 13, 100)) {
      got <- engine_density(m, free, threads = threads, devices = devices, tile_rows = tile)
      expect_equal(got$log_density, reference$log_density, tolerance = 1e-12)
      expect_equal(got$gradient, reference$gradient, tolerance = 1e-12)
    }
  }
})

test_that("cpu_only() and gpu_only() check their arguments", {
  expect_s3_class(cpu_only(threads = 2), "lockstep_compute_options")
  expect_output(print(cpu_only(threads = 2, devices = 3)), "2 threads, 3 devices")
  expect_error(cpu_only(threads = 0), "`threads` must be a whole number of at least 1")
  expect_error(cpu_only(devices = 1.5), "`devices`")
  expect_error(gpu_only(-1), "`devices` must be device numbers")
  expect_error(gpu_only("0"), "`devices` must be device numbers")
  expect_error(gpu_only(c(0, NA)), "`devices` must be device numbers")
  expect_error(gpu_only(integer()), "`devices` must be device numbers")
  expect_error(gpu_only(0, tile_kernel = "yes"), "`tile_kernel` must be TRUE or FALSE")
  expect_error(gpu_only(0, tile_kernel = NA), "`tile_kernel` must be TRUE or FALSE")
  info <- backend_info()
  expect_type(info$nccl, "logical")
  if (!isTRUE(info$cuda_built) || nrow(info$devices) == 0L) {
    # greta's scripts written for a GPU run on the CPU, with one warning
    why <- if (!isTRUE(info$cuda_built)) "no CUDA backend" else "no CUDA device is visible"
    expect_warning(co <- gpu_only(), why)
    expect_warning(gpu_only(0:1), "running on the CPU instead, as cpu_only\\(\\)")
    expect_identical(co$backend, "cpu")
    expect_false(co$mpi)
    if (!isTRUE(info$cuda_built)) expect_false(info$nccl)
    mu <- normal(0, 1)
    y_gpu <- as_data(c(0.1, -0.3))
    distribution(y_gpu) <- normal(mu, 1)
    m_gpu <- model(mu)
    expect_no_warning(d <- mcmc(m_gpu, n_samples = 20, warmup = 20, chains = 2,
                                compute_options = co, verbose = FALSE))
    expect_equal(dim(as.matrix(d)), c(40L, 1L))
    expect_length(calculate(mu, nsim = 3, compute_options = co)$mu, 3)
  } else {
    expect_error(gpu_only(max(info$devices$id) + 1), "there is no GPU")
    expect_error(gpu_only(c(0, max(info$devices$id) + 1:2)),
                 sprintf("there is no GPU %d, %d", max(info$devices$id) + 1, max(info$devices$id) + 2))
    expect_output(print(gpu_only()), "cuda backend on GPU 0")
    expect_output(print(gpu_only(c(0, 0))), "cuda backend on 2 GPUs")
  }
  m <- eight_schools_model()
  expect_error(mcmc(m, compute_options = "cpu", verbose = FALSE),
               "`compute_options` must be created by cpu_only()")
  expect_error(mcmc(m, n_cores = 0, verbose = FALSE), "`n_cores`")
})

test_that("precision = 'single' agrees with double within float32 tolerance, and samples", {
  set.seed(72)
  N <- 300
  x <- rnorm(N)
  y <- rbinom(N, 1, plogis(0.5 + x))
  build <- function(precision) {
    a <- normal(0, 2)
    b <- normal(0, 2)
    distribution(y) <- bernoulli(ilogit(a + b * x))
    model(a, b, precision = precision)
  }
  md <- build("double")
  ms <- build("single")
  expect_identical(ms$precision, "single")
  free <- random_free(md, 3, sd = 0.5)
  d <- engine_density(md, free)
  s <- engine_density(ms, free)
  expect_equal(s$log_density, d$log_density, tolerance = 1e-5)
  expect_false(identical(s$log_density, d$log_density))  # it ran in float32
  expect_equal(s$gradient, d$gradient, tolerance = 1e-4)
  draws <- mcmc(ms, n_samples = 300, warmup = 300, chains = 2, verbose = FALSE)
  fit <- glm(y ~ x, family = binomial)
  expect_equal(unname(colMeans(as.matrix(draws))), unname(coef(fit)), tolerance = 0.1)
})

test_that("the cuda backend without a GPU (or without CUDA) is an R error, not a crash", {
  info <- backend_info()
  skip_if(isTRUE(info$cuda_built) && nrow(info$devices) > 0, "a GPU is visible here")
  m <- eight_schools_model()
  options <- cpu_only(threads = 1)
  options$backend <- "cuda"
  free <- matrix(0.1, 2, m$n_free)
  expect_error(model_log_density(m, free, compute_options = options),
               if (isTRUE(info$cuda_built)) "no CUDA device is visible" else "built without CUDA")
})

test_that("a likelihood connected to none of the model's greta arrays is not part of it (as greta)", {
  x <- normal(0, 1)
  y <- as_data(c(0.5, 1.2))
  distribution(y) <- normal(0, 2)  # fixed parameters, and nothing links it to x
  z <- as_data(c(-0.4, 0.9))
  distribution(z) <- normal(x, 2)  # linked to x: part of the model
  m <- model(x)
  d <- model_log_density(m, matrix(c(0.3, -1.1), 2, 1))
  expected <- vapply(c(0.3, -1.1), function(v) {
    stats::dnorm(v, log = TRUE) + sum(stats::dnorm(c(-0.4, 0.9), v, 2, log = TRUE))
  }, numeric(1))
  expect_equal(as.numeric(d$log_density), expected, tolerance = 1e-12)
})
