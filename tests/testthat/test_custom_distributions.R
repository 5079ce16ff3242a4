# custom_distribution(): distributions defined in R over lockstep's ops (issue
# 52's extension hook), against hand-written log densities, finite
# differences and their own samplers.

skew_normal <- function(xi, omega, alpha, dim = NULL) {
  custom_distribution(
    function(x, p) {
      z <- (x - p$xi) / p$omega
      log(2) - log(p$omega) - 0.5 * log(2 * pi) - 0.5 * z^2 + log(iprobit(p$alpha * z))
    },
    parameters = list(xi = xi, omega = omega, alpha = alpha), dim = dim,
    sample = function(p, dim) {
      delta <- p$alpha / sqrt(1 + p$alpha^2)
      n <- prod(dim)
      array(p$xi + p$omega * (delta * abs(stats::rnorm(n)) + sqrt(1 - delta^2) * stats::rnorm(n)),
            dim)
    },
    name = "skew_normal")
}
dskew <- function(x, xi, omega, alpha) {
  z <- (x - xi) / omega
  log(2) - log(omega) + stats::dnorm(z, log = TRUE) + stats::pnorm(alpha * z, log.p = TRUE)
}

test_that("a custom_distribution() of data has its log density and gradient", {
  set.seed(1)
  y <- c(0.2, 1.9, 0.7, 2.8, 1.1, -0.3)
  xi <- normal(0, 1); omega <- lognormal(0, 1); alpha <- normal(0, 3)
  distribution(y) <- skew_normal(xi, omega, alpha)
  m <- model(xi, omega, alpha)
  expected <- function(z) {
    sum(dskew(y, z[1], exp(z[2]), z[3])) + dnorm(z[1], log = TRUE) +
      dlnorm(exp(z[2]), 0, 1, log = TRUE) + z[2] + dnorm(z[3], 0, 3, log = TRUE)
  }
  expect_density_matches(m, expected, chains = c(1, 3, 4))
  expect_gradient_matches(m, chains = c(1, 3, 4))
  # log_lik() counts each element as one observation
  draws <- mcmc(m, n_samples = 30, warmup = 30, chains = 2, verbose = FALSE)
  ll <- log_lik(draws)
  expect_identical(dim(ll), c(60L, 6L))
  v <- as.matrix(draws)[1, ]
  expect_equal(ll[1, ], dskew(y, v[["xi"]], v[["omega"]], v[["alpha"]]), tolerance = 1e-8)
})

test_that("a custom_distribution() prior is constrained to its support, with its Jacobian", {
  half <- function(scale) {
    custom_distribution(function(x, p) -0.5 * (x / p$scale)^2 - log(p$scale) + 0.5 * log(2 / pi),
                     parameters = list(scale = scale), dim = 2, lower = 0, name = "half_normal")
  }
  s <- half(2)
  m <- model(s)
  expected <- function(z) {
    x <- exp(z)
    sum(dnorm(x, 0, 2, log = TRUE) + log(2)) + sum(z)
  }
  expect_density_matches(m, expected, chains = c(1, 3))
  expect_gradient_matches(m, chains = c(1, 3))
  draws <- mcmc(m, n_samples = 500, warmup = 300, chains = 2, verbose = FALSE)
  expect_true(all(as.matrix(draws) > 0))
  # a half normal of scale 2: mean 2 sqrt(2 / pi) = 1.60 (sd 1.21; ESS in the hundreds)
  expect_lt(abs(mean(as.matrix(draws)) - 2 * sqrt(2 / pi)), 0.3)
})

test_that("calculate() and simulate() draw a custom_distribution() from its `sample`", {
  set.seed(2)
  x <- skew_normal(1, 2, 4, dim = 2000)
  sims <- calculate(x, nsim = 2)[[1]]
  expect_identical(dim(sims), c(2L, 2000L, 1L))
  delta <- 4 / sqrt(17)
  # the skew normal's mean xi + omega delta sqrt(2 / pi), sd of the mean 0.02
  expect_lt(abs(mean(sims) - (1 + 2 * delta * sqrt(2 / pi))), 0.08)
  # data given one: simulate() draws the data at the parameters' prior draws
  y <- as_data(c(0.5, 1, 1.5))
  a <- normal(0, 1)
  distribution(y) <- skew_normal(a, 1, 2)
  sm <- simulate(model(a), nsim = 5)
  expect_identical(dim(sm$y), c(5L, 3L, 1L))
  expect_true(all(is.finite(sm$y)))
})

test_that("a discrete custom_distribution() is for data, and checks them", {
  # the zero-truncated poisson
  zt_poisson <- function(lambda) {
    custom_distribution(function(x, p) {
      x * log(p$lambda) - p$lambda - lgamma(x + 1) - log(1 - exp(-p$lambda))
    }, parameters = list(lambda = lambda), discrete = TRUE, name = "zt_poisson")
  }
  y <- c(1, 3, 2, 1, 5)
  lambda <- gamma(2, 1)
  distribution(y) <- zt_poisson(lambda)
  m <- model(lambda)
  expected <- function(z) {
    l <- exp(z)
    sum(dpois(y, l, log = TRUE) - log(1 - exp(-l))) + dgamma(l, 2, 1, log = TRUE) + z
  }
  expect_density_matches(m, expected, chains = c(1, 3))
  expect_gradient_matches(m, chains = c(1, 3))
  y2 <- c(1.5, 2)
  expect_error(distribution(y2) <- zt_poisson(lambda), "zt_poisson\\(\\) distribution must be whole numbers")
  # without data it cannot be a variable
  expect_error(model(zt_poisson(2)), ".")
  # without `sample`, simulation says what is missing
  y3 <- as_data(c(1, 2))
  distribution(y3) <- zt_poisson(lambda)
  expect_error(simulate(model(lambda), nsim = 2), "has no `sample` function")
})

test_that("custom_distribution() checks its arguments", {
  expect_error(custom_distribution("x"), "`log_density` of custom_distribution\\(\\) must be a function")
  expect_error(custom_distribution(function(x, p) x, list(1)), "must be a named list")
  expect_error(custom_distribution(function(x, p) x, list(a = 1, a = 2)), "distinct names")
  expect_error(custom_distribution(function(x, p) x, sample = 3), "`sample` of custom_distribution")
  expect_error(custom_distribution(function(x, p) x, lower = 1, upper = 0), "below `upper`")
  expect_error(custom_distribution(function(x, p) x, discrete = TRUE, lower = 0), "leave `lower`")
  expect_error(custom_distribution(function(x, p) x, list(a = "b")), "parameter `a`")
  bad <- custom_distribution(function(x, p) 3, name = "bad")
  expect_error(model(bad), "must return a greta array, but returned numeric")
  short <- custom_distribution(function(x, p) -x^2, dim = 3, sample = function(p, dim) 1,
                            name = "short")
  expect_error(calculate(short, nsim = 2), "must return 3 numbers")
})
