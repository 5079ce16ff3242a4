#' Create a variable greta array
#'
#' A variable is an unknown of the model, with a flat (improper uniform) prior
#' unless a distribution is assigned to it. Bounds are handled as greta handles
#' them, by sampling on an unconstrained scale: `lower` only, `x = lower +
#' exp(z)`; `upper` only, `x = upper - exp(z)`; both, `x = lower + (upper -
#' lower) * ilogit(z)`.
#'
#' @param lower,upper scalar bounds (`-Inf` and `Inf` for none)
#' @param dim the dimensions of the variable: `NULL` for a scalar, a number
#'   for a column vector, or a vector of dimensions
#' @return a greta array of type variable
#' @examples
#' sigma <- variable(lower = 0)
#' beta <- variable(dim = c(3, 1))
#' p <- variable(lower = 0, upper = 1, dim = 2)
#' @export
variable <- function(lower = -Inf, upper = Inf, dim = NULL) {
  check_bound(lower, "lower")
  check_bound(upper, "upper")
  if (!(lower < upper)) {
    stop("`lower` must be less than `upper`, but lower = ", lower, " and upper = ", upper,
         call. = FALSE)
  }
  new_variable(lower, upper, check_dim(dim))
}

new_variable <- function(lower, upper, dim) {
  as_greta_array_from_node(new_node("variable", dim, lower = as.numeric(lower),
                                    upper = as.numeric(upper)))
}

check_bound <- function(x, arg) {
  if (!is.numeric(x) || length(x) != 1L || is.na(x)) {
    stop("`", arg, "` must be a single number (-Inf or Inf for no bound)", call. = FALSE)
  }
}

# NULL -> scalar, n -> n x 1, otherwise the dims themselves.
check_dim <- function(dim, arg = "dim") {
  if (is.null(dim)) return(c(1L, 1L))
  if (!is.numeric(dim) || anyNA(dim) || any(dim < 1) || any(dim != round(dim))) {
    stop("`", arg, "` must be a vector of positive whole numbers", call. = FALSE)
  }
  dim <- as.integer(dim)
  if (length(dim) == 1L) dim <- c(dim, 1L)
  dim
}
