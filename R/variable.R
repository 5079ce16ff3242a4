#' Create a variable greta array
#'
#' A variable is an unknown of the model, with a flat (improper uniform) prior
#' unless a distribution is assigned to it. Bounds are handled as greta handles
#' them, by sampling on an unconstrained scale: `lower` only, `x = lower +
#' exp(z)`; `upper` only, `x = upper - exp(z)`; both, `x = lower + (upper -
#' lower) * ilogit(z)`.
#'
#' Bounds may differ from element to element, as in greta: `lower` and `upper`
#' are then vectors or arrays with one value per element (or a single number,
#' for every element). Without `dim`, the variable takes the dimensions of the
#' bound that has several values (a vector gives a column vector). Each
#' element may have a lower bound, an upper bound, both or neither, and gets
#' the transform above that fits its own bounds.
#'
#' @param lower,upper bounds (`-Inf` and `Inf` for none): single numbers, or
#'   one per element of the variable
#' @param dim the dimensions of the variable: `NULL` for a scalar (or the
#'   dimensions of bounds with several values), a number for a column vector,
#'   or a vector of dimensions
#' @return a greta array of type variable
#' @examples
#' sigma <- variable(lower = 0)
#' beta <- variable(dim = c(3, 1))
#' p <- variable(lower = 0, upper = 1, dim = 2)
#' # a bound per element: a 3 x 1 variable with three different ranges
#' theta <- variable(lower = c(-3, -1, 0), upper = c(0, 2, Inf))
#' @export
variable <- function(lower = -Inf, upper = Inf, dim = NULL) {
  check_bound(lower, "lower")
  check_bound(upper, "upper")
  if (length(lower) == 1L && length(upper) == 1L) {
    if (!(lower < upper)) {
      stop("`lower` must be less than `upper`, but lower = ", lower, " and upper = ", upper,
           call. = FALSE)
    }
    return(new_variable(lower, upper, check_dim(dim)))
  }
  dim <- bounds_dim(lower, upper, dim)
  n <- prod(dim)
  lower <- rep_len(as.numeric(lower), n)
  upper <- rep_len(as.numeric(upper), n)
  bad <- which(!(lower < upper))
  if (length(bad)) {
    stop("`lower` must be less than `upper` for every element, but element ", bad[1],
         " has lower = ", lower[bad[1]], " and upper = ", upper[bad[1]], call. = FALSE)
  }
  if (all(lower == lower[1]) && all(upper == upper[1])) {
    return(new_variable(lower[1], upper[1], dim))  # one range for all: the engine's own
  }
  elementwise_bounded_variable(lower, upper, dim)
}

# The dimensions of a variable with bounds per element: `dim` if given (each
# bound then one value or one per element), otherwise those of the bound with
# several values (both alike if both have several).
bounds_dim <- function(lower, upper, dim) {
  shape <- function(b) if (is.null(dim(b))) c(length(b), 1L) else as.integer(dim(b))
  several <- Filter(function(b) length(b) > 1L, list(lower = lower, upper = upper))
  if (!is.null(dim)) {
    dim <- check_dim(dim)
    for (arg in names(several)) {
      if (length(several[[arg]]) != prod(dim)) {
        stop("`", arg, "` has ", length(several[[arg]]), " values, but `dim` (",
             paste(dim, collapse = " x "), ") has ", prod(dim), " elements: give one bound, ",
             "or one per element", call. = FALSE)
      }
    }
    return(dim)
  }
  shapes <- lapply(several, shape)
  if (length(shapes) == 2L && !identical(shapes$lower, shapes$upper)) {
    stop("`lower` and `upper` have incompatible dimensions: ",
         paste(shapes$lower, collapse = " x "), " and ", paste(shapes$upper, collapse = " x "),
         call. = FALSE)
  }
  shapes[[1]]
}

# A variable whose elements have bounds of their own: a free column z, each
# element's transform by the kind of its bounds (the engine's transforms take
# one range per variable), the pieces put back in element order, and the log
# |Jacobian| added to the model. initials() values map back through the
# inverse transforms, after the check that they lie inside their bounds.
elementwise_bounded_variable <- function(lower, upper, dim) {
  n <- length(lower)
  kind <- ifelse(is.finite(lower), ifelse(is.finite(upper), "interval", "lower"),
                 ifelse(is.finite(upper), "upper", "none"))
  free <- variable(dim = c(n, 1L))
  pieces <- list()
  jacobian <- list()
  order <- integer()
  for (k in c("none", "lower", "upper", "interval")) {
    at <- which(kind == k)
    if (length(at) == 0L) next
    z <- if (length(at) == n) free else free[at]
    l <- lower[at]
    u <- upper[at]
    pieces[[k]] <- switch(k, none = z, lower = l + exp(z), upper = u - exp(z),
                          interval = l + (u - l) * ilogit(z))
    # d/dz: exp(z) for a one-sided bound; (u - l) ilogit(z) ilogit(-z) for both
    if (k %in% c("lower", "upper")) jacobian[[k]] <- sum(z)
    if (k == "interval") jacobian[[k]] <- sum(log(u - l)) - sum(log1pe(-z)) - sum(log1pe(z))
    order <- c(order, at)
  }
  x <- if (length(pieces) == 1L) pieces[[1]] else do.call(c, unname(pieces))[order(order)]
  if (length(jacobian)) add_log_jacobian(Reduce(`+`, jacobian))
  x <- constrained_array(x, dim, "bounded", function(value, name) {
    v <- as.numeric(value)
    check_initial_support(v, lower, upper, name)
    z <- v
    for (i in seq_len(n)) z[i] <- to_free(v[i], lower[i], upper[i])
    list(list(node = get_node(free), value = z))
  })
  node <- get_node(x)
  node$bounds <- list(lower = lower, upper = upper)  # checked by calculate()
  x
}

new_variable <- function(lower, upper, dim) {
  as_greta_array_from_node(new_node("variable", dim, lower = as.numeric(lower),
                                    upper = as.numeric(upper)))
}

check_bound <- function(x, arg) {
  if (is.greta_array(x)) {
    stop("`", arg, "` must be R numbers, not a greta array", call. = FALSE)
  }
  if (!is.numeric(x) || length(x) == 0L || anyNA(x)) {
    stop("`", arg, "` must be a number, or one number per element (-Inf or Inf for no bound)",
         call. = FALSE)
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
