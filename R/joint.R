# joint(): greta's joint distribution of independent univariate components,
# one per column of an n x K greta array. Its log density, per row, is the sum
# of the components' log densities of that row's elements (the engine's logpdf
# op on each column, the component's own family and truncation), added to the
# model as a multivariate distribution's is (R/multivariate.R), whose per-row
# values log_lik() traces; its draws are made in R (joint_family).

#' Joint distributions of independent components
#'
#' `joint()` combines univariate probability distributions into a joint
#' distribution over the columns of a matrix, as greta's does: column `k` of
#' an `n x K` greta array follows the `k`th distribution, all elements
#' independent. It may be the distribution of a variable or, with
#' [distribution()], of data.
#'
#' @param ... two or more scalar distributions, such as `normal(0, 1)` or
#'   `poisson(3)` (see [distributions]), not used anywhere else: the columns'
#'   distributions. They must all be continuous or all discrete; truncation is
#'   kept.
#' @param dim the number of rows `n` (`NULL` for one row; or a vector of
#'   dimensions whose last is 1, which becomes `K`)
#'
#' @details A continuous joint distribution may be the distribution of a
#'   variable, each column constrained to its component's support; a discrete
#'   one only that of data.
#'
#'   [log_lik()] counts each row of data given a joint distribution as one
#'   observation (its log density the sum over its columns), and [calculate()]
#'   with `nsim` and [simulate()] draw each column from its component.
#'
#' @return an `n x K` greta array following the joint distribution
#' @examples
#' # an uncorrelated pair: one normal, one positive
#' x <- joint(normal(-3, 0.5), exponential(2))
#' # a likelihood over the columns of data
#' y <- cbind(c(1.9, 2.2, 1.4), c(0.3, 0.6, 0.5))
#' mu <- normal(0, 10)
#' a <- gamma(2, 1)
#' distribution(y) <- joint(normal(mu, 1), beta(a, 2), dim = 3)
#' m <- model(mu, a)
#' @export
joint <- function(..., dim = NULL) {
  dots <- list(...)
  components <- component_distributions(dots, "joint")
  for (k in seq_along(components)) {
    if (prod(components[[k]]$dim) != 1) {
      stop("joint() only accepts distributions over scalars, but argument ", k, " has ",
           "dimension ", paste(components[[k]]$dim, collapse = " x "), call. = FALSE)
    }
  }
  K <- length(components)
  n <- 1L
  if (!is.null(dim)) {
    dim <- check_dim(dim)
    if (length(dim) != 2L || dim[2] != 1L) {
      stop("`dim` of joint() must be the number of rows (its columns are the ", K,
           " distributions), but is ", paste(dim, collapse = " x "), call. = FALSE)
    }
    n <- dim[1]
  }
  detach_components(components)
  parts <- component_parameters(components)
  bounds <- lapply(components, function(comp) c(comp$lower, comp$upper))
  new_multivariate("joint", parts$params, c(n, K),
                   density = function(y, p) joint_log_density(y, p, parts$spec),
                   prior = function(dim) joint_prior(dim, bounds),
                   discrete = components[[1]]$discrete,
                   check_data = function(y) {
                     for (k in seq_len(K)) check_component_data(y[, k], parts$spec[[k]])
                   },
                   spec = parts$spec, dim_hint = "set its `dim` to the number of rows of the data")
}

# The variable of a continuous joint distribution: its columns side by side,
# each a variable bounded by its component's support.
joint_prior <- function(dim, bounds) {
  columns <- lapply(bounds, function(b) variable(b[1], b[2], dim = c(dim[1], 1L)))
  x <- do.call(cbind, columns)
  node <- get_node(x)
  node$constraint <- "joint"  # printed as a variable
  # initials(): column k is the value of the k-th variable
  node$initial_values <- function(value, name) {
    lapply(seq_along(columns), function(k) list(node = get_node(columns[[k]]), value = value[, k]))
  }
  x
}

# The log density of each row: the sum of the columns' component log densities.
joint_log_density <- function(y, p, spec) {
  Reduce(`+`, lapply(seq_along(spec), function(k) {
    component_log_density(y[, k], p, spec[[k]])
  }))
}

joint_family <- list(
  r = function(p, n, k) {
    spec <- attr(p, "spec")
    matrix(vapply(spec, component_draws_r, numeric(n), p = p, n = n), n, k)
  }
)
