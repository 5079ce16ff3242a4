# as_data_mutable() and data_values<-: one model, several datasets.

test_that("data_values<- replaces a model's data: its log density, calculate() and sampling", {
  set.seed(71)
  first <- rnorm(8, 1)
  y <- as_data_mutable(first)
  mu <- normal(0, 10)
  distribution(y) <- normal(mu, 1)
  m <- model(mu)
  # -log p of mu given data d, with mu's prior, at free state mu
  lp <- function(mu, d) sum(dnorm(d, mu, 1, log = TRUE)) + dnorm(mu, 0, 10, log = TRUE)
  free <- matrix(c(-0.3, 0.4, 2.5), ncol = 1)
  expect_equal(model_log_density(m, free, gradient = FALSE)$log_density,
               vapply(free, lp, 0, d = first), tolerance = 1e-10)
  draws_first <- mcmc(m, n_samples = 100, warmup = 100, chains = 2, verbose = FALSE)

  second <- rnorm(8, 5)
  before <- m
  data_values(m, y) <- second
  expect_equal(model_log_density(m, free, gradient = FALSE)$log_density,
               vapply(free, lp, 0, d = second), tolerance = 1e-10)
  # the model as it was (and the draws' copy of it) keeps its data and engine
  expect_equal(model_log_density(before, free, gradient = FALSE)$log_density,
               vapply(free, lp, 0, d = first), tolerance = 1e-10)
  expect_false(identical(attr(draws_first, "model_info")$model$engine, m$engine))
  # the greta array has the new values
  expect_equal(as.numeric(calculate(y)[[1]]), second)
  # the conjugate posterior of the new data
  post_var <- 1 / (8 + 1 / 100)
  draws <- mcmc(m, n_samples = 400, warmup = 300, chains = 2, verbose = FALSE)
  x <- as.matrix(draws)[, "mu"]
  expect_lt(abs(mean(x) - post_var * sum(second)) / sqrt(post_var / 100), 5)
})

test_that("data_values<- refuses what it cannot replace, naming it", {
  counts <- as_data_mutable(c(1, 0, 3))
  fixed <- as_data(c(2, 2, 1))
  rate <- exponential(1)
  distribution(counts) <- poisson(rate)
  distribution(fixed) <- poisson(rate)
  m <- model(rate)
  expect_error(data_values(m, fixed) <- c(1, 1, 1), "`fixed` must be data made by as_data_mutable")
  expect_error(data_values(m, rate) <- 1, "`rate` must be data made by as_data_mutable")
  other <- as_data_mutable(1)
  expect_error(data_values(m, other) <- 2, "`other` is not part of `model`")
  expect_error(data_values(m, counts) <- c(1, 2), "have dimension 2 x 1, but `counts` has 3 x 1")
  expect_error(data_values(m, counts) <- c(1, 2, NA), "missing values")
  expect_error(data_values(m, counts) <- c(1, 2.5, 0), "poisson")
  not_model <- list()
  expect_error(data_values(not_model, counts) <- c(1, 2, 0), "`model` must be a greta_model")
  # as_data_mutable() takes what as_data() takes, and data greta arrays
  expect_equal(dim(as_data_mutable(data.frame(a = 1:2, b = 3:4))), c(2L, 2L))
  expect_true(get_node(as_data_mutable(fixed))$mutable)
  expect_error(as_data_mutable(rate), "cannot convert a greta array of type 'variable'")
  # and a replacement that is valid goes through
  data_values(m, counts) <- c(0, 0, 2)
  expect_equal(as.numeric(calculate(counts)[[1]]), c(0, 0, 2))
})

test_that("data_values<- reaches log_lik() of a multivariate likelihood", {
  set.seed(73)
  y <- as_data_mutable(matrix(rnorm(6), 3, 2))
  mu <- normal(0, 1, dim = c(1, 2))
  distribution(y) <- multivariate_normal(mu, diag(2), n_realisations = 3)
  m <- model(mu)
  new <- matrix(rnorm(6, 3), 3, 2)
  data_values(m, y) <- new
  draws <- mcmc(m, n_samples = 20, warmup = 20, chains = 1, verbose = FALSE)
  ll <- log_lik(draws)
  mus <- as.matrix(draws)
  want <- t(apply(mus, 1, function(mv) mvtnorm::dmvnorm(new, mv, diag(2), log = TRUE)))
  expect_equal(unname(ll), unname(want), tolerance = 1e-8)
})
