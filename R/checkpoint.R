# Checkpoints: a run that writes what it has drawn, and everything needed to
# go on, to a directory as it goes, so that a run killed by a batch system's
# time limit, the OOM killer or a crash resumes exactly (resume()).
#
# A checkpoint directory holds
#   start.rds        written once: the run's settings, the model's identity,
#                    how its sampler was made (kind, settings, seeds, initial
#                    values) and, for extra_samples(), the draws it continues
#   draws_NNNNNN.rds the draws of each stretch between two checkpoints (plain
#                    R objects: readRDS() reads them without lockstep)
#   state_0.rds, state_1.rds
#                    the checkpoints' states, alternately (checkpoint k in
#                    state_<k mod 2>.rds): where the run is, the sampler's
#                    state (ls_sampler_state()), the draws files that belong
#                    to it with their checksums; the newer is resumed
# Across MPI processes each rank writes its own files, rank r's named
# rank<r>_start.rds and so on (rank 0's as above): its part of the sampler's
# state (its groups' coordinates) and what it traced. The ranks write each
# checkpoint at the same iteration; a resume goes on from the newest one that
# every rank has written, which is why each rank keeps two.
# Each file is written to a temporary name and renamed (atomic on one file
# system), so a kill during a write leaves the earlier files whole; a draws
# file is written before the state that names it. The state records the
# checksum of each file's contents (ls_checksum()) and its length, and holds
# its own, checked on reading, so a truncated or damaged file is refused,
# never read as draws.

checkpoint_format <- 1L

# The checkpoint arguments of mcmc() and extra_samples(), checked: NULL
# without a checkpoint, else list(path, every), every NULL (automatic) or a
# number of iterations.
check_checkpoint <- function(checkpoint, checkpoint_every, options) {
  if (is.null(checkpoint)) {
    if (!is.null(checkpoint_every)) {
      stop("`checkpoint_every` needs `checkpoint`, the directory to write to", call. = FALSE)
    }
    return(NULL)
  }
  if (!is.character(checkpoint) || length(checkpoint) != 1 || is.na(checkpoint) ||
      !nzchar(checkpoint)) {
    stop("`checkpoint` must be the path of a directory to write the run's checkpoints to, ",
         "e.g. \"fit.lockstep\"", call. = FALSE)
  }
  if (!is.null(checkpoint_every)) checkpoint_every <- check_count(checkpoint_every,
                                                                  "checkpoint_every", 1)
  # (across MPI processes every rank sees the same directory: rank 0 says
  # whether it is fit to write to, and every rank gets its answer)
  holds_files <- dir.exists(checkpoint) &&
    length(list.files(checkpoint, all.files = TRUE, no.. = TRUE)) > 0
  holds_files <- as.logical(same_on_every_rank(holds_files, options))
  if (holds_files) {
    stop("`checkpoint` (\"", checkpoint, "\") already holds files: resume that run with ",
         "resume(\"", checkpoint, "\", model), or give a new directory (or delete this one: ",
         "unlink(\"", checkpoint, "\", recursive = TRUE))", call. = FALSE)
  }
  if (file.exists(checkpoint) && !dir.exists(checkpoint)) {
    stop("`checkpoint` (\"", checkpoint, "\") is a file: give the path of a directory",
         call. = FALSE)
  }
  list(path = checkpoint, every = checkpoint_every)
}

# What identifies a model to its checkpoints: its free parameters, the
# names and shapes of what it traces, a checksum of its graph (the IR
# without the data's values) and one of the data's values.
model_identity <- function(model) {
  nodes <- model$ir$nodes
  values <- lapply(nodes, `[[`, "values")
  graph <- lapply(nodes, function(n) {
    n$values <- NULL
    n
  })
  list(n_free = model$n_free,
       traced = vapply(model$traced, function(t) paste0(t$name, "[", paste(t$dim, collapse = ","),
                                                        "]"), ""),
       graph = ls_checksum(list(graph, model$ir[setdiff(names(model$ir), "nodes")])),
       data = ls_checksum(values))
}

# Refuses `model` when it is not the one `identity` (model_identity()) was
# taken of, saying what differs.
check_model_identity <- function(identity, model, path) {
  mine <- model_identity(model)
  what <- if (!identical(identity$n_free, mine$n_free)) {
    sprintf("it has %s free parameters, this model %s", format(identity$n_free),
            format(mine$n_free))
  } else if (!identical(identity$traced, mine$traced)) {
    sprintf("it traces %s, this model %s", paste(identity$traced, collapse = ", "),
            paste(mine$traced, collapse = ", "))
  } else if (!identical(identity$graph, mine$graph)) {
    "its model's graph (the distributions and operations) differs from this one's"
  } else if (!identical(identity$data, mine$data)) {
    "its model's data differ from this one's (the same graph, other values)"
  }
  if (!is.null(what)) {
    stop("the checkpoint \"", path, "\" was written by another model: ", what, call. = FALSE)
  }
  invisible(NULL)
}

# Writes `x` to `file` atomically (a temporary file in the same directory,
# then a rename), as saveRDS() would (uncompressed, in this machine's byte
# order: written as it is serialised, with no copy in memory). Returns the
# checksum of its contents (ls_checksum()) and the file's length.
write_atomically <- function(x, file) {
  tmp <- file.path(dirname(file), paste0(".", basename(file), ".tmp"))
  con <- file(tmp, "wb")
  ok <- FALSE
  on.exit({
    if (!ok) {
      try(close(con), silent = TRUE)
      unlink(tmp)
    }
  })
  serialize(x, con, xdr = FALSE, version = 3)
  flush(con)
  close(con)
  if (!file.rename(tmp, file)) stop("could not write the checkpoint file ", file, call. = FALSE)
  ok <- TRUE
  list(checksum = ls_checksum(x), bytes = file.size(file))
}

# Reads a file written by write_atomically(), checking its length and its
# contents' checksum against `expected` (list(checksum, bytes)); `what`
# names it in the errors.
read_checked <- function(file, expected, what) {
  if (!file.exists(file)) stop(what, " is missing (", file, ")", call. = FALSE)
  size <- file.size(file)
  if (!identical(as.numeric(size), as.numeric(expected$bytes))) {
    stop(what, " (", file, ") is ", format(size), " bytes where ", format(expected$bytes),
         " were written: it is truncated or damaged", call. = FALSE)
  }
  x <- tryCatch(readRDS(file), error = function(e) NULL, warning = function(w) NULL)
  if (is.null(x) || !identical(ls_checksum(x), expected$checksum)) {
    stop(what, " (", file, ") does not match its checksum: it is damaged", call. = FALSE)
  }
  x
}

# A state file holds its own checksum: its object is list(checksum, state),
# the checksum that of the state's contents, so that whatever was cut from
# the file or changed in it, the state read back is refused.
write_state_file <- function(state, file) {
  write_atomically(list(lockstep_checkpoint = checkpoint_format, checksum = ls_checksum(state),
                        state = state), file)
}

read_state_file <- function(file, path) {
  outer <- tryCatch(readRDS(file), error = function(e) NULL, warning = function(w) NULL)
  if (!is.list(outer) || is.null(outer$lockstep_checkpoint) || !is.list(outer$state) ||
      !identical(ls_checksum(outer$state), outer$checksum)) {
    stop("the checkpoint state \"", file, "\" is truncated or damaged (its checksum does not ",
         "match): it cannot be resumed", call. = FALSE)
  }
  if (!identical(outer$lockstep_checkpoint, checkpoint_format)) {
    stop("the checkpoint \"", path, "\" is of format ", outer$lockstep_checkpoint,
         "; this lockstep reads format ", checkpoint_format, call. = FALSE)
  }
  outer$state
}

# A run's checkpoint writer: creates the directory and writes this rank's
# start file. `start`: what resume() needs that never changes (see the top
# of this file).
checkpoint_open <- function(spec, start, options) {
  rank <- if (isTRUE(options$mpi)) mpi_rank() else 0L
  if (rank == 0) dir.create(spec$path, recursive = TRUE, showWarnings = FALSE)
  if (isTRUE(options$mpi)) ls_mpi_same(1)  # (the others wait for rank 0's directory)
  if (!dir.exists(spec$path)) {
    stop("could not create the checkpoint directory \"", spec$path, "\"", call. = FALSE)
  }
  ck <- checkpoint_writer(spec$path, spec$every, options, rank_prefix(rank),
                          if (isTRUE(options$mpi)) mpi_size() else 1L)
  start$ranks <- ck$ranks
  ck$start <- write_atomically(start, checkpoint_file(ck, "start.rds"))
  ck
}

# A checkpoint writer (an environment, updated as it writes): where it
# writes, how often, this rank's file prefix and the ranks; the start file
# and draws files written so far (`files`), the checkpoints' count
# (`number`), how many of the run's kept chunks are written (`written`:
# kept_counts()), and when the last write ended and how long it took.
checkpoint_writer <- function(path, every, options, prefix, ranks, start = NULL, files = NULL,
                              number = 0L) {
  ck <- new.env(parent = emptyenv())
  ck$path <- path
  ck$every <- every
  ck$options <- options
  ck$prefix <- prefix
  ck$ranks <- ranks
  ck$start <- start
  ck$files <- if (is.null(files)) {
    data.frame(file = character(0), checksum = character(0), bytes = numeric(0),
               stringsAsFactors = FALSE)
  } else {
    files
  }
  ck$number <- number
  ck$written <- c(values = 0L, chunks = 0L, diagnostics = 0L, warmup_diagnostics = 0L)
  ck$last_write <- proc.time()[["elapsed"]]
  ck$write_seconds <- 0
  ck
}

# How many chunks of each kind a run's kept_env holds.
kept_counts <- function(kept_env) {
  c(values = length(kept_env$values), chunks = length(kept_env$chunks),
    diagnostics = length(kept_env$diagnostics),
    warmup_diagnostics = length(kept_env$warmup_diagnostics))
}

# The prefix of rank r's files in a checkpoint directory, and the path of
# one of this writer's.
rank_prefix <- function(rank) if (rank == 0) "" else paste0("rank", rank, "_")
checkpoint_file <- function(ck, name) file.path(ck$path, paste0(ck$prefix, name))

# The most iterations the next chunk may run (a checkpoint every `every`
# iterations falls at a chunk's end), `position` iterations into the run.
checkpoint_room <- function(ck, position) {
  if (is.null(ck) || is.null(ck$every)) return(.Machine$integer.max)
  ck$every - position %% ck$every
}

# Whether a checkpoint is due after a chunk that ended `position` iterations
# into the run. Every `every` iterations; automatically, once the run has
# gone on for 100 times as long as the last checkpoint took to write (so that
# writing costs at most 1% of the run) and at least 30 seconds: rank 0's
# clock decides for every rank. (50 times measured 2.0% on the seed model at
# N = 10^6, at the issue's limit: bench/RESULTS.md.)
checkpoint_due <- function(ck, position) {
  if (is.null(ck)) return(FALSE)
  if (!is.null(ck$every)) return(position %% ck$every == 0)
  since <- proc.time()[["elapsed"]] - ck$last_write
  as.logical(same_on_every_rank(since >= max(30, 100 * ck$write_seconds), ck$options))
}

# Writes the next checkpoint's state (this rank's), `state` a list of its
# parts: into state_<k mod 2>.rds, with the checkpoint's number k, the
# ranks, and where its start and draws files are.
write_checkpoint_state <- function(ck, state) {
  ck$number <- ck$number + 1L
  state$number <- ck$number
  state$ranks <- ck$ranks
  state$start <- ck$start
  state$files <- ck$files
  write_state_file(state, checkpoint_file(ck, sprintf("state_%d.rds", ck$number %% 2L)))
}

# Writes a checkpoint: the draws kept since the last one, then the state.
# `where`: list(phase, done, status).
checkpoint_write <- function(ck, handle, kept_env, where) {
  started <- proc.time()[["elapsed"]]
  n <- kept_counts(kept_env)
  if (any(n > ck$written)) {
    new_part <- function(name) {
      part <- kept_env[[name]]
      if (n[[name]] > ck$written[[name]]) bind_chunks(part[(ck$written[[name]] + 1L):n[[name]]])
    }
    draws <- list(values = new_part("values"), free = new_part("chunks"),
                  diagnostics = new_part("diagnostics"),
                  warmup_diagnostics = new_part("warmup_diagnostics"))
    name <- sprintf("%sdraws_%06d.rds", ck$prefix, nrow(ck$files) + 1L)
    written <- write_atomically(draws, file.path(ck$path, name))
    ck$files <- rbind(ck$files, data.frame(file = name, checksum = written$checksum,
                                           bytes = written$bytes, stringsAsFactors = FALSE))
    ck$written <- n
  }
  write_checkpoint_state(ck, list(
    phase = where$phase, done = where$done, status = where$status,
    sampler = ls_sampler_state(handle),
    kept = list(epsilon = kept_env$epsilon, diag_sd = kept_env$diag_sd,
                metric_factor = kept_env$metric_factor, rescues = kept_env$rescues,
                last_free = kept_env$last_free, traced_here = kept_env$traced_here)))
  ck$last_write <- proc.time()[["elapsed"]]
  ck$write_seconds <- ck$last_write - started
  invisible(NULL)
}

# This rank's checkpoint states in `path` (state_0.rds, state_1.rds, with
# its prefix), each checked: a list of those present.
checkpoint_states <- function(path, prefix) {
  files <- file.path(path, paste0(prefix, c("state_0.rds", "state_1.rds")))
  files <- files[file.exists(files)]
  lapply(files, read_state_file, path = path)
}

# The newest checkpoint state in `path` (of rank 0): for tests and for
# resume() to know whether the run went across MPI processes.
latest_checkpoint_state <- function(path) {
  states <- checkpoint_states(path, "")
  if (!length(states)) return(NULL)
  states[[which.max(vapply(states, function(s) s$number, numeric(1)))]]
}

# Everything in a checkpoint directory, checked: list(start, state, draws),
# draws a list of each draws file's contents in order. Across MPI processes
# (the run's ranks, under mpirun again), this rank's files, at the newest
# checkpoint every rank has written (collective).
read_checkpoint <- function(path) {
  if (!is.character(path) || length(path) != 1 || is.na(path)) {
    stop("`checkpoint` must be the path of a checkpoint directory written by mcmc(..., ",
         "checkpoint = )", call. = FALSE)
  }
  if (!dir.exists(path)) stop("there is no checkpoint directory \"", path, "\"", call. = FALSE)
  newest <- latest_checkpoint_state(path)
  if (is.null(newest)) {
    stop("\"", path, "\" holds no checkpoint state (state_0.rds or state_1.rds): it is not a ",
         "lockstep checkpoint, or its run was killed before the first checkpoint", call. = FALSE)
  }
  ranks <- if (is.null(newest$ranks)) 1L else newest$ranks
  states <- checkpoint_states(path, "")
  prefix <- ""
  if (ranks > 1) {
    if (!mpi_available() || mpi_size() != ranks) {
      stop("the checkpoint \"", path, "\" was written by ", ranks, " MPI processes: resume it ",
           "under mpirun with as many (mpirun -np ", ranks, " Rscript ...)", call. = FALSE)
    }
    prefix <- rank_prefix(mpi_rank())
    states <- checkpoint_states(path, prefix)
  }
  numbers <- vapply(states, function(s) s$number, numeric(1))
  mine <- if (length(numbers)) max(numbers) else 0
  common <- if (ranks > 1) ls_mpi_min(mine) else mine
  if (!common %in% numbers) {
    stop("the checkpoint \"", path, "\" has no state of checkpoint ", common, " for this rank",
         if (ranks > 1) sprintf(" (rank %d)", mpi_rank()), ": it cannot be resumed",
         call. = FALSE)
  }
  state <- states[[match(common, numbers)]]
  start <- read_checked(file.path(path, paste0(prefix, "start.rds")), state$start,
                        "the checkpoint's start file")
  draws <- lapply(seq_len(nrow(state$files)), function(k) {
    read_checked(file.path(path, state$files$file[k]), state$files[k, ],
                 paste0("the checkpoint's draws file ", state$files$file[k]))
  })
  list(start = start, state = state, draws = draws, prefix = prefix)
}

#' Resume a run from its checkpoint
#'
#' `resume()` goes on with a run of [mcmc()], [extra_samples()] or [svi()]
#' that wrote checkpoints (their `checkpoint` argument) from its last
#' checkpoint, and returns what the run would have returned had it not been
#' stopped: with the same seed and threads, the draws (or the fit) are
#' identical to those of the run that was never interrupted, warmup
#' included. A run killed by a batch
#' system's time limit, the out-of-memory killer, a crashed R session or
#' `kill -9` thus loses at most the iterations since its last checkpoint.
#' The resumed run goes on writing checkpoints to the same directory; a
#' checkpoint of a run that had finished returns its draws at once.
#'
#' @param checkpoint the checkpoint directory given to [mcmc()] or
#'   [extra_samples()]
#' @param model the run's `greta_model`, built again as it was (the same
#'   greta arrays and data): a checkpoint written by another model (other
#'   free parameters, traced arrays, graph or data) is refused with a message
#'   saying what differs
#' @param verbose whether to show progress bars
#' @param pb_update how many iterations between progress bar updates, at
#'   most: by default 50 for [mcmc()] and 100 for [svi()], their defaults
#' @details A checkpoint directory holds `start.rds` (the run's settings,
#'   written once), `state_0.rds` and `state_1.rds` (where the run is and the
#'   sampler's state: the chains' positions and gradients, step sizes,
#'   metric, warmup's adaptation, the random streams; written alternately at
#'   each checkpoint, the newer resumed) and one
#'   `draws_NNNNNN.rds` per checkpoint with the draws made since the one
#'   before: plain R objects, which `readRDS()` reads without lockstep (a
#'   list of `values`, the traced values, a row per chain and iteration,
#'   iteration-major; `diagnostics`, the sampler's diagnostics in the same
#'   rows; `free`, the raw draws where the run keeps them; and
#'   `warmup_diagnostics`). Each file is written under a temporary name and
#'   renamed, so a kill while it is written leaves the previous checkpoint
#'   whole, and each carries a checksum that `resume()` checks: a truncated
#'   or damaged file is refused with a message. The run is resumed with the
#'   compute options it was written with (its threads), and needs the same
#'   lockstep. A checkpoint of [svi()] holds `start.rds` and its states
#'   alone (its losses are in the state), and its resumed fit draws the
#'   guide's `draws` from R's generator as it was when the fit started, as
#'   the uninterrupted fit did.
#' @return a `greta_mcmc_list`, as [mcmc()] returns, or for a checkpoint of
#'   [svi()] a `lockstep_svi` fit
#' @seealso [mcmc()]'s `checkpoint` and `checkpoint_every`
#' @examples
#' mu <- normal(0, 1)
#' m <- model(mu)
#' path <- file.path(tempdir(), "example.lockstep")
#' draws <- mcmc(m, n_samples = 100, warmup = 100, chains = 2, verbose = FALSE,
#'               checkpoint = path, checkpoint_every = 50)
#' # after a crash (here: the run finished), the same model and directory
#' again <- resume(path, m, verbose = FALSE)
#' identical(as.matrix(again), as.matrix(draws))
#' unlink(path, recursive = TRUE)
#' @export
resume <- function(checkpoint, model, verbose = TRUE, pb_update = NULL) {
  ck <- read_checkpoint(checkpoint)
  if (!inherits(model, "greta_model")) {
    stop("`model` must be the greta_model the checkpoint's run sampled, built again with ",
         "model()", call. = FALSE)
  }
  if (!is.logical(verbose) || length(verbose) != 1 || is.na(verbose)) {
    stop("`verbose` must be TRUE or FALSE", call. = FALSE)
  }
  if (!is.null(pb_update)) pb_update <- check_count(pb_update, "pb_update", 1)
  start <- ck$start
  state <- ck$state
  check_model_identity(start$identity, model, checkpoint)
  if (!identical(start$lockstep_version, as.character(utils::packageVersion("lockstep")))) {
    warning("the checkpoint \"", checkpoint, "\" was written by lockstep ",
            start$lockstep_version, ", this is ", utils::packageVersion("lockstep"),
            ": its draws may differ from the run that was not interrupted", call. = FALSE)
  }
  writer <- checkpoint_resumed(checkpoint, start, state, ck$prefix)
  if (identical(start$kind, "svi")) {
    return(resume_svi(start, state, model, verbose, if (is.null(pb_update)) 100L else pb_update,
                      writer))
  }
  if (is.null(pb_update)) pb_update <- 50L
  options <- check_compute_options(start$options)
  made <- start$construction
  handle <- ls_sampler_new(model_engine(model), made$init, made$name, made$parameters,
                           made$seeds[1], made$seeds[2], options)
  ls_sampler_restore(handle, state$sampler)
  run <- list(model = model, handle = handle, cursor = sampler_cursor(), sampler = start$sampler,
              chains = start$chains, thin = start$thin, warmup = start$warmup,
              options = options, keep_raw = start$keep_raw,
              construction = made[c("name", "parameters", "seeds")])
  run$cursor$bad <- sum(state$sampler$bad)
  # the draws so far, as the run held them when it wrote the checkpoint
  kept_env <- new.env(parent = emptyenv())
  kept_env$run <- run
  kept_env$previous <- start$previous
  part <- function(name) Filter(Negate(is.null), lapply(ck$draws, `[[`, name))
  kept_env$values <- part("values")
  kept_env$chunks <- part("free")
  kept_env$diagnostics <- part("diagnostics")
  kept_env$warmup_diagnostics <- part("warmup_diagnostics")
  for (name in names(state$kept)) kept_env[[name]] <- state$kept[[name]]
  lockstep_stash$last <- kept_env
  writer$written <- kept_counts(kept_env)
  if (!identical(state$status, "complete")) {
    kept_env$status <- run_phases(handle, start$warmup, start$n_samples, start$thin,
                                  start$chains, pb_update, verbose, kept_env,
                                  resume_at = state[c("phase", "done")], checkpoint = writer)
  } else {
    kept_env$status <- "complete"
  }
  end_run(run, kept_env, start$previous)
}

# What start.rds holds for a run (see the top of this file): `run` as
# mcmc() and extra_samples() make it, `init` the free state its sampler was
# made from (a row per chain), `n_samples` and `warmup` its iterations.
checkpoint_start <- function(run, init, warmup, n_samples, every, previous = NULL) {
  list(kind = "mcmc", lockstep_version = as.character(utils::packageVersion("lockstep")),
       identity = model_identity(run$model),
       construction = c(run$construction, list(init = init)),
       sampler = run$sampler, chains = run$chains, thin = run$thin, warmup = warmup,
       n_samples = n_samples, keep_raw = run$keep_raw, options = run$options,
       checkpoint_every = every, previous = previous)
}

# The writer of a resumed run, going on in the checkpoint's directory from
# its checkpoint `state` (this rank's, whose files have `prefix`).
checkpoint_resumed <- function(path, start, state, prefix) {
  checkpoint_writer(path, start$checkpoint_every, start$options, prefix,
                    if (is.null(state$ranks)) 1L else state$ranks, start = state$start,
                    files = state$files, number = state$number)
}

# A variational fit's checkpoint: its state (ls_svi_state()) and the loop's
# (svi_iterations(): the losses, convergence's windows); `finished`: the
# iterations are over.
svi_checkpoint_write <- function(ck, handle, loop, finished) {
  started <- proc.time()[["elapsed"]]
  write_checkpoint_state(ck, list(status = if (finished) "complete" else "running",
                                  svi = ls_svi_state(handle), loop = loop))
  ck$last_write <- proc.time()[["elapsed"]]
  ck$write_seconds <- ck$last_write - started
  invisible(NULL)
}

# resume() of an svi() fit: the fit made again from its settings, its state
# restored, its iterations gone on from the checkpoint's, and R's generator
# where the uninterrupted fit's was after its iterations (its guide's draws
# use it).
resume_svi <- function(start, state, model, verbose, pb_update, writer) {
  options <- check_compute_options(start$options)
  settings <- start$settings
  handle <- svi_handle(model_engine(model), settings, options)
  ls_svi_set_state(handle, state$svi)
  if (!identical(as.numeric(state$svi$svi_t), as.numeric(length(state$loop$loss)))) {
    stop("the checkpoint's fit and its losses disagree (", state$svi$svi_t, " iterations against ",
         length(state$loop$loss), "): it is damaged", call. = FALSE)
  }
  if (!is.null(start$random_seed)) assign(".Random.seed", start$random_seed, envir = globalenv())
  run <- if (identical(state$status, "complete")) {
    c(state$loop, list(interrupted = FALSE))
  } else {
    svi_iterations(handle, settings$n_iterations, pb_update, settings$tolerance,
                   verbose && mpi_rank() == 0, checkpoint = writer, resume_at = state$loop)
  }
  svi_fit(model, handle, run[c("loss", "converged", "diverged", "interrupted")], settings,
          options)
}
