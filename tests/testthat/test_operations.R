# Operations on greta arrays, each used inside a model and compared with the
# same computation done by R on the constrained values: the engine's values of
# the result, the model's log density (data ~ normal(f(params), 1) plus the
# log Jacobians of the parameters) and its gradient: check_operation() and the
# shapes vec(), mat() and scalar() are in helper-lockstep.R.

test_that("+ - * / match R elementwise", {
  set.seed(301)
  check_operation(function(a, b) a + b, list(a = vec(4), b = vec(4)))
  check_operation(function(a, b) a - b, list(a = mat(2, 3), b = mat(2, 3)))
  check_operation(function(a, b) a * b, list(a = vec(5), b = vec(5)))
  check_operation(function(a, b) a / b, list(a = vec(3), b = vec(3, lower = 0.5)))
  check_operation(function(a, b) (a + b) * (a - b) / (b + 2), list(a = vec(3), b = vec(3, lower = 0)))
})

test_that("operators mix greta arrays and R numbers on either side", {
  set.seed(302)
  w <- matrix(rnorm(6), 3, 2)
  check_operation(function(a, w) a * w + 1, list(a = mat(3, 2), w = w))
  check_operation(function(a, w) w - a, list(a = mat(3, 2), w = w))
  check_operation(function(a, w) w / a, list(a = mat(3, 2, lower = 0.2), w = w))
  check_operation(function(a) 2 - a / 4, list(a = vec(3)))
  check_operation(function(a) 3 / a, list(a = vec(3, upper = -0.1)))
})

test_that("scalars broadcast against arrays of any dimension", {
  set.seed(303)
  check_operation(function(s, a) s + a, list(s = scalar(), a = mat(2, 3)))
  check_operation(function(s, a) a * s, list(s = scalar(), a = vec(4)))
  check_operation(function(s, a) s / a, list(s = scalar(lower = 0), a = vec(4, lower = 0)))
  check_operation(function(s, a) a - s, list(s = scalar(), a = mat(3, 2)))
  # a scalar variable broadcast against data
  x <- rnorm(6)
  check_operation(function(s, x) x * s - s, list(s = scalar(), x = x))
  # a scalar greta array of data broadcast against a variable
  check_operation(function(a) a * (if (inherits(a, "greta_array")) as_data(2.5) else 2.5),
                  list(a = vec(3)))
})

test_that("unary minus and unary plus match R", {
  set.seed(304)
  check_operation(function(a) -a, list(a = vec(4)))
  check_operation(function(a) +a, list(a = vec(2)))
  check_operation(function(a, b) -(a * b) + -b, list(a = vec(3), b = vec(3)))
})

test_that("exp, log, log1p, sqrt and ilogit match R", {
  set.seed(305)
  check_operation(function(a) exp(a), list(a = vec(4)))
  check_operation(function(a) log(a), list(a = vec(4, lower = 0)))
  check_operation(function(a) log1p(a), list(a = vec(4, lower = -1)))
  check_operation(function(a) sqrt(a), list(a = mat(2, 2, lower = 0)))
  check_operation(function(a) ilogit(a), list(a = vec(5)))
  expect_equal(ilogit(c(-2, 0, 3)), plogis(c(-2, 0, 3)))
  # large arguments, where a naive ilogit overflows
  check_operation(function(a) ilogit(a * 40), list(a = vec(4)))
  check_operation(function(a, b) log(exp(a) + sqrt(b)) * ilogit(a - b),
                  list(a = vec(3), b = vec(3, lower = 0)))
})

test_that("R's Math functions match R on greta arrays, with gradients", {
  set.seed(314)
  # steps: gradient 0 (random values never sit on a step)
  check_operation(function(a) abs(a), list(a = vec(4)))
  check_operation(function(a) sign(a) * a, list(a = vec(4)))
  check_operation(function(a) ceiling(a * 3) + a, list(a = vec(4)))
  check_operation(function(a) floor(a * 3) + a, list(a = mat(2, 3)))
  check_operation(function(a) round(a * 3) * a, list(a = vec(5)))
  check_operation(function(a) trunc(a * 3) - a, list(a = vec(4)))
  check_operation(function(a) expm1(a), list(a = vec(4)))
  check_operation(function(a) log10(a), list(a = vec(3, lower = 0)))
  check_operation(function(a) log2(a), list(a = vec(3, lower = 0)))
  check_operation(function(a) cos(a), list(a = vec(4)))
  check_operation(function(a) sin(a), list(a = mat(2, 2)))
  check_operation(function(a) tan(a), list(a = vec(4, lower = -1.2, upper = 1.2)))
  check_operation(function(a) acos(a), list(a = vec(4, lower = -1, upper = 1)))
  check_operation(function(a) asin(a), list(a = vec(4, lower = -1, upper = 1)))
  check_operation(function(a) atan(a), list(a = vec(4)))
  check_operation(function(a) cosh(a), list(a = vec(4)))
  check_operation(function(a) sinh(a), list(a = vec(4)))
  check_operation(function(a) tanh(a), list(a = vec(4)))
  check_operation(function(a) acosh(a), list(a = vec(4, lower = 1)))
  check_operation(function(a) asinh(a), list(a = vec(4)))
  check_operation(function(a) atanh(a), list(a = vec(4, lower = -1, upper = 1)))
  check_operation(function(a) cospi(a), list(a = vec(4)))
  check_operation(function(a) sinpi(a), list(a = vec(4)))
  check_operation(function(a) tanpi(a), list(a = vec(4, lower = -0.45, upper = 0.45)))
  check_operation(function(a) lgamma(a), list(a = vec(4, lower = 0)))
  check_operation(function(a) digamma(a), list(a = vec(4, lower = 0)))
  check_operation(function(a) trigamma(a), list(a = vec(4, lower = 0)))
  # negative non-integer arguments of the gamma family (between the poles)
  check_operation(function(a) lgamma(a) + digamma(a) + trigamma(a),
                  list(a = vec(4, lower = -2.9, upper = -2.1)))
  # log with a base, and mixed in a longer expression
  check_operation(function(a) log(a, base = 10) + log(a, 2), list(a = vec(3, lower = 0)))
  check_operation(function(a, b) sin(a) * cosh(b) + atan(a / b) - abs(b),
                  list(a = vec(3), b = vec(3, lower = 0.5)))
})

test_that("Math functions keep R's values at steps, halves and poles", {
  x <- c(-2.5, -1.5, -0.5, 0, 0.5, 1.5, 2.5, -1.7, 1.2)
  for (f in list(round, sign, abs, ceiling, floor, trunc, sinpi, cospi)) {
    expect_identical(engine_values(f(as_data(x))), f(x))
  }
  expect_identical(engine_values(tanpi(as_data(c(0, 0.25, -0.25, 1)))), tanpi(c(0, 0.25, -0.25, 1)))
  expect_identical(engine_values(lgamma(as_data(c(0, -1, 3)))), lgamma(c(0, -1, 3)))
  expect_identical(engine_values(trigamma(as_data(c(0, -1)))), c(Inf, Inf))
  expect_true(all(is.nan(engine_values(log(as_data(-1)))), is.nan(engine_values(acos(as_data(2)))),
                  is.nan(engine_values(digamma(as_data(-1)))),
                  is.nan(engine_values(tanpi(as_data(0.5))))))
  # round() takes no digits for greta arrays
  expect_error(round(variable(), 2), "only `digits = 0`")
  expect_s3_class(round(variable(), 0), "greta_array")
})

test_that("iprobit, icloglog, icauchit and log1pe match R, with gradients", {
  set.seed(315)
  check_operation(function(a) iprobit(a), list(a = vec(4)))
  check_operation(function(a) icloglog(a), list(a = vec(4)))
  check_operation(function(a) icauchit(a), list(a = vec(4)))
  check_operation(function(a) log1pe(a), list(a = vec(4)))
  check_operation(function(a) log1pe(a * 50), list(a = vec(4)))
  check_operation(function(a, b) iprobit(a) * icloglog(b) + icauchit(a - b),
                  list(a = vec(3), b = vec(3)))
  # on R numbers, R's own functions
  x <- c(-40, -3, 0, 2.5, 40)
  expect_identical(iprobit(x), pnorm(x))
  expect_identical(icauchit(x), pcauchy(x))
  expect_equal(icloglog(x), 1 - exp(-exp(x)))
  expect_equal(icloglog(-40), exp(-40))
  expect_equal(log1pe(x), log1p(exp(x)))
  expect_equal(log1pe(800), 800)
  # and through the engine, in the tails
  expect_equal(engine_values(iprobit(as_data(x))), pnorm(x), tolerance = 1e-13)
  expect_equal(engine_values(icauchit(as_data(x))), pcauchy(x), tolerance = 1e-13)
  expect_equal(engine_values(icloglog(as_data(x))), icloglog(x), tolerance = 1e-13)
  expect_equal(engine_values(log1pe(as_data(c(x, 800)))), log1pe(c(x, 800)), tolerance = 1e-13)
  expect_equal(engine_values(iprobit(as_data(-30))) / pnorm(-30), 1, tolerance = 1e-12)
  expect_equal(engine_values(icauchit(as_data(-1e10))) / pcauchy(-1e10), 1, tolerance = 1e-12)
})

test_that("^, %% and %/% match R, with gradients", {
  set.seed(316)
  check_operation(function(a, b) a ^ b, list(a = vec(3, lower = 0), b = vec(3)))
  # a negative base to integer powers (R's x * x for ^ 2)
  check_operation(function(a) a ^ 2, list(a = vec(4)))
  check_operation(function(a) a ^ 3 - a ^ -1, list(a = vec(4, lower = 0.3)))
  check_operation(function(a) a ^ 3 + a ^ -2, list(a = vec(4, upper = -0.3)))
  check_operation(function(a) 2 ^ a + a ^ 0.5, list(a = mat(2, 2, lower = 0)))
  check_operation(function(s, a) s ^ a, list(s = scalar(lower = 0), a = vec(3)))
  check_operation(function(s, a) a ^ s, list(s = scalar(), a = vec(3, lower = 0)))
  check_operation(function(a) a ^ a, list(a = vec(3, lower = 0)))
  # %% and %/%: steps where a / b is an integer, never met by random values
  check_operation(function(a, b) a %% b, list(a = vec(4), b = vec(4, lower = 0.3)))
  check_operation(function(a, b) a %% b, list(a = vec(4), b = vec(4, upper = -0.3)))
  check_operation(function(a, b) (a * 3) %/% b + a, list(a = vec(4), b = vec(4, lower = 0.3)))
  check_operation(function(a) (a * 5) %% 2 + (a * 5) %/% 2, list(a = vec(4)))
  check_operation(function(b) 7 %% b, list(b = vec(3, lower = 0.2)))
  x <- c(5, -5, 5, 0.3, 1, 1e10 + 0.5, 2, -7.5)
  y <- c(-3, 3, 0, 0.1, 0.1, 7, -4, 2)  # (data cannot be infinite)
  # x == y * (x %/% y) + x %% y
  check_operation(function(a, b) b * (a %/% b) + a %% b - a, list(a = vec(3), b = vec(3)))
  expect_identical(engine_values(as_data(x) %% as_data(y)), x %% y)
  expect_identical(engine_values(as_data(x) %/% as_data(y)), x %/% y)
  base <- c(-8, -8, 0, 0, 1, -2, 2)
  expo <- c(3, 1 / 3, -1, 0, 0.5, -2, 0.5)
  expect_identical(engine_values(as_data(base) ^ expo), base ^ expo)
})

test_that("atan2 matches R on greta arrays and calls R on R values", {
  set.seed(317)
  check_operation(function(a, b) atan2(a, b), list(a = vec(4), b = vec(4)))
  check_operation(function(a) atan2(a, 1.5) + atan2(-2, a), list(a = vec(3)))
  check_operation(function(s, a) atan2(s, a), list(s = scalar(), a = mat(2, 2)))
  expect_identical(atan2(c(1, -1), c(-1, 0)), base::atan2(c(1, -1), c(-1, 0)))
  expect_error(atan2(variable(dim = 2), variable(dim = 3)), "incompatible dimensions")
})

test_that("sum matches R, for one or several arguments", {
  set.seed(306)
  check_operation(function(a) sum(a), list(a = mat(3, 2)))
  check_operation(function(a, b) sum(a, b), list(a = vec(3), b = mat(2, 2)))
  check_operation(function(a, x) sum(a * x) + a, list(a = vec(3), x = c(1, -2, 0.5)))
  check_operation(function(a) sum(exp(a), 2), list(a = vec(4)))
})

test_that("%*% matches R's matrix product", {
  set.seed(307)
  X <- matrix(rnorm(15), 5, 3)
  check_operation(function(X, beta) X %*% beta, list(X = X, beta = vec(3)))
  check_operation(function(a, b) a %*% b, list(a = mat(2, 3), b = mat(3, 4)))
  check_operation(function(a, X) a %*% t(X), list(a = mat(2, 3), X = X))
  check_operation(function(a, b) a %*% b, list(a = mat(1, 3), b = vec(3)))
  expect_equal(diag(2) %*% matrix(1:4, 2), matrix(1:4, 2) + 0)
})

test_that("indexing with x[i], x[i, j] and x[, j] matches R", {
  set.seed(308)
  check_operation(function(a) a[2], list(a = vec(4)))
  check_operation(function(a) a[c(4, 1, 2)], list(a = vec(4)))
  # repeated indices: the gradient must add up every use
  check_operation(function(a) a[c(1, 3, 3, 1, 3)], list(a = vec(3)))
  check_operation(function(a) a[-1], list(a = vec(4)))
  check_operation(function(a) a[c(TRUE, FALSE, TRUE)], list(a = vec(3)))
  check_operation(function(a) a[2, 3], list(a = mat(2, 3)))
  check_operation(function(a) a[, 2], list(a = mat(3, 4)))
  check_operation(function(a) a[2, ], list(a = mat(3, 4)))
  check_operation(function(a) a[2:3, c(1, 4)], list(a = mat(3, 4)))
  check_operation(function(a) a[5], list(a = mat(3, 4)))
  check_operation(function(a, b) a[c(2, 2)] * b[1:2], list(a = vec(3), b = vec(3, lower = 0)))
})

test_that("indexing keeps at least two dimensions, as in greta", {
  a <- variable(dim = c(3, 4))
  expect_equal(dim(a[2, ]), c(1L, 4L))
  expect_equal(dim(a[, 2]), c(3L, 1L))
  expect_equal(dim(a[2, 3]), c(1L, 1L))
  expect_equal(dim(a[1:5]), c(5L, 1L))
  expect_equal(dim(a[1:2, 2:4]), c(2L, 3L))
  expect_error(a[13], "index out of range")
  expect_error(a[4, 1], "out of range|invalid index")
  expect_error(a[integer(0)], "at least one element")
})

test_that("a chain of operations gives the same answer as R", {
  set.seed(309)
  X <- matrix(rnorm(12), 4, 3)
  check_operation(
    function(X, beta, alpha, sigma) {
      eta <- alpha + X %*% beta
      ilogit(eta) * sigma + log1p(exp(-eta[c(1, 1, 2, 4)])) - sum(beta) / sqrt(sigma)
    },
    list(X = X, beta = vec(3), alpha = scalar(), sigma = scalar(lower = 0))
  )
})

test_that("dim, length, print and summary of greta arrays", {
  a <- variable(dim = c(2, 3))
  b <- variable(dim = 4)
  s <- variable()
  x <- as_data(c(1.5, 2.5, 3.5))
  expect_equal(dim(a), c(2L, 3L))
  expect_equal(dim(b), c(4L, 1L))
  expect_equal(dim(s), c(1L, 1L))
  expect_equal(dim(x), c(3L, 1L))
  expect_equal(dim(as_data(matrix(1:6, 2))), c(2L, 3L))
  expect_equal(length(a), 6)
  expect_equal(length(b), 4)
  expect_equal(length(x), 3)
  expect_equal(dim(a + 1), c(2L, 3L))
  expect_equal(dim(s * a), c(2L, 3L))
  expect_equal(dim(a %*% variable(dim = c(3, 5))), c(2L, 5L))
  expect_equal(dim(sum(a)), c(1L, 1L))
  expect_equal(dim(exp(b)), c(4L, 1L))
  expect_equal(dim(normal(0, 1, dim = c(2, 2))), c(2L, 2L))
  expect_equal(dim(normal(b, 1)), c(4L, 1L))
  expect_s3_class(a, "greta_array")
  expect_output(print(a), "greta array <variable>")
  expect_output(print(a * 2), "greta array <operation>")
  expect_output(print(x), "greta array <data>")
  expect_output(print(x), "2\\.5")
  # summary(): greta's format
  expect_output(print(summary(a)), "'variable' greta array with 6 elements \\(2x3\\)")
  expect_output(print(summary(a)), "\\(values currently unknown\\)")
  expect_output(print(summary(normal(0, 1))), "^'variable' greta array with 1 element following a normal distribution")
  expect_output(print(summary(a * 2)), "'operation' greta array with 6 elements")
  expect_output(print(summary(x)), "'data' greta array")
  expect_output(print(summary(as_data(matrix(1:9, 3)))), "Min\\. *:1")
  expect_s3_class(summary(a), "summary.greta_array")
})

test_that("print(n =) shows the first n rows, as greta does; as.matrix(); distribution()", {
  long <- as_data(matrix(1:20, ncol = 1))
  out <- capture.output(print(long))
  expect_true(any(grepl("^ *\\[10,\\] +10$", out)))
  expect_false(any(grepl("\\[11,\\]", out)))
  expect_true(any(out == "i 10 more values"))
  expect_true(any(out == "Use `print(n = ...)` to see more values"))
  out <- capture.output(print(long, n = 19))
  expect_true(any(grepl("\\[19,\\]", out)) && !any(grepl("\\[20,\\]", out)))
  expect_true(any(out == "i 1 more values"))
  for (n in c(20, 21)) {
    out <- capture.output(print(normal(0, 1, dim = 20), n = n))
    expect_equal(sum(grepl("\\?", out)), 20)
    expect_false(any(grepl("more values", out)))
  }
  # a matrix: whole rows, and the values left out counted
  out <- capture.output(print(variable(dim = c(6, 3)), n = 4))
  expect_equal(sum(grepl("^ *\\[[0-9],\\]", out)), 4)
  expect_true(any(out == "i 6 more values"))
  expect_error(print(long, n = 0), "`n` of print\\(\\) must be a positive number")
  # as.matrix(): a matrix unchanged, other arrays a column of their elements
  m <- variable(dim = c(2, 3))
  expect_identical(as.matrix(m), m)
  a3 <- as_data(array(1:8, c(2, 2, 2)))
  expect_equal(dim(as.matrix(variable(dim = 4))), c(4L, 1L))
  expect_equal(dim(as.matrix(variable(dim = c(2, 2, 2)))), c(8L, 1L))
  # of data, its values as an R matrix, as greta's
  expect_identical(as.matrix(a3), matrix(as.numeric(1:8), ncol = 1))
  # distribution(): the greta array itself when it has a distribution, else NULL
  a <- normal(0, 1)
  expect_identical(distribution(a), a)
  y <- as_data(c(0.1, 0.2))
  expect_null(distribution(y))
  distribution(y) <- normal(a, 1)
  expect_identical(distribution(y), y)
  expect_null(distribution(a * 2))
  expect_error(distribution(1:3), "`greta_array` of distribution\\(\\) must be a greta array")
})

test_that("elementwise operations of incompatible dimensions are refused", {
  a <- variable(dim = c(2, 3))
  expect_error(a + variable(dim = c(3, 2)), "incompatible dimensions: 2 x 3 and 3 x 2")
  expect_error(variable(dim = 2) * variable(dim = 3), "incompatible dimensions")
  expect_error(a - matrix(1, 3, 2), "incompatible dimensions")
  expect_error(a / 1:4, "incompatible dimensions")
  expect_error(variable(dim = c(2, 3)) %*% variable(dim = c(2, 3)), "non-conformable")
})

test_that("comparison and logical operators give 1 and 0, as greta's do, with gradient 0", {
  set.seed(31)
  # of parameters (and R numbers): against R's logical results, and the
  # gradient through them (0) against finite differences
  check_operation(function(a, b) a > b, list(a = vec(5), b = vec(5)))
  check_operation(function(a, b) a < b, list(a = mat(2, 3), b = 0.1))
  check_operation(function(a, b) a >= b, list(a = 0.2, b = vec(4)))
  check_operation(function(a, b) a <= b, list(a = vec(4), b = vec(4)))
  check_operation(function(a, b) (a > 0) * b + (a <= 0) * b^2, list(a = vec(6), b = vec(6)))
  check_operation(function(a) a != 0.3, list(a = vec(3)))
  check_operation(function(a, b) (a > 0) & (b > 0), list(a = vec(6), b = vec(6)))
  check_operation(function(a, b) (a > 0) | (b > 0), list(a = vec(6), b = vec(6)))
  check_operation(function(a) !(a > 0), list(a = vec(6)))
  # ties and nonzero values, where random values would never land
  x <- variable(dim = 4)
  vals <- c(-1, 0, 0.5, 2)
  for (op in c(">", "<", ">=", "<=", "==", "!=")) {
    f <- get(op, envir = baseenv())
    got <- calculate(f(x, 0.5), values = list(x = vals))[[1]]
    expect_equal(as.numeric(got), as.numeric(f(vals, 0.5)), label = op)
  }
  expect_equal(as.numeric(calculate(!x, values = list(x = vals))[[1]]), as.numeric(!vals))
  expect_equal(as.numeric(calculate(x & x[4:1], values = list(x = vals))[[1]]),
               as.numeric(vals & rev(vals)))
  expect_equal(as.numeric(calculate(x | 0, values = list(x = vals))[[1]]), as.numeric(vals | 0))
  # infinities compare as R compares them (built from sign(a - b), two equal
  # infinities gave NaN); a NaN operand gives NaN, R's NA
  a <- variable(dim = 3)
  b <- variable(dim = 3)
  inf_a <- exp(a) * c(1, -1, 1)
  inf_b <- exp(b) * c(1, -1, -1)
  at_800 <- list(a = rep(800, 3), b = rep(800, 3))  # Inf v Inf, -Inf v -Inf, Inf v -Inf
  for (op in c(">", "<", ">=", "<=", "==", "!=")) {
    f <- get(op, envir = baseenv())
    got <- calculate(f(inf_a, inf_b), values = at_800)[[1]]
    expect_equal(as.numeric(got), as.numeric(f(c(Inf, -Inf, Inf), c(Inf, -Inf, -Inf))), label = op)
    got <- calculate(f(log(a), 0), values = list(a = c(-1, 1, 2)))[[1]]
    expect_equal(as.numeric(got), c(NaN, as.numeric(f(log(c(1, 2)), 0))), label = op)
  }
  # on data: computed at once, a data greta array
  d <- as_data(matrix(c(1, 5, 3, 0), 2))
  for (op in c(">", "<", ">=", "<=", "==", "!=", "&", "|")) {
    f <- get(op, envir = baseenv())
    got <- f(d, 3)
    expect_true(is.greta_array(got))
    expect_equal(dim(got), c(2L, 2L))
    expect_equal(lockstep:::get_node(got)$type, "data")
    expect_equal(as.numeric(calculate(got)[[1]]), as.numeric(f(matrix(c(1, 5, 3, 0), 2), 3)),
                 label = op)
  }
  expect_equal(as.numeric(calculate(!d)[[1]]), c(0, 0, 0, 1))
  expect_equal(as.numeric(calculate(3 > d)[[1]]), c(1, 0, 0, 1))
  expect_error(variable(dim = 2) > variable(dim = 3), "cannot > greta arrays of incompatible dimensions")
})

test_that("unsupported operations say so", {
  a <- variable(dim = 2)
  expect_error(signif(a), "`signif\\(\\)` is not supported for greta arrays \\(supported: abs, sign")
  expect_error(base::gamma(a), "`gamma\\(\\)` is not supported.*cummin.*log1pe")
  expect_error(any(a), "`any\\(\\)` is not supported.*max, min, prod")
  expect_error(a[1] <- 3, "cannot replace elements of a variable")
})

test_that("rowSums and colSums match R, and return column vectors as greta does", {
  set.seed(310)
  X <- matrix(rnorm(12), 4, 3)
  check_operation(function(a) rowSums(a), list(a = mat(3, 4)))
  check_operation(function(a) colSums(a), list(a = mat(3, 4)))
  check_operation(function(a) rowSums(exp(a)) * 2, list(a = mat(2, 5)))
  check_operation(function(a, X) colSums(a * X), list(a = mat(4, 3), X = X))
  check_operation(function(a, X) rowSums(a * X) + sum(colSums(a)), list(a = mat(4, 3), X = X))
  # vectors: the row sums of a column are the column; its column sum is a scalar
  check_operation(function(a) rowSums(a), list(a = vec(3)))
  check_operation(function(a) colSums(a), list(a = vec(3)))
  a <- variable(dim = c(3, 4))
  expect_equal(dim(rowSums(a)), c(3L, 1L))
  expect_equal(dim(colSums(a)), c(4L, 1L))
  expect_equal(dim(colSums(variable(dim = c(2, 3, 4)))), c(3L, 4L))
  expect_equal(dim(rowSums(variable(dim = c(2, 3, 4)))), c(2L, 1L))
  # R values still get base R's functions
  expect_equal(rowSums(X), base::rowSums(X))
  expect_equal(colSums(X), base::colSums(X))
  expect_equal(rowSums(array(1:24, c(2, 3, 4)), dims = 2), base::rowSums(array(1:24, c(2, 3, 4)), dims = 2))
  # several dimensions as rows (`dims`), as base R sums them
  check_operation(function(a) rowSums(a, dims = 2), list(a = list(dim = c(2, 3, 4))))
  check_operation(function(a) colSums(a, dims = 2), list(a = list(dim = c(2, 3, 4))))
  check_operation(function(a) rowMeans(a, dims = 2) + colMeans(a, dims = 1)[1, 2],
                  list(a = list(dim = c(2, 3, 4))), chains = 2)
  check_operation(function(a) colMeans(a, dims = 2), list(a = list(dim = c(2, 2, 3, 2))), chains = 2)
  expect_equal(dim(rowSums(variable(dim = c(2, 3, 4)), dims = 2)), c(2L, 3L))
  expect_equal(dim(colSums(variable(dim = c(2, 3, 4, 5)), dims = 2)), c(4L, 5L))
  expect_error(rowSums(a, dims = 2), "`dims` of rowSums\\(\\) must be a whole number from 1 to 1")
  expect_error(colMeans(variable(dim = c(2, 3, 4)), dims = 0), "from 1 to 2")
})

test_that("mean, rowMeans and colMeans match R", {
  set.seed(318)
  check_operation(function(a) mean(a), list(a = mat(3, 4)))
  check_operation(function(a) mean(exp(a)) * a, list(a = vec(3)))
  check_operation(function(a) rowMeans(a), list(a = mat(3, 4)))
  check_operation(function(a) colMeans(a), list(a = mat(3, 4)))
  check_operation(function(a) rowMeans(a) + colMeans(t(a)), list(a = mat(2, 5)))
  a <- variable(dim = c(3, 4))
  expect_equal(dim(rowMeans(a)), c(3L, 1L))
  expect_equal(dim(colMeans(a)), c(4L, 1L))
  expect_equal(dim(mean(a)), c(1L, 1L))
  # R values still get base R's functions
  X <- matrix(rnorm(12), 4, 3)
  expect_identical(rowMeans(X), base::rowMeans(X))
  expect_identical(colMeans(X), base::colMeans(X))
  expect_error(colMeans(a, dims = 2), "must be a whole number from 1 to 1")
})

test_that("t() matches R, alone and inside a matrix product", {
  set.seed(311)
  X <- matrix(rnorm(6), 3, 2)
  check_operation(function(a) t(a), list(a = mat(2, 3)))
  check_operation(function(a) t(a), list(a = vec(4)))
  check_operation(function(a) t(t(a)) * 2, list(a = mat(3, 2)))
  check_operation(function(a) t(a) %*% a, list(a = mat(3, 2)))
  check_operation(function(a, X) t(X) %*% a, list(a = vec(3), X = X))
  expect_equal(dim(t(variable(dim = c(2, 5)))), c(5L, 2L))
  expect_equal(dim(t(variable(dim = 4))), c(1L, 4L))
  expect_error(t(variable(dim = c(2, 2, 2))), "two-dimensional")
})

test_that("sweep() matches R for each margin and operator", {
  set.seed(312)
  for (FUN in c("+", "-", "*", "/")) {
    check_operation(function(a, s) sweep(a, 2, s, FUN), list(a = mat(3, 4), s = vec(4, lower = 0.5)))
    check_operation(function(a, s) sweep(a, 1, s, FUN), list(a = mat(3, 4), s = vec(3, lower = 0.5)))
  }
  # STATS as numbers, as a row vector (transposed to a column for MARGIN = 1), as
  # the operator itself, and x as R values with a greta STATS
  check_operation(function(a) sweep(a, 1, c(1, -2, 0.5), "*"), list(a = mat(3, 2)))
  check_operation(function(a) sweep(a, 2, c(2, 4)), list(a = mat(3, 2)))
  check_operation(function(a, s) sweep(a, 1, t(s), `/`), list(a = mat(3, 2), s = vec(3, lower = 1)))
  check_operation(function(a, s) sweep(a, 2, t(s), `-`), list(a = mat(3, 2), s = vec(2)))
  X <- matrix(rnorm(8), 4, 2)
  check_operation(function(X, s) sweep(X, 2, s, "*"), list(X = X, s = vec(2)))
  # a sweep in a longer computation
  check_operation(function(z, s, X) rowSums(X * sweep(z, 2, s, "*")) + 1,
                  list(z = mat(4, 2), s = vec(2, lower = 0), X = X))
  expect_equal(dim(sweep(variable(dim = c(5, 3)), 2, 1:3)), c(5L, 3L))
  # R values still get base R's sweep
  expect_equal(sweep(X, 2, c(1, 2), "*"), base::sweep(X, 2, c(1, 2), "*"))
  expect_equal(sweep(X, 1, 1:4), base::sweep(X, 1, 1:4))
})

test_that("sweep() refuses a bad MARGIN, FUN or STATS", {
  a <- variable(dim = c(3, 4))
  expect_error(sweep(a, 3, 1:3), "`MARGIN` of sweep\\(\\) on a greta array must be 1 \\(rows\\) or 2")
  expect_error(sweep(a, c(1, 2), 1:3), "`MARGIN`")
  expect_error(sweep(a, "rows", 1:3), "`MARGIN`")
  expect_error(sweep(a, 1, 1:3, "^"), "`FUN` of sweep\\(\\) on a greta array must be one of")
  expect_error(sweep(a, 1, 1:3, max), "`FUN`")
  expect_error(sweep(a, 1, 1:4), "`STATS` of sweep\\(\\) must have length nrow\\(x\\) = 3, but has length 4")
  expect_error(sweep(a, 2, 1:3), "must have length ncol\\(x\\) = 4")
  expect_error(sweep(a, 2, variable(dim = 3)), "must be a vector of length ncol\\(x\\) = 4.*3 x 1")
  expect_error(sweep(a, 2, variable(dim = c(2, 2))), "must be a vector of length ncol\\(x\\) = 4.*2 x 2")
  expect_error(sweep(a, 1, "a"), "must be numeric or logical")
  expect_error(sweep(variable(dim = c(2, 2, 2)), 1, 1:2), "two-dimensional")
})

test_that("x[i, ] gathers whole rows, with repeated rows, and matches R", {
  set.seed(313)
  check_operation(function(a) a[c(3, 1, 1, 2), ], list(a = mat(3, 4)))
  check_operation(function(a) a[c(2, 2, 2), ], list(a = mat(3, 2)))
  check_operation(function(a) a[-1, ], list(a = mat(3, 2)))
  check_operation(function(a) a[c(TRUE, FALSE, TRUE), ], list(a = mat(3, 2)))
  check_operation(function(a) a[c(4, 1, 4), ], list(a = vec(4)))
  # the seed model's random slopes: rowSums(X * gamma[g, ])
  X <- matrix(rnorm(14), 7, 2)
  g <- c(3, 1, 1, 2, 3, 3, 1)
  check_operation(function(gamma, X) rowSums(X * gamma[g, ]), list(gamma = mat(3, 2), X = X))
  # one index per row, not per element
  a <- variable(dim = c(3, 4))
  rows <- a[c(3, 1, 1, 2, 3), ]
  node <- lockstep:::get_node(rows)
  expect_equal(node$op, "gather_rows")
  expect_equal(node$index, c(3L, 1L, 1L, 2L, 3L))
  expect_equal(dim(rows), c(5L, 4L))
  # other patterns keep the flat gather
  expect_equal(lockstep:::get_node(a[, 2])$op, "gather")
  expect_equal(lockstep:::get_node(a[1:2, 2:3])$op, "gather")
  expect_error(a[c(1, 4), ], "out of range|invalid index")
})

test_that("max, min and prod match R, for one or several arguments, with gradients", {
  set.seed(320)
  check_operation(function(a) max(a), list(a = mat(3, 2)))
  check_operation(function(a) min(a), list(a = vec(5)))
  check_operation(function(a) prod(a), list(a = mat(2, 3)))
  check_operation(function(a, b) max(a, b), list(a = vec(3), b = mat(2, 2)))
  check_operation(function(a, b) min(a, 0.1, b), list(a = vec(3), b = vec(2)))
  check_operation(function(a, b) prod(a, 2, b), list(a = vec(2), b = scalar()))
  check_operation(function(a) max(exp(a)) * a, list(a = vec(4)))
  check_operation(function(a) range(a), list(a = vec(4)))
  x <- variable(dim = c(2, 2))
  expect_equal(dim(max(x)), c(1L, 1L))
  expect_equal(dim(range(x)), c(2L, 1L))
})

test_that("max, min, sum, prod and range of a greta array and numbers, through R's Summary group (as greta)", {
  set.seed(322)
  # R dispatches the Summary group on the first argument: a greta array first,
  # any numbers and greta arrays after it
  check_operation(function(a) max(a, 0.5), list(a = vec(4)))
  check_operation(function(a, b) min(a, b, 0), list(a = vec(3), b = mat(2, 2)))
  check_operation(function(a, b) min(a, 0.2, -0.1, b), list(a = vec(3), b = scalar()))
  check_operation(function(a) max(a, c(-1, 0.5), na.rm = TRUE), list(a = vec(2)))
  check_operation(function(a) max(a, c(NA, 0.3), na.rm = TRUE), list(a = vec(3)))
  check_operation(function(a, b) sum(a, 1, b), list(a = vec(3), b = scalar()))
  check_operation(function(a) prod(a, 2), list(a = vec(3)))
  check_operation(function(a) range(a, -0.5, 0.5), list(a = vec(4)))
  # the value against R's on a fixed array
  a <- as_data(c(1, 5, -2))
  expect_equal(as.numeric(calculate(max(a, 3))[[1]]), max(3, c(1, 5, -2)))
  expect_equal(as.numeric(calculate(max(a, 7))[[1]]), 7)
  expect_equal(as.numeric(calculate(min(a, 4, 0))[[1]]), -2)
  expect_equal(as.numeric(calculate(min(a, 4, -9))[[1]]), -9)
  expect_equal(as.numeric(calculate(range(a, 10, NA, na.rm = TRUE))[[1]]), c(-2, 10))
  expect_error(max(a, 3, NA), "argument 3 of max\\(\\) has missing values")
  expect_error(min(a, na.rm = NA), "`na.rm` of min\\(\\) must be TRUE or FALSE")
  expect_error(range(a, 1, finite = TRUE), "`finite` of range\\(\\) must be FALSE")
  expect_equal(dim(range(a, finite = FALSE)), c(2L, 1L))
  # lockstep no longer masks base's: R's own functions, with R's results
  for (f in c("sum", "prod", "max", "min", "range")) {
    expect_false(f %in% getNamespaceExports("lockstep"), info = f)
    expect_identical(environment(get(f)), NULL, info = f)  # base's primitive
  }
  expect_identical(max(3L, 1:4), 4L)
  expect_identical(min(c(2, NA), 5, na.rm = TRUE), 2)
  expect_identical(range(c(1, Inf, 3), finite = TRUE), c(1, 3))
})

test_that("prod passes its gradient exactly at zeros, max to one of repeated elements", {
  x <- variable(dim = 3)
  y <- as_data(0.3)
  w <- prod(x)
  v <- max(x, x)  # every element twice: the first copy's gets the gradient
  distribution(y) <- normal(w + v + cumprod(x)[3], 1)
  m <- model(w, v)
  # no zero, one zero, two zeros (gradient 0 through prod)
  free <- rbind(c(0.4, 1.5, -2), c(0.7, -0.3, 0), c(0.5, 0, 0))
  expect_equal(unname(traced_values(m, free)),
               cbind(apply(free, 1, prod), apply(free, 1, max)))
  expect_gradient_matches(m, free = free)
})

test_that("cumsum and cumprod match R as column vectors, with gradients", {
  set.seed(321)
  check_operation(function(a) cumsum(a), list(a = mat(3, 2)))
  check_operation(function(a) cumprod(a), list(a = vec(5)))
  check_operation(function(a, x) cumprod(a * x), list(a = mat(2, 2), x = matrix(c(1, 0, 2, -1), 2)))
  check_operation(function(a) cumsum(exp(a)) / cumprod(a), list(a = vec(4, lower = 0.5)))
  expect_equal(dim(cumsum(variable(dim = c(2, 3)))), c(6L, 1L))
})

test_that("cummax and cummin match R as column vectors, the gradient to each running extreme", {
  set.seed(325)
  check_operation(function(a) cummax(a), list(a = vec(6)))
  check_operation(function(a) cummin(a), list(a = mat(3, 2)))
  check_operation(function(a, b) cummax(a) * cummin(b), list(a = vec(4), b = vec(4)))
  expect_equal(dim(cummin(variable(dim = c(2, 3)))), c(6L, 1L))
  # on data, with ties, as R's
  d <- as_data(c(2, 1, 2, 5, 3, 9))
  expect_identical(as.numeric(calculate(cummax(d))[[1]]), cummax(c(2, 1, 2, 5, 3, 9)))
  expect_identical(as.numeric(calculate(cummin(d))[[1]]), cummin(c(2, 1, 2, 5, 3, 9)))
})

test_that("choose and lchoose are greta's continuous extensions, with gradients", {
  set.seed(326)
  # against R's for a real n and an integer k, which R computes directly
  check_operation(function(n) lchoose(n, 3), list(n = vec(4, lower = 3)))
  check_operation(function(n) choose(n, 2), list(n = mat(2, 2, lower = 2, upper = 6)))
  # both arguments greta arrays: the gamma-function form
  n <- variable(lower = 4, dim = 3)
  k <- variable(lower = 0, upper = 4, dim = 3)
  y <- as_data(c(0.2, -0.1, 0.4))
  distribution(y) <- normal(lchoose(n, k), 1)
  m <- model(n, k)
  expect_gradient_matches(m)
  expect_equal(calculate(lchoose(as_data(c(5, 7.5)), 2))[[1]], matrix(lchoose(c(5, 7.5), 2)))
  expect_equal(calculate(lchoose(as_data(c(5, 7.5)), as_data(c(2.5, 1))))[[1]],
               matrix(lgamma(c(6, 8.5)) - lgamma(c(3.5, 2)) - lgamma(c(3.5, 7.5))))
  # R numbers: base R's
  expect_identical(choose(5, 2), 10)
  expect_identical(lchoose(5, 2), base::lchoose(5, 2))
})

test_that("c(), cbind() and rbind() match R, with numbers, with gradients", {
  set.seed(322)
  check_operation(function(a, b) c(a, b), list(a = vec(2), b = mat(2, 3)))
  check_operation(function(a, b) c(a, 1, b, c(2, 3)), list(a = mat(2, 2), b = scalar()))
  check_operation(function(a) c(a), list(a = mat(2, 2)))
  check_operation(function(a, b) cbind(a, b), list(a = vec(2), b = mat(2, 3)))
  check_operation(function(a, b) cbind(a, 1, b, c(5, 6)), list(a = mat(2, 2), b = vec(2)))
  check_operation(function(a, b) rbind(a, b), list(a = mat(1, 3), b = mat(2, 3)))
  check_operation(function(a, b) rbind(a, 1:3, b) %*% c(1, 2, 3), list(a = mat(2, 3), b = mat(1, 3)))
  check_operation(function(a) sum(c(a, a) * c(1, 2, 3, 4)), list(a = vec(2)))
  expect_equal(dim(c(variable(dim = c(2, 2)), 1)), c(5L, 1L))
  expect_error(cbind(variable(dim = 2), variable(dim = 3)), "as many rows")
  expect_error(rbind(variable(dim = c(2, 2)), variable(dim = c(1, 3))), "as many rows")
})

# -- linear algebra (R/linalg.R) ----------------------------------------------
# Matrices from variables bounded to [-0.5, 0.5] (or [-1, 1]) plus a multiple
# of the identity are diagonally dominant: positive definite (as the symmetric
# matrix of their upper triangle) and well conditioned, whatever the draws.
# The lower triangles that chol(), chol2inv() and backsolve() do not read are
# variables too: their gradient must be 0, as R's finite differences are.

test_that("chol, chol2inv and chol2symm match R, with gradients", {
  set.seed(330)
  check_operation(function(p) chol(p + 3 * diag(3)), list(p = mat(3, 3, -0.5, 0.5)))
  check_operation(function(z) chol(t(z) %*% z + diag(3)), list(z = mat(3, 3)))
  check_operation(function(p) chol2inv(p + 3 * diag(3)), list(p = mat(3, 3, -0.5, 0.5)))
  check_operation(function(z) chol2inv(chol(t(z) %*% z + diag(2))), list(z = mat(2, 2)))
  check_operation(function(p) chol2symm(chol(p + 3 * diag(3))), list(p = mat(3, 3, -0.5, 0.5)))
  # chol of data mixed with a variable
  S <- crossprod(matrix(rnorm(9), 3)) + diag(3)
  check_operation(function(s, S) chol(S) * s, list(s = scalar(), S = S))
  # chol2symm on R values is t(x) %*% x
  R <- chol(S)
  expect_equal(chol2symm(R), S)
})

test_that("solve matches R for a right-hand side, a vector, R numbers and the inverse", {
  set.seed(331)
  check_operation(function(a, b) solve(a + 3 * diag(3), b),
                  list(a = mat(3, 3, -1, 1), b = mat(3, 2)))
  check_operation(function(a, b) solve(a + 3 * diag(4), b),
                  list(a = mat(4, 4, -1, 1), b = vec(4)))
  check_operation(function(a) solve(a + 3 * diag(3)), list(a = mat(3, 3, -1, 1)))
  B <- matrix(rnorm(6), 3, 2)
  check_operation(function(a, B) solve(a + 3 * diag(3), B), list(a = mat(3, 3, -1, 1), B = B))
  # a fixed matrix (data), a variable right-hand side
  A <- matrix(rnorm(9), 3) + 3 * diag(3)
  check_operation(function(A, b) solve(if (is.greta_array(b)) as_data(A) else A, b),
                  list(A = A, b = vec(3)))
})

test_that("backsolve and forwardsolve match R for every upper.tri, transpose and k", {
  set.seed(332)
  for (upper in c(TRUE, FALSE)) {
    for (trans in c(FALSE, TRUE)) {
      check_operation(function(r, x) backsolve(r + 3 * diag(3), x, upper.tri = upper,
                                               transpose = trans),
                      list(r = mat(3, 3, -1, 1), x = mat(3, 2)), chains = 3)
      check_operation(function(l, x) forwardsolve(l + 3 * diag(3), x, upper.tri = upper,
                                                  transpose = trans),
                      list(l = mat(3, 3, -1, 1), x = vec(3)), chains = 3)
    }
  }
  # the first k rows and columns, and R numbers on either side
  check_operation(function(r, x) backsolve(r + 3 * diag(4), x, k = 3),
                  list(r = mat(4, 4, -1, 1), x = mat(4, 2)))
  check_operation(function(r, x) forwardsolve(r + 3 * diag(4), x, k = 2),
                  list(r = mat(4, 4, -1, 1), x = vec(4)))
  R <- chol(crossprod(matrix(rnorm(9), 3)) + diag(3))
  check_operation(function(R, x) backsolve(R, x), list(R = R, x = vec(3)))
  x <- rnorm(3)
  check_operation(function(r, x) forwardsolve(r + 3 * diag(3), x),
                  list(r = mat(3, 3, -1, 1), x = x))
  # on R values, R's functions
  expect_identical(backsolve(R, x), base::backsolve(R, x))
  expect_identical(forwardsolve(t(R), x, k = 2), base::forwardsolve(t(R), x, k = 2))
})

test_that("cov2cor matches R, with a diagonal of exactly 1", {
  set.seed(333)
  check_operation(function(z) cov2cor(t(z) %*% z + diag(3)), list(z = mat(3, 3)))
  sigma <- variable(lower = 0, dim = 3)
  V <- (sigma %*% t(sigma)) * (diag(3) + 0.3)
  got <- calculate(cov2cor(V), values = list(sigma = c(1, 2, 3)))[[1]]
  expect_equal(got, stats::cov2cor(outer(1:3, 1:3) * (diag(3) + 0.3)))
  expect_identical(diag(got), rep(1, 3))
  V0 <- crossprod(matrix(rnorm(9), 3))
  expect_identical(cov2cor(V0), stats::cov2cor(V0))
})

test_that("chol of a matrix that is not positive definite, and solve of a singular one, are NaN", {
  x <- variable(dim = c(2, 2))
  got <- calculate(chol(x), values = list(x = matrix(c(1, 2, 2, 1), 2)))[[1]]
  expect_true(all(is.nan(got)))
  got <- calculate(solve(x, c(1, 1)), values = list(x = matrix(c(1, 2, 2, 4), 2)))[[1]]
  expect_true(all(is.nan(got)))
  # one chain's NaN leaves the other chains' log densities alone
  a <- variable(dim = c(2, 2))
  y <- as_data(c(0.1, -0.2))
  distribution(y) <- normal(chol(a)[c(1, 3)], 1)  # R[1, 1] and R[1, 2]
  m <- model(a)
  free <- rbind(c(2, 0, 0, 2), c(1, 0, 2, 1))  # the second: upper triangle 1, 2, 1
  lp <- engine_density(m, free, gradient = FALSE)$log_density
  expect_true(is.finite(lp[1]))
  expect_true(is.nan(lp[2]))
})

test_that("NUTS rejects proposals where chol() has no factor: a truncated posterior", {
  # rho ~ uniform(-2, 2), and the likelihood reads chol(M)[1, 2] = rho of the
  # correlation matrix M = [1 rho; rho 1], which has a factor only for
  # |rho| < 1: the posterior is normal(0.3, 0.5) truncated to (-1, 1).
  set.seed(340)
  rho <- uniform(-2, 2)
  M <- rbind(cbind(1, rho), cbind(rho, 1))
  y <- as_data(0.3)
  distribution(y) <- normal(chol(M)[1, 2], 0.5)
  m <- model(rho)
  # proposals past |rho| = 1 are divergent transitions, which mcmc() reports
  expect_warning(
    draws <- mcmc(m, n_samples = 1000, warmup = 500, chains = 4, verbose = FALSE),
    "divergent transitions"
  )
  x <- as.numeric(as.matrix(draws))
  expect_true(all(abs(x) < 1))
  a <- (-1 - 0.3) / 0.5
  b <- (1 - 0.3) / 0.5
  z <- stats::pnorm(b) - stats::pnorm(a)
  mean_want <- 0.3 + 0.5 * (stats::dnorm(a) - stats::dnorm(b)) / z
  sd_want <- 0.5 * sqrt(1 + (a * stats::dnorm(a) - b * stats::dnorm(b)) / z -
                          ((stats::dnorm(a) - stats::dnorm(b)) / z)^2)
  ess <- coda::effectiveSize(draws)
  expect_gt(ess, 200)
  expect_lt(abs(mean(x) - mean_want), 4 * sd_want / sqrt(ess))
})

test_that("linear algebra refuses non-square matrices and mismatched right-hand sides", {
  a <- variable(dim = c(2, 3))
  expect_error(chol(a), "`chol\\(\\)` needs `x` to be a square matrix, but it has dimension 2 x 3")
  expect_error(chol2inv(a), "`chol2inv\\(\\)` needs `x` to be a square")
  expect_error(solve(a), "`solve\\(\\)` needs `a` to be a square")
  s <- variable(dim = c(3, 3))
  expect_error(solve(s, variable(dim = c(2, 1))), "needs `b` to have 3 rows")
  expect_error(solve(s, 1:4), "needs `b` to have 3 rows")
  expect_error(backsolve(a, variable(dim = 2)), "`k` to be a whole number from 1 to 2")
  expect_error(backsolve(s, variable(dim = 2)), "needs `x` to have 3 rows")
  expect_error(forwardsolve(s, variable(dim = 3), k = 4), "`forwardsolve\\(\\)` needs `k`")
  expect_error(backsolve(s, variable(dim = 3), upper.tri = NA), "TRUE or FALSE")
  expect_error(cov2cor(a), "`cov2cor\\(\\)` needs `V` to be a square")
  expect_error(chol2symm(a), "`chol2symm\\(\\)` needs `x` to be a square")
  expect_warning(chol2inv(s, size = 2), "`size` of chol2inv\\(\\) is ignored")
  expect_warning(chol(s, pivot = TRUE), "ignored")
})
