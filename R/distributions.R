# Probability distributions: one small constructor per family over one
# descriptor (new_distribution). Used on its own, a constructor creates a
# variable with that prior; assigned with `distribution(y) <-`, it becomes the
# likelihood of data y. Parameter names and orders follow R (dnorm, dcauchy,
# ...), and greta where R has no counterpart (student's mu and sigma).

#' Probability distributions
#'
#' These functions create variable greta arrays that follow a probability
#' distribution, or, with [distribution()], define the distribution of data.
#' Their densities match R's: `normal` is `dnorm(x, mean, sd)`, `cauchy` is
#' `dcauchy(x, location, scale)`, `student` is `dt((x - mu) / sigma, df) /
#' sigma`, `exponential` is `dexp(x, rate)` and `bernoulli` is `dbinom(x, 1,
#' prob)`.
#'
#' @param mean,sd,location,scale,df,mu,sigma,rate,prob parameters: greta arrays
#'   or numbers, each a scalar or of the distribution's dimensions
#' @param dim the dimensions of the variable, if not implied by the parameters
#'   (`NULL`, a number for a column vector, or a vector of dimensions)
#' @param truncation a length-two vector of bounds: the density is truncated to
#'   this range and renormalised, and the variable is constrained to it, so
#'   `truncation = c(0, Inf)` gives a half-normal or half-Cauchy prior
#'
#' @details The continuous distributions can be truncated; `bernoulli` is
#'   discrete and can only be the distribution of data.
#'
#'   `bernoulli(ilogit(eta))` is computed on the logit scale, as greta does
#'   with its "representations": the log density is `y * eta - log(1 +
#'   exp(eta))`, evaluated so that it stays finite and accurate for any `eta`
#'   (for `eta = 40`, `dbinom(0, 1, plogis(40), log = TRUE)` is `-Inf` in
#'   double precision, the logit form gives `-40`), and the `ilogit()` itself
#'   is never computed. This applies when `prob` is the result of [ilogit()]
#'   directly.
#'
#' @return a greta array: a variable following the distribution
#' @examples
#' mu <- normal(0, 5)
#' tau <- cauchy(0, 5, truncation = c(0, Inf))
#' theta <- normal(mu, tau, dim = 8)
#' nu <- exponential(0.1)
#' y <- as_data(c(0, 1, 1, 0))
#' p <- variable(lower = 0, upper = 1)
#' distribution(y) <- bernoulli(p)
#' # logistic regression: bernoulli(ilogit(eta)) uses the stable logit form
#' x <- c(-1.2, 0.4, 2.1, 0.3)
#' beta <- normal(0, 2)
#' y2 <- as_data(c(0, 1, 1, 0))
#' distribution(y2) <- bernoulli(ilogit(beta * x))
#' @name distributions
NULL

#' @rdname distributions
#' @export
normal <- function(mean, sd, dim = NULL, truncation = c(-Inf, Inf)) {
  new_distribution("normal", list(mean = mean, sd = sd), dim, truncation,
                   positive = "sd")
}

#' @rdname distributions
#' @export
cauchy <- function(location, scale, dim = NULL, truncation = c(-Inf, Inf)) {
  new_distribution("cauchy", list(location = location, scale = scale), dim, truncation,
                   positive = "scale")
}

#' @rdname distributions
#' @export
student <- function(df, mu, sigma, dim = NULL, truncation = c(-Inf, Inf)) {
  new_distribution("student", list(df = df, mu = mu, sigma = sigma), dim, truncation,
                   positive = c("df", "sigma"))
}

#' @rdname distributions
#' @export
exponential <- function(rate, dim = NULL, truncation = c(0, Inf)) {
  new_distribution("exponential", list(rate = rate), dim, truncation, positive = "rate",
                   support = c(0, Inf))
}

#' @rdname distributions
#' @export
bernoulli <- function(prob, dim = NULL) {
  if (is_ilogit(prob)) {
    # the representation: the family on the logit scale, of ilogit's input
    eta <- as_greta_array_from_node(get_node(prob)$parents[[1]])
    return(new_distribution("bernoulli_logit", list(prob = eta), dim, c(-Inf, Inf),
                            support = c(0, 1), discrete = TRUE, label = "bernoulli"))
  }
  new_distribution("bernoulli", list(prob = prob), dim, c(-Inf, Inf), unit = "prob",
                   support = c(0, 1), discrete = TRUE)
}

# A greta array made by ilogit().
is_ilogit <- function(x) {
  if (!is.greta_array(x)) return(FALSE)
  node <- get_node(x)
  identical(node$type, "operation") && identical(node$op, "ilogit")
}

# `label` names the distribution in messages when the family is an internal
# representation (bernoulli_logit is what bernoulli(ilogit(eta)) becomes).
new_distribution <- function(family, params, dim, truncation, positive = character(),
                             unit = character(), support = c(-Inf, Inf), discrete = FALSE,
                             label = family) {
  nodes <- lapply(names(params), function(name) {
    node <- get_node(as.greta_array(params[[name]], name))
    check_constant_parameter(node, name, positive, unit, label)
    node
  })
  names(nodes) <- names(params)
  dim <- distribution_dim(nodes, dim, label)
  # discrete distributions take no truncation argument: they are never truncated
  truncation <- if (discrete) c(-Inf, Inf) else check_truncation(truncation, support, family)
  lower <- max(truncation[1], support[1])
  upper <- min(truncation[2], support[2])
  variable <- new_node("variable", dim, lower = lower, upper = upper)
  dist <- new_node("distribution", dim, parents = unname(nodes), family = family,
                   truncation = truncation, target = variable, discrete = discrete,
                   support = support, param_names = names(params), label = label)
  variable$distribution <- dist
  as_greta_array_from_node(variable)
}

# Parameters given as numbers are checked now, so that a bad model fails where
# it is written rather than during sampling.
check_constant_parameter <- function(node, name, positive, unit, family) {
  if (node$type != "data") return(invisible())
  if (name %in% positive && any(node$value <= 0)) {
    stop("`", name, "` of ", family, "() must be positive", call. = FALSE)
  }
  if (name %in% unit && any(node$value < 0 | node$value > 1)) {
    stop("`", name, "` of ", family, "() must be between 0 and 1", call. = FALSE)
  }
}

distribution_dim <- function(nodes, dim, family) {
  param_dims <- lapply(nodes, function(n) n$dim)
  not_scalar <- Filter(function(d) prod(d) != 1, param_dims)
  if (!is.null(dim)) {
    dim <- check_dim(dim)
    for (name in names(not_scalar)) {
      if (!identical(not_scalar[[name]], dim)) {
        stop("the dimensions of `", name, "` of ", family, "() (",
             paste(not_scalar[[name]], collapse = " x "), ") do not match `dim` (",
             paste(dim, collapse = " x "), ")", call. = FALSE)
      }
    }
    return(dim)
  }
  if (length(not_scalar) == 0) return(c(1L, 1L))
  first <- not_scalar[[1]]
  for (name in names(not_scalar)) {
    if (!identical(not_scalar[[name]], first)) {
      stop("the parameters of ", family, "() have incompatible dimensions: ",
           paste(sprintf("`%s` is %s", names(not_scalar),
                         vapply(not_scalar, paste, "", collapse = " x ")), collapse = ", "),
           call. = FALSE)
    }
  }
  first
}

check_truncation <- function(truncation, support, family) {
  if (!is.numeric(truncation) || length(truncation) != 2L || anyNA(truncation)) {
    stop("`truncation` of ", family, "() must be a vector of two numbers, lower and upper",
         call. = FALSE)
  }
  if (!(truncation[1] < truncation[2])) {
    stop("`truncation` of ", family, "() must have lower < upper", call. = FALSE)
  }
  if (truncation[1] < support[1] || truncation[2] > support[2]) {
    stop("`truncation` of ", family, "() must lie within its support (", support[1], ", ",
         support[2], ")", call. = FALSE)
  }
  as.numeric(truncation)
}

#' Define a distribution over data
#'
#' `distribution(y) <- dist` states that the data `y` follow the distribution
#' `dist`, which is then the likelihood of the model. `y` may be a data greta
#' array or R values (which are converted with [as_data()]); `dist` is the
#' output of one of the [distributions] functions, not used anywhere else. A
#' distribution whose parameters are all scalars and which was created without
#' `dim` applies to every element of `y`; otherwise its dimensions must match.
#'
#' @param greta_array data: a data greta array, or R values
#' @param value a distribution, e.g. `normal(mu, sigma)`
#' @return `greta_array`, unchanged (the distribution is recorded in the
#'   model's graph)
#' @examples
#' y <- c(1.2, 0.3, -0.5)
#' mu <- normal(0, 1)
#' distribution(y) <- normal(mu, 1)
#' @name distribution
#' @export
`distribution<-` <- function(greta_array, value) {
  original <- greta_array
  target <- get_node(as.greta_array(greta_array, "greta_array"))
  if (!is.greta_array(value) || is.null(get_node(value)$distribution)) {
    stop("the right-hand side of `distribution(y) <-` must be a distribution such as ",
         "normal(mu, sd)", call. = FALSE)
  }
  variable <- get_node(value)
  dist <- variable$distribution
  if (variable$type != "variable" || !identical(dist$target, variable) ||
      length(variable$children) > 0 || isTRUE(variable$assigned)) {
    stop("the distribution on the right-hand side of `distribution(y) <-` has already been ",
         "used elsewhere; create a new one, e.g. distribution(y) <- normal(mu, sd)",
         call. = FALSE)
  }
  # (a replacement function cannot name its left-hand side: R passes `*tmp*`)
  if (target$type != "data") {
    stop("distributions can only be assigned to data, but the left-hand side of ",
         "`distribution(y) <-` is a greta array of type '", target$type, "'", call. = FALSE)
  }
  if (!is.null(target$distribution)) {
    stop("the left-hand side of `distribution(y) <-` already has a distribution", call. = FALSE)
  }
  scalar_dist <- prod(dist$dim) == 1
  if (!scalar_dist && !identical(dist$dim, target$dim)) {
    stop("left and right hand sides of `distribution(y) <-` have different dimensions: the ",
         "distribution must have dimension ", paste(target$dim, collapse = " x "),
         " or 1 x 1, but has dimension ", paste(dist$dim, collapse = " x "), call. = FALSE)
  }
  check_data_support(target$value, dist)
  dist$target <- target
  dist$dim <- target$dim
  target$distribution <- dist
  variable$assigned <- TRUE  # the variable is orphaned: nothing reaches it any more
  original
}

check_data_support <- function(values, dist) {
  bounds <- c(max(dist$truncation[1], dist$support[1]), min(dist$truncation[2], dist$support[2]))
  label <- if (is.null(dist$label)) dist$family else dist$label
  if (isTRUE(dist$discrete) && label == "bernoulli" && any(!values %in% c(0, 1))) {
    stop("data given a bernoulli() distribution must be 0 or 1", call. = FALSE)
  }
  if (any(values < bounds[1] | values > bounds[2])) {
    stop("data lie outside the support of ", label, "() (", bounds[1], ", ", bounds[2],
         ")", call. = FALSE)
  }
}
