# calculate(nsim =), simulate() and log_lik() for lkj_correlation() and
# wishart() (R/multivariate_families.R): draws against exact moments within
# Monte Carlo error, log_lik() columns against reference densities at the
# draws.

Sig <- matrix(c(2, 0.6, -0.3, 0.6, 1, 0.2, -0.3, 0.2, 1.5), 3, 3)

test_that("calculate(nsim =) draws wishart() with E[W] = df Sigma, Var[W11] = 2 df Sigma11^2", {
  df <- 5
  W <- wishart(df, Sig)
  nsim <- 4000
  sims <- calculate(W, nsim = nsim, seed = 21)$W
  expect_equal(dim(sims), c(nsim, 3L, 3L))
  flat <- matrix(sims, nsim, 9)
  # Var[W_ij] = df (Sigma_ij^2 + Sigma_ii Sigma_jj)
  sds <- sqrt(df * (as.vector(Sig)^2 + outer(diag(Sig), diag(Sig))))
  expect_mc_mean(flat, df * as.vector(Sig), sds)
  v11 <- var(flat[, 1])
  exact <- 2 * df * Sig[1, 1]^2
  # Var of the sample variance: (m4 - sigma^4) / n, m4 of W11 = sigma11^2 chi^2_df
  m4 <- Sig[1, 1]^4 * (12 * df * (df + 4))
  expect_lt(abs(v11 - exact) / sqrt((m4 - exact^2) / nsim), 5)
  for (s in 1:20) {
    expect_true(isSymmetric(sims[s, , ], tol = 1e-12))
    expect_false(inherits(try(chol(sims[s, , ]), silent = TRUE), "try-error"))
  }
  again <- calculate(W, nsim = nsim, seed = 21)$W
  expect_identical(again, sims)
  # K - 1 < df < K: the Bartlett decomposition, mean df Sigma
  sims2 <- matrix(calculate(wishart(2.5, Sig), nsim = nsim, seed = 22)[[1]], nsim, 9)
  sds2 <- sqrt(2.5 * (as.vector(Sig)^2 + outer(diag(Sig), diag(Sig))))
  expect_mc_mean(sims2, 2.5 * as.vector(Sig), sds2)
})

test_that("calculate(nsim =) draws lkj_correlation(): E[r] = 0, E[r^2] = 1 / (2 eta + K - 1)", {
  for (case in list(c(eta = 1, K = 2), c(eta = 2.5, K = 3), c(eta = 0.8, K = 4))) {
    eta <- case[["eta"]]
    K <- case[["K"]]
    Omega <- lkj_correlation(eta, dimension = K)
    nsim <- 4000
    sims <- calculate(Omega, nsim = nsim, seed = 31)$Omega
    expect_equal(dim(sims), c(nsim, K, K))
    off <- which(upper.tri(diag(K)))
    r <- matrix(sims, nsim, K * K)[, off, drop = FALSE]
    m2 <- 1 / (2 * eta + K - 1)
    # r = 2 B - 1 with B ~ Beta(a, a), a = eta - 1 + K / 2: E[r^4] = 3 / ((2a + 1)(2a + 3))
    a <- eta - 1 + K / 2
    m4 <- 3 / ((2 * a + 1) * (2 * a + 3))
    expect_mc_mean(r, rep(0, length(off)), sqrt(m2))
    expect_mc_mean(r^2, rep(m2, length(off)), sqrt(m4 - m2^2))
    for (s in 1:50) {
      x <- sims[s, , ]
      expect_true(isSymmetric(x, tol = 1e-12))
      expect_equal(diag(x), rep(1, K), tolerance = 1e-12)
      expect_true(all(eigen(x, symmetric = TRUE, only.values = TRUE)$values > 0))
    }
    expect_identical(calculate(Omega, nsim = nsim, seed = 31)$Omega, sims)
  }
})

test_that("simulate() draws matrix priors and the matrix data they are parameters of", {
  eta <- exponential(1) + 1
  Omega <- lkj_correlation(eta, dimension = 3)
  V <- as_data(diag(3))
  distribution(V) <- wishart(6, Omega)
  m <- model(eta, Omega)
  sims <- simulate(m, nsim = 2000, seed = 41)
  expect_equal(dim(sims$V), c(2000L, 3L, 3L))
  expect_equal(dim(sims$Omega), c(2000L, 3L, 3L))
  # E[V | Omega] = 6 Omega: the mean of V is 6 E[Omega] (unit diagonal)
  diagV <- cbind(sims$V[, 1, 1], sims$V[, 2, 2], sims$V[, 3, 3])
  expect_mc_mean(diagV, rep(6, 3), sqrt(2 * 6))
  expect_equal(sims$Omega[, 1, 1], rep(1, 2000), tolerance = 1e-12)
  expect_identical(simulate(m, nsim = 2000, seed = 41)$V, sims$V)
})

test_that("log_lik() gives one column per matrix of lkj_correlation() and wishart() data", {
  set.seed(51)
  R <- matrix(c(1, 0.3, -0.2, 0.3, 1, 0.4, -0.2, 0.4, 1), 3, 3)
  Wd <- matrix(c(3, 0.5, 0.5, 2), 2, 2)
  Wd2 <- matrix(c(1.5, -0.4, -0.4, 4), 2, 2)
  y <- c(0.2, -0.5)
  eta <- exponential(1)
  s <- exponential(1)
  mu <- normal(0, 1)
  # declared: R (LKJ), y (univariate), Wd, Wd2 (Wishart)
  distribution(R) <- lkj_correlation(eta, dimension = 3)
  distribution(y) <- normal(mu, s)
  distribution(Wd) <- wishart(4, s * diag(2))
  distribution(Wd2) <- wishart(eta + 2, matrix(c(1, 0.3, 0.3, 1), 2, 2))
  m <- model(eta, s, mu)
  draws <- sample_quietly(m, n_samples = 20, warmup = 50, chains = 2)
  ll <- log_lik(draws, trace_batch_size = 7)
  expect_equal(dim(ll), c(40L, 1L + 2L + 1L + 1L))
  d <- as.matrix(draws)
  expected <- t(apply(d, 1, function(th) {
    c(ref_dlkj(R, th[["eta"]]),
      dnorm(y, th[["mu"]], th[["s"]], log = TRUE),
      ref_dwishart(Wd, 4, th[["s"]] * diag(2)),
      ref_dwishart(Wd2, th[["eta"]] + 2, matrix(c(1, 0.3, 0.3, 1), 2, 2)))
  }))
  expect_equal(unname(ll), unname(expected), tolerance = 1e-8)
  # a row sums to the model's log likelihood at the draw
  arr <- log_lik(draws, merge_chains = FALSE)
  expect_equal(dim(arr), c(20L, 2L, 5L))
})

test_that("calculate(nsim =, values = draws) keeps posterior draws of a matrix prior", {
  set.seed(61)
  Omega <- lkj_correlation(2, dimension = 2)
  V <- as_data(matrix(c(2, 0.7, 0.7, 1), 2, 2))
  distribution(V) <- wishart(5, Omega)
  draws <- sample_quietly(model(Omega), n_samples = 20, warmup = 50, chains = 2)
  sims <- calculate(Omega, V, values = draws, nsim = 15, seed = 2)
  expect_equal(dim(sims$V), c(15L, 2L, 2L))
  d <- as.matrix(draws)
  # each simulated Omega is one of the posterior draws; V is a fresh matrix
  for (s in seq_len(15)) {
    expect_true(any(apply(d, 1, function(row) isTRUE(all.equal(unname(row), as.vector(sims$Omega[s, , ]))))))
    expect_true(isSymmetric(sims$V[s, , ], tol = 1e-12))
  }
})
