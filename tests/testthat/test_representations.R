# greta's representations: a distribution whose probability is ilogit(eta) or
# iprobit(eta), or whose Poisson rate is exp(eta), is computed on eta's scale;
# log(exp(x)) and exp(log(x)) are x; a covariance matrix chol2symm(U) is used
# through U. Each against R's own densities, with gradients against finite
# differences, finite where the probability form underflows, and with the
# same results as the plain form where that form is accurate.

ir_ops <- function(m) vapply(m$ir$nodes, function(node) node$op, "")
ir_families <- function(m) unlist(lapply(m$ir$nodes, function(node) node$family))
# The ops of the inputs of the IR's chol() nodes (what is factorised)
chol_inputs <- function(m) {
  nodes <- m$ir$nodes
  unlist(lapply(nodes[ir_ops(m) == "chol"], function(node) nodes[[node$inputs[1] + 1L]]$op))
}

# Relative tolerance 1e-8, as expect_equal() takes it (of the mean absolute
# difference relative to the mean absolute target).
tol <- 1e-8

test_that("bernoulli(iprobit(eta)) uses the probit form and matches dbinom(y, 1, pnorm(eta))", {
  set.seed(5101)
  n <- 15
  X <- cbind(1, rnorm(n))
  y <- rbinom(n, 1, 0.5)
  beta <- variable(dim = 2)
  distribution(y) <- bernoulli(iprobit(X %*% beta))
  m <- model(beta)
  expect_true("bernoulli_probit" %in% ir_families(m))
  expect_false("iprobit" %in% ir_ops(m))  # never computed
  expected <- function(z) sum(dbinom(y, 1, pnorm(X %*% z), log = TRUE))
  expect_density_matches(m, expected, tolerance = tol)
  expect_gradient_matches(m)
  # on the emulated backend (the CUDA code paths) too
  free <- random_free(m, 2)
  got <- engine_density(m, free, backend = "emulated")
  expect_equal(got$log_density, apply(free, 1, expected), tolerance = tol)
})

test_that("bernoulli(iprobit(eta)) stays finite at eta = +-40, where dbinom underflows", {
  y <- c(0, 1, 1, 0)
  eta <- variable(dim = 4)
  distribution(y) <- bernoulli(iprobit(eta))
  m <- model(eta)
  free <- rbind(c(40, -40, 40, -40), c(-40, 40, -40, 40), c(0.3, -1.2, 2, -0.5))
  # the naive form: log(1 - pnorm(40)) is log(0)
  expect_equal(dbinom(0, 1, pnorm(40), log = TRUE), -Inf)
  got <- engine_density(m, free)
  expect_true(all(is.finite(got$log_density)))
  expect_true(all(is.finite(got$gradient)))
  stable <- function(z) sum(pnorm(ifelse(y == 1, z, -z), log.p = TRUE))
  expect_equal(got$log_density, apply(free, 1, stable), tolerance = tol)
  expect_lt(got$log_density[1], -1600)  # two terms of log Phi(-40) = -804.6
  # d/deta: the Mills ratio, dnorm(eta) / pnorm(eta) for y = 1 (exp of logs, as
  # both underflow at -40), and its negation at -eta for y = 0
  mills <- function(z) exp(dnorm(z, log = TRUE) - pnorm(z, log.p = TRUE))
  want <- t(apply(free, 1, function(z) ifelse(y == 1, mills(z), -mills(-z))))
  expect_equal(got$gradient, want, tolerance = tol)
  expect_gradient_matches(m, free = free)
})

test_that("binomial(size, ilogit(eta)) and binomial(size, iprobit(eta)) match dbinom", {
  set.seed(5102)
  size <- c(5, 8, 3, 10, 6, 7)
  y <- c(2, 8, 0, 4, 6, 1)
  links <- list(logit = list(f = ilogit, cdf = plogis), probit = list(f = iprobit, cdf = pnorm))
  for (link in names(links)) {
    eta <- variable(dim = 6)
    distribution(y) <- binomial(size, links[[link]]$f(eta))
    m <- model(eta)
    expect_true(paste0("binomial_", link) %in% ir_families(m))
    expect_false(paste0("i", link) %in% ir_ops(m))
    cdf <- links[[link]]$cdf
    expect_density_matches(m, function(z) sum(dbinom(y, size, cdf(z), log = TRUE)),
                           tolerance = tol)
    expect_gradient_matches(m)
    # far in the tails the naive form is -Inf; the link form is finite and
    # agrees with lchoose + y log F(eta) + (size - y) log F(-eta)
    free <- rbind(c(40, -40, 40, -40, 40, -40), c(-40, 40, -40, 40, -40, 40))
    expect_true(any(is.infinite(dbinom(y, size, cdf(free[1, ]), log = TRUE))))
    got <- engine_density(m, free)
    expect_true(all(is.finite(got$log_density)))
    expect_true(all(is.finite(got$gradient)))
    stable <- function(z) sum(lchoose(size, y) + y * cdf(z, log.p = TRUE) +
                                (size - y) * cdf(-z, log.p = TRUE))
    expect_equal(got$log_density, apply(free, 1, stable), tolerance = tol)
    expect_gradient_matches(m, free = free)
  }
  # size as a variable: its partial (the lgamma extension, as binomial's)
  n <- variable(lower = 10)
  eta <- variable()
  distribution(y) <- binomial(n, iprobit(eta))
  m <- model(n, eta)
  expect_density_matches(m, function(z) {
    nv <- 10 + exp(z[1])
    sum(lgamma(nv + 1) - lgamma(y + 1) - lgamma(nv - y + 1) + y * pnorm(z[2], log.p = TRUE) +
          (nv - y) * pnorm(-z[2], log.p = TRUE)) + z[1]
  }, tolerance = tol)
  expect_gradient_matches(m)
})

test_that("poisson(exp(eta)) uses the log form and matches dpois(y, exp(eta))", {
  set.seed(5103)
  X <- cbind(1, rnorm(10))
  y <- rpois(10, 3)
  beta <- variable(dim = 2)
  distribution(y) <- poisson(exp(X %*% beta))
  m <- model(beta)
  expect_true("poisson_log" %in% ir_families(m))
  expect_false("exp" %in% ir_ops(m))
  expected <- function(z) sum(dpois(y, exp(X %*% z), log = TRUE))
  expect_density_matches(m, expected, tolerance = tol)
  expect_gradient_matches(m)
  # d/deta = y - exp(eta), through X
  free <- random_free(m, 3)
  want <- t(apply(free, 1, function(z) drop(crossprod(X, y - exp(X %*% z)))))
  expect_equal(engine_density(m, free)$gradient, want, tolerance = tol)
  # at eta = -800 exp(eta) underflows and dpois gives -Inf; the log form is
  # y eta - exp(eta) - lgamma(y + 1)
  counts <- c(3, 0, 1)
  eta <- variable(dim = 3)
  distribution(counts) <- poisson(exp(eta))
  m2 <- model(eta)
  free <- rbind(c(-800, -800, -800), c(1.2, -0.4, 0.7))
  expect_equal(sum(dpois(counts, exp(free[1, ]), log = TRUE)), -Inf)
  got <- engine_density(m2, free)
  expect_true(all(is.finite(got$log_density)))
  expect_equal(got$log_density[1], sum(counts * -800 - lgamma(counts + 1)), tolerance = tol)
  expect_equal(got$log_density[2], sum(dpois(counts, exp(free[2, ]), log = TRUE)), tolerance = tol)
  expect_equal(got$gradient, t(apply(free, 1, function(z) counts - exp(z))), tolerance = tol)
})

test_that("without the patterns the families and their results are unchanged", {
  set.seed(5104)
  y <- c(1, 0, 1, 1)
  eta <- variable(dim = 4)
  # 1 * ilogit(eta) is not ilogit(eta): the probability form, the same density
  distribution(y) <- bernoulli(1 * iprobit(eta))
  plain <- model(eta)
  expect_true("bernoulli" %in% ir_families(plain))
  expect_true("iprobit" %in% ir_ops(plain))
  eta2 <- variable(dim = 4)
  distribution(y) <- bernoulli(iprobit(eta2))
  linked <- model(eta2)
  free <- random_free(plain, 3)
  expect_equal(engine_density(plain, free)$log_density,
               engine_density(linked, free)$log_density, tolerance = 1e-12)
  expect_equal(engine_density(plain, free)$gradient,
               engine_density(linked, free)$gradient, tolerance = 1e-10)
  # poisson with a rate that is not exp() directly
  counts <- c(2, 0, 5, 1)
  x <- variable(dim = 4)
  distribution(counts) <- poisson(exp(x) * 1)
  plain <- model(x)
  expect_true("poisson" %in% ir_families(plain))
  x2 <- variable(dim = 4)
  distribution(counts) <- poisson(exp(x2))
  linked <- model(x2)
  expect_equal(engine_density(plain, free)$log_density,
               engine_density(linked, free)$log_density, tolerance = 1e-12)
  expect_density_matches(plain, function(z) sum(dpois(counts, exp(z), log = TRUE)),
                         tolerance = tol)
  # the engine's own (untransformed) families are still there for data
  p <- variable(lower = 0, upper = 1)
  distribution(y) <- binomial(1, p)
  expect_true("binomial" %in% ir_families(model(p)))
})

test_that("the link-scale forms keep their distribution's checks and messages", {
  eta <- variable(dim = 3)
  y <- c(0, 2, 1)
  expect_error(distribution(y) <- bernoulli(iprobit(eta)), "must be 0 or 1")
  y <- c(0, 6, 1)
  expect_error(distribution(y) <- binomial(5, ilogit(eta)), "must not exceed `size`")
  y <- c(0, 1.5, 1)
  expect_error(distribution(y) <- poisson(exp(eta)),
               "poisson\\(\\) distribution must be whole numbers")
  expect_error(model(poisson(exp(variable()))), "discrete variable")
  expect_error(binomial(3.5, ilogit(eta)), "`size` of binomial\\(\\) must be a non-negative whole")
})

test_that("log_lik() of the link-scale families matches R, far in the tails too", {
  set.seed(5104)
  a <- normal(0, 0.1)
  y1 <- c(0, 3, 5, 2)
  size <- c(4, 6, 5, 2)
  eta1 <- c(-40, 0.4, 40, 1.1)
  distribution(y1) <- binomial(size, iprobit(eta1 + a))
  eta2 <- c(-1, 0.4, 2, 1.1)
  y2 <- c(1, 3, 4, 0)
  distribution(y2) <- binomial(size, ilogit(eta2 + a))
  y3 <- c(0, 1)
  eta3 <- c(40, -40)
  distribution(y3) <- bernoulli(iprobit(eta3 + a))
  y4 <- c(3, 0)
  eta4 <- c(-800, 0.5)
  distribution(y4) <- poisson(exp(eta4 + a))
  draws <- sample_quietly(model(a), n_samples = 10, warmup = 10, chains = 2)
  ll <- log_lik(draws)
  expect_true(all(is.finite(ll)))
  for (i in seq_len(nrow(ll))) {
    s <- as.matrix(draws)[i, "a"]
    expected <- c(
      lchoose(size, y1) + y1 * pnorm(eta1 + s, log.p = TRUE) +
        (size - y1) * pnorm(-(eta1 + s), log.p = TRUE),
      dbinom(y2, size, plogis(eta2 + s), log = TRUE),
      pnorm(ifelse(y3 == 1, 1, -1) * (eta3 + s), log.p = TRUE),
      y4 * (eta4 + s) - exp(eta4 + s) - lgamma(y4 + 1)
    )
    expect_equal(unname(ll[i, ]), expected, tolerance = 1e-10)
  }
})

test_that("simulation of the link-scale families matches R", {
  set.seed(5105)
  draws <- lockstep:::draw_family("poisson_log", 20000, list(rep(log(4), 20000)))
  expect_mc_mean(matrix(draws), 4, 2)
  draws <- lockstep:::draw_family("binomial_probit", 20000, list(rep(10, 20000), rep(0.5, 20000)))
  expect_mc_mean(matrix(draws), 10 * pnorm(0.5), sqrt(10 * pnorm(0.5) * pnorm(-0.5)))
})

test_that("log(exp(x)) and exp(log(x)) are x, and other compositions are computed", {
  x <- variable(dim = 2)
  expect_identical(lockstep:::get_node(log(exp(x))), lockstep:::get_node(x))
  expect_identical(lockstep:::get_node(exp(log(x))), lockstep:::get_node(x))
  # log with a base: log(exp(x)) / log(base)
  z <- variable()
  out <- log(exp(z), base = 10)
  y <- c(1.5, 0.3)
  distribution(y) <- normal(out, 1)
  m <- model(z)
  expect_false("exp" %in% ir_ops(m))
  expect_density_matches(m, function(v) sum(dnorm(y, v / log(10), 1, log = TRUE)),
                         tolerance = tol)
  expect_gradient_matches(m)
  # log(exp(800)) is 800 (R's is Inf); the same density as with x itself
  w <- variable()
  y <- c(799, 801)
  distribution(y) <- normal(log(exp(w)), 2)
  m <- model(w)
  free <- matrix(c(800, -3, 0.2), 3, 1)
  got <- engine_density(m, free)
  expect_equal(got$log_density, vapply(free, function(v) sum(dnorm(c(799, 801), v, 2, log = TRUE)),
                                       numeric(1)), tolerance = tol)
  expect_true(all(is.finite(got$gradient)))
  # compositions that are not the pair are unchanged: log(1 + exp(x))
  v <- variable()
  y <- c(0.8, 1.9)
  distribution(y) <- normal(log(1 + exp(v)), 1)
  m <- model(v)
  expect_true(all(c("exp", "log") %in% ir_ops(m)))
  expect_density_matches(m, function(a) sum(dnorm(y, log1p(exp(a)), 1, log = TRUE)),
                         tolerance = tol)
  # on R numbers, R's own
  expect_equal(log(exp(800)), Inf)
})

# A 3 x 3 upper Cholesky factor variable's values and free-to-U log Jacobian
# (its log diagonal), from the engine's traced values.
factor_values <- function(m, free) matrix(traced_values(m, t(free)), 3, 3)

test_that("multivariate_normal(mean, chol2symm(U)) uses U directly and matches dmvnorm", {
  set.seed(5106)
  y <- matrix(rnorm(12), 4, 3)
  mu <- t(c(0.2, -0.1, 0.4))
  U <- cholesky_variable(3)
  distribution(y) <- multivariate_normal(mu, chol2symm(U), n_realisations = 4)
  m <- model(U)
  # Sigma is not factorised again (it is still computed: log_lik() reads the
  # parameters of a multivariate distribution of data)
  expect_false("chol" %in% ir_ops(m))
  expected <- function(free) {
    Uv <- factor_values(m, free)
    sum(mvtnorm::dmvnorm(y, drop(mu), t(Uv) %*% Uv, log = TRUE)) + sum(log(diag(Uv)))
  }
  expect_density_matches(m, expected, sd = 0.5, tolerance = tol)
  expect_gradient_matches(m, sd = 0.5)
  # the same density as through Sigma = t(U) %*% U and chol(), which the
  # model without the representation computes
  U2 <- cholesky_variable(3)
  distribution(y) <- multivariate_normal(mu, t(U2) %*% U2, n_realisations = 4)
  m2 <- model(U2)
  expect_true("chol" %in% ir_ops(m2))
  free <- random_free(m, 3, sd = 0.5)
  expect_equal(engine_density(m, free)$log_density, engine_density(m2, free)$log_density,
               tolerance = 1e-12)
  expect_equal(engine_density(m, free)$gradient, engine_density(m2, free)$gradient,
               tolerance = 1e-9)
  # a multivariate_normal() prior with Sigma = chol2symm(U) of data
  Uv <- chol(matrix(c(2, 0.5, 0.3, 0.5, 1, 0.2, 0.3, 0.2, 1.5), 3, 3))
  x <- multivariate_normal(mu, chol2symm(as_data(Uv)))
  m3 <- model(x)
  expect_false("chol" %in% ir_ops(m3))
  expect_density_matches(m3, function(z) mvtnorm::dmvnorm(z, drop(mu), t(Uv) %*% Uv, log = TRUE),
                         tolerance = tol)
})

test_that("chol2symm() of data that is not a Cholesky factor is factorised as before", {
  A <- matrix(c(1, 0.4, 0.2, 1.3), 2, 2)  # not triangular: t(A) %*% A is no chol(A)
  Sigma <- t(A) %*% A
  x <- multivariate_normal(t(c(0, 1)), chol2symm(as_data(A)))
  m <- model(x)
  expect_true("chol" %in% ir_ops(m))
  expect_density_matches(m, function(z) mvtnorm::dmvnorm(z, c(0, 1), Sigma, log = TRUE),
                         tolerance = tol)
})

test_that("wishart(df, chol2symm(U)) uses U directly and matches the Wishart density", {
  set.seed(5107)
  Wv <- rWishart(1, 6, diag(3))[, , 1]
  W <- as_data(Wv)
  U <- cholesky_variable(3)
  distribution(W) <- wishart(6, chol2symm(U))
  m <- model(U)
  # the data's own factor is chol(W), computed once; Sigma's is U
  expect_equal(chol_inputs(m), "data")
  expected <- function(free) {
    Uv <- factor_values(m, free)
    ref_dwishart(Wv, 6, t(Uv) %*% Uv) + sum(log(diag(Uv)))
  }
  expect_density_matches(m, expected, sd = 0.5, tolerance = tol)
  expect_gradient_matches(m, sd = 0.5)
  # a wishart() prior with a scale chol2symm(S) of data: no chol() at all
  S <- chol(matrix(c(1.5, 0.5, 0.5, 1), 2, 2))
  V <- wishart(5, chol2symm(as_data(S)))
  m2 <- model(V)
  expect_false("chol" %in% ir_ops(m2))
  free <- random_free(m2, 3, sd = 0.5)
  values <- traced_values(m2, free)
  want <- vapply(1:3, function(r) {
    Vr <- matrix(values[r, ], 2, 2)
    Ur <- chol(Vr)
    ref_dwishart(Vr, 5, t(S) %*% S) + 2 * log(2) + sum((2 - 1:2 + 1) * log(diag(Ur))) +
      sum(log(diag(Ur)))
  }, numeric(1))
  expect_equal(engine_density(m2, free, gradient = FALSE)$log_density, want, tolerance = tol)
})

test_that("a wishart() variable as Sigma of multivariate_normal() is used through its factor", {
  set.seed(5108)
  y <- matrix(rnorm(6), 3, 2)
  W <- wishart(4, diag(2))
  distribution(y) <- multivariate_normal(t(c(0, 0)), W, n_realisations = 3)
  m <- model(W)
  # the wishart() prior's own density is on its factor too: the only chol() is
  # of its data scale matrix diag(2), none of W
  expect_equal(chol_inputs(m), "data")
  free <- random_free(m, 3, sd = 0.5)
  values <- traced_values(m, free)
  want <- vapply(1:3, function(r) {
    Wr <- matrix(values[r, ], 2, 2)
    Ur <- chol(Wr)
    sum(mvtnorm::dmvnorm(y, c(0, 0), Wr, log = TRUE)) + ref_dwishart(Wr, 4, diag(2)) +
      2 * log(2) + sum((2 - 1:2 + 1) * log(diag(Ur))) + sum(log(diag(Ur)))
  }, numeric(1))
  expect_equal(engine_density(m, free, gradient = FALSE)$log_density, want, tolerance = tol)
  expect_gradient_matches(m, free = free)
})
