#' Which compute backends this build of lockstep has
#'
#' Reports the backends that lockstep can run models on: the CPU backend, which
#' is always there, and the CUDA backend, which exists when the package was
#' installed where `configure` found the CUDA toolkit's `nvcc`, and which runs
#' on the NVIDIA GPUs the CUDA driver makes visible.
#'
#' To build the CUDA backend, install the CUDA toolkit, put `nvcc` on the `PATH`
#' (or set `CUDA_HOME`) and reinstall lockstep; set the environment variable
#' `LOCKSTEP_CUDA=no` while installing to build the CPU backend only.
#'
#' @return An object of class `lockstep_backend_info`: a list with
#'   * `cuda_built`: `TRUE` when the CUDA backend was compiled in;
#'   * `cuda_runtime_version`: the CUDA runtime version it was built with, as
#'     a string such as `"13.0"`, or `NA` when it was not built;
#'   * `devices`: a data frame with a row per visible CUDA device and columns
#'     `id`, `name`, `compute_capability`, `memory_gb` (GiB) and
#'     `multiprocessors`; no rows when none is visible or CUDA was not built;
#'   * `nccl`: `TRUE` when several GPUs ([gpu_only()] with more than one
#'     device) sum their shares through NCCL: the build has NCCL's header and
#'     `libnccl.so.2` loads. Otherwise they sum through copies between devices.
#' @examples
#' info <- backend_info()
#' info
#' info$cuda_built
#' nrow(info$devices)
#' @export
backend_info <- function() {
  raw <- ls_backend_info()
  version <- raw$cuda_runtime_version
  version <- if (is.na(version) || version <= 0) {
    NA_character_
  } else {
    sprintf("%d.%d", version %/% 1000L, (version %% 1000L) %/% 10L)
  }
  structure(
    list(
      cuda_built = raw$cuda_built,
      cuda_runtime_version = version,
      devices = raw$devices,
      nccl = raw$nccl
    ),
    class = "lockstep_backend_info"
  )
}

#' @rdname backend_info
#' @param x A `lockstep_backend_info` object.
#' @param ... Ignored.
#' @export
print.lockstep_backend_info <- function(x, ...) {
  n <- nrow(x$devices)
  cuda <- if (!isTRUE(x$cuda_built)) {
    "not built"
  } else {
    sprintf(
      "built with CUDA runtime %s%s, %d %s visible",
      if (is.na(x$cuda_runtime_version)) "(unknown)" else x$cuda_runtime_version,
      if (isTRUE(x$nccl)) " and NCCL" else "", n, if (n == 1L) "device" else "devices"
    )
  }
  cat(sprintf("lockstep %s backends: cpu (always), cuda: %s\n",
              format(utils::packageVersion("lockstep")), cuda))
  for (i in seq_len(n)) {
    d <- x$devices[i, ]
    cat(sprintf("  GPU %d: %s, compute capability %s, %.1f GiB, %d multiprocessors\n",
                d$id, d$name, d$compute_capability, d$memory_gb, d$multiprocessors))
  }
  invisible(x)
}

#' Compute options: where and how a model runs
#'
#' `cpu_only()` runs the model on the CPU. Every parameter-dependent value has
#' a leading chain dimension, so all chains step through one engine call. The
#' likelihood's rows are split into tiles that fit in cache; `threads` workers
#' share them out (and split the chains of the rest of the model among
#' themselves); `devices` further splits the rows into that many shards, each
#' with its own partial log density and gradient, summed by one all-reduce, as
#' GPUs and hosts will be. Results differ between settings only by the order
#' in which floating-point sums are taken.
#'
#' Shards own their groups: the rows are sorted by the group index of the
#' likelihood's largest gather (`alpha[g]`, `gamma[g, ]`), and shard
#' boundaries fall between groups, so a group-level parameter's gradient
#' from each group's rows is added by the one shard (and thread) that holds
#' them, with no copy to sum. What the all-reduce sums is the log density and
#' the gradient of the parameters every row reads (`beta` of `X %*% beta`, a
#' global intercept, the scales of non-centred effects): for a hierarchical
#' logistic regression with random intercepts and slopes (10^6 rows, 10^5
#' groups, 20 covariates, 4 chains) 1.4 KB per gradient whatever the rows
#' and groups, where it was 67 MB, and `cpu_only(devices = 2)` runs as fast
#' as `devices = 1` on the same threads. Across MPI processes the same
#' ownership goes further, to the sampler's state: see [mpi].
#'
#' `gpu_only()` runs the model on a CUDA GPU: every parameter-dependent value,
#' for all chains, lives in the GPU's memory, and each op of the model runs as
#' one kernel over all chains and all rows (the same kernel bodies as the CPU
#' backend's, so results agree up to the order of floating-point sums). Data
#' and what is computed from data alone are computed once, on the CPU, and
#' copied to the GPU when the model is first run. The leapfrog samplers
#' ([nuts()], the default, [hmc()] and [chees()]) keep their vectors
#' (positions, momenta, gradients of every chain) in the GPU's memory as well
#' and update them there: at each leapfrog step only a few numbers per chain
#' (log densities, energies, NUTS's U-turn checks) reach the CPU, which makes
#' the accept and tree decisions, and each iteration's draw comes back once.
#' [rwmh()] and [slice()] run on the CPU, exchanging the state with the GPU at
#' each step. The GPU pays off for models with many
#' rows of data (10^5 and more) and costs more than it saves for small ones. One gradient's kernels are
#' captured once into a CUDA graph and replayed, which saves the host's launch
#' overhead on small models (the environment variable `LOCKSTEP_CUDA_GRAPHS=no`
#' launches them one by one instead). Most GPUs compute in single precision
#' many times faster than in double, so `model(..., precision = "single")` is
#' recommended there; it also halves the GPU memory a model takes. (On an
#' H100, whose double precision is fast, that hierarchical logistic
#' regression's gradient ran at about the same speed in both.) Needs lockstep built with CUDA (see
#' [backend_info()]); where the build has no CUDA backend or no GPU is
#' visible, `gpu_only()` warns once and returns `cpu_only(mpi = mpi)`, so that
#' a greta script written for a GPU still runs (greta's TensorFlow places it
#' on the CPU).
#'
#' `gpu_only(devices = 0:3)` runs one model on several GPUs of one machine:
#' each GPU holds a block of the likelihood's rows (its share of the data)
#' and computes the parameters, priors and transforms itself, and each
#' gradient's partial log densities and gradients are summed on the first GPU,
#' where the sampler's vectors live. The sum goes through NCCL where lockstep
#' was built with its header and `libnccl.so.2` loads (the CUDA toolkit ships
#' both; `backend_info()` says whether the build has it); otherwise, or when a
#' device is named twice, through copies between the devices. A device may be
#' named more than once (shards taking turns on one GPU, which is how the
#' multi-GPU path is tested where there is one GPU). Rows that the likelihood
#' cannot be split by (data not row-aligned with its terms) stay on the first
#' GPU, so sharding never changes a result beyond the order of floating-point
#' sums. Several GPUs pay off when each one's share is still large (10^6 rows
#' and more for that kind of regression).
#'
#' GPUs own their groups, as MPI processes do (see [mpi], "Which parameters
#' each rank holds"): when [mcmc()] runs [nuts()], [hmc()] or [chees()] with a
#' diagonal metric on a model with group-level parameters (local ones: one
#' value or row per group, reached by the likelihood only through each row's
#' group), each GPU takes the rows of a contiguous range of groups, balanced
#' by rows, and holds the global parameters and only its own groups' local
#' ones: their values, momenta, gradients and metric, and the sampler's
#' updates of them, in its own memory. Per gradient the GPUs then exchange
#' each chain's log density and the global parameters' gradient alone (1.4
#' KB for 4 chains of that regression, whatever its rows and groups), and per
#' leapfrog step a few sums per chain, through the host; the sampler, on the
#' host, decides from their totals, and each kept draw is gathered from the
#' GPUs. Random draws are keyed by each parameter's place in the whole model,
#' so the draws are one GPU's up to the order of sums. Models without local
#' parameters, and [calculate()], use the row blocks above, every GPU holding
#' every parameter. [rwmh()], [slice()], dense metrics and [opt()] keep the
#' state in host memory, and each GPU evaluates its own groups' part of it.
#'
#' @param threads the number of worker threads; by default the option
#'   `lockstep.threads`, else the number of cores. More than the machine's
#'   (logical) cores are not used: a warning says so, as greta's `n_cores`
#'   does. Left at its default, it is
#'   a most: a model too small to share out (less than about 8,000 values
#'   per thread in one gradient of all chains) runs on fewer threads, one for
#'   most small models, because handing work to another thread at every
#'   leapfrog step would cost more than it saves; its draws are then also the
#'   same as with `threads = 1`. A number given here is used as it is, except
#'   by [nuts()] and [hmc()] on such a small model: there the threads share out
#'   the chains instead, each thread making the trajectories of its own group
#'   of chains through whole iterations (in warmup the groups meet once per iteration, where the
#'   step size and metric adapt from all chains; in sampling once per
#'   `pb_update` iterations), as Stan runs one chain per core; each chain's
#'   draws are the same as with `threads = 1`.
#' @param tile_rows rows per tile; `NULL` sizes tiles to the cache
#' @param mpi `TRUE` to run across the processes of an MPI job (`mpirun -np P
#'   Rscript fit.R`), each holding its own rows of the data: see [mpi_rows()].
#'   Starts MPI when it is not running yet. When each process's rows are
#'   whole groups (`mpi_rows(n, groups = g)`), each holds only its groups'
#'   group-level parameters, and the processes exchange per gradient the log
#'   density and the other parameters' gradient alone, through MPI (see
#'   [mpi], "Which parameters each rank holds"), on the CPU and on GPUs
#'   alike. With `gpu_only()`, each process runs on one GPU, taking the
#'   `devices` in turn by rank (rank r gets `devices[r %% length(devices) +
#'   1]`), the sampler's vectors in its memory. Where the processes hold every
#'   parameter (no local ones), their partial log
#'   densities and gradients are summed by NCCL in GPU memory where every
#'   process has NCCL (`backend_info()$nccl`) and its own GPU (its
#'   communicator set up through MPI); otherwise (no NCCL, or two processes
#'   on one GPU) through MPI on the host, the sampler's vectors then in host
#'   memory. Use GPUs of one model across the processes.
#' @param tile_kernel for `gpu_only()`: `TRUE` to run each likelihood's rows
#'   as one tile kernel per gradient: each block of GPU threads takes tiles of
#'   rows and runs the whole row-wise computation (the linear predictor, its
#'   gathers of group coefficients, the likelihood, and their gradients) on a
#'   tile, keeping its intermediate values in the block's shared memory
#'   instead of writing whole `[chains, rows]` arrays to GPU memory and
#'   reading them back, as the default op-by-op kernels do. It holds the
#'   linear predictors that lockstep fuses into row dot products (`X %*%
#'   beta`, group effects `alpha[g]`, `rowSums(X * gamma[g, ])`) under the
#'   normal, student, lognormal, gamma, bernoulli, binomial (and their logit
#'   and probit forms), poisson and negative binomial likelihoods; a model
#'   whose rows need anything else, or so many chains that a tile of 32 rows
#'   does not fit in shared memory, runs op by op as if `FALSE`. Experimental:
#'   it computes the same results (the same kernel code, tested on the CPU's
#'   emulation of the GPU), but it has not been timed on a GPU yet, so it is
#'   off by default.
#' @param devices for `cpu_only()`, the number of virtual devices (shards of
#'   the observation rows); for `gpu_only()`, the CUDA devices to run on,
#'   numbered from 0 as in `backend_info()$devices$id`: one, or several to
#'   share the rows among (see Details)
#' @return a `lockstep_compute_options` object for [mcmc()], [opt()] and
#'   [calculate()]
#' @examples
#' cpu_only()
#' cpu_only(threads = 2)
#' # a GPU where this build of lockstep has CUDA and one is visible; the CPU,
#' # with a warning, where not
#' suppressWarnings(gpu_only())
#' @export
cpu_only <- function(threads = NULL, devices = 1, tile_rows = NULL, mpi = FALSE) {
  # Not chosen by the user: a most, which the engine lowers for a small model
  # (a thread's share of a gradient must outweigh handing it over).
  threads_auto <- is.null(threads) && is.null(getOption("lockstep.threads"))
  if (is.null(threads)) threads <- default_threads()
  check_count(threads, "threads", minimum = 1)
  threads <- at_most_cores(threads)
  check_count(devices, "devices", minimum = 1)
  if (!is.null(tile_rows)) check_count(tile_rows, "tile_rows", minimum = 1)
  if (!is.logical(mpi) || length(mpi) != 1 || is.na(mpi)) {
    stop("`mpi` must be TRUE or FALSE", call. = FALSE)
  }
  if (mpi) mpi_start()
  structure(
    list(backend = getOption("lockstep.backend", "cpu"), threads = as.integer(threads),
         devices = as.integer(devices), tile_rows = if (is.null(tile_rows)) 0 else tile_rows,
         observation_stage = getOption("lockstep.observation_stage", TRUE), mpi = mpi,
         threads_auto = threads_auto,
         # (with options(lockstep.backend = "emulated"): each observation
         # stage run as the tile kernel, block by block, lane by lane
         # (inst/include/lockstep/tile_kernel.hpp); for the tests)
         tile_kernel = isTRUE(getOption("lockstep.tile_kernel", FALSE))),
    class = "lockstep_compute_options"
  )
}

#' @rdname cpu_only
#' @export
gpu_only <- function(devices = 0L, mpi = FALSE, tile_kernel = FALSE) {
  if (!is.numeric(devices) || length(devices) < 1 || anyNA(devices) || any(devices < 0) ||
      any(devices != round(devices))) {
    stop("`devices` must be device numbers (0, 1, ...), as in backend_info()$devices$id",
         call. = FALSE)
  }
  if (!is.logical(mpi) || length(mpi) != 1 || is.na(mpi)) {
    stop("`mpi` must be TRUE or FALSE", call. = FALSE)
  }
  if (!is.logical(tile_kernel) || length(tile_kernel) != 1 || is.na(tile_kernel)) {
    stop("`tile_kernel` must be TRUE or FALSE", call. = FALSE)
  }
  devices <- as.integer(devices)
  if (mpi) {
    # one GPU per process: the ranks take the devices in turn
    devices <- devices[mpi_rank() %% length(devices) + 1L]
  }
  info <- backend_info()
  # greta runs a gpu_only() model on the CPU where there is no GPU (TensorFlow
  # places it there): so does lockstep, saying so once, when the options are
  # made, rather than failing in mcmc() or calculate().
  no_gpu <- if (!isTRUE(info$cuda_built)) {
    "this build of lockstep has no CUDA backend (reinstall it where configure finds the CUDA toolkit's nvcc: see ?backend_info)"
  } else if (nrow(info$devices) == 0L) {
    "lockstep was built with CUDA, but no CUDA device is visible (no GPU, or no driver)"
  }
  if (!is.null(no_gpu)) {
    warning("gpu_only(): ", no_gpu, "; running on the CPU instead, as cpu_only()",
            call. = FALSE)
    return(cpu_only(mpi = mpi))
  }
  missing <- setdiff(devices, info$devices$id)
  if (length(missing) > 0) {
    stop(sprintf("gpu_only(): there is no GPU %s; the visible ones are %s",
                 paste(missing, collapse = ", "), paste(info$devices$id, collapse = ", ")),
         call. = FALSE)
  }
  structure(
    list(backend = "cuda", threads = 1L, devices = 1L, tile_rows = 0,
         observation_stage = FALSE, mpi = mpi, gpu = devices, tile_kernel = tile_kernel,
         gpu_name = info$devices$name[match(devices, info$devices$id)]),
    class = "lockstep_compute_options"
  )
}

#' @export
print.lockstep_compute_options <- function(x, ...) {
  if (identical(x$backend, "cuda")) {
    if (length(x$gpu) == 1) {
      cat(sprintf("lockstep compute options: cuda backend on GPU %d (%s)\n", x$gpu, x$gpu_name))
      if (isTRUE(x$mpi)) cat(sprintf("  across %d MPI processes (this is rank %d)\n", mpi_size(), mpi_rank()))
    } else {
      cat(sprintf("lockstep compute options: cuda backend on %d GPUs (%s), each holding a share of the rows\n",
                  length(x$gpu), paste(sprintf("%d: %s", x$gpu, x$gpu_name), collapse = ", ")))
    }
    if (isTRUE(x$tile_kernel)) cat("  each likelihood's rows in one tile kernel where it can\n")
    return(invisible(x))
  }
  cat(sprintf("lockstep compute options: %s backend, %s%d thread%s, %d device%s, tiles of %s\n",
              x$backend, if (isTRUE(x$threads_auto) && x$threads > 1) "up to " else "",
              x$threads, if (x$threads == 1) "" else "s", x$devices,
              if (x$devices == 1) "" else "s",
              if (x$tile_rows > 0) paste(x$tile_rows, "rows") else "cache-sized rows"))
  if (isTRUE(x$mpi)) cat(sprintf("  across %d MPI processes (this is rank %d)\n", mpi_size(), mpi_rank()))
  invisible(x)
}

# More threads than the machine has cores would take turns on them, and the
# engine's workers spin between jobs, so each would wait out the others'
# time slices (64 threads on 2 cores sampled 50 to 100 times slower): as
# greta does with n_cores, a warning and the number of cores instead.
at_most_cores <- function(threads) {
  cores <- parallel::detectCores(logical = TRUE)
  if (is.na(cores) || threads <= cores) return(threads)
  warning(threads, " threads were requested, but only ", cores, " CPU cores are available: ",
          "using ", cores, call. = FALSE)
  cores
}

default_threads <- function() {
  threads <- getOption("lockstep.threads")
  if (is.null(threads)) threads <- parallel::detectCores(logical = FALSE)
  if (is.null(threads) || is.na(threads) || threads < 1) threads <- 1L
  as.integer(threads)
}

check_compute_options <- function(x) {
  if (!inherits(x, "lockstep_compute_options")) {
    stop("`compute_options` must be created by cpu_only() or gpu_only()", call. = FALSE)
  }
  x
}
