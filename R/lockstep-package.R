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
lockstep_state$next_id <- 0L
lockstep_state$next_declaration <- 0L
