# log_lik(), calculate(nsim =) and simulate() for the multivariate
# distributions (R/multivariate_families.R): log_lik() columns against direct
# reference densities at the draws (mvtnorm::dmvnorm, a Dirichlet density
# written with lgamma, dmultinom, extraDistr::ddirmnom), and simulations
# against exact moments within Monte Carlo error.

S2 <- matrix(c(1, 0.5, 0.5, 2), 2, 2)

test_that("log_lik() gives a column per realisation of multivariate likelihoods", {
  skip_if_not_installed("mvtnorm")
  skip_if_not_installed("extraDistr")
  set.seed(11)
  xv <- matrix(c(0.3, -0.2, 1.1, 0.5, 0.9, 2.2), 3, 2)
  heights <- c(0.4, 1.0)
  classes <- diag(3)[c(1, 3, 3, 2), ]
  countsv <- rbind(c(3, 5, 2), c(1, 1, 8))
  fracs <- rbind(c(0.2, 0.3, 0.5), c(0.6, 0.1, 0.3))
  dmcounts <- rbind(c(1, 8, 1), c(6, 2, 2))
  mu <- normal(0, 2, dim = c(1, 2))
  sigma <- exponential(1)
  p <- dirichlet(t(c(1, 2, 3)))
  a <- exponential(1, dim = c(1, 3))
  # declared: heights (univariate), x, classes, counts, fracs, dmcounts
  distribution(heights) <- normal(mu[1, 1], sigma)
  x <- as_data(xv)
  distribution(x) <- multivariate_normal(mu, S2 * sigma, n_realisations = 3)
  distribution(classes) <- categorical(p, n_realisations = 4)
  distribution(countsv) <- multinomial(10, p, n_realisations = 2)
  distribution(fracs) <- dirichlet(a, n_realisations = 2)
  distribution(dmcounts) <- dirichlet_multinomial(10, a, n_realisations = 2)
  m <- model(mu, sigma, p, a)
  draws <- sample_quietly(m, n_samples = 20, warmup = 50, chains = 2)
  ll <- log_lik(draws, trace_batch_size = 7)
  expect_equal(dim(ll), c(40L, 2L + 3L + 4L + 2L + 2L + 2L))
  d <- as.matrix(draws)
  expected <- t(apply(d, 1, function(th) {
    muv <- th[c("mu[1,1]", "mu[1,2]")]
    pv <- th[c("p[1,1]", "p[1,2]", "p[1,3]")]
    av <- th[c("a[1,1]", "a[1,2]", "a[1,3]")]
    c(dnorm(heights, muv[1], th[["sigma"]], log = TRUE),
      mvtnorm::dmvnorm(xv, muv, S2 * th[["sigma"]], log = TRUE),
      log(pv[max.col(classes)] / sum(pv)),
      apply(countsv, 1, dmultinom, prob = pv, log = TRUE),
      apply(fracs, 1, function(f) {
        lgamma(sum(av)) - sum(lgamma(av)) + sum((av - 1) * log(f))
      }),
      extraDistr::ddirmnom(dmcounts, 10, av, log = TRUE))
  }))
  expect_equal(unname(ll), unname(expected), tolerance = 1e-8)
  arr <- log_lik(draws, merge_chains = FALSE)
  expect_equal(dim(arr), c(20L, 2L, 15L))
  expect_equal(arr[, 2, ], ll[21:40, ])
  expect_true(all(is.finite(ll)))
})

test_that("calculate(nsim =) draws multivariate_normal() with its mean and covariance", {
  mean <- t(c(1, -2))
  x <- multivariate_normal(mean, S2, n_realisations = 3)
  sims <- calculate(x, nsim = 4000, seed = 3)$x
  expect_equal(dim(sims), c(4000L, 3L, 2L))
  for (i in 1:3) {
    r <- sims[, i, ]
    expect_mc_mean(r, c(1, -2), sqrt(diag(S2)))
    expect_lt(max(abs(cov(r) - S2)), 0.15)
  }
  expect_lt(abs(cor(sims[, 1, 1], sims[, 2, 1])), 0.08)
  # a mean that is itself drawn: x | m ~ MVN(m, S2), m ~ N(0, 1)
  m <- normal(0, 1, dim = c(1, 2))
  z <- multivariate_normal(m, S2)
  both <- calculate(z, m, nsim = 4000, seed = 4)
  zz <- matrix(both$z, 4000, 2)
  expect_lt(max(abs(cov(zz) - (S2 + diag(2)))), 0.2)
  expect_lt(max(abs(cov(zz - matrix(both$m, 4000, 2)) - S2)), 0.15)
})

test_that("dirichlet() draws have the exact means, and are simplexes", {
  alpha <- c(1, 2, 5)
  p <- dirichlet(t(alpha), n_realisations = 2)
  sims <- calculate(p, nsim = 4000, seed = 5)$p
  expect_equal(dim(sims), c(4000L, 2L, 3L))
  expect_equal(apply(sims, 1:2, sum), matrix(1, 4000, 2), tolerance = 1e-10)
  A <- sum(alpha)
  exact <- alpha / A
  sds <- sqrt(exact * (1 - exact) / (A + 1))
  expect_mc_mean(sims[, 1, ], exact, sds)
  expect_mc_mean(sims[, 2, ], exact, sds)
})

test_that("simulate() draws discrete multivariate data and their parameters", {
  probs <- c(0.2, 0.3, 0.5)
  cls <- as_data(diag(3)[c(1, 2, 3, 3, 1), ])
  counts <- as_data(rbind(c(3, 5, 2), c(1, 1, 8)))
  # prob drawn from a Dirichlet with mean probs (the data must connect to
  # the model's variables to be part of it)
  p <- dirichlet(t(10 * probs))
  distribution(cls) <- categorical(p, n_realisations = 5)
  distribution(counts) <- multinomial(10, p, n_realisations = 2)
  m <- model(p)
  sims <- simulate(m, nsim = 3000, seed = 6)
  expect_equal(dim(sims$cls), c(3000L, 5L, 3L))
  expect_equal(dim(sims$counts), c(3000L, 2L, 3L))
  expect_true(all(apply(sims$cls, 1:2, sum) == 1))
  expect_true(all(sims$cls %in% c(0, 1)))
  expect_true(all(apply(sims$counts, 1:2, sum) == 10))
  # (rows share p: the Monte Carlo error is inflated accordingly)
  expect_mc_mean(matrix(sims$cls, ncol = 3), probs, 3 * sqrt(probs * (1 - probs)))
  expect_mc_mean(sims$counts[, 1, ], 10 * probs, 2 * sqrt(10 * probs * (1 - probs)))
  expect_mc_mean(matrix(sims$p, ncol = 3), probs, sqrt(probs * (1 - probs) / 11))
  # the seed repeats a simulation
  again <- simulate(m, nsim = 3000, seed = 6)
  expect_identical(again$cls, sims$cls)
  expect_identical(again$counts, sims$counts)
})

test_that("dirichlet_multinomial() and categorical() with drawn parameters", {
  alpha <- c(2, 1, 3)
  a <- t(alpha)
  # discrete: only as data; drawn by calculate() from a data greta array
  counts <- as_data(rbind(c(3, 3, 2), c(1, 1, 6)))
  distribution(counts) <- dirichlet_multinomial(8, a, n_realisations = 2)
  sims <- calculate(counts, nsim = 4000, seed = 7)$counts
  expect_equal(dim(sims), c(4000L, 2L, 3L))
  expect_true(all(apply(sims, 1:2, sum) == 8))
  A <- sum(alpha)
  pr <- alpha / A
  # variance of the Dirichlet-multinomial: size pr (1 - pr) (size + A) / (1 + A)
  expect_mc_mean(sims[, 2, ], 8 * pr, sqrt(8 * pr * (1 - pr) * (8 + A) / (1 + A)))
  # categorical with a Dirichlet-drawn prob: the marginal class frequencies
  # are alpha / sum(alpha)
  p <- dirichlet(a)
  cls <- as_data(diag(3)[c(1, 2, 3), ])
  distribution(cls) <- categorical(p, n_realisations = 3)
  both <- calculate(cls, p, nsim = 4000, seed = 8)
  expect_equal(dim(both$cls), c(4000L, 3L, 3L))
  expect_mc_mean(matrix(both$cls, ncol = 3), pr, sqrt(pr * (1 - pr)) * 2)
  expect_true(all(abs(apply(both$p, 1, sum) - 1) < 1e-10))
})

test_that("calculate(nsim =, values = draws) keeps multivariate posterior draws", {
  set.seed(12)
  counts <- as_data(rbind(c(3, 5, 2), c(4, 4, 2)))
  p <- dirichlet(t(c(1, 1, 1)))
  distribution(counts) <- multinomial(10, p, n_realisations = 2)
  draws <- sample_quietly(model(p), n_samples = 50, warmup = 50, chains = 1)
  sims <- calculate(p, counts, values = draws, nsim = 30, seed = 1)
  post <- as.matrix(draws)
  # each simulated p is one of the posterior draws
  pm <- matrix(sims$p, 30, 3)
  hit <- apply(pm, 1, function(r) any(apply(post, 1, function(q) max(abs(q - r)) < 1e-8)))
  expect_true(all(hit))
  expect_true(all(apply(sims$counts, 1:2, sum) == 10))
})
