# Multivariate distributions: multivariate_normal(), dirichlet(), categorical(),
# multinomial() and dirichlet_multinomial(), with greta's arguments and layout (each row of an n x k
# greta array is one realisation). Each log density is written here as an
# expression of ordinary ops (chol, backsolve, lgamma, rowSums, ...) of the
# target and the parameters, so it runs on every backend and in both
# precisions, with gradients, without engine code of its own; the engine adds
# it through a term of family `target` (inst/include/lockstep/distributions/
# target.hpp), which is log_jacobian's term but never skipped (it is a real
# density).
#
# The expression is built late, by model() (expand_multivariate): a
# distribution created as a prior may still be assigned to data with
# `distribution(y) <-`, and an expression already built on the prior's variable
# would stay reachable from the parameters (through their children) and count.
# Until then the distribution is a node of its family (marked `multivariate`)
# that model() leaves out of the IR once its term is built.

#' Multivariate probability distributions
#'
#' Distributions over the rows of a matrix, with greta's arguments: each row
#' of an `n x k` greta array is one realisation, independent of the others.
#' Used on their own they create variables with that prior; with
#' [distribution()] they are the likelihood of data of those dimensions.
#'
#' | lockstep | R equivalent (one row `x`) |
#' |---|---|
#' | `multivariate_normal(mean, Sigma)` | `mvtnorm::dmvnorm(x, mean, Sigma)` |
#' | `dirichlet(alpha)` | `extraDistr::ddirichlet(x, alpha)` |
#' | `categorical(prob)` | `dmultinom(x, 1, prob)` (`x` one-hot) |
#' | `multinomial(size, prob)` | `dmultinom(x, size, prob)` |
#' | `dirichlet_multinomial(size, alpha)` | `extraDistr::ddirmnom(x, size, alpha)` |
#'
#' The vector parameters (`mean`, `alpha`, `prob`) are row vectors: `1 x k`,
#' shared by every realisation, or `n x k`, one row per realisation. An R
#' vector, or a `k x 1` column vector, is taken as one row. `Sigma` is a `k x
#' k` covariance matrix, shared by all rows, and `size` a number or an `n x 1`
#' column of the numbers of trials of each row.
#'
#' When `Sigma` is `chol2symm(U)` (or a [wishart()] or [lkj_correlation()]
#' variable, itself `t(U) %*% U` of its Cholesky factor), `multivariate_normal()`
#' uses `U` directly, as greta does with its Cholesky "representation": the
#' density is computed from `U` (`log det(Sigma) = 2 sum(log(diag(U)))`, the
#' quadratic form by a triangular solve with `U`), and `Sigma` is not
#' factorised again, which is cheaper and better conditioned. `U`
#' must then be upper triangular with a positive diagonal, as [chol2symm()]
#' requires.
#'
#' `multivariate_normal()` variables are unconstrained, `dirichlet()`
#' variables are simplexes (each row positive and summing to 1, sampled as a
#' [simplex_variable()]). `categorical()`, `multinomial()` and
#' `dirichlet_multinomial()` are discrete:
#' they can only be the distribution of data, never of a variable: data for
#' `categorical()` are one-hot rows (a single 1 per row, the observed class),
#' for `multinomial()` and `dirichlet_multinomial()` rows of counts summing to
#' `size`. As in greta and
#' [dmultinom()], each row of `prob` is normalised to sum to 1.
#'
#' [log_lik()] gives one column per realisation (row) of data with these
#' distributions, and [calculate()] with `nsim` and [simulate()] draw them
#' (priors and data), computed in R (R/multivariate_families.R).
#'
#' @param mean a row vector of means (`1 x k`, or `n x k`)
#' @param Sigma a positive definite `k x k` covariance matrix
#' @param alpha a row vector of positive concentrations (`1 x k`, or `n x k`)
#' @param prob a row vector of non-negative probabilities (`1 x k`, or `n x
#'   k`), normalised to sum to 1
#' @param size the number of trials: a non-negative whole number, or an `n x
#'   1` column of them
#' @param n_realisations the number of rows `n`; by default, the number of
#'   rows of the parameters (1 when they have one row)
#' @param dimension the number of columns `k`; by default, that of the
#'   parameters (it expands a `1 x 1` vector parameter to `1 x k`)
#' @return a greta array: an `n x k` variable following the distribution
#' @examples
#' # a correlated pair, and 5 independent realisations of it
#' Sigma <- matrix(c(1, 0.6, 0.6, 2), 2, 2)
#' theta <- multivariate_normal(t(c(0, 1)), Sigma)
#' thetas <- multivariate_normal(t(c(0, 1)), Sigma, n_realisations = 5)
#' # observed rows with an unknown mean
#' y <- as_data(matrix(c(0.1, -0.3, 1.2, 0.8, 1.5, 0.9), 3, 2))
#' mu <- normal(0, 5, dim = c(1, 2))
#' distribution(y) <- multivariate_normal(mu, Sigma, n_realisations = 3)
#' # probabilities of 3 classes, and observed classes as one-hot rows
#' p <- dirichlet(t(c(1, 1, 1)))
#' classes <- as_data(diag(3)[c(1, 3, 3, 2), ])
#' distribution(classes) <- categorical(p, n_realisations = 4)
#' counts <- as_data(t(c(3, 5, 2)))
#' distribution(counts) <- multinomial(10, p)
#' # overdispersed counts
#' a <- variable(lower = 0, dim = c(1, 3))
#' more_counts <- as_data(rbind(c(1, 8, 1), c(6, 2, 2)))
#' distribution(more_counts) <- dirichlet_multinomial(10, a, n_realisations = 2)
#' m <- model(mu, p)
#' @name multivariate_distributions
NULL

#' @rdname multivariate_distributions
#' @export
multivariate_normal <- function(mean, Sigma, n_realisations = NULL, dimension = NULL) {
  family <- "multivariate_normal"
  Sigma <- covariance_parameter(Sigma, family)
  k <- nrow(Sigma)
  mean <- row_parameter(mean, "mean", family, k)
  if (ncol(mean) != k && !(ncol(mean) == 1L && nrow(mean) == 1L)) {
    stop("`mean` of multivariate_normal() must have as many columns as `Sigma` (", k,
         "), but has dimension ", paste(dim(mean), collapse = " x "), call. = FALSE)
  }
  dim <- realisation_dim(list(mean = mean), k, n_realisations, dimension, family)
  mean <- widen(mean, dim[2])
  new_multivariate(family, list(mean = mean, Sigma = Sigma), dim,
                   density = mvn_log_density,
                   prior = function(dim) variable(dim = dim))
}

#' @rdname multivariate_distributions
#' @export
dirichlet <- function(alpha, n_realisations = NULL, dimension = NULL) {
  family <- "dirichlet"
  alpha <- row_parameter(alpha, "alpha", family)
  check_constant(alpha, "alpha", family, function(v) all(v > 0), "positive")
  dim <- realisation_dim(list(alpha = alpha), ncol(alpha), n_realisations, dimension, family,
                         at_least_two = TRUE)
  alpha <- widen(alpha, dim[2])
  new_multivariate(family, list(alpha = alpha), dim,
                   density = dirichlet_log_density,
                   prior = function(dim) simplex_variable(dim),
                   check_data = function(y) {
                     if (any(y < 0 | y > 1) || any(abs(rowSums(y) - 1) > 1e-6)) {
                       stop("data given a dirichlet() distribution must be rows of values ",
                            "between 0 and 1 that sum to 1", call. = FALSE)
                     }
                   })
}

#' @rdname multivariate_distributions
#' @export
categorical <- function(prob, n_realisations = NULL, dimension = NULL) {
  family <- "categorical"
  prob <- row_parameter(prob, "prob", family)
  check_constant(prob, "prob", family, function(v) all(v >= 0), "non-negative")
  dim <- realisation_dim(list(prob = prob), ncol(prob), n_realisations, dimension, family,
                         at_least_two = TRUE)
  prob <- widen(prob, dim[2])
  new_multivariate(family, list(prob = prob), dim, density = categorical_log_density,
                   discrete = TRUE,
                   check_data = function(y) {
                     if (any(!y %in% c(0, 1)) || any(rowSums(y) != 1)) {
                       stop("data given a categorical() distribution must be one-hot rows: ",
                            "0s and a single 1 (the observed class) in each row",
                            call. = FALSE)
                     }
                   })
}

#' @rdname multivariate_distributions
#' @export
multinomial <- function(size, prob, n_realisations = NULL, dimension = NULL) {
  family <- "multinomial"
  size <- size_parameter(size, family)
  prob <- row_parameter(prob, "prob", family)
  check_constant(prob, "prob", family, function(v) all(v >= 0), "non-negative")
  dim <- realisation_dim(list(prob = prob, size = size), ncol(prob), n_realisations,
                         dimension, family, at_least_two = TRUE)
  prob <- widen(prob, dim[2])
  new_multivariate(family, list(size = size, prob = prob), dim,
                   density = multinomial_log_density, discrete = TRUE,
                   check_data = count_data_check(size, family))
}

# `size` of the count distributions: a number or a column, whole and >= 0
size_parameter <- function(size, family) {
  size <- as.greta_array(size, "size")
  if (length(dim(size)) != 2L || ncol(size) != 1L) {
    stop("`size` of ", family, "() must be a number or a column vector (one per row), but ",
         "has dimension ", paste(dim(size), collapse = " x "), call. = FALSE)
  }
  check_constant(size, "size", family, function(v) all(v >= 0 & v == round(v)),
                 "a non-negative whole number")
  size
}

# Data of the count distributions: counts, each row summing to `size` when it
# is known now
count_data_check <- function(size, family) {
  size_node <- get_node(size)
  function(y) {
    if (any(y < 0 | y != round(y))) {
      stop("data given a ", family, "() distribution must be counts (non-negative whole ",
           "numbers)", call. = FALSE)
    }
    if (size_node$type == "data" && any(rowSums(y) != as.numeric(size_node$value))) {
      stop("each row of data given a ", family, "() distribution must sum to `size`",
           call. = FALSE)
    }
  }
}

#' @rdname multivariate_distributions
#' @export
dirichlet_multinomial <- function(size, alpha, n_realisations = NULL, dimension = NULL) {
  family <- "dirichlet_multinomial"
  size <- size_parameter(size, family)
  alpha <- row_parameter(alpha, "alpha", family)
  check_constant(alpha, "alpha", family, function(v) all(v > 0), "positive")
  dim <- realisation_dim(list(alpha = alpha, size = size), ncol(alpha), n_realisations,
                         dimension, family, at_least_two = TRUE)
  alpha <- widen(alpha, dim[2])
  new_multivariate(family, list(size = size, alpha = alpha), dim,
                   density = dirichlet_multinomial_log_density, discrete = TRUE,
                   check_data = count_data_check(size, family))
}

# Log densities, one value per realisation (an n x 1 column): `y` the n x k
# target, `p` the named parameters (vector ones 1 x k or n x k).

# Row r: -k/2 log(2 pi) - sum(log(diag(U))) - |t(U)^-1 (y_r - mean_r)|^2 / 2,
# with U = chol(Sigma), R's upper factor (t(U) %*% U = Sigma).
mvn_log_density <- function(y, p) {
  n <- nrow(y)
  k <- ncol(y)
  U <- upper_factor(p$Sigma)
  z <- backsolve(U, t(y - by_row(p$mean, n)), transpose = TRUE)  # k x n
  log_det <- sum(log(diag(U)))
  -0.5 * colSums(z * z) - (log_det + 0.5 * k * log(2 * pi))
}

dirichlet_log_density <- function(y, p) {
  alpha <- by_row(p$alpha, nrow(y))
  lgamma(rowSums(alpha)) - rowSums(lgamma(alpha)) + rowSums((alpha - 1) * log(y))
}

# prob normalised per row, as greta and dmultinom() do
categorical_log_density <- function(y, p) {
  prob <- by_row(p$prob, nrow(y))
  rowSums(y * log(prob)) - log(rowSums(prob))
}

multinomial_log_density <- function(y, p) {
  prob <- by_row(p$prob, nrow(y))
  size <- p$size
  if (nrow(size) == 1L && nrow(y) > 1L) size <- by_row(size, nrow(y))
  lgamma(size + 1) - rowSums(lgamma(y + 1)) + rowSums(y * log(prob)) -
    rowSums(y) * log(rowSums(prob))
}

# lgamma(A) + lgamma(size + 1) - lgamma(size + A) +
#   sum_j lgamma(y_j + alpha_j) - lgamma(alpha_j) - lgamma(y_j + 1),  A = sum(alpha)
dirichlet_multinomial_log_density <- function(y, p) {
  alpha <- by_row(p$alpha, nrow(y))
  size <- p$size
  if (nrow(size) == 1L && nrow(y) > 1L) size <- by_row(size, nrow(y))
  total <- rowSums(alpha)
  lgamma(total) + lgamma(size + 1) - lgamma(size + total) +
    rowSums(lgamma(y + alpha) - lgamma(alpha) - lgamma(y + 1))
}

# A 1 x k row repeated to n rows (one product with a column of ones); an n x k
# matrix as it is.
by_row <- function(x, n) {
  if (nrow(x) == n) return(x)
  as_data(matrix(1, n, 1)) %*% x
}

# A vector parameter as a 2-d greta array of rows: an R vector, or a column
# vector (k x 1, k > 1, unless `k` says the distribution has one column), is
# one row, as in greta.
row_parameter <- function(x, name, family, k = NULL) {
  if (!is.greta_array(x) && is.numeric(x) && is.null(dim(x))) x <- t(x)
  x <- as.greta_array(x, name)
  d <- dim(x)
  if (length(d) != 2L) {
    stop("`", name, "` of ", family, "() must be a row vector or a matrix (one row per ",
         "realisation), but has dimension ", paste(d, collapse = " x "), call. = FALSE)
  }
  if (d[2] == 1L && d[1] > 1L && !identical(as.integer(k), 1L)) x <- t(x)
  x
}

# Parameters given as numbers are checked now, where the model is written.
check_constant <- function(x, name, family, ok, what) {
  node <- get_node(x)
  if (node$type == "data" && !ok(as.numeric(node$value))) {
    stop("`", name, "` of ", family, "() must be ", what, call. = FALSE)
  }
}

# greta's rules for the n x k dimensions: the parameters' rows are 1 or n,
# `n_realisations` (when given) is n, `dimension` (when given) is k.
realisation_dim <- function(params, k, n_realisations, dimension, family,
                            at_least_two = FALSE) {
  rows <- vapply(params, nrow, integer(1))
  many <- rows[rows > 1L]
  if (length(unique(many)) > 1L) {
    stop("the parameters of ", family, "() have different numbers of rows (",
         paste(sprintf("`%s` has %d", names(many), many), collapse = ", "), ")",
         call. = FALSE)
  }
  n <- if (length(many)) many[[1]] else 1L
  if (!is.null(n_realisations)) {
    if (!is.numeric(n_realisations) || length(n_realisations) != 1L || is.na(n_realisations) ||
        n_realisations < 1 || n_realisations != round(n_realisations)) {
      stop("`n_realisations` of ", family, "() must be a positive whole number",
           call. = FALSE)
    }
    if (length(many) && n_realisations != n) {
      stop("`n_realisations` of ", family, "() is ", n_realisations, " but its parameters ",
           "have ", n, " rows (they must have 1 row, or one per realisation)", call. = FALSE)
    }
    n <- as.integer(n_realisations)
  }
  if (!is.null(dimension)) {
    if (!is.numeric(dimension) || length(dimension) != 1L || is.na(dimension) ||
        dimension < 1 || dimension != round(dimension)) {
      stop("`dimension` of ", family, "() must be a positive whole number", call. = FALSE)
    }
    if (k != 1L && dimension != k) {
      stop("`dimension` of ", family, "() is ", dimension, " but its parameters have ", k,
           " columns", call. = FALSE)
    }
    k <- as.integer(dimension)
  }
  if (at_least_two && k < 2L) {
    stop("the dimension of ", family, "() must be at least 2, but its parameters have ", k,
         " column; give row vectors of at least 2 elements (or `dimension`)", call. = FALSE)
  }
  c(as.integer(n), as.integer(k))
}

# A 1 x 1 vector parameter widened to k columns (`dimension`)
widen <- function(x, k) {
  if (ncol(x) == k) return(x)
  x * as_data(matrix(1, 1, k))
}

# The distribution node: its target a fresh prior variable (`prior(dim)`, a
# greta array), or for a discrete family a plain variable that model()
# refuses unless `distribution(y) <-` replaces it by data. `density(y, p)`
# builds the log density expression and `check_data(values)` checks data.
# `...` are further fields of the node: `spec` (mixture() and joint(): their
# components, which the R-side draws and log densities read) and `expands`
# (a 1 x 1 distribution applies to every element of data, as univariate
# ones do: mixture()).
new_multivariate <- function(family, params, dim, density, prior = NULL,
                             discrete = FALSE, check_data = function(y) NULL,
                             label = family, ...) {
  nodes <- lapply(params, get_node)
  target <- if (discrete) new_node("variable", dim, lower = -Inf, upper = Inf)
            else get_node(prior(dim))
  dist <- new_node("distribution", dim, parents = unname(nodes), family = family,
                   truncation = c(-Inf, Inf), target = target, discrete = discrete,
                   support = c(-Inf, Inf), param_names = names(params), label = label,
                   multivariate = TRUE, density = density, check_data = check_data, ...)
  target$distribution <- dist
  as_greta_array_from_node(target)
}

is_multivariate <- function(node) {
  identical(node$type, "distribution") && isTRUE(node$multivariate)
}

# model(): builds the log density term of each multivariate distribution among
# `nodes` (once: the term is kept on the distribution). Returns TRUE when any
# was built, so that the DAG is collected again to take the terms in.
expand_multivariate <- function(nodes) {
  built <- FALSE
  for (node in nodes) {
    if (!is_multivariate(node) || !is.null(node$term)) next
    params <- lapply(node$parents, as_greta_array_from_node)
    names(params) <- node$param_names
    lp <- node$density(as_greta_array_from_node(node$target), params)
    node$term <- add_target(lp, node$family)
    built <- TRUE
  }
  built
}

# Adds `expr` (a greta array; its elements summed) to the model's log density
# as a term of family target, a child of expr so that model()'s walk finds it.
# Like a log_jacobian term (R/constrained.R) its target is no data, so
# log_lik() does not count it, but unlike one it is never dropped.
add_target <- function(expr, label) {
  target <- get_node(expr)
  dist <- new_node("distribution", target$dim, parents = list(), family = "target",
                   truncation = c(-Inf, Inf), target = target, discrete = FALSE,
                   support = c(-Inf, Inf), param_names = character(), label = label)
  add_child(target, dist)
  invisible(dist)
}

# The upper Cholesky factor U of a covariance parameter (t(U) %*% U is Sigma):
# greta's "cholesky" representation, the factor Sigma was made from when it
# is chol2symm(U) (R/linalg.R) or a wishart() or lkj_correlation() prior
# (factor_matrix(), R/wishart_lkj.R), used as it is; else chol(Sigma).
upper_factor <- function(Sigma) {
  factor <- get_node(Sigma)$cholesky_factor
  if (is.null(factor)) chol(Sigma) else as_greta_array_from_node(factor)
}

# `Sigma` of multivariate_normal() and wishart(): a square greta array, and,
# given as numbers, symmetric and positive definite (checked now, so that a bad
# model fails where it is written).
covariance_parameter <- function(Sigma, family) {
  Sigma <- as.greta_array(Sigma, "Sigma")
  d <- dim(Sigma)
  if (length(d) != 2L || d[1] != d[2]) {
    stop("`Sigma` of ", family, "() must be a square matrix, but has dimension ",
         paste(d, collapse = " x "), call. = FALSE)
  }
  node <- get_node(Sigma)
  if (node$type == "data") {
    S <- matrix(as.numeric(node$value), d[1], d[1])
    if (!isSymmetric(S, tol = 1e-8) || inherits(try(chol(S), silent = TRUE), "try-error")) {
      stop("`Sigma` of ", family, "() must be a symmetric, positive definite matrix",
           call. = FALSE)
    }
  }
  Sigma
}
