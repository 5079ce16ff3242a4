# What a model's data take (issue 50): greta arrays share the user's index
# and count vectors rather than copying them, the engine's executors share
# one copy of the rows (or none, when the rows are in order already), and a
# model too large for the memory free is refused with a message that names
# the sizes, before the engine is built.

test_that("an index of the user's own is kept as it is, and gives what a copied one gives", {
  set.seed(50)
  x <- sample.int(6, 300, replace = TRUE)
  theta <- normal(0, 1, dim = 6)
  g <- theta[x]
  node <- lockstep:::get_node(g)
  expect_identical(node$index, x)
  expect_identical(dim(g), c(300L, 1L))
  # whole rows of a matrix, by the user's row numbers
  B <- normal(0, 1, dim = c(6, 2))
  rows <- B[x, ]
  expect_identical(lockstep:::get_node(rows)$op, "gather_rows")
  expect_identical(lockstep:::get_node(rows)$index, x)
  expect_identical(dim(rows), c(300L, 2L))
  # the same model with the index as doubles (copied) has the same density
  y <- rnorm(300, 0.5 * x, 1)
  density_with <- function(index) {
    theta <- normal(0, 1, dim = 6)
    distribution(y) <- normal(theta[index], 1)
    m <- model(theta)
    engine_density(m, rbind(theta0, -theta0))$log_density
  }
  theta0 <- seq(-1, 1, length.out = 6)
  expect_equal(density_with(x), density_with(as.numeric(x)))
  expect_equal(density_with(x)[1],
               sum(dnorm(theta0, 0, 1, log = TRUE)) + sum(dnorm(y, theta0[x], 1, log = TRUE)))
  # indices out of range or NA still get their errors
  expect_error(theta[c(1L, 7L)], "out of range")
  expect_error(theta[c(1L, NA)], "out of range")
})

test_that("integer data are kept as integers and give the densities of doubles", {
  set.seed(51)
  counts <- rpois(200, 3)
  expect_true(is.integer(counts))
  expect_identical(lockstep:::get_node(as_data(counts))$value, counts)
  lp <- function(y) {
    rate <- variable(lower = 0)
    distribution(y) <- poisson(rate)
    m <- model(rate)
    engine_density(m, matrix(c(0.2, 1.1), 2, 1))$log_density
  }
  expect_equal(lp(counts), lp(as.numeric(counts)))
  expect_equal(lp(counts)[2], sum(dpois(counts, exp(1.1), log = TRUE)) + 1.1)
})

test_that("a matrix of data is kept as it is, sharing the user's memory", {
  set.seed(53)
  X <- matrix(rnorm(600), 200, 3)
  Xd <- as_data(X)
  kept <- lockstep:::get_node(Xd)$value
  expect_identical(kept, X)
  # the same object, not a copy: R's inspect() names the address of each
  address <- function(v) sub("^@([0-9a-f]+) .*$", "\\1", utils::capture.output(.Internal(inspect(v)))[1])
  expect_identical(address(kept), address(X))
  # with other attributes (dimnames) the values are taken as numbers, a copy
  Xn <- X
  dimnames(Xn) <- list(NULL, c("a", "b", "c"))
  expect_null(attributes(lockstep:::get_node(as_data(Xn))$value))
  # and the model is the one a copied matrix gives
  y <- rnorm(200, X %*% c(1, -1, 0.5))
  lp <- function(data) {
    b <- normal(0, 1, dim = 3)
    distribution(y) <- normal(data %*% b, 1)
    engine_density(model(b), matrix(c(0.3, -0.2, 0.1), 1))$log_density
  }
  # (Xd in one model only: a data array used by two models joins them, as in greta)
  shared <- lp(Xd)
  expect_equal(shared, lp(as_data(X + 0)))
  expect_equal(shared, sum(dnorm(y, X %*% c(0.3, -0.2, 0.1), 1, log = TRUE)) +
                 sum(dnorm(c(0.3, -0.2, 0.1), log = TRUE)))
  expect_identical(as.matrix(Xd), X)
})

test_that("a model too large for the memory free is refused before its engine is built", {
  # (integers, which the engine copies as doubles: R's doubles it borrows)
  y <- as.integer(round(10 * rnorm(1e5)))
  mu <- variable()
  distribution(y) <- normal(mu, 1)
  old <- options(lockstep.memory_available = 1e5)
  on.exit(options(old))
  err <- tryCatch(model(mu), error = conditionMessage)
  expect_match(err, "the engine's copy of the data needs about 1 MB")
  expect_match(err, "0 MB of memory free")
  options(old)
  # the check itself: sizes in GB, bytes a row
  expect_error(lockstep:::check_memory(2 * 2^30, "the fit's copy", rows = 1e7, available = 2^30),
               "the fit's copy needs about 2.0 GB \\(10,000,000 rows at 215 bytes a row\\), but this machine has 1.0 GB of memory free")
  expect_message(lockstep:::check_memory(2^31, "the engine's copy of the data", available = 2^33),
                 "holds about 2.0 GB; 8.0 GB free")
  expect_silent(lockstep:::check_memory(2^20, "the engine's copy of the data", available = 2^33))
  # nothing known of the machine: nothing refused
  expect_silent(lockstep:::check_memory(2^20, "x", available = NA_real_))
})

test_that("the engine says what its first executor copies: nothing for rows in order in double", {
  set.seed(52)
  n <- 2000
  g <- rep(1:20, each = 100)
  y <- rnorm(n, g / 10)
  memory_of <- function(group, precision) {
    a <- normal(0, 1, dim = 20)
    distribution(y) <- normal(a[group], 1)
    m <- model(a, precision = precision)
    lockstep:::ls_engine_memory(m$engine$pointer)
  }
  in_order <- memory_of(g, "double")
  expect_equal(in_order[["rows"]], n)
  expect_equal(in_order[["stages"]], 0)
  # the program's own arrays: the index (y's doubles are R's, which it borrows)
  expect_equal(in_order[["program"]], 8 * n + 8 * (20 + 2), tolerance = 0.1)
  # rows out of order: the data and index again, and the order while it is made
  expect_equal(memory_of(sample(g), "double")[["stages"]], 8 * n * 3)
  # single precision: the data as floats
  expect_equal(memory_of(g, "single")[["stages"]], 4 * n)
})
