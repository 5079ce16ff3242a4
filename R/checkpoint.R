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
#   state.rds        rewritten at each checkpoint: where the run is, the
#                    sampler's state (ls_sampler_state()), the draws files
#                    that belong to it with their checksums
# Each file is written to a temporary name and renamed (atomic on one file
# system), so a kill during a write leaves the previous checkpoint whole; a
# draws file is written before the state that names it. Every file carries a
# checksum (ls_checksum()) of its bytes, checked on reading, so a truncated
# or damaged file is refused, never read as draws.

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
  if (isTRUE(options$mpi)) {
    stop("checkpoints are not yet written across MPI processes: run without `checkpoint`",
         call. = FALSE)
  }
  if (dir.exists(checkpoint) && length(list.files(checkpoint, all.files = TRUE, no.. = TRUE))) {
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
  hash <- function(x) ls_checksum(serialize(x, NULL, xdr = TRUE, version = 3))
  list(n_free = model$n_free,
       traced = vapply(model$traced, function(t) paste0(t$name, "[", paste(t$dim, collapse = ","),
                                                        "]"), ""),
       graph = hash(list(graph, model$ir[setdiff(names(model$ir), "nodes")])),
       data = hash(values))
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
# then a rename), as serialize()'s bytes, which readRDS() reads. Returns the
# bytes' checksum and length.
write_atomically <- function(x, file) {
  bytes <- serialize(x, NULL, xdr = TRUE, version = 3)
  tmp <- file.path(dirname(file), paste0(".", basename(file), ".tmp"))
  con <- file(tmp, "wb")
  ok <- FALSE
  on.exit(if (!ok) unlink(tmp))
  writeBin(bytes, con)
  flush(con)
  close(con)
  if (!file.rename(tmp, file)) stop("could not write the checkpoint file ", file, call. = FALSE)
  ok <- TRUE
  list(checksum = ls_checksum(bytes), bytes = length(bytes))
}

# Reads a file written by write_atomically(), checking its length and
# checksum against `expected` (list(checksum, bytes)); `what` names it in
# the errors.
read_checked <- function(file, expected, what) {
  if (!file.exists(file)) stop(what, " is missing (", file, ")", call. = FALSE)
  size <- file.size(file)
  if (!identical(as.numeric(size), as.numeric(expected$bytes))) {
    stop(what, " (", file, ") is ", format(size), " bytes where ", format(expected$bytes),
         " were written: it is truncated or damaged", call. = FALSE)
  }
  bytes <- readBin(file, "raw", size)
  if (!identical(ls_checksum(bytes), expected$checksum)) {
    stop(what, " (", file, ") does not match its checksum: it is damaged", call. = FALSE)
  }
  unserialize(bytes)
}

# The state file holds its own checksum: its object is list(checksum, bytes
# = the serialised state), so that readRDS() gives the raw state and the
# checksum of those bytes, whatever was cut from the file.
write_state_file <- function(state, file) {
  bytes <- serialize(state, NULL, xdr = TRUE, version = 3)
  write_atomically(list(lockstep_checkpoint = checkpoint_format, checksum = ls_checksum(bytes),
                        state = bytes), file)
}

read_state_file <- function(file, path) {
  if (!file.exists(file)) {
    stop("\"", path, "\" holds no checkpoint state (state.rds): it is not a lockstep ",
         "checkpoint, or its run was killed before the first checkpoint", call. = FALSE)
  }
  outer <- tryCatch(readRDS(file), error = function(e) NULL, warning = function(w) NULL)
  if (!is.list(outer) || is.null(outer$lockstep_checkpoint) || !is.raw(outer$state) ||
      !identical(ls_checksum(outer$state), outer$checksum)) {
    stop("the checkpoint state \"", file, "\" is truncated or damaged (its checksum does not ",
         "match): it cannot be resumed", call. = FALSE)
  }
  if (!identical(outer$lockstep_checkpoint, checkpoint_format)) {
    stop("the checkpoint \"", path, "\" is of format ", outer$lockstep_checkpoint,
         "; this lockstep reads format ", checkpoint_format, call. = FALSE)
  }
  unserialize(outer$state)
}

# A run's checkpoint writer: creates the directory and writes start.rds.
# `start`: what resume() needs that never changes (see start.rds above).
checkpoint_open <- function(spec, start) {
  dir.create(spec$path, recursive = TRUE, showWarnings = FALSE)
  if (!dir.exists(spec$path)) {
    stop("could not create the checkpoint directory \"", spec$path, "\"", call. = FALSE)
  }
  ck <- new.env(parent = emptyenv())
  ck$path <- spec$path
  ck$every <- spec$every
  ck$start <- write_atomically(start, file.path(spec$path, "start.rds"))
  ck$files <- data.frame(file = character(0), checksum = character(0), bytes = numeric(0),
                         stringsAsFactors = FALSE)
  ck$written <- c(values = 0L, chunks = 0L, diagnostics = 0L, warmup_diagnostics = 0L)
  ck$last_write <- proc.time()[["elapsed"]]
  ck$write_seconds <- 0
  ck
}

# The most iterations the next chunk may run (a checkpoint every `every`
# iterations falls at a chunk's end), `position` iterations into the run.
checkpoint_room <- function(ck, position) {
  if (is.null(ck) || is.null(ck$every)) return(.Machine$integer.max)
  ck$every - position %% ck$every
}

# Whether a checkpoint is due after a chunk that ended `position` iterations
# into the run. Every `every` iterations; automatically, once the run has
# gone on for 50 times as long as the last checkpoint took to write (so that
# writing costs at most 2% of the run) and at least 30 seconds.
checkpoint_due <- function(ck, position) {
  if (is.null(ck)) return(FALSE)
  if (!is.null(ck$every)) return(position %% ck$every == 0)
  since <- proc.time()[["elapsed"]] - ck$last_write
  since >= max(30, 50 * ck$write_seconds)
}

# Writes a checkpoint: the draws kept since the last one, then the state.
# `where`: list(phase, done, status).
checkpoint_write <- function(ck, handle, kept_env, where) {
  started <- proc.time()[["elapsed"]]
  n <- c(values = length(kept_env$values), chunks = length(kept_env$chunks),
         diagnostics = length(kept_env$diagnostics),
         warmup_diagnostics = length(kept_env$warmup_diagnostics))
  if (any(n > ck$written)) {
    new_part <- function(name) {
      part <- kept_env[[name]]
      if (n[[name]] > ck$written[[name]]) bind_chunks(part[(ck$written[[name]] + 1L):n[[name]]])
    }
    draws <- list(values = new_part("values"), free = new_part("chunks"),
                  diagnostics = new_part("diagnostics"),
                  warmup_diagnostics = new_part("warmup_diagnostics"))
    name <- sprintf("draws_%06d.rds", nrow(ck$files) + 1L)
    written <- write_atomically(draws, file.path(ck$path, name))
    ck$files <- rbind(ck$files, data.frame(file = name, checksum = written$checksum,
                                           bytes = written$bytes, stringsAsFactors = FALSE))
    ck$written <- n
  }
  state <- list(phase = where$phase, done = where$done, status = where$status,
                start = ck$start, files = ck$files,
                sampler = ls_sampler_state(handle),
                kept = list(epsilon = kept_env$epsilon, diag_sd = kept_env$diag_sd,
                            metric_factor = kept_env$metric_factor, rescues = kept_env$rescues,
                            last_free = kept_env$last_free, traced_here = kept_env$traced_here))
  write_state_file(state, file.path(ck$path, "state.rds"))
  ck$last_write <- proc.time()[["elapsed"]]
  ck$write_seconds <- ck$last_write - started
  invisible(NULL)
}

# Everything in a checkpoint directory, checked: list(start, state, draws),
# draws a list of each draws file's contents in order.
read_checkpoint <- function(path) {
  if (!is.character(path) || length(path) != 1 || is.na(path)) {
    stop("`checkpoint` must be the path of a checkpoint directory written by mcmc(..., ",
         "checkpoint = )", call. = FALSE)
  }
  if (!dir.exists(path)) stop("there is no checkpoint directory \"", path, "\"", call. = FALSE)
  state <- read_state_file(file.path(path, "state.rds"), path)
  start <- read_checked(file.path(path, "start.rds"), state$start,
                        "the checkpoint's start file")
  draws <- lapply(seq_len(nrow(state$files)), function(k) {
    read_checked(file.path(path, state$files$file[k]), state$files[k, ],
                 paste0("the checkpoint's draws file ", state$files$file[k]))
  })
  list(start = start, state = state, draws = draws)
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
#'   written once), `state.rds` (where the run is and the sampler's state:
#'   the chains' positions and gradients, step sizes, metric, warmup's
#'   adaptation, the random streams; rewritten at each checkpoint) and one
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
#'   lockstep. A checkpoint of [svi()] holds `start.rds` and `state.rds`
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
  writer <- checkpoint_resumed(checkpoint, start, state)
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
  writer$written <- c(values = length(kept_env$values), chunks = length(kept_env$chunks),
                      diagnostics = length(kept_env$diagnostics),
                      warmup_diagnostics = length(kept_env$warmup_diagnostics))
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

# The writer of a resumed run, going on in the checkpoint's directory.
checkpoint_resumed <- function(path, start, state) {
  writer <- new.env(parent = emptyenv())
  writer$path <- path
  writer$every <- start$checkpoint_every
  writer$start <- state$start
  writer$files <- state$files
  writer$written <- c(values = 0L, chunks = 0L, diagnostics = 0L, warmup_diagnostics = 0L)
  writer$last_write <- proc.time()[["elapsed"]]
  writer$write_seconds <- 0
  writer
}

# A variational fit's checkpoint: its state (ls_svi_state()) and the loop's
# (svi_iterations(): the losses, convergence's windows); `finished`: the
# iterations are over.
svi_checkpoint_write <- function(ck, handle, loop, finished) {
  started <- proc.time()[["elapsed"]]
  write_state_file(list(status = if (finished) "complete" else "running", start = ck$start,
                        files = ck$files, svi = ls_svi_state(handle), loop = loop),
                   file.path(ck$path, "state.rds"))
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
