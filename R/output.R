# Draws of the traced greta arrays, as a greta_mcmc_list (a coda mcmc.list).

# Column names as greta writes them: "mu" for a scalar, "theta[2,1]" otherwise.
trace_names <- function(name, dim) {
  if (prod(dim) == 1) return(name)
  grid <- as.matrix(expand.grid(lapply(dim, seq_len)))
  paste0(name, "[", apply(grid, 1, paste, collapse = ","), "]")
}

# The greta_mcmc_list of the traced values of kept draws (rows:
# iteration-major, chains within) and, unless NULL, their free states (the
# raw draws, rows in the same order).
build_mcmc_list <- function(model, values, free, chains, thin, warmup, status) {
  names <- unlist(lapply(model$traced, function(t) trace_names(t$name, t$dim)))
  colnames(values) <- names
  by_chain <- function(x) {
    chain_of_row <- rep_len(seq_len(chains), nrow(x))
    coda::mcmc.list(lapply(seq_len(chains), function(chain) {
      coda::mcmc(x[chain_of_row == chain, , drop = FALSE], start = warmup + thin, thin = thin)
    }))
  }
  draws <- by_chain(values)
  attr(draws, "model_info") <- list(raw_draws = if (!is.null(free)) by_chain(free),
                                    model = model, status = status)
  class(draws) <- c("greta_mcmc_list", class(draws))
  draws
}

# The rows of a coda mcmc.list's chains interleaved as the sampler makes them
# (iteration-major, chains within): the inverse of build_mcmc_list()'s split.
interleave_chains <- function(x) {
  chains <- length(x)
  n <- nrow(x[[1]])
  all <- do.call(rbind, lapply(x, function(chain) unclass(as.matrix(chain))))
  all[as.vector(t(matrix(seq_len(n * chains), n, chains))), , drop = FALSE]
}

#' Draws from mcmc(): printing, summaries and windows
#'
#' [mcmc()], [extra_samples()] and [stashed_samples()] return a
#' `greta_mcmc_list`: a coda [coda::mcmc.list] of the draws of the model's
#' targets, one [coda::mcmc] per chain, which every coda function takes, with
#' what lockstep keeps beside them: the draws of the free state, the run (so
#' that [extra_samples()] can continue it) and every kept iteration's sampler
#' diagnostics ([get_sampler_params()]).
#'
#' `print()` shows the draws as coda does, without what is kept beside them.
#' `summary()` gives coda's summary (means, standard deviations, standard
#' errors and quantiles) and, for each quantity, the rank-normalised split
#' R-hat and the bulk effective sample size ([rhat()], [ess_bulk()]), and
#' names the sampler that ran, with its tuned step size and the metric warmup
#' learnt. `window()` keeps the iterations from `start` to `end` (counted as
#' coda counts them: warmup included, so the first draw after 1000 warmup
#' iterations is iteration 1001), every `thin`-th one, as coda's window()
#' does, with the sampler diagnostics of the same iterations; a window is not
#' a run that [extra_samples()] can continue.
#'
#' @param x,object a `greta_mcmc_list`
#' @param start,end the first and last iteration to keep (`NULL`: the draws'
#'   own)
#' @param thin keep one iteration in `thin` (a multiple of the draws' own
#'   thinning; `NULL`: theirs)
#' @param ... passed on to coda's methods
#' @return `print()` returns `x`, invisibly. `summary()` returns a
#'   `summary.greta_mcmc_list`: coda's `summary.mcmc` with a `diagnostics`
#'   data frame (`rhat`, `ess_bulk`) and a `sampler` line. `window()` returns a
#'   `greta_mcmc_list`.
#' @examples
#' x <- normal(0, 1)
#' draws <- mcmc(model(x), n_samples = 200, warmup = 200, chains = 2, verbose = FALSE)
#' summary(draws)
#' print(window(draws, end = 205))
#' # the second half, every other draw, with its sampler diagnostics
#' half <- window(draws, start = 301, thin = 2)
#' coda::niter(half)
#' nrow(get_sampler_params(half)[[1]])
#' @name greta_mcmc_list
NULL

#' @rdname greta_mcmc_list
#' @export
print.greta_mcmc_list <- function(x, ...) {
  shown <- x
  # what lockstep keeps with the draws (the run, and every iteration's sampler
  # diagnostics: get_sampler_params()) is not part of the printout
  attr(shown, "model_info") <- NULL
  attr(shown, "sampler_params") <- NULL
  class(shown) <- "mcmc.list"
  print(shown, ...)
  invisible(x)
}
