# calculate(nsim =), simulate() and log_lik(): draws against the exact
# distributions (KS tests for continuous families, chi-square tests for
# discrete ones), written here from R's p* and d* functions; seeds are fixed,
# so each test gives the same draws every run.

# KS test p-value of draws x against the distribution function cdf.
ks_p <- function(x, cdf) suppressWarnings(stats::ks.test(as.numeric(x), cdf)$p.value)

# Chi-square test p-value of counts x against the mass function pmf over
# 0..max, the values above max pooled into one bin (max chosen so that every
# bin expects at least 5 counts).
chisq_p <- function(x, pmf, max) {
  x <- as.numeric(x)
  expect_true(all(x == round(x) & x >= 0))
  p <- pmf(0:max)
  p <- c(p, max(0, 1 - sum(p)))
  observed <- c(tabulate(x + 1, nbins = max + 1), sum(x > max))
  keep <- p > 0
  expect_true(all(observed[!keep] == 0))
  expect_true(all(length(x) * p[keep] >= 5))
  stats::chisq.test(observed[keep], p = p[keep] / sum(p[keep]))$p.value
}

test_that("calculate(nsim =) draws each continuous family from its distribution", {
  n <- 2000
  cases <- list(
    list(normal(-1, 2), function(q) pnorm(q, -1, 2)),
    list(cauchy(1, 0.5), function(q) pcauchy(q, 1, 0.5)),
    list(student(4, 1, 2), function(q) pt((q - 1) / 2, 4)),
    list(exponential(3), function(q) pexp(q, 3)),
    list(uniform(-2, 5), function(q) punif(q, -2, 5)),
    list(lognormal(0.5, 0.7), function(q) plnorm(q, 0.5, 0.7)),
    list(gamma(2.5, 1.5), function(q) pgamma(q, 2.5, 1.5)),
    list(inverse_gamma(3, 2), function(q) pgamma(1 / q, 3, 2, lower.tail = FALSE)),
    list(weibull(1.5, 2), function(q) pweibull(q, 1.5, 2)),
    list(pareto(3, 2), function(q) ifelse(q < 2, 0, 1 - (2 / q)^3)),
    list(laplace(1, 2), function(q) ifelse(q < 1, exp((q - 1) / 2) / 2, 1 - exp(-(q - 1) / 2) / 2)),
    list(beta(2, 5), function(q) pbeta(q, 2, 5)),
    list(chi_squared(3), function(q) pchisq(q, 3)),
    list(logistic(1, 0.5), function(q) plogis(q, 1, 0.5)),
    list(f(4, 7), function(q) pf(q, 4, 7))
  )
  for (k in seq_along(cases)) {
    x <- cases[[k]][[1]]
    sims <- calculate(x, nsim = n, seed = 300 + k)
    expect_equal(dim(sims$x), c(n, 1L, 1L))
    expect_gt(ks_p(sims$x, cases[[k]][[2]]), 0.001)
    # and not every distribution fits: the test has power
    expect_lt(ks_p(sims$x + 0.5, cases[[k]][[2]]), 0.001)
  }
})

test_that("calculate(nsim =) draws vectors with per-element parameters", {
  means <- c(-10, 0, 10)
  sds <- c(1, 2, 0.5)
  x <- normal(means, sds)
  rate <- c(0.5, 2, 8)
  e <- exponential(rate)
  sims <- calculate(x, e, nsim = 2000, seed = 11)
  expect_equal(dim(sims$x), c(2000L, 3L, 1L))
  for (i in 1:3) {
    expect_gt(ks_p(sims$x[, i, 1], function(q) pnorm(q, means[i], sds[i])), 0.001)
    expect_gt(ks_p(sims$e[, i, 1], function(q) pexp(q, rate[i])), 0.001)
  }
  # elements of one draw are independent
  expect_lt(abs(cor(sims$x[, 1, 1], sims$x[, 2, 1])), 0.1)
  # a matrix keeps its dimensions after the draws'
  w <- gamma(2, 1, dim = c(2, 3))
  expect_equal(dim(calculate(w, nsim = 7, seed = 1)$w), c(7L, 2L, 3L))
})

test_that("truncated distributions are drawn within their truncation", {
  n <- 2000
  truncated_cdf <- function(cdf, lower, upper) {
    function(q) (cdf(pmin(pmax(q, lower), upper)) - cdf(lower)) / (cdf(upper) - cdf(lower))
  }
  a <- normal(1, 2, truncation = c(2, 3))
  sims <- calculate(a, nsim = n, seed = 21)$a
  expect_true(all(sims >= 2 & sims <= 3))
  expect_gt(ks_p(sims, truncated_cdf(function(q) pnorm(q, 1, 2), 2, 3)), 0.001)
  # far in the upper tail, where F(lower) is within 1e-9 of 1
  b <- normal(0, 1, truncation = c(6, Inf))
  sims <- calculate(b, nsim = n, seed = 22)$b
  expect_true(all(sims >= 6))
  expect_gt(ks_p(sims, function(q) 1 - pnorm(pmax(q, 6), lower.tail = FALSE) /
                   pnorm(6, lower.tail = FALSE)), 0.001)
  # half-Cauchy, truncated gamma, and an upper bound only
  h <- cauchy(0, 2, truncation = c(0, Inf))
  sims <- calculate(h, nsim = n, seed = 23)$h
  expect_true(all(sims >= 0))
  expect_gt(ks_p(sims, function(q) 2 * pcauchy(q, 0, 2) - 1), 0.001)
  g <- gamma(3, 2, truncation = c(0.5, 1))
  sims <- calculate(g, nsim = n, seed = 24)$g
  expect_true(all(sims >= 0.5 & sims <= 1))
  expect_gt(ks_p(sims, truncated_cdf(function(q) pgamma(q, 3, 2), 0.5, 1)), 0.001)
  u <- logistic(0, 1, truncation = c(-Inf, -1))
  sims <- calculate(u, nsim = n, seed = 25)$u
  expect_true(all(sims <= -1))
  expect_gt(ks_p(sims, function(q) plogis(pmin(q, -1)) / plogis(-1)), 0.001)
})

test_that("data with a distribution are simulated: discrete families by chi-square tests", {
  n <- 3000
  cases <- list(
    list(function() poisson(3), function(k) dpois(k, 3), 8),
    list(function() binomial(10, 0.3), function(k) dbinom(k, 10, 0.3), 6),
    list(function() negative_binomial(4, 0.4), function(k) dnbinom(k, 4, 0.4), 15),
    list(function() bernoulli(0.3), function(k) dbinom(k, 1, 0.3), 1),
    list(function() bernoulli(ilogit(as_data(0.8))), function(k) dbinom(k, 1, plogis(0.8)), 1),
    list(function() beta_binomial(8, 2, 3),
         function(k) choose(8, k) * base::beta(k + 2, 8 - k + 3) / base::beta(2, 3), 7),
    list(function() hypergeometric(6, 4, 5), function(k) dhyper(k, 6, 4, 5), 4)
  )
  for (k in seq_along(cases)) {
    y <- as_data(c(1, 1, 1, 1))
    distribution(y) <- cases[[k]][[1]]()
    sims <- calculate(y, nsim = n, seed = 200 + k)$y
    expect_equal(dim(sims), c(n, 4L, 1L))
    expect_gt(chisq_p(sims[, 2, 1], cases[[k]][[2]], cases[[k]][[3]]), 0.001)
    expect_gt(chisq_p(sims[, 4, 1], cases[[k]][[2]], cases[[k]][[3]]), 0.001)
  }
  # and the test has power: poisson(3.3) is not poisson(3)
  y <- as_data(1)
  distribution(y) <- poisson(3.3)
  expect_lt(chisq_p(calculate(y, nsim = n, seed = 1)$y, function(k) dpois(k, 3), 8), 0.001)
})

test_that("hierarchical models are drawn level by level", {
  n <- 4000
  mu <- normal(0, 1)
  y <- as_data(c(0.5, 2))
  distribution(y) <- normal(mu, 1)
  sims <- calculate(y, mu, nsim = n, seed = 31)
  # the marginal of each y is normal(0, sqrt(2)); y given mu is normal(mu, 1)
  expect_gt(ks_p(sims$y[, 1, 1], function(q) pnorm(q, 0, sqrt(2))), 0.001)
  expect_gt(ks_p(sims$y[, 2, 1], function(q) pnorm(q, 0, sqrt(2))), 0.001)
  expect_lt(ks_p(sims$y[, 1, 1], function(q) pnorm(q, 0, 1)), 0.001)
  residual <- sims$y[, 1, 1] - sims$mu[, 1, 1]
  expect_gt(ks_p(residual, pnorm), 0.001)
  expect_lt(abs(cor(residual, sims$mu[, 1, 1])), 0.05)
  # the two observations share mu: correlation 1/2
  expect_equal(cor(sims$y[, 1, 1], sims$y[, 2, 1]), 0.5, tolerance = 0.05)

  # three levels, through operations: tau ~ gamma, theta ~ normal(2 m + 1, 1 / sqrt(tau))
  m <- normal(0, 1)
  tau <- gamma(3, 3)
  theta <- normal(2 * m + 1, 1 / sqrt(tau), dim = 2)
  z <- as_data(c(0, 0))
  distribution(z) <- normal(theta, 0.1)
  sims <- calculate(z, theta, tau, m, nsim = n, seed = 32)
  expect_gt(ks_p(sims$tau, function(q) pgamma(q, 3, 3)), 0.001)
  standard <- (sims$theta[, 1, 1] - 2 * sims$m[, 1, 1] - 1) * sqrt(sims$tau[, 1, 1])
  expect_gt(ks_p(standard, pnorm), 0.001)
  expect_gt(ks_p((sims$z[, 2, 1] - sims$theta[, 2, 1]) / 0.1, pnorm), 0.001)
})

test_that("values given with nsim are held fixed", {
  n <- 2000
  mu <- normal(0, 1)
  sigma <- exponential(1)
  y <- as_data(c(1, 2, 3))
  distribution(y) <- normal(mu, sigma)
  sims <- calculate(y, mu, sigma, values = list(mu = 10), nsim = n, seed = 41)
  expect_true(all(sims$mu == 10))
  expect_gt(ks_p(sims$sigma, function(q) pexp(q, 1)), 0.001)
  expect_gt(ks_p((sims$y[, 3, 1] - 10) / sims$sigma[, 1, 1], pnorm), 0.001)
  both <- calculate(y, values = list(mu = -1, sigma = 2), nsim = n, seed = 42)
  expect_gt(ks_p(both$y[, 1, 1], function(q) pnorm(q, -1, 2)), 0.001)
  # an intermediate greta array given a value: what it is computed from is not drawn
  p <- variable()
  scale <- exp(p)
  w <- normal(0, scale)
  sims <- calculate(w, values = list(scale = 3), nsim = n, seed = 43)
  expect_gt(ks_p(sims$w, function(q) pnorm(q, 0, 3)), 0.001)
  # a fixed variable without a distribution, and a data-only target
  k <- variable(lower = 0)
  v <- normal(1, k)
  sims <- calculate(v, values = list(k = 0.5), nsim = n, seed = 44)
  expect_gt(ks_p(sims$v, function(q) pnorm(q, 1, 0.5)), 0.001)
  d <- as_data(matrix(1:4, 2)) * 2
  expect_equal(calculate(d, nsim = 3)$d, array(rep(c(2, 4, 6, 8), each = 3), c(3, 2, 2)))
})

test_that("seed and set.seed() make simulations repeat", {
  mu <- normal(0, 1)
  y <- as_data(c(1, 2))
  distribution(y) <- normal(mu, 1)
  one <- calculate(y, mu, nsim = 50, seed = 7)
  two <- calculate(y, mu, nsim = 50, seed = 7)
  expect_identical(one, two)
  expect_false(identical(one, calculate(y, mu, nsim = 50, seed = 8)))
  set.seed(5)
  a <- calculate(y, nsim = 50)
  set.seed(5)
  b <- calculate(y, nsim = 50)
  expect_identical(a, b)
  expect_false(identical(a, calculate(y, nsim = 50)))
  # `seed` leaves the caller's random number stream where it was
  set.seed(9)
  first <- runif(1)
  set.seed(9)
  calculate(y, nsim = 5, seed = 1)
  expect_identical(runif(1), first)
  # the draws do not depend on how many the engine computes at a time
  expect_identical(calculate(y, mu, nsim = 50, seed = 7, trace_batch_size = 3), one)
  expect_identical(calculate(y, mu, nsim = 50, seed = 7, trace_batch_size = 1000), one)
})

test_that("calculate(nsim =) explains what it cannot do", {
  x <- variable()
  b <- normal(x, 1)
  expect_error(calculate(b, nsim = 10), "do not have distributions so cannot be sampled")
  y <- as_data(c(1, 0))
  p <- variable(lower = 0, upper = 1)
  distribution(y) <- bernoulli(p)
  expect_error(calculate(y, nsim = 10), "do not have distributions")
  expect_equal(dim(calculate(y, values = list(p = 0.5), nsim = 10)$y), c(10L, 2L, 1L))
  for (bad in list(0, -1, 1.5, "a", c(1, 2), Inf, NA)) {
    expect_error(calculate(b, values = list(x = 1), nsim = bad), "`nsim` must be a positive whole")
  }
  expect_error(calculate(b, values = list(x = 1), nsim = 2, seed = "a"), "`seed` must be")
  expect_error(calculate(b, values = list(x = 1:3), nsim = 2), "has 3 elements")
})

test_that("calculate(nsim =, values = draws) simulates from the posterior", {
  set.seed(51)
  mu <- normal(0, 1)
  y <- as_data(c(0.3, -0.2, 0.5))
  distribution(y) <- normal(mu, 0.5)
  m <- model(mu)
  draws <- mcmc(m, n_samples = 300, warmup = 200, chains = 2, verbose = FALSE)
  posterior_mu <- as.matrix(draws)[, "mu"]
  sims <- calculate(y, mu, values = draws, nsim = 500, seed = 52)
  expect_equal(dim(sims$y), c(500L, 3L, 1L))
  expect_true(all(sims$mu %in% posterior_mu))
  expect_gt(ks_p((sims$y[, 2, 1] - sims$mu[, 1, 1]) / 0.5, pnorm), 0.001)
  # a new variable with a prior is drawn from it; more draws than the posterior has
  extra <- normal(mu, 1)
  expect_warning(more <- calculate(extra, values = draws, nsim = 700, seed = 53),
                 "with replacement")
  expect_equal(dim(more$extra), c(700L, 1L, 1L))
})

test_that("simulate() draws every named greta array of a model", {
  y <- as_data(c(0.3, -0.2, 0.5))
  mu <- normal(0, 1)
  sigma <- lognormal(0, 0.5)
  distribution(y) <- normal(mu, sigma)
  m <- model(mu, sigma)
  unrelated <- normal(5, 1)
  sims <- simulate(m, nsim = 1000, seed = 61)
  expect_equal(names(sims), c("mu", "sigma", "y"))
  expect_equal(dim(sims$y), c(1000L, 3L, 1L))
  expect_gt(ks_p(sims$sigma, function(q) plnorm(q, 0, 0.5)), 0.001)
  expect_gt(ks_p((sims$y[, 1, 1] - sims$mu[, 1, 1]) / sims$sigma[, 1, 1], pnorm), 0.001)
  expect_identical(simulate(m, nsim = 1000, seed = 61), sims)
  expect_equal(dim(simulate(m)$mu), c(1L, 1L, 1L))
  expect_error(simulate(m, nsim = 0), "`nsim` must be")
  # greta's older arguments are refused, not ignored (the draws would not be
  # conditioned on them)
  expect_error(simulate(m, nsim = 5, values = list(sigma = 3)),
               "does not take `values`.*calculate\\(")
  expect_error(simulate(m, 5, NULL, "double", 7), "does not take `\\(unnamed\\)`")
  # the response is simulated only when it is a greta array
  z <- c(1, 2)
  a <- normal(0, 1)
  distribution(z) <- normal(a, 1)
  expect_equal(names(simulate(model(a), nsim = 2)), "a")
  # a model with a variable that has no distribution cannot be simulated
  w <- as_data(c(1, 2))
  s <- variable(lower = 0)
  distribution(w) <- normal(0, s)
  expect_error(simulate(model(s)), "do not have distributions")
})

test_that("log_lik() gives each observation's log likelihood at each draw", {
  set.seed(71)
  mu <- normal(0, 1)
  sigma <- exponential(1)
  rate <- gamma(2, 2)
  counts <- c(2, 0, 3, 1)
  heights <- c(1.2, 0.4, 2.5)
  positive <- c(0.7, 1.9)
  # declared in this order: counts, then heights, then positive
  distribution(counts) <- poisson(rate * c(1, 2, 3, 4))
  distribution(heights) <- normal(mu, sigma)
  distribution(positive) <- normal(mu, sigma, truncation = c(0, Inf))
  m <- model(mu, sigma, rate)
  draws <- mcmc(m, n_samples = 60, warmup = 100, chains = 3, verbose = FALSE)
  ll <- log_lik(draws, trace_batch_size = 7)
  expect_equal(dim(ll), c(180L, 9L))
  d <- as.matrix(draws)
  expected <- t(apply(d, 1, function(th) {
    c(dpois(counts, th[["rate"]] * c(1, 2, 3, 4), log = TRUE),
      dnorm(heights, th[["mu"]], th[["sigma"]], log = TRUE),
      dnorm(positive, th[["mu"]], th[["sigma"]], log = TRUE) -
        pnorm(0, th[["mu"]], th[["sigma"]], lower.tail = FALSE, log.p = TRUE))
  }))
  expect_equal(unname(ll), unname(expected), tolerance = 1e-10)
  # iterations x chains x observations, for loo's array method
  arr <- log_lik(draws, merge_chains = FALSE)
  expect_equal(dim(arr), c(60L, 3L, 9L))
  for (chain in 1:3) {
    expect_equal(arr[, chain, ], ll[(chain - 1) * 60 + 1:60, ])
  }
  # the row sums are the engine's log density less the priors and the
  # Jacobians (sigma and rate are positive: x = exp(z), log |dx/dz| = z)
  free <- do.call(rbind, lapply(attr(draws, "model_info")$raw_draws, as.matrix))
  total <- lockstep:::model_log_density(m, free, gradient = FALSE)$log_density
  priors <- dnorm(d[, "mu"], 0, 1, log = TRUE) + dexp(d[, "sigma"], 1, log = TRUE) +
    dgamma(d[, "rate"], 2, 2, log = TRUE) + log(d[, "sigma"]) + log(d[, "rate"])
  expect_equal(rowSums(ll), unname(total - priors), tolerance = 1e-8)
})

test_that("log_lik() matches R's densities for other families, and explains its errors", {
  set.seed(72)
  eta <- normal(0, 1)
  p <- beta(2, 2)
  y1 <- c(1, 0, 1)
  y2 <- c(3, 7)
  y3 <- c(0.2, 0.9)
  distribution(y1) <- bernoulli(ilogit(eta * c(-1, 1, 2)))
  distribution(y2) <- binomial(10, p)
  distribution(y3) <- beta(p * 4, 2)
  draws <- mcmc(model(eta, p), n_samples = 30, warmup = 50, chains = 2, verbose = FALSE)
  d <- as.matrix(draws)
  expected <- t(apply(d, 1, function(th) {
    c(dbinom(y1, 1, plogis(th[["eta"]] * c(-1, 1, 2)), log = TRUE),
      dbinom(y2, 10, th[["p"]], log = TRUE),
      dbeta(y3, th[["p"]] * 4, 2, log = TRUE))
  }))
  expect_equal(unname(log_lik(draws)), unname(expected), tolerance = 1e-10)
  expect_error(log_lik(d), "greta_mcmc_list")
  expect_error(log_lik(draws, merge_chains = NA), "`merge_chains` must be TRUE or FALSE")
  expect_error(log_lik(draws, trace_batch_size = 0), "trace_batch_size")
  expect_error(lockstep:::r_family("wishart", "log_lik()"),
               "log_lik\\(\\) does not support the wishart\\(\\) distribution")
})

test_that("log_lik() needs a model with a likelihood, and simulation works in single precision", {
  set.seed(73)
  q <- normal(0, 1)
  draws <- mcmc(model(q), n_samples = 10, warmup = 10, chains = 2, verbose = FALSE)
  expect_error(log_lik(draws), "the model has no likelihood")
  y <- as_data(c(1, 2))
  distribution(y) <- normal(q, 2)
  double <- calculate(y, q, nsim = 20, seed = 3)
  single <- calculate(y, q, nsim = 20, seed = 3, precision = "single")
  expect_equal(single, double, tolerance = 1e-6)
})
