#' Functions of greta arrays
#'
#' R's elementwise mathematical functions work on greta arrays as they do on R
#' arrays: `abs()`, `sign()`, `ceiling()`, `floor()`, `round()`, `trunc()`,
#' `sqrt()`, `exp()`, `expm1()`, `log()` (with an optional `base`), `log1p()`,
#' `log10()`, `log2()`, `cos()`, `sin()`, `tan()`, `acos()`, `asin()`,
#' `atan()`, `cosh()`, `sinh()`, `tanh()`, `acosh()`, `asinh()`, `atanh()`,
#' `cospi()`, `sinpi()`, `tanpi()`, `lgamma()`, `digamma()` and `trigamma()`.
#' `sum()` adds up every element of its arguments, and `mean()` averages the
#' elements of a greta array (its sum over its length).
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
#' @section Gradients: Every function is differentiated exactly where it is
#'   differentiable. The steps `sign()`, `ceiling()`, `floor()`, `round()` and
#'   `trunc()` have gradient 0 (also at their steps), and `abs()` has gradient
#'   `sign(x)`, which is 0 at `x = 0`. `round()` rounds half to even, as R's
#'   does, and takes only `digits = 0`. Outside a function's domain (e.g.
#'   `log(-1)`, `acos(2)`) value and gradient are `NaN`, as R's value is;
#'   `lgamma()`, `digamma()` and `trigamma()` take negative non-integer
#'   arguments too.
#'
#' @param x a greta array (or, for the link functions, R numbers)
#' @param ... greta arrays or numbers (for `sum()`); `base` for `log()`,
#'   `digits` (0 only) for `round()`
#' @param na.rm ignored: greta arrays have no missing values
#' @return a greta array (for the link functions on R numbers, R numbers)
#' @examples
#' x <- variable(dim = 3)
#' exp(x)
#' sum(log1p(exp(x)))
#' ilogit(x)
#' iprobit(x)
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
  "trigamma"
)

#' @rdname functions
#' @export
Math.greta_array <- function(x, ...) {
  if (!.Generic %in% math_functions) {
    stop("`", .Generic, "()` is not supported for greta arrays (supported: ",
         paste(math_functions, collapse = ", "),
         "; and the link functions ilogit, iprobit, icloglog, icauchit and log1pe)",
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
    return(elementwise_unary("log", x) / log(args[[1]]))
  }
  elementwise_unary(.Generic, x)
}

#' @rdname functions
#' @export
Summary.greta_array <- function(..., na.rm = FALSE) {
  if (.Generic != "sum") {
    stop("`", .Generic, "()` is not supported for greta arrays yet (supported: sum; and mean())",
         call. = FALSE)
  }
  parts <- lapply(list(...), function(x) {
    node <- get_node(as.greta_array(x))
    new_operation("sum", list(node), c(1L, 1L))
  })
  Reduce(`+`, parts)
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
#' @param dims as in base R; greta arrays take only `dims = 1`
#' @return a greta array (or, for R values, what base R returns)
#' @details lockstep masks [base::rowSums()], [base::colSums()],
#'   [base::rowMeans()] and [base::colMeans()] with
#'   functions that dispatch on greta arrays and call base R otherwise, as
#'   greta does. For an array of more than two dimensions, `rowSums()` sums over
#'   every dimension but the first, and `colSums()` over the first, giving the
#'   remaining dimensions (as base R does with `dims = 1`).
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
  check_sum_dims(dims, "rowSums")
  node <- get_node(x)
  new_operation("rowsum", list(node), c(node$dim[1], 1L))
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
  check_sum_dims(dims, "colSums")
  node <- get_node(x)
  rest <- node$dim[-1]
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
  check_sum_dims(dims, "rowMeans")
  rowSums(x) / prod(dim(x)[-1])
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
  check_sum_dims(dims, "colMeans")
  colSums(x) / dim(x)[1]
}

check_sum_dims <- function(dims, what) {
  if (!identical(as.numeric(dims), 1)) {
    stop("`", what, "()` of a greta array takes only `dims = 1`", call. = FALSE)
  }
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
