# calculate(): values of greta arrays without sampling, from fixed values of
# the greta arrays they depend on, or from every draw of a greta_mcmc_list
# (computed in batches, the draws on the engine's chain dimension).

#' Calculate the values of greta arrays
#'
#' `calculate()` computes greta arrays from values of the greta arrays they
#' depend on, through lockstep's engine, as greta's `calculate()` does:
#' * with `values` a named list (names are greta arrays in the calling
#'   environment: variables, or any other greta array whose value is to be
#'   taken as given), it returns the targets' values;
#' * with `values` a `greta_mcmc_list` from [mcmc()], it returns the targets'
#'   values at every draw, as a `greta_mcmc_list` with the same chains,
#'   iterations and thinning. It reads the draws' raw draws, which `mcmc()`
#'   does not keep for a model whose free states would take more than
#'   `getOption("lockstep.max_raw_draws_mb")` (see [mcmc()]'s details).
#'
#' @section Simulation (`nsim`): With `nsim`, `calculate()` draws `nsim`
#'   independent simulations of the targets, as greta's does. Every greta
#'   array the targets depend on that has a distribution is drawn from it, in
#'   topological order, its parameters computed from the earlier draws:
#'   variables from their priors, and data with a distribution (`y` after
#'   `distribution(y) <- ...`) from their likelihood, so `calculate(y, nsim =
#'   100)` simulates data sets from the prior predictive distribution (`y` must
#'   be a greta array, e.g. made with [as_data()], to be named as a target).
#'   Truncated distributions are drawn within their truncation (by inverse-CDF
#'   sampling).
#'
#'   Greta arrays given in `values` (a named list) are held at those values in
#'   every simulation, and what they depend on is not drawn. With `values` a
#'   `greta_mcmc_list`, each simulation takes the model's variables from a
#'   posterior draw picked at random (with replacement, and a warning, when
#'   `nsim` exceeds the number of draws) and draws the rest, e.g. the data:
#'   posterior predictive simulations.
#'
#'   A variable without a distribution (made by [variable()]) cannot be drawn:
#'   the targets may depend on one only through greta arrays given in
#'   `values`.
#'
#'   The [multivariate_distributions] are drawn too, a realisation per row:
#'   `multivariate_normal` (through the Cholesky factor of `Sigma`),
#'   `dirichlet` (normalised gamma draws), `categorical` (one-hot rows),
#'   `multinomial` and `dirichlet_multinomial` (a Dirichlet draw, then a
#'   multinomial one). So are the [matrix_distributions], a matrix per
#'   simulation: `wishart` (with [stats::rWishart()]) and `lkj_correlation`
#'   (by the C-vine method of Lewandowski, Kurowicka and Joe, 2009).
#'   A [mixture()] is drawn by picking each element's component by the
#'   weights, then drawing from it, a [joint()] column by column.
#'
#'   The draws are computed as chains of the engine: the parameters of every
#'   distribution at one level of the model are computed for all simulations
#'   (`trace_batch_size` at a time) in one engine evaluation, and the values
#'   are drawn with R's random number generators (`rnorm()`, `rgamma()`, ...),
#'   so [set.seed()] before the call, or `seed`, makes a simulation repeat.
#'   The result does not depend on `trace_batch_size`.
#'
#' @param ... greta arrays to calculate (named as they are written)
#' @param values a named list of values, or a `greta_mcmc_list`
#' @param nsim `NULL`, or the number of simulations to draw (a positive whole
#'   number): see the section Simulation
#' @param seed with `nsim`, an optional seed, set with [set.seed()] before
#'   simulating; R's random number stream is restored afterwards, so the
#'   caller's stream is untouched. Ignored without `nsim`.
#' @param precision `"double"` (the default) or `"single"`
#' @param trace_batch_size how many draws to compute in one engine call (`Inf`:
#'   all of them)
#' @param compute_options where the engine runs: [cpu_only()]
#' @return a named list of arrays, or a `greta_mcmc_list`. With `nsim`, a
#'   named list of arrays whose first dimension is the simulation: a target
#'   of dimension `c(3, 1)` gives an array of dimension `c(nsim, 3, 1)`.
#' @examples
#' x <- variable(dim = 3)
#' y <- exp(x) * 2
#' calculate(y, values = list(x = c(0, 1, 2)))
#'
#' mu <- normal(0, 1)
#' sigma <- exponential(1)
#' y <- c(0.3, -0.2, 0.5)
#' distribution(y) <- normal(mu, sigma)
#' draws <- mcmc(model(mu, sigma), n_samples = 100, warmup = 100, chains = 2,
#'               verbose = FALSE)
#' cv <- sigma / abs(mu)
#' head(calculate(cv, values = draws)[[1]])
#'
#' # simulations from the prior, and with mu held fixed
#' sims <- calculate(mu, sigma, nsim = 500, seed = 1)
#' dim(sims$mu)
#' y_sim <- as_data(c(0.3, -0.2, 0.5))
#' distribution(y_sim) <- normal(mu, sigma)
#' fixed_mu <- calculate(y_sim, values = list(mu = 10), nsim = 5)
#' fixed_mu$y_sim[, , 1]
#' # posterior predictive simulations
#' post <- calculate(y_sim, values = draws, nsim = 50)
#' dim(post$y_sim)
#' @export
calculate <- function(..., values = list(), nsim = NULL, seed = NULL,
                      precision = c("double", "single"), trace_batch_size = 100,
                      compute_options = cpu_only()) {
  targets <- list(...)
  exprs <- as.list(substitute(list(...)))[-1]
  if (length(targets) == 0) stop("give calculate() at least one greta array", call. = FALSE)
  if (inherits(values, "lockstep_svi")) values <- values$draws  # an svi() fit: its draws
  names <- names(targets)
  if (is.null(names)) names <- rep("", length(targets))
  for (k in seq_along(targets)) {
    if (!is.greta_array(targets[[k]]) && names[k] != "") {
      # a misspelt argument lands in `...` under its own name: say which
      formals <- setdiff(names(formals(calculate)), "...")
      near <- formals[utils::adist(names[k], formals, ignore.case = TRUE) <= 2]
      stop("calculate() has no argument `", names[k], "`",
           if (length(near)) paste0(": did you mean `", near[1], "`?") else
             paste0(" (its arguments are greta arrays, then ",
                    paste0("`", formals, "`", collapse = ", "), ")"),
           call. = FALSE)
    }
    if (!is.greta_array(targets[[k]])) {
      stop("calculate() takes greta arrays, but argument ", k, " is a ",
           class(targets[[k]])[1],
           if (inherits(targets[[k]], c("greta_mcmc_list", "list", "mcmc.list")))
             "; give draws or values by name: calculate(x, values = draws)",
           call. = FALSE)
    }
    if (names[k] == "") names[k] <- paste(deparse(exprs[[k]]), collapse = "")
  }
  if (!is.null(nsim)) nsim <- check_nsim(nsim)
  seed <- check_seed(seed)
  precision <- match.arg(precision)
  trace_batch_size <- check_batch_size(trace_batch_size)
  options <- check_compute_options(compute_options)
  roots <- lapply(targets, get_node)
  draws <- inherits(values, "greta_mcmc_list")
  if (!draws && inherits(values, "mcmc.list")) {
    stop("`values` is an mcmc.list without its model (indexing draws with `[` makes one): ",
         "give calculate() the greta_mcmc_list that mcmc() returned", call. = FALSE)
  }
  if (!draws && (!is.list(values) || (length(values) > 0 && is.null(names(values))))) {
    stop("`values` must be a named list of values, or a greta_mcmc_list from mcmc()",
         call. = FALSE)
  }
  if (!is.null(nsim)) {
    if (!is.null(seed)) {
      restore_seed <- seed_for_simulation(seed)
      on.exit(restore_seed(), add = TRUE)
    }
    if (draws) {
      return(simulate_posterior(roots, names, values, nsim, precision, trace_batch_size,
                                options))
    }
    fixed <- fixed_values(values, parent.frame())
    return(simulate_arrays(roots, names, fixed, list(), nsim, precision, trace_batch_size,
                           options))
  }
  if (draws) {
    # (greta's rule: the draws do not hold such data's posterior predictive,
    # and its observed values would pass for it)
    observed <- vapply(roots, function(n) n$type == "data" && !is.null(n$distribution),
                       logical(1))
    if (any(observed)) {
      stop(paste0("`", names[observed], "`", collapse = ", "), " ",
           if (sum(observed) > 1) "have distributions and are" else "has a distribution and is",
           " not in the draws: to simulate ", if (sum(observed) > 1) "them" else "it",
           " from the posterior predictive, give `nsim`, e.g. calculate(",
           names[observed][1], ", values = draws, nsim = 100)", call. = FALSE)
    }
    return(calculate_draws(roots, names, values, precision, trace_batch_size, options))
  }
  fixed <- fixed_values(values, parent.frame())
  calculation <- lower_calculation(roots, fixed, precision)
  needed <- calculation$needed
  if (length(needed)) {
    stop("calculate() needs values for the variable", if (length(needed) > 1) "s", " that ",
         paste(names, collapse = ", "), " depend", if (length(names) == 1) "s", " on; give ",
         "them in `values`, pass the draws of a model, or give `nsim` to simulate ",
         if (length(names) == 1) "it" else "them", " from the priors (e.g. calculate(",
         names[1], ", nsim = 100))", call. = FALSE)
  }
  free <- matrix(0, 1, calculation$n_free)
  out <- ls_engine_values(calculation$engine, free, calculation$ids, options)
  split_values(out[1, ], roots, names)
}

# The values given by name in `values`, by node id, checked against the
# greta arrays' shapes.
# A matrix or array given as the value of greta array `name` (dimension `dim`)
# must have its dimensions (a vector need only have its length, as in greta);
# `what` begins the message ("the value given for `x` has").
check_value_dim <- function(v, dim, what, name) {
  d <- dim(v)
  if (length(v) > 1 && length(d) >= 2 && !identical(as.integer(d), as.integer(dim))) {
    stop(what, " dimension ", paste(d, collapse = " x "), ", but `", name, "` has ",
         paste(dim, collapse = " x "), call. = FALSE)
  }
}

fixed_values <- function(values, env) {
  fixed <- list()
  for (name in names(values)) {
    ga <- get0(name, envir = env)
    if (!is.greta_array(ga)) {
      stop("a value was given for `", name, "`, which is not a greta array", call. = FALSE)
    }
    node <- get_node(ga)
    v <- values[[name]]
    if (!is.numeric(v) && !is.logical(v)) {
      stop("the value given for `", name, "` must be numeric", call. = FALSE)
    }
    if (length(v) == 1) v <- rep(v, prod(node$dim))
    if (length(v) != prod(node$dim)) {
      stop("the value given for `", name, "` has ", length(v), " elements, but `", name,
           "` has ", prod(node$dim), call. = FALSE)
    }
    check_value_dim(v, node$dim, paste0("the value given for `", name, "` has"), name)
    if (anyNA(v)) {
      stop("the value given for `", name, "` contains missing values (NA)", call. = FALSE)
    }
    # a variable's one range, or the bounds of each element (variable()'s
    # per-element bounds make an operation of the free variable, which keeps them)
    bounds <- if (node$type == "variable") list(lower = node$lower, upper = node$upper) else node$bounds
    if (!is.null(bounds) && any(v < bounds$lower | v > bounds$upper)) {
      stop("the value given for `", name, "` is outside the range of values it can take",
           call. = FALSE)
    }
    fixed[[as.character(node$id)]] <- as.numeric(v)
  }
  fixed
}

# Lowers what the targets are computed from (stopping at fixed nodes) into an
# engine; `needed` lists the variables it still depends on.
lower_calculation <- function(roots, fixed, precision) {
  needed <- list()
  nodes <- walk_nodes(roots, function(node, key) {
    if (!is.null(fixed[[key]])) return(list())
    if (node$type == "variable") needed[[key]] <<- node
    node_inputs(node)
  })
  lowered <- lower_dag(nodes, fixed)
  lowered$ir$precision <- precision
  list(engine = ls_engine_new(lowered$ir), ir = lowered$ir,
       ids = vapply(roots, function(r) lowered$ids[[as.character(r$id)]], integer(1)),
       n_free = lowered$ir$n_free, variables = lowered$variables, needed = needed)
}

# One row of ls_engine_values' output as a named list of arrays.
split_values <- function(row, roots, names) {
  out <- list()
  col <- 0
  for (k in seq_along(roots)) {
    n <- prod(roots[[k]]$dim)
    out[[names[k]]] <- array(row[col + seq_len(n)], dim = roots[[k]]$dim)
    col <- col + n
  }
  out
}

# The targets at every draw of a greta_mcmc_list: each target variable's free
# values are taken from the model's raw draws.
calculate_draws <- function(roots, names, draws, precision, batch, options) {
  info <- attr(draws, "model_info")
  if (is.null(info$model) || is.null(info$raw_draws)) stop_without_raw_draws(info, "values")
  model <- info$model
  calculation <- lower_calculation(roots, list(), precision)
  raw <- info$raw_draws
  chains <- length(raw)
  iterations <- nrow(raw[[1]])
  free_model <- do.call(rbind, lapply(seq_len(iterations), function(i) {
    do.call(rbind, lapply(raw, function(chain) chain[i, , drop = FALSE]))
  }))
  free <- matrix(0, nrow(free_model), calculation$n_free)
  for (key in names(calculation$variables)) {
    mine <- calculation$variables[[key]]
    theirs <- model$variables[[key]]
    if (is.null(theirs)) {
      if (!is.null(calculation$needed[[key]])) {
        stop("the greta arrays to calculate depend on a variable that is not in the model ",
             "these draws came from: give `nsim` to simulate it from its prior, the model's ",
             "variables from the draws (e.g. calculate(", names[1], ", values = draws, ",
             "nsim = 100))", call. = FALSE)
      }
      next
    }
    free[, mine$offset + seq_len(mine$size)] <- free_model[, theirs$offset + seq_len(theirs$size)]
  }
  columns <- unlist(lapply(seq_along(roots), function(k) trace_names(names[k], roots[[k]]$dim)))
  values <- matrix(0, nrow(free), length(columns))
  for (start in seq(1, nrow(free), by = batch * chains)) {
    idx <- start:min(nrow(free), start + batch * chains - 1)
    values[idx, ] <- ls_engine_values(calculation$engine, free[idx, , drop = FALSE],
                                      calculation$ids, options)
  }
  colnames(values) <- columns
  chain_of_row <- rep_len(seq_len(chains), nrow(values))
  per_chain <- lapply(seq_len(chains), function(chain) {
    coda::mcmc(values[chain_of_row == chain, , drop = FALSE], start = stats::start(draws),
               thin = coda::thin(draws))
  })
  out <- coda::mcmc.list(per_chain)
  attr(out, "model_info") <- list(raw_draws = raw, model = model)
  class(out) <- c("greta_mcmc_list", class(out))
  out
}
