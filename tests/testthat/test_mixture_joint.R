# mixture() and joint() (R/mixture.R, R/joint.R): the engine's log densities
# against references written here from R's d* functions (log of weighted sums;
# sums over columns), gradients against finite differences, a small mixture
# model sampled with mcmc(), log_lik() columns, calculate(nsim =) draws against
# R's, and the errors for bad arguments.

# The values of a model's traced arrays at one free state, as a named list.
values_at <- function(model, z) {
  v <- traced_values(model, matrix(z, 1))
  sizes <- vapply(model$traced, function(t) as.integer(prod(t$dim)), integer(1))
  out <- split(as.numeric(v), rep(seq_along(sizes), sizes))
  names(out) <- vapply(model$traced, `[[`, "", "name")
  out
}

# log(sum_k w[k] * exp(lp[, k])) row by row, computed in long form in R (the
# largest term taken out first: at a random state with a small sd every
# component's density underflows, exp(-5000), where the log is still finite)
ref_log_mix <- function(lp, w) {
  w <- w / sum(w)
  top <- apply(lp, 1, max)
  top + log(rowSums(sweep(exp(lp - top), 2, w, "*")))
}

test_that("a mixture of normals on data: log density and gradient against R", {
  y <- c(-2.3, -1.1, 0.2, 1.7, 2.9, 4.4)
  mu <- variable(dim = 2)
  log_sd <- variable()
  sd <- exp(log_sd)
  # weights need not sum to one: they are divided by their sum, as in greta
  distribution(y) <- mixture(normal(mu[1], sd), normal(mu[2], sd), weights = c(1, 3))
  m <- model(mu, log_sd)
  expect_density_matches(m, function(z) {
    v <- values_at(m, z)
    s <- exp(v$log_sd)
    sum(ref_log_mix(cbind(dnorm(y, v$mu[1], s, log = TRUE), dnorm(y, v$mu[2], s, log = TRUE)),
                    c(1, 3)))
  }, tolerance = 1e-8)
  expect_gradient_matches(m)
})

test_that("log_add_exp, the op that combines components, matches R with gradients", {
  log_add_exp <- lockstep:::log_add_exp
  set.seed(42)
  check_operation(function(a, b) log_add_exp(a, b), list(a = vec(4), b = vec(4)))
  check_operation(function(a, b) log_add_exp(a * 30, b), list(a = vec(3), b = scalar()))
  # far apart, at infinities and NaN: R's log(exp(a) + exp(b)) where it is
  # finite, and the limits where it overflows
  a <- c(-800, 800, -2, -Inf, -Inf, Inf, 3, NaN)
  b <- c(-801, 799, 40, 1.5, -Inf, -Inf, Inf, 1)
  want <- c(-800 + log1p(exp(-1)), 800 + log1p(exp(-1)), log(exp(-2) + exp(40)), 1.5, -Inf,
            Inf, Inf, NaN)
  expect_equal(log_add_exp(a, b), want)
  # (data must be finite; the engine's infinities are tested in C++)
  ok <- is.finite(a) & is.finite(b)
  expect_equal(engine_values(log_add_exp(as_data(a[ok]), as_data(b[ok]))), want[ok],
               tolerance = 1e-15)
})

test_that("a mixture of different truncated families with computed weights", {
  y <- c(0.2, 0.9, 1.6, 3.1)
  a <- variable(dim = 2)
  m1 <- variable()
  weights <- exp(a)  # a 2 x 1 column of positive weights
  distribution(y) <- mixture(normal(m1, 1.5, truncation = c(0, Inf)), lognormal(0, 0.7),
                             weights = weights)
  m <- model(a, m1)
  expect_density_matches(m, function(z) {
    v <- values_at(m, z)
    trunc_normal <- dnorm(y, v$m1, 1.5, log = TRUE) -
      pnorm(0, v$m1, 1.5, lower.tail = FALSE, log.p = TRUE)
    sum(ref_log_mix(cbind(trunc_normal, dlnorm(y, 0, 0.7, log = TRUE)), exp(v$a)))
  }, tolerance = 1e-8)
  expect_gradient_matches(m)
})

test_that("a discrete mixture with per-element weights (a K x n matrix)", {
  y <- c(0, 3, 8, 12, 1)
  log_rate <- variable(dim = 2)
  rate <- exp(log_rate)
  w <- matrix(c(0.9, 0.1, 0.6, 0.4, 0.2, 0.8, 0.1, 0.9, 0.5, 0.5), 2, 5)
  distribution(y) <- mixture(poisson(rate[1], dim = 5), poisson(rate[2], dim = 5),
                             weights = w)
  m <- model(log_rate)
  expect_density_matches(m, function(z) {
    v <- values_at(m, z)
    lp <- cbind(dpois(y, exp(v$log_rate[1]), log = TRUE),
                dpois(y, exp(v$log_rate[2]), log = TRUE))
    sum(log(rowSums(exp(lp) * t(w))))
  }, tolerance = 1e-8)
  expect_gradient_matches(m)
})

test_that("a matrix mixture with weights per component and element (greta's example)", {
  # weights of dimension c(K, dim): weights[k, i, j] for element (i, j)
  set.seed(75)
  y <- matrix(rnorm(6, 0, 2), 2, 3)
  w <- array(runif(12, 0.1, 1), c(2, 2, 3))
  mu <- variable(dim = 2)
  distribution(y) <- mixture(normal(mu[1], 1, dim = c(2, 3)), normal(mu[2], 1, dim = c(2, 3)),
                             weights = w)
  m <- model(mu)
  expect_density_matches(m, function(z) {
    total <- w[1, , ] + w[2, , ]
    sum(log(w[1, , ] / total * dnorm(y, z[1], 1) + w[2, , ] / total * dnorm(y, z[2], 1)))
  }, tolerance = 1e-8)
  expect_gradient_matches(m)
  # greta's own example: a variable's prior, weights a 2 x 5 x 4 variable
  weights <- uniform(0, 1, dim = c(2, 5, 4))
  b <- mixture(normal(1, 1, dim = c(5, 4)), normal(-1, 1, dim = c(5, 4)), weights = weights)
  expect_equal(dim(b), c(5L, 4L))
  expect_gradient_matches(model(b))
  expect_error(mixture(normal(0, 1, dim = c(5, 4)), normal(0, 1, dim = c(5, 4)),
                       weights = array(1, c(2, 4, 5))),
               "or one per component and element, an array of dimension 2 x 5 x 4")
})

test_that("a mixture as a variable's prior, with a simplex of weights", {
  w <- simplex_variable(2)
  x <- mixture(normal(-2, 0.5), normal(2, 0.5), weights = w, dim = 3)
  expect_equal(dim(x), c(3L, 1L))
  expect_output(print(x), "variable")
  expect_output(str(x), "variable num \\[1:3, 1\\]")
  m <- model(x, w)
  expect_gradient_matches(m)
  # with fixed weights, against R (x is unconstrained: no Jacobian)
  x2 <- mixture(normal(-2, 0.5), normal(2, 0.5), weights = c(0.3, 0.7))
  m2 <- model(x2)
  expect_density_matches(m2, function(z) {
    ref_log_mix(cbind(dnorm(z, -2, 0.5, log = TRUE), dnorm(z, 2, 0.5, log = TRUE)), c(0.3, 0.7))
  }, tolerance = 1e-8)
  # far in the tails, where both densities underflow, it stays finite and exact
  far <- matrix(c(-60, 70), 2, 1)
  got <- engine_density(m2, far, gradient = TRUE)
  want <- vapply(far, function(v) {
    lp <- c(log(0.3) + dnorm(v, -2, 0.5, log = TRUE), log(0.7) + dnorm(v, 2, 0.5, log = TRUE))
    max(lp) + log(sum(exp(lp - max(lp))))
  }, numeric(1))
  expect_equal(got$log_density, want, tolerance = 1e-10)
  expect_true(all(is.finite(got$gradient)))
})

test_that("mcmc() on a mixture of two normals recovers the weights and means", {
  set.seed(20)
  n <- 150
  from_first <- runif(n) < 0.3
  y <- ifelse(from_first, rnorm(n, -2, 1), rnorm(n, 3, 1))
  # priors that tell the components apart, and chains started on their side
  # of the posterior: a mixture's posterior also has a mode with the labels
  # swapped (25 log units lower here), in which a chain started at random may
  # stay
  mu1 <- normal(-2, 1)
  mu2 <- normal(3, 1)
  w <- simplex_variable(2)
  distribution(y) <- mixture(normal(mu1, 1), normal(mu2, 1), weights = w)
  # (mcmc() itself: initials() are found in the caller's frame)
  draws <- mcmc(model(mu1, mu2, w), n_samples = 400, warmup = 300, chains = 2,
                initial_values = initials(mu1 = -1, mu2 = 2), verbose = FALSE)
  est <- colMeans(as.matrix(draws))
  # posterior means within a few posterior sds of the values the data were drawn with
  expect_lt(abs(est[["w[1,1]"]] - 0.3), 0.1)
  expect_lt(abs(est[["mu1"]] - (-2)), 0.4)
  expect_lt(abs(est[["mu2"]] - 3), 0.3)
  # and of the sample's own proportion
  expect_lt(abs(est[["w[1,1]"]] - mean(from_first)), 0.06)
})

test_that("joint() on a matrix of data: one family per column, against R", {
  y <- cbind(c(1.2, 2.5, 0.4, 1.9), c(0.3, 0.8, 0.5, 0.1))
  mu <- variable()
  log_a <- variable()
  distribution(y) <- joint(normal(mu, 1.3), beta(exp(log_a), 2), dim = 4)
  m <- model(mu, log_a)
  expect_density_matches(m, function(z) {
    v <- values_at(m, z)
    sum(dnorm(y[, 1], v$mu, 1.3, log = TRUE)) + sum(dbeta(y[, 2], exp(v$log_a), 2, log = TRUE))
  }, tolerance = 1e-8)
  expect_gradient_matches(m)
  # counts: discrete components on data
  counts <- cbind(c(0, 4, 2), c(3, 7, 10))
  lr <- variable()
  distribution(counts) <- joint(poisson(exp(lr)), binomial(10, 0.6), dim = 3)
  m2 <- model(lr)
  expect_density_matches(m2, function(z) {
    sum(dpois(counts[, 1], exp(z), log = TRUE)) + sum(dbinom(counts[, 2], 10, 0.6, log = TRUE))
  }, tolerance = 1e-8)
})

test_that("joint() as a variable: each column bounded by its component, truncation kept", {
  x <- joint(normal(0, 1), exponential(2), normal(1, 2, truncation = c(0, 3)), dim = 2)
  expect_equal(dim(x), c(2L, 3L))
  expect_output(print(x), "variable")
  m <- model(x)
  expect_density_matches(m, function(z) {
    v <- matrix(values_at(m, z)$x, 2, 3)
    zs <- matrix(z, 2, 3)  # the free state, column by column
    tn <- dnorm(v[, 3], 1, 2, log = TRUE) - log(pnorm(3, 1, 2) - pnorm(0, 1, 2))
    sum(dnorm(v[, 1], log = TRUE)) + sum(dexp(v[, 2], 2, log = TRUE)) + sum(tn) +
      sum(zs[, 2]) + sum(constrain(zs[, 3], 0, 3)$log_jacobian)
  }, tolerance = 1e-8)
  expect_gradient_matches(m)
  expect_true(all(matrix(values_at(m, rnorm(6, sd = 3))$x, 2)[, 2:3] > 0))
})

test_that("log_lik() gives a column per element of a mixture and per row of a joint", {
  set.seed(3)
  y <- c(-1.5, 0.2, 2.8)
  counts <- cbind(c(1, 5), c(2, 0))
  mu <- normal(0, 2)
  lam <- gamma(2, 1)
  distribution(y) <- mixture(normal(mu, 1), normal(2, 1), weights = c(0.4, 0.6))
  distribution(counts) <- joint(poisson(lam), poisson(1.5), dim = 2)
  draws <- sample_quietly(model(mu, lam), n_samples = 20, warmup = 20, chains = 2)
  ll <- log_lik(draws)
  expect_equal(dim(ll), c(40L, 3L + 2L))
  p <- as.matrix(draws)
  want_mix <- t(vapply(p[, "mu"], function(m) {
    ref_log_mix(cbind(dnorm(y, m, 1, log = TRUE), dnorm(y, 2, 1, log = TRUE)), c(0.4, 0.6))
  }, numeric(3)))
  want_joint <- t(vapply(p[, "lam"], function(l) {
    dpois(counts[, 1], l, log = TRUE) + dpois(counts[, 2], 1.5, log = TRUE)
  }, numeric(2)))
  expect_equal(unname(ll), unname(cbind(want_mix, want_joint)), tolerance = 1e-8)
})

test_that("calculate(nsim =) draws a mixture and a joint as R does", {
  set.seed(11)
  x <- mixture(normal(-2, 0.5), normal(3, 1), weights = c(0.3, 0.7), dim = 2)
  sims <- calculate(x, nsim = 3000)$x
  expect_equal(dim(sims), c(3000L, 2L, 1L))
  r_draws <- ifelse(runif(6000) < 0.3, rnorm(6000, -2, 0.5), rnorm(6000, 3, 1))
  expect_gt(suppressWarnings(ks.test(as.vector(sims), r_draws))$p.value, 1e-3)
  # a discrete mixture on data: mean 6, variance 6 + 16
  y <- as_data(c(1, 4, 7))
  distribution(y) <- mixture(poisson(2), poisson(10), weights = c(1, 1))
  ys <- calculate(y, nsim = 3000)$y
  expect_true(all(ys == round(ys)))
  expect_mc_mean(matrix(ys, ncol = 1), 6, sqrt(22))
  expect_lt(abs(var(as.vector(ys)) / 22 - 1), 0.1)
  # joint: each column from its component, the truncation honoured
  j <- joint(normal(5, 2), gamma(3, 2, truncation = c(0, 1)), dim = 2)
  js <- calculate(j, nsim = 2000)$j
  expect_equal(dim(js), c(2000L, 2L, 2L))
  expect_mc_mean(matrix(js[, , 1], ncol = 1), 5, 2)
  expect_true(all(js[, , 2] > 0 & js[, , 2] < 1))
  r_trunc <- qgamma(runif(4000, 0, pgamma(1, 3, 2)), 3, 2)
  expect_gt(suppressWarnings(ks.test(as.vector(js[, , 2]), r_trunc))$p.value, 1e-3)
})

test_that("mixture() and joint() name what is wrong with their arguments", {
  expect_error(mixture(1, normal(0, 1), weights = c(1, 1)),
               "argument 1 of mixture\\(\\) must be a distribution")
  expect_error(mixture(normal(0, 1), weights = 1), "at least two distributions")
  expect_error(mixture(normal(0, 1), normal(0, 1)), "needs `weights`")
  expect_error(mixture(normal(0, 1, dim = 2), normal(0, 1, dim = 3), weights = c(1, 1)),
               "must have the same dimensions.*2 x 1 \\(argument 1\\), 3 x 1 \\(argument 2\\)")
  expect_error(mixture(normal(0, 1), normal(0, 1), weights = c(1, 1, 1)),
               "`weights` of mixture\\(\\) must have one weight per component \\(2\\)")
  expect_error(mixture(normal(0, 1), normal(0, 1), weights = c(1, -1)),
               "`weights` of mixture\\(\\) must be positive")
  expect_error(mixture(normal(0, 1), poisson(3), weights = c(1, 1)),
               "combination of discrete \\(argument 2\\) and continuous \\(argument 1\\)")
  expect_error(mixture(normal(0, 1), exponential(1), weights = c(1, 1)),
               "must have the same support")
  # (mixtures of multivariate distributions are test_greta_scripts.R's)
  expect_error(mixture(multivariate_normal(t(c(0, 0)), diag(2)), normal(0, 1),
                       weights = c(1, 1)), "argument 2 of mixture\\(\\) is not a multivariate")
  expect_error(mixture(wishart(3, diag(2)), wishart(3, diag(2)), weights = c(1, 1)),
               "argument 1 of mixture\\(\\) is a wishart\\(\\) distribution")
  # a component already used
  a <- normal(0, 1)
  b <- normal(1, 1)
  mix <- mixture(a, b, weights = c(1, 1))
  expect_error(mixture(a, normal(2, 1), weights = c(1, 1)), "argument 1 .* already been used")
  # a failed call leaves its arguments usable
  c1 <- normal(0, 1)
  expect_error(mixture(c1, normal(0, 1), weights = c(1, 2, 3)), "`weights`")
  expect_silent(mixture(c1, normal(0, 1), weights = c(1, 2)))
  # discrete components only on data
  pm <- mixture(poisson(2), poisson(5), weights = c(1, 1))
  expect_error(model(pm), "discrete variable \\(mixture\\(\\)\\)")
  expect_error(model(joint(poisson(2), poisson(5))), "discrete variable \\(joint\\(\\)\\)")
  expect_error(joint(normal(0, 1), poisson(3)), "combination of discrete")
  expect_error(joint(normal(0, 1, dim = 2), normal(0, 1)),
               "joint\\(\\) only accepts distributions over scalars, but argument 1")
  expect_error(joint(normal(0, 1), normal(0, 1), dim = c(2, 2)), "`dim` of joint\\(\\)")
  expect_error(joint(normal(0, 1)), "at least two distributions")
  y <- matrix(1, 3, 2)
  expect_error(distribution(y) <- joint(normal(0, 1), normal(0, 1), dim = 2),
               "set its `dim` to the number of rows")
  counts <- c(1, 2.5)
  expect_error(distribution(counts) <- mixture(poisson(1), poisson(2), weights = c(1, 1)),
               "whole numbers")
})

test_that("a mixture on three-dimensional data: no warning, and its density against R", {
  set.seed(95)
  yv <- array(rnorm(24), c(2, 3, 4))
  y <- as_data(yv)
  mu <- normal(0, 1)
  expect_silent(distribution(y) <- mixture(normal(mu, 1, dim = c(2, 3, 4)),
                                           normal(1, 2, dim = c(2, 3, 4)),
                                           weights = c(0.5, 0.5)))
  m <- model(mu)
  free <- matrix(c(0.3, -1), ncol = 1)
  want <- vapply(free, function(mu) {
    sum(log(0.5 * dnorm(yv, mu, 1) + 0.5 * dnorm(yv, 1, 2))) + dnorm(mu, 0, 1, log = TRUE)
  }, 0)
  expect_equal(model_log_density(m, free, gradient = FALSE)$log_density, want,
               tolerance = 1e-10)
})
