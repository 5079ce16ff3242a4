#' MCMC samplers
#'
#' Functions to set up MCMC samplers for [mcmc()], with greta's parameters.
#'
#' @param Lmin,Lmax the number of leapfrog steps of each iteration is drawn
#'   uniformly from `Lmin` to `Lmax`
#' @param epsilon the leapfrog step size, a starting value: warmup tunes it by
#'   dual averaging on the mean acceptance rate of all chains
#' @param diag_sd an estimate of the posterior standard deviations of the free
#'   parameters (one value, or one per free parameter), a starting value:
#'   warmup re-estimates it from the pooled draws of all chains
#' @details All chains run in lockstep: every leapfrog step evaluates the log
#'   density and gradient of all chains in one call to the engine, with one
#'   step size; each chain accepts or rejects its own proposal.
#' @return a `sampler` object that can be passed to [mcmc()]
#' @examples
#' hmc()
#' hmc(Lmin = 10, Lmax = 20)
#' @name samplers
#' @export
hmc <- function(Lmin = 5, Lmax = 10, epsilon = 0.1, diag_sd = 1) {
  check_count(Lmin, "Lmin", minimum = 1)
  check_count(Lmax, "Lmax", minimum = 1)
  if (Lmax < Lmin) stop("`Lmax` must be at least `Lmin`", call. = FALSE)
  if (!is.numeric(epsilon) || length(epsilon) != 1 || !is.finite(epsilon) || epsilon <= 0) {
    stop("`epsilon` must be a single positive number", call. = FALSE)
  }
  if (!is.numeric(diag_sd) || length(diag_sd) < 1 || any(!is.finite(diag_sd)) ||
      any(diag_sd <= 0)) {
    stop("`diag_sd` must be positive numbers", call. = FALSE)
  }
  obj <- list(parameters = list(Lmin = as.integer(Lmin), Lmax = as.integer(Lmax),
                                epsilon = epsilon, diag_sd = diag_sd),
              name = "hmc")
  class(obj) <- c("hmc sampler", "sampler")
  obj
}

#' @export
print.sampler <- function(x, ...) {
  values <- vapply(x$parameters, function(v) paste(prettyNum(v), collapse = ", "), "")
  cat(class(x)[1], " object with parameters:\n  ",
      paste(names(x$parameters), values, sep = " = ", collapse = ", "), "\n", sep = "")
  invisible(x)
}

check_count <- function(x, arg, minimum = 0) {
  if (!is.numeric(x) || length(x) != 1 || !is.finite(x) || x != round(x) || x < minimum) {
    stop("`", arg, "` must be a whole number of at least ", minimum, call. = FALSE)
  }
  invisible(as.integer(x))
}
