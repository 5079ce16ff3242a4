#' lockstep: greta's modelling language on a native CPU and CUDA engine
#'
#' Write Bayesian models as in greta: [variable()], [as_data()],
#' `distribution(y) <- normal(mu, sd)`, [model()] and [mcmc()]. lockstep runs
#' them in C++ (and CUDA where available): every parameter-dependent value
#' carries a leading chain dimension, so all chains step in lockstep through
#' one engine call.
#'
#' @keywords internal
#' @useDynLib lockstep, .registration = TRUE
#' @importFrom Rcpp evalCpp
"_PACKAGE"

# Package-wide mutable state: the counter that gives every node a unique id,
# and the one that numbers distribution() statements in the order they ran.
lockstep_state <- new.env(parent = emptyenv())
lockstep_state$next_id <- 0
lockstep_state$next_declaration <- 0

# Node ids must be unique across R sessions, not only within one: greta arrays
# saved with saveRDS() and read back in a new session keep their ids, and a
# model built from them and from new greta arrays finds its nodes by id (a new
# session counting from 1 again gave a new node the id of a reloaded density,
# and model() failed). So each session counts from its own base: the hours
# since 2026 times 2^30 (later sessions above earlier ones, so that ids still
# follow creation order), plus one of 1024 slots of 2^20 ids, from the process
# id and the clock (not R's random numbers, which loading a package must not
# move). Ids stay below 10^15, where as.character() of them is exact.
session_id_base <- function() {
  now <- as.numeric(Sys.time())
  hours <- max(0, floor((now - 1767225600) / 3600))  # since 2026-01-01 UTC
  slot <- (Sys.getpid() + floor((now %% 1) * 1e6)) %% 1024
  hours * 2^30 + slot * 2^20
}

.onLoad <- function(libname, pkgname) {
  lockstep_state$next_id <- session_id_base()
  lockstep_state$next_declaration <- lockstep_state$next_id
}
