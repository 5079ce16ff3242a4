# Multivariate distributions (R/multivariate.R): the model's log density at
# random free states against R's densities (mvtnorm::dmvnorm, a Dirichlet
# density written with lgamma, dmultinom, the log probability of each observed
# class), gradients against finite differences, sampling against exact
# moments, and errors.

ref_ddirichlet <- function(x, alpha) {
  lgamma(sum(alpha)) - sum(lgamma(alpha)) + sum((alpha - 1) * log(x))
}

# Stan's stick-breaking, as simplex_variable() maps a row of its free state,
# and its log |Jacobian| taken numerically
stick <- function(y) {
  K <- length(y) + 1
  x <- numeric(K)
  rest <- 1
  for (k in seq_len(K - 1)) {
    x[k] <- rest * plogis(y[k] - log(K - k))
    rest <- rest - x[k]
  }
  x[K] <- rest
  x
}
stick_log_jacobian <- function(y) numeric_log_jacobian(stick, function(x) x[seq_along(y)], y)

Sigma3 <- matrix(c(2, 0.6, -0.4, 0.6, 1, 0.3, -0.4, 0.3, 1.5), 3, 3)

test_that("multivariate_normal() data: log density against mvtnorm::dmvnorm, gradient", {
  skip_if_not_installed("mvtnorm")
  set.seed(901)
  yv <- matrix(rnorm(12), 4, 3)
  # an unknown mean (1 x 3) and an unknown covariance (from its Cholesky factor)
  y <- as_data(yv)
  mu <- variable(dim = c(1, 3))
  U <- cholesky_variable(3)
  Sigma <- t(U) %*% U
  distribution(y) <- multivariate_normal(mu, Sigma, n_realisations = 4)
  m <- model(mu, U)
  ref <- function(free) {
    vals <- traced_values(m, t(free))
    mean <- vals[1:3]
    Uv <- matrix(vals[4:12], 3, 3)
    # plus the factor's log |Jacobian|: the sum of its log diagonal
    sum(mvtnorm::dmvnorm(yv, mean, t(Uv) %*% Uv, log = TRUE)) + sum(log(diag(Uv)))
  }
  expect_density_matches(m, ref, chains = c(1, 3), sd = 0.5, tolerance = 1e-9)
  expect_gradient_matches(m, chains = c(1, 3), sd = 0.5)
  # a fixed covariance and one mean per row
  y2 <- as_data(yv)
  mu2 <- variable(dim = c(4, 3))
  distribution(y2) <- multivariate_normal(mu2, Sigma3)
  m2 <- model(mu2)
  expect_density_matches(m2, function(free) {
    mean <- matrix(free, 4, 3)
    sum(vapply(1:4, function(r) {
      mvtnorm::dmvnorm(yv[r, ], mean[r, ], Sigma3, log = TRUE)
    }, numeric(1)))
  }, chains = c(1, 3))
  expect_gradient_matches(m2, chains = c(1, 3))
})

test_that("multivariate_normal() prior: log density, gradient, and exact moments", {
  skip_if_not_installed("mvtnorm")
  set.seed(902)
  mean <- t(c(1, -2, 0.5))
  x <- multivariate_normal(mean, Sigma3, n_realisations = 2)
  expect_equal(dim(x), c(2L, 3L))
  m <- model(x)
  expect_equal(m$n_free, 6L)
  expect_density_matches(m, function(free) {
    sum(mvtnorm::dmvnorm(matrix(free, 2, 3), as.numeric(mean), Sigma3, log = TRUE))
  }, chains = c(1, 3))
  expect_gradient_matches(m, chains = c(1, 3))
  # the Jacobian switch leaves a real density alone
  free <- random_free(m, 2)
  options <- lockstep:::check_compute_options(cpu_only())
  options$jacobian <- FALSE
  without <- lockstep:::ls_engine_log_density(lockstep:::model_engine(m), free, FALSE, options)
  expect_equal(without$log_density,
               apply(free, 1, function(f) sum(mvtnorm::dmvnorm(matrix(f, 2, 3), as.numeric(mean),
                                                               Sigma3, log = TRUE))),
               tolerance = 1e-9)
  # sampling: each row has the given mean and covariance
  x1 <- multivariate_normal(mean, Sigma3)
  draws <- as.matrix(sample_quietly(model(x1), n_samples = 2000, warmup = 500, chains = 4))
  expect_near(colMeans(draws), mean, 0.15)
  expect_near(cov(draws), Sigma3, 0.25)
})

test_that("dirichlet() prior and data: log densities, gradients, and exact means", {
  set.seed(903)
  alpha <- c(2, 3, 5)
  p <- dirichlet(t(alpha))
  expect_equal(dim(p), c(1L, 3L))
  m <- model(p)
  expect_equal(m$n_free, 2L)
  # the free state is the simplex's stick-breaking; the density of p plus the
  # map's log |Jacobian|
  expect_density_matches(m, function(free) {
    ref_ddirichlet(stick(free), alpha) + stick_log_jacobian(free)
  }, chains = c(1, 3), tolerance = 1e-6)
  expect_gradient_matches(m, chains = c(1, 3))
  draws <- as.matrix(sample_quietly(m, n_samples = 2000, warmup = 500, chains = 4))
  expect_equal(rowSums(draws), rep(1, nrow(draws)), tolerance = 1e-12, ignore_attr = TRUE)
  expect_near(colMeans(draws), alpha / sum(alpha), 0.02)
  # data: rows on the simplex, an unknown concentration per column
  yv <- rbind(c(0.2, 0.3, 0.5), c(0.6, 0.1, 0.3))
  y <- as_data(yv)
  a <- variable(lower = 0, dim = c(1, 3))
  distribution(y) <- dirichlet(a, n_realisations = 2)
  m2 <- model(a)
  expect_density_matches(m2, function(free) {
    av <- exp(free)
    ref_ddirichlet(yv[1, ], av) + ref_ddirichlet(yv[2, ], av) + sum(free)
  }, chains = c(1, 3))
  expect_gradient_matches(m2, chains = c(1, 3))
  if (requireNamespace("extraDistr", quietly = TRUE)) {
    expect_equal(ref_ddirichlet(yv[1, ], alpha), extraDistr::ddirichlet(yv[1, ], alpha, log = TRUE))
  }
})

test_that("categorical() and multinomial() data: log densities and gradients", {
  set.seed(904)
  classes <- c(1, 3, 3, 2, 1)
  yv <- diag(3)[classes, ]
  y <- as_data(yv)
  p <- dirichlet(t(c(1, 1, 1)))
  distribution(y) <- categorical(p, n_realisations = 5)
  counts <- rbind(c(3, 5, 2), c(0, 4, 6))
  z <- as_data(counts)
  distribution(z) <- multinomial(10, p, n_realisations = 2)
  m <- model(p)
  expect_density_matches(m, function(free) {
    pv <- stick(free)
    sum(log(pv[classes])) +
      sum(apply(counts, 1, function(r) dmultinom(r, 10, pv, log = TRUE))) +
      ref_ddirichlet(pv, c(1, 1, 1)) + stick_log_jacobian(free)
  }, chains = c(1, 3), tolerance = 1e-6)
  expect_gradient_matches(m, chains = c(1, 3))
  # unnormalised probabilities (normalised per row, as dmultinom does), a
  # size per row
  w <- variable(lower = 0, dim = c(2, 3))
  sizes <- rowSums(counts)
  z2 <- as_data(counts)
  distribution(z2) <- multinomial(as_data(matrix(sizes, 2, 1)), w)
  m2 <- model(w)
  expect_density_matches(m2, function(free) {
    wv <- matrix(exp(free), 2, 3)
    sum(vapply(1:2, function(r) dmultinom(counts[r, ], sizes[r], wv[r, ], log = TRUE),
               numeric(1))) + sum(free)
  }, chains = c(1, 3))
  expect_gradient_matches(m2, chains = c(1, 3))
  w3 <- variable(lower = 0, dim = c(1, 3))
  y3 <- as_data(yv)
  distribution(y3) <- categorical(w3, n_realisations = 5)
  m3 <- model(w3)
  expect_density_matches(m3, function(free) {
    wv <- exp(free)
    sum(log(wv[classes] / sum(wv))) + sum(free)
  }, chains = c(1, 3))
})

test_that("dirichlet_multinomial() data: log density against extraDistr::ddirmnom, gradient", {
  skip_if_not_installed("extraDistr")
  set.seed(905)
  counts <- rbind(c(1, 8, 1), c(6, 2, 2), c(0, 0, 10))
  y <- as_data(counts)
  a <- variable(lower = 0, dim = c(1, 3))
  distribution(y) <- dirichlet_multinomial(10, a, n_realisations = 3)
  m <- model(a)
  expect_density_matches(m, function(free) {
    sum(extraDistr::ddirmnom(counts, 10, exp(free), log = TRUE)) + sum(free)
  }, chains = c(1, 3))
  expect_gradient_matches(m, chains = c(1, 3))
  y2 <- as_data(counts)
  expect_error(distribution(y2) <- dirichlet_multinomial(9, t(c(1, 1, 1)), n_realisations = 3),
               "sum to `size`")
  expect_error(model(dirichlet_multinomial(3, t(c(1, 2)))), "discrete variable")
})

test_that("the emulated backend gives the same multivariate densities", {
  skip_if_not_installed("mvtnorm")
  set.seed(906)
  old <- options(lockstep.backend = "emulated")
  on.exit(options(old))
  yv <- matrix(rnorm(6), 2, 3)
  y <- as_data(yv)
  mu <- variable(dim = c(1, 3))
  distribution(y) <- multivariate_normal(mu, Sigma3, n_realisations = 2)
  m <- model(mu)
  expect_density_matches(m, function(free) {
    sum(mvtnorm::dmvnorm(yv, free, Sigma3, log = TRUE))
  }, chains = c(1, 3))
  expect_gradient_matches(m, chains = c(1, 3))
})

test_that("multivariate distributions give clear errors", {
  expect_error(multivariate_normal(t(c(0, 0)), matrix(1, 2, 3)), "`Sigma`.*square")
  expect_error(multivariate_normal(t(c(0, 0, 0)), diag(2)), "`mean`.*columns")
  expect_error(multivariate_normal(t(c(0, 0)), matrix(c(1, 2, 2, 1), 2)),
               "`Sigma`.*positive definite")
  expect_error(multivariate_normal(matrix(0, 3, 2), diag(2), n_realisations = 4),
               "`n_realisations`")
  expect_error(multivariate_normal(t(c(0, 0)), diag(2), dimension = 3), "`dimension`")
  expect_error(dirichlet(t(c(1, -1, 2))), "`alpha`.*positive")
  expect_error(dirichlet(1), "at least 2")
  expect_error(categorical(t(c(0.2, -0.1, 0.9))), "`prob`.*non-negative")
  expect_error(multinomial(2.5, t(c(0.5, 0.5))), "`size`.*whole")
  # data of the wrong dimensions, or outside the support
  y <- as_data(matrix(0, 3, 2))
  expect_error(distribution(y) <- multivariate_normal(t(c(0, 0)), diag(2)),
               "different dimensions.*n_realisations")
  y2 <- as_data(matrix(c(1, 0, 1, 1), 2))
  expect_error(distribution(y2) <- categorical(t(c(0.5, 0.5)), n_realisations = 2), "one-hot")
  y3 <- as_data(t(c(0.5, 0.6)))
  expect_error(distribution(y3) <- dirichlet(t(c(1, 1))), "sum to 1")
  y4 <- as_data(t(c(2, 3)))
  expect_error(distribution(y4) <- multinomial(4, t(c(0.5, 0.5))), "sum\\s+to `size`")
  # discrete distributions cannot be priors
  theta <- categorical(t(c(0.2, 0.8)))
  y5 <- as_data(1)
  distribution(y5) <- normal(sum(theta), 1)
  expect_error(model(theta), "discrete variable \\(categorical\\(\\)\\)")
  counts <- multinomial(5, t(c(0.2, 0.8)))
  expect_error(model(counts), "discrete variable \\(multinomial\\(\\)\\)")
})
