# Posteriors with exact answers, as greta's own suite checks its samplers: the
# Beta posterior of a binomial model, a bivariate normal, chi-squared(5), the
# standard uniform, and the marginals of LKJ and Wishart draws. Each runs the
# default sampler (nuts()) on 4 chains and compares draws thinned to roughly
# independent ones (independent_draws(), helper-lockstep.R) with the exact
# distribution by a Kolmogorov-Smirnov test. Each test fails about once in a
# thousand runs by chance at p < 0.001; the seeds make them repeat exactly.

ks_p <- function(draws, name, cdf, ...) {
  suppressWarnings(stats::ks.test(independent_draws(draws, name), cdf, ...))$p.value
}

test_that("a binomial model's success probability has its Beta posterior", {
  set.seed(1201)
  n <- 30
  y <- 11
  p <- beta(2, 3)
  distribution(y) <- binomial(n, p)
  draws <- sample_quietly(model(p), n_samples = 1000, warmup = 1000, chains = 4)
  expect_gt(ks_p(draws, "p", "pbeta", 2 + y, 3 + n - y), 0.001)
})

test_that("a bivariate normal's marginals are its normals", {
  set.seed(1202)
  mu <- c(1, -2)
  Sigma <- matrix(c(2, 1.2, 1.2, 1.5), 2, 2)
  x <- multivariate_normal(t(mu), Sigma)
  draws <- sample_quietly(model(x), n_samples = 1000, warmup = 1000, chains = 4)
  expect_equal(coda::varnames(draws), c("x[1,1]", "x[1,2]"))
  for (i in 1:2) {
    expect_gt(ks_p(draws, sprintf("x[1,%d]", i), "pnorm", mu[i], sqrt(Sigma[i, i])), 0.001)
  }
  # and their correlation is Sigma's (1.2 / sqrt(3), about 0.69)
  expect_equal(cor(as.matrix(draws))[1, 2], Sigma[1, 2] / sqrt(Sigma[1, 1] * Sigma[2, 2]),
               tolerance = 0.05)
})

test_that("chi_squared(5) is sampled as chi-squared with 5 degrees of freedom", {
  set.seed(1203)
  x <- chi_squared(5)
  draws <- sample_quietly(model(x), n_samples = 1000, warmup = 1000, chains = 4)
  expect_gt(ks_p(draws, "x", "pchisq", 5), 0.001)
})

test_that("uniform(0, 1) is sampled as the standard uniform", {
  set.seed(1204)
  x <- uniform(0, 1)
  draws <- sample_quietly(model(x), n_samples = 1000, warmup = 1000, chains = 4)
  expect_gt(ks_p(draws, "x", "punif"), 0.001)
})

test_that("lkj_correlation(eta, 3)'s correlations have their Beta marginals", {
  # each correlation of an LKJ(eta) matrix of dimension K is 2 B - 1 with B
  # ~ Beta(b, b), b = eta - 1 + K / 2
  set.seed(1205)
  eta <- 2
  K <- 3
  Omega <- lkj_correlation(eta, dimension = K)
  draws <- sample_quietly(model(Omega), n_samples = 1000, warmup = 1000, chains = 4)
  b <- eta - 1 + K / 2
  for (name in c("Omega[2,1]", "Omega[3,1]", "Omega[3,2]")) {
    expect_gt(ks_p(draws, name, function(r) stats::pbeta((r + 1) / 2, b, b)), 0.001)
  }
})

test_that("wishart(df, Sigma)'s diagonal has its scaled chi-squared marginals", {
  # W ~ Wishart(df, Sigma): W[i, i] / Sigma[i, i] ~ chi-squared(df)
  set.seed(1206)
  df <- 6
  Sigma <- matrix(c(2, 0.5, 0.5, 1), 2, 2)
  W <- wishart(df, Sigma)
  draws <- sample_quietly(model(W), n_samples = 1000, warmup = 1000, chains = 4)
  for (i in 1:2) {
    name <- sprintf("W[%d,%d]", i, i)
    expect_gt(ks_p(draws, name, function(w) stats::pchisq(w / Sigma[i, i], df)), 0.001)
  }
})
