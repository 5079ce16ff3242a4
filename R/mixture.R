# mixture(): greta's mixture of univariate distributions. Its log density at
# each element, log sum_k w_k p_k(y), is built from engine ops: each
# component's log density per element (the logpdf op, the component's own
# family and truncation) plus its log weight, combined by a log-sum-exp that
# stays finite where every component's density underflows. It reaches the
# engine as a multivariate distribution does (R/multivariate.R: a term of
# family target, built by model()), whose per-element values log_lik()
# traces; its draws are made in R (mixture_family).

#' Mixtures of probability distributions
#'
#' `mixture()` combines univariate probability distributions into a mixture
#' distribution, over a variable or, with [distribution()], over data, as
#' greta's does: the density of each element is the weighted sum of the
#' components' densities, `sum_k w_k p_k(y)`.
#'
#' The components may instead be multivariate distributions over rows (such
#' as [multivariate_normal()] or [multinomial()], with their
#' `n_realisations`), as in greta: then each row `y_i` is one realisation of
#' the mixture, with density `sum_k w_k p_k(y_i)`. They must have the same
#' dimensions; continuous ones must be of the same family (the same support),
#' and discrete ones are for data. `weights` are then one per component, or
#' a `K x n` matrix of each row's.
#'
#' @param ... two or more distributions, such as `normal(0, 1)` or
#'   `poisson(3)` (see [distributions]), not used anywhere else: the
#'   components. They must all be continuous or all discrete, have the same
#'   support (truncation included) and the same dimensions, or be scalars.
#' @param weights the mixing weights: a greta array or numbers, positive, one
#'   per component (a vector, a column vector, or a row vector such as a
#'   [simplex_variable()]), or the `K` components' weights of each element:
#'   an array of dimensions `c(K, dim)` for a mixture of dimensions `dim` (as
#'   in greta's example, `uniform(0, 1, dim = c(2, 5, 4))` for two `5 x 4`
#'   components), or a `K x n` matrix for an `n x 1` mixture. As in greta they
#'   need not sum to one: they are divided by their sum (over the
#'   components).
#' @param dim the dimensions of the result, when the components are scalars
#'   (`NULL`, a number for a column vector, or a vector of dimensions)
#'
#' @details A continuous mixture may be the distribution of a variable (its
#'   support is the components'), a discrete one only that of data. Data
#'   given a mixture must lie in the support of every component.
#'
#'   [log_lik()] counts each element of data given a mixture as one
#'   observation, and [calculate()] with `nsim` and [simulate()] draw it by
#'   picking each element's component by the weights, then drawing from it.
#'
#' @return a greta array following the mixture distribution
#' @examples
#' # a bimodal prior
#' w <- simplex_variable(2)
#' x <- mixture(normal(-2, 0.5), normal(2, 0.5), weights = w)
#' # a mixture of two normals as the likelihood of data
#' y <- c(-2.1, -1.7, 2.2, 1.9, 2.4)
#' mu <- normal(0, 3, dim = 2)
#' distribution(y) <- mixture(normal(mu[1], 1), normal(mu[2], 1), weights = c(0.4, 0.6))
#' # counts from a mixture of two rates, each with its own weight per element
#' counts <- as_data(c(0, 2, 9, 11))
#' rates <- gamma(2, 0.2, dim = 2)
#' pw <- matrix(c(0.9, 0.1, 0.8, 0.2, 0.3, 0.7, 0.1, 0.9), 2, 4)
#' distribution(counts) <- mixture(poisson(rates[1], dim = 4), poisson(rates[2], dim = 4),
#'                                 weights = pw)
#' m <- model(mu, rates)
#' # weights of their own for every element of a 5 x 4 mixture (greta's example)
#' weights <- uniform(0, 1, dim = c(2, 5, 4))
#' b <- mixture(normal(1, 1, dim = c(5, 4)), normal(-1, 1, dim = c(5, 4)), weights = weights)
#' # rows from a mixture of two bivariate normals (greta's example)
#' w2 <- uniform(0, 1, dim = 2)
#' rows <- mixture(multivariate_normal(t(c(3, -3)), diag(2), n_realisations = 10),
#'                 multivariate_normal(t(c(-3, 3)), diag(2), n_realisations = 10),
#'                 weights = w2)
#' dim(rows)  # 10 x 2
#' @export
mixture <- function(..., weights, dim = NULL) {
  if (missing(weights)) stop("mixture() needs `weights`, one per component", call. = FALSE)
  dots <- list(...)
  if (any(vapply(dots, is_multivariate_array, logical(1)))) {
    if (!is.null(dim)) {
      stop("`dim` of mixture() is for scalar components; a mixture of multivariate ",
           "distributions has theirs", call. = FALSE)
    }
    return(multivariate_mixture(dots, weights))
  }
  components <- component_distributions(dots, "mixture")
  shape <- mixture_shape(dots, dim)
  weights <- mixture_weights(weights, length(dots), shape)
  supports <- lapply(components, function(comp) c(comp$lower, comp$upper))
  if (length(unique(supports)) > 1L) {
    stop("the component distributions of mixture() must have the same support, but have ",
         paste(unique(vapply(supports, function(s) sprintf("(%s, %s)", s[1], s[2]), "")),
               collapse = " and "), call. = FALSE)
  }
  detach_components(components)
  parts <- component_parameters(components)
  discrete <- components[[1]]$discrete
  support <- supports[[1]]
  new_multivariate("mixture", c(parts$params, list(weights = weights)), shape,
                   density = function(y, p) mixture_log_density(y, p, parts$spec),
                   prior = function(dim) variable(support[1], support[2], dim = dim),
                   discrete = discrete,
                   check_data = function(y) {
                     for (comp in parts$spec) check_component_data(y, comp)
                   },
                   spec = parts$spec, expands = TRUE)
}

# The dimensions of the mixture: those of its components (all the same, or
# scalars), or `dim`.
mixture_shape <- function(dots, dim) {
  dims <- lapply(dots, function(x) get_node(x)$dim)
  not_scalar <- Filter(function(d) prod(d) != 1, dims)
  if (length(unique(not_scalar)) > 1L) refuse_unequal_dims(dims, "mixture")
  shape <- if (length(not_scalar)) not_scalar[[1]] else c(1L, 1L)
  if (is.null(dim)) return(shape)
  dim <- check_dim(dim)
  if (length(not_scalar) && !identical(shape, dim)) {
    stop("the dimensions of the components of mixture() (", paste(shape, collapse = " x "),
         ") do not match `dim` (", paste(dim, collapse = " x "), ")", call. = FALSE)
  }
  dim
}

# `weights` as a K x 1 column (one weight per component) or a K x n matrix
# (the components' weights of each of the n elements of the mixture, in R's
# column-major order): an array of dimensions c(K, shape) is taken as that
# matrix, as is a K x n matrix for an n x 1 mixture; numbers must be
# positive. A row vector (such as a simplex_variable()) is taken as a column.
mixture_weights <- function(weights, K, shape) {
  if (!is.greta_array(weights) && is.numeric(weights) && is.null(dim(weights))) {
    weights <- matrix(weights, ncol = 1L)
  }
  weights <- as.greta_array(weights, "weights")
  d <- dim(weights)
  if (length(d) == 2L && d[1] == 1L && d[2] == K && K > 1L) {
    weights <- t(weights)
    d <- dim(weights)
  }
  n <- prod(shape)
  per_element <- n > 1L && d[1] == K &&
    (identical(as.integer(d[-1]), as.integer(shape)) ||
       (shape[2] == 1L && length(d) == 2L && d[2] == shape[1]))
  if (per_element && length(d) != 2L) dim(weights) <- c(K, n)
  if (!(per_element || (length(d) == 2L && d[1] == K && d[2] == 1L))) {
    stop("`weights` of mixture() must have one weight per component (", K, "), as a vector ",
         "or a ", K, " x 1 column", if (n > 1L) {
           paste0(", or one per component and element, an array of dimension ",
                  paste(c(K, shape), collapse = " x "))
         }, ", but has dimension ", paste(d, collapse = " x "), call. = FALSE)
  }
  node <- get_node(weights)
  if (node$type == "data" && any(!is.finite(node$value) | node$value <= 0)) {
    stop("`weights` of mixture() must be positive", call. = FALSE)
  }
  weights
}

# log sum_k w_k p_k(y) at each element of y, the weights divided by their sum
# over the components (as greta does).
mixture_log_density <- function(y, p, spec) {
  w <- p$weights
  K <- length(spec)
  # per-element weights (a K x n matrix) in the mixture's own shape
  as_shape <- function(x) {
    dim(x) <- dim(y)
    x
  }
  log_total <- if (ncol(w) == 1L) log(sum(w)) else as_shape(log(colSums(w)))
  terms <- lapply(seq_len(K), function(k) {
    wk <- if (ncol(w) == 1L) w[k] else as_shape(w[k, ])
    component_log_density(y, p, spec[[k]]) + (log(wk) - log_total)
  })
  Reduce(log_add_exp, terms)
}

# log(exp(a) + exp(b)) elementwise: the engine's log_add_exp op (one pass,
# math/binary.hpp), max(a, b) + log1p(exp(-|a - b|)), finite wherever the
# larger operand is; its gradient is the softmax of (a, b). On R values, the
# same formula in R.
log_add_exp <- function(a, b) {
  if (!is.greta_array(a) && !is.greta_array(b)) {
    top <- pmax(a, b)
    out <- suppressWarnings(top + log1p(exp(-abs(a - b))))  # NaN where both are infinite
    at_inf <- is.infinite(top) & !is.na(a) & !is.na(b)
    out[at_inf] <- top[at_inf]
    return(out)
  }
  elementwise_binary("log_add_exp", a, b, "log_add_exp")
}

# -- mixtures of multivariate distributions ---------------------------------------

is_multivariate_array <- function(x) {
  is.greta_array(x) && isTRUE(get_node(x)$distribution$multivariate)
}

# The families a multivariate mixture takes: distributions over rows (the
# distributions over one matrix, wishart() and lkj_correlation(), and the
# compounds themselves are not rows of realisations).
mixture_row_families <- c("multivariate_normal", "dirichlet", "categorical", "multinomial",
                          "dirichlet_multinomial")

# mixture() of multivariate distributions: log sum_k w_k p_k(y_i) for each row
# y_i, each p_k the component's own density per row (its `density` closure,
# R/multivariate.R). The target is the first component's own variable (the
# prior of its support: unconstrained for multivariate_normal(), a simplex for
# dirichlet()), which the same-family rule makes every component's support.
multivariate_mixture <- function(dots, weights) {
  K <- length(dots)
  if (K < 2L) stop("mixture() must be passed at least two distributions", call. = FALSE)
  components <- lapply(seq_len(K), function(k) {
    bad <- function(why) stop("argument ", k, " of mixture() ", why, call. = FALSE)
    x <- dots[[k]]
    if (!is_multivariate_array(x)) {
      bad("is not a multivariate distribution, and mixture() cannot mix multivariate and univariate ones")
    }
    variable <- get_node(x)
    dist <- variable$distribution
    if (!dist$family %in% mixture_row_families) {
      bad(paste0("is a ", dist$family, "() distribution; mixture() takes univariate ",
                 "distributions, or multivariate ones over rows (",
                 paste0(mixture_row_families, "()", collapse = ", "), ")"))
    }
    if (used_elsewhere(variable)) bad("has already been used elsewhere; create a new one")
    # (component_of()'s fields that component_parameters() reads, and the variable)
    list(dist = dist, variable = variable, family = dist$family, label = dist$label,
         params = dist$parents, param_names = dist$param_names, truncation = dist$truncation,
         dim = variable$dim, discrete = isTRUE(dist$discrete))
  })
  dims <- lapply(components, `[[`, "dim")
  refuse_unequal_dims(dims, "mixture")
  shape <- dims[[1]]
  discrete <- vapply(components, `[[`, logical(1), "discrete")
  families <- vapply(components, `[[`, character(1), "family")
  refuse_mixed_components(discrete, "mixture")
  if (!all(discrete) && length(unique(families)) > 1L) {
    stop("the continuous components of mixture() must be of one family (the same ",
         "support), but are ", paste0(unique(families), "()", collapse = " and "),
         call. = FALSE)
  }
  weights <- mixture_weights(weights, K, c(shape[1], 1L))
  parts <- component_parameters(components)
  params <- parts$params
  # each component's own density per row and data check, read by its own names
  spec <- lapply(parts$spec, function(s) {
    c(s, list(param_names = s$dist$param_names, density = s$dist$density,
              check_data = s$dist$check_data, multivariate = TRUE))
  })
  # every check has passed: detach the components (their parameters' children,
  # their variables), keeping the first's variable as the mixture's target
  for (k in seq_len(K)) {
    unlink_from_parameters(components[[k]]$dist)
    if (k > 1L) components[[k]]$variable$assigned <- TRUE
  }
  target <- components[[1]]$variable
  all_params <- c(params, list(weights = weights))
  dist <- new_node("distribution", shape, parents = unname(lapply(all_params, get_node)),
                   family = "mixture", truncation = c(-Inf, Inf), target = target,
                   discrete = all(discrete), support = c(-Inf, Inf),
                   param_names = names(all_params), label = "mixture", multivariate = TRUE,
                   density = function(y, p) multivariate_mixture_log_density(y, p, spec),
                   check_data = function(y) for (comp in spec) comp$check_data(y),
                   spec = spec)
  target$distribution <- dist
  as_greta_array_from_node(target)
}

# A multivariate component's parameters out of the mixture's (`p`, named
# mean_1, Sigma_1, ...), under the component's own names (mean, Sigma, ...)
# as its density and draws read them.
own_parameters <- function(p, component) {
  stats::setNames(p[component$names], component$param_names)
}

# log sum_k w_k p_k(y_i), one value per row y_i (an n x 1 greta array)
multivariate_mixture_log_density <- function(y, p, spec) {
  w <- p$weights
  n <- nrow(y)
  column <- function(x) {
    dim(x) <- c(n, 1L)
    x
  }
  log_total <- if (ncol(w) == 1L) log(sum(w)) else column(log(colSums(w)))
  terms <- lapply(seq_along(spec), function(k) {
    wk <- if (ncol(w) == 1L) w[k] else column(w[k, ])
    column(spec[[k]]$density(y, own_parameters(p, spec[[k]]))) + (log(wk) - log_total)
  })
  Reduce(log_add_exp, terms)
}

# In R: draws (R/multivariate_families.R calls these with one draw's
# parameters `p`, the components in attr(p, "spec")).
mixture_log_weights_r <- function(p, K, n) {
  w <- matrix(p$weights, nrow = K)
  w <- w[, rep_len(seq_len(ncol(w)), n), drop = FALSE]
  log(sweep(w, 2, colSums(w), "/"))  # K x n
}

mixture_family <- list(
  r = function(p, n, k) {
    spec <- attr(p, "spec")
    if (isTRUE(spec[[1]]$multivariate)) {
      # each row's component by the weights, then that row of its draws
      w <- exp(mixture_log_weights_r(p, length(spec), n))
      pick <- vapply(seq_len(n), function(i) sample.int(length(spec), 1L, prob = w[, i]),
                     integer(1))
      out <- matrix(0, n, k)
      for (j in unique(pick)) {
        rows <- pick == j
        draws <- mv_family(spec[[j]]$family, "mixture()")$r(own_parameters(p, spec[[j]]), n, k)
        out[rows, ] <- draws[rows, , drop = FALSE]
      }
      return(out)
    }
    size <- n * k
    w <- exp(mixture_log_weights_r(p, length(spec), size))
    pick <- vapply(seq_len(size), function(i) sample.int(length(spec), 1L, prob = w[, i]),
                   integer(1))
    draws <- vapply(spec, component_draws_r, numeric(size), p = p, n = size)
    draws <- matrix(draws, nrow = size)
    matrix(draws[cbind(seq_len(size), pick)], n, k)
  }
)
