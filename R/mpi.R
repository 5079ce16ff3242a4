# Running one model across processes with MPI: an SPMD script started by
# `mpirun -np P Rscript fit.R`, in which every process holds its own rows of
# the data (mpi_rows), and cpu_only(mpi = TRUE) sums the likelihood's partial
# log densities and gradients across them. Every process runs the same sampler
# on the same totals, so all of them hold the same draws.

#' Run a model across the processes of an MPI job
#'
#' With `compute_options = cpu_only(mpi = TRUE)`, the likelihood's rows are
#' split across the processes of an MPI job: each process (rank) builds the
#' same model from its own rows of the data, which it reads or receives itself,
#' and lockstep sums the partial log densities and gradients of the rows across
#' ranks after each rank has summed its threads and virtual devices. Priors are
#' computed on every rank and counted once. Every rank runs the same sampler on
#' the same totals (random numbers and initial values come from rank 0), so
#' every rank returns the same draws; the script usually saves them on rank 0
#' only. With `compute_options = gpu_only(mpi = TRUE)` each process runs on a
#' GPU of its own (see [gpu_only()]): processes that own their groups (below)
#' exchange their few numbers through MPI on the host, and the others sum
#' whole gradients through NCCL in GPU memory where every process has it.
#'
#' `mpi_available()` says whether this build of lockstep has MPI (configure
#' found `mpicxx`; `LOCKSTEP_MPI=no` builds without it). `mpi_rank()` and
#' `mpi_size()` start MPI if needed and give this process's rank (0 to
#' `mpi_size() - 1`) and the number of ranks. `mpi_rows(n)` gives this rank's
#' share of the rows `1:n`, a contiguous block, so that the blocks of all
#' ranks cover `1:n` once in order. For a hierarchical model, `mpi_rows(n,
#' groups = g)` shares out whole groups instead: `g` is the group of each row
#' (whole numbers from 1), each rank gets the rows of a contiguous range of
#' groups (`attr(rows, "groups")` says which), and the ranges are balanced by
#' their rows, so that no group's rows are split across ranks. `mpi_stats()` says what this process has
#' exchanged with the others since MPI started (or since the last `reset`):
#' the number of collective calls and the bytes of payload it contributed to
#' them (an all-reduce of `n` doubles counts `8 n`), for checking what a
#' gradient sends; `mpi_stats(draws = )` says what the run that made `draws`
#' sent, a gradient and an iteration (the seed model at 10^6 rows on 2 ranks:
#' about 1.4 KB a gradient of 4 chains, whatever the rows and groups).
#'
#' Every rank must make the same calls, in the same order, to functions that
#' run the model ([mcmc()], `model_log_density`): they are collective. A
#' likelihood that lockstep cannot split by rows (its data are not
#' row-aligned with the rows of its terms) is refused with an error, and so
#' are ranks whose models differ (other free parameters, distributions,
#' operations or traced arrays: an error on every rank at the model's first
#' collective call, not a hang or a wrong answer).
#'
#' @section A failing rank ends the job:
#' In a script (`Rscript`, not an interactive session) whose R error handler
#' is R's own (`getOption("error")` unset), an error on any rank once MPI has
#' started (the first of these functions or of a model's collective calls
#' starts it) ends every rank at once, rather than leaving the others waiting
#' in their next collective call until the job's time limit: after R prints
#' the error, that rank prints `lockstep: MPI rank r of P failed, ending every
#' rank: <the error>` and calls `MPI_Abort()`, and the job's exit status is
#' non-zero. This covers R's errors (`stop()`, bad data such as a missing
#' value) and the engine's (a C++ exception reaches R as an error). A rank
#' killed by a signal (`kill -9`, the out-of-memory killer) ends the job too:
#' OpenMPI's `mpirun` does that by default (keep it so). `tests/mpi/faults.sh`
#' runs each of these cases.
#'
#' @section Which parameters each rank holds:
#' A hierarchical model's group-level parameters (one value, or one row, per
#' group) can be *local*: reached by the likelihood only through the group of
#' each row (`alpha[g]`, `gamma[g, ]`, through elementwise operations with
#' global parameters, as in a non-centred `alpha <- z * sd_alpha`), with a
#' prior that treats the groups independently given global parameters.
#' When every rank's rows are whole groups, a contiguous range of them in rank
#' order (what `mpi_rows(n, groups = g)` gives), [mcmc()] with any sampler
#' ([nuts()], [hmc()], [chees()], [rwmh()], [slice()]) and a diagonal metric
#' shards those parameters, with [cpu_only()] and [gpu_only()] (where the
#' leapfrog samplers keep them in the rank's GPU memory): each
#' rank holds the global parameters and only its own groups' local ones (their
#' values, momenta, gradients and metric), and evaluates their priors. Per
#' gradient the ranks then exchange the log density and the global
#' parameters' gradient, and per leapfrog step a few numbers per chain (the
#' sampler's kinetic energy and U-turn sums): nothing that grows with the rows
#' or the groups. For a hierarchical logistic regression with random
#' intercepts and 20 random slopes for each of 10^5 groups (2.1 million
#' parameters) and 4 chains, that is 1.4 KB per gradient instead of 67 MB. Random draws are keyed by
#' each parameter's place in the whole model, so the draws are those of one
#' process, up to the order of sums.
#'
#' Rank 0 returns the draws of every traced variable, and the raw draws where
#' they are kept: for each kept draw that needs a local parameter, every rank
#' sends its own groups' values to rank 0 alone, so no other rank holds the
#' whole model's draws. The other ranks return the draws of the traced
#' variables that read no local parameter (those of `a`, `b` and `sd_g`
#' below: bitwise rank 0's), and no raw draws. Every rank keeps each chain's
#' last state whole, so [extra_samples()] goes on on every rank.
#'
#' Where the parameters are not local (the model has no groups, a group-level
#' parameter is also used whole), every rank holds every parameter and the
#' ranks sum whole gradients: the same results, more traffic. Where the rows
#' of a group are on more than one rank (rows split without `groups`), the
#' run stops with an error on every rank that names `mpi_rows(n, groups = )`.
#' [opt()] shards the same way with [bfgs()] (its dot products and largest
#' gradients summed and compared over the ranks) and the first-order
#' optimisers ([adam()], [gradient_descent()] and the like, which update each
#' parameter from its own gradient), and returns the whole optimum on every
#' rank; [nelder_mead()], whose simplex has a corner per parameter, holds
#' every parameter on every rank. [svi()] shards too: each rank fits its own
#' groups' guide parameters and the global ones (mean-field, low-rank and
#' point-mass guides; a full-rank guide holds every parameter on every rank), and every
#' rank returns the whole fit. A sampler with a dense metric (`nuts(metric =
#' "dense")`) shards too: its dense part covers the global parameters alone,
#' the same on every rank, and each rank's groups keep a diagonal metric
#' (see the `metric` argument of [nuts()]).
#'
#' @param n the number of rows to share out
#' @param groups `NULL`, or the group of each of the `n` rows: positive whole
#'   numbers, one per row (rows need not be sorted by group)
#' @param reset `TRUE` to start counting again after reading
#' @param draws `NULL`, or draws made by [mcmc()] or [extra_samples()] across
#'   processes: what that run exchanged
#' @return `mpi_available()`: `TRUE` or `FALSE`; `mpi_rank()`, `mpi_size()`:
#'   an integer; `mpi_rows()`: an integer vector of row numbers (increasing;
#'   with `groups`, its attribute `"groups"` the groups they belong to);
#'   `mpi_stats()`: a list of `calls` and `bytes`; with `draws`, that run's
#'   `calls` and `bytes` (this process's), its `gradients` (of all chains,
#'   warmup's and sampling's) and `iterations`, and `bytes_per_gradient` and
#'   `bytes_per_iteration`: what a run sends once (its start, the whole state
#'   at its end) is in the bytes, so a short run has more bytes a gradient
#'   than a long one
#' @examples
#' mpi_available()
#' # An SPMD script, run with `mpirun -np 4 Rscript fit.R`:
#' fit <- function() {
#'   n <- 1e6
#'   rows <- mpi_rows(n)                      # this rank's rows
#'   x <- rnorm(length(rows)); y <- rnorm(length(rows), 1 + 2 * x)  # or read them
#'   a <- normal(0, 5); b <- normal(0, 5); s <- normal(0, 2, truncation = c(0, Inf))
#'   distribution(y) <- normal(a + b * x, s)
#'   draws <- mcmc(model(a, b, s), compute_options = cpu_only(mpi = TRUE))
#'   if (mpi_rank() == 0) saveRDS(draws, "draws.rds")
#' }
#' # A hierarchical model: whole groups per rank, each rank holding only its
#' # groups' intercepts
#' fit_groups <- function(g, x, y) {  # g: each row's group, 1 to G
#'   rows <- mpi_rows(length(g), groups = g)
#'   G <- max(g)
#'   a <- normal(0, 5); b <- normal(0, 5); sd_g <- normal(0, 1, truncation = c(0, Inf))
#'   z <- normal(0, 1, dim = G)
#'   alpha <- z * sd_g
#'   distribution(y[rows]) <- normal(a + alpha[g[rows]] + b * x[rows], 1)
#'   # rank 0 returns the draws of alpha too; the other ranks, those of a, b, sd_g
#'   mcmc(model(a, b, sd_g, alpha), compute_options = cpu_only(mpi = TRUE))
#' }
#' @name mpi
#' @export
mpi_available <- function() ls_mpi_available()

#' @rdname mpi
#' @export
mpi_rank <- function() mpi_start()$rank

#' @rdname mpi
#' @export
mpi_size <- function() mpi_start()$size

#' @rdname mpi
#' @export
mpi_rows <- function(n, groups = NULL) {
  check_count(n, "n", minimum = 1)
  check_row_groups(groups, n)
  info <- mpi_start()
  rank_rows(n, info$rank, info$size, groups)
}

# The rows of rank `rank` of `size`: a contiguous block of 1:n; or, with
# `groups` (the group of each row), the rows of a contiguous range of whole
# groups. Group k goes to the rank whose block of rows (as without groups)
# holds the middle of group k's rows, counting rows group by group in group
# order: every rank's rows are within a group's rows of its even share.
rank_rows <- function(n, rank, size, groups = NULL) {
  if (is.null(groups)) {
    first <- floor(n * rank / size)
    last <- floor(n * (rank + 1) / size)
    return(if (last > first) seq.int(first + 1, last) else integer())
  }
  counts <- tabulate(groups)
  middle <- cumsum(counts) - counts / 2
  owner <- pmin(size - 1, floor(middle * size / n))
  mine <- which(owner == rank & counts > 0)
  rows <- which(groups %in% mine)
  attr(rows, "groups") <- mine
  rows
}

# `groups` of mpi_rows(): NULL, or a positive whole number for each of n rows.
check_row_groups <- function(groups, n) {
  if (is.null(groups)) return(invisible(NULL))
  if (!is.numeric(groups) || !is.null(dim(groups)) && length(dim(groups)) > 1 &&
        min(dim(groups)) > 1) {
    stop("`groups` must be a vector of group numbers, one per row", call. = FALSE)
  }
  if (length(groups) != n) {
    stop("`groups` must give the group of each of the ", n, " rows, but has ",
         length(groups), " values", call. = FALSE)
  }
  bad <- which(is.na(groups) | groups < 1 | groups != round(groups) | !is.finite(groups))
  if (length(bad) > 0) {
    stop("`groups` must be whole numbers from 1 (the group of each row), but row ", bad[1],
         " has ", format(groups[bad[1]]), call. = FALSE)
  }
  invisible(NULL)
}

#' @rdname mpi
#' @export
mpi_stats <- function(reset = FALSE, draws = NULL) {
  if (!is.logical(reset) || length(reset) != 1L || is.na(reset)) {
    stop("`reset` must be TRUE or FALSE", call. = FALSE)
  }
  if (!is.null(draws)) {
    if (!inherits(draws, "greta_mcmc_list")) {
      stop("`draws` of mpi_stats() must be the draws of mcmc() or extra_samples()", call. = FALSE)
    }
    exchanged <- attr(draws, "model_info")$mpi
    if (is.null(exchanged)) {
      stop("`draws` were not made across MPI processes (compute_options with mpi = TRUE)",
           call. = FALSE)
    }
    return(exchanged)
  }
  mpi_start()
  ls_mpi_stats(reset)
}

# This process's counts so far (calls, bytes) for a run across processes, else NULL.
mpi_counts <- function(options) {
  if (isTRUE(options$mpi)) unlist(ls_mpi_stats(FALSE)) else NULL
}

# What a run across processes exchanged, from its start (run$exchanged_before)
# to now: calls and bytes, the gradients of all chains its iterations took
# (warmup's and sampling's: the chains step together, so an iteration takes
# as many as its longest chain's leapfrog steps), its iterations, and bytes a
# gradient and an iteration. NULL for a run in one process.
run_exchange <- function(run, kept_env) {
  before <- run$exchanged_before
  if (is.null(before)) return(NULL)
  now <- unlist(ls_mpi_stats(FALSE))
  if (now[["bytes"]] < before[["bytes"]]) return(NULL)  # (mpi_stats(reset = TRUE) in between)
  steps <- function(d) {
    if (is.null(d) || !nrow(d) || is.null(d$n_leapfrog__)) return(c(0, 0))
    per_iteration <- matrix(d$n_leapfrog__, ncol = run$chains, byrow = TRUE)
    c(sum(apply(per_iteration, 1, max)), nrow(per_iteration))
  }
  counted <- steps(bind_chunks(kept_env$warmup_diagnostics)) + steps(bind_chunks(kept_env$diagnostics))
  calls <- now[["calls"]] - before[["calls"]]
  bytes <- now[["bytes"]] - before[["bytes"]]
  list(calls = calls, bytes = bytes, gradients = counted[1], iterations = counted[2],
       bytes_per_gradient = if (counted[1] > 0) bytes / counted[1] else NA_real_,
       bytes_per_iteration = if (counted[2] > 0) bytes / counted[2] else NA_real_)
}

mpi_state <- new.env(parent = emptyenv())

# Starts MPI once, and finalises it when R exits.
mpi_start <- function() {
  if (!is.null(mpi_state$info)) return(mpi_state$info)
  if (!ls_mpi_available()) {
    stop("this build of lockstep has no MPI: install OpenMPI (Debian: libopenmpi-dev) ",
         "and reinstall lockstep", call. = FALSE)
  }
  mpi_state$info <- ls_mpi_init()
  reg.finalizer(mpi_state, function(e) ls_mpi_finalize(), onexit = TRUE)
  # An error on one rank must end them all, not leave the others waiting in
  # their next collective call (an R script's error would otherwise finalise
  # MPI on its way out, which waits for the others): in a script whose
  # error handler is R's own, lockstep's ends the job (mpi_abort_on_error()).
  if (mpi_state$info$size > 1 && !interactive() && is.null(getOption("error"))) {
    options(error = mpi_abort_on_error)
  }
  mpi_state$info
}

# options(error =) of a script across MPI processes (mpi_start()): after R
# has printed the error, every rank ends at once (MPI_Abort()), this rank's
# stderr saying which it is and why, and the job's exit status is non-zero.
mpi_abort_on_error <- function() {
  message <- sub("\\s+$", "", geterrmessage())
  ls_mpi_abort(sub("^Error[^:]*: ", "", message))
}

# x as rank 0 has it, on every rank of a run across processes (random numbers
# drawn in R, such as seeds and initial values, must be the same everywhere).
same_on_every_rank <- function(x, options) {
  if (!isTRUE(options$mpi)) return(x)
  out <- ls_mpi_broadcast(as.numeric(x))
  attributes(out) <- attributes(x)
  out
}

# A run across processes needs the same model on every rank (each with its
# own rows): ranks that disagree would wait on each other forever, in
# collective calls of different sizes. A clear error on every rank instead.
# Beyond the free parameters, the models' shapes: the sequence of their
# operations, distributions and transforms and what they trace (not the
# data, whose rows are each rank's own), as a checksum.
check_ranks_agree <- function(model, options) {
  if (!isTRUE(options$mpi)) return(invisible(NULL))
  mine <- as.numeric(model$n_free)
  if (!ls_mpi_same(mine)) {
    root <- ls_mpi_broadcast(mine)
    stop(sprintf(paste0("the MPI ranks' models differ (rank 0's has %d free parameters, ",
                        "this rank's (%d) %d): every rank must build the same model from its ",
                        "own rows"), as.integer(root), mpi_rank(), as.integer(mine)),
         call. = FALSE)
  }
  if (!ls_mpi_same(model_shape_signature(model))) {
    stop(sprintf(paste0("the MPI ranks' models differ in their distributions, operations or ",
                        "traced arrays (this is rank %d): every rank must build the same model ",
                        "from its own rows"), mpi_rank()), call. = FALSE)
  }
  invisible(NULL)
}

# A model's shape as two numbers (a checksum of its nodes' operations,
# families and transforms, and its traced arrays' names), for
# check_ranks_agree().
model_shape_signature <- function(model) {
  shape <- list(lapply(model$ir$nodes, function(n) n[intersect(names(n), c("op", "family",
                                                                           "transform"))]),
                vapply(model$traced, `[[`, "", "name"))
  hex <- ls_checksum(shape)
  c(strtoi(substr(hex, 1, 7), 16L), strtoi(substr(hex, 8, 14), 16L))
}
