# Optimisation: opt() and greta's optimiser constructors. The optimisers run
# in C++ (src/core/optimiser.cpp) over the engine's log density, every start
# in lockstep, one engine call for every start's evaluation.

#' Find the maximum of a model's joint density
#'
#' `opt()` finds the parameter values that maximise the model's log joint
#' density: maximum *a posteriori* estimates with `adjust = TRUE` (the density
#' of the free parameters, including the log Jacobians of their constraints,
#' as greta does), maximum likelihood estimates without priors and with
#' `adjust = FALSE`. Its signature and results are greta's.
#'
#' @param model a `greta_model` from [model()]
#' @param optimiser an optimiser, e.g. [bfgs()] (the default) or [adam()]: see
#'   [optimisers]
#' @param max_iterations the most iterations before giving up
#' @param tolerance the optimiser stops when the objective changes by less
#'   than this between iterations (greta's rule). The first-order methods
#'   take small steps near the optimum, so that this may stop them short of
#'   it; give a smaller `tolerance` (1e-10, say) and more `max_iterations`,
#'   or use [bfgs()], for the optimum to more digits
#' @param initial_values an [initials()] object; variables without initial
#'   values start at random values, as in [mcmc()]
#' @param adjust whether to include the log Jacobians of the constrained
#'   variables' transforms in the density
#' @param hessian whether to return the Hessian of the negative log joint
#'   density with respect to each greta array in `model`, on its own
#'   (constrained) scale, computed by finite differences of the gradient. As
#'   in greta, it is the density's Hessian with respect to the array's
#'   values: variables' log Jacobians are not part of it, whatever `adjust`.
#'   Variables have one, and so do greta arrays made of variables' elements,
#'   each once (`c(a, b)`, `t(beta)`, `beta[1:2]`), which gives the joint
#'   Hessian of several variables; for other functions of them (`sqrt(v)`,
#'   `a + b`) a warning says there is none
#' @param compute_options where the model runs: [cpu_only()], or a GPU
#'   ([gpu_only()]), where the first-order methods ([adam()] and the others
#'   but [bfgs()] and [nelder_mead()]) keep every start, its gradient and the
#'   optimiser's state in the GPU's memory, so that an iteration moves a few
#'   numbers per start between the GPU and R's process
#' @param starts the number of random starts, run together in lockstep (not in
#'   greta); the best one is returned, and all of them in `all_starts`
#' @return a list with `par` (a named list of the values of the greta arrays
#'   in `model` at the optimum), `value` (the unadjusted negative log joint
#'   density there), `iterations`, `convergence` (0 when the optimiser
#'   converged, 1 when it reached `max_iterations`, 2 when the density or its
#'   gradient was not finite: at the start, or at the next point, when the
#'   values returned are the last finite ones and a warning says so),
#'   `hessian` (with `hessian = TRUE`: a named list of matrices, one per
#'   variable in `model`) and, with `starts > 1`, `all_starts`.
#' @examples
#' x <- c(-0.8, 1.3, 2.1, 0.4, 1.9)
#' mu <- variable()
#' sd <- variable(lower = 0)
#' distribution(x) <- normal(mu, sd)
#' m <- model(mu, sd)
#' o <- opt(m, adjust = FALSE)
#' o$par        # the maximum likelihood estimates
#' c(mean(x), sqrt(mean((x - mean(x))^2)))
#' opt(m, optimiser = adam(), max_iterations = 500)$par
#' opt(m, hessian = TRUE)$hessian
#' @export
opt <- function(model, optimiser = bfgs(), max_iterations = 100, tolerance = 1e-6,
                initial_values = initials(), adjust = TRUE, hessian = FALSE,
                compute_options = cpu_only(), starts = 1) {
  if (!inherits(model, "greta_model")) {
    stop("`model` must be a greta_model created by model()", call. = FALSE)
  }
  if (!inherits(optimiser, "optimiser")) {
    stop("`optimiser` must be an optimiser such as bfgs() or adam()", call. = FALSE)
  }
  max_iterations <- check_count(max_iterations, "max_iterations", minimum = 1, truncate = TRUE)
  if (!is.numeric(tolerance) || length(tolerance) != 1 || !is.finite(tolerance) ||
      tolerance < 0) {
    stop("`tolerance` must be a single non-negative number", call. = FALSE)
  }
  for (arg in c("adjust", "hessian")) {
    v <- get(arg)
    if (!is.logical(v) || length(v) != 1 || is.na(v)) {
      stop("`", arg, "` must be TRUE or FALSE", call. = FALSE)
    }
  }
  starts <- check_count(starts, "starts", minimum = 1)
  options <- check_compute_options(compute_options)
  options$jacobian <- adjust
  check_ranks_agree(model, options)
  engine <- model_engine(model)
  init <- initial_free_state(model, initial_values, starts, options, parent.frame(), "start")

  res <- ls_optimise(engine, init, optimiser$name, optimiser$parameters, max_iterations,
                     tolerance, options)
  if (isTRUE(res$interrupted)) message("opt() was interrupted: returning the values so far")
  unadjusted <- options
  unadjusted$jacobian <- FALSE
  value <- -ls_engine_log_density(engine, res$par, FALSE, unadjusted)$log_density
  objective <- -ls_engine_log_density(engine, res$par, FALSE, options)$log_density
  objective[!is.finite(objective)] <- Inf
  one <- function(k) {
    out <- list(par = opt_par(model, res$par[k, ], options), value = value[k],
                iterations = as.integer(res$iterations[k]),
                convergence = as.numeric(res$convergence[k]))  # (a double, as greta gives)
    if (hessian) out$hessian <- opt_hessian(model, res$par[k, ], options)
    out
  }
  best <- which.min(objective)
  out <- one(best)
  if (starts > 1) out$all_starts <- lapply(seq_len(starts), one)
  # a start that moved and then met a density or gradient that was not
  # finite (a diverging optimiser) ends at its last finite point: say so
  if (res$convergence[best] == 2 && res$iterations[best] > 0) {
    warning("opt() stopped after ", res$iterations[best], " iterations: the density or its ",
            "gradient was not finite at the next point (the optimiser diverged?); returning ",
            "the last point where it was finite. Try a smaller learning rate", call. = FALSE)
  }
  out
}

# The model's traced greta arrays at a free state, as a named list of arrays.
opt_par <- function(model, free, options) {
  ids <- vapply(model$traced, function(t) as.integer(t$ir), integer(1))
  values <- ls_engine_values(model_engine(model), matrix(free, nrow = 1), ids, options)
  out <- list()
  col <- 0
  for (t in model$traced) {
    n <- prod(t$dim)
    v <- values[1, col + seq_len(n)]
    col <- col + n
    out[[t$name]] <- if (n == 1) v else array(v, dim = t$dim)
  }
  out
}

# The Hessian of -log p, the unadjusted joint density, with respect to each
# traced greta array's values (greta's, which differentiates the density with
# respect to the array's value: a variable's log Jacobian, a function of the
# free state, is not part of it, whatever `adjust`). A traced array's
# elements must be those of variables, each once (a variable, or c(a, b),
# t(beta), beta[2:3]): the Hessian with respect to those variable elements,
# in the array's order. Others (sqrt(v), a + b) get none, and a warning.
opt_hessian <- function(model, free, options) {
  options$jacobian <- FALSE
  engine <- model_engine(model)
  coords <- free_coordinates(model)
  out <- list()
  skipped <- character()
  for (t in model$traced) {
    info <- Filter(function(v) identical(as.integer(v$ir), as.integer(t$ir)), model$variables)
    at <- if (length(info)) info[[1]]$offset + seq_len(info[[1]]$size) else
      variable_elements(model, engine, t, free, coords, options)
    if (is.null(at)) {
      skipped <- c(skipped, t$name)
      next
    }
    out[[t$name]] <- value_hessian(engine, free, at, coords, options)
  }
  if (length(skipped)) {
    warning("no Hessian for ", paste0("`", skipped, "`", collapse = ", "), ": Hessians are ",
            "computed for variables, and for greta arrays made of variables' elements (such ",
            "as c(a, b)), not for other functions of them; give model() the variables",
            call. = FALSE)
  }
  out
}

# The bounds of each free coordinate's variable, one per coordinate.
free_coordinates <- function(model) {
  lower <- upper <- rep(NA_real_, model$n_free)
  for (v in model$variables) {
    k <- v$offset + seq_len(v$size)
    lower[k] <- rep_len(v$lower, v$size)
    upper[k] <- rep_len(v$upper, v$size)
  }
  list(lower = lower, upper = upper)
}

# The constrained values of free coordinates `at` of `free`, each by its own
# variable's transform.
coordinate_values <- function(free, at, coords) {
  vapply(at, function(k) from_free(free[k], coords$lower[k], coords$upper[k]), 0)
}

# A step on each coordinate's constrained scale at x, within its bounds.
value_steps <- function(x, lower, upper, relative) {
  h <- relative * pmax(1, abs(x))
  pmin(h, 0.25 * pmin(x - lower, upper - x))
}

# Free states (rows) that move coordinate at[i] of `free` by `by[i]` on its
# constrained scale, one row per i.
moved_states <- function(free, at, by, coords) {
  states <- matrix(free, length(at), length(free), byrow = TRUE)
  x <- coordinate_values(free, at, coords)
  for (i in seq_along(at)) {
    k <- at[i]
    states[i, k] <- to_free(x[i] + by[i], coords$lower[k], coords$upper[k])
  }
  states
}

# Which free coordinate each element of traced array `t` is, found by moving
# every coordinate at once as chains of one engine call and seeing which
# element moves with it by the same amount; NULL unless each element is
# exactly one coordinate's value and no coordinate appears twice.
variable_elements <- function(model, engine, t, free, coords, options) {
  n <- prod(t$dim)
  D <- length(free)
  if (n > D || D > 5000) return(NULL)
  x <- coordinate_values(free, seq_len(D), coords)
  d <- value_steps(x, coords$lower, coords$upper, 1e-3)
  states <- rbind(free, moved_states(free, seq_len(D), d, coords))
  values <- in_batches(states, function(b) ls_engine_values(engine, b, as.integer(t$ir), options))
  moved <- sweep(values[-1, , drop = FALSE], 2, values[1, ])  # [coordinate, element]
  at <- integer(n)
  for (e in seq_len(n)) {
    k <- which(moved[, e] != 0)
    if (length(k) != 1 || abs(moved[k, e] - d[k]) > 1e-6 * d[k]) return(NULL)
    at[e] <- k
  }
  if (anyDuplicated(at) || any(rowSums(moved != 0)[at] != 1)) return(NULL)
  at
}

# f(states) for states' rows in batches of `batch` (as chains: the memory of
# one call grows with them), the last padded to the same size so that the
# engine keeps one executor; the rows of the results, bound.
in_batches <- function(states, f, batch = 64L) {
  n <- nrow(states)
  if (n <= batch) return(f(states))
  parts <- lapply(seq(1L, n, by = batch), function(r0) {
    rows <- r0:min(n, r0 + batch - 1L)
    padded <- c(rows, rep(rows[1], batch - length(rows)))
    f(states[padded, , drop = FALSE])[seq_along(rows), , drop = FALSE]
  })
  do.call(rbind, parts)
}

# The Hessian of -log p with respect to the constrained values of free
# coordinates `at`: central differences of the gradient df/dx = -(dlp/dz) /
# (dx/dz), all 2 n moved states evaluated together as chains of one call.
value_hessian <- function(engine, free, at, coords, options) {
  n <- length(at)
  x <- coordinate_values(free, at, coords)
  h <- value_steps(x, coords$lower[at], coords$upper[at], 1e-5)
  states <- moved_states(free, rep(at, each = 2), as.vector(rbind(h, -h)), coords)
  g <- in_batches(states, function(b) {
    ls_engine_log_density(engine, b, TRUE, options)$gradient
  })[, at, drop = FALSE]
  dx <- t(vapply(seq_len(2 * n), function(r) {
    -g[r, ] / vapply(seq_len(n), function(i) {
      k <- at[i]
      dfree_dvalue_inverse(states[r, k], coords$lower[k], coords$upper[k])
    }, 0)
  }, numeric(n)))
  if (n == 1) dx <- matrix(dx, ncol = 1)
  H <- matrix(0, n, n)
  for (i in seq_len(n)) H[i, ] <- (dx[2 * i - 1, ] - dx[2 * i, ]) / (2 * h[i])
  (H + t(H)) / 2
}

# x = g(z) of a variable's transform, and dx/dz.
from_free <- function(z, lower, upper) {
  switch(transform_of(lower, upper),
    none = z,
    lower = lower + exp(z),
    upper = upper - exp(z),
    interval = lower + (upper - lower) * stats::plogis(z)
  )
}

dfree_dvalue_inverse <- function(z, lower, upper) {
  switch(transform_of(lower, upper),
    none = rep(1, length(z)),
    lower = exp(z),
    upper = -exp(z),
    interval = (upper - lower) * stats::plogis(z) * (1 - stats::plogis(z))
  )
}

#' Optimisers for opt()
#'
#' Functions that set up an optimiser for [opt()], with greta's names, tuning
#' parameters and defaults. `bfgs()` is limited-memory BFGS with a
#' backtracking line search; `nelder_mead()` the simplex method of
#' TensorFlow Probability, which greta uses (values only, no gradients); the
#' others follow the update rules of the Keras optimisers that greta uses
#' (`proximal_gradient_descent()`, `proximal_adagrad()` and `adagrad_da()`
#' those of TensorFlow 1's, which greta 0.5 still offers though it deprecates
#' them). All run in C++, every start of [opt()] in lockstep.
#'
#' `ftrl()` is "follow the regularised leader" (McMahan et al. 2013):
#' per element, an accumulator of squared gradients and a linear term from
#' which the state is solved at every step, exactly 0 where the L1 penalty
#' outweighs the linear term. `proximal_gradient_descent()` takes a gradient
#' step and then the proximal step of the L1 and L2 penalties (shrinking each
#' element towards 0 by `learning_rate * l1_regularization_strength`, then
#' dividing by `1 + learning_rate * l2_regularization_strength`);
#' `proximal_adagrad()` does the same with adagrad's step sizes.
#' `adagrad_da()` is adagrad's dual averaging: the state solved from the sums
#' of the gradients and of their squares, the penalties scaled by
#' `global_step`, which stays at the value given (as greta passes it to
#' TensorFlow). The penalties act on the free (unconstrained) state.
#'
#' @section Defunct optimisers: greta 0.5 removed `powell()`, `momentum()`,
#'   `cg()`, `newton_cg()`, `l_bfgs_b()`, `tnc()`, `cobyla()` and `slsqp()`
#'   (SciPy's optimisers, reached through TensorFlow 1). lockstep has them
#'   only to say so: each stops with an error naming what to use instead
#'   (`bfgs()` for the quasi-Newton and conjugate-gradient methods,
#'   `nelder_mead()` for the derivative-free ones, `gradient_descent(momentum
#'   = )` for `momentum()`).
#'
#' @param tolerance `bfgs()` stops when the largest absolute element of the
#'   gradient is below this
#' @param x_tolerance,f_relative_tolerance,f_absolute_tolerance `bfgs()` also
#'   stops when a step moves no element of the (free) state by more than
#'   `x_tolerance`, or changes the objective by at most `f_relative_tolerance`
#'   times its value or by at most `f_absolute_tolerance` (each off at 0, its
#'   default, as in TensorFlow Probability's BFGS, which greta uses)
#' @param value_and_gradients_function,initial_position,initial_inverse_hessian_estimate,stopping_condition
#'   greta's names for what [opt()] itself sets (the model's density and
#'   gradient, its `initial_values`); accepted as `NULL` only
#' @param validate_args accepted for greta's signature; lockstep always
#'   checks its arguments
#' @param max_line_search_iterations the most halvings of a `bfgs()` step
#' @param func_tolerance,position_tolerance `nelder_mead()` stops when the
#'   values of its simplex's vertices span at most `func_tolerance`, or when
#'   every vertex lies within `position_tolerance` of the best in every
#'   element of the (free) state (opt()'s `tolerance` does not apply to it)
#' @param step_sizes the size of `nelder_mead()`'s initial simplex: its first
#'   vertex is the start, the others the start moved by `step_sizes` along each
#'   element of the free state in turn (one number; `NULL`: 1)
#' @param reflection,expansion,contraction,shrinkage the factors of
#'   `nelder_mead()`'s moves (`NULL`: 1, 2, 0.5 and 0.5, TensorFlow
#'   Probability's defaults)
#' @param objective_function,initial_vertex greta's names for what [opt()]
#'   itself sets for `nelder_mead()`; accepted as `NULL` only
#' @param learning_rate the size of the steps
#' @param momentum momentum of `gradient_descent()` and `rms_prop()`
#' @param nesterov whether `gradient_descent()` uses Nesterov momentum
#' @param rho the decay rate of `adadelta()` and `rms_prop()`
#' @param epsilon a small constant that conditions the updates
#' @param initial_accumulator_value the starting value of `adagrad()`'s
#'   accumulators
#' @param beta_1,beta_2 decay rates of the first and second moment estimates
#' @param amsgrad whether `adam()` uses the AMSGrad variant
#' @param centered whether `rms_prop()` normalises by the variance of the
#'   gradient rather than its second moment
#' @param learning_rate_power the power of the accumulated squared gradients
#'   in `ftrl()`'s step sizes (0 or less; -0.5: their square root)
#' @param l1_regularization_strength,l2_regularization_strength the
#'   strengths of L1 and L2 penalties on the free state (0 or more)
#' @param l2_shrinkage_regularization_strength `ftrl()`'s L2 penalty added to
#'   the gradient itself (a magnitude penalty, where
#'   `l2_regularization_strength` stabilises the steps)
#' @param beta `ftrl()`'s beta (McMahan et al. 2013), added to the
#'   accumulators' power in its steps' denominators
#' @param global_step `adagrad_da()`'s step count, which its penalties scale
#'   with (greta's default, 1, leaves them as given)
#' @param initial_gradient_squared_accumulator_value the starting value of
#'   `adagrad_da()`'s accumulators of squared gradients
#' @param ... ignored: the defunct optimisers stop with an error whatever
#'   they are given
#' @return an `optimiser` object for [opt()]
#' @examples
#' bfgs()
#' adam(learning_rate = 0.05)
#' # the same maximum by three of them
#' x <- c(-0.8, 1.3, 2.1, 0.4, 1.9)
#' mu <- variable()
#' sd <- variable(lower = 0)
#' distribution(x) <- normal(mu, sd)
#' m <- model(mu, sd)
#' opt(m, optimiser = bfgs())$par
#' opt(m, optimiser = nelder_mead())$par
#' opt(m, optimiser = adam(learning_rate = 0.1), max_iterations = 1000)$par
#' @name optimisers
NULL

# `non_positive`: the parameters that must be 0 or less (the rest, 0 or
# more); `positive`: those that must not be 0 either (a step size that the
# state is solved from, an accumulator a square root is taken of)
new_optimiser <- function(name, parameters, non_positive = character(), positive = character()) {
  for (p in names(parameters)) {
    v <- parameters[[p]]
    if (is.logical(v)) v <- as.numeric(v)
    sign_ok <- if (p %in% non_positive) v <= 0 else v >= 0
    if (!is.numeric(v) || length(v) != 1 || !is.finite(v) || !sign_ok) {
      stop("`", p, "` must be a single ", if (p %in% non_positive) "non-positive" else
           "non-negative", " number", call. = FALSE)
    }
    parameters[[p]] <- v
  }
  for (p in positive) {
    if (!(parameters[[p]] > 0)) stop("`", p, "` must be positive", call. = FALSE)
  }
  structure(list(name = name, parameters = parameters),
            class = c(paste0(name, "_optimiser"), "optimiser"))
}

# greta's arguments for what opt() itself sets (`stands_for`), which an
# optimiser's constructor accepts as NULL only.
refuse_set_by_opt <- function(optimiser, stands_for, ...) {
  args <- list(...)
  for (arg in names(args)) {
    if (!is.null(args[[arg]])) {
      stop("`", arg, "` of ", optimiser, "() is not set by hand: opt() sets what it stands ",
           "for (", stands_for, "), as greta does", call. = FALSE)
    }
  }
}

#' @rdname optimisers
#' @export
bfgs <- function(value_and_gradients_function = NULL, initial_position = NULL,
                 tolerance = 1e-08, x_tolerance = 0, f_relative_tolerance = 0,
                 initial_inverse_hessian_estimate = NULL, stopping_condition = NULL,
                 validate_args = TRUE, max_line_search_iterations = 50,
                 f_absolute_tolerance = 0) {
  refuse_set_by_opt("bfgs", "the model's density and gradient, its initial_values",
                    value_and_gradients_function = value_and_gradients_function,
                    initial_position = initial_position,
                    initial_inverse_hessian_estimate = initial_inverse_hessian_estimate,
                    stopping_condition = stopping_condition)
  if (!is.logical(validate_args) || length(validate_args) != 1 || is.na(validate_args)) {
    stop("`validate_args` must be TRUE or FALSE", call. = FALSE)
  }
  new_optimiser("bfgs", list(tolerance = tolerance, x_tolerance = x_tolerance,
                             f_relative_tolerance = f_relative_tolerance,
                             f_absolute_tolerance = f_absolute_tolerance,
                             max_line_search_iterations = max_line_search_iterations))
}

#' @rdname optimisers
#' @export
nelder_mead <- function(objective_function = NULL, initial_vertex = NULL, step_sizes = NULL,
                        func_tolerance = 1e-08, position_tolerance = 1e-08, reflection = NULL,
                        expansion = NULL, contraction = NULL, shrinkage = NULL) {
  refuse_set_by_opt("nelder_mead", "the model's density, its initial_values",
                    objective_function = objective_function, initial_vertex = initial_vertex)
  # TensorFlow Probability's defaults where greta leaves them NULL
  parameters <- list(step_sizes = if (is.null(step_sizes)) 1 else step_sizes,
                     func_tolerance = func_tolerance, position_tolerance = position_tolerance,
                     reflection = if (is.null(reflection)) 1 else reflection,
                     expansion = if (is.null(expansion)) 2 else expansion,
                     contraction = if (is.null(contraction)) 0.5 else contraction,
                     shrinkage = if (is.null(shrinkage)) 0.5 else shrinkage)
  out <- new_optimiser("nelder_mead", parameters)
  p <- out$parameters
  if (!(p$step_sizes > 0)) stop("`step_sizes` must be a single positive number", call. = FALSE)
  if (!(p$reflection > 0)) stop("`reflection` must be positive", call. = FALSE)
  if (!(p$expansion > 1)) stop("`expansion` must be greater than 1", call. = FALSE)
  for (arg in c("contraction", "shrinkage")) {
    if (!(p[[arg]] > 0 && p[[arg]] < 1)) {
      stop("`", arg, "` must lie between 0 and 1", call. = FALSE)
    }
  }
  out
}

#' @rdname optimisers
#' @export
gradient_descent <- function(learning_rate = 0.01, momentum = 0, nesterov = FALSE) {
  new_optimiser("gradient_descent", list(learning_rate = learning_rate, momentum = momentum,
                                         nesterov = nesterov))
}

#' @rdname optimisers
#' @export
adadelta <- function(learning_rate = 0.001, rho = 1, epsilon = 1e-08) {
  new_optimiser("adadelta", list(learning_rate = learning_rate, rho = rho, epsilon = epsilon))
}

#' @rdname optimisers
#' @export
adagrad <- function(learning_rate = 0.8, initial_accumulator_value = 0.1, epsilon = 1e-08) {
  new_optimiser("adagrad", list(learning_rate = learning_rate,
                                initial_accumulator_value = initial_accumulator_value,
                                epsilon = epsilon))
}

#' @rdname optimisers
#' @export
adam <- function(learning_rate = 0.1, beta_1 = 0.9, beta_2 = 0.999, amsgrad = FALSE,
                 epsilon = 1e-08) {
  new_optimiser("adam", list(learning_rate = learning_rate, beta_1 = beta_1, beta_2 = beta_2,
                             amsgrad = amsgrad, epsilon = epsilon))
}

#' @rdname optimisers
#' @export
adamax <- function(learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-07) {
  new_optimiser("adamax", list(learning_rate = learning_rate, beta_1 = beta_1, beta_2 = beta_2,
                               epsilon = epsilon))
}

#' @rdname optimisers
#' @export
nadam <- function(learning_rate = 0.001, beta_1 = 0.9, beta_2 = 0.999, epsilon = 1e-07) {
  new_optimiser("nadam", list(learning_rate = learning_rate, beta_1 = beta_1, beta_2 = beta_2,
                              epsilon = epsilon))
}

#' @rdname optimisers
#' @export
rms_prop <- function(learning_rate = 0.1, rho = 0.9, momentum = 0, epsilon = 1e-10,
                     centered = FALSE) {
  new_optimiser("rms_prop", list(learning_rate = learning_rate, rho = rho, momentum = momentum,
                                 epsilon = epsilon, centered = centered))
}

#' @rdname optimisers
#' @export
ftrl <- function(learning_rate = 1, learning_rate_power = -0.5, initial_accumulator_value = 0.1,
                 l1_regularization_strength = 0, l2_regularization_strength = 0,
                 l2_shrinkage_regularization_strength = 0, beta = 0) {
  new_optimiser("ftrl", list(
    learning_rate = learning_rate, learning_rate_power = learning_rate_power,
    initial_accumulator_value = initial_accumulator_value,
    l1_regularization_strength = l1_regularization_strength,
    l2_regularization_strength = l2_regularization_strength,
    l2_shrinkage_regularization_strength = l2_shrinkage_regularization_strength, beta = beta
  ), non_positive = "learning_rate_power", positive = "learning_rate")
}

#' @rdname optimisers
#' @export
proximal_gradient_descent <- function(learning_rate = 0.01, l1_regularization_strength = 0,
                                      l2_regularization_strength = 0) {
  new_optimiser("proximal_gradient_descent", list(
    learning_rate = learning_rate, l1_regularization_strength = l1_regularization_strength,
    l2_regularization_strength = l2_regularization_strength
  ), positive = "learning_rate")
}

#' @rdname optimisers
#' @export
proximal_adagrad <- function(learning_rate = 1, initial_accumulator_value = 0.1,
                             l1_regularization_strength = 0, l2_regularization_strength = 0) {
  new_optimiser("proximal_adagrad", list(
    learning_rate = learning_rate, initial_accumulator_value = initial_accumulator_value,
    l1_regularization_strength = l1_regularization_strength,
    l2_regularization_strength = l2_regularization_strength
  ), positive = c("learning_rate", "initial_accumulator_value"))
}

#' @rdname optimisers
#' @export
adagrad_da <- function(learning_rate = 0.8, global_step = 1L,
                       initial_gradient_squared_accumulator_value = 0.1,
                       l1_regularization_strength = 0, l2_regularization_strength = 0) {
  new_optimiser("adagrad_da", list(
    learning_rate = learning_rate, global_step = global_step,
    initial_gradient_squared_accumulator_value = initial_gradient_squared_accumulator_value,
    l1_regularization_strength = l1_regularization_strength,
    l2_regularization_strength = l2_regularization_strength
  ), positive = c("learning_rate", "initial_gradient_squared_accumulator_value"))
}

# greta 0.5's defunct optimisers: an error naming what to use instead.
defunct_optimiser <- function(name, instead) {
  stop("`", name, "()` is defunct: greta 0.5.0 removed it (it was one of SciPy's optimisers, ",
       "reached through TensorFlow 1), and lockstep does not have it. Use ", instead,
       " instead.", call. = FALSE)
}

#' @rdname optimisers
#' @export
powell <- function(...) defunct_optimiser("powell", "nelder_mead()")

#' @rdname optimisers
#' @export
momentum <- function(...) defunct_optimiser("momentum", "gradient_descent(momentum = 0.9)")

#' @rdname optimisers
#' @export
cg <- function(...) defunct_optimiser("cg", "bfgs()")

#' @rdname optimisers
#' @export
newton_cg <- function(...) defunct_optimiser("newton_cg", "bfgs()")

#' @rdname optimisers
#' @export
l_bfgs_b <- function(...) defunct_optimiser("l_bfgs_b", "bfgs()")

#' @rdname optimisers
#' @export
tnc <- function(...) defunct_optimiser("tnc", "bfgs()")

#' @rdname optimisers
#' @export
cobyla <- function(...) defunct_optimiser("cobyla", "nelder_mead()")

#' @rdname optimisers
#' @export
slsqp <- function(...) defunct_optimiser("slsqp", "bfgs()")

#' @export
print.optimiser <- function(x, ...) {
  values <- vapply(x$parameters, function(v) paste(prettyNum(v), collapse = ", "), "")
  cat(class(x)[1], " object with parameters:\n  ",
      paste(names(x$parameters), values, sep = " = ", collapse = ", "), "\n", sep = "")
  invisible(x)
}
