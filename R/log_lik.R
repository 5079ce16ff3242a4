# log_lik(): the log likelihood of each observation at each posterior draw,
# for loo and other predictive checks, computed by the engine from the
# model's own program (the draws on its chain dimension, a batch at a time):
# a univariate likelihood's log density per element is the logpdf op of its
# family and truncation (the same math as the term the sampler sums), added
# to the program for log_lik() alone; a multivariate one's, or a mixture's or
# a joint distribution's, is the per-realisation log density that model()
# built from ops for its term (R/multivariate.R), traced.

#' Pointwise log likelihood of posterior draws
#'
#' `log_lik()` gives the log likelihood of every observation at every
#' posterior draw of a model, in the layouts that the \pkg{loo} package reads:
#' a matrix with a row per draw and a column per observation (`loo::loo()`'s
#' matrix method), or an array of iterations x chains x observations (its
#' array method, and `loo::relative_eff()`).
#'
#' The observations are the elements of the data given distributions with
#' `distribution(y) <- ...` in the model: each such statement's data in R's
#' (column-major) order, and the statements' data side by side in the order
#' the statements ran. The sum of a row (over observations) is the model's
#' log likelihood at that draw: its log density without the priors. A
#' truncated distribution's density is renormalised to its truncation.
#'
#' The log densities are computed by the engine, with the same code as the
#' model's log density. Every family of [distributions] is supported: `normal`, `cauchy`,
#' `student`, `exponential`, `uniform`, `lognormal`, `gamma`,
#' `inverse_gamma`, `weibull`, `pareto`, `laplace`, `beta`, `chi_squared`,
#' `logistic`, `f`, `poisson`, `bernoulli`, `binomial` (each also in its
#' link-scale form, e.g. `bernoulli(ilogit(eta))`, `binomial(n,
#' iprobit(eta))`, `poisson(exp(eta))`, computed on that scale), `negative_binomial`,
#' `beta_binomial` and `hypergeometric`.
#'
#' Data with a multivariate distribution ([multivariate_distributions]:
#' `multivariate_normal`, `dirichlet`, `categorical`, `multinomial`,
#' `dirichlet_multinomial`) count one observation per realisation (row): its
#' columns are the log densities of the rows of the data, in order. Data
#' with a distribution over matrices ([matrix_distributions]:
#' `lkj_correlation`, `wishart`) count one observation per matrix.
#' Data given a [mixture()] count one observation per element, data given a
#' [joint()] distribution one per row.
#'
#' @param draws a `greta_mcmc_list` from [mcmc()] (or [extra_samples()]) that
#'   holds its raw draws (see [mcmc()]'s details)
#' @param merge_chains `TRUE` (the default) for a matrix of draws x
#'   observations, the chains one after the other (as `as.matrix(draws)`
#'   stacks them); `FALSE` for an array of iterations x chains x observations
#' @param trace_batch_size how many draws to compute in one engine call (`Inf`:
#'   all of them)
#' @param compute_options where the engine runs: [cpu_only()]
#' @return a numeric matrix (draws x observations) or array (iterations x
#'   chains x observations)
#' @examples
#' y <- c(0.3, -0.2, 0.5, 1.2)
#' mu <- normal(0, 1)
#' sigma <- exponential(1)
#' distribution(y) <- normal(mu, sigma)
#' draws <- mcmc(model(mu, sigma), n_samples = 100, warmup = 100, chains = 2,
#'               verbose = FALSE)
#' ll <- log_lik(draws)
#' dim(ll)
#' dim(log_lik(draws, merge_chains = FALSE))
#' # with the loo package: loo::loo(ll)
#' @export
log_lik <- function(draws, merge_chains = TRUE, trace_batch_size = 100,
                    compute_options = cpu_only()) {
  if (inherits(draws, "lockstep_svi")) draws <- draws$draws  # an svi() fit: its draws
  if (!inherits(draws, "greta_mcmc_list")) {
    stop("`draws` must be a greta_mcmc_list made by mcmc() (or an svi() fit)", call. = FALSE)
  }
  info <- attr(draws, "model_info")
  if (is.null(info$model) || is.null(info$raw_draws)) stop_without_raw_draws(info, "draws")
  if (!is.logical(merge_chains) || length(merge_chains) != 1 || is.na(merge_chains)) {
    stop("`merge_chains` must be TRUE or FALSE", call. = FALSE)
  }
  batch <- check_batch_size(trace_batch_size)
  options <- check_compute_options(compute_options)
  model <- info$model
  if (is.null(model$likelihood)) {
    stop("this greta_model was made by an older lockstep; make it again with model()",
         call. = FALSE)
  }
  order <- model$likelihood_order
  if (is.null(order)) {
    if (length(model$multivariate_likelihoods) > 0) {
      stop("this greta_model was made by an older lockstep; make it again with model()",
           call. = FALSE)
    }
    order <- lapply(model$likelihood, function(k) list(ir = k))
  }
  if (length(order) == 0) {
    stop("the model has no likelihood: no data were given a distribution with ",
         "distribution(y) <- ...", call. = FALSE)
  }
  # each term's log densities per observation: a node of the program (or of
  # the program with a logpdf node added for it)
  ir <- model$ir
  traced <- integer(length(order))
  for (k in seq_along(order)) {
    t <- order[[k]]
    if (!is.null(t$family)) {
      if (is.null(t$lp)) {
        stop("this greta_model was made by an older lockstep; make it again with model()",
             call. = FALSE)
      }
      traced[k] <- t$lp
    } else {
      node <- ir$nodes[[t$ir + 1L]]
      target <- ir$nodes[[node$inputs[1] + 1L]]
      ir$nodes[[length(ir$nodes) + 1L]] <- list(
        op = "logpdf", dim = target$dim, inputs = node$inputs, family = node$family,
        trunc_lower = node$trunc_lower, trunc_upper = node$trunc_upper
      )
      traced[k] <- length(ir$nodes) - 1L
    }
  }
  # (with logpdf nodes added, a program of its own; else the model's)
  added <- length(ir$nodes) > length(model$ir$nodes)
  engine <- if (added) ls_engine_new(ir) else model_engine(model)
  raw <- info$raw_draws
  chains <- length(raw)
  iterations <- nrow(raw[[1]])
  free <- do.call(rbind, lapply(raw, as.matrix))
  width <- sum(vapply(traced, function(id) as.numeric(prod(ir$nodes[[id + 1L]]$dim)), numeric(1)))
  out <- matrix(0, nrow(free), width)
  for (start in seq(1, nrow(free), by = batch)) {
    idx <- start:min(nrow(free), start + batch - 1)
    out[idx, ] <- ls_engine_values(engine, free[idx, , drop = FALSE], traced, options)
  }
  if (merge_chains) return(out)
  array(out, dim = c(iterations, chains, ncol(out)))
}
