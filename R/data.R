#' Convert data to a greta array
#'
#' `as_data()` marks R values (a numeric or logical vector, matrix or array,
#' or a data frame of numbers) as data in a lockstep model. Vectors become
#' column vectors, as in greta. Data must be finite: `NA`, `NaN` and infinite
#' values are refused.
#'
#' @param x a numeric or logical vector, matrix, array or data frame
#' @return a greta array of type data
#' @examples
#' x <- as_data(c(1.2, 3.4, 5.6))
#' x
#' dim(x)
#' @export
as_data <- function(x) {
  if (is.greta_array(x)) {
    if (get_node(x)$type != "data") {
      stop("cannot convert a greta array of type '", get_node(x)$type,
           "' to data: only R values can become data", call. = FALSE)
    }
    return(x)
  }
  as_data_array(x, deparse(substitute(x)))
}

as_data_array <- function(x, arg) {
  d <- data_array(x, arg)
  as_greta_array_from_node(new_node("data", d$dim, value = d$value))
}

# The dimension and values (column-major) of R values checked as data can be.
data_array <- function(x, arg) {
  if (is.data.frame(x)) {
    numeric_cols <- vapply(x, function(col) is.numeric(col) || is.logical(col), logical(1))
    if (!all(numeric_cols)) {
      stop("`", arg, "` is a data frame with non-numeric columns (",
           paste(names(x)[!numeric_cols], collapse = ", "), "); only numbers can be data",
           call. = FALSE)
    }
    x <- as.matrix(x)
  }
  if (!(is.numeric(x) || is.logical(x)) || is.object(x) && !is.matrix(x) && !is.array(x)) {
    stop("`", arg, "` must be numeric or logical to become a greta array, not ",
         class(x)[1], call. = FALSE)
  }
  if (length(x) == 0) stop("`", arg, "` has no elements", call. = FALSE)
  if (anyNA(x)) stop("`", arg, "` contains missing values (NA): remove or impute them", call. = FALSE)
  if (any(!is.finite(x))) stop("`", arg, "` contains infinite values", call. = FALSE)
  dim <- dim(x)
  if (is.null(dim)) dim <- c(length(x), 1L)
  if (length(dim) == 1L) dim <- c(dim, 1L)
  # numbers whose only attribute is their dimension (a vector, a matrix, an
  # array: counts as R reads them, a design matrix) are kept as they are,
  # sharing the user's memory (as.numeric() would copy a matrix to drop its
  # dim: 160 MB for 10^6 rows of 20 covariates); the engine reads integers as
  # doubles itself
  plain <- is.null(attributes(x)) || identical(names(attributes(x)), "dim")
  value <- if ((is.integer(x) || is.double(x)) && plain) x else as.numeric(x)
  list(dim = dim, value = value)
}

#' Data whose values can be replaced
#'
#' `as_data_mutable()` is [as_data()] for data that a model will be fitted to
#' more than once with other values: the same model over many simulated
#' datasets, or data that changes between runs. `data_values(model, y) <-`
#' replaces the values of such data in `model`, as in greta.
#'
#' The replacement gives `model` a new engine holding the new values (what
#' planning the model costs, without lowering it again from its greta
#' arrays); the greta array `y` takes them too, so [calculate()],
#' [simulate()] and [log_lik()] see them. Draws made before keep the model
#' they were made with, and its data: [extra_samples()] continues them with
#' the data they were drawn from. Another model built from `y` keeps the
#' values it had until it is built again.
#'
#' The dimensions cannot change: for data of another size, build a new model.
#' The new values must suit the data's distribution as the old ones did
#' (counts for a poisson(), 0 or 1 for a bernoulli()).
#'
#' @param x a numeric or logical vector, matrix, array or data frame
#' @param model a `greta_model` made by [model()] from a greta array of
#'   `as_data_mutable()`
#' @param target a greta array made by `as_data_mutable()`, part of `model`
#' @param value the new values: what [as_data()] accepts, with the dimensions
#'   of `target`
#' @return `as_data_mutable()`: a greta array of type data. `data_values<-`:
#'   the model, with the new data.
#' @examples
#' y <- as_data_mutable(c(1.2, 0.4, 2.2))
#' mu <- normal(0, 10)
#' distribution(y) <- normal(mu, 1)
#' m <- model(mu)
#' means <- vapply(1:3, function(i) {
#'   data_values(m, y) <- rnorm(3, mean = 2 * i)
#'   draws <- mcmc(m, n_samples = 200, warmup = 200, chains = 2, verbose = FALSE)
#'   mean(as.matrix(draws))
#' }, numeric(1))
#' means
#' @export
as_data_mutable <- function(x) {
  ga <- if (is.greta_array(x)) as_data(x) else as_data_array(x, deparse(substitute(x)))
  node <- get_node(ga)  # (an environment: marked in place)
  node$mutable <- TRUE
  ga
}

#' @rdname as_data_mutable
#' @export
`data_values<-` <- function(model, target, value) {
  name <- paste(deparse(substitute(target)), collapse = "")
  if (!inherits(model, "greta_model")) {
    stop("`model` must be a greta_model created by model()", call. = FALSE)
  }
  node <- if (is.greta_array(target)) get_node(target)
  if (is.null(node) || node$type != "data" || !isTRUE(node$mutable)) {
    stop("`", name, "` must be data made by as_data_mutable(): only such data can be ",
         "replaced", call. = FALSE)
  }
  ir <- model$mutable_data[[as.character(node$id)]]
  if (is.null(ir)) stop("`", name, "` is not part of `model`", call. = FALSE)
  new <- data_array(value, "value")
  if (!identical(as.integer(new$dim), node$dim)) {
    stop("the new values of `", name, "` have dimension ", paste(new$dim, collapse = " x "),
         ", but `", name, "` has ", paste(node$dim, collapse = " x "), ": the dimensions of ",
         "data cannot change; build a new model for data of another size", call. = FALSE)
  }
  dist <- node$distribution
  if (!is.null(dist)) {
    if (isTRUE(dist$multivariate)) {
      dist$check_data(matrix(new$value, nrow = node$dim[1]))
    } else {
      check_data_support(new$value, dist)
    }
  }
  node$value <- new$value
  model$ir$nodes[[ir + 1L]]$values <- new$value
  # a new engine, so that copies of the model made before (in draws) keep theirs
  model$engine <- new.env(parent = emptyenv())
  model$engine$pointer <- ls_engine_new(model$ir)
  model
}
