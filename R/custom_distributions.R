# custom_distribution(): the hook for defining a distribution in R over
# lockstep's ops, as greta's extension packages (greta.gp, greta.dynamics)
# define theirs through greta's `.internals`. Its log density is a greta
# array expression, so the engine differentiates it like any model code; it
# reaches the model as a multivariate distribution does (R/multivariate.R: a
# term of family target). Draws for calculate(nsim =) and simulate() come
# from the user's `sample` function (mv_families$custom).

#' Define a distribution of your own
#'
#' `custom_distribution()` makes a distribution whose log density is written in
#' R with greta arrays, so that a package or script can add one to lockstep:
#' the equivalent of the `.internals` hooks that greta's extension packages
#' use. It is used like a built-in distribution: as a prior (`x <-
#' my_dist(...)`), or for data (`distribution(y) <- my_dist(...)`). The
#' engine differentiates the log density like any other model code, on every
#' backend, so there is no gradient to write. An operation needs no hook at
#' all: an R function of greta arrays (see `vignette("extending-lockstep")`)
#' is one.
#'
#' `log_density(x, parameters)` is called once, when [model()] is built,
#' with `x` the distribution's greta array (a variable, or the data) and
#' `parameters` the named list of greta arrays given; it returns a greta array
#' of log densities: one per element of `x` (or per row, for a distribution
#' over rows), or one value for the whole of `x`. Its elements are summed into
#' the model's log density, and [log_lik()] counts each as one observation.
#' Constant terms may be left out for a prior, but not where the
#' distribution's normalising constant matters (log_lik(), model comparison).
#'
#' @param log_density a function `(x, parameters)` returning a greta array
#'   of log densities (see Details)
#' @param parameters a named list of the distribution's parameters: greta
#'   arrays or R numbers (which become data)
#' @param dim the dimensions of the distribution's greta array. `NULL`, the
#'   default, makes a `1 x 1` greta array that, given to data by
#'   `distribution(y) <-`, takes the data's dimensions (as the built-in
#'   distributions do)
#' @param lower,upper the support, for a continuous distribution: a variable
#'   with this distribution is constrained to it, and data must lie in it
#' @param discrete `TRUE` for a distribution of whole numbers, for data only
#' @param sample `NULL`, or a function `(parameters, dim)` returning one
#'   random draw, an R array of dimension `dim` (the distribution's, or the
#'   data's when it was given to data), given the parameters' values as R
#'   arrays of their dimensions (a 1 x 1 parameter as a number);
#'   [calculate()] with `nsim` and [simulate()] call it once per draw.
#'   Without it they refuse to simulate the distribution
#' @param name the distribution's name, for messages and [plot()]
#' @return a greta array with the distribution
#' @examples
#' # a skew normal (Azzalini's): 2 / omega phi(z) Phi(alpha z), z = (x - xi) / omega
#' skew_normal <- function(xi, omega, alpha, dim = NULL) {
#'   custom_distribution(
#'     function(x, p) {
#'       z <- (x - p$xi) / p$omega
#'       log(2) - log(p$omega) - 0.5 * log(2 * pi) - 0.5 * z^2 + log(iprobit(p$alpha * z))
#'     },
#'     parameters = list(xi = xi, omega = omega, alpha = alpha), dim = dim,
#'     sample = function(p, dim) {
#'       delta <- p$alpha / sqrt(1 + p$alpha^2)
#'       n <- prod(dim)
#'       z <- delta * abs(rnorm(n)) + sqrt(1 - delta^2) * rnorm(n)
#'       array(p$xi + p$omega * z, dim)
#'     },
#'     name = "skew_normal")
#' }
#' y <- c(0.2, 1.9, 0.7, 2.8, 1.1)
#' alpha <- normal(0, 3)
#' distribution(y) <- skew_normal(0, 1, alpha)
#' m <- model(alpha)
#' draws <- mcmc(m, n_samples = 200, warmup = 200, chains = 2, verbose = FALSE)
#' calculate(skew_normal(0, 1, 4, dim = 3), nsim = 2)
#' @export
custom_distribution <- function(log_density, parameters = list(), dim = NULL, lower = -Inf,
                                upper = Inf, discrete = FALSE, sample = NULL,
                                name = "custom") {
  if (!is.function(log_density)) {
    stop("`log_density` of custom_distribution() must be a function (x, parameters)",
         call. = FALSE)
  }
  if (!is.list(parameters) || (length(parameters) && (is.null(names(parameters)) ||
                                                      any(!nzchar(names(parameters)))))) {
    stop("`parameters` of custom_distribution() must be a named list of greta arrays or numbers",
         call. = FALSE)
  }
  if (anyDuplicated(names(parameters))) {
    stop("`parameters` of custom_distribution() must have distinct names", call. = FALSE)
  }
  if (!is.null(sample) && !is.function(sample)) {
    stop("`sample` of custom_distribution() must be NULL or a function (parameters, dim)",
         call. = FALSE)
  }
  if (!is.character(name) || length(name) != 1L || is.na(name) || !nzchar(name)) {
    stop("`name` of custom_distribution() must be a single string", call. = FALSE)
  }
  discrete <- check_flag(discrete, "discrete")
  check_bound <- function(v, arg) {
    if (!is.numeric(v) || length(v) != 1L || is.na(v)) {
      stop("`", arg, "` of custom_distribution() must be a single number (or -Inf, Inf)",
           call. = FALSE)
    }
  }
  check_bound(lower, "lower"); check_bound(upper, "upper")
  if (lower >= upper) stop("`lower` of custom_distribution() must be below `upper`", call. = FALSE)
  if (discrete && (is.finite(lower) || is.finite(upper))) {
    stop("a discrete custom_distribution() is for data: its support is checked by its ",
         "log density, so leave `lower` and `upper` unset", call. = FALSE)
  }
  params <- lapply(names(parameters), function(k) {
    as.greta_array(parameters[[k]], paste0("parameter `", k, "` of custom_distribution()"))
  })
  names(params) <- names(parameters)
  expands <- is.null(dim)
  dim <- if (expands) c(1L, 1L) else check_dim(dim)
  spec <- list(sample = sample, name = name, param_dims = lapply(params, dim))
  new_multivariate("custom", params, dim,
                   density = function(y, p) {
                     lp <- log_density(y, p)
                     if (!is.greta_array(lp)) {
                       stop("the `log_density` of custom_distribution() \"", name, "\" must ",
                            "return a greta array, but returned ", class(lp)[1], call. = FALSE)
                     }
                     lp
                   },
                   prior = function(dim) variable(lower, upper, dim = dim),
                   discrete = discrete,
                   check_data = function(y) {
                     if (discrete && any(y != round(y))) {
                       stop("data given the ", name, "() distribution must be whole numbers",
                            call. = FALSE)
                     }
                     if (any(y < lower | y > upper)) {
                       stop("data given the ", name, "() distribution must lie in its ",
                            "support (", lower, ", ", upper, ")", call. = FALSE)
                     }
                   },
                   label = name, spec = spec, expands = expands)
}

# calculate(nsim =) and simulate(): one draw of a custom_distribution() from
# its `sample` function, with the parameters as R arrays of their dimensions.
custom_family <- list(
  r = function(p, n, k) {
    spec <- attr(p, "spec")
    if (is.null(spec$sample)) {
      stop("the ", spec$name, "() distribution has no `sample` function, so calculate() ",
           "with `nsim` and simulate() cannot draw it: give custom_distribution() one",
           call. = FALSE)
    }
    values <- lapply(names(spec$param_dims), function(name) {
      d <- spec$param_dims[[name]]
      # a scalar as a number, so that it recycles in R's arithmetic
      if (prod(d) == 1) as.numeric(p[[name]]) else array(as.numeric(p[[name]]), d)
    })
    names(values) <- names(spec$param_dims)
    draw <- spec$sample(values, c(n, k))
    if (!is.numeric(draw) || length(draw) != n * k) {
      stop("the `sample` function of the ", spec$name, "() distribution must return ",
           n * k, " numbers (an array of dimension ", n, " x ", k, "), but returned ",
           length(draw), call. = FALSE)
    }
    matrix(as.numeric(draw), n, k)
  }
)
