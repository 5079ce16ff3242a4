#' Draw MCMC samples from a model
#'
#' `mcmc()` runs all chains in lockstep through lockstep's native engine: each
#' leapfrog step evaluates the log density and gradient of every chain in one
#' call. The arguments are greta's, with greta's defaults except the sampler:
#' [nuts()] (Stan's sampler) where greta's is [hmc()].
#'
#' @param model a `greta_model` from [model()]
#' @param sampler a sampler: [nuts()] (the default), [hmc()], [chees()], [rwmh()] or
#'   [slice()]; each tunes itself in warmup, its metric estimated from all
#'   chains' draws or from each chain's own (their `adapt_metric` argument):
#'   for `nuts()`, `hmc()` and `chees()` by default a dense metric where the
#'   draws are strongly correlated and a diagonal one elsewhere (their
#'   `metric` argument)
#' @param n_samples the number of samples to draw per chain after warmup
#'   (before thinning; at least `thin`); a fraction is cut to its whole part,
#'   as in greta
#' @param thin keep every `thin`-th sample
#' @param warmup the number of warmup iterations, during which the sampler's
#'   step size and `diag_sd` are tuned; not returned (a fraction is cut to
#'   its whole part)
#' @param chains the number of chains
#' @param n_cores the number of threads, when `compute_options` does not set
#'   them (greta's meaning: cores used by the sampler)
#' @param verbose whether to show progress bars
#' @param pb_update how many iterations between progress bar updates, at
#'   most (updates also come about four times a second). An interrupt (Esc,
#'   Ctrl-C, RStudio's stop button) is taken at the next leapfrog step: the
#'   iteration under way ends there with a valid draw (its trajectory cut
#'   short), and the draws made so far are returned, and kept for
#'   [stashed_samples()]
#' @param one_by_one accepted for compatibility with greta: lockstep always
#'   rejects numerically bad proposals chain by chain
#' @param initial_values an [initials()] object, or a list of them (one per
#'   chain). Variables without initial values start at values drawn uniformly
#'   between -2 and 2 on their unconstrained scale; starts whose log density is
#'   not finite are drawn again.
#' @param trace_batch_size accepted for compatibility with greta: lockstep
#'   computes the traced values of each kept draw as the sampler makes it
#' @param compute_options where the model runs: [cpu_only()] (the default)
#' @param checkpoint `NULL` (the default: none), or the path of a directory
#'   (new or empty) to which the run writes checkpoints as it goes: its draws
#'   so far and everything needed to go on, so that [resume()] continues a
#'   run that was killed and returns the draws the uninterrupted run would
#'   have made
#' @param checkpoint_every with `checkpoint`, the iterations (warmup and
#'   sampling counted together) between checkpoints; `NULL` (the default)
#'   writes one each time the run has gone on for 100 times as long as the
#'   last one took to write, and at least 30 seconds (so writing costs at
#'   most 1% of the run), and at the end of the run
#'
#' @details Random numbers come from R's generator (through the seeds of
#'   lockstep's own counter-based generator), so `set.seed()` repeats a run
#'   exactly. Interrupting sampling (Esc or Ctrl-C) in an interactive session
#'   returns the draws made so far (the iteration under way ends at its next
#'   leapfrog step); interrupting warmup, before any draw, returns nothing, so
#'   `x <- mcmc(...)` leaves `x` as it was. Outside an interactive session
#'   (`Rscript`, knitting) an interrupt stops the script with an error, the
#'   draws made so far kept in [stashed_samples()].
#'
#'   Besides the draws of the model's targets, the result keeps, as greta's
#'   does, the raw draws: the free state of every kept draw, from which
#'   [calculate()], [log_lik()] and [simulate()] compute other quantities at
#'   each draw. A model with millions of parameters (a hierarchical model with
#'   many groups) would need gigabytes for them, so they are kept only when
#'   they take at most `getOption("lockstep.max_raw_draws_mb")` megabytes
#'   (1024 by default); otherwise the draws of the targets are all there is
#'   (with each chain's last state, so that [extra_samples()] can continue),
#'   and a message says so when `verbose`. Set the option higher before
#'   sampling to keep them, or trace what is wanted later as a target of
#'   [model()].
#'
#'   Warmup brings back a chain left behind, which no sampler of one chain
#'   can do: at the end of each of warmup's metric windows (Stan's windows:
#'   100, 150, 250, 450 and 950 iterations into a warmup of 1000), a chain of
#'   [nuts()], [hmc()] or [chees()] whose mean acceptance over the window was
#'   below 0.05, or below half the other chains' median and below 0.5, or
#'   whose log density lies far below the others' (see [samplers]), is moved
#'   to the current state of a healthy chain drawn at random, with that
#'   chain's step size; from there it goes on with its own random numbers.
#'   Warmup's draws are not kept, so the distribution sampled is unchanged.
#'   Each move is recorded in `attr(draws, "model_info")$warmup_rescues` (a
#'   data frame: the warmup iteration, the chain, the chain it moved to, `NA`
#'   when no chain was healthy, its mean acceptance over the window and its
#'   log density's lag), and, with `verbose`, said in one line. A chain still
#'   stuck after warmup is named in a warning. With one chain, or a dense
#'   metric adapted per chain, nothing is moved.
#'
#'   With `checkpoint`, the run writes checkpoints to that directory (see
#'   [resume()] for what it holds): every `checkpoint_every` iterations, or
#'   by default as often as costs at most 1% of the run, and once it ends. A
#'   run killed by a batch system's time limit, the out-of-memory killer or a
#'   crash then loses only the iterations since its last checkpoint:
#'   `resume(checkpoint, model)` goes on from there, and with the same seed
#'   and threads returns draws identical to those of a run that was never
#'   stopped. (An interrupt, Esc or Ctrl-C, writes none: its iteration under
#'   way is cut short, which the uninterrupted run would not do.)
#'
#'   Before it starts, a run checks that its kept draws (the targets' values
#'   and each draw's diagnostics, twice over while they are gathered) fit in
#'   the memory available (`MemAvailable` in `/proc/meminfo`, or
#'   `getOption("lockstep.memory_available_mb")` where that is set), and
#'   stops with the sizes and what to change otherwise, rather than fill the
#'   memory over minutes.
#'
#' @return a `greta_mcmc_list`: a [coda::mcmc.list] with one [coda::mcmc]
#'   per chain, columns named as greta names them (`mu`, `theta[1,1]`, ...).
#'   Its `summary()` adds to coda's the rank-normalised split R-hat and bulk
#'   effective sample size of each quantity, and the sampler with its tuned
#'   step size and the metric warmup learnt (for `metric = "auto"`, whether it
#'   chose a dense or a diagonal one)
#' @examples
#' y <- c(28, 8, -3, 7, -1, 1, 18, 12)
#' sigma_y <- c(15, 10, 16, 11, 9, 11, 10, 18)
#' mu <- normal(0, 5)
#' tau <- cauchy(0, 5, truncation = c(0, Inf))
#' theta_tilde <- normal(0, 1, dim = 8)
#' theta <- mu + tau * theta_tilde
#' distribution(y) <- normal(theta, sigma_y)
#' m <- model(mu, tau, theta)
#' draws <- mcmc(m, n_samples = 200, warmup = 200, chains = 2, verbose = FALSE)
#' summary(draws)
#'
#' # start every chain at mu = 1 and tau = 2 (theta_tilde at random)
#' draws <- mcmc(m, n_samples = 200, warmup = 200, chains = 2, verbose = FALSE,
#'               initial_values = initials(mu = 1, tau = 2))
#' # or each chain somewhere of its own
#' inits <- list(initials(mu = -1, tau = 1), initials(mu = 1, tau = 3))
#' draws <- mcmc(m, n_samples = 200, warmup = 200, chains = 2, verbose = FALSE,
#'               initial_values = inits)
#' @seealso [greta_mcmc_list] for printing, summarising and windowing the draws
#' @export
mcmc <- function(model, sampler = nuts(), n_samples = 1000, thin = 1, warmup = 1000,
                 chains = 4, n_cores = NULL, verbose = TRUE, pb_update = 50,
                 one_by_one = FALSE, initial_values = initials(), trace_batch_size = 100,
                 compute_options = cpu_only(threads = n_cores), checkpoint = NULL,
                 checkpoint_every = NULL) {
  if (!inherits(model, "greta_model")) {
    stop("`model` must be a greta_model created by model()", call. = FALSE)
  }
  if (!inherits(sampler, "sampler")) {
    stop("`sampler` must be a sampler such as nuts() or hmc()", call. = FALSE)
  }
  checked <- check_run_arguments(n_samples, thin, pb_update, trace_batch_size, verbose, n_cores,
                                 one_by_one)
  n_samples <- checked$n_samples
  thin <- checked$thin
  pb_update <- checked$pb_update
  warmup <- check_count(warmup, "warmup", 0, truncate = TRUE)
  chains <- check_count(chains, "chains", 1)
  options <- check_compute_options(compute_options)
  checkpoint <- check_checkpoint(checkpoint, checkpoint_every, options)
  check_ranks_agree(model, options)
  check_draws_fit(model, n_samples %/% thin, chains)
  engine <- model_engine(model)
  init <- initial_free_state(model, initial_values, chains, options, parent.frame())

  seeds <- same_on_every_rank(floor(stats::runif(2) * 2^32), options)
  exchanged_before <- mpi_counts(options)  # (what the run sends, from here: mpi_stats(draws))
  handle <- ls_sampler_new(engine, init, sampler$name, sampler$parameters, seeds[1], seeds[2],
                           options)

  raw_mb <- raw_draws_mb(model, n_samples %/% thin, chains)
  run <- list(model = model, handle = handle, cursor = sampler_cursor(), sampler = sampler,
              chains = chains, thin = thin, warmup = warmup, options = options,
              keep_raw = keeps_raw_draws(raw_mb, verbose),
              construction = list(name = sampler$name, parameters = sampler$parameters,
                                  seeds = seeds),
              exchanged_before = exchanged_before)
  writer <- if (!is.null(checkpoint)) {
    checkpoint_open(checkpoint, checkpoint_start(run, init, warmup, n_samples, checkpoint$every),
                    options)
  }
  end_run(run, sample_run(run, warmup, n_samples, pb_update, verbose, checkpoint = writer))
}

# What mcmc() and extra_samples() do with a run's kept draws. An interrupt in
# an interactive session returns the draws made so far; with none (warmup
# interrupted) it aborts to the console, so that `x <- mcmc(...)` leaves the
# earlier `x`, as any interrupted assignment does. Outside one (Rscript,
# knitting) an interrupt stops the script with an error, the draws kept in
# stashed_samples(), rather than let the script go on with part of a run.
end_run <- function(run, kept_env, previous = NULL) {
  if (identical(kept_env$status, "interrupted")) {
    has_draws <- !is.null(kept_values(kept_env)) || !is.null(previous)
    if (!interactive_session()) {
      stop("sampling was interrupted", if (has_draws) {
        ": the draws made so far are in stashed_samples()"
      } else {
        " during warmup, before any draw"
      }, call. = FALSE)
    }
    if (!has_draws) {
      message("interrupted during warmup: there are no draws (an assignment keeps its earlier ",
              "value)")
      invokeRestart("abort")
    }
  }
  finish_run(run, kept_env, previous)
}

# Whether R runs interactively, as interrupts are handled
# (getOption("lockstep.interactive") where set: tests).
interactive_session <- function() {
  isTRUE(getOption("lockstep.interactive", interactive()))
}

# Stops before a run whose `draws` kept draws of each of `chains` chains
# would not fit in the memory available: each draw's traced values and six
# diagnostics, doubled (the chunks and their binding coexist at the end).
check_draws_fit <- function(model, draws, chains) {
  available <- memory_available_mb()
  if (is.na(available)) return(invisible(NULL))
  width <- sum(vapply(model$traced, function(t) prod(t$dim), numeric(1)))
  need <- 2 * draws * chains * (width + 6) * 8 / 2^20
  if (need > available) {
    stop("keeping ", format(draws, big.mark = ",", scientific = FALSE), " draws of ", chains,
         " chains of ", width, " traced values would take about ", format_mb(need),
         ", more than the ", format_mb(available), " of memory available: use a smaller ",
         "`n_samples`, a larger `thin`, or trace fewer values in model()", call. = FALSE)
  }
  invisible(NULL)
}

# Megabytes of memory available (NA where unknown):
# getOption("lockstep.memory_available_mb"), else Linux's MemAvailable.
memory_available_mb <- function() {
  set <- getOption("lockstep.memory_available_mb")
  if (!is.null(set)) {
    if (!is.numeric(set) || length(set) != 1 || is.na(set) || set <= 0) {
      stop("option `lockstep.memory_available_mb` must be a positive number of megabytes",
           call. = FALSE)
    }
    return(set)
  }
  if (!file.exists("/proc/meminfo")) return(NA_real_)
  line <- grep("^MemAvailable:", readLines("/proc/meminfo", warn = FALSE), value = TRUE)
  kb <- suppressWarnings(as.numeric(sub("^MemAvailable: *([0-9]+) kB.*$", "\\1", line[1])))
  if (length(kb) != 1 || is.na(kb)) NA_real_ else kb / 1024
}

# The megabytes that the raw draws (free states) of `draws` draws of each of
# `chains` chains of `model` take.
raw_draws_mb <- function(model, draws, chains) model$n_free * draws * chains * 8 / 2^20

# Whether a run keeps raw draws of `mb` megabytes (see mcmc()'s details): at
# most getOption("lockstep.max_raw_draws_mb"), 1024 when unset.
keeps_raw_draws <- function(mb, verbose) {
  limit <- getOption("lockstep.max_raw_draws_mb", 1024)
  if (!is.numeric(limit) || length(limit) != 1 || is.na(limit) || limit < 0) {
    stop("option `lockstep.max_raw_draws_mb` must be a number of megabytes, 0 or more",
         call. = FALSE)
  }
  keep <- mb <= limit
  if (!keep && verbose) {
    message("not keeping the raw draws (the free state at each draw): they would take ",
            format_mb(mb), ", more than getOption(\"lockstep.max_raw_draws_mb\") = ", limit,
            " MB; calculate() and log_lik() of these draws need them")
  }
  keep
}

format_mb <- function(mb) {
  if (mb >= 1024) sprintf("%.1f GB", mb / 1024) else if (mb >= 1) sprintf("%.0f MB", mb) else
    sprintf("%.2g MB", mb)
}

# An error for a function that needs the raw draws of `draws` (whose
# model_info is `info`), saying why they are not there.
stop_without_raw_draws <- function(info, arg) {
  if (!is.null(info$model) && !is.null(info$raw_draws_mb)) {
    stop("`", arg, "` holds no raw draws (the free state at each draw): mcmc() did not keep ",
         "them, since they would have taken ", format_mb(info$raw_draws_mb), ", more than ",
         "getOption(\"lockstep.max_raw_draws_mb\"); set that option higher before mcmc() ",
         "to keep them", call. = FALSE)
  }
  stop("`", arg, "` is a greta_mcmc_list without its model's draws", call. = FALSE)
}

# The arguments mcmc() and extra_samples() share, checked, as integers.
check_run_arguments <- function(n_samples, thin, pb_update, trace_batch_size, verbose,
                                n_cores, one_by_one = FALSE) {
  out <- list(n_samples = check_count(n_samples, "n_samples", 0, truncate = TRUE),
              thin = check_count(thin, "thin", 1),
              pb_update = check_count(pb_update, "pb_update", 1),
              trace_batch_size = check_batch_size(trace_batch_size))
  for (arg in c("verbose", "one_by_one")) {
    v <- get(arg)
    if (!is.logical(v) || length(v) != 1 || is.na(v)) {
      stop("`", arg, "` must be TRUE or FALSE", call. = FALSE)
    }
  }
  if (!is.null(n_cores)) check_count(n_cores, "n_cores", minimum = 1)
  if (out$n_samples < out$thin) {
    stop("`n_samples` (", out$n_samples, ") must be at least `thin` (", out$thin, "): with ",
         "one draw kept per `thin` iterations, none would be kept", call. = FALSE)
  }
  out
}

# Where a sampler (run$handle) is, shared by every copy of the run that holds
# it: `calls`, how many times it has run (a run's draws record the count at
# their end, so extra_samples() can tell whether the sampler is still where
# they stopped: extra_samples(d) twice continues d twice, not the first
# continuation), and `bad`, its tally of bad proposals so far (cumulative in
# the sampler), from which a run's progress bar counts its own.
sampler_cursor <- function() {
  cursor <- new.env(parent = emptyenv())
  cursor$calls <- 0
  cursor$bad <- 0
  cursor
}

# Runs a sampler's phases, keeping what it draws in an environment that is
# also stashed for stashed_samples(), so that nothing is lost to an interrupt.
# `previous`: the draws an extra_samples() run continues, which
# stashed_samples() puts before the new ones.
# `checkpoint`: the run's checkpoint writer (checkpoint_open()), or NULL.
sample_run <- function(run, warmup, n_samples, pb_update, verbose, previous = NULL,
                       checkpoint = NULL) {
  kept_env <- new.env(parent = emptyenv())
  kept_env$run <- run
  kept_env$previous <- previous
  lockstep_stash$last <- kept_env
  kept_env$status <- run_phases(run$handle, warmup, n_samples, run$thin, run$chains, pb_update,
                                verbose, kept_env, checkpoint = checkpoint)
  kept_env
}

# The greta_mcmc_list of a run's kept draws (NULL when there are none), with
# what extra_samples() needs to continue it. A complete run empties the stash.
finish_run <- function(run, kept_env, previous = NULL) {
  values <- kept_values(kept_env)
  if (is.null(values) && is.null(previous)) return(invisible(NULL))
  free <- if (isTRUE(run$keep_raw)) kept_free(kept_env, run$chains, run$thin, previous$free)
  diagnostics <- kept_diagnostics(kept_env)
  if (!is.null(diagnostics)) warn_sampler_problems(diagnostics, run$sampler, run$chains)
  last <- kept_env$last_free
  if (!is.null(previous)) {
    values <- rbind(previous$values, values)
    diagnostics <- rbind(previous$diagnostics, diagnostics)
    if (is.null(last)) last <- previous$last_free
  }
  # (kept with the run, for extra_samples() runs that keep no new draw)
  if (!is.null(kept_env$traced_here)) run$traced_here <- kept_env$traced_here
  out <- build_mcmc_list(run$model, values, free, run$chains, run$thin, kept_env$status,
                         returned_traces(run$model, run$traced_here))
  info <- attr(out, "model_info")
  if (!isTRUE(run$keep_raw)) info$raw_draws_mb <- raw_draws_mb(run$model, nrow(values) / run$chains,
                                                       run$chains)
  info$run <- run
  info$run$at <- run$cursor$calls  # where the sampler stood when these draws ended
  info$run$epsilon <- kept_env$epsilon
  info$run$diag_sd <- kept_env$diag_sd
  info$run$metric_factor <- kept_env$metric_factor
  info$last_free <- last  # each chain's last kept state, where extra_samples() starts
  info$diagnostics <- diagnostics
  # the chains warmup moved (extra_samples() has no warmup of its own)
  info$warmup_rescues <- if (is.null(previous)) {
    if (is.null(kept_env$rescues)) no_rescues() else kept_env$rescues
  } else {
    previous$warmup_rescues
  }
  info$warmup_diagnostics <- if (is.null(previous)) {
    kept_warmup_diagnostics(kept_env, names(diagnostics))
  } else {
    previous$warmup_diagnostics  # extra_samples() has no warmup of its own
  }
  info$mpi <- run_exchange(run, kept_env)
  attr(out, "model_info") <- info
  attr(out, "sampler_params") <- split_by_chain(diagnostics, run$chains)
  if (identical(kept_env$status, "complete") && identical(lockstep_stash$last, kept_env)) {
    lockstep_stash$last <- NULL
  }
  out
}

# A run's chunks of kept rows (free states, traced values or diagnostics)
# bound into one, NULL when there are none. Data frames (the diagnostics) are
# bound column by column: rbind()'s data frame method was a tenth of a small
# model's mcmc().
bind_chunks <- function(chunks) {
  if (!length(chunks)) return(NULL)
  if (!is.data.frame(chunks[[1]])) return(do.call(rbind, chunks))
  columns <- lapply(names(chunks[[1]]), function(name) {
    unlist(lapply(chunks, `[[`, name), use.names = FALSE)
  })
  rows <- length(columns[[1]])
  structure(stats::setNames(columns, names(chunks[[1]])), class = "data.frame",
            row.names = if (rows > 0) c(NA_integer_, -rows) else integer(0))
}

# Each chain's raw draws, a matrix per chain (rows its draws), after
# `earlier`'s (the same, from the draws extra_samples() continues); NULL when
# there are none. (In C++: rbind() and row subsetting of draws of millions of
# parameters cost seconds.)
kept_free <- function(kept_env, chains, thin, earlier = NULL) {
  if (!length(kept_env$chunks) && is.null(earlier)) return(NULL)
  ls_rows_by_chain(if (is.null(earlier)) list() else earlier, kept_env$chunks, chains, thin)
}
kept_values <- function(kept_env) bind_chunks(kept_env$values)
kept_diagnostics <- function(kept_env) bind_chunks(kept_env$diagnostics)

# Every warmup iteration's diagnostics (rows: iteration-major, chains within),
# with no rows when there was no warmup.
kept_warmup_diagnostics <- function(kept_env, columns) {
  out <- bind_chunks(kept_env$warmup_diagnostics)
  if (!is.null(out)) return(out)
  as.data.frame(stats::setNames(rep(list(numeric(0)), length(columns)), columns))
}

# The draws of the last mcmc() or extra_samples() run that did not finish.
lockstep_stash <- new.env(parent = emptyenv())

# After sampling, as Stan does: divergent transitions and trajectories that hit
# the maximum tree depth (nuts()) or the most leapfrog steps (chees()) are
# worth a warning.
warn_sampler_problems <- function(d, sampler, chains = 1L) {
  n_div <- sum(d$divergent__)
  if (n_div > 0) {
    warning(n_div, " of ", nrow(d), " kept draws (all chains) came from divergent transitions",
            per_chain_counts(d$divergent__, chains), "; consider ", smaller_step_advice(sampler),
            ", or reparameterising the model", call. = FALSE)
  }
  warn_stuck_chains(d, sampler, chains)
  if (identical(sampler$name, "nuts")) {
    n_max <- sum(d$treedepth__ >= sampler$parameters$max_treedepth)
    if (n_max > 0) {
      warning(n_max, " of ", nrow(d), " kept draws (all chains) hit the maximum tree depth of ",
              sampler$parameters$max_treedepth,
              per_chain_counts(d$treedepth__ >= sampler$parameters$max_treedepth, chains),
              "; consider nuts(max_treedepth = ",
              sampler$parameters$max_treedepth + 2, ")", call. = FALSE)
    }
  }
  if (identical(sampler$name, "chees")) {
    cap <- sampler$parameters$max_leapfrog
    n_cap <- sum(d$n_leapfrog__ >= cap)
    if (n_cap > 0) {
      warning(n_cap, " of ", nrow(d), " kept draws (all chains) reached chees()'s limit of ", cap,
              " leapfrog steps", per_chain_counts(d$n_leapfrog__ >= cap, chains),
              ", which cuts the adapted trajectory short; consider chees(max_leapfrog = ", 2 * cap,
              ")", call. = FALSE)
    }
  }
  invisible(NULL)
}

# A chain that accepts far fewer of its proposals than the others is stuck
# where the step size the chains share is too large for it (the narrow neck
# of a funnel, say): its draws barely move, and every summary of the run is
# wrong. (greta's eight schools at its defaults: one seed in a dozen left a
# chain accepting none of its proposals for 900 of 1000 draws, with the
# other chains at 0.9.) Named, with what to do, rather than left silent.
# Hamiltonian samplers only: rwmh() and slice() accept as they do.
warn_stuck_chains <- function(d, sampler, chains) {
  if (chains < 2 || !sampler$name %in% c("nuts", "hmc", "chees")) return(invisible(NULL))
  if (is.null(d$accept_stat__)) return(invisible(NULL))
  chain_of_row <- rep_len(seq_len(chains), nrow(d))
  accept <- vapply(seq_len(chains), function(k) mean(d$accept_stat__[chain_of_row == k]),
                   numeric(1))
  others <- vapply(seq_len(chains), function(k) stats::median(accept[-k]), numeric(1))
  stuck <- which(accept < 0.5 * others & accept < 0.5)
  if (length(stuck) == 0) return(invisible(NULL))
  warning(if (length(stuck) == 1) "chain " else "chains ", paste(stuck, collapse = ", "),
          " barely moved: mean acceptance ", paste(sprintf("%.2f", accept[stuck]), collapse = ", "),
          " against ", sprintf("%.2f", stats::median(accept[-stuck])), " for the other chains. ",
          if (length(stuck) == 1) "It is" else "They are",
          if (identical(sampler$parameters$adapt_step_size, "shared")) {
            " stuck where the step size all chains share is too large (a narrow region, such "
          } else {
            " stuck where the step size is too large for it (a narrow region, such "
          },
          "as the neck of a funnel), so the run's summaries are not to be trusted; consider ",
          split_step_advice(sampler), smaller_step_advice(sampler),
          ", a non-centred parameterisation, or more chains and a longer warmup", call. = FALSE)
}

# For nuts() without split steps: nuts(max_energy_error = 2), which takes the
# steps that a narrow region's energy error shows to be too large as several
# smaller ones (on greta's eight schools, 50 seeds: no stuck chain, against
# one at the default; bench/RESULTS.md).
split_step_advice <- function(sampler) {
  if (!identical(sampler$name, "nuts")) return("")
  error <- sampler$parameters$max_energy_error
  if (!is.null(error) && is.finite(error)) return("")
  "split steps (nuts(max_energy_error = 2)), "

}

# Where a sampler's warning counts come from, when there are several chains:
# " (chain 4: 31; chain 2: 1)", the chains with most first. `flags`: one per
# kept draw, rows iteration-major with chains within.
per_chain_counts <- function(flags, chains) {
  if (chains < 2) return("")
  counts <- tabulate(rep_len(seq_len(chains), length(flags))[flags != 0], chains)
  named <- order(-counts)[sort(-counts) < 0]
  paste0(" (", paste0("chain ", named, ": ", counts[named], collapse = "; "), ")")
}

# How to make a sampler's steps smaller, in its own arguments: nuts()'s
# adapt_delta (a higher target acceptance); hmc() and chees() adapt their step
# size to a fixed target, so nuts() with a higher adapt_delta is the way.
smaller_step_advice <- function(sampler) {
  if (identical(sampler$name, "nuts")) {
    delta <- sampler$parameters$adapt_delta
    higher <- if (delta < 0.95) 0.95 else if (delta < 0.99) 0.99 else NULL
    if (!is.null(higher)) {
      return(paste0("a smaller step size (nuts(adapt_delta = ", higher, "), now ", delta, ")"))
    }
    return(paste0("a longer warmup (the step size is already at adapt_delta = ", delta, ")"))
  }
  paste0("nuts(adapt_delta = 0.95), which adapts a smaller step size than ", sampler$name,
         "() can")
}

# The chains warmup moved, as the sampler reports them (all of them so far:
# `now`) against those reported before (`before`): with verbose, one line
# for each window's end that moved some.
report_rescues <- function(now, before, verbose) {
  if (!verbose || is.null(now)) return(invisible(NULL))
  seen <- if (is.null(before)) 0L else nrow(before)
  if (nrow(now) <= seen) return(invisible(NULL))
  new <- now[seq(seen + 1L, nrow(now)), , drop = FALSE]
  # (the progress bar's line, drawn after a carriage return, has no newline
  # of its own yet: end it, so that the message is a line of its own)
  cat("\n", file = stderr())
  for (it in unique(new$iteration)) {
    r <- new[new$iteration == it, , drop = FALSE]
    moved <- !is.na(r$moved_to)
    parts <- c(
      if (any(moved)) paste0(ngettext(sum(moved), "chain ", "chains "),
                             paste(r$chain[moved], collapse = ", "), " moved to the state of ",
                             ngettext(sum(moved), "chain ", "chains "),
                             paste(r$moved_to[moved], collapse = ", ")),
      if (any(!moved)) paste0(ngettext(sum(!moved), "chain ", "chains "),
                              paste(r$chain[!moved], collapse = ", "),
                              " stuck too, with no healthy chain to move to: going on")
    )
    message(sprintf("warmup iteration %d: %s (mean acceptance %s in the last window)", it,
                    paste(parts, collapse = "; "),
                    paste(sprintf("%.2f", r$accept), collapse = ", ")))
  }
  invisible(NULL)
}

# An empty table of warmup's moves (attr(draws, "model_info")$warmup_rescues).
no_rescues <- function() {
  data.frame(iteration = integer(0), chain = integer(0), moved_to = integer(0),
             accept = numeric(0), lag = numeric(0))
}

# At the end of warmup, a chain whose log density lies far below the others'
# (lag > 1: more than 10 + 5 sqrt(d / 2) below their median, as the sampler
# measures it; see ?samplers) has not come in from its initial values, and
# its draws will start out in the tails: worth a warning before sampling.
warn_lagging_chains <- function(lag) {
  lagging <- which(lag > 1)
  if (length(lagging) == 0) return(invisible(NULL))
  warning(if (length(lagging) == 1) "chain " else "chains ", paste(lagging, collapse = ", "),
          " had not reached the other chains by the end of warmup (a log density far below ",
          "theirs), so ", if (length(lagging) == 1) "its" else "their",
          " first draws are from the tails; consider a longer warmup or initial values ",
          "nearer the posterior (initials())", call. = FALSE, immediate. = TRUE)
}

# Rows are iteration-major with chains within: one data frame per chain.
split_by_chain <- function(d, chains) {
  if (is.null(d)) return(NULL)
  chain <- rep_len(seq_len(chains), nrow(d))
  lapply(seq_len(chains), function(k) {
    x <- d[chain == k, , drop = FALSE]
    rownames(x) <- NULL
    x
  })
}

#' Sampler diagnostics of each draw
#'
#' The per-iteration diagnostics of the kept draws of [mcmc()] in rstan's
#' shape: a numeric matrix per chain, with the columns rstan's
#' `get_sampler_params()` has (so `bayesplot::nuts_params()` reads the list):
#' `accept_stat__` (the mean acceptance probability over the trajectory),
#' `stepsize__`, `treedepth__` (NUTS; 0 for HMC), `n_leapfrog__`,
#' `divergent__` (1 when the energy error exceeded 1000) and `energy__` (the
#' Hamiltonian at the draw).
#'
#' @param x a `greta_mcmc_list` from [mcmc()]
#' @param inc_warmup whether to include warmup's iterations (every one, before
#'   the kept draws' rows), as rstan's `inc_warmup = TRUE` does; the default
#'   gives the kept draws' rows only, one per draw (a [window()] of draws
#'   keeps no warmup)
#' @return a list of numeric matrices, one per chain, one row per kept draw
#'   (with `inc_warmup = TRUE`, first one per warmup iteration)
#' @examples
#' mu <- normal(0, 1)
#' draws <- mcmc(model(mu), n_samples = 100, warmup = 100, chains = 2, verbose = FALSE)
#' params <- get_sampler_params(draws)
#' colMeans(params[[1]])
#' # warmup's step sizes as dual averaging tuned them
#' with_warmup <- get_sampler_params(draws, inc_warmup = TRUE)
#' plot(with_warmup[[1]][, "stepsize__"], type = "l", log = "y")
#' @export
get_sampler_params <- function(x, inc_warmup = FALSE) {
  params <- attr(x, "sampler_params")
  if (is.null(params)) {
    stop("`x` must be a greta_mcmc_list returned by mcmc(), which holds its sampler's ",
         "diagnostics", call. = FALSE)
  }
  if (!is.logical(inc_warmup) || length(inc_warmup) != 1 || is.na(inc_warmup)) {
    stop("`inc_warmup` must be TRUE or FALSE", call. = FALSE)
  }
  if (!inc_warmup) return(lapply(params, sampler_params_matrix))
  warmup <- attr(x, "model_info")$warmup_diagnostics
  if (is.null(warmup)) {
    stop("`x` holds no warmup diagnostics (a window() of draws keeps none): use ",
         "inc_warmup = FALSE", call. = FALSE)
  }
  warmup <- split_by_chain(warmup, length(params))
  lapply(seq_along(params), function(k) sampler_params_matrix(rbind(warmup[[k]], params[[k]])))
}

# A chain's diagnostics (a data frame, as the run keeps them) as rstan gives
# them: a numeric matrix, columns named, rows not.
sampler_params_matrix <- function(d) {
  out <- as.matrix(d)
  storage.mode(out) <- "double"
  rownames(out) <- NULL
  out
}

# Runs warmup then sampling in chunks of at most pb_update iterations, so
# progress is shown. Chunks are also kept to about a quarter of a second each;
# the first chunk of a run is one iteration, which times them. A chunk's call
# and the keeping of its draws run with interrupts suspended, so that an
# interrupt cannot drop draws the sampler has made: the sampler sees it at
# its next leapfrog step, ends the iteration under way there (a valid draw)
# and returns, and the interrupt is signalled as soon as the chunk's draws
# are kept. So a large model whose one iteration takes minutes stops at once.
# The traced values of kept draws, their free states (when the run keeps its
# raw draws) and their diagnostics are appended to kept_env$values,
# kept_env$chunks and kept_env$diagnostics as they are made (rows:
# iteration-major, chains within); the last kept state (a row per chain),
# the step size and diag_sd to kept_env.
# With `checkpoint` (checkpoint_open()), checkpoints are written as they fall
# due (checkpoint_due()) and at the end, after chunks that were not
# interrupted. `resume_at`: list(phase, done), where a resumed run
# (resume()) goes on from, its sampler restored and kept_env filled.
run_phases <- function(handle, warmup, n_samples, thin, chains, pb_update, verbose, kept_env,
                       resume_at = NULL, checkpoint = NULL) {
  width_total <- max(warmup, n_samples)
  run <- kept_env$run
  traced <- vapply(run$model$traced, function(t) as.integer(t$ir), integer(1))
  if (is.null(resume_at)) {  # (a resumed run's kept_env holds its draws so far)
    kept_env$values <- list()
    kept_env$chunks <- list()
    kept_env$diagnostics <- list()
    kept_env$warmup_diagnostics <- list()
  }
  cursor <- run$cursor
  bad_so_far <- if (is.null(cursor)) 0 else cursor$bad  # the sampler's tally is cumulative
  seconds_per_iteration <- 0
  phases <- c("warmup", "sampling")
  first <- if (is.null(resume_at)) 1L else match(resume_at$phase, phases)
  status <- tryCatch({
    if (is.null(resume_at)) ls_sampler_begin_warmup(handle, warmup)
    for (phase in phases[first:2]) {
      total <- if (phase == "warmup") warmup else n_samples
      done <- if (!is.null(resume_at) && phase == resume_at$phase) resume_at$done else 0L
      bar <- progress_bar(phase, total, width_total, chains, verbose, done)
      bad_at_start <- bad_so_far
      while (done < total) {
        n <- min(pb_update, total - done)
        n <- if (seconds_per_iteration > 0) {
          max(1L, min(n, floor(0.25 / seconds_per_iteration)))
        } else {
          1L
        }
        # across MPI ranks every call is collective (ranks that own their
        # groups gather the metric at its end): all make rank 0's calls
        n <- same_on_every_rank(n, run$options)
        position <- done + if (phase == "sampling") warmup else 0L
        n <- min(n, checkpoint_room(checkpoint, position))
        # Across ranks that own their groups, the last state and the tuned
        # diag_sd are made whole (gathered: chains x every free parameter)
        # only for the run's last call and a checkpoint's, where R needs them;
        # the other calls exchange only what the gradients do. (Calls across
        # ranks are never cut short by an interrupt, so the last is known.)
        last_call <- done + n >= total && (phase == "sampling" || n_samples == 0)
        whole <- !isTRUE(run$options$mpi) || last_call ||
          (!is.null(checkpoint) && checkpoint_due(checkpoint, position + n))
        started <- proc.time()[["elapsed"]]
        suspendInterrupts({
          sampling <- phase == "sampling"
          res <- ls_sampler_run(handle, n, !sampling, if (sampling) thin else 1L, done,
                                if (sampling) traced else integer(0),
                                sampling && isTRUE(run$keep_raw), whole)
          done <- done + res$iterations
          if (!is.null(cursor)) cursor$calls <- cursor$calls + 1
          kept_env$epsilon <- res$epsilon
          if (phase == "warmup") {
            report_rescues(res$rescues, kept_env$rescues, verbose)
            kept_env$rescues <- res$rescues
          }
          if (!is.null(res$diag_sd)) kept_env$diag_sd <- res$diag_sd
          kept_env$metric_factor <- res$metric_factor
          if (sampling && nrow(res$values) > 0) {
            kept_env$values[[length(kept_env$values) + 1L]] <- res$values
            if (isTRUE(run$keep_raw) && res$free_kept) {
              kept_env$chunks[[length(kept_env$chunks) + 1L]] <- res$free
            }
            kept_env$traced_here <- res$traced
            if (nrow(res$free) >= chains) {  # (none: not made whole, see above)
              kept_env$last_free <- res$free[seq(nrow(res$free) - chains + 1, nrow(res$free)), ,
                                             drop = FALSE]
            }
            kept_env$diagnostics[[length(kept_env$diagnostics) + 1L]] <- res$diagnostics
          }
          if (phase == "warmup") {
            w <- kept_env$warmup_diagnostics
            kept_env$warmup_diagnostics[[length(w) + 1L]] <- res$diagnostics
          }
          # (not after an interrupt: its cut trajectory is not the run's)
          finished <- phase == "sampling" && done == total
          if (!is.null(checkpoint) && !res$interrupted &&
              (finished || checkpoint_due(checkpoint, position + res$iterations))) {
            checkpoint_write(checkpoint, handle, kept_env,
                             list(phase = phase, done = done,
                                  status = if (finished) "complete" else "running"))
          }
        })
        if (res$interrupted) {
          # an interrupt during the call ended it after the iteration under
          # way, and the sampler took it off R's flag: signal it here, where
          # the draws are kept
          signalCondition(structure(class = c("interrupt", "condition"),
                                    list(message = "interrupt", call = NULL)))
        }
        seconds_per_iteration <- (proc.time()[["elapsed"]] - started) / res$iterations
        bad_so_far <- sum(res$bad)
        if (!is.null(cursor)) cursor$bad <- bad_so_far
        if (phase == "warmup" && done == total) warn_lagging_chains(res$lag_at_warmup_end)
        progress_update(bar, done, bad_so_far - bad_at_start, final = done == total)
      }
    }
    "complete"
  }, interrupt = function(e) {
    cat("\n", file = stderr())
    "interrupted"
  })
  if (status == "interrupted" && length(kept_env$values)) {
    earlier <- if (is.null(kept_env$previous)) 0 else nrow(kept_env$previous$values)
    n <- (earlier + nrow(kept_values(kept_env))) / chains
    if (interactive_session()) {
      message("sampling was interrupted: returning the ", n,
              " draws per chain made so far (also available from stashed_samples())")
    } else {
      message("sampling was interrupted: the ", n,
              " draws per chain made so far are in stashed_samples()")
    }
  }
  status
}

# Free-state starting points, one row per chain: from initials(), or draws
# of an svi() fit's guide.
initial_free_state <- function(model, initial_values, chains, options, env, unit = "chain") {
  if (inherits(initial_values, "lockstep_svi")) return(guide_starts(model, initial_values, chains, options))
  if (inherits(initial_values, "initials")) {
    if (length(initial_values) > 0 && chains > 1) {
      message("only one set of initial values was provided, and was used for all ", unit, "s")
    }
    initial_values <- rep(list(initial_values), chains)
  } else if (!is.list(initial_values) ||
             !all(vapply(initial_values, inherits, logical(1), "initials"))) {
    stop("`initial_values` must be an initials object created with initials(), a list of ",
         "them, one per chain, or an svi() fit", call. = FALSE)
  }
  if (length(initial_values) != chains) {
    # (svi()'s guide has one; opt() has `starts`)
    stop("`initial_values` has ", length(initial_values), " sets of initial values, but ",
         if (unit == "guide") "the guide takes one" else
           paste0("there ", if (chains == 1) "is " else "are ", chains, " ", unit,
                  if (chains == 1) "" else "s"),
         call. = FALSE)
  }
  D <- model$n_free
  init <- matrix(0, chains, D)
  engine <- model_engine(model)
  for (chain in seq_len(chains)) {
    given <- initials_to_free(model, initial_values[[chain]], env)
    for (attempt in 1:50) {
      x <- stats::runif(D, -2, 2)
      x[given$index] <- given$value
      x <- same_on_every_rank(x, options)
      lp <- ls_engine_log_density(engine, matrix(x, nrow = 1), FALSE, options)$log_density
      if (is.finite(lp)) break
      if (length(given$index) == D || attempt == 50) {
        culprit <- nonfinite_initials(engine, x, given, options)
        stop("could not find initial values with a finite log density for ", unit, " ", chain,
             if (!is.null(culprit)) paste0(": the log density is not finite at the initial ",
                                           "values given for `", culprit, "`")
             else if (length(given$index)) "; check the values given in `initial_values`"
             else paste0(" in 50 random starts (free values in (-2, 2)): the model may have ",
                         "no finite density anywhere (a parameter outside its distribution's ",
                         "range, such as a negative rate); give `initial_values` where it is ",
                         "finite"),
             call. = FALSE)
      }
    }
    init[chain, ] <- x
  }
  init
}

# The first variable named in initial values whose values alone make the log
# density at x not finite: with its values drawn at random instead (a few
# tries), the log density is finite. NULL when there is none such.
nonfinite_initials <- function(engine, x, given, options) {
  for (name in names(given$by_name)) {
    index <- given$by_name[[name]]
    for (attempt in 1:10) {
      y <- x
      y[index] <- stats::runif(length(index), -2, 2)
      y <- same_on_every_rank(y, options)
      lp <- ls_engine_log_density(engine, matrix(y, nrow = 1), FALSE, options)$log_density
      if (is.finite(lp)) return(name)
    }
  }
  NULL
}

# Positions and free-scale values of the variables named in an initials object;
# names are looked up as greta arrays in the caller's environment, as greta does.
# A constrained variable (or a joint() variable, or a wishart() or
# lkj_correlation() matrix) is not itself a variable of the model: its value is
# first mapped to the values of the variables it is built on (initial_pieces()).
initials_to_free <- function(model, values, env) {
  index <- integer()
  value <- numeric()
  by_name <- list()  # each name's positions
  for (name in names(values)) {
    ga <- get0(name, envir = env)
    if (!is.greta_array(ga)) {
      stop("initial values were given for `", name, "`, which is not a greta array",
           call. = FALSE)
    }
    for (piece in initial_pieces(ga, values[[name]], name)) {
      info <- model$variables[[as.character(piece$node$id)]]
      if (is.null(info)) {
        stop("initial values were given for `", name, "`, which is not a variable of this model",
             call. = FALSE)
      }
      v <- piece$value
      if (length(v) == 1) v <- rep(v, info$size)
      if (length(v) != info$size) {
        stop("the initial values for `", name, "` have ", length(v), " elements, but `", name,
             "` has ", info$size, call. = FALSE)
      }
      if (identical(piece$node, get_node(ga))) {
        check_value_dim(v, info$dim, paste0("the initial values for `", name, "` have"), name)
      }
      check_initial_support(v, info$lower, info$upper, name)
      index <- c(index, info$offset + seq_len(info$size))
      by_name[[name]] <- c(by_name[[name]], info$offset + seq_len(info$size))
      value <- c(value, to_free(as.numeric(v), info$lower, info$upper))
    }
  }
  list(index = index, value = value, by_name = by_name)
}

# A variable's initial values must lie strictly inside its bounds, as greta
# requires: a value on a bound has no value on the free scale (log(0) or
# logit(1)), so it is refused, not moved inside. The message names the first
# value outside, its position and the bound it breaks.
check_initial_support <- function(v, lower, upper, name) {
  lower <- rep_len(lower, length(v))
  upper <- rep_len(upper, length(v))
  bad <- which(v <= lower | v >= upper)
  if (length(bad) == 0L) return(invisible())
  i <- bad[1]
  why <- if (v[i] <= lower[i]) paste("not above its lower bound", format(lower[i])) else
    paste("not below its upper bound", format(upper[i]))
  stop("some initial values for `", name, "` are outside the range of values it can take: ",
       "element ", i, " is ", format(v[i]), ", ", why,
       if (length(bad) > 1L) paste0(" (", length(bad), " values are outside)"),
       "; initial values must lie strictly inside a variable's bounds", call. = FALSE)
}

# The variables behind greta array `ga` and their values (on each variable's
# own scale), given `v`, the value of `ga`: list(list(node, value), ...). A
# plain variable is itself; a greta array whose node has `initial_values` (a
# function of the value as an array of ga's dimensions and the name, set by
# constrained_array() and joint_prior()) is mapped by it, after its shape is
# checked, since a joint constraint cannot take one number for every element;
# chol2symm() of such a factor (a wishart() or lkj_correlation() variable)
# goes through its Cholesky factor.
initial_pieces <- function(ga, v, name) {
  node <- get_node(ga)
  factor <- node$cholesky_factor
  if (is.null(node$initial_values) && !is.null(factor$initial_values)) {
    v <- check_initial_shape(v, ga, name)
    if (max(abs(v - t(v))) > 1e-8 * max(1, abs(v))) {
      stop("the initial values for `", name, "` must be a symmetric matrix", call. = FALSE)
    }
    U <- tryCatch(chol(v), error = function(e) NULL)
    if (is.null(U)) {
      stop("the initial values for `", name, "` must be a positive definite matrix",
           call. = FALSE)
    }
    return(factor$initial_values(U, name))
  }
  if (is.null(node$initial_values)) return(list(list(node = node, value = v)))
  node$initial_values(check_initial_shape(v, ga, name), name)
}

# `v` as an array of greta array ga's dimensions: all its elements, and its own
# dimensions (if it has any) those of ga.
check_initial_shape <- function(v, ga, name) {
  d <- dim(ga)
  if (length(v) != prod(d) || (!is.null(dim(v)) && !identical(as.integer(dim(v)), d))) {
    shape <- if (is.null(dim(v))) paste(length(v), "elements") else
      paste("dimensions", paste(dim(v), collapse = " x "))
    stop("the initial values for `", name, "` have ", shape, ", but `", name,
         "` has dimensions ", paste(d, collapse = " x "), call. = FALSE)
  }
  array(as.numeric(v), d)
}

#' @rdname mcmc
#' @param ... named numeric values: initial values of some or all of the
#'   variables in the model, on their own (constrained) scale. Constrained
#'   variables take values on their constrained scale too, with all their
#'   elements: a [simplex_variable()] a simplex (positive, summing to 1 along
#'   its last dimension), an [ordered_variable()] values strictly increasing
#'   along its last dimension, a [cholesky_variable()] an upper-triangular
#'   factor with a positive diagonal (with `correlation = TRUE`, with columns
#'   of unit length), a [wishart()] or [lkj_correlation()] variable a
#'   symmetric positive definite matrix (a correlation matrix for
#'   [lkj_correlation()]), and a [joint()] variable values in each column's
#'   support. They are mapped to the free scale by the inverse of the
#'   variable's transform, so that sampling starts at exactly that value. As
#'   in greta, a value must lie strictly inside its variable's bounds: a
#'   value on a bound (`0` for `variable(lower = 0)`) has no value on the free
#'   scale and is refused with an error that names it, rather than moved
#'   inside
#' @export
initials <- function(...) {
  values <- list(...)
  if (length(values) > 0 && (is.null(names(values)) || any(names(values) == ""))) {
    stop("all initial values must be named, e.g. initials(mu = 0)", call. = FALSE)
  }
  for (name in names(values)) {
    v <- values[[name]]
    if (!is.numeric(v) || anyNA(v) || any(!is.finite(v))) {
      stop("the initial values for `", name, "` must be finite numbers", call. = FALSE)
    }
  }
  class(values) <- c("initials", "list")
  values
}

#' @export
print.initials <- function(x, ...) {
  if (length(x) == 0) {
    cat("an empty greta initials object\n")
  } else {
    cat("a greta initials object with values:\n\n")
    print(unclass(x))
  }
  invisible(x)
}
