# Simulation: calculate(nsim =) and simulate(). The nsim draws are chains of
# the engine (DESIGN.md, "Chains in lockstep"): every node that is drawn,
# data with a distribution included, is lowered as a parameter without a
# transform, so a draw's value is its free state. The stochastic nodes are
# drawn level by level (a level's distributions have parameters computed from
# earlier levels only): one engine evaluation per level (per batch of draws)
# computes the parameters of every draw, and R's r* functions draw the values
# (R/families.R), so that set.seed() makes a simulation repeat.

# Draws of the greta arrays `roots` (named `names`): `fixed` maps node ids to
# values held in every draw (calculate()'s `values`), `given` maps node ids to
# matrices of values, a row per draw (posterior draws). Everything else they
# depend on is drawn from its distribution. Returns a named list of arrays
# whose first dimension is the draw.
simulate_arrays <- function(roots, names, fixed, given, nsim, precision, batch, options) {
  found <- simulation_nodes(roots, fixed, given)
  if (length(found$unsampleable)) {
    stop("the target greta arrays are related to variables that do not have distributions ",
         "so cannot be sampled; give them values in `values`", call. = FALSE)
  }
  stochastic <- found$stochastic
  sampled <- c(names(given), names(stochastic))
  lowered <- lower_dag(found$nodes, fixed, sampled)
  lowered$ir$precision <- precision
  engine <- ls_engine_new(lowered$ir)
  ir_id <- function(node) lowered$ids[[as.character(node$id)]]
  free <- matrix(0, nsim, lowered$ir$n_free)
  columns <- function(key) {
    v <- lowered$variables[[key]]
    v$offset + seq_len(v$size)
  }
  for (key in names(given)) free[, columns(key)] <- given[[key]]
  evaluate <- function(ids) engine_values_batched(engine, free, ids, batch, options)

  level <- stochastic_levels(found$nodes, stochastic, fixed, given)
  for (l in sort(unique(unlist(level)))) {
    at_level <- stochastic[vapply(names(stochastic), function(k) level[[k]] == l, logical(1))]
    params <- unique(unlist(lapply(at_level, function(node) {
      vapply(node$distribution$parents, ir_id, integer(1))
    })))
    values <- evaluate(params)
    col_of <- list()
    col <- 0
    for (id in params) {
      size <- lowered$ir$nodes[[id + 1L]]$dim
      col_of[[as.character(id)]] <- col + seq_len(prod(size))
      col <- col + prod(size)
    }
    for (key in names(at_level)) {
      node <- at_level[[key]]
      dist <- node$distribution
      n <- prod(node$dim)
      if (is_multivariate(dist)) {
        free[, columns(key)] <- draw_multivariate(dist, node$dim, nsim, values,
                                                  lapply(dist$parents, function(param) {
                                                    col_of[[as.character(ir_id(param))]]
                                                  }))
        next
      }
      p <- lapply(dist$parents, function(param) {
        v <- values[, col_of[[as.character(ir_id(param))]], drop = FALSE]
        if (ncol(v) == 1L && n > 1L) rep(v, n) else as.vector(v)
      })
      draws <- draw_family(dist$family, nsim * n, p, dist$truncation[1], dist$truncation[2])
      free[, columns(key)] <- matrix(draws, nsim, n)
    }
  }
  out <- evaluate(vapply(roots, ir_id, integer(1)))
  result <- list()
  col <- 0
  for (k in seq_along(roots)) {
    n <- prod(roots[[k]]$dim)
    result[[names[k]]] <- array(out[, col + seq_len(n)], dim = c(nsim, roots[[k]]$dim))
    col <- col + n
  }
  result
}

# nsim draws (rows) of a multivariate distribution's n x k target, each
# flattened in R's order (a k x k matrix for the distributions over
# matrices): `values` the parameters' values (a row per draw),
# `cols` each parameter's columns in it.
draw_multivariate <- function(dist, dim, nsim, values, cols) {
  r <- mv_family(dist$family, "calculate() with `nsim`")$r
  dims <- lapply(dist$parents, function(q) q$dim)
  out <- matrix(0, nsim, prod(dim))
  for (s in seq_len(nsim)) {
    p <- mv_params(values[s, ], cols, dims, dist$param_names, dist$spec)
    out[s, ] <- as.vector(r(p, dim[1], dim[2]))
  }
  out
}

# The nodes that drawing the roots needs, walking back from the roots and
# stopping at fixed and given nodes; a node with a distribution (a variable
# with a prior, or data with a likelihood) is drawn from it, so the walk goes
# on through its distribution's parameters. Variables without one cannot be
# drawn: they are listed in `unsampleable`.
simulation_nodes <- function(roots, fixed, given) {
  stochastic <- list()
  unsampleable <- list()
  nodes <- walk_nodes(roots, function(node, key) {
    if (!is.null(fixed[[key]]) || !is.null(given[[key]])) return(list())
    # a multivariate distribution's target may be an operation (dirichlet()'s
    # simplex of a free variable): drawn from the distribution unless its
    # variable is given (posterior draws)
    if (is_multivariate(node$distribution) && !(node$type %in% c("variable", "data")) &&
        !depends_on_given(node, given)) {
      stochastic[[key]] <<- node
      return(node$distribution$parents)
    }
    if (!is.null(node$distribution) && node$type %in% c("variable", "data")) {
      stochastic[[key]] <<- node
      return(node$distribution$parents)
    }
    if (node$type == "variable") unsampleable[[key]] <<- node
    node_inputs(node)
  })
  ordered <- order(vapply(stochastic, function(n) n$id, numeric(1)))
  list(nodes = nodes, stochastic = stochastic[ordered], unsampleable = unsampleable)
}

# Whether any variable behind `node` (its inputs, walked back) is in `given`
depends_on_given <- function(node, given) {
  if (length(given) == 0) return(FALSE)
  found <- walk_nodes(list(node), function(n, key) node_inputs(n))
  any(names(found) %in% names(given))
}

# The level of each stochastic node (by id): 1 + the highest level among the
# stochastic nodes its distribution's parameters depend on (0 for none).
stochastic_levels <- function(nodes, stochastic, fixed, given) {
  depth <- new.env(parent = emptyenv())
  depth_of <- function(node) {
    key <- as.character(node$id)
    if (!is.null(depth[[key]])) return(depth[[key]])
    d <- if (!is.null(fixed[[key]]) || !is.null(given[[key]])) {
      0
    } else if (!is.null(stochastic[[key]])) {
      1 + max(0, vapply(node$distribution$parents, depth_of, numeric(1)))
    } else {
      max(0, vapply(node_inputs(node), depth_of, numeric(1)))
    }
    depth[[key]] <- d
    d
  }
  lapply(stochastic, depth_of)
}

# ls_engine_values over the rows of `free` in batches of `batch` rows.
engine_values_batched <- function(engine, free, ids, batch, options) {
  rows <- nrow(free)
  first <- ls_engine_values(engine, free[seq_len(min(rows, batch)), , drop = FALSE], ids, options)
  if (rows <= batch) return(first)
  out <- matrix(0, rows, ncol(first))
  out[seq_len(batch), ] <- first
  for (start in seq(batch + 1, rows, by = batch)) {
    idx <- start:min(rows, start + batch - 1)
    out[idx, ] <- ls_engine_values(engine, free[idx, , drop = FALSE], ids, options)
  }
  out
}

# Simulations conditional on posterior draws (calculate(nsim =, values =
# draws)): nsim draws of the model's free state are picked at random (with
# replacement, and a warning, when there are fewer than nsim), the model's
# variables take their values there, and everything else is drawn as above.
simulate_posterior <- function(roots, names, draws, nsim, precision, batch, options) {
  info <- attr(draws, "model_info")
  if (is.null(info$model) || is.null(info$raw_draws)) stop_without_raw_draws(info, "values")
  model <- info$model
  raw <- as.matrix(info$raw_draws)
  if (is.null(dim(raw))) raw <- matrix(raw, ncol = 1)
  replace <- nsim > nrow(raw)
  if (replace) {
    warning("`nsim` (", nsim, ") is greater than the number of posterior draws in `values` (",
            nrow(raw), "), so posterior draws were picked with replacement", call. = FALSE)
  }
  rows <- sample.int(nrow(raw), nsim, replace = replace)
  free <- raw[rows, , drop = FALSE]
  # the model's variables the targets reach (walking no further than them)
  # take their values at these draws
  everything <- stats::setNames(rep(list(TRUE), length(model$variables)), names(model$variables))
  found <- simulation_nodes(roots, list(), everything)
  given_keys <- intersect(names(found$nodes), names(model$variables))
  given <- list()
  if (length(given_keys)) {
    ids <- vapply(given_keys, function(key) as.integer(model$variables[[key]]$ir), integer(1))
    values <- engine_values_batched(model_engine(model), free, ids, batch, options)
    col <- 0
    for (key in given_keys) {
      n <- model$variables[[key]]$size
      given[[key]] <- values[, col + seq_len(n), drop = FALSE]
      col <- col + n
    }
  }
  simulate_arrays(roots, names, list(), given, nsim, precision, batch, options)
}

# Checks calculate()'s and simulate()'s `nsim` and `seed`.
check_nsim <- function(nsim) {
  if (!is.numeric(nsim) || length(nsim) != 1 || !is.finite(nsim) || nsim < 1 ||
      nsim != round(nsim)) {
    stop("`nsim` must be a positive whole number (the number of simulations), or NULL",
         call. = FALSE)
  }
  as.integer(nsim)
}

check_seed <- function(seed) {
  if (!is.null(seed) && (!is.numeric(seed) || length(seed) != 1 || !is.finite(seed))) {
    stop("`seed` must be a single number, or NULL", call. = FALSE)
  }
  seed
}

# Sets R's seed for a simulation and returns a function that puts R's random
# number stream back as it was, so that `seed` leaves the caller's stream
# untouched (as greta does).
seed_for_simulation <- function(seed) {
  had <- exists(".Random.seed", envir = globalenv(), inherits = FALSE)
  old <- if (had) get(".Random.seed", envir = globalenv(), inherits = FALSE)
  set.seed(seed)
  function() {
    if (had) {
      assign(".Random.seed", old, envir = globalenv())
    } else if (exists(".Random.seed", envir = globalenv(), inherits = FALSE)) {
      rm(".Random.seed", envir = globalenv())
    }
  }
}

#' Simulate from a model's prior
#'
#' `simulate()` draws `nsim` independent simulations of the greta arrays of
#' a model from their prior, the data with a distribution (the response)
#' included, as greta's `simulate()` does: it is [calculate()] with `nsim`,
#' for every greta array of the model that is a named object in the calling
#' environment.
#'
#' To simulate the response, it must be a greta array with a name in the
#' calling environment: write `y <- as_data(y)` before `distribution(y) <-
#' ...`, so that `y` is a greta array. The model's variables need
#' distributions: a [variable()] without one cannot be drawn. For simulations
#' with some greta arrays held fixed, or conditional on posterior draws, use
#' [calculate()] with `nsim` and `values`.
#'
#' @param object a `greta_model` made by [model()]
#' @param nsim the number of simulations, a positive whole number
#' @param seed an optional seed, set with [set.seed()] before simulating (R's
#'   random number stream is restored afterwards); `set.seed()` before the
#'   call works too
#' @param precision `"double"` (the default) or `"single"`
#' @param ... for the generic; other arguments are refused (greta's older
#'   `targets` and `values`: use [calculate()])
#' @return a named list (the greta arrays' names, in alphabetical order) of
#'   arrays, each with the simulations as its first dimension: for a greta
#'   array of dimension `c(n, 1)`, an array of dimension `c(nsim, n, 1)`
#' @examples
#' y <- as_data(c(0.3, -0.2, 0.5))
#' mu <- normal(0, 1)
#' sigma <- exponential(1)
#' distribution(y) <- normal(mu, sigma)
#' m <- model(mu, sigma)
#' sims <- simulate(m, nsim = 100, seed = 1)
#' names(sims)
#' dim(sims$y)
#' @importFrom stats simulate
#' @export
simulate.greta_model <- function(object, nsim = 1, seed = NULL,
                                 precision = c("double", "single"), ...) {
  if (is.null(object$node_ids)) {
    stop("this greta_model was made by an older lockstep; make it again with model()",
         call. = FALSE)
  }
  extra <- list(...)
  if (length(extra)) {
    given <- names(extra)
    if (is.null(given)) given <- rep("", length(extra))
    given[given == ""] <- "(unnamed)"
    stop("simulate() does not take ", paste0("`", given, "`", collapse = ", "), ": to ",
         "simulate some greta arrays, or hold others at given values or posterior draws, use ",
         "calculate(..., nsim = , values = )", call. = FALSE)
  }
  env <- parent.frame()
  arrays <- list()
  objects <- bound_objects(env)
  for (name in names(objects)) {
    x <- objects[[name]]
    if (is.greta_array(x) && get_node(x)$id %in% object$node_ids) arrays[[name]] <- x
  }
  if (length(arrays) == 0) {
    stop("found no greta arrays of this model in the environment simulate() was called from",
         call. = FALSE)
  }
  do.call(calculate, c(arrays, list(nsim = nsim, seed = seed, precision = precision)))
}
