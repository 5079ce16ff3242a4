#' Functions of greta arrays
#'
#' R's elementwise mathematical functions work on greta arrays as they do on R
#' arrays: `abs()`, `sign()`, `ceiling()`, `floor()`, `round()`, `trunc()`,
#' `sqrt()`, `exp()`, `expm1()`, `log()` (with an optional `base`), `log1p()`,
#' `log10()`, `log2()`, `cos()`, `sin()`, `tan()`, `acos()`, `asin()`,
#' `atan()`, `cosh()`, `sinh()`, `tanh()`, `acosh()`, `asinh()`, `atanh()`,
#' `cospi()`, `sinpi()`, `tanpi()`, `lgamma()`, `digamma()` and `trigamma()`.
#' `sum()` adds up every element of its arguments, and `mean()` averages the
#' elements of a greta array (its sum over its length). `max()`, `min()` and
#' `prod()` are the largest, the smallest and the product of every element of
#' their arguments (`max(a, 3)` and `min(a, b, 0)` are the largest and
#' smallest of every element), and `range()` is `c(min(...), max(...))`.
#' These are R's `Summary` group, which R dispatches on the first argument
#' only: as in greta, a greta array must come first (`max(a, 3)`, not
#' `max(3, a)`, which base R refuses). `range()`'s `finite` must be `FALSE`
#' with greta arrays (which hold no missing values). `cumsum()`, `cumprod()`, `cummax()` and
#' `cummin()` are the cumulative sums, products, maxima and minima of a greta
#' array's elements in R's (column-major) order, and return a column vector, as
#' greta does.
#'
#' `lchoose(n, k)` is the log binomial coefficient `lgamma(n + 1) - lgamma(k +
#' 1) - lgamma(n - k + 1)` and `choose(n, k)` its exponential, elementwise
#' (either argument may be a greta array, the other a number or array of the
#' same shape): as greta's, they are the continuous extension through the
#' gamma function, differentiable in both arguments, where R's round to an
#' integer count for integer `n`. (lockstep masks base's `choose()` and
#' `lchoose()` with versions that call base's for R numbers.)
#'
#' greta's inverse link functions are `ilogit()`, the inverse logit
#' `1 / (1 + exp(-x))` (R's [stats::plogis()]); `iprobit()`, the standard
#' normal distribution function (R's [stats::pnorm()]); `icloglog()`, the
#' inverse complementary log-log `1 - exp(-exp(x))`; `icauchit()`, the standard
#' Cauchy distribution function (R's [stats::pcauchy()]); and `log1pe()`, the
#' softplus `log(1 + exp(x))`. Each is computed without overflow or loss of its
#' small tail, and on R numbers returns R's own result (`icloglog()` as
#' `-expm1(-exp(x))`, `log1pe()` as `-plogis(-x, log.p = TRUE)`).
#'
#' `imultilogit()` is greta's inverse multinomial logit: for an `n x (k - 1)`
#' greta array `x` it returns the `n x k` array whose row `i` is the softmax of
#' `c(x[i, ], 0)`, i.e. `exp(c(x[i, ], 0)) / sum(exp(c(x[i, ], 0)))`: each row
#' is a vector of `k` probabilities, with the last category the reference. It
#' is computed from the row's largest element downwards, so large `x` neither
#' overflows nor loses precision. On an R matrix (or vector, as a column) it
#' returns the same computed in R.
#'
#' @section Representations: As in greta, `log(exp(x))` and `exp(log(x))` are
#'   `x` itself: the pair is never computed, so `log(exp(x))` stays finite
#'   where `exp(x)` overflows. (`exp(log(x))` is therefore `x` also where `x`
#'   is negative, where R's would be `NaN`.) In the same way a distribution
#'   whose probability is `ilogit(eta)` or `iprobit(eta)`, or whose Poisson
#'   rate is `exp(eta)`, is computed from `eta` on that scale (see
#'   [distributions]), and a covariance matrix `chol2symm(U)` is used through
#'   `U` (see [multivariate_distributions] and [matrix_distributions]).
#'
#' @section Gradients: Every function is differentiated exactly where it is
#'   differentiable. The steps `sign()`, `ceiling()`, `floor()`, `round()` and
#'   `trunc()` have gradient 0 (also at their steps), and `abs()` has gradient
#'   `sign(x)`, which is 0 at `x = 0`. `round()` rounds half to even, as R's
#'   does, and takes only `digits = 0`. Outside a function's domain (e.g.
#'   `log(-1)`, `acos(2)`) value and gradient are `NaN`, as R's value is;
#'   `lgamma()`, `digamma()` and `trigamma()` take negative non-integer
#'   arguments too. `max()` and `min()` pass their gradient to the first
#'   largest (smallest) element only. `prod()` has gradient `prod(x) / x[i]`,
#'   computed without dividing by zero: with exactly one zero element, that
#'   element's gradient is the product of the others (and every other one's is
#'   0); with two or more zeros every gradient is 0. `cumprod()` is
#'   differentiated the same way, exactly at zeros. Element `i` of `cummax()`
#'   (`cummin()`) passes its gradient to the first element where that running
#'   maximum (minimum) was taken; from a `NaN` on, the values are `NaN`, as
#'   R's are.
#'
#' @param x a greta array (or, for the link functions, R numbers)
#' @param n,k for `choose()` and `lchoose()`: greta arrays or numbers
#' @param ... greta arrays or numbers (for `sum()`, `max()`, `min()`,
#'   `prod()` and `range()`); `base` for `log()`,
#'   `digits` (0 only) for `round()`
#' @param na.rm as R's: greta arrays have no missing values, and missing
#'   numbers among the arguments are dropped with `na.rm = TRUE` (and are an
#'   error otherwise)
#' @return a greta array (for the link functions on R numbers, R numbers)
#' @examples
#' x <- variable(dim = 3)
#' exp(x)
#' sum(log1p(exp(x)))
#' max(x, 0)
#' prod(exp(x))
#' cumsum(x)
#' cummax(x)
#' lchoose(exp(x) + 2, 2)
#' ilogit(x)
#' iprobit(x)
#' imultilogit(variable(dim = c(4, 2)))  # 4 rows of 3 probabilities
#' abs(cos(x)) + lgamma(exp(x))
#' log(exp(x), base = 10)
#' # on R numbers, R's functions
#' iprobit(c(-1, 0, 1)) == pnorm(c(-1, 0, 1))
#' @name functions
NULL

# The Math group functions greta arrays support, each an op of the engine's
# op table (inst/include/lockstep/ops.def) of the same name.
math_functions <- c(
  "abs", "sign", "ceiling", "floor", "round", "trunc", "sqrt", "exp", "expm1", "log",
  "log1p", "log10", "log2", "cos", "sin", "tan", "acos", "asin", "atan", "cosh", "sinh",
  "tanh", "acosh", "asinh", "atanh", "cospi", "sinpi", "tanpi", "lgamma", "digamma",
  "trigamma", "cumsum", "cumprod", "cummax", "cummin"
)

# greta's inverse link functions (and the softplus): lockstep functions, each
# an op of the engine's op table of the same name.
link_functions <- c("ilogit", "iprobit", "icloglog", "icauchit", "log1pe")

# The Math functions that are not elementwise: ops of the engine that return a
# column vector of every element, in R's order.
cumulative_functions <- c("cumsum", "cumprod", "cummax", "cummin")

#' @rdname functions
#' @export
Math.greta_array <- function(x, ...) {
  if (!.Generic %in% math_functions) {
    stop("`", .Generic, "()` is not supported for greta arrays (supported: ",
         paste(math_functions, collapse = ", "),
         "; and the link functions ", paste(link_functions, collapse = ", "), ")",
         call. = FALSE)
  }
  args <- list(...)
  if (.Generic == "round" && length(args) > 0L) {
    digits <- args[[1]]
    if (!is.numeric(digits) || length(digits) != 1L || digits != 0) {
      stop("`round()` of a greta array takes only `digits = 0`", call. = FALSE)
    }
  }
  if (.Generic == "log" && length(args) > 0L) {
    # log(x, base) = log(x) / log(base); base may be a greta array too
    return(log(x) / log(args[[1]]))
  }
  # greta's representations: log(exp(x)) is x and exp(log(x)) is x, the inner
  # function's own input, so that the pair is never computed (log(exp(800))
  # would be Inf) and a density on the log scale sees x itself
  inverse <- unname(c(log = "exp", exp = "log")[.Generic])
  if (!is.na(inverse) && is_operation(x, inverse)) return(link_input(x))
  if (.Generic %in% cumulative_functions) {
    node <- get_node(x)
    return(new_operation(.Generic, list(node), c(prod(node$dim), 1L)))
  }
  elementwise_unary(.Generic, x)
}

#' @rdname functions
#' @export
Summary.greta_array <- function(..., na.rm = FALSE) {
  args <- list(...)
  if ("finite" %in% names(args)) {  # range()'s own argument
    if (!identical(args$finite, FALSE)) {
      stop("`finite` of range() must be FALSE with greta arrays", call. = FALSE)
    }
    args$finite <- NULL
  }
  greta_summary(.Generic, args, na.rm)
}

# sum(), prod(), max(), min() or range() (`generic`) over every element of
# `args`, greta arrays and numbers. Greta arrays hold no missing values; missing
# numbers are dropped with na.rm = TRUE, as R does, and otherwise an error
# (R's NA result cannot be a greta array).
greta_summary <- function(generic, args, na.rm) {
  supported <- c("sum", "max", "min", "prod", "range")
  if (!generic %in% supported) {
    stop("`", generic, "()` is not supported for greta arrays yet (supported: ",
         paste(supported, collapse = ", "), "; and mean())", call. = FALSE)
  }
  if (!is.logical(na.rm) || length(na.rm) != 1L || is.na(na.rm)) {
    stop("`na.rm` of ", generic, "() must be TRUE or FALSE", call. = FALSE)
  }
  for (k in seq_along(args)) {
    x <- args[[k]]
    if (is.greta_array(x) || !anyNA(x)) next
    if (!na.rm) {
      stop("argument ", k, " of ", generic, "() has missing values (NA), which a greta ",
           "array cannot hold: drop them, or use na.rm = TRUE", call. = FALSE)
    }
    args[k] <- list(x[!is.na(x)])
  }
  args <- args[vapply(args, function(x) is.greta_array(x) || length(x) > 0L, logical(1))]
  if (generic == "range") {
    return(c(do.call(min, args), do.call(max, args)))
  }
  if (generic == "sum") {
    parts <- lapply(args, function(x) {
      node <- get_node(as.greta_array(x))
      new_operation("sum", list(node), c(1L, 1L))
    })
    return(Reduce(`+`, parts))
  }
  # max, min, prod: one op over every element of the arguments, concatenated
  x <- if (length(args) == 1L) as.greta_array(args[[1]]) else do.call(c.greta_array, args)
  new_operation(generic, list(get_node(x)), c(1L, 1L))
}

#' @rdname functions
#' @export
mean.greta_array <- function(x, ...) {
  sum(x) / length(x)
}

#' @rdname functions
#' @export
ilogit <- function(x) {
  if (!is.greta_array(x)) return(stats::plogis(x))
  elementwise_unary("ilogit", x)
}

#' @rdname functions
#' @export
iprobit <- function(x) {
  if (!is.greta_array(x)) return(stats::pnorm(x))
  elementwise_unary("iprobit", x)
}

#' @rdname functions
#' @export
icloglog <- function(x) {
  if (!is.greta_array(x)) return(-expm1(-exp(x)))
  elementwise_unary("icloglog", x)
}

#' @rdname functions
#' @export
icauchit <- function(x) {
  if (!is.greta_array(x)) return(stats::pcauchy(x))
  elementwise_unary("icauchit", x)
}

#' @rdname functions
#' @export
log1pe <- function(x) {
  if (!is.greta_array(x)) return(-stats::plogis(-x, log.p = TRUE))
  elementwise_unary("log1pe", x)
}

#' @rdname functions
#' @export
imultilogit <- function(x) {
  if (!is.greta_array(x)) {
    if (!is.numeric(x)) {
      stop("`x` of imultilogit() must be a greta array or numbers, not ", class(x)[1],
           call. = FALSE)
    }
    latent <- cbind(as.matrix(x), 0)
    e <- exp(latent - apply(latent, 1, max))
    return(e / rowSums(e))
  }
  d <- dim(x)
  if (length(d) != 2L) {
    stop("`x` of imultilogit() must be a two-dimensional greta array (n x (k - 1)), but has ",
         "dimension ", format_dim(d), call. = FALSE)
  }
  # The softmax of each row of cbind(x, 0), computed after subtracting the
  # row's largest element (exp() of it then cannot overflow). The engine has
  # no row-wise maximum, so it is built column by column from the elementwise
  # max(a, b) = (a + b + |a - b|) / 2: k - 1 steps on column vectors, however
  # many rows there are. Any shift gives the same softmax, so rounding in the
  # maximum changes nothing, and its gradient cancels exactly.
  largest <- 0
  for (j in seq_len(d[2])) {
    column <- x[, j]
    largest <- (largest + column + abs(largest - column)) * 0.5
  }
  e <- exp(sweep(cbind(x, 0), 1, largest, "-"))
  sweep(e, 1, rowSums(e), "/")
}

#' Row and column sums and the transpose of greta arrays
#'
#' `rowSums()` and `colSums()` sum a greta array across its columns or down its
#' rows, and return column vectors, as greta does: for an `n x m` greta array
#' `x`, `rowSums(x)` is `n x 1` and `colSums(x)` is `m x 1`. `rowMeans()` and
#' `colMeans()` are these sums divided by `m` and by `n`. `t()` transposes a
#' two-dimensional greta array (a column vector becomes a row vector). On R
#' values these are base R's functions.
#'
#' @param x a greta array, or an R array for base R's functions
#' @param na.rm ignored for greta arrays, which have no missing values
#' @param dims as in base R: the first `dims` dimensions are the rows (kept by
#'   `rowSums()`, summed over by `colSums()`)
#' @return a greta array (or, for R values, what base R returns)
#' @details lockstep masks [base::rowSums()], [base::colSums()],
#'   [base::rowMeans()] and [base::colMeans()] with
#'   functions that dispatch on greta arrays and call base R otherwise, as
#'   greta does. For an array of more than two dimensions, `rowSums()` sums over
#'   every dimension but the first `dims`, giving those, and `colSums()` over
#'   the first `dims`, giving the remaining dimensions, as base R does.
#' @examples
#' x <- variable(dim = c(3, 2))
#' rowSums(x)
#' colSums(x)
#' t(x)
#' rowMeans(x)
#' # on R values, base R
#' rowSums(matrix(1:6, 3))
#' colSums(matrix(1:6, 3))
#' @name sums_and_transpose
NULL

#' @rdname sums_and_transpose
#' @export
rowSums <- function(x, na.rm = FALSE, dims = 1L) UseMethod("rowSums")

#' @export
rowSums.default <- function(x, na.rm = FALSE, dims = 1L) {
  base::rowSums(x, na.rm = na.rm, dims = dims)
}

#' @export
rowSums.greta_array <- function(x, na.rm = FALSE, dims = 1L) {
  dims <- check_sum_dims(dims, x, "rowSums")
  node <- get_node(x)
  if (dims == 1L) return(new_operation("rowsum", list(node), c(node$dim[1], 1L)))
  kept <- node$dim[seq_len(dims)]
  out <- rowSums(flatten_dims(x, dims))
  dim(out) <- kept
  out
}

#' @rdname sums_and_transpose
#' @export
colSums <- function(x, na.rm = FALSE, dims = 1L) UseMethod("colSums")

#' @export
colSums.default <- function(x, na.rm = FALSE, dims = 1L) {
  base::colSums(x, na.rm = na.rm, dims = dims)
}

#' @export
colSums.greta_array <- function(x, na.rm = FALSE, dims = 1L) {
  dims <- check_sum_dims(dims, x, "colSums")
  node <- get_node(x)
  rest <- node$dim[-seq_len(dims)]
  if (dims > 1L) node <- get_node(flatten_dims(x, dims))
  new_operation("colsum", list(node), if (length(rest) == 1L) c(rest, 1L) else rest)
}

#' @rdname sums_and_transpose
#' @export
rowMeans <- function(x, na.rm = FALSE, dims = 1L) UseMethod("rowMeans")

#' @export
rowMeans.default <- function(x, na.rm = FALSE, dims = 1L) {
  base::rowMeans(x, na.rm = na.rm, dims = dims)
}

#' @export
rowMeans.greta_array <- function(x, na.rm = FALSE, dims = 1L) {
  dims <- check_sum_dims(dims, x, "rowMeans")
  rowSums(x, dims = dims) / prod(dim(x)[-seq_len(dims)])
}

#' @rdname sums_and_transpose
#' @export
colMeans <- function(x, na.rm = FALSE, dims = 1L) UseMethod("colMeans")

#' @export
colMeans.default <- function(x, na.rm = FALSE, dims = 1L) {
  base::colMeans(x, na.rm = na.rm, dims = dims)
}

#' @export
colMeans.greta_array <- function(x, na.rm = FALSE, dims = 1L) {
  dims <- check_sum_dims(dims, x, "colMeans")
  colSums(x, dims = dims) / prod(dim(x)[seq_len(dims)])
}

# `dims` as base R takes it: a whole number from 1 to one less than x's
# number of dimensions (the dimensions kept by rowSums, summed by colSums).
check_sum_dims <- function(dims, x, what) {
  n <- length(dim(x))
  if (!is.numeric(dims) || length(dims) != 1 || !is.finite(dims) || dims != round(dims) ||
      dims < 1 || dims >= n) {
    stop("`dims` of ", what, "() must be a whole number from 1 to ", n - 1, " for a greta ",
         "array of ", n, " dimensions", call. = FALSE)
  }
  as.integer(dims)
}

# x as a matrix whose rows are its first `dims` dimensions (column-major, as R
# lays out arrays): rowSums() and colSums() over several dimensions are the
# one-dimension sums of this.
flatten_dims <- function(x, dims) {
  d <- dim(x)
  dim(x) <- c(prod(d[seq_len(dims)]), prod(d[-seq_len(dims)]))
  x
}

#' @rdname sums_and_transpose
#' @export
t.greta_array <- function(x) {
  node <- get_node(x)
  if (length(node$dim) != 2L) {
    stop("t() needs a two-dimensional greta array, but this one has dimension ",
         paste(node$dim, collapse = " x "), call. = FALSE)
  }
  new_operation("transpose", list(node), rev(node$dim))
}

#' Combine greta arrays
#'
#' `c()` concatenates greta arrays and numbers into a column vector, taking the
#' elements of each in R's (column-major) order, as greta does (R returns a
#' vector without dimensions). `cbind()` and `rbind()` put two-dimensional
#' greta arrays and numbers side by side or one above the other: R numbers
#' become a column (`cbind()`) or a row (`rbind()`), and a single number is
#' repeated along it, as in R.
#'
#' The engine copies each argument's block into the result and passes each
#' block of the gradient back to its argument.
#'
#' @param ... greta arrays and numbers (for `c()`, the first argument must be a
#'   greta array, as R dispatches `c()` on its first argument)
#' @param recursive,use.names ignored (greta arrays have no names)
#' @param deparse.level ignored (greta arrays have no dimnames)
#' @return a greta array: a column vector for `c()`, a matrix for `cbind()` and
#'   `rbind()`. As in greta, `c()` of a greta array and something that cannot
#'   become one (a function, a list) is a list of its arguments instead, the
#'   numbers among them made greta arrays.
#' @examples
#' a <- variable(dim = 2)
#' b <- variable(dim = c(2, 3))
#' c(a, 1, b)
#' cbind(a, b, 0)
#' rbind(t(a), 1:2)
#' @name combine
NULL

#' @rdname combine
#' @export
c.greta_array <- function(..., recursive = FALSE, use.names = TRUE) {
  args <- Filter(Negate(is.null), list(...))
  # As greta: with something that cannot become a greta array (a function, a
  # list), the result is a list of the arguments, numbers made greta arrays.
  coercible <- vapply(args, function(x) {
    is.greta_array(x) || ((is.numeric(x) || is.logical(x)) && is.atomic(x))
  }, logical(1))
  if (!all(coercible)) {
    args[coercible] <- lapply(args[coercible], as.greta_array)
    return(args)
  }
  parts <- lapply(seq_along(args), function(k) {
    x <- as.greta_array(args[[k]], paste0("argument ", k, " of c()"))
    n <- length(x)
    if (identical(as.integer(dim(x)), c(n, 1L))) x else x[seq_len(n)]
  })
  if (length(parts) == 1L) return(parts[[1]])
  concat_all(parts, c(sum(vapply(parts, length, numeric(1))), 1L))
}

#' @rdname combine
#' @export
cbind.greta_array <- function(..., deparse.level = 1) {
  args <- Filter(Negate(is.null), list(...))
  rows <- NULL
  for (x in args) {
    if (is.greta_array(x)) {
      if (length(dim(x)) != 2L) {
        stop("cbind() and rbind() need two-dimensional greta arrays, but one has dimension ",
             paste(dim(x), collapse = " x "), call. = FALSE)
      }
      rows <- c(rows, dim(x)[1])
    } else if (is.matrix(x)) {
      rows <- c(rows, nrow(x))
    } else if (length(x) > 1L) {
      rows <- c(rows, length(x))
    }
  }
  rows <- unique(rows)
  if (length(rows) > 1L) {
    stop("cbind() and rbind() need arguments with as many rows (columns for rbind()), not ",
         paste(rows, collapse = " and "), call. = FALSE)
  }
  if (is.null(rows)) rows <- 1L
  parts <- lapply(seq_along(args), function(k) {
    x <- args[[k]]
    if (is.greta_array(x)) return(x)
    if (!is.matrix(x)) x <- matrix(rep(as.numeric(x), length.out = rows), rows, 1L)
    as.greta_array(x, paste0("argument ", k))
  })
  if (length(parts) == 1L) return(parts[[1]])
  cols <- sum(vapply(parts, length, numeric(1))) %/% rows
  concat_all(parts, c(rows, cols))
}

#' @rdname combine
#' @export
rbind.greta_array <- function(..., deparse.level = 1) {
  args <- Filter(Negate(is.null), list(...))
  flipped <- lapply(args, function(x) {
    if (is.greta_array(x)) return(t(x))
    if (is.matrix(x)) return(t(x))
    x
  })
  t(do.call(cbind.greta_array, flipped))
}

# The elements of greta arrays `parts` (two or more) one after the other, as a
# greta array of dimension `dim`: a chain of the engine's two-operand concat
# op, each intermediate a column vector.
concat_all <- function(parts, dim) {
  nodes <- lapply(parts, get_node)
  acc <- nodes[[1]]
  for (k in seq_along(nodes)[-1]) {
    last <- k == length(nodes)
    out_dim <- if (last) dim else c(prod(acc$dim) + prod(nodes[[k]]$dim), 1L)
    result <- new_operation("concat", list(acc, nodes[[k]]), out_dim)
    acc <- get_node(result)
  }
  result
}

#' @rdname functions
#' @export
lchoose <- function(n, k) {
  if (!is.greta_array(n) && !is.greta_array(k)) return(base::lchoose(n, k))
  lgamma(n + 1) - lgamma(k + 1) - lgamma(n - k + 1)
}

#' @rdname functions
#' @export
choose <- function(n, k) {
  if (!is.greta_array(n) && !is.greta_array(k)) return(base::choose(n, k))
  exp(lchoose(n, k))
}
