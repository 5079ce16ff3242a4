#' Eigendecomposition of symmetric greta arrays
#'
#' `eigen(x)` of a square greta array is the eigendecomposition of the
#' symmetric matrix whose lower triangle is `x`'s, as
#' `base::eigen(x, symmetric = TRUE)` (which reads only the lower triangle):
#' a list of `values`, the eigenvalues in decreasing order as an `n x 1`
#' greta array, and `vectors`, the `n x n` greta array whose columns are the
#' unit eigenvectors in the same order (`NULL` with `only.values = TRUE`). As
#' in greta, only symmetric matrices are decomposed. On R values this is
#' base R's `eigen()`.
#'
#' An eigenvector's sign is arbitrary (R's follows LAPACK's); lockstep signs
#' each so that its largest element is positive. The engine computes each
#' chain's decomposition by Jacobi rotations and differentiates it exactly:
#' an eigenvalue's gradient is `v v^T` for its eigenvector `v`, and the
#' vectors' gradients need distinct eigenvalues (with equal ones, use only the
#' values, whose gradients stay finite).
#'
#' @param x a square greta array (or an R matrix, for base R)
#' @param symmetric only `TRUE` (or missing) for greta arrays
#' @param only.values whether to return only the values
#' @param EISPACK ignored, as in base R
#' @return a list with `values` and `vectors`
#' @examples
#' x <- variable(dim = c(3, 3))
#' e <- eigen(x %*% t(x))
#' e$values
#' e$vectors
#' eigen(matrix(c(2, 1, 1, 2), 2))
#' @export
eigen <- function(x, symmetric, only.values = FALSE, EISPACK = FALSE) UseMethod("eigen")

#' @export
eigen.default <- function(x, symmetric, only.values = FALSE, EISPACK = FALSE) {
  base::eigen(x, symmetric = symmetric, only.values = only.values, EISPACK = EISPACK)
}

#' @export
eigen.greta_array <- function(x, symmetric, only.values = FALSE, EISPACK = FALSE) {
  if (!missing(symmetric) && !isTRUE(symmetric)) {
    stop("`eigen()` of a greta array decomposes symmetric matrices only: `symmetric` must be ",
         "TRUE (or missing)", call. = FALSE)
  }
  if (!is.logical(only.values) || length(only.values) != 1L || is.na(only.values)) {
    stop("`only.values` of eigen() must be TRUE or FALSE", call. = FALSE)
  }
  check_square(x, "x", "eigen")
  n <- dim(x)[1]
  # one op whose value holds the values (column 1) and the vectors side by side
  both <- get_node(new_operation("eigen", list(get_node(x)), c(n, n + 1L)))
  values <- gather_positions(both, seq_len(n), c(n, 1L))
  vectors <- if (only.values) NULL else gather_positions(both, n + seq_len(n * n), c(n, n))
  list(values = values, vectors = vectors)
}
