#' Functions of greta arrays
#'
#' `exp()`, `log()`, `log1p()`, `sqrt()` and `sum()` work on greta arrays as
#' they do on R arrays; `ilogit()` is the inverse logit, `1 / (1 + exp(-x))`
#' (`plogis()` in R).
#'
#' @param x a greta array
#' @param ... greta arrays or numbers (for `sum()`)
#' @param na.rm ignored: greta arrays have no missing values
#' @return a greta array
#' @examples
#' x <- variable(dim = 3)
#' exp(x)
#' sum(log1p(exp(x)))
#' ilogit(x)
#' @name functions
NULL

#' @rdname functions
#' @export
Math.greta_array <- function(x, ...) {
  supported <- c("exp", "log", "log1p", "sqrt")
  if (!.Generic %in% supported) {
    stop("`", .Generic, "()` is not supported for greta arrays yet (supported: ",
         paste(supported, collapse = ", "), ")", call. = FALSE)
  }
  elementwise_unary(.Generic, x)
}

#' @rdname functions
#' @export
Summary.greta_array <- function(..., na.rm = FALSE) {
  if (.Generic != "sum") {
    stop("`", .Generic, "()` is not supported for greta arrays yet", call. = FALSE)
  }
  parts <- lapply(list(...), function(x) {
    node <- get_node(as.greta_array(x))
    new_operation("sum", list(node), c(1L, 1L))
  })
  Reduce(`+`, parts)
}

#' @rdname functions
#' @export
ilogit <- function(x) {
  if (!is.greta_array(x)) return(stats::plogis(x))
  elementwise_unary("ilogit", x)
}

#' Row and column sums and the transpose of greta arrays
#'
#' `rowSums()` and `colSums()` sum a greta array across its columns or down its
#' rows, and return column vectors, as greta does: for an `n x m` greta array
#' `x`, `rowSums(x)` is `n x 1` and `colSums(x)` is `m x 1`. `t()` transposes a
#' two-dimensional greta array (a column vector becomes a row vector). On R
#' values these are base R's functions.
#'
#' @param x a greta array, or an R array for base R's functions
#' @param na.rm ignored for greta arrays, which have no missing values
#' @param dims as in base R; greta arrays take only `dims = 1`
#' @return a greta array (or, for R values, what base R returns)
#' @details lockstep masks [base::rowSums()] and [base::colSums()] with
#'   functions that dispatch on greta arrays and call base R otherwise, as
#'   greta does. For an array of more than two dimensions, `rowSums()` sums over
#'   every dimension but the first, and `colSums()` over the first, giving the
#'   remaining dimensions (as base R does with `dims = 1`).
#' @examples
#' x <- variable(dim = c(3, 2))
#' rowSums(x)
#' colSums(x)
#' t(x)
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
