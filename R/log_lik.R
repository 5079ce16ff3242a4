# log_lik(): the log likelihood of each observation at each posterior draw,
# for loo and other predictive checks. The engine computes each likelihood's
# parameters at every draw (the model's own program, the draws on its chain
# dimension, a batch at a time); R's d* functions (R/families.R) give each
# observation's log density from them. The engine itself only ever sums a
# likelihood over its observations.

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
#' The log densities are computed in R (with `dnorm()`, `dgamma()`, ...) from
#' the distributions' parameters, which the engine computes at every draw.
#' Every family of [distributions] is supported: `normal`, `cauchy`,
#' `student`, `exponential`, `uniform`, `lognormal`, `gamma`,
#' `inverse_gamma`, `weibull`, `pareto`, `laplace`, `beta`, `chi_squared`,
#' `logistic`, `f`, `poisson`, `bernoulli`, `binomial` (each also in its
#' link-scale form, e.g. `bernoulli(ilogit(eta))`, `binomial(n,
#' iprobit(eta))`, `poisson(exp(eta))`, computed on that scale), `negative_binomial`,
#' `beta_binomial` and `hypergeometric`; a family added to the engine without
#' an R counterpart gives an error naming it.
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
  if (!inherits(draws, "greta_mcmc_list")) {
    stop("`draws` must be a greta_mcmc_list made by mcmc()", call. = FALSE)
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
  nodes <- model$ir$nodes
  terms <- lapply(order, function(t) {
    if (!is.null(t$family)) {
      f <- mv_family(t$family, "log_lik()")
      # a distribution over matrices: the whole matrix is one realisation; a
      # mixture: each element is one
      n <- if (isTRUE(f$matrix)) 1L else if (isTRUE(f$elementwise)) length(t$y) else nrow(t$y)
      return(c(t, list(multivariate = TRUE, n = n)))
    }
    node <- nodes[[t$ir + 1L]]
    r_family(node$family, "log_lik()")
    target <- nodes[[node$inputs[1] + 1L]]
    list(family = node$family, lower = node$trunc_lower, upper = node$trunc_upper,
         y = target$values, params = node$inputs[-1], multivariate = FALSE,
         n = length(target$values))
  })
  params <- unique(unlist(lapply(terms, `[[`, "params")))
  raw <- info$raw_draws
  chains <- length(raw)
  iterations <- nrow(raw[[1]])
  free <- do.call(rbind, lapply(raw, as.matrix))
  n_obs <- vapply(terms, `[[`, integer(1), "n")
  out <- matrix(0, nrow(free), sum(n_obs))
  engine <- model_engine(model)
  width <- vapply(params, function(id) as.integer(prod(nodes[[id + 1L]]$dim)), integer(1))
  first <- cumsum(c(0L, width))
  cols_of <- function(id) {
    j <- match(id, params)
    first[j] + seq_len(width[j])
  }
  for (start in seq(1, nrow(free), by = batch)) {
    idx <- start:min(nrow(free), start + batch - 1)
    values <- ls_engine_values(engine, free[idx, , drop = FALSE], params, options)
    if (is.null(dim(values))) values <- matrix(values, nrow = length(idx))
    col <- 0
    for (term in terms) {
      n <- term$n
      if (term$multivariate) {
        # one column per realisation (row of the data, or the whole matrix of
        # a distribution over matrices), computed draw by draw
        d <- mv_families[[term$family]]$d
        cols <- lapply(term$params, cols_of)
        for (i in seq_along(idx)) {
          p <- mv_params(values[i, ], cols, term$param_dims, term$param_names, term$spec)
          out[idx[i], col + seq_len(n)] <- d(term$y, p)
        }
      } else {
        p <- lapply(term$params, function(id) {
          v <- values[, cols_of(id), drop = FALSE]
          if (ncol(v) == 1L && n > 1L) rep(v, n) else as.vector(v)
        })
        ll <- log_density_family(term$family, rep(term$y, each = length(idx)), p, term$lower,
                                 term$upper)
        out[idx, col + seq_len(n)] <- ll
      }
      col <- col + n
    }
  }
  if (merge_chains) return(out)
  array(out, dim = c(iterations, chains, ncol(out)))
}
