# Draws of the traced greta arrays, as a greta_mcmc_list (a coda mcmc.list).

# Column names as greta writes them: "mu" for a scalar, "theta[2,1]" otherwise.
trace_names <- function(name, dim) {
  if (prod(dim) == 1) return(name)
  grid <- as.matrix(expand.grid(lapply(dim, seq_len)))
  paste0(name, "[", apply(grid, 1, paste, collapse = ","), "]")
}

# The greta_mcmc_list of the traced values of kept draws (rows:
# iteration-major, chains within) and, unless NULL, their free states (the
# raw draws: a matrix per chain, kept_free()).
# Iterations are numbered from the first after warmup, as greta numbers them
# (a thinned run's first kept draw is iteration `thin`). `traced`: the traced
# arrays whose values `values` holds.
build_mcmc_list <- function(model, values, free, chains, thin, status, traced = model$traced) {
  names <- unlist(lapply(traced, function(t) trace_names(t$name, t$dim)))
  colnames(values) <- names
  chain_of_row <- rep_len(seq_len(chains), nrow(values))
  draws <- as_mcmc_list(lapply(seq_len(chains), function(chain) {
    values[chain_of_row == chain, , drop = FALSE]
  }), thin)
  attr(draws, "model_info") <- list(raw_draws = if (!is.null(free)) as_mcmc_list(free, thin),
                                    model = model, status = status)
  class(draws) <- c("greta_mcmc_list", class(draws))
  draws
}

# The model's traced arrays whose values a run returned, given the node ids
# the sampler traced (NULL: every one). Across MPI ranks that own their
# groups, ranks other than 0 trace only the arrays that read no group's
# local parameters (ls_sampler_run()).
returned_traces <- function(model, ids) {
  if (is.null(ids)) return(model$traced)
  Filter(function(t) as.integer(t$ir) %in% ids, model$traced)
}

# A coda mcmc.list of one matrix of draws per chain, numbered from `thin` by
# `thin`, built here rather than by coda::mcmc() and mcmc.list(): for raw
# draws of millions of parameters those copied each chain's draws again and
# named millions of unnamed columns to compare them (seconds a run).
# (coda's namespace must be loaded for its mcmc.list methods, `[` among them,
# to reach these objects: the import makes lockstep load it)
#' @importFrom coda mcpar
as_mcmc_list <- function(per_chain, thin) {
  out <- lapply(per_chain, function(draws) {
    if (inherits(draws, "mcmc")) return(draws)  # (ls_rows_by_chain()'s)
    attr(draws, "mcpar") <- c(thin, thin * nrow(draws), thin)
    class(draws) <- "mcmc"
    draws
  })
  class(out) <- "mcmc.list"
  out
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
#' `print()` shows the first few draws of the first chain, as greta does, with
#' how many iterations, chains and variables there are (coda's print of every
#' draw would fill the console for a model of many parameters).
#' `summary()` gives coda's summary (means, standard deviations, standard
#' errors and quantiles) and, for each quantity, the rank-normalised split
#' R-hat and the bulk effective sample size ([rhat()], [ess_bulk()]), and
#' names the sampler that ran, with its tuned step size and the metric warmup
#' learnt. `window()` keeps the iterations from `start` to `end` (numbered
#' as greta numbers them, from the first iteration after warmup: the draws of
#' `mcmc(n_samples = 1000)` are iterations 1 to 1000, and [extra_samples()]
#' goes on from 1001), every `thin`-th one, as coda's window() does, with the
#' sampler diagnostics of the same iterations; a window is not a run that
#' [extra_samples()] can continue.
#'
#' Other coda methods return plain coda objects, as in greta: `draws[, "mu"]`
#' or `draws[1]` is an `mcmc.list` without the model, which [calculate()],
#' [extra_samples()] and [get_sampler_params()] cannot use (index their
#' results instead), and `as.array(draws)` is coda's, iterations x
#' parameters x chains. bayesplot's functions take `draws` itself; for an
#' array in the iterations x chains x parameters order they use, write
#' `aperm(as.array(draws), c(1, 3, 2))`.
#'
#' @param x,object a `greta_mcmc_list`
#' @param start,end the first and last iteration to keep (`NULL`: the draws'
#'   own)
#' @param thin keep one iteration in `thin` (a multiple of the draws' own
#'   thinning; `NULL`: theirs)
#' @param ... passed on to coda's methods
#' `is.greta_mcmc_list()` tells whether an object is such draws (greta's
#' function of the same name).
#'
#' @return `print()` returns `x`, invisibly. `is.greta_mcmc_list()`: `TRUE`
#'   or `FALSE`. `summary()` returns a
#'   `summary.greta_mcmc_list`: coda's `summary.mcmc` with a `diagnostics`
#'   data frame (`rhat`, `ess_bulk`) and a `sampler` line. `window()` returns a
#'   `greta_mcmc_list`.
#' @examples
#' x <- normal(0, 1)
#' draws <- mcmc(model(x), n_samples = 200, warmup = 200, chains = 2, verbose = FALSE)
#' summary(draws)
#' print(window(draws, end = 5))
#' is.greta_mcmc_list(draws)
#' # the second half, every other draw, with its sampler diagnostics
#' half <- window(draws, start = 101, thin = 2)
#' coda::niter(half)
#' nrow(get_sampler_params(half)[[1]])
#' @name greta_mcmc_list
NULL

#' @rdname greta_mcmc_list
#' @export
is.greta_mcmc_list <- function(x, ...) inherits(x, "greta_mcmc_list")

#' @rdname greta_mcmc_list
#' @param n the number of draws `print()` shows (of the first chain)
#' @param variables the number of variables `print()` shows
#' @export
print.greta_mcmc_list <- function(x, ..., n = 5, variables = 10) {
  check_count(n, "n", minimum = 0)
  check_count(variables, "variables", minimum = 1)
  rule <- function(title = NULL) {
    width <- max(20L, getOption("width", 80L) - 1L)
    if (is.null(title)) return(strrep("-", width))
    head <- paste0("-- ", title, " ")
    paste0(head, strrep("-", max(3L, width - nchar(head))))
  }
  chains <- coda::nchain(x)
  # the warmup of the run that made the draws (greta 0.6 prints it; draws
  # from calculate() or a window() have none)
  warmup <- attr(x, "model_info")$run$warmup
  cat(rule("MCMC draws from lockstep"), "\n",
      "* Iterations = ", coda::niter(x), "\n",
      if (!is.null(warmup)) paste0("* Warmup = ", warmup, "\n"),
      "* Chains = ", chains, "\n",
      "* Thinning = ", coda::thin(x), "\n", sep = "")
  if (chains == 0 || coda::niter(x) == 0) return(invisible(x))
  first <- x[[1]]
  iterations <- stats::time(first)
  rows <- seq_len(min(n, nrow(first)))
  cols <- seq_len(min(variables, ncol(first)))
  cat("\n")
  if (length(rows) > 0) {
    cat(rule(sprintf("Chain 1 (iterations %s...%s)", iterations[1], iterations[length(rows)])),
        "\n", sep = "")
    shown <- unclass(first)[rows, cols, drop = FALSE]
    attributes(shown) <- list(dim = dim(shown), dimnames = list(NULL, colnames(first)[cols]))
    print(shown, ...)
  }
  more_draws <- nrow(first) - length(rows)
  more_variables <- ncol(first) - length(cols)
  if (more_draws > 0) {
    cat("i ", more_draws, " more draw", if (more_draws > 1) "s", "\n", sep = "")
  }
  if (more_variables > 0) {
    cat("i ", more_variables, " more variable", if (more_variables > 1) "s", ": ",
        paste(utils::head(colnames(first)[-cols], 5), collapse = ", "),
        if (more_variables > 5) ", ...", "\n", sep = "")
  }
  if (more_draws > 0 || more_variables > 0) {
    cat("Use `print(n = ..., variables = ...)` to see more, or `summary()`\n")
  }
  cat(rule(), "\n", "i View chain i with `draws[[i]]`, all chains with `as.matrix(draws)`\n",
      sep = "")
  invisible(x)
}
