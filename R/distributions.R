# Probability distributions: one small constructor per family over one
# descriptor (new_distribution). Used on its own, a constructor creates a
# variable with that prior; assigned with `distribution(y) <-`, it becomes the
# likelihood of data y. Parameter names and orders follow R (dnorm, dcauchy,
# ...), and greta where R has no counterpart (student's mu and sigma).

#' Probability distributions
#'
#' These functions create variable greta arrays that follow a probability
#' distribution, or, with [distribution()], define the distribution of data.
#' Their names, arguments and defaults are greta's, and their densities match
#' R's:
#'
#' | lockstep | R equivalent |
#' |---|---|
#' | `uniform(min, max)` | `dunif(x, min, max)` |
#' | `normal(mean, sd)` | `dnorm(x, mean, sd)` |
#' | `lognormal(meanlog, sdlog)` | `dlnorm(x, meanlog, sdlog)` |
#' | `bernoulli(prob)` | `dbinom(x, 1, prob)` |
#' | `binomial(size, prob)` | `dbinom(x, size, prob)` |
#' | `negative_binomial(size, prob)` | `dnbinom(x, size, prob)` |
#' | `beta_binomial(size, alpha, beta)` | `extraDistr::dbbinom(x, size, alpha, beta)` |
#' | `hypergeometric(m, n, k)` | `dhyper(x, m, n, k)` |
#' | `poisson(lambda)` | `dpois(x, lambda)` |
#' | `gamma(shape, rate)` | `dgamma(x, shape, rate)` |
#' | `inverse_gamma(alpha, beta)` | `extraDistr::dinvgamma(x, alpha, beta)` |
#' | `weibull(shape, scale)` | `dweibull(x, shape, scale)` |
#' | `exponential(rate)` | `dexp(x, rate)` |
#' | `pareto(a, b)` | `extraDistr::dpareto(x, a, b)` |
#' | `student(df, mu, sigma)` | `dt((x - mu) / sigma, df) / sigma` |
#' | `laplace(mu, sigma)` | `extraDistr::dlaplace(x, mu, sigma)` |
#' | `beta(shape1, shape2)` | `dbeta(x, shape1, shape2)` |
#' | `cauchy(location, scale)` | `dcauchy(x, location, scale)` |
#' | `chi_squared(df)` | `dchisq(x, df)` |
#' | `logistic(location, scale)` | `dlogis(x, location, scale)` |
#' | `f(df1, df2)` | `df(x, df1, df2)` |
#'
#' @param min,max the bounds of `uniform()`: fixed finite numbers (not greta
#'   arrays), `min < max`
#' @param mean,sd,meanlog,sdlog,location,scale,df,mu,sigma,rate,prob,shape,alpha,beta,a,b,shape1,shape2,df1,df2,lambda,size,m,n,k
#'   parameters: greta arrays or numbers, each a scalar or of the
#'   distribution's dimensions (see the table for their meanings). `pareto()`'s
#'   `a` is its shape and `b` its scale (the lower end of its support);
#'   `inverse_gamma()`'s `beta` is a rate (`1 / x` follows `gamma(alpha,
#'   beta)`); `binomial()`'s and `beta_binomial()`'s `size` is a number of
#'   trials and `negative_binomial()`'s a target number of successes;
#'   `beta_binomial()`'s `alpha` and `beta` are the shapes of the beta
#'   distribution of its probability of success; `hypergeometric()` counts
#'   the white balls among `k` drawn without replacement from an urn of `m`
#'   white and `n` black balls.
#' @param dim the dimensions of the variable, if not implied by the parameters
#'   (`NULL`, a number for a column vector, or a vector of dimensions)
#' @param truncation a length-two vector of bounds: the density is truncated to
#'   this range and renormalised, and the variable is constrained to it, so
#'   `truncation = c(0, Inf)` gives a half-normal or half-Cauchy prior. It must
#'   lie within the distribution's support (e.g. within `c(0, Inf)` for `gamma`
#'   and within `c(0, 1)` for `beta`).
#'
#' @details A variable created by a distribution is constrained to its support
#'   (intersected with `truncation`): `gamma`, `lognormal`, `inverse_gamma`,
#'   `weibull`, `exponential`, `chi_squared` and `f` variables are positive,
#'   `beta` variables lie in (0, 1), `uniform` variables in (`min`, `max`) and
#'   `pareto` variables above `b` when `b` is a number (above 0 otherwise, as
#'   in greta).
#'
#'   The continuous distributions except `uniform` can be truncated.
#'   `bernoulli`, `binomial`, `negative_binomial`, `beta_binomial`,
#'   `hypergeometric` and `poisson` are discrete: they can only be the
#'   distribution of data (counts, whole numbers), never of a variable, and
#'   take no `truncation`.
#'
#'   `binomial` and `poisson` mask the family functions of \pkg{stats}, as
#'   greta's do; called with no arguments, as `glm(y ~ x, family = binomial)`
#'   calls them, they return `stats::binomial()` and `stats::poisson()`.
#'
#'   `binomial`'s and `beta_binomial`'s log densities use `lgamma` for their
#'   binomial coefficients, as greta does, so they are defined (and
#'   differentiable) for a non-integer `size` too, where `dbinom` and
#'   `dbbinom` give `NaN`; `size` given as numbers must be whole.
#'   `hypergeometric`'s parameters are all counts: given as numbers they must
#'   be whole, with `k <= m + n`; computed ones give `NaN` where they are not
#'   (as `dhyper` does), and the log density has no gradient in them.
#'
#'   As greta does with its "representations", a probability or rate built
#'   by a link function is replaced by the link's input, and the density
#'   computed on that scale, so that it stays finite and accurate for any
#'   `eta` (the link function itself is never computed):
#'
#'   * `bernoulli(ilogit(eta))`: `y * eta - log(1 + exp(eta))` (for `eta =
#'     40`, `dbinom(0, 1, plogis(40), log = TRUE)` is `-Inf` in double
#'     precision, the logit form gives `-40`);
#'   * `bernoulli(iprobit(eta))`: `log(pnorm(eta))` or `log(pnorm(-eta))`,
#'     computed as `pnorm(eta, log.p = TRUE)` is (`-804.6` for `y = 0` and
#'     `eta = 40`, where `1 - pnorm(40)` is 0), with the gradient through the
#'     Mills ratio `dnorm(eta) / pnorm(eta)`, also finite in the tails;
#'   * `binomial(size, ilogit(eta))` and `binomial(size, iprobit(eta))`:
#'     `lchoose(size, y) + y * lp(eta) + (size - y) * lp(-eta)`, with `lp` the
#'     log of the inverse link computed as above;
#'   * `poisson(exp(eta))`: `y * eta - exp(eta) - lgamma(y + 1)`, without the
#'     `log(exp(eta))` (`dpois(y, exp(eta), log = TRUE)` is `-Inf` once
#'     `exp(eta)` underflows, below `eta = -745`).
#'
#'   This applies when `prob` (`lambda`) is the result of [ilogit()],
#'   [iprobit()] (or [exp()]) directly. `negative_binomial()` has no such form,
#'   as in greta.
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
#' coef <- normal(0, 2)
#' y2 <- as_data(c(0, 1, 1, 0))
#' distribution(y2) <- bernoulli(ilogit(coef * x))
#' # positive and bounded variables
#' shape <- gamma(2, 0.5)           # constrained to (0, Inf)
#' phi <- beta(2, 2, dim = 3)       # constrained to (0, 1)
#' u <- uniform(-1, 1)              # constrained to (-1, 1)
#' s <- lognormal(0, 1, truncation = c(0, 5))
#' # count data
#' counts <- as_data(c(2, 0, 5, 3))
#' rate <- gamma(1, 1)
#' distribution(counts) <- poisson(rate)
#' successes <- as_data(c(3, 7, 4))
#' q <- beta(1, 1)
#' distribution(successes) <- binomial(10, q)
#' overdispersed <- as_data(c(1, 9, 4, 10))
#' a <- gamma(2, 1)
#' distribution(overdispersed) <- beta_binomial(10, a, a)
#' white <- as_data(c(2, 3, 1))
#' distribution(white) <- hypergeometric(m = 6, n = 4, k = 5)
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
uniform <- function(min, max, dim = NULL) {
  if (is.greta_array(min) || is.greta_array(max)) {
    stop("`min` and `max` of uniform() must be fixed numbers, they cannot be greta arrays",
         call. = FALSE)
  }
  if (!is.numeric(min) || length(min) != 1L || !is.numeric(max) || length(max) != 1L) {
    stop("`min` and `max` of uniform() must be numbers of length 1", call. = FALSE)
  }
  if (!is.finite(min) || !is.finite(max)) {
    stop("`min` and `max` of uniform() must be finite", call. = FALSE)
  }
  if (!(min < max)) {
    stop("`max` of uniform() must be greater than `min`", call. = FALSE)
  }
  new_distribution("uniform", list(min = min, max = max), dim, c(-Inf, Inf),
                   support = c(min, max), truncatable = FALSE)
}

#' @rdname distributions
#' @export
lognormal <- function(meanlog, sdlog, dim = NULL, truncation = c(0, Inf)) {
  new_distribution("lognormal", list(meanlog = meanlog, sdlog = sdlog), dim, truncation,
                   positive = "sdlog", support = c(0, Inf))
}

#' @rdname distributions
#' @export
gamma <- function(shape, rate, dim = NULL, truncation = c(0, Inf)) {
  new_distribution("gamma", list(shape = shape, rate = rate), dim, truncation,
                   positive = c("shape", "rate"), support = c(0, Inf))
}

#' @rdname distributions
#' @export
inverse_gamma <- function(alpha, beta, dim = NULL, truncation = c(0, Inf)) {
  new_distribution("inverse_gamma", list(alpha = alpha, beta = beta), dim, truncation,
                   positive = c("alpha", "beta"), support = c(0, Inf))
}

#' @rdname distributions
#' @export
weibull <- function(shape, scale, dim = NULL, truncation = c(0, Inf)) {
  new_distribution("weibull", list(shape = shape, scale = scale), dim, truncation,
                   positive = c("shape", "scale"), support = c(0, Inf))
}

#' @rdname distributions
#' @export
pareto <- function(a, b, dim = NULL, truncation = c(0, Inf)) {
  # the density is zero below the scale b: a variable is bounded there when b
  # is known now (by the smallest b when b is a vector of numbers)
  bounds <- c(0, Inf)
  if (!is.greta_array(b) && is.numeric(b) && length(b) > 0 && all(b > 0)) {
    bounds[1] <- min(b)
  }
  new_distribution("pareto", list(a = a, b = b), dim, truncation, positive = c("a", "b"),
                   support = c(0, Inf), bounds = bounds)
}

#' @rdname distributions
#' @export
laplace <- function(mu, sigma, dim = NULL, truncation = c(-Inf, Inf)) {
  new_distribution("laplace", list(mu = mu, sigma = sigma), dim, truncation,
                   positive = "sigma")
}

#' @rdname distributions
#' @export
beta <- function(shape1, shape2, dim = NULL, truncation = c(0, 1)) {
  new_distribution("beta", list(shape1 = shape1, shape2 = shape2), dim, truncation,
                   positive = c("shape1", "shape2"), support = c(0, 1))
}

#' @rdname distributions
#' @export
chi_squared <- function(df, dim = NULL, truncation = c(0, Inf)) {
  new_distribution("chi_squared", list(df = df), dim, truncation, positive = "df",
                   support = c(0, Inf))
}

#' @rdname distributions
#' @export
logistic <- function(location, scale, dim = NULL, truncation = c(-Inf, Inf)) {
  new_distribution("logistic", list(location = location, scale = scale), dim, truncation,
                   positive = "scale")
}

#' @rdname distributions
#' @export
f <- function(df1, df2, dim = NULL, truncation = c(0, Inf)) {
  new_distribution("f", list(df1 = df1, df2 = df2), dim, truncation,
                   positive = c("df1", "df2"), support = c(0, Inf))
}

#' @rdname distributions
#' @export
poisson <- function(lambda, dim = NULL) {
  if (missing(lambda) && is.null(dim)) return(stats::poisson())  # glm()'s family, see below
  if (!missing(lambda) && is.character(lambda)) family_misuse("poisson")
  if (!missing(lambda) && is_operation(lambda, "exp")) {
    # the representation: the family on the log scale, of exp's input
    return(new_distribution("poisson_log", list(lambda = link_input(lambda)), dim,
                            c(-Inf, Inf), support = c(0, Inf), discrete = TRUE,
                            label = "poisson"))
  }
  new_distribution("poisson", list(lambda = lambda), dim, c(-Inf, Inf),
                   nonnegative = "lambda", support = c(0, Inf), discrete = TRUE)
}

# binomial("logit") or poisson("log"): stats' family function called with a
# link, as in glm(family = binomial("logit")), reaching lockstep's mask; the
# error says so, as greta's does.
family_misuse <- function(name) {
  stop("it looks like lockstep's ", name, "() was used as the family of a model fitted by ",
       "another function (a link name was given); for that, use `family = stats::", name,
       "`, e.g. stats::", name, "(\"", if (name == "binomial") "logit" else "log", "\")",
       call. = FALSE)
}

#' @rdname distributions
#' @export
binomial <- function(size, prob, dim = NULL) {
  # With lockstep attached, binomial and poisson mask stats' family functions
  # (as greta's do); glm(y ~ x, family = binomial) calls family() with no
  # arguments, which therefore still gives stats::binomial().
  if (missing(size) && missing(prob) && is.null(dim)) return(stats::binomial())
  if (!missing(size) && is.character(size)) family_misuse("binomial")
  link <- probability_link(prob)
  if (!is.null(link)) {
    return(new_distribution(paste0("binomial_", link), list(size = size, prob = link_input(prob)),
                            dim, c(-Inf, Inf), whole = "size", support = c(0, Inf),
                            discrete = TRUE, label = "binomial"))
  }
  new_distribution("binomial", list(size = size, prob = prob), dim, c(-Inf, Inf),
                   whole = "size", unit = "prob", support = c(0, Inf), discrete = TRUE)
}

#' @rdname distributions
#' @export
negative_binomial <- function(size, prob, dim = NULL) {
  # (stats has no negative binomial family for it to mask, as binomial() and
  # poisson() mask theirs: both arguments are needed)
  new_distribution("negative_binomial", list(size = size, prob = prob), dim, c(-Inf, Inf),
                   positive = "size", unit = "prob", support = c(0, Inf), discrete = TRUE)
}

#' @rdname distributions
#' @export
beta_binomial <- function(size, alpha, beta, dim = NULL) {
  new_distribution("beta_binomial", list(size = size, alpha = alpha, beta = beta), dim,
                   c(-Inf, Inf), whole = "size", positive = c("alpha", "beta"),
                   support = c(0, Inf), discrete = TRUE)
}

#' @rdname distributions
#' @export
hypergeometric <- function(m, n, k, dim = NULL) {
  dist <- new_distribution("hypergeometric", list(m = m, n = n, k = k), dim, c(-Inf, Inf),
                           whole = c("m", "n", "k"), support = c(0, Inf), discrete = TRUE)
  params <- get_node(dist)$distribution$parents
  if (all(vapply(params, function(p) p$type == "data", logical(1))) &&
      any(params[[3]]$value > params[[1]]$value + params[[2]]$value)) {
    stop("`k` of hypergeometric() must not exceed `m + n`", call. = FALSE)
  }
  dist
}

#' @rdname distributions
#' @export
bernoulli <- function(prob, dim = NULL) {
  link <- probability_link(prob)
  if (!is.null(link)) {
    # the representation: the family on the link's scale, of its input
    return(new_distribution(paste0("bernoulli_", link), list(prob = link_input(prob)), dim,
                            c(-Inf, Inf), support = c(0, 1), discrete = TRUE,
                            label = "bernoulli"))
  }
  new_distribution("bernoulli", list(prob = prob), dim, c(-Inf, Inf), unit = "prob",
                   support = c(0, 1), discrete = TRUE)
}

# greta's representations: a probability computed by ilogit() or iprobit()
# (directly), or a rate by exp(), is replaced in its distribution by the
# input of that function, and the family by the one on the link's scale
# (bernoulli_logit, binomial_probit, poisson_log, ...; their math is in
# inst/include/lockstep/distributions/link.hpp and poisson_log.hpp). The
# link's own node is then used by nothing, and model() leaves it out.

# A greta array made by the operation `op`.
is_operation <- function(x, op) {
  if (!is.greta_array(x)) return(FALSE)
  node <- get_node(x)
  identical(node$type, "operation") && identical(node$op, op)
}

# "logit" or "probit" for a probability made by ilogit() or iprobit(), else NULL.
probability_link <- function(prob) {
  if (missing(prob)) return(NULL)  # new_distribution() names it
  if (is_operation(prob, "ilogit")) return("logit")
  if (is_operation(prob, "iprobit")) return("probit")
  NULL
}

# The input of the link function that made `x`, as a greta array.
link_input <- function(x) as_greta_array_from_node(get_node(x)$parents[[1]])

# `params` (a promise of the distribution function's list of parameters)
# forced, an argument the user left out named in the error: "`sd` is missing:
# normal() needs a value for it" rather than R's "argument "sd" is missing,
# with no default" from inside lapply().
with_missing_argument_named <- function(params, fun) {
  tryCatch(params, error = function(e) {
    msg <- conditionMessage(e)
    arg <- sub('^argument "([^"]+)" is missing, with no default$', "\\1", msg)
    if (identical(arg, msg)) stop(e)
    stop(sprintf("`%s` is missing: %s() needs a value for it", arg, fun), call. = FALSE)
  })
}

# `label` names the distribution in messages when the family is an internal
# representation (bernoulli_logit is what bernoulli(ilogit(eta)) becomes).
# `support` is where `truncation` may lie; `bounds` (within it) is where the
# density can be nonzero given the parameters known now (pareto's b), which
# constrains a variable and data. Parameters named in `positive` must be > 0,
# in `nonnegative` >= 0, in `unit` within [0, 1], in `whole` whole numbers >= 0.
# A truncation covering the whole support is no truncation: the engine is told
# none, which gives the same density without computing F(upper) - F(lower) = 1.
new_distribution <- function(family, params, dim, truncation, positive = character(),
                             unit = character(), support = c(-Inf, Inf), discrete = FALSE,
                             label = family, nonnegative = character(), whole = character(),
                             bounds = support, truncatable = !discrete) {
  params <- with_missing_argument_named(params, label)
  nodes <- lapply(names(params), function(name) {
    node <- get_node(as.greta_array(params[[name]], name))
    check_constant_parameter(node, name, positive, unit, label, nonnegative, whole)
    node
  })
  names(nodes) <- names(params)
  dim <- distribution_dim(nodes, dim, label)
  # discrete distributions (and uniform) take no truncation argument
  truncation <- if (!truncatable) c(-Inf, Inf) else check_truncation(truncation, support, family)
  lower <- max(truncation[1], bounds[1])
  upper <- min(truncation[2], bounds[2])
  if (truncation[1] <= support[1] && truncation[2] >= support[2]) truncation <- c(-Inf, Inf)
  variable <- new_node("variable", dim, lower = lower, upper = upper)
  dist <- new_node("distribution", dim, parents = unname(nodes), family = family,
                   truncation = truncation, target = variable, discrete = discrete,
                   support = bounds, param_names = names(params), label = label)
  variable$distribution <- dist
  as_greta_array_from_node(variable)
}

# Parameters given as numbers are checked now, so that a bad model fails where
# it is written rather than during sampling.
check_constant_parameter <- function(node, name, positive, unit, family,
                                     nonnegative = character(), whole = character()) {
  if (node$type != "data") return(invisible())
  if (name %in% positive && any(node$value <= 0)) {
    stop("`", name, "` of ", family, "() must be positive", call. = FALSE)
  }
  if (name %in% nonnegative && any(node$value < 0)) {
    stop("`", name, "` of ", family, "() must be non-negative", call. = FALSE)
  }
  if (name %in% unit && any(node$value < 0 | node$value > 1)) {
    stop("`", name, "` of ", family, "() must be between 0 and 1", call. = FALSE)
  }
  if (name %in% whole && any(node$value < 0 | node$value != round(node$value))) {
    stop("`", name, "` of ", family, "() must be a non-negative whole number", call. = FALSE)
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
#' `distribution(x)`, as in greta, returns `x` if it has a distribution (a
#' variable made by a distribution function, or data given one by
#' `distribution(x) <-`) and `NULL` if it has none.
#'
#' @param greta_array data: a data greta array, or R values
#' @param value a distribution, e.g. `normal(mu, sigma)`
#' @return `distribution<-`: `greta_array`, unchanged (the distribution is
#'   recorded in the model's graph); `distribution()`: `greta_array` or `NULL`
#' @examples
#' y <- as_data(c(1.2, 0.3, -0.5))
#' mu <- normal(0, 1)
#' distribution(y) <- normal(mu, 1)
#' distribution(y)  # y, which now has a distribution
#' distribution(as_data(1:3))  # NULL: no distribution
#' @name distribution
#' @export
distribution <- function(greta_array) {
  if (!is.greta_array(greta_array)) {
    stop("`greta_array` of distribution() must be a greta array, not an object of class ",
         class(greta_array)[1], call. = FALSE)
  }
  if (is.null(get_node(greta_array)$distribution)) NULL else greta_array
}

#' @rdname distribution
#' @export
`distribution<-` <- function(greta_array, value) {
  original <- greta_array
  # (R passes the left-hand side as `*tmp*`: messages call it y, as the usage does)
  target <- tryCatch(get_node(as.greta_array(greta_array, "y")), error = function(e) {
    stop("in `distribution(y) <-`, ", conditionMessage(e), call. = FALSE)
  })
  if (!is.greta_array(value) || is.null(get_node(value)$distribution)) {
    stop("the right-hand side of `distribution(y) <-` must be a distribution such as ",
         "normal(mu, sd)", call. = FALSE)
  }
  variable <- get_node(value)
  dist <- variable$distribution
  # a multivariate distribution's prior may be an operation (dirichlet()'s simplex)
  multivariate <- isTRUE(dist$multivariate)
  if ((variable$type != "variable" && !multivariate) || used_elsewhere(variable)) {
    stop("the distribution on the right-hand side of `distribution(y) <-` has already been ",
         "used elsewhere; create a new one, e.g. distribution(y) <- normal(mu, sd)",
         call. = FALSE)
  }
  # A distribution refused from here on (its data, its dimensions) leaves its
  # parameters' children: otherwise model() would still find it through them,
  # as a free variable or, for a discrete family, a variable without data, long
  # after the user has corrected the data and assigned a new one.
  assigned <- FALSE
  on.exit(if (!assigned) unlink_from_parameters(dist), add = TRUE)
  # (a replacement function cannot name its left-hand side: R passes `*tmp*`)
  if (target$type != "data") {
    stop("distributions can only be assigned to data, but the left-hand side of ",
         "`distribution(y) <-` is a greta array of type '", target$type, "'", call. = FALSE)
  }
  if (!is.null(target$distribution)) {
    stop("the left-hand side of `distribution(y) <-` already has a distribution", call. = FALSE)
  }
  if (multivariate) {
    # a 1 x 1 mixture() applies to every element, as a univariate distribution does
    if (isTRUE(dist$expands) && prod(dist$dim) == 1) dist$dim <- target$dim
    # rows are realisations: the dimensions must match exactly (no recycling)
    if (!identical(dist$dim, target$dim)) {
      hint <- if (is.null(dist$dim_hint)) {
        "set its `n_realisations` to the number of rows of the data"
      } else {
        dist$dim_hint
      }
      stop("left and right hand sides of `distribution(y) <-` have different dimensions: ",
           "the data have dimension ", paste(target$dim, collapse = " x "), " but the ",
           distribution_label(dist), "() distribution ", paste(dist$dim, collapse = " x "),
           " (", hint, ")", call. = FALSE)
    }
    dist$check_data(matrix(as.numeric(target$value), nrow = target$dim[1]))  # (columns: all the other dimensions)
  }
  scalar_dist <- prod(dist$dim) == 1
  if (!multivariate && !scalar_dist && !identical(dist$dim, target$dim)) {
    stop("left and right hand sides of `distribution(y) <-` have different dimensions: the ",
         "distribution must have dimension ", paste(target$dim, collapse = " x "),
         " or 1 x 1, but has dimension ", paste(dist$dim, collapse = " x "), call. = FALSE)
  }
  if (!multivariate) check_data_support(target$value, dist)
  if (!is.greta_array(original)) warn_repeated_distribution(target, dist)
  dist$target <- target
  dist$dim <- target$dim
  # the order of distribution() statements orders log_lik()'s columns
  lockstep_state$next_declaration <- lockstep_state$next_declaration + 1
  dist$declared <- lockstep_state$next_declaration
  target$distribution <- dist
  variable$assigned <- TRUE  # the variable is orphaned: nothing reaches it any more
  assigned <- TRUE
  original
}

# `distribution(y) <- ...` on plain R numbers leaves `y` as it was (a greta
# array is made of a copy), so running the statement again, as happens when a
# line of a script is re-run at the console, gives the same numbers a second
# likelihood that R cannot see. Warned when the same numbers (a fingerprint:
# dimensions, sum, first and last value) get a distribution whose parameters
# read the same variables as an earlier one's: the statement run again, not a
# fresh model from a re-run script (new variables) nor another model of the
# same data (other variables). (Fingerprints: nothing large is kept.)
warn_repeated_distribution <- function(target, dist) {
  values <- as.numeric(target$value)
  fingerprint <- list(dim = target$dim, sum = sum(values), ends = values[c(1L, length(values))])
  variables <- sort(distribution_variables(dist))
  seen <- lockstep_state$numeric_targets
  for (earlier in seen) {
    if (identical(earlier$fingerprint, fingerprint) && identical(variables, earlier$variables)) {
      warning("these data already have a distribution from an earlier `distribution(y) <-` ",
              "with the same variables: R numbers keep no record of it, so this adds their ",
              "likelihood to the model a second time. If that was not meant, build the ",
              "model again from the start (its variables too)", call. = FALSE)
      break
    }
  }
  if (length(variables) > 0) {
    lockstep_state$numeric_targets <- c(utils::tail(seen, 99L),
                                        list(list(fingerprint = fingerprint, variables = variables)))
  }
  invisible(NULL)
}

# The ids of the variables a distribution's parameters are computed from.
distribution_variables <- function(dist) {
  found <- walk_nodes(dist$parents, function(node, key) {
    if (node$type == "variable") list() else node_inputs(node)
  })
  names(found)[vapply(found, function(node) identical(node$type, "variable"), logical(1))]
}

# The name a distribution goes by in messages and summaries: its label (what
# the user called, when the family is an internal representation such as
# bernoulli_logit), or its family (multivariate distributions have no label).
distribution_label <- function(dist) {
  if (is.null(dist$label)) dist$family else dist$label
}

# A support as the data check applies it (ends included where finite): counts
# as "0, 1, 2, ..." or "0, 1, ..., 10", intervals as "[0, Inf)".
format_support <- function(bounds, discrete) {
  lo <- bounds[1]
  hi <- bounds[2]
  if (discrete && is.finite(lo)) {
    if (!is.finite(hi)) return(paste0(lo, ", ", lo + 1, ", ", lo + 2, ", ..."))
    if (hi - lo <= 2) return(paste(seq(lo, hi), collapse = ", "))
    return(paste0(lo, ", ", lo + 1, ", ..., ", hi))
  }
  paste0(if (is.finite(lo)) "[" else "(", lo, ", ", hi, if (is.finite(hi)) "]" else ")")
}

check_data_support <- function(values, dist) {
  bounds <- c(max(dist$truncation[1], dist$support[1]), min(dist$truncation[2], dist$support[2]))
  label <- distribution_label(dist)
  if (isTRUE(dist$discrete) && label == "bernoulli" && any(!values %in% c(0, 1))) {
    stop("data given a bernoulli() distribution must be 0 or 1", call. = FALSE)
  }
  if (isTRUE(dist$discrete) && any(values != round(values))) {
    stop("data given a ", label, "() distribution must be whole numbers (counts)", call. = FALSE)
  }
  if (label %in% c("binomial", "beta_binomial")) {
    size <- dist$parents[[match("size", dist$param_names)]]
    if (size$type == "data" && any(values > as.numeric(size$value))) {
      stop("data given a ", label, "() distribution must not exceed `size`", call. = FALSE)
    }
  }
  if (any(values < bounds[1] | values > bounds[2])) {
    stop("data lie outside the support of ", label, "() (",
         format_support(bounds, isTRUE(dist$discrete)), ")", call. = FALSE)
  }
  if (identical(label, "hypergeometric")) {
    # between max(0, k - n) and min(k, m), for those of m, n, k known now
    param <- function(name) {
      node <- dist$parents[[match(name, dist$param_names)]]
      if (node$type == "data") as.numeric(node$value) else NA
    }
    m <- param("m")
    n <- param("n")
    k <- param("k")
    if (isTRUE(any(values > m)) || isTRUE(any(values > k)) || isTRUE(any(values < k - n))) {
      stop("data given a hypergeometric() distribution must lie between max(0, k - n) and ",
           "min(k, m)", call. = FALSE)
    }
  }
}
