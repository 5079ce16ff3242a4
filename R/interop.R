# Draws from mcmc() in the packages a Bayesian R user combines lockstep with:
# posterior (draws formats, its diagnostics), bayesplot (NUTS diagnostics'
# plots) and loo (through log_lik()). The methods are registered with those
# packages' generics when they are loaded (NAMESPACE's S3method(pkg::generic,
# class), R >= 3.6), so lockstep needs none of them, and whichever of
# lockstep, posterior and bayesplot was attached last, rhat(draws) and
# ess_bulk(draws) are lockstep's answer: posterior's and bayesplot's generics
# of those names reach the methods below.

#' Draws in posterior's and bayesplot's formats
#'
#' A `greta_mcmc_list` from [mcmc()] converts to the \pkg{posterior}
#' package's draws objects (`posterior::as_draws()`, `as_draws_array()`,
#' `as_draws_df()`, `as_draws_list()`, `as_draws_matrix()` and
#' `as_draws_rvars()`), so `posterior::summarise_draws()` and the rest of
#' posterior take it; its variables keep their names (`beta[2,1]`), its
#' chains and iterations their order. \pkg{bayesplot}'s `nuts_params()` gives
#' its NUTS diagnostics in the long format that `mcmc_nuts_energy()`,
#' `mcmc_nuts_divergence()` and `mcmc_pairs(np = )` read, and bayesplot's
#' `rhat()` its R-hats, for `mcmc_rhat()`. `posterior::rhat()`,
#' `posterior::ess_bulk()` and `bayesplot::rhat()` of a `greta_mcmc_list`
#' are lockstep's [rhat()] and [ess_bulk()], a value per variable, whichever
#' package was attached last. For \pkg{loo}, see [log_lik()].
#'
#' These are methods of those packages' generics, registered when the package
#' is loaded; lockstep does not need them installed.
#'
#' `nuts_params(draws, pars = NULL, inc_warmup = FALSE)` keeps the diagnostics
#' named in `pars` (`NULL`: all of `accept_stat__`, `stepsize__`,
#' `treedepth__`, `n_leapfrog__`, `divergent__` and `energy__`) and, with
#' `inc_warmup = TRUE`, warmup's iterations too, as [get_sampler_params()].
#'
#' @return `as_draws*()`: the posterior draws object of that format;
#'   `nuts_params()`: a data frame with columns `Chain`, `Iteration`,
#'   `Parameter` and `Value`; `rhat()`, `ess_bulk()`: a named vector, one
#'   value per variable
#' @examples
#' mu <- normal(0, 1)
#' draws <- mcmc(model(mu), n_samples = 200, warmup = 200, chains = 2, verbose = FALSE)
#' if (requireNamespace("posterior", quietly = TRUE)) {
#'   print(posterior::summarise_draws(draws))
#'   posterior::rhat(draws)
#' }
#' if (requireNamespace("bayesplot", quietly = TRUE)) {
#'   np <- bayesplot::nuts_params(draws)
#'   head(np)
#' }
#' @name draws_formats
NULL

# Iterations x chains x variables, named as the draws' variables.
draws_array <- function(x) {
  vars <- coda::varnames(x)
  out <- array(NA_real_, c(coda::niter(x), coda::nchain(x), length(vars)),
               dimnames = list(iteration = NULL, chain = NULL, variable = vars))
  for (k in seq_along(x)) out[, k, ] <- as.matrix(x[[k]])
  out
}

#' @rdname draws_formats
#' @usage NULL
#' @exportS3Method posterior::as_draws_array
as_draws_array.greta_mcmc_list <- function(x, ...) posterior::as_draws_array(draws_array(x))

#' @rdname draws_formats
#' @usage NULL
#' @exportS3Method posterior::as_draws
as_draws.greta_mcmc_list <- function(x, ...) as_draws_array.greta_mcmc_list(x)

#' @rdname draws_formats
#' @usage NULL
#' @exportS3Method posterior::as_draws_df
as_draws_df.greta_mcmc_list <- function(x, ...) {
  posterior::as_draws_df(as_draws_array.greta_mcmc_list(x))
}

#' @rdname draws_formats
#' @usage NULL
#' @exportS3Method posterior::as_draws_list
as_draws_list.greta_mcmc_list <- function(x, ...) {
  posterior::as_draws_list(as_draws_array.greta_mcmc_list(x))
}

#' @rdname draws_formats
#' @usage NULL
#' @exportS3Method posterior::as_draws_matrix
as_draws_matrix.greta_mcmc_list <- function(x, ...) {
  posterior::as_draws_matrix(as_draws_array.greta_mcmc_list(x))
}

#' @rdname draws_formats
#' @usage NULL
#' @exportS3Method posterior::as_draws_rvars
as_draws_rvars.greta_mcmc_list <- function(x, ...) {
  posterior::as_draws_rvars(as_draws_array.greta_mcmc_list(x))
}

# posterior's and bayesplot's rhat() and posterior's ess_bulk() of draws:
# lockstep's own, a value per variable.

#' @rdname draws_formats
#' @usage NULL
#' @exportS3Method posterior::rhat
rhat.greta_mcmc_list <- function(x, ...) rhat(x)

#' @rdname draws_formats
#' @usage NULL
#' @exportS3Method posterior::ess_bulk
ess_bulk.greta_mcmc_list <- function(x, ...) ess_bulk(x)

# (a name of its own: rhat.greta_mcmc_list is posterior's)
#' @rawNamespace S3method(bayesplot::rhat, greta_mcmc_list, bayesplot_rhat_greta_mcmc_list)
bayesplot_rhat_greta_mcmc_list <- function(object, ...) rhat(object)

#' @rdname draws_formats
#' @usage NULL
#' @exportS3Method bayesplot::nuts_params
nuts_params.greta_mcmc_list <- function(object, pars = NULL, inc_warmup = FALSE, ...) {
  bayesplot::nuts_params(get_sampler_params(object, inc_warmup = inc_warmup), pars = pars)
}
