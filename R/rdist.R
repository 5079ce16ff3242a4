#' Distances between the rows of greta arrays
#'
#' `rdist(x1, x2)` is the matrix of Euclidean distances between the rows of
#' `x1` and the rows of `x2`, as greta's `rdist()` (and `fields::rdist()`,
#' which greta calls on R values): element `[i, j]` is
#' `sqrt(sum((x1[i, ] - x2[j, ])^2))`. With `x2 = NULL` it is the square
#' matrix of distances between the rows of `x1`. A greta array (or R value)
#' that is not two-dimensional is taken as a column vector of its elements, as
#' in greta, and `x1` and `x2` must have as many columns. On R values it is
#' computed in R (so the fields package is not needed).
#'
#' It is built from the engine's elementwise ops (a squared difference per
#' column, summed, and a square root), so it runs on every backend and is
#' differentiated exactly. The diagonal of the self-distance matrix
#' (`x2 = NULL`) is exactly zero, with gradient zero (the square root's
#' derivative is infinite at 0, so the diagonal is not computed through it);
#' two distinct rows that coincide have no derivative, and their gradient is
#' not finite.
#'
#' @param x1 a greta array or R numbers: one point per row
#' @param x2 a greta array or R numbers with as many columns as `x1`, or
#'   `NULL` for the distances between the rows of `x1`
#' @param compact ignored for greta arrays (with a warning if `TRUE`), as in
#'   greta; R values give the full matrix either way
#' @return an `nrow(x1) x nrow(x2)` greta array (for R values, an R matrix)
#' @examples
#' coords <- matrix(c(0, 3, 1, 0, 4, 1), 3, 2)
#' rdist(coords)
#' sigma <- variable(lower = 0)
#' centres <- variable(dim = c(2, 2))
#' K <- exp(-rdist(coords, centres)^2 / sigma)
#' dim(K)
#' @export
rdist <- function(x1, x2 = NULL, compact = FALSE) {
  greta <- is.greta_array(x1) || is.greta_array(x2)
  if (greta && isTRUE(compact)) warning("`compact` is ignored for greta arrays", call. = FALSE)
  self <- is.null(x2)
  x1 <- rdist_points(x1, "x1")
  x2 <- if (self) x1 else rdist_points(x2, "x2")
  if (ncol(x1) != ncol(x2)) {
    stop("`x1` and `x2` of rdist() must have the same number of columns, but have ",
         ncol(x1), " and ", ncol(x2), call. = FALSE)
  }
  # the squared distances, one column (coordinate) at a time: each term is an
  # outer difference, so no n1 x n2 x d intermediate is formed
  squared <- 0
  for (j in seq_len(ncol(x1))) {
    difference <- outer(x1[, j], x2[, j], "-")
    squared <- squared + difference * difference
  }
  if (!greta) return(sqrt(squared))
  if (!self) return(sqrt(squared))
  # the diagonal is 0; it goes through the square root as 1 and is then set,
  # so that sqrt()'s infinite derivative at 0 meets no gradient
  on_diagonal <- cbind(seq_len(nrow(x1)), seq_len(nrow(x1)))
  squared[on_diagonal] <- 1
  distances <- sqrt(squared)
  distances[on_diagonal] <- 0
  distances
}

# A greta array or R values as rdist() takes them: two-dimensional, with
# anything else as a column vector of its elements.
rdist_points <- function(x, arg) {
  if (is.greta_array(x)) {
    if (length(dim(x)) != 2L) x <- x[seq_len(length(x))]
    return(x)
  }
  if (!is.numeric(x) && !is.logical(x)) {
    stop("`", arg, "` of rdist() must be a greta array or numbers, not ", class(x)[1],
         call. = FALSE)
  }
  if (length(dim(x)) != 2L) x <- matrix(as.numeric(x), ncol = 1L)
  x
}
