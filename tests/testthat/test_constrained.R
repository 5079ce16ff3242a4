# Constrained variables (R/constrained.R): their values against R versions of
# Stan's transforms written sequentially (as Stan's reference manual states
# them), the model's log density against the data's density plus a log
# |Jacobian| taken numerically (the log |det| of a finite-difference Jacobian
# of the R transform), gradients, the Jacobian's absence without `adjust`,
# sampling flat variables with known distributions, and errors.

# -- the transforms in R, one free vector at a time -----------------------------

ref_simplex <- function(y) {
  K <- length(y) + 1
  x <- numeric(K)
  rest <- 1
  for (k in seq_len(K - 1)) {
    z <- plogis(y[k] + log(1 / (K - k)))
    x[k] <- rest * z
    rest <- rest - x[k]
  }
  x[K] <- rest
  x
}

ref_ordered <- function(y) {
  x <- y
  for (k in seq_along(y)[-1]) x[k] <- x[k - 1] + exp(y[k])
  x
}

# the upper factor, free elements in column-major order of the upper triangle
ref_cov_factor <- function(y, n) {
  U <- matrix(0, n, n)
  U[upper.tri(U, diag = TRUE)] <- y
  diag(U) <- exp(diag(U))
  U
}

# Stan's cholesky_factor_corr: the CPCs tanh(y) fill L's strict lower triangle
# by columns (here: U's strict upper triangle, which is t(L)'s)
ref_corr_factor <- function(y, n) {
  w <- matrix(0, n, n)
  w[lower.tri(w)] <- tanh(y)
  L <- matrix(0, n, n)
  L[1, 1] <- 1
  for (i in seq_len(n)[-1]) {
    L[i, 1] <- w[i, 1]
    if (i > 2) for (j in 2:(i - 1)) L[i, j] <- w[i, j] * sqrt(1 - sum(L[i, 1:(j - 1)]^2))
    L[i, i] <- sqrt(1 - sum(L[i, 1:(i - 1)]^2))
  }
  t(L)
}

upper_coords <- function(U) U[upper.tri(U, diag = TRUE)]
strict_upper_coords <- function(U) U[upper.tri(U)]

# The model's log density at free state `y`: data `yd` ~ normal(x, 0.5), x the
# constrained value of `f(y)`, plus the numeric log |Jacobian| in `coords`.
density_by_hand <- function(f, coords, yd) {
  function(y) {
    x <- f(y)
    sum(dnorm(yd, x, 0.5, log = TRUE)) + numeric_log_jacobian(f, coords, y)
  }
}

# A model of yd ~ normal(x, 0.5) for the constrained x, its density checked at
# random free states against `f`, its traced values against f too, and its
# gradient against finite differences.
check_constrained <- function(x, f, coords, yd) {
  y <- as_data(yd)
  distribution(y) <- normal(x, 0.5)
  m <- model(x)
  expect_density_matches(m, density_by_hand(f, coords, yd), chains = c(1, 3),
                         tolerance = 1e-6)
  free <- random_free(m, 3)
  values <- traced_values(m, free)
  for (k in 1:3) expect_equal(as.numeric(values[k, ]), as.numeric(f(free[k, ])), tolerance = 1e-10)
  expect_gradient_matches(m, chains = c(1, 3))
  invisible(m)
}

test_that("simplex_variable(): values, log density with its Jacobian, and gradient", {
  set.seed(801)
  x <- simplex_variable(4)
  expect_equal(dim(x), c(1L, 4L))
  check_constrained(x, ref_simplex, function(v) v[1:3], matrix(c(0.1, 0.4, 0.2, 0.3), 1))
  # a matrix: each row a simplex, the free state rows-by-(K - 1) column-major
  set.seed(802)
  xm <- simplex_variable(c(2, 3))
  f <- function(y) t(apply(matrix(y, 2), 1, ref_simplex))
  check_constrained(xm, f, function(v) v[, 1:2], matrix(c(0.2, 0.5, 0.3, 0.3, 0.5, 0.2), 2))
})

test_that("ordered_variable(): values, log density with its Jacobian, and gradient", {
  set.seed(803)
  x <- ordered_variable(3)
  expect_equal(dim(x), c(1L, 3L))
  check_constrained(x, ref_ordered, identity, matrix(c(-1, 0.2, 1.5), 1))
  set.seed(804)
  xm <- ordered_variable(c(2, 3))
  f <- function(y) t(apply(matrix(y, 2), 1, ref_ordered))
  check_constrained(xm, f, identity, matrix(c(-1, 0, 0.2, 0.1, 1.5, 2), 2))
})

test_that("cholesky_variable(): covariance and correlation factors, log densities, gradients", {
  set.seed(805)
  for (n in 1:3) {
    U <- cholesky_variable(n)
    expect_equal(dim(U), c(n, n))
    check_constrained(U, function(y) ref_cov_factor(y, n), upper_coords, diag(n) * 0.8)
  }
  set.seed(806)
  for (n in 2:4) {
    U <- cholesky_variable(c(n, n), correlation = TRUE)
    expect_equal(dim(U), c(n, n))
    check_constrained(U, function(y) ref_corr_factor(y, n), strict_upper_coords, diag(n) * 0.9)
  }
})

test_that("variable() with bounds per element: values, log density with its Jacobian, gradient", {
  # every kind of bound in one variable, in mixed order: both, lower only,
  # neither, upper only
  lower <- c(-3, 0, -Inf, -1, -Inf, 2)
  upper <- c(0, Inf, Inf, 2, 1, 3)
  f <- function(y) vapply(seq_along(y), function(i) constrain(y[i], lower[i], upper[i])$value, 0)
  set.seed(811)
  x <- variable(lower = lower, upper = upper)
  expect_equal(dim(x), c(6L, 1L))
  m <- check_constrained(x, f, identity, matrix(c(-1, 0.5, 0.2, 1, -2, 2.5), 6))
  expect_equal(m$n_free, 6)
  # the log |Jacobian| written out with the helpers' constrain(), not numerically
  y <- as_data(matrix(c(-1, 0.5, 0.2, 1), 2))
  set.seed(812)
  xm <- variable(lower = matrix(c(0, -1, 0, -1), 2), upper = 1)
  expect_equal(dim(xm), c(2L, 2L))
  distribution(y) <- normal(xm, 0.5)
  m2 <- model(xm)
  expect_density_matches(m2, function(z) {
    pieces <- lapply(1:4, function(i) constrain(z[i], c(0, -1, 0, -1)[i], 1))
    v <- vapply(pieces, `[[`, 0, "value")
    sum(dnorm(c(-1, 0.5, 0.2, 1), v, 0.5, log = TRUE)) + sum(vapply(pieces, `[[`, 0, "log_jacobian"))
  })
  expect_gradient_matches(m2)
})

test_that("the log Jacobian is left out without adjustment (opt(adjust = FALSE))", {
  set.seed(807)
  p <- simplex_variable(3)
  y <- as_data(matrix(c(0.2, 0.5, 0.3), 1))
  distribution(y) <- normal(p, 0.1)
  m <- model(p)
  free <- random_free(m, 3)
  options <- lockstep:::check_compute_options(cpu_only())
  with_j <- lockstep:::ls_engine_log_density(lockstep:::model_engine(m), free, TRUE, options)
  options$jacobian <- FALSE
  without <- lockstep:::ls_engine_log_density(lockstep:::model_engine(m), free, TRUE, options)
  for (k in 1:3) {
    likelihood <- sum(dnorm(c(0.2, 0.5, 0.3), ref_simplex(free[k, ]), 0.1, log = TRUE))
    expect_equal(without$log_density[k], likelihood, tolerance = 1e-10)
    expect_equal(with_j$log_density[k] - without$log_density[k],
                 numeric_log_jacobian(ref_simplex, function(v) v[1:2], free[k, ]),
                 tolerance = 1e-6)
  }
  expect_false(isTRUE(all.equal(with_j$gradient, without$gradient)))
  # the data lie on the simplex: the maximum likelihood estimate is the data,
  # the mode of the free state's density (with the Jacobian) is not
  mle <- opt(m, adjust = FALSE, tolerance = 1e-12, max_iterations = 1000)
  expect_equal(as.numeric(mle$par$p), c(0.2, 0.5, 0.3), tolerance = 1e-5)
  map <- opt(m, adjust = TRUE, tolerance = 1e-12, max_iterations = 1000)
  expect_gt(max(abs(as.numeric(map$par$p) - c(0.2, 0.5, 0.3))), 1e-3)
})

test_that("sampling a flat simplex gives the uniform distribution on it; draws satisfy it", {
  set.seed(808)
  p <- simplex_variable(3)
  # sum(p) is 1: a likelihood that is the same everywhere
  y <- as_data(0)
  distribution(y) <- normal(sum(p), 1)
  m <- model(p)
  expect_output(print(p), "variable")
  draws <- sample_quietly(m, n_samples = 1000, warmup = 500, chains = 4)
  v <- as.matrix(draws)
  expect_equal(colnames(v), c("p[1,1]", "p[1,2]", "p[1,3]"))
  expect_true(all(v > 0))
  expect_equal(rowSums(v), rep(1, nrow(v)), tolerance = 1e-12, ignore_attr = TRUE)
  # uniform on the simplex (Dirichlet(1, 1, 1)): means 1/3, variances 1/18
  expect_near(colMeans(v), rep(1 / 3, 3), 0.03)
  expect_near(apply(v, 2, var), rep(1 / 18, 3), 0.01)
  # a matrix of simplexes: every row sums to 1
  q <- simplex_variable(c(2, 4))
  y2 <- as_data(0)
  distribution(y2) <- normal(sum(q), 1)
  d2 <- as.matrix(sample_quietly(model(q), n_samples = 100, warmup = 100, chains = 2))
  for (r in 1:2) {
    cols <- sprintf("q[%d,%d]", r, 1:4)
    expect_equal(rowSums(d2[, cols]), rep(1, nrow(d2)), tolerance = 1e-12, ignore_attr = TRUE)
  }
  expect_true(all(d2 > 0))
})

test_that("sampling an ordered variable under normal(0, 1) gives normal order statistics", {
  set.seed(809)
  x <- ordered_variable(3)
  y <- as_data(matrix(0, 1, 3))
  distribution(y) <- normal(x, 1)
  draws <- as.matrix(sample_quietly(model(x), n_samples = 1000, warmup = 500, chains = 4))
  expect_true(all(draws[, 2] > draws[, 1] & draws[, 3] > draws[, 2]))
  # the order statistics of 3 standard normals: means -3 / (2 sqrt(pi)), 0, 3 / (2 sqrt(pi))
  expect_near(colMeans(draws), c(-1, 0, 1) * 3 / (2 * sqrt(pi)), 0.07)
})

test_that("sampled Cholesky factors are upper triangular with the right distributions", {
  set.seed(810)
  U <- cholesky_variable(2)
  y <- as_data(matrix(0, 2, 2))
  distribution(y) <- normal(U, 1)  # U[1, 1] and U[2, 2] half-normal, U[1, 2] normal
  d <- as.matrix(sample_quietly(model(U), n_samples = 1000, warmup = 500, chains = 4))
  expect_true(all(d[, "U[2,1]"] == 0))
  expect_true(all(d[, "U[1,1]"] > 0 & d[, "U[2,2]"] > 0))
  expect_near(mean(d[, "U[1,1]"]), sqrt(2 / pi), 0.06)
  expect_near(mean(d[, "U[2,2]"]), sqrt(2 / pi), 0.06)
  expect_near(mean(d[, "U[1,2]"]^2), 1, 0.12)
  for (k in seq(1, nrow(d), by = 97)) {
    S <- crossprod(matrix(d[k, ], 2))
    expect_true(all(eigen(S, symmetric = TRUE)$values > 0))
  }

  set.seed(811)
  R <- cholesky_variable(3, correlation = TRUE)
  y1 <- as_data(1)
  distribution(y1) <- normal(R[1, 1], 1)  # R[1, 1] is 1: flat
  d <- as.matrix(sample_quietly(model(R), n_samples = 1000, warmup = 500, chains = 4))
  below <- c("R[2,1]", "R[3,1]", "R[3,2]")
  expect_true(all(d[, below] == 0))
  expect_true(all(d[, c("R[1,1]", "R[2,2]", "R[3,3]")] > 0))
  for (k in seq(1, nrow(d), by = 53)) {
    C <- crossprod(matrix(d[k, ], 3))
    expect_near(diag(C), rep(1, 3), 1e-10)
    expect_true(all(eigen(C, symmetric = TRUE)$values > 0))
  }
  # flat in L's free elements: L[2, 1] uniform on (-1, 1), (L[3, 1], L[3, 2])
  # uniform on the unit disk
  expect_near(mean(d[, "R[1,2]"]^2), 1 / 3, 0.03)
  expect_near(mean(d[, "R[1,3]"]^2), 1 / 4, 0.03)
  expect_near(mean(d[, "R[2,3]"]^2), 1 / 4, 0.03)
  expect_near(mean(d[, "R[3,3]"]), 2 / 3, 0.03)
})

test_that("constrained variables are not likelihoods, and cannot be simulated", {
  set.seed(812)
  p <- simplex_variable(3)
  y <- as_data(matrix(c(0.2, 0.5, 0.3), 1))
  distribution(y) <- normal(p, 0.1)
  m <- model(p)
  draws <- sample_quietly(m, n_samples = 20, warmup = 20, chains = 2)
  ll <- log_lik(draws)
  expect_equal(ncol(ll), 3L)  # the three observations, no Jacobian term
  v <- as.matrix(draws)
  expect_equal(ll[1, ], dnorm(c(0.2, 0.5, 0.3), v[1, ], 0.1, log = TRUE), tolerance = 1e-8,
               ignore_attr = TRUE)
  expect_error(calculate(p, nsim = 5), "do not have distributions")
  # posterior simulations take the variable from the draws
  sims <- calculate(p, values = draws, nsim = 5)
  expect_equal(rowSums(matrix(sims$p, 5)), rep(1, 5), tolerance = 1e-12)
  # like a variable() alone, a constrained variable alone is no model
  expect_error(model(simplex_variable(2)), "probability density")
})

test_that("constrained variables explain bad arguments", {
  expect_error(simplex_variable(1), "last dimension of `dim`")
  expect_error(simplex_variable(c(3, 1)), "last dimension of `dim`")
  expect_error(simplex_variable("a"), "`dim` of simplex_variable")
  expect_error(ordered_variable(0), "`dim` of ordered_variable")
  expect_error(ordered_variable(1), "last dimension of `dim`")
  expect_error(cholesky_variable(c(2, 3)), "`dim` of cholesky_variable\\(\\) must be square")
  expect_error(cholesky_variable(c(2, 2, 2)), "`dim` of cholesky_variable")
  expect_error(cholesky_variable(2.5), "`dim` of cholesky_variable")
  expect_error(cholesky_variable(2, correlation = NA), "`correlation`")
})

# -- initials() on the constrained scale ---------------------------------------

# The first draw of each chain with no warmup and steps of 1e-12: the start,
# to well within 1e-10 (mcmc() finds initials() in its caller's frame, so the
# greta arrays are looked up in `env`).
first_draws <- function(m, initial_values, chains, env = parent.frame()) {
  still <- hmc(Lmin = 1, Lmax = 1, epsilon = 1e-12)
  draws <- suppressMessages(eval(quote(
    mcmc(m, sampler = still, warmup = 0, n_samples = 1, chains = chains, verbose = FALSE,
         initial_values = initial_values)
  ), list(m = m, still = still, chains = chains, initial_values = initial_values), env))
  lapply(draws, function(chain) as.numeric(chain[1, ]))
}

test_that("initials() starts simplex, ordered and Cholesky variables at the given values", {
  set.seed(612)
  w <- simplex_variable(3)
  w2 <- simplex_variable(c(2, 2, 4))  # a simplex along the last of three dimensions
  o <- ordered_variable(c(2, 3))
  u <- cholesky_variable(3)
  r <- cholesky_variable(3, correlation = TRUE)
  r1 <- cholesky_variable(1, correlation = TRUE)  # nothing to sample
  y <- as_data(0.1)
  distribution(y) <- normal(sum(w) + sum(w2) + sum(o) + sum(u) + sum(r), 10)
  m <- model(w, w2, o, u, r)
  S <- matrix(c(2, 0.3, 0.1, 0.3, 1, -0.2, 0.1, -0.2, 1.5), 3)
  w2_value <- array(0, c(2, 2, 4))
  for (i in 1:2) for (j in 1:2) w2_value[i, j, ] <- prop.table(runif(4))
  one <- list(w = c(0.2, 0.3, 0.5), w2 = w2_value, o = matrix(c(-1, 0, 0.5, 1, 2, 3.5), 2),
              u = chol(S), r = chol(stats::cov2cor(S)))
  # a far corner: near-zero simplex elements, tiny steps, a strong correlation
  S2 <- matrix(c(1, 0.99, 0.99, 1.01), 2)
  S3 <- diag(3); S3[1:2, 1:2] <- S2
  w2_far <- w2_value; w2_far[1, 1, ] <- c(1e-9, 1 - 3e-9, 1e-9, 1e-9)
  two <- list(w = c(1e-6, 1 - 2e-6, 1e-6), w2 = w2_far, o = matrix(c(5, -3, 5 + 1e-6, 0, 9, 4), 2),
              u = chol(S3 * 100), r = chol(stats::cov2cor(S3)), r1 = matrix(1))
  expected <- function(values) unlist(lapply(values[c("w", "w2", "o", "u", "r")], as.numeric), use.names = FALSE)
  got <- first_draws(m, do.call(initials, one), 1)
  expect_equal(got[[1]], expected(one), tolerance = 1e-10)
  # a list with one set per chain
  got <- first_draws(m, list(do.call(initials, one), do.call(initials, two)), 2)
  expect_equal(got[[1]], expected(one), tolerance = 1e-10)
  expect_equal(got[[2]], expected(two), tolerance = 1e-10)
  expect_lt(max(abs(got[[2]] - expected(two))), 1e-10)  # absolutely, near zero too
  # one set for several chains, and a partial set: w2 then starts at random
  got <- first_draws(m, initials(o = one$o, r = one$r), 3)
  for (chain in got) {
    expect_equal(chain[20:25], as.numeric(one$o), tolerance = 1e-10)
    expect_equal(chain[35:43], as.numeric(one$r), tolerance = 1e-10)
  }
  expect_false(isTRUE(all.equal(got[[1]][4:19], got[[2]][4:19])))
})

test_that("initials() of dirichlet(), wishart(), lkj_correlation() and joint() variables", {
  p <- dirichlet(t(c(1, 2, 3)))
  Sigma <- wishart(5, diag(2))
  Omega <- lkj_correlation(2, dimension = 3)
  x <- joint(normal(0, 1), exponential(2), normal(1, 2, truncation = c(0, 3)), dim = 2)
  m <- model(p, Sigma, Omega, x)
  S <- matrix(c(2, 0.5, 0.5, 1), 2)
  C <- matrix(c(1, 0.3, -0.2, 0.3, 1, 0.1, -0.2, 0.1, 1), 3)
  xv <- cbind(c(-0.5, 2), c(0.1, 3), c(1e-3, 2.9))
  got <- first_draws(m, initials(p = c(0.1, 0.6, 0.3), Sigma = S, Omega = C, x = xv), 1)
  expect_equal(got[[1]], c(0.1, 0.6, 0.3, S, C, xv), tolerance = 1e-10)
})

test_that("initials() of constrained variables explain values outside their support", {
  w <- simplex_variable(3)
  o <- ordered_variable(3)
  u <- cholesky_variable(2)
  r <- cholesky_variable(2, correlation = TRUE)
  Sigma <- wishart(4, diag(2))
  x <- joint(normal(0, 1), exponential(2))
  y <- as_data(0.1)
  distribution(y) <- normal(sum(w) + sum(o) + sum(u) + sum(r), 10)
  m <- model(w, o, u, r, Sigma, x)
  start <- function(...) {
    mcmc(m, chains = 1, verbose = FALSE, warmup = 0, n_samples = 1, initial_values = initials(...))
  }
  expect_error(start(w = c(0.2, 0.3, 0.6)), "`w` must be a simplex")
  expect_error(start(w = c(-0.1, 0.6, 0.5)), "`w` must be a simplex")
  expect_error(start(w = c(0, 0.5, 0.5)), "`w` must be a simplex")
  expect_error(start(w = 1 / 3), "initial values for `w` have 1 elements, but `w` has dimensions 1 x 3")
  expect_error(start(w = matrix(1 / 3, 3, 1)), "`w` have dimensions 3 x 1, but `w` has dimensions 1 x 3")
  expect_error(start(o = c(1, 2, 2)), "`o` must be strictly increasing")
  expect_error(start(o = c(1, 0, 2)), "`o` must be strictly increasing")
  expect_error(start(o = 1:4), "`o` have 4 elements")
  expect_error(start(u = matrix(c(1, 0.5, 0, 1), 2)), "`u` must be an upper triangular matrix")
  expect_error(start(u = diag(c(1, -1))), "`u` must be an upper triangular matrix with a positive")
  expect_error(start(r = matrix(c(1, 0, 0.5, 0.5), 2)), "`r` must be the upper Cholesky factor of a correlation")
  expect_error(start(r = diag(c(1, -1))), "`r` must be an upper triangular")
  expect_error(start(Sigma = matrix(c(1, 0.5, 0.4, 1), 2)), "`Sigma` must be a symmetric matrix")
  expect_error(start(Sigma = matrix(c(1, 2, 2, 1), 2)), "`Sigma` must be a positive definite")
  expect_error(start(x = c(0, -1)), "some initial values for `x` are outside the range")
  expect_error(start(x = 1), "`x` have 1 elements, but `x` has dimensions 1 x 2")
  # the 1 x 1 correlation factor has nothing to sample, but is still checked
  r1 <- cholesky_variable(1, correlation = TRUE)
  expect_error(start(r1 = matrix(0.5)), "`r1` must be the upper Cholesky factor of a correlation")
  expect_error(start(r1 = c(1, 0)), "`r1` have 2 elements, but `r1` has dimensions 1 x 1")
  # a constrained variable outside the model
  other <- simplex_variable(2)
  expect_error(start(other = c(0.5, 0.5)), "`other`, which is not a variable of this model")
})

test_that("variable() with bounds per element: draws inside their bounds, initials() at the given values", {
  lower <- c(-3, -1, 2)
  upper <- c(0, 2, 3)
  mu <- variable(lower = lower, upper = upper)
  x <- as_data(c(-5, 0.3, 12))
  distribution(x) <- normal(mu, 1)
  m <- model(mu)
  draws <- as.matrix(sample_quietly(m, n_samples = 200, warmup = 100, chains = 2))
  expect_true(all(sweep(draws, 2, lower, `>`) & sweep(draws, 2, upper, `<`)))
  got <- first_draws(m, initials(mu = c(-0.5, 1.5, 2.25)), 2)
  for (chain in got) expect_equal(chain, c(-0.5, 1.5, 2.25), tolerance = 1e-10)
  expect_error(first_draws(m, initials(mu = c(-0.5, 2.5, 2.25)), 1),
               "element 2 is 2.5, not below its upper bound 2")
  expect_error(first_draws(m, initials(mu = c(-0.5, 1)), 1), "`mu` have 2 elements")
})
