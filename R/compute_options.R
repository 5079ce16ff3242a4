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
#'     `multiprocessors`; no rows when none is visible or CUDA was not built.
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
      devices = raw$devices
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
      "built with CUDA runtime %s, %d %s visible",
      if (is.na(x$cuda_runtime_version)) "(unknown)" else x$cuda_runtime_version,
      n, if (n == 1L) "device" else "devices"
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
