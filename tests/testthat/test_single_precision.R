# Single precision (model(..., precision = "single"): float32 values with sums
# in double) for the terms built after the scale engine: constrained
# variables, the multivariate and matrix distributions, mixture() and joint()
# (the logpdf op), and the representation families. Each model is built twice
# from the same code, and its log density and gradient in single precision are
# compared with double's at the same free states, for 1 and 3 chains on the
# cpu and emulated backends.

# build(precision) returns a model; tol is relative to the largest |value|.
expect_single_close_to_double <- function(build, tol = 1e-4, sd = 0.5) {
  set.seed(97)
  m_double <- build("double")
  m_single <- build("single")
  expect_equal(m_single$n_free, m_double$n_free)
  for (chains in c(1, 3)) {
    free <- random_free(m_double, chains, sd = sd)
    for (backend in c("cpu", "emulated")) {
      d <- engine_density(m_double, free, backend = backend)
      s <- engine_density(m_single, free, backend = backend)
      expect_true(all(is.finite(d$log_density)))
      scale <- max(1, abs(d$log_density))
      expect_lt(max(abs(s$log_density - d$log_density)) / scale, tol)
      gscale <- max(1, abs(d$gradient))
      expect_lt(max(abs(s$gradient - d$gradient)) / gscale, tol)
      # and single is really single: not bit for bit double's
      expect_false(identical(s$log_density, d$log_density))
    }
  }
}

test_that("constrained variables in single precision match double", {
  expect_single_close_to_double(function(precision) {
    w <- simplex_variable(4)
    o <- ordered_variable(3)
    L <- cholesky_variable(3, correlation = TRUE)
    d <- dirichlet(t(c(1.5, 2, 2.5, 3)))
    counts <- t(c(3, 1, 4, 2))
    distribution(counts) <- multinomial(10, w)
    cuts <- c(-1.1, 0.2, 1.3)
    distribution(cuts) <- normal(t(o), 0.5)
    diagonal <- c(1, 0.9, 0.8)
    distribution(diagonal) <- normal(colSums(L * L), 0.2)
    model(w, o, L, d, precision = precision)
  })
})

test_that("multivariate normal, lkj and wishart in single precision match double", {
  expect_single_close_to_double(function(precision) {
    y <- matrix(c(0.3, -0.2, 1.1, 0.4, -0.7, 0.2, 0.9, 0.1, -0.4), 3, 3)
    Omega <- lkj_correlation(2, dimension = 3)
    W <- wishart(5, diag(3))
    mu <- normal(0, 1, dim = c(1, 3))
    distribution(y) <- multivariate_normal(mu, Omega * 0.5 + W * 0.1, n_realisations = 3)
    model(mu, Omega, W, precision = precision)
  })
})

test_that("mixture() and joint() in single precision match double", {
  expect_single_close_to_double(function(precision) {
    y <- c(-1.2, 0.3, 2.5, 4.1, 3.3, -0.4)
    w <- simplex_variable(2)
    mu <- normal(0, 3, dim = 2)
    distribution(y) <- mixture(normal(mu[1], 1), normal(mu[2], 1.5), weights = t(w))
    z <- cbind(c(0.2, 1.4, 0.8), c(2.1, 0.5, 1.7))
    s <- lognormal(0, 1)
    distribution(z) <- joint(normal(mu[1], s), exponential(s), dim = 3)
    model(w, mu, s, precision = precision)
  })
})

test_that("the probit, logit and log representations in single precision match double", {
  expect_single_close_to_double(function(precision) {
    x <- c(-1, -0.3, 0.2, 0.8, 1.5)
    b <- normal(0, 1, dim = 2)
    eta <- b[1] + b[2] * x
    y1 <- c(0, 0, 1, 1, 1)
    y2 <- c(1, 2, 4, 3, 5)
    y3 <- c(0, 1, 1, 3, 5)
    distribution(y1) <- bernoulli(iprobit(eta))
    distribution(y2) <- binomial(6, ilogit(eta))
    distribution(y3) <- poisson(exp(eta))
    model(b, precision = precision)
  })
})
