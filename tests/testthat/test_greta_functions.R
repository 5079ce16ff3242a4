# greta's functions built from lockstep's ops in R (issue 5): is.greta_array(),
# identity(), imultilogit(), rdist() and aperm(). Values against base R, by
# calculate() and through a model (check_operation() in helper-lockstep.R, for
# 1 and 3 chains, with gradients against central finite differences).

# R's reference for imultilogit(): the softmax of each row of cbind(x, 0),
# written directly from its definition.
softmax_rows <- function(x) {
  latent <- cbind(x, 0)
  t(apply(latent, 1, function(row) exp(row - max(row)) / sum(exp(row - max(row)))))
}

# R's reference for rdist(): the distance of every pair of rows, by a loop.
distances_by_loop <- function(x1, x2 = x1) {
  out <- matrix(0, nrow(x1), nrow(x2))
  for (i in seq_len(nrow(x1))) for (j in seq_len(nrow(x2))) {
    out[i, j] <- sqrt(sum((x1[i, ] - x2[j, ])^2))
  }
  out
}

test_that("is.greta_array() is exported and tells greta arrays from other values", {
  x <- variable(dim = 2)
  expect_true(lockstep::is.greta_array(x))
  expect_true(is.greta_array(as_data(1:3)))
  expect_true(is.greta_array(exp(x)))
  expect_true(is.greta_array(normal(0, 1)))
  expect_false(is.greta_array(c(1, 2)))
  expect_false(is.greta_array(matrix(1, 2, 2)))
  expect_false(is.greta_array(list(node = NULL)))
})

test_that("is.greta_mcmc_list() and as.greta_model() are exported, as greta's", {
  # greta's own help-page example for is.greta_mcmc_list()
  x <- normal(0, 1)
  m <- model(x)
  draws <- mcmc(m, warmup = 20, n_samples = 20, chains = 1, verbose = FALSE)
  expect_true(lockstep::is.greta_mcmc_list(draws))
  expect_false(is.greta_mcmc_list(coda::as.mcmc.list(lapply(draws, coda::as.mcmc))))
  expect_false(is.greta_mcmc_list(as.matrix(draws)))
  expect_identical(lockstep::as.greta_model(m), m)
  expect_error(as.greta_model(x), "`x` cannot be converted to a greta_model: it is a greta_array")
  expect_error(as.greta_model(list()), "build a model from greta arrays with model\\(\\)")
})

test_that("identity() is exported as greta's generic and returns its argument", {
  x <- variable(dim = c(2, 3))
  expect_identical(lockstep::identity(x), x)
  expect_identical(lockstep::identity(3), 3)
  expect_identical(lockstep::identity(list(a = 1)), list(a = 1))
  set.seed(501)
  check_operation(function(a) lockstep::identity(a) * 2, list(a = mat(2, 3)))
})

test_that("imultilogit() is the softmax of each row with a zero appended, with gradients", {
  set.seed(502)
  x <- matrix(stats::rnorm(12, sd = 2), 4, 3)
  # on R values
  expect_equal(imultilogit(x), softmax_rows(x), tolerance = 1e-14)
  expect_equal(imultilogit(c(0.5, -1)), softmax_rows(matrix(c(0.5, -1))), tolerance = 1e-14)
  # by calculate(), from data
  out <- imultilogit(as_data(x))
  expect_equal(dim(out), c(4L, 4L))
  got <- calculate(out)[[1]]
  expect_equal(unname(got), softmax_rows(x), tolerance = 1e-12)
  expect_equal(rowSums(got), rep(1, 4), tolerance = 1e-12)
  # one column: the inverse logit and its complement
  expect_equal(as.numeric(calculate(imultilogit(as_data(matrix(c(-1, 2)))))[[1]][, 1]),
               stats::plogis(c(-1, 2)), tolerance = 1e-14)
  # large values neither overflow nor lose the small probabilities
  big <- matrix(c(800, 1000, -800, 0, 5, 1000), 2, 3)
  expect_equal(unname(calculate(imultilogit(as_data(big)))[[1]]), softmax_rows(big),
               tolerance = 1e-12)
  # in a model, from variables, with gradients (1 and 3 chains)
  check_operation(function(a) imultilogit(a), list(a = mat(3, 2)))
  check_operation(function(a) imultilogit(a), list(a = mat(1, 4)))
  check_operation(function(a, b) imultilogit(a * b), list(a = mat(2, 1), b = scalar(lower = 0)))
})

test_that("imultilogit() refuses arrays that are not matrices, and non-numbers", {
  expect_error(imultilogit(variable(dim = c(2, 2, 2))),
               "`x` of imultilogit\\(\\) must be a two-dimensional greta array \\(n x \\(k - 1\\)\\), but has dimension 2 x 2 x 2")
  expect_error(imultilogit("a"), "`x` of imultilogit\\(\\) must be a greta array or numbers, not character")
})

test_that("rdist() matches distances between rows, for one and two sets of points", {
  set.seed(503)
  x1 <- matrix(stats::rnorm(10), 5, 2)
  x2 <- matrix(stats::rnorm(6), 3, 2)
  # on R values
  expect_equal(rdist(x1), distances_by_loop(x1), tolerance = 1e-14)
  expect_equal(rdist(x1, x2), distances_by_loop(x1, x2), tolerance = 1e-14)
  # by calculate(), from data and mixed with R values
  expect_equal(unname(calculate(rdist(as_data(x1)))[[1]]), distances_by_loop(x1),
               tolerance = 1e-12)
  expect_equal(unname(calculate(rdist(as_data(x1), x2))[[1]]), distances_by_loop(x1, x2),
               tolerance = 1e-12)
  expect_equal(unname(calculate(rdist(x1, as_data(x2)))[[1]]), distances_by_loop(x1, x2),
               tolerance = 1e-12)
  # a vector is a column of points (one coordinate), as in greta
  v <- c(0, 3, -1)
  expect_equal(unname(calculate(rdist(as_data(v)))[[1]]), abs(outer(v, v, "-")),
               tolerance = 1e-14)
  expect_equal(dim(rdist(variable(dim = c(2, 2, 2)))), c(8L, 8L))
  # in a model, from variables, with gradients (1 and 3 chains): the self
  # distances' diagonal has gradient 0, not NaN
  check_operation(function(a) rdist(a), list(a = mat(4, 2)))
  check_operation(function(a, b) rdist(a, b), list(a = mat(3, 2), b = mat(2, 2)))
  check_operation(function(a) rdist(a, x2), list(a = mat(2, 2)))
  check_operation(function(a, s) exp(-rdist(a) / s), list(a = mat(3, 3), s = scalar(lower = 0)))
})

test_that("rdist() refuses points of different dimensions and non-numbers", {
  expect_error(rdist(variable(dim = c(3, 2)), matrix(0, 2, 3)),
               "`x1` and `x2` of rdist\\(\\) must have the same number of columns, but have 2 and 3")
  expect_error(rdist(variable(dim = c(3, 2)), "a"),
               "`x2` of rdist\\(\\) must be a greta array or numbers, not character")
  expect_warning(rdist(variable(dim = c(3, 2)), compact = TRUE), "`compact` is ignored")
})

test_that("aperm() permutes the dimensions of greta arrays as base R does", {
  set.seed(504)
  a <- array(stats::rnorm(24), c(2, 3, 4))
  got <- calculate(aperm(as_data(a), c(3, 1, 2)))[[1]]
  expect_equal(dim(got), c(4L, 2L, 3L))
  expect_equal(as.numeric(got), as.numeric(aperm(a, c(3, 1, 2))))
  m <- matrix(stats::rnorm(6), 2, 3)
  expect_equal(unname(calculate(aperm(as_data(m)))[[1]]), t(m))
  expect_equal(dim(aperm(variable(dim = c(2, 3, 4)))), c(4L, 3L, 2L))
  # identity permutation: the same array
  x <- variable(dim = c(2, 3))
  expect_identical(aperm(x, 1:2), x)
  check_operation(function(x) aperm(x, c(2, 3, 1)), list(x = list(dim = c(2, 3, 2))))
  check_operation(function(x) aperm(x, c(2, 1)) * 3, list(x = mat(3, 2)))
})

test_that("aperm() refuses permutations that do not fit", {
  x <- variable(dim = c(2, 3))
  expect_error(aperm(x, c(1, 3)),
               "`perm` of aperm\\(\\) must be a permutation of 1:2 \\(`a` has dimension 2 x 3\\), not c\\(1, 3\\)")
  expect_error(aperm(x, c(1, 2, 3)), "`perm` of aperm\\(\\) must be a permutation of 1:2")
  expect_error(aperm(x, c(1, 1)), "`perm` of aperm\\(\\) must be a permutation of 1:2")
  expect_error(aperm(x, c("a", "b")), "`perm` of aperm\\(\\) must be a permutation")
  expect_error(aperm(x, 2:1, resize = FALSE), "only `resize = TRUE`")
})

# base R's eigenvectors signed as lockstep signs them: each column's largest
# element positive.
signed_vectors <- function(v) {
  for (j in seq_len(ncol(v))) {
    big <- which.max(abs(v[, j]))
    if (v[big, j] < 0) v[, j] <- -v[, j]
  }
  v
}

test_that("eigen() of a symmetric greta array matches base R's, reading the lower triangle", {
  set.seed(505)
  z <- matrix(stats::rnorm(16), 4, 4)
  s <- crossprod(z) + diag(1:4)
  e <- calculate(eigen(as_data(s))$values, eigen(as_data(s))$vectors)
  want <- base::eigen(s, symmetric = TRUE)
  expect_equal(as.numeric(e[[1]]), want$values, tolerance = 1e-12)
  expect_equal(dim(e[[1]]), c(4L, 1L))
  expect_equal(unname(e[[2]]), signed_vectors(want$vectors), tolerance = 1e-10)
  # not symmetric: the lower triangle, as base R with symmetric = TRUE
  lower_only <- z
  got <- calculate(eigen(as_data(lower_only))$values)[[1]]
  expect_equal(as.numeric(got), base::eigen(lower_only, symmetric = TRUE)$values,
               tolerance = 1e-12)
  expect_null(eigen(as_data(s), only.values = TRUE)$vectors)
  # R values: base R
  expect_identical(eigen(s), base::eigen(s))
  # in a model, from variables, with gradients (1 and 3 chains): the values,
  # and the vectors through their squares (which do not depend on the sign)
  check_operation(function(a) eigen(a %*% t(a) + diag(c(0, 2, 4)), symmetric = TRUE)$values,
                  list(a = mat(3, 3)), tolerance = 1e-8)
  check_operation(function(a) eigen(a + t(a) + diag(c(0, 3, 6)), symmetric = TRUE)$vectors^2,
                  list(a = mat(3, 3)), tolerance = 1e-8)
  check_operation(function(a) eigen(a, symmetric = TRUE)$values, list(a = mat(2, 2)),
                  tolerance = 1e-8)
})

test_that("eigen() refuses non-square and non-symmetric requests", {
  expect_error(eigen(variable(dim = c(2, 3))),
               "`eigen\\(\\)` needs `x` to be a square matrix, but it has dimension 2 x 3")
  expect_error(eigen(variable(dim = c(2, 2)), symmetric = FALSE),
               "symmetric matrices only: `symmetric` must be TRUE")
  expect_error(eigen(variable(dim = c(2, 2)), only.values = "yes"),
               "`only.values` of eigen\\(\\) must be TRUE or FALSE")
})
