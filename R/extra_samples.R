# Continuing a run (extra_samples), recovering an interrupted one
# (stashed_samples), and windows of draws that keep what continuing needs.

#' Continue sampling, or recover the draws of an interrupted run
#'
#' `extra_samples()` continues the chains of a [mcmc()] run from where they
#' stopped, with the sampler as warmup tuned it (its step size and `diag_sd`),
#' and returns the earlier draws followed by the new ones. There is no more
#' warmup. `stashed_samples()` returns the draws made so far by a run that
#' was interrupted (Esc, Ctrl-C or RStudio's stop button), as greta does;
#' after a run that finished it returns `NULL`.
#'
#' @param draws a `greta_mcmc_list` returned by [mcmc()], `extra_samples()` or
#'   `stashed_samples()`
#' @param n_samples the number of further iterations per chain (before
#'   thinning; a fraction is cut to its whole part, as in greta)
#' @param thin keep every `thin`-th iteration; it must be the thinning of
#'   `draws`, so that the draws stay evenly spaced
#' @param n_cores the number of CPU threads for the further draws; by
#'   default those of the run that made `draws`
#' @param compute_options where the further draws are made: by default where
#'   `draws` were made (the same GPU for a [gpu_only()] run; `n_cores`
#'   threads of the CPU when `n_cores` is given for a CPU run), or
#'   [cpu_only()] or [gpu_only()] to move the chains
#' @inheritParams mcmc
#' @details The chains continue with the sampler that made `draws` when it is
#'   still in memory and has not gone on since (so their random numbers
#'   continue too). When it is not (a saved and reloaded workspace, other
#'   `compute_options`, or a second `extra_samples()` of the same `draws`), a
#'   new sampler starts from each chain's last draw with the tuned step size
#'   and `diag_sd`.
#'   The raw draws (the free state at each draw; see [mcmc()]'s details) are
#'   kept, old and new, while all of them fit in
#'   `getOption("lockstep.max_raw_draws_mb")`; otherwise there are none.
#' @return a `greta_mcmc_list`; `stashed_samples()` returns `NULL` when there
#'   is nothing stashed
#' @examples
#' mu <- normal(0, 1)
#' m <- model(mu)
#' draws <- mcmc(m, n_samples = 100, warmup = 100, chains = 2, verbose = FALSE)
#' more <- extra_samples(draws, n_samples = 50, verbose = FALSE)
#' coda::niter(more)  # 150
#' stashed_samples()  # NULL: the last run was not interrupted
#' @export
extra_samples <- function(draws, n_samples = 1000, thin = 1, n_cores = NULL, verbose = TRUE,
                          pb_update = 50, one_by_one = FALSE, trace_batch_size = 100,
                          compute_options = NULL, checkpoint = NULL, checkpoint_every = NULL) {
  info <- if (inherits(draws, "greta_mcmc_list")) attr(draws, "model_info") else NULL
  if (is.null(info$run)) {
    if (inherits(draws, "greta_mcmc_list") && !is.null(info$model)) {
      stop("`draws` is a window() of a run, or draws computed by calculate(), which ",
           "extra_samples() cannot continue: continue the greta_mcmc_list that mcmc() ",
           "returned, then take the window of the result", call. = FALSE)
    }
    stop("`draws` must be a greta_mcmc_list returned by mcmc(), extra_samples() or ",
         "stashed_samples()", call. = FALSE)
  }
  checked <- check_run_arguments(n_samples, thin, pb_update, trace_batch_size, verbose, n_cores,
                                 one_by_one)
  n_samples <- checked$n_samples
  thin <- checked$thin
  pb_update <- checked$pb_update
  run <- info$run
  if (thin != run$thin) {
    stop("`draws` were thinned by ", run$thin, ": use extra_samples(draws, thin = ", run$thin,
         ") so that the draws stay evenly spaced", call. = FALSE)
  }
  options <- if (!is.null(compute_options)) {
    check_compute_options(compute_options)
  } else if (!is.null(n_cores) && !identical(run$options$backend, "cuda")) {
    with_threads <- run$options
    with_threads$threads <- as.integer(at_most_cores(n_cores))
    with_threads$threads_auto <- FALSE
    with_threads
  } else {
    run$options
  }
  checkpoint <- check_checkpoint(checkpoint, checkpoint_every, options)
  check_draws_fit(run$model, coda::niter(draws) + n_samples %/% thin, run$chains)
  # a new sampler where the old one is gone, moves, or has gone on since
  # these draws (an extra_samples() of them before)
  moved_on <- !is.null(run$cursor) && !identical(run$cursor$calls, run$at)
  # (and, for a checkpoint, where how the sampler was made is not known: a
  # run from an older lockstep)
  if (ls_pointer_is_null(run$handle) || !identical(options, run$options) || moved_on ||
      (!is.null(checkpoint) && is.null(run$construction))) {
    run <- restart_sampler(run, info$last_free, options)
    run$cursor <- sampler_cursor()
    run$options <- options
  }
  # the raw draws go on being kept if they were, and all of them still fit
  # in getOption("lockstep.max_raw_draws_mb")
  chains <- run$chains
  run$keep_raw <- !is.null(info$raw_draws) &&
    keeps_raw_draws(raw_draws_mb(run$model, coda::niter(draws) + n_samples %/% thin, chains),
                    verbose)
  previous <- list(values = interleave_chains(draws),
                   free = if (run$keep_raw) info$raw_draws,
                   last_free = info$last_free, diagnostics = info$diagnostics,
                   warmup_diagnostics = info$warmup_diagnostics,
                   warmup_rescues = info$warmup_rescues)
  run$exchanged_before <- mpi_counts(run$options)  # (this call's alone: mpi_stats(draws))
  writer <- if (!is.null(checkpoint)) {
    checkpoint_open(checkpoint, checkpoint_start(run, info$last_free, 0L, n_samples,
                                                 checkpoint$every, previous), options)
  }
  end_run(run, sample_run(run, 0L, n_samples, pb_update, verbose, previous, writer), previous)
}

# `run` with a new sampler (its handle, and how it was made) that starts at
# each chain's last draw (`last`, a row per chain), with the tuned step size
# and diag_sd (or dense metric), for a run whose own sampler is gone.
restart_sampler <- function(run, last, options) {
  parameters <- run$sampler$parameters
  if (!is.null(run$epsilon)) {
    # each chain's tuned step size (one value: a run from before they were)
    parameters$epsilon <- run$epsilon[1]
    if (length(run$epsilon) > 1) parameters$step_sizes <- run$epsilon
  }
  if (!is.null(run$diag_sd)) {
    parameters$diag_sd <- run$diag_sd
    parameters$diag_sd_from_gradient <- FALSE  # tuned: a further warmup starts from it
  }
  if (!is.null(run$metric_factor)) parameters$metric_factor <- run$metric_factor
  seeds <- same_on_every_rank(floor(stats::runif(2) * 2^32), options)
  run$handle <- ls_sampler_new(model_engine(run$model), last, run$sampler$name, parameters,
                               seeds[1], seeds[2], options)
  run$construction <- list(name = run$sampler$name, parameters = parameters, seeds = seeds)
  run
}

#' @rdname extra_samples
#' @export
stashed_samples <- function() {
  kept_env <- lockstep_stash$last
  if (is.null(kept_env) || is.null(kept_values(kept_env))) return(invisible(NULL))
  suppressWarnings(finish_run(kept_env$run, kept_env, kept_env$previous))
}

#' @importFrom stats window
#' @rdname greta_mcmc_list
#' @export
window.greta_mcmc_list <- function(x, start = NULL, end = NULL, thin = NULL, ...) {
  info <- attr(x, "model_info")
  params <- attr(x, "sampler_params")
  plain <- x
  attr(plain, "model_info") <- NULL
  attr(plain, "sampler_params") <- NULL
  class(plain) <- "mcmc.list"
  args <- Filter(Negate(is.null), list(start = start, end = end, thin = thin))
  out <- do.call(stats::window, c(list(plain), args, list(...)))
  # the same iterations of the raw draws and diagnostics
  kept <- stats::time(plain[[1]]) %in% stats::time(out[[1]])
  if (!is.null(info$raw_draws)) {
    info$raw_draws <- coda::mcmc.list(lapply(info$raw_draws, function(chain) {
      coda::mcmc(chain[kept, , drop = FALSE], start = stats::start(out), thin = coda::thin(out))
    }))
  }
  info$run <- NULL  # a window is not a run that can be continued
  info$last_free <- NULL
  info$warmup_diagnostics <- NULL  # nor does it hold a warmup
  attr(out, "model_info") <- info
  if (!is.null(params)) {
    attr(out, "sampler_params") <- lapply(params, function(p) p[kept, , drop = FALSE])
  }
  class(out) <- c("greta_mcmc_list", class(out))
  out
}
