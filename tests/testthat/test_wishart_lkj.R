# lkj_correlation() and wishart() (R/wishart_lkj.R): log densities on data
# against the densities written in R, priors against the same densities of the
# traced matrix plus the Jacobians, gradients against finite differences,
# sampling against exact moments, and errors naming the argument.

test_that("the LKJ normalising constant integrates the density", {
  for (eta in c(0.7, 1, 2.5)) {
    total <- integrate(function(r) (1 - r^2)^(eta - 1), -1, 1)$value
    expect_equal(ref_lkj_log_c(eta, 2), log(total), tolerance = 1e-7)
  }
  # the volume of the 3 x 3 correlation matrices is pi^2 / 2
  expect_equal(ref_lkj_log_c(1, 3), log(pi^2 / 2), tolerance = 1e-12)
})

test_that("lkj_correlation() data: log density against the LKJ density, gradient", {
  set.seed(1101)
  Rv <- cov2cor(crossprod(matrix(rnorm(30), 10, 3)))
  R <- as_data(Rv)
  eta <- variable(lower = 0)
  distribution(R) <- lkj_correlation(eta, dimension = 3)
  m <- model(eta)
  expect_density_matches(m, function(free) {
    ref_dlkj(Rv, exp(free)) + free  # eta = exp(free), log |J| = free
  }, chains = c(1, 3))
  expect_gradient_matches(m, chains = c(1, 3))
  # dimension 2
  R2v <- matrix(c(1, -0.4, -0.4, 1), 2, 2)
  R2 <- as_data(R2v)
  eta2 <- variable(lower = 0)
  distribution(R2) <- lkj_correlation(eta2)
  m2 <- model(eta2)
  expect_density_matches(m2, function(free) ref_dlkj(R2v, exp(free)) + free, chains = c(1, 3))
  expect_gradient_matches(m2, chains = c(1, 3))
})

test_that("lkj_correlation() prior: Stan's lkj_corr_cholesky on the factor, gradient", {
  set.seed(1102)
  for (K in 2:4) {
    eta <- 1.7
    Omega <- lkj_correlation(eta, dimension = K)
    expect_equal(dim(Omega), c(K, K))
    m <- model(Omega)
    expect_equal(m$n_free, K * (K - 1) / 2)
    free <- random_free(m, 3, sd = 0.7)
    # without the factor's own log |Jacobian| (free -> L, tested in
    # test_constrained.R) the density is the prior's term alone
    options <- lockstep:::check_compute_options(cpu_only())
    options$jacobian <- FALSE
    got <- lockstep:::ls_engine_log_density(lockstep:::model_engine(m), free, FALSE,
                                            options)$log_density
    values <- traced_values(m, free)
    want <- vapply(1:3, function(r) {
      Om <- matrix(values[r, ], K, K)
      L <- t(chol(Om))
      i <- 2:K
      # lkj_corr_cholesky, = the LKJ density of Omega plus log |J| of L -> Omega
      lcc <- sum((K - i + 2 * eta - 2) * log(diag(L)[i])) - ref_lkj_log_c(eta, K)
      expect_equal(lcc, ref_dlkj(Om, eta) + sum((K - i) * log(diag(L)[i])), tolerance = 1e-10)
      lcc
    }, numeric(1))
    expect_equal(got, want, tolerance = 1e-9)
    expect_gradient_matches(m, free = free)
    # a correlation matrix
    expect_near(values[, seq(1, K * K, by = K + 1)], 1, 1e-12)
  }
})

test_that("lkj_correlation() prior: sampling matches E[r^2] = 1 / (2 eta + K - 1)", {
  set.seed(1103)
  for (case in list(c(eta = 2, K = 2), c(eta = 1, K = 2), c(eta = 1.5, K = 3))) {
    Omega <- lkj_correlation(case[["eta"]], dimension = case[["K"]])
    draws <- as.matrix(sample_quietly(model(Omega), n_samples = 2000, warmup = 500,
                                      chains = 4))
    K <- case[["K"]]
    r <- draws[, which(lower.tri(diag(K)))]  # every correlation below the diagonal
    # each correlation is 2 Beta(b, b) - 1 with b = eta - 1 + K / 2 (for K = 3
    # this checks the Jacobian of L -> Omega in the prior's term)
    want <- 1 / (2 * case[["eta"]] + K - 1)
    expect_near(colMeans(as.matrix(r)^2), want, 0.03)
    expect_near(colMeans(as.matrix(r)), 0, 0.05)
  }
})

test_that("wishart() data: log density against the Wishart density, gradient", {
  set.seed(1104)
  Sigma <- matrix(c(2, 0.6, -0.4, 0.6, 1, 0.3, -0.4, 0.3, 1.5), 3, 3)
  Wv <- stats::rWishart(1, 6, Sigma)[, , 1]
  W <- as_data(Wv)
  df <- variable(lower = 2)
  s <- variable(lower = 0)
  distribution(W) <- wishart(df, s * Sigma)
  m <- model(df, s)
  expect_density_matches(m, function(free) {
    dfv <- 2 + exp(free[1])
    sv <- exp(free[2])
    ref_dwishart(Wv, dfv, sv * Sigma) + sum(free)
  }, chains = c(1, 3))
  expect_gradient_matches(m, chains = c(1, 3))
  # a scale matrix from a Cholesky factor variable
  W2 <- as_data(Wv)
  U <- cholesky_variable(3)
  distribution(W2) <- wishart(7, t(U) %*% U)
  m2 <- model(U)
  expect_density_matches(m2, function(free) {
    Uv <- matrix(traced_values(m2, t(free)), 3, 3)
    ref_dwishart(Wv, 7, t(Uv) %*% Uv) + sum(log(diag(Uv)))
  }, chains = c(1, 3), sd = 0.5)
  expect_gradient_matches(m2, chains = c(1, 3), sd = 0.5)
})

test_that("wishart() prior: the Wishart density of W plus the Jacobians, gradient, E[W]", {
  set.seed(1105)
  Sigma <- matrix(c(1.5, 0.5, 0.5, 1), 2, 2)
  for (K in 2:3) {
    S <- if (K == 2) Sigma else diag(c(1, 2, 0.5))
    W <- wishart(K + 3, S)
    expect_equal(dim(W), c(K, K))
    m <- model(W)
    expect_equal(m$n_free, K * (K + 1) / 2)
    free <- random_free(m, 3, sd = 0.5)
    values <- traced_values(m, free)
    want <- vapply(1:3, function(r) {
      Wr <- matrix(values[r, ], K, K)
      U <- chol(Wr)
      # Wishart of W, log |J| of U -> W, and of the free state -> U (log diagonal)
      ref_dwishart(Wr, K + 3, S) + K * log(2) + sum((K - seq_len(K) + 1) * log(diag(U))) +
        sum(log(diag(U)))
    }, numeric(1))
    got <- engine_density(m, free, gradient = FALSE)$log_density
    expect_equal(got, want, tolerance = 1e-9)
    expect_gradient_matches(m, free = free)
  }
  # sampling: E[W] = df Sigma, Var[W_ij] = df (Sigma_ij^2 + Sigma_ii Sigma_jj)
  df <- 6
  W <- wishart(df, Sigma)
  draws <- as.matrix(sample_quietly(model(W), n_samples = 2000, warmup = 500, chains = 4))
  expect_near(colMeans(draws), df * Sigma, 0.6)
  expect_near(var(draws[, 1]), df * 2 * Sigma[1, 1]^2, 0.35 * df * 2 * Sigma[1, 1]^2)
})

test_that("lkj_correlation() and wishart() errors name the argument", {
  expect_error(lkj_correlation(-1), "`eta`")
  expect_error(lkj_correlation(c(1, 2)), "`eta`")
  expect_error(lkj_correlation(1, dimension = 1), "`dimension`")
  expect_error(lkj_correlation(1, dimension = 2.5), "`dimension`")
  expect_error(wishart(3, matrix(1:6, 2, 3)), "`Sigma`")
  expect_error(wishart(3, matrix(c(1, 2, 2, 1), 2, 2)), "`Sigma`")
  expect_error(wishart(0.5, diag(2)), "`df`")
  expect_error(wishart(c(3, 4), diag(2)), "`df`")
  R <- as_data(matrix(c(1, 0.5, 0.4, 1), 2, 2))
  expect_error(distribution(R) <- lkj_correlation(2), "correlation matrix")
  R3 <- as_data(diag(3))
  expect_error(distribution(R3) <- lkj_correlation(2), "dimension")
  V <- as_data(matrix(c(1, 2, 2, 1), 2, 2))
  expect_error(distribution(V) <- wishart(3, diag(2)), "positive definite")
})
