# sd(), var() and scale() of greta arrays: R's sample statistics (divisor
# n - 1), built from the ops greta arrays already have, so their gradients
# are those ops' own.

#' Standard deviation, variance and scaling of greta arrays
#'
#' `sd()`, `var()` and `scale()` of a greta array compute what R's do, with
#' R's divisor `n - 1`: `sd(x)` is the standard deviation of all the elements
#' of `x`; `var(x)` of a column vector is its variance (a 1 x 1 greta array),
#' of a matrix the covariance matrix of its columns, and `var(x, y)` the
#' covariances of the columns of `x` with those of `y`; `scale(x)` centres
#' each column of a matrix (or the column vector) by its mean and divides it
#' by its standard deviation. `center` and `scale` may also be `FALSE`, or R
#' numbers, one per column, as in [base::scale()]; with `center = FALSE`,
#' `scale = TRUE` divides by each column's root mean square (R's rule).
#'
#' lockstep masks [stats::sd()] and [stats::var()] with generics, so that
#' they reach greta arrays (R's are not generic); on R values they are R's.
#' A greta array holds no missing values, so `na.rm` and `use` are ignored for
#' greta arrays, and `scale()` of a greta array has no `"scaled:center"`
#' attributes.
#'
#' @param x a greta array (or R values, for R's functions)
#' @param y `NULL`, or a greta array or R matrix with the rows of `x`
#' @param na.rm,use passed to R's functions for R values
#' @param center,scale `TRUE`, `FALSE` or R numbers, one per column of `x`
#' @return a greta array (for R values, what R returns)
#' @examples
#' x <- normal(0, 1, dim = c(5, 2))
#' sd(x)
#' var(x)  # 2 x 2
#' scale(x)
#' calculate(sd(as_data(c(1, 2, 4))))[[1]]  # sd(c(1, 2, 4))
#' @name statistics
NULL

#' @rdname statistics
#' @export
sd <- function(x, na.rm = FALSE) UseMethod("sd")

#' @export
sd.default <- function(x, na.rm = FALSE) stats::sd(x, na.rm = na.rm)

#' @export
sd.greta_array <- function(x, na.rm = FALSE) {
  n <- length(x)
  if (n < 2L) stop("sd() of a greta array needs at least 2 elements, but `x` has ", n, call. = FALSE)
  sqrt(sum((x - mean(x))^2) / (n - 1))
}

#' @rdname statistics
#' @export
var <- function(x, y = NULL, na.rm = FALSE, use) UseMethod("var")

#' @export
var.default <- function(x, y = NULL, na.rm = FALSE, use) {
  if (is.greta_array(y)) return(var.greta_array(x, y))
  if (missing(use)) return(stats::var(x, y, na.rm = na.rm))
  stats::var(x, y, na.rm = na.rm, use = use)
}

#' @export
var.greta_array <- function(x, y = NULL, na.rm = FALSE, use) {
  xc <- centred_columns(x, "x", "var")
  yc <- if (is.null(y)) xc else centred_columns(y, "y", "var")
  if (nrow(yc) != nrow(xc)) {
    stop("`x` and `y` of var() must have the same rows, but have ", nrow(xc), " and ",
         nrow(yc), call. = FALSE)
  }
  t(xc) %*% yc / (nrow(xc) - 1)
}

#' @rdname statistics
#' @export
scale.greta_array <- function(x, center = TRUE, scale = TRUE) {
  x <- as_columns(x, "x", "scale")
  n <- nrow(x); k <- ncol(x)
  given <- function(v, arg) {
    if (is.logical(v) && length(v) == 1L && !is.na(v)) return(v)
    if (is.numeric(v) && length(v) == k && all(is.finite(v))) return(v)
    stop("`", arg, "` of scale() must be TRUE, FALSE or ", k, " finite number",
         if (k > 1) "s" else "", " (one per column of `x`)", call. = FALSE)
  }
  center <- given(center, "center"); scale <- given(scale, "scale")
  if (!isFALSE(center)) {
    x <- sweep(x, 2, if (isTRUE(center)) colMeans(x) else center, "-")
  }
  if (!isFALSE(scale)) {
    if (isTRUE(scale) && n < 2L) {
      stop("scale() of a greta array needs at least 2 rows to scale by", call. = FALSE)
    }
    x <- sweep(x, 2, if (isTRUE(scale)) sqrt(colSums(x^2) / (n - 1)) else scale, "/")
  }
  x
}

# `x` as a matrix of columns (a vector is one column), as R's var() and
# scale() take it; more than two dimensions are refused.
as_columns <- function(x, arg, what) {
  x <- as.greta_array(x, arg)
  if (length(dim(x)) != 2L) {
    stop("`", arg, "` of ", what, "() must be a vector or matrix, but has dimension ",
         paste(dim(x), collapse = " x "), call. = FALSE)
  }
  x
}

centred_columns <- function(x, arg, what) {
  x <- as_columns(x, arg, what)
  if (nrow(x) < 2L) {
    stop(what, "() of a greta array needs at least 2 rows, but `", arg, "` has ", nrow(x),
         call. = FALSE)
  }
  sweep(x, 2, colMeans(x), "-")
}
