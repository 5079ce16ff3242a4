#' Linear algebra on greta arrays
#'
#' R's matrix functions work on greta arrays as they do on R matrices, each
#' with R's conventions, as in greta:
#'
#' * `chol(x)` is the upper triangular Cholesky factor `R` of a symmetric,
#'   positive definite `x` (`t(R) %*% R` is `x`); like R's, it reads only the
#'   upper triangle of `x`.
#' * `chol2inv(x)` is the inverse of `t(R) %*% R` from the Cholesky factor
#'   `R` held in the upper triangle of `x` (R's [base::chol2inv()]).
#' * `solve(a, b)` solves `a %*% x = b` for `x`, and `solve(a)` is the inverse
#'   of `a`, by an LU decomposition with partial pivoting (as LAPACK's `dgesv`
#'   that R calls).
#' * `backsolve(r, x)` and `forwardsolve(l, x)` solve triangular systems using
#'   only the upper (`backsolve()`) or lower (`forwardsolve()`) triangle of
#'   their matrix, unless `upper.tri` says otherwise; `transpose = TRUE` solves
#'   with the transposed triangle, and `k` uses only the first `k` rows and
#'   columns of the matrix (and rows of `x`), as in R.
#' * `chol2symm(x)` is `t(x) %*% x` for an upper triangular Cholesky factor
#'   `x` with a positive diagonal (greta's inverse of `chol()`); as in greta,
#'   `multivariate_normal()` and `wishart()` with `Sigma = chol2symm(x)` use
#'   `x` as the Cholesky factor of `Sigma` directly, so `x` must be one (the
#'   lower triangle is never read there). And `cov2cor(V)` scales a covariance
#'   matrix into a correlation matrix, with a diagonal of exactly 1, as
#'   [stats::cov2cor()] does.
#'
#' On R values these are R's own functions: lockstep masks
#' [base::chol2inv()], [base::backsolve()], [base::forwardsolve()] and
#' [stats::cov2cor()] with functions that dispatch on greta arrays, as greta
#' does (`chol()` and `solve()` are generic in base R). Right-hand sides given
#' as R numbers become data; for `solve()`, `a` must be a greta array (use
#' [as_data()] for a fixed matrix), as R dispatches `solve()` on it.
#'
#' @section Gradients: Every function is differentiated exactly; elements of
#'   a matrix that the function does not read (the lower triangle for
#'   `chol()`, `chol2inv()` and `backsolve()`, the upper for `forwardsolve()`)
#'   get a gradient of zero, since the function does not depend on them. The
#'   gradient of `chol()` is that of Murray (2016), "Differentiation of the
#'   Cholesky decomposition" (arXiv:1602.07527).
#'
#' @section Matrices without a factor or inverse: R stops with an error when
#'   `chol()` meets a matrix that is not positive definite, or `solve()` an
#'   exactly singular one. The engine computes many chains at once, so instead
#'   that chain's result is `NaN` (every element), and so is its log density:
#'   samplers reject such a proposal as they reject one of density zero, and
#'   `calculate()` returns the `NaN`s. Keep such matrices out of a model's
#'   support: build covariance matrices from a Cholesky factor, or add a
#'   positive diagonal.
#'
#' @param x a greta array: a square matrix for `chol()` and `chol2inv()`, the
#'   right-hand side (a matrix or column vector) for `backsolve()` and
#'   `forwardsolve()`; or R values, for R's functions
#' @param a a square greta array
#' @param b a greta array or R numbers: the right-hand side, with as many rows
#'   as `a`; missing, `solve()` returns the inverse of `a`
#' @param r,l greta arrays (or R matrices) holding the triangular matrix in
#'   their first `k` rows and columns
#' @param k the number of rows and columns of `r` (`l`) to use, and of rows of
#'   `x`
#' @param upper.tri whether to use the upper triangle of `r` (`l`); else the
#'   lower
#' @param transpose whether to solve `t(T) %*% y = x` for the triangle `T`
#' @param size for greta arrays, only `ncol(x)`
#' @param LINPACK ignored for greta arrays (must be `FALSE`)
#' @param V a square greta array (or R matrix): a covariance matrix
#' @param ... ignored for greta arrays (a warning says so for `chol()`)
#' @return a greta array (for R values, what R returns): `n x n` for `chol()`,
#'   `chol2inv()`, `chol2symm()`, `cov2cor()` and `solve(a)`; the shape of the
#'   right-hand side (a column vector for a vector) for the solves
#' @examples
#' # a covariance matrix from a Cholesky factor, and back
#' S <- matrix(c(2, 0.5, 0.5, 1), 2)
#' sigma <- variable(lower = 0.5, upper = 2, dim = 2)
#' V <- as_data(S) * (sigma %*% t(sigma))
#' R <- chol(V)
#' chol2symm(R)
#' cov2cor(V)
#' chol2inv(R)
#' # linear systems
#' b <- variable(dim = 2)
#' solve(V, b)
#' solve(V)
#' backsolve(R, b)
#' forwardsolve(t(R), b)
#' backsolve(R, b, transpose = TRUE)
#' # the values, with the parameters fixed
#' calculate(solve(V, b), values = list(sigma = c(1, 1), b = c(1, 2)))
#' solve(S, c(1, 2))
#' # on R values, R's functions
#' backsolve(chol(S), c(1, 2))
#' @name linear_algebra
NULL

# Stops unless greta array `x` (argument `arg` of `what`) is a square matrix.
check_square <- function(x, arg, what) {
  d <- dim(x)
  if (length(d) != 2L || d[1] != d[2]) {
    stop("`", what, "()` needs `", arg, "` to be a square matrix, but it has dimension ",
         paste(d, collapse = " x "), call. = FALSE)
  }
}

# Stops unless the right-hand side `b` (argument `arg`) of a solve has as many
# rows as the square matrix `a` and two dimensions.
check_rhs <- function(a, b, arg, what) {
  d <- dim(b)
  if (length(d) != 2L) {
    stop("`", what, "()` needs `", arg, "` to be a matrix or column vector, but it has ",
         "dimension ", paste(d, collapse = " x "), call. = FALSE)
  }
  if (d[1] != dim(a)[1]) {
    stop("`", what, "()` needs `", arg, "` to have ", dim(a)[1], " rows (as many as the ",
         "matrix has), but it has ", d[1], call. = FALSE)
  }
}

#' @rdname linear_algebra
#' @export
chol.greta_array <- function(x, ...) {
  if (length(list(...)) > 0L) {
    warning("`chol()` options are ignored for greta arrays", call. = FALSE)
  }
  check_square(x, "x", "chol")
  new_operation("chol", list(get_node(x)), dim(x))
}

#' @rdname linear_algebra
#' @export
chol2inv <- function(x, size = NCOL(x), LINPACK = FALSE) UseMethod("chol2inv")

#' @export
chol2inv.default <- function(x, size = NCOL(x), LINPACK = FALSE) {
  # base R refuses any LINPACK argument (defunct), so pass it only when given
  if (missing(LINPACK)) return(base::chol2inv(x, size = size))
  base::chol2inv(x, size = size, LINPACK = LINPACK)
}

#' @export
chol2inv.greta_array <- function(x, size = NCOL(x), LINPACK = FALSE) {
  check_square(x, "x", "chol2inv")
  # greta warns and goes on: scripts written for it pass these
  if (!identical(as.numeric(size), as.numeric(ncol(x)))) {
    warning("`size` of chol2inv() is ignored for a greta array: the inverse is of the ",
            "whole ", ncol(x), " x ", ncol(x), " factor", call. = FALSE)
  }
  if (!identical(LINPACK, FALSE)) {
    warning("`LINPACK` of chol2inv() is ignored for a greta array", call. = FALSE)
  }
  new_operation("chol2inv", list(get_node(x)), dim(x))
}

#' @rdname linear_algebra
#' @export
solve.greta_array <- function(a, b, ...) {
  check_square(a, "a", "solve")
  if (missing(b)) b <- diag(dim(a)[1])
  b <- as.greta_array(b, "b")
  check_rhs(a, b, "b", "solve")
  new_operation("solve", list(get_node(a), get_node(b)), dim(b))
}

#' @rdname linear_algebra
#' @export
backsolve <- function(r, x, k = ncol(r), upper.tri = TRUE, transpose = FALSE) {
  if (!is.greta_array(r) && !is.greta_array(x)) {
    return(base::backsolve(r, x, k = k, upper.tri = upper.tri, transpose = transpose))
  }
  triangular_solve(r, x, k, upper.tri, transpose, "backsolve")
}

#' @rdname linear_algebra
#' @export
forwardsolve <- function(l, x, k = ncol(l), upper.tri = FALSE, transpose = FALSE) {
  if (!is.greta_array(l) && !is.greta_array(x)) {
    return(base::forwardsolve(l, x, k = k, upper.tri = upper.tri, transpose = transpose))
  }
  triangular_solve(l, x, k, upper.tri, transpose, "forwardsolve")
}

# R's backsolve() and forwardsolve() are one function: the triangle of r[1:k,
# 1:k] named by upper.tri, transposed or not, solved against x[1:k, ]. The
# system's matrix is lower triangular exactly when upper.tri == transpose: the
# engine's forwardsolve op of t(r) or r (it reads the lower triangle), else its
# backsolve op (the upper).
triangular_solve <- function(r, x, k, upper.tri, transpose, what) {
  arg <- if (what == "backsolve") "r" else "l"
  r <- as.greta_array(r, arg)
  x <- as.greta_array(x, "x")
  if (length(dim(r)) != 2L) {
    stop("`", what, "()` needs `", arg, "` to be a matrix, but it has dimension ",
         paste(dim(r), collapse = " x "), call. = FALSE)
  }
  if (!is.numeric(k) || length(k) != 1L || k < 1 || k != round(k) || k > min(dim(r))) {
    stop("`", what, "()` needs `k` to be a whole number from 1 to ", min(dim(r)),
         call. = FALSE)
  }
  if (!is.logical(upper.tri) || length(upper.tri) != 1L || is.na(upper.tri) ||
        !is.logical(transpose) || length(transpose) != 1L || is.na(transpose)) {
    stop("`", what, "()` needs `upper.tri` and `transpose` to be TRUE or FALSE", call. = FALSE)
  }
  if (any(dim(r) != k)) r <- r[seq_len(k), seq_len(k)]
  if (length(dim(x)) == 2L && dim(x)[1] > k) x <- x[seq_len(k), , drop = FALSE]
  check_rhs(r, x, "x", what)
  if (transpose) r <- t(r)
  op <- if (upper.tri == transpose) "forwardsolve" else "backsolve"
  new_operation(op, list(get_node(r), get_node(x)), dim(x))
}

#' @rdname linear_algebra
#' @export
chol2symm <- function(x) UseMethod("chol2symm")

#' @export
chol2symm.default <- function(x) {
  if (length(dim(x)) != 2L || nrow(x) != ncol(x)) {
    stop("`chol2symm()` needs `x` to be a square matrix", call. = FALSE)
  }
  t(x) %*% x
}

# greta's "cholesky" representation: chol2symm(x) keeps x on its node
# (`cholesky_factor`), and the densities with a covariance parameter
# (multivariate_normal(), wishart(): upper_factor(), R/multivariate.R)
# use x itself as its Cholesky factor instead of factorising t(x) %*% x again.
# x must be upper triangular with a positive
# diagonal, as chol2symm() requires (as greta's does); data are checked here,
# and data that are not such a factor are not kept.
#' @export
chol2symm.greta_array <- function(x) {
  check_square(x, "x", "chol2symm")
  symm <- t(x) %*% x
  node <- get_node(x)
  if (node$type != "data" || is_upper_cholesky(matrix(as.numeric(node$value), nrow(x)))) {
    symm_node <- get_node(symm)
    symm_node$cholesky_factor <- node
  }
  symm
}

# Upper triangular with a positive diagonal: R's chol() of t(U) %*% U is U.
is_upper_cholesky <- function(U) all(U[lower.tri(U)] == 0) && all(diag(U) > 0)

#' @rdname linear_algebra
#' @export
cov2cor <- function(V) UseMethod("cov2cor")

#' @export
cov2cor.default <- function(V) stats::cov2cor(V)

# R's cov2cor: Is V Is with Is = sqrt(1 / diag(V)) on both sides, and a
# diagonal of exactly 1 (so its gradient is exactly 0): the off-diagonal
# elements through a mask, the diagonal as data.
#' @export
cov2cor.greta_array <- function(V) {
  check_square(V, "V", "cov2cor")
  n <- dim(V)[1]
  Is <- sqrt(1 / V[cbind(seq_len(n), seq_len(n))])
  off <- matrix(1, n, n) - diag(n)
  V * (Is %*% t(Is)) * off + diag(n)
}
