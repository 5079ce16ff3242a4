#' Create a model
#'
#' `model()` gathers every greta array connected to the ones given, checks the
#' model, lowers it to lockstep's intermediate representation and builds the
#' native engine. The greta arrays given are those whose values [mcmc()]
#' records.
#'
#' As in greta, the model is what the given greta arrays depend on or what
#' depends on them: a likelihood of data that is connected to none of them,
#' such as `distribution(y) <- normal(0, 2)` with fixed parameters, is not part
#' of it. Such a term is a constant, so sampling is the same either way, but the
#' model's log density does not include it.
#'
#' **Memory.** The engine keeps one copy of the data (8 bytes a value and a
#' row index); greta arrays share the user's own vectors (integer counts and
#' group indices are not copied). Fits add little when the rows come sorted
#' by their largest grouping (data made group by group, as panels are) and
#' the precision is double; otherwise the fit keeps one copy of the rows in
#' that order, shared by all its chains and runs. A model whose data take 1
#' GB or more says how much as it is built, and one that would need more
#' memory than the machine has free is refused with an error naming both,
#' rather than left for the operating system to kill.
#'
#' @param ... greta arrays to trace, usually the model's parameters; named
#'   arguments give the names of their draws. With none, as in greta, every
#'   greta array in the environment `model()` is called from that is not data
#'   is traced, under its name there.
#' @param precision the floating point precision: `"double"` (the default),
#'   or `"single"`, which stores and computes values in float32 (faster, half
#'   the memory) while accumulating sums in double. Traced values are computed
#'   in double either way.
#' @param compile ignored, accepted for compatibility with greta
#' @param x a `greta_model`
#' @return a `greta_model` object
#' @examples
#' y <- c(0.3, -0.2, 1.1)
#' mu <- normal(0, 1)
#' sigma <- exponential(1)
#' distribution(y) <- normal(mu, sigma)
#' m <- model(mu, sigma)
#' m
#' @export
model <- function(..., precision = c("double", "single"), compile = TRUE) {
  precision <- match.arg(precision)
  arrays <- list(...)
  exprs <- as.list(substitute(list(...)))[-1]
  names <- names(arrays)
  if (length(arrays) == 0) {
    # greta's rule: every greta array of the calling environment that is not
    # data, under its name there
    arrays <- environment_greta_arrays(parent.frame())
    if (length(arrays) == 0) {
      stop("model() was given no greta arrays and found none (other than data) where it was ",
           "called: give the ones to trace, e.g. model(mu, sigma)", call. = FALSE)
    }
    names <- names(arrays)
  }
  if (is.null(names)) names <- rep("", length(arrays))
  for (k in seq_along(arrays)) {
    if (!is.greta_array(arrays[[k]])) {
      stop("the arguments of model() must be greta arrays, but argument ", k, " is a ",
           class(arrays[[k]])[1], call. = FALSE)
    }
    if (names[k] == "") names[k] <- paste(deparse(exprs[[k]]), collapse = "")
  }
  if (anyDuplicated(names)) {
    stop("the greta arrays given to model() need distinct names", call. = FALSE)
  }
  roots <- lapply(arrays, get_node)
  check_model_parts(roots, names)
  nodes <- collect_dag(roots)
  check_model_nodes(nodes)
  # for plot(), as the user wrote it: its greta arrays under their names
  graph <- model_graph(nodes, roots, names, visible_names(parent.frame()))
  # multivariate distributions become terms of ordinary ops (R/multivariate.R),
  # found by a second walk; the distributions themselves are not lowered, and
  # those of data are recorded for log_lik(), which computes them in R
  # (R/multivariate_families.R)
  if (expand_multivariate(nodes)) nodes <- collect_dag(roots)
  multivariate <- Filter(is_multivariate, nodes)
  nodes <- Filter(Negate(is_multivariate), nodes)
  lowered <- lower_dag(nodes)
  lowered$ir$precision <- precision
  traced <- lapply(seq_along(roots), function(k) {
    list(name = names[k], ir = lowered$ids[[as.character(roots[[k]]$id)]], dim = roots[[k]]$dim)
  })
  engine <- new.env(parent = emptyenv())
  check_engine_memory(lowered$ir)
  engine$pointer <- ls_engine_new(lowered$ir)
  check_executor_memory(engine$pointer)
  # the IR ids of data whose values data_values<- may replace, by node id
  mutable_data <- list()
  for (n in nodes) {
    if (n$type == "data" && isTRUE(n$mutable)) {
      mutable_data[[as.character(n$id)]] <- lowered$ids[[as.character(n$id)]]
    }
  }
  structure(
    list(ir = lowered$ir, traced = traced, variables = lowered$variables,
         n_free = lowered$ir$n_free, precision = precision, engine = engine,
         node_ids = vapply(nodes, function(n) n$id, numeric(1), USE.NAMES = FALSE),
         likelihood = likelihood_terms(nodes, lowered$ids),
         multivariate_likelihoods = unique(unlist(lapply(multivariate, function(n) {
           if (n$target$type == "data") n$family
         }))),
         likelihood_order = likelihood_order(nodes, multivariate, lowered$ids),
         mutable_data = mutable_data,
         graph = graph),
    class = "greta_model"
  )
}

# The objects of `env` (its own, in ls()'s order) that hold a value, without
# forcing a promise: a missing argument of the calling function, or one it has
# not used yet, is left out rather than evaluated (mget() would fail on the
# first and evaluate the second). src/rcpp_bindings.cpp says why that is safe.
bound_objects <- function(env) ls_bound_values(env, ls(env))

# The greta arrays among the objects of `env` that are not data, named as
# there (in ls()'s order): what model() traces when it is given none.
# The names of the greta arrays (data too) in `env`, by node id: a named
# character vector (the first name in ls()'s order where several name one).
visible_names <- function(env) {
  objects <- bound_objects(env)
  objects <- Filter(is.greta_array, objects)
  if (!length(objects)) return(character())
  ids <- vapply(objects, function(x) as.character(get_node(x)$id), character(1))
  keep <- !duplicated(ids)
  stats::setNames(names(objects)[keep], ids[keep])
}

environment_greta_arrays <- function(env) {
  objects <- bound_objects(env)
  Filter(function(x) is.greta_array(x) && get_node(x)$type != "data", objects)
}

# The IR ids (0-based) of the model's likelihood terms, the distributions of
# data, in the order their `distribution(y) <-` statements ran (log_lik()'s
# column order).
likelihood_terms <- function(nodes, ids) {
  terms <- Filter(function(n) n$type == "distribution" && n$target$type == "data", nodes)
  if (length(terms) == 0) return(integer())
  declared <- vapply(terms, function(n) if (is.null(n$declared)) NA_real_ else n$declared,
                     numeric(1))
  ir <- vapply(terms, function(n) ids[[as.character(n$id)]], integer(1))
  unname(ir[order(declared, ir)])
}

# log_lik()'s terms in the order of their `distribution(y) <-` statements:
# each a list with `ir` (the IR id of a univariate term) or, for a
# multivariate distribution of data, its family and `lp`.
likelihood_order <- function(nodes, multivariate, ids) {
  declared_of <- function(n) if (is.null(n$declared)) NA_real_ else as.numeric(n$declared)
  uni <- Filter(function(n) n$type == "distribution" && n$target$type == "data", nodes)
  mv <- Filter(function(n) n$target$type == "data", multivariate)
  terms <- c(
    lapply(uni, function(n) list(ir = ids[[as.character(n$id)]], declared = declared_of(n))),
    lapply(mv, function(n) {
      # lp: the IR id of its log density per realisation (the expression its
      # term sums, R/multivariate.R), which log_lik() traces
      list(family = n$family, declared = declared_of(n),
           lp = ids[[as.character(n$term$target$id)]])
    }))
  if (length(terms) == 0) return(list())
  declared <- vapply(terms, `[[`, numeric(1), "declared")
  ir <- vapply(terms, function(t) if (is.null(t$ir)) NA_integer_ else t$ir, integer(1))
  unname(terms[order(declared, ir)])
}

check_model_nodes <- function(nodes) {
  types <- vapply(nodes, function(n) n$type, character(1))
  # a constrained variable's log |Jacobian| (R/constrained.R) is no density of
  # the model's: with only those, there is nothing to define, as in greta
  densities <- types == "distribution" & !vapply(nodes, is_log_jacobian, logical(1))
  if (!any(densities)) {
    stop("none of the greta arrays in the model are associated with a probability density, ",
         "so a model cannot be defined", call. = FALSE)
  }
  if (!any(types == "variable")) {
    stop("the model has no variables, so there is nothing to sample", call. = FALSE)
  }
  for (node in nodes[types == "variable"]) {
    dist <- node$distribution
    if (!is.null(dist) && isTRUE(dist$discrete)) {
      stop("the model contains a discrete variable (", dist$family, "()) that is not data; ",
           "lockstep's samplers need continuous variables", call. = FALSE)
    }
  }
}

# Where the greta arrays given to model() lie in disjoint graphs, each with
# variables must have a density of its own: its variables would otherwise be
# sampled from a flat, improper density (greta refuses these, and also parts
# with no variable; a part of data with a fixed distribution only adds a
# constant, and tests use one). The message names the part's arrays. (One
# graph: check_model_nodes() says what it lacks.)
check_model_parts <- function(roots, names) {
  part <- rep(NA_integer_, length(roots))
  ids <- vapply(roots, function(n) n$id, numeric(1))
  improper <- logical()
  k <- 0L
  for (i in seq_along(roots)) {
    if (!is.na(part[i])) next
    k <- k + 1L
    found <- walk_nodes(roots[i], dag_neighbours)
    part[ids %in% vapply(found, function(n) n$id, numeric(1))] <- k
    types <- vapply(found, function(n) n$type, character(1))
    density <- any(types == "distribution" & !vapply(found, is_log_jacobian, logical(1)))
    improper[k] <- !density && any(types == "variable")
  }
  if (k == 1L) return(invisible())
  for (j in which(improper)) {
    stop("the model contains ", k, " disjoint graphs, and the one of ",
         paste0("`", names[part == j], "`", collapse = ", "), " has variables but no ",
         "probability density, so they cannot be sampled (connect it to the rest of the ",
         "model, or leave it out)", call. = FALSE)
  }
}

# The engine's pointer, rebuilt from the IR when it has gone (a model saved and
# reloaded, or sent to another R process): the IR is plain R data.
model_engine <- function(model) {
  if (!inherits(model, "greta_model")) stop("`model` must be a greta_model", call. = FALSE)
  if (ls_pointer_is_null(model$engine$pointer)) {
    message("rebuilding the lockstep engine of this model (it was saved and reloaded)")
    check_engine_memory(model$ir)
    model$engine$pointer <- ls_engine_new(model$ir)
  }
  model$engine$pointer
}

#' Convert an object to a greta model
#'
#' `as.greta_model()` is greta's generic for making a `greta_model`; a
#' `greta_model` (what [model()] returns) is returned as it is, and anything
#' else is refused with an error that says to build one with [model()].
#' Packages that extend greta can add methods for their own classes.
#'
#' @param x an object to convert: a `greta_model`
#' @param ... passed to methods
#' @return a `greta_model`
#' @examples
#' m <- model(normal(0, 1))
#' identical(as.greta_model(m), m)
#' @export
as.greta_model <- function(x, ...) {
  UseMethod("as.greta_model")
}

#' @export
as.greta_model.greta_model <- function(x, ...) x

#' @export
as.greta_model.default <- function(x, ...) {
  stop("`x` cannot be converted to a greta_model: it is a ", class(x)[1],
       "; build a model from greta arrays with model()", call. = FALSE)
}

#' @rdname model
#' @export
print.greta_model <- function(x, ...) {
  cat("greta model (lockstep engine) with", x$n_free, "free parameters, tracing",
      paste(vapply(x$traced, `[[`, "", "name"), collapse = ", "), "\n")
  invisible(x)
}

# The log density of a model (with its Jacobian terms) and its gradient at free
# states, one row per state: what the samplers see. Internal, for tests.
model_log_density <- function(model, free, gradient = TRUE, compute_options = cpu_only()) {
  if (is.null(dim(free))) free <- matrix(free, nrow = 1)
  ls_engine_log_density(model_engine(model), free, gradient,
                        check_compute_options(compute_options))
}

# Maps constrained values of a variable to its free scale (the inverse of the
# transforms in kernels/param.hpp).
to_free <- function(value, lower, upper) {
  switch(transform_of(lower, upper),
    none = value,
    lower = log(value - lower),
    upper = log(upper - value),
    interval = stats::qlogis((value - lower) / (upper - lower))
  )
}
