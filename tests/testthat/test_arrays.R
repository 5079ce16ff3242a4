# Array functions of greta arrays (R/arrays.R), each compared with base R on
# random values, with gradients against central finite differences, through
# check_operation() (helper-lockstep.R): `f` runs on greta arrays and on the R
# arrays of the same values.

is_ga <- function(x) inherits(x, "greta_array")

# zeros()/ones() for greta arrays, array(0/1, ...) for R's side of a check.
zeros_like <- function(like, ...) if (is_ga(like)) zeros(...) else array(0, c(...))

test_that("x[i] <- value matches R, with gradients to x and to value", {
  set.seed(401)
  # z is an operation (variables cannot have elements replaced)
  check_operation(function(a, b) { z <- a * 1; z[c(2, 4)] <- b; z }, list(a = vec(5), b = vec(2)))
  check_operation(function(a, b) { z <- exp(a); z[3] <- b; z * 2 }, list(a = vec(4), b = scalar()))
  # a scalar or a shorter vector recycled
  check_operation(function(a, b) { z <- a + 0; z[1:4] <- b; z }, list(a = vec(5), b = scalar()))
  check_operation(function(a, b) { z <- a + 0; z[1:4] <- b; z }, list(a = vec(5), b = vec(2)))
  # logical and negative indices, and a repeated index (the last one wins)
  check_operation(function(a, b) { z <- a + 0; z[c(TRUE, FALSE)] <- b; z }, list(a = vec(6), b = vec(3)))
  check_operation(function(a, b) { z <- a + 0; z[-2] <- b; z }, list(a = vec(3), b = vec(2)))
  check_operation(function(a, b) { z <- a + 0; z[c(1, 1)] <- b; z }, list(a = vec(3), b = vec(2)))
  # numbers as the value
  check_operation(function(a) { z <- a * 2; z[2:3] <- c(-1, 5); z }, list(a = vec(4)))
  # every element replaced: x gets no gradient
  check_operation(function(a, b) { z <- a + 1; z[] <- b; z }, list(a = vec(2), b = vec(2)))
})

test_that("x[i, j] <- value and matrix indices match R", {
  set.seed(402)
  check_operation(function(a, b) { z <- a - 1; z[2, ] <- b; z }, list(a = mat(3, 4), b = mat(1, 4)))
  check_operation(function(a, b) { z <- a - 1; z[, 3] <- b; z }, list(a = mat(3, 4), b = vec(3)))
  check_operation(function(a, b) { z <- a * a; z[2:3, c(1, 4)] <- b; z }, list(a = mat(3, 4), b = mat(2, 2)))
  check_operation(function(a, b) { z <- a + 0; z[cbind(c(1, 3), c(2, 1))] <- b; z },
                  list(a = mat(3, 2), b = vec(2)))
  # a 3-d array
  check_operation(function(a, b) { z <- a + 0; z[2, , 1] <- b; z },
                  list(a = list(dim = c(2, 3, 2)), b = vec(3)))
  # parameters embedded in a matrix of zeros, then used
  check_operation(function(s, r) {
    S <- zeros_like(s, 2, 2)
    S[1, 1] <- s[1]
    S[2, 2] <- s[2]
    S[1, 2] <- S[2, 1] <- r
    S %*% c(1, 2)
  }, list(s = vec(2, lower = 0), r = scalar()))
  # data with a greta value
  x <- matrix(rnorm(6), 3, 2)
  check_operation(function(x, b) { z <- if (is_ga(b)) as_data(x) else x; z[2, ] <- b; z },
                  list(x = x, b = mat(1, 2)))
})

test_that("replacement refuses variables, bad indices and values of the wrong length", {
  a <- variable(dim = 3)
  expect_error(a[1] <- 3, "cannot replace elements of a variable greta array")
  z <- a * 1
  expect_error(z["a"] <- 1, "index `i` of a greta array must be numbers or logicals, not character")
  expect_error(z[4] <- 1, "index out of range.*greta arrays cannot grow")
  expect_error(z[1:3] <- c(1, 2), "number of elements to replace \\(3\\) is not a multiple of the length of `value` \\(2\\)")
  expect_error(z[1] <- "b", "`value` must be a greta array or numbers")
  m <- variable(dim = c(2, 2)) + 0
  expect_error(m[1, "x"] <- 1, "index `j` .* not character")
  expect_error(m[3, 1] <- 1, "out of range|invalid index")
  # nothing selected: unchanged
  z2 <- z
  z2[integer(0)] <- 1
  expect_identical(z2, z)
})

test_that("dim<-, greta_array(), zeros() and ones() match R", {
  set.seed(403)
  check_operation(function(a) { dim(a) <- c(2, 3); a }, list(a = vec(6)))
  check_operation(function(a) { dim(a) <- c(3, 2, 2); a * 2 }, list(a = mat(4, 3)))
  check_operation(function(a) { dim(a) <- NULL; a }, list(a = mat(2, 3)))
  # a scalar fills the new dimensions
  check_operation(function(s) if (is_ga(s)) greta_array(s, dim = c(2, 3)) else array(s, c(2, 3)),
                  list(s = scalar()))
  check_operation(function(a) if (is_ga(a)) greta_array(a, dim = c(3, 2)) else array(a, c(3, 2)),
                  list(a = vec(6)))
  expect_equal(dim(zeros(3)), c(3L, 1L))
  expect_equal(dim(zeros(2, 4)), c(2L, 4L))
  expect_equal(dim(ones(c(2, 3, 2))), c(2L, 3L, 2L))
  expect_equal(engine_values(zeros(2, 3)), rep(0, 6))
  expect_equal(engine_values(ones(2, 2) * 3), rep(3, 4))
  expect_equal(engine_values(greta_array(1:3, dim = c(3, 2))), as.numeric(array(1:3, c(3, 2))))
  expect_equal(dim(greta_array(pi, dim = c(2, 4))), c(2L, 4L))
  expect_equal(lockstep:::get_node(zeros(2))$type, "data")
  expect_error(zeros(), "give the dimensions")
  expect_error(zeros(2, 0), "`dimensions` must be a vector of positive whole numbers")
  expect_error(greta_array("a", 2), "`data` must be numeric or logical")
  x <- variable(dim = 6)
  expect_error(dim(x) <- c(4, 2), "dims \\[product 8\\] do not match the length of the greta array \\[6\\]")
  expect_error(dim(x) <- c(2, NA), "`dim` must be a vector of positive whole numbers")
})

test_that("rep() matches R with times, each and length.out, as a column vector", {
  set.seed(404)
  check_operation(function(a) rep(a, 3), list(a = vec(2)))
  check_operation(function(a) rep(a, times = c(2, 0, 1)), list(a = vec(3)))
  check_operation(function(a) rep(a, each = 2), list(a = mat(2, 2)))
  check_operation(function(a) rep(a, each = 2, length.out = 7), list(a = vec(3)))
  check_operation(function(a) rep(a, length.out = 5) * rep(a[1:2], 3)[1:5], list(a = vec(3)))
  expect_equal(dim(rep(variable(dim = c(2, 3)), 2)), c(12L, 1L))
  expect_error(rep(variable(dim = 2), times = -1), "invalid arguments to rep\\(\\)")
  expect_error(rep(variable(dim = 2), times = 0), "at least one element")
})

test_that("head() and tail() match R's for matrices, vectors and arrays", {
  set.seed(405)
  check_operation(function(a) head(a), list(a = mat(8, 2)))
  check_operation(function(a) tail(a, 3), list(a = mat(8, 2)))
  check_operation(function(a) head(a, -5), list(a = vec(7)))
  check_operation(function(a) tail(a, -2), list(a = vec(4)))
  check_operation(function(a) head(a, 2), list(a = list(dim = c(3, 2, 2))))
  check_operation(function(a) head(a, c(2, 1)), list(a = mat(3, 3)))
  expect_equal(dim(head(variable(dim = c(10, 3)))), c(6L, 3L))
  expect_equal(dim(tail(variable(dim = 4))), c(4L, 1L))
  expect_error(head(variable(dim = 3), "a"), "`n` of head\\(\\) must be whole numbers")
  expect_error(head(variable(dim = 3), 0), "no elements")
})

test_that("abind() binds along existing and new dimensions, as abind::abind does", {
  set.seed(406)
  check_operation(function(a, b) if (is_ga(a)) abind(a, b, along = 1) else rbind(a, b),
                  list(a = mat(2, 3), b = mat(1, 3)))
  check_operation(function(a, b) if (is_ga(a)) abind(a, b) else cbind(a, b),
                  list(a = mat(2, 3), b = mat(2, 2)))
  check_operation(function(a, b) if (is_ga(a)) abind(a, b, along = 3) else array(c(a, b), c(2, 3, 2)),
                  list(a = mat(2, 3), b = mat(2, 3)))
  # a new first dimension: element [k, i, j] is argument k's [i, j]
  check_operation(function(a, b) {
    if (is_ga(a)) abind(a, b, along = 0) else aperm(array(c(a, b), c(2, 2, 2)), c(3, 1, 2))
  }, list(a = mat(2, 2), b = mat(2, 2)))
  # 3-d arrays along their second dimension, with R numbers
  x <- array(rnorm(8), c(2, 2, 2))
  check_operation(function(a, x) {
    if (!is_ga(a)) return(aperm(array(c(aperm(a, c(1, 3, 2)), aperm(x, c(1, 3, 2))), c(2, 2, 5)), c(1, 3, 2)))
    abind(a, x, along = 2)
  }, list(a = list(dim = c(2, 3, 2)), x = x))
  # a matrix bound to a 3-d array gets a dimension of extent 1
  check_operation(function(a, b) if (is_ga(a)) abind(a, b, along = 3) else array(c(a, b), c(2, 2, 3)),
                  list(a = list(dim = c(2, 2, 2)), b = mat(2, 2)))
  # R arrays alone go to abind::abind
  expect_equal(abind(matrix(1:4, 2), matrix(5:8, 2), along = 1), abind::abind(matrix(1:4, 2), matrix(5:8, 2), along = 1))
  expect_error(abind(variable(dim = c(2, 3)), variable(dim = c(3, 3)), along = 2),
               "same dimensions except along dimension 2.*dimension 1 has extents 2, 3")
  expect_error(abind(variable(dim = c(2, 2)), variable(dim = c(2, 2)), along = "a"),
               "`along` of abind\\(\\) must be a single number")
  expect_warning(abind(variable(dim = 2), variable(dim = 2), hier.names = TRUE), "only `along`")
})

test_that("diag() extracts and builds diagonals as base R does, and diag<- replaces them", {
  set.seed(407)
  check_operation(function(a) diag(a), list(a = mat(3, 3)))
  check_operation(function(a) diag(a), list(a = mat(2, 4)))
  # from a vector: R's diag() of a column matrix would extract, so R's side
  # takes the vector
  check_operation(function(a) diag(if (is_ga(a)) a else as.numeric(a)), list(a = vec(3)))
  check_operation(function(a) diag(if (is_ga(a)) t(a) else as.numeric(a)) %*% c(1, 2), list(a = vec(2)))
  check_operation(function(a) diag(if (is_ga(a)) a else as.numeric(a), 4, 3), list(a = vec(2)))
  check_operation(function(s) diag(s, 3), list(s = scalar()))
  check_operation(function(a, b) { z <- a + 0; diag(z) <- b; z }, list(a = mat(3, 3), b = vec(3)))
  check_operation(function(a, b) { z <- a + 0; diag(z) <- b; z }, list(a = mat(2, 3), b = scalar()))
  s <- variable()
  expect_identical(diag(s), s)
  expect_equal(dim(diag(variable(dim = c(1, 4)))), c(4L, 4L))
  # R values keep base R's diag()
  expect_identical(diag(3), base::diag(3))
  expect_identical(diag(nrow = 2), base::diag(nrow = 2))
  expect_identical(diag(c(2, 5)), base::diag(c(2, 5)))
  expect_identical(diag(matrix(1:6, 2)), base::diag(matrix(1:6, 2)))
  expect_identical(diag(2, 3, 1), base::diag(2, 3, 1))
  m <- matrix(0, 2, 2)
  diag(m) <- 1:2
  expect_identical(m, base::diag(1:2) + 0)
  expect_error(diag(variable(dim = c(2, 2, 2))), "two-dimensional")
  expect_error(diag(variable(dim = c(2, 2)), 3), "`nrow` and `ncol` cannot be given")
  expect_error(diag(variable(dim = 2), nrow = -1), "`nrow` must be a single positive whole number")
  z <- variable(dim = c(3, 3)) + 0
  expect_error(diag(z) <- c(1, 2), "`value` of `diag<-` must have length 1 or 3")
})

test_that("outer() and %o% match R for every operator, with gradients", {
  set.seed(408)
  check_operation(function(a, b) outer(a, b), list(a = vec(3), b = vec(2)))
  check_operation(function(a, b) a %o% b, list(a = vec(2), b = vec(3)))
  for (FUN in c("+", "-", "/")) {
    check_operation(function(a, b) outer(a, b, FUN), list(a = vec(3), b = vec(2, lower = 0.5)))
  }
  check_operation(function(a, b) outer(a, b, `^`), list(a = vec(2, lower = 0), b = vec(3)))
  check_operation(function(a) outer(a, c(1, -2, 0.5), "*"), list(a = vec(2)))
  check_operation(function(a) outer(c(3, 4), a, "-"), list(a = vec(3)))
  # a matrix: its dimensions come first, as in R
  check_operation(function(a, b) outer(a, if (is_ga(b)) b else as.numeric(b)), list(a = mat(2, 2), b = vec(3)))
  expect_equal(dim(outer(variable(dim = 3), variable(dim = 2))), c(3L, 2L))
  expect_equal(dim(outer(t(variable(dim = 3)), variable(dim = 2))), c(3L, 2L))
  expect_equal(dim(outer(variable(dim = c(2, 3)), variable(dim = 2))), c(2L, 3L, 2L))
  expect_identical(outer(1:3, 1:2), base::outer(1:3, 1:2))
  expect_identical(1:2 %o% 1:3, base::outer(1:2, 1:3))
  expect_error(outer(variable(dim = 2), 1:2, "max"), "`FUN` of outer\\(\\) on greta arrays must be one of")
})

test_that("kronecker() and %x% match R, with gradients", {
  set.seed(409)
  check_operation(function(a, b) kronecker(a, b), list(a = mat(2, 2), b = mat(3, 2)))
  check_operation(function(a, b) a %x% b, list(a = mat(1, 3), b = vec(2)))
  check_operation(function(a, b) kronecker(a, b, "+"), list(a = mat(2, 3), b = mat(2, 2)))
  check_operation(function(a, b) kronecker(a, b, FUN = `/`), list(a = mat(2, 2), b = mat(2, 1, lower = 0.5)))
  X <- matrix(rnorm(4), 2, 2)
  check_operation(function(a, X) kronecker(X, a), list(a = mat(2, 3), X = X))
  check_operation(function(a) kronecker(diag(2), a), list(a = mat(2, 2)))
  expect_equal(dim(kronecker(variable(dim = c(2, 3)), variable(dim = c(4, 5)))), c(8L, 15L))
  expect_identical(kronecker(diag(2), matrix(1:4, 2)), base::kronecker(diag(2), matrix(1:4, 2)))
  expect_identical(diag(2) %x% matrix(1:4, 2), base::kronecker(diag(2), matrix(1:4, 2)))
  expect_error(kronecker(variable(dim = c(2, 2, 2)), variable(dim = 2)), "two-dimensional arguments.*`X`")
  expect_error(kronecker(variable(dim = 2), 1, "pmax"), "`FUN` of kronecker\\(\\)")
})

test_that("apply() matches R over rows, columns and margins of arrays, for greta's functions", {
  set.seed(410)
  funs <- c("sum", "max", "mean", "min", "prod", "cumsum", "cumprod")
  for (fun in funs) {
    for (margin in 1:2) {
      check_operation(function(a) apply(a, margin, fun), list(a = mat(3, 4)))
    }
  }
  # functions rather than names
  check_operation(function(a) apply(a, 1, max) + apply(a, 1, sum), list(a = mat(3, 2)))
  # arrays, one or several margins
  arr <- list(dim = c(2, 3, 2))
  check_operation(function(a) apply(a, 3, "sum"), list(a = arr))
  check_operation(function(a) apply(a, 2, "mean"), list(a = arr))
  check_operation(function(a) apply(a, c(1, 3), "max"), list(a = arr))
  check_operation(function(a) apply(a, c(3, 1), "prod"), list(a = arr))
  check_operation(function(a) apply(a, 2, "cumsum"), list(a = arr))
  expect_equal(dim(apply(variable(dim = c(4, 3)), 1, "max")), c(4L, 1L))
  expect_equal(dim(apply(variable(dim = c(4, 3)), 1, "cumsum")), c(3L, 4L))
  expect_equal(dim(apply(variable(dim = c(2, 3, 4)), c(1, 3), "sum")), c(2L, 4L))
  # R values keep base R's apply()
  m <- matrix(rnorm(6), 2)
  expect_identical(apply(m, 1, function(r) r[2]), base::apply(m, 1, function(r) r[2]))
  a <- variable(dim = c(3, 4))
  expect_error(apply(a, 1, "sd"), "`FUN` of apply\\(\\) on a greta array must be one of \"sum\"")
  expect_error(apply(a, 1, function(x) x), "`FUN` of apply\\(\\)")
  expect_error(apply(a, 3, "sum"), "`MARGIN` of apply\\(\\) on a greta array must be distinct dimension numbers between 1 and 2")
  expect_error(apply(a, "rows", "sum"), "`MARGIN`")
  expect_error(apply(a, variable(), "sum"), "`MARGIN` of apply\\(\\) must be R numbers, not a greta array")
})

test_that("tapply() matches R by group", {
  set.seed(411)
  g <- c(2, 1, 2, 3, 3, 1, 2)
  for (fun in c("sum", "max", "mean", "min", "prod")) {
    check_operation(function(a) tapply(a, g, fun), list(a = vec(7)))
  }
  # groups as strings and factors (sorted, as R's), NA left out, FUN as a function
  s <- c("b", "a", "b", "c", "a", "b")
  check_operation(function(a) tapply(a, s, sum), list(a = vec(6)))
  check_operation(function(a) tapply(a, factor(s, levels = c("c", "b", "a")), mean), list(a = vec(6)))
  check_operation(function(a) tapply(a, c(1, NA, 2, 2, 1), "sum"), list(a = vec(5)))
  check_operation(function(a) tapply(a, c(1, NA, 2, 2, 1), "mean"), list(a = vec(5)))
  check_operation(function(a) tapply(a, c(3, 3, NA, 1, 3), "max"), list(a = vec(5)))
  expect_equal(dim(tapply(variable(dim = 7), g, "sum")), c(3L, 1L))
  expect_identical(tapply(1:4, c(1, 2, 1, 2), sum), base::tapply(1:4, c(1, 2, 1, 2), sum))
  y <- variable(dim = 4)
  expect_error(tapply(variable(dim = c(2, 2)), 1:2, "sum"), "`X` of tapply\\(\\) must be a greta column vector \\(n x 1\\), but has dimension 2 x 2")
  expect_error(tapply(y, 1:3, "sum"), "`INDEX` of tapply\\(\\) must have one value per element of `X` \\(4\\), but has 3")
  expect_error(tapply(y, as_data(1:4), "sum"), "`INDEX` of tapply\\(\\) must be R values, not a greta array")
  # several groupings: base R's table (test_greta_scripts.R), empty cells need `default`
  expect_error(tapply(y, list(1:4, 1:4), "sum"), "12 of the 16 combinations .* `default = 0`")
  expect_identical(dim(tapply(y, list(1:4, 1:4), "sum", default = 0)), c(4L, 4L))
  expect_error(tapply(y, list(1:4, 1:3), "sum"), "one value per element of `X` \\(4\\)")
  expect_error(tapply(y, 1:4, "median"), "`FUN` of tapply\\(\\) on a greta array must be one of")
})

# The gradient of sum(dout * f(x)) in x, written by hand, for f a reduction
# `fun` of x's elements by group (`group[i]` in 1..G, or NA: left out): max
# and min send it to the first maximum or minimum (which.max()'s).
grouped_gradient <- function(x, group, fun, dout) {
  grad <- numeric(length(x))
  for (g in seq_along(dout)) {
    i <- which(group == g)
    grad[i] <- switch(fun,
      sum = dout[g],
      mean = dout[g] / length(i),
      prod = dout[g] * prod(x[i]) / x[i],
      max = dout[g] * (seq_along(i) == which.max(x[i])),
      min = dout[g] * (seq_along(i) == which.min(x[i])))
  }
  grad
}

# y ~ normal(f(x), 1) for one variable x of dimension `dim` (so the free state
# is x): the engine's values of f(x), log density and gradient against base R's
# r_f(x) and the gradient grouped_gradient() gives for the grouping `group`
# of x's elements; finite differences check a few coordinates too.
check_grouped <- function(f, r_f, dim, group, fun, chains = c(1, 3)) {
  x <- variable(dim = dim)
  out <- f(x)
  y_values <- stats::rnorm(length(out))
  y <- as_data(array(y_values, dim = dim(out)))
  distribution(y) <- normal(out, 1)
  m <- model(out)
  for (n_chains in chains) {
    free <- random_free(m, n_chains)
    want <- t(apply(free, 1, function(z) as.numeric(r_f(array(z, dim)))))
    expect_equal(unname(traced_values(m, free)), unname(want), tolerance = 1e-12)
    got <- engine_density(m, free)
    lp <- apply(want, 1, function(o) sum(stats::dnorm(y_values, o, 1, log = TRUE)))
    expect_equal(got$log_density, lp, tolerance = 1e-12)
    grad <- t(vapply(seq_len(n_chains), function(k) {
      grouped_gradient(free[k, ], group, fun, y_values - want[k, ])
    }, numeric(ncol(free))))
    expect_equal(got$gradient, grad, tolerance = 1e-10)
    columns <- sample(ncol(free), 10)
    numeric <- finite_difference_gradient(m, free, columns = columns)
    expect_lt(max(abs(got$gradient[, columns] - numeric)), 1e-6 * max(1, abs(numeric)))
  }
}

test_that("tapply() on 2000 groups matches R's values, with gradients", {
  set.seed(412)
  n <- 5000
  G <- 2000
  # every group present, in a shuffled order, and some elements left out
  INDEX <- sample(c(seq_len(G), sample(G, n - G, replace = TRUE)))
  INDEX[sample(n, 40)] <- NA
  group <- match(INDEX, sort(unique(INDEX)))
  for (fun in c("sum", "max", "mean", "min", "prod")) {
    check_grouped(function(x) tapply(x, INDEX, fun),
                  function(x) base::tapply(x, INDEX, fun), c(n, 1L), group, fun)
  }
})

test_that("apply() over 2000 slices matches R's values, with gradients", {
  set.seed(413)
  for (fun in c("sum", "max", "mean", "min", "prod")) {
    # rows of a matrix (elements of a slice are not next to each other), and
    # two margins of an array
    check_grouped(function(x) apply(x, 1, fun), function(x) base::apply(x, 1, fun),
                  c(2000L, 3L), rep(seq_len(2000), 3), fun)
    d <- c(20L, 3L, 100L)
    slice <- as.vector(array(seq_len(20), d) + 20 * (slice.index(array(0, d), 3) - 1))
    check_grouped(function(x) apply(x, c(1, 3), fun), function(x) base::apply(x, c(1, 3), fun),
                  d, slice, fun)
  }
})

test_that("tapply() and apply() over 10^4 groups are a handful of IR nodes", {
  set.seed(414)
  G <- 10000
  INDEX <- c(seq_len(G), sample(G, 2 * G, replace = TRUE))
  # the ops of a model of y ~ normal(f(x), 1), x a new variable (a model holds
  # every node connected to its arrays)
  node_ops <- function(f, dim) {
    out <- f(variable(dim = dim))
    y <- as_data(array(0, dim = dim(out)))
    distribution(y) <- normal(out, 1)
    vapply(model(out)$ir$nodes, function(node) node$op, "")
  }
  for (fun in c("sum", "max", "mean", "min", "prod")) {
    op <- paste0("segment_", if (fun == "mean") "sum" else fun)
    ops <- node_ops(function(x) tapply(x, INDEX, fun), length(INDEX))
    expect_lte(length(ops), 10)
    expect_equal(sum(ops == op), 1)
    ops <- node_ops(function(x) apply(x, 1, fun), c(G, 3))
    expect_lte(length(ops), 10)
    if (!fun %in% c("sum", "mean")) expect_equal(sum(ops == op), 1)  # else rowSums()
    ops <- node_ops(function(x) apply(x, c(1, 3), fun), c(G, 2, 2))
    expect_lte(length(ops), 10)
    expect_equal(sum(ops == op), 1)
  }
})

test_that("identity() and str() work on greta arrays; cummax and cummin give column vectors", {
  x <- variable(dim = c(2, 3))
  expect_identical(identity(x), x)
  expect_output(str(x), "'greta_array' variable num \\[1:2, 1:3\\] \\?")
  expect_output(str(as_data(c(1.5, 2, 3))), "'greta_array' data num \\[1:3, 1\\] 1.5 2.0 3.0")
  # greta documents cummax() and cummin() but refuses them; lockstep computes
  # them (test_operations.R checks their values and gradients)
  expect_equal(dim(cummax(x)), c(6L, 1L))
  expect_equal(dim(cummin(x)), c(6L, 1L))
})

test_that("calculate() sees through replacement, reshaping and diagonals to the values given", {
  x <- as_data(c(1, 2, 3))
  b <- variable()
  z <- x
  z[2] <- b
  w <- greta_array(z, dim = c(1, 3))
  d <- diag(z)
  expect_equal(as.numeric(calculate(z, values = list(b = 10))$z), c(1, 10, 3))
  # x given a new value: the result follows it (nothing was folded into constants)
  out <- calculate(z, w, d, values = list(b = 10, x = c(4, 5, 6)))
  expect_equal(as.numeric(out$z), c(4, 10, 6))
  expect_equal(dim(out$w), c(1L, 3L))
  expect_equal(out$d, diag(c(4, 10, 6)))
})

test_that("print() shows an operation's values that do not depend on variables, as greta", {
  # greta's get-started example: the known zeros and ones of a partly known array
  z <- zeros(3, 3)
  z[, 1] <- ones(3)
  z[, 2] <- normal(0, 1, dim = 3)
  out <- capture.output(print(z))
  expect_equal(out[1], "greta array <operation>")
  expect_equal(gsub(" +", " ", trimws(out[4:6])), c("[1,] 1 ? 0", "[2,] 1 ? 0", "[3,] 1 ? 0"))
  # an operation of data alone is all known; one of a variable all unknown
  expect_output(print(as_data(c(1, 2, 3)) * 2), "\\[3,\\] +6")
  x <- variable()
  expect_false(any(grepl("[0-9] *$", capture.output(print(x * 0))[-1])))
  # an operation whose engine cannot run on NaN (here chol()) prints as unknown
  s <- wishart(5, diag(2))
  expect_output(print(chol(s)), "\\?")
})

test_that("print() names greta arrays as greta does, and shows unknown values as ?", {
  header <- function(x) capture.output(print(x))[1]
  expect_equal(header(as_data(c(1, 2))), "greta array <data>")
  expect_equal(header(variable()), "greta array <variable>")
  expect_equal(header(normal(0, 1, dim = 2)),
               "greta array <variable following a normal distribution>")
  expect_equal(header(exp(variable())), "greta array <operation>")
  # an unknown stays unknown through any function (atanh() of one showed Inf)
  x <- normal(0, 1, dim = 3)
  for (f in list(atanh, exp, log, function(v) v * 0, function(v) 1 / v)) {
    shown <- capture.output(print(f(x)))[-(1:3)]
    expect_true(all(grepl("^\\[[0-9],\\] +\\? *$", shown)), info = paste(shown, collapse = "|"))
  }
  # data keeps R's numbers
  expect_equal(trimws(capture.output(print(as_data(c(1.5, 2))))[4:5]), c("[1,]  1.5", "[2,]  2.0"))
})

test_that("as.unknowns() prints NA as ? and leaves known values, as greta's", {
  u <- as.unknowns(matrix(c(1, NA, 3, NA), 2))
  expect_s3_class(u, "unknowns")
  expect_identical(as.unknowns(u), u)
  out <- capture.output(print(u))
  expect_equal(gsub(" +", " ", trimws(out[2:3])), c("[1,] 1 3", "[2,] ? ?"))
  expect_equal(dim(as.unknowns(c(NA, 2))), c(2L, 1L))
  expect_invisible(print(u))
  expect_error(as.unknowns(list(1)), "`x` of as.unknowns\\(\\) must be a numeric array")
})
