# calculate(): values of greta arrays from fixed values and from draws.

test_that("calculate() computes greta arrays from given values", {
  x <- variable(dim = 3)
  a <- variable(lower = 0)
  y <- exp(x) * a + 1
  out <- calculate(y, values = list(x = c(0, 1, 2), a = 2))
  expect_equal(names(out), "y")
  expect_equal(as.numeric(out$y), exp(c(0, 1, 2)) * 2 + 1)
  expect_equal(dim(out$y), c(3L, 1L))
  # several targets, named as written; a value for an intermediate array
  z <- sum(y)
  both <- calculate(y, z, values = list(x = c(0, 0, 0), a = 1))
  expect_equal(names(both), c("y", "z"))
  expect_equal(as.numeric(both$z), 6)
  mid <- exp(x)
  w <- mid * 3
  expect_equal(as.numeric(calculate(w, values = list(mid = c(1, 2, 3)))$w), c(3, 6, 9))
  # data-only arrays need no values
  d <- as_data(matrix(1:4, 2)) * 2
  expect_equal(calculate(d)$d, matrix(c(2, 4, 6, 8), 2))
})

test_that("calculate() explains what is missing or wrong", {
  x <- variable(dim = 2)
  b <- normal(0, 1)
  y <- x * b
  expect_error(calculate(y, values = list(x = c(1, 2))), "needs values for the variable")
  expect_error(calculate(y, values = list(x = 1:3, b = 1)), "has 3 elements")
  expect_error(calculate(y, values = list(q = 1)), "not a greta array")
  pos <- variable(lower = 0)
  expect_error(calculate(pos * 2, values = list(pos = -1)), "outside the range")
  expect_error(calculate(pos * 2, values = list(pos = NA)), "`pos` contains missing values")
  expect_error(calculate(y, values = list(x = c(1, NaN), b = 1)), "`x` contains missing values")
  # bounds of their own per element are checked too
  each <- variable(lower = c(0, 1), upper = c(Inf, 3))
  expect_error(calculate(each * 1, values = list(each = c(-1, 2))), "`each` is outside the range")
  expect_error(calculate(each * 1, values = list(each = c(1, 5))), "`each` is outside the range")
  expect_equal(as.numeric(calculate(each * 2, values = list(each = c(1, 2)))[[1]]), c(2, 4))
  expect_error(calculate(y, values = list(b = 1), nsim = 10), "do not have distributions")
  expect_error(calculate(1), "greta arrays")
  expect_error(calculate(y, values = c(1, 2)), "named list")
  # values passed by position (greta's ?mixture example does): the hint says how
  expect_error(calculate(y, list(x = c(1, 2), b = 1)),
               "argument 2 is a list; give draws or values by name")
})

test_that("calculate() computes greta arrays at every draw of a greta_mcmc_list", {
  set.seed(801)
  mu <- normal(0, 1)
  sigma <- exponential(1)
  y <- c(0.3, -0.2, 0.5)
  distribution(y) <- normal(mu, sigma)
  draws <- suppressWarnings(mcmc(model(mu, sigma), n_samples = 50, warmup = 50, chains = 3,
                                 thin = 2, verbose = FALSE))
  cv <- sigma / abs(mu)
  shifted <- mu + c(1, 2)
  out <- calculate(cv, shifted, values = draws, trace_batch_size = 7)
  expect_s3_class(out, "greta_mcmc_list")
  expect_equal(coda::nchain(out), 3)
  expect_equal(coda::niter(out), coda::niter(draws))
  expect_equal(start(out), start(draws))
  expect_equal(coda::thin(out), 2)
  expect_equal(coda::varnames(out), c("cv", "shifted[1,1]", "shifted[2,1]"))
  for (k in 1:3) {
    d <- as.matrix(draws[[k]])
    o <- as.matrix(out[[k]])
    expect_equal(unname(o[, "cv"]), unname(d[, "sigma"] / abs(d[, "mu"])))
    expect_equal(unname(o[, "shifted[2,1]"]), unname(d[, "mu"] + 2))
  }
  # all draws in one batch, as greta's ?calculate example asks with Inf
  whole <- calculate(cv, shifted, values = draws, trace_batch_size = Inf)
  expect_equal(as.matrix(whole), as.matrix(out))
  expect_error(calculate(cv, values = draws, trace_batch_size = 0), "at least 1, or Inf")
  other <- normal(0, 1)
  expect_error(calculate(other * 2, values = draws), "not in the model")
  # data with a distribution is not in the draws: its observed values would
  # pass for its posterior predictive, so it needs nsim (greta's rule)
  obs <- as_data(c(0.1, 0.4))
  distribution(obs) <- normal(mu, sigma)
  draws2 <- suppressWarnings(mcmc(model(mu, sigma), n_samples = 20, warmup = 20, chains = 2,
                                  verbose = FALSE))
  expect_error(calculate(mu, obs, values = draws2),
               "`obs` has a distribution and is not in the draws.*give `nsim`")
  expect_equal(dim(calculate(obs, values = draws2, nsim = 5)$obs), c(5L, 2L, 1L))
  plain <- as_data(c(1, 2))
  expect_equal(unname(as.matrix(calculate(plain, values = draws2))[1, ]), c(1, 2))
})
