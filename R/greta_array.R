# greta arrays: R handles on the nodes of a model's DAG. Building one records a
# node and does no arithmetic (the engine computes); see DESIGN.md "Data flow".
#
# A node is an environment with
#   id        a whole number unique across sessions (lockstep-package.R), so
#             DAG walks can mark nodes as seen
#   type      "data", "variable", "operation" or "distribution"
#   dim       integer dims (at least two, as in greta)
#   parents   list of nodes this one is computed from
#   children  list of nodes computed from this one (so model() can find the
#             likelihood terms attached to a parameter)
# and, by type: value (data); lower, upper (variable); op, index (operation);
# family, target, truncation (distribution); distribution (a data or variable
# node with a density).

new_node <- function(type, dim, parents = list(), ...) {
  lockstep_state$next_id <- lockstep_state$next_id + 1
  node <- new.env(parent = emptyenv())
  node$id <- lockstep_state$next_id
  node$type <- type
  node$dim <- as.integer(dim)
  node$parents <- parents
  node$children <- list()
  node$distribution <- NULL
  extra <- list(...)
  for (name in names(extra)) assign(name, extra[[name]], envir = node)
  for (parent in parents) add_child(parent, node)
  node
}

# `parent$children[[n + 1]] <- child` would copy the whole list (the node still
# holds it), which makes a node with many children (a scalar used in a loop of
# 10^4 operations) quadratic to build. Taking the list out of the node first
# leaves it unshared, so R extends it in place.
add_child <- function(parent, child) {
  children <- parent$children
  parent$children <- NULL
  children[[length(children) + 1L]] <- child
  parent$children <- children
  invisible(parent)
}

as_greta_array_from_node <- function(node) {
  structure(list(node = node), class = "greta_array")
}

get_node <- function(x) .subset2(x, "node")

#' Test for and pass on greta arrays
#'
#' `is.greta_array(x)` is `TRUE` when `x` is a greta array (data, a variable,
#' an operation or a distribution's greta array) and `FALSE` for anything else,
#' such as R numbers, as in greta.
#'
#' `identity(x)` returns `x`, as [base::identity()] does; lockstep exports it
#' as a generic, as greta does, so that code written for greta finds a method
#' for greta arrays. greta's method copies the array into a new operation; a
#' lockstep greta array cannot be modified in place, so the array itself is
#' returned and no operation is added to the model.
#'
#' @param x any R object
#' @return `is.greta_array()`: `TRUE` or `FALSE`; `identity()`: `x`
#' @examples
#' x <- variable(dim = 2)
#' is.greta_array(x)
#' is.greta_array(exp(x))
#' is.greta_array(c(1, 2))
#' identical(identity(x), x)
#' identity(3)
#' @export
is.greta_array <- function(x) inherits(x, "greta_array")

#' @rdname is.greta_array
#' @export
identity <- function(x) UseMethod("identity")

#' @export
identity.default <- function(x) base::identity(x)

#' @export
identity.greta_array <- function(x) x

# Coerces R numbers to a data greta array, naming `arg` in errors.
as.greta_array <- function(x, arg = "x") {
  if (is.greta_array(x)) return(x)
  as_data_array(x, arg)
}

#' Methods for greta arrays
#'
#' Greta arrays behave like R arrays of unknown values. `print()` shows the
#' values that are known (data, and an operation's elements that depend on
#' data alone, such as the zeros of `z <- zeros(3, 3); z[, 2] <- normal(0, 1,
#' dim = 3)`) and `?` for values that are not known until the model is
#' sampled (greta's format), the first `n` rows of a longer array
#' with a count of the values left out; `summary()` gives its type, size
#' and distribution and, for data, a summary of its values (greta's format);
#' `dim()`, `length()`, `head()`, `tail()` and `str()` work as for R arrays.
#' `as.matrix()` of data is its values, an R matrix (as in greta); of any
#' other greta array, a greta array: the matrix itself, or a column of the
#' elements of an array of other dimensions, as [base::as.matrix()] makes
#' (greta returns a matrix of unknown values instead, which cannot go into a
#' model).
#'
#' @param x,object a greta array
#' @param n the most values `print()` shows (as greta: the first `n` rows of
#'   an array with more than `n` values)
#' @param ... ignored
#' @return `print()`: `x`, invisibly; `summary()`: an object of class
#'   `summary.greta_array`, which prints; `as.matrix()`: an R matrix for
#'   data, else a greta array with two dimensions
#' @examples
#' x <- as_data(matrix(1:20, ncol = 1))
#' print(x, n = 5)
#' z <- variable(dim = c(2, 3))
#' summary(z)
#' dim(as.matrix(variable(dim = c(2, 2, 2))))
#' as.matrix(as_data(matrix(1:4, 2)))  # an R matrix
#' @name greta_array_methods
NULL

#' @export
dim.greta_array <- function(x) get_node(x)$dim

#' @export
length.greta_array <- function(x) prod(get_node(x)$dim)

#' @rdname greta_array_methods
#' @export
as.matrix.greta_array <- function(x, ...) {
  node <- get_node(x)
  # data: its R values, as greta returns them (as.matrix() of an R array)
  if (node$type == "data") {
    # (a double matrix is the user's own, returned as it is: no copy)
    v <- node$value
    if (!is.double(v)) v <- as.numeric(v)
    if (!identical(dim(v), as.integer(node$dim))) dim(v) <- node$dim
    return(base::as.matrix(v))
  }
  d <- node$dim
  if (length(d) == 2L) x else reshape_node(get_node(x), c(prod(d), 1L))
}

#' @rdname greta_array_methods
#' @export
print.greta_array <- function(x, n = 10, ...) {
  if (!is.numeric(n) || length(n) != 1L || is.na(n) || n < 1) {
    stop("`n` of print() must be a positive number of values to show", call. = FALSE)
  }
  node <- get_node(x)
  cat("greta array <", greta_array_description(node), ">\n\n", sep = "")
  values <- if (node$type == "data") array(node$value, dim = node$dim) else {
    known <- known_values(node)
    if (is.null(known)) array(NA_real_, dim = node$dim) else known
  }
  # as greta does: the first n rows of a longer array, and how many values
  # are left out
  shown <- if (length(values) > n) utils::head(values, n) else values
  print(as.unknowns(shown))
  left <- length(values) - length(shown)
  if (left > 0) {
    cat("\ni ", left, " more values\nUse `print(n = ...)` to see more values\n", sep = "")
  }
  invisible(x)
}

# The values of an operation that are known without the variables it depends
# on (greta prints them: z <- zeros(3, 3); z[, 2] <- normal(0, 1, dim = 3)
# shows its zeros), NA where they depend on one: the operation computed by
# the engine with every variable's elements NaN. NULL where that is not
# possible or too large to do for a print (and so all unknown).
known_values <- function(node) {
  if (node$type != "operation" || prod(node$dim) > 1e5) return(NULL)
  variables <- list()
  size <- 0
  walk_nodes(list(node), function(n, key) {
    size <<- size + prod(n$dim)
    if (n$type == "variable") {
      variables[[key]] <<- rep(NaN, prod(n$dim))
      return(list())
    }
    node_inputs(n)
  })
  if (size > 1e6) return(NULL)
  tryCatch({
    calc <- lower_calculation(list(node), variables, "double")
    v <- ls_engine_values(calc$engine, matrix(0, 1, calc$n_free), calc$ids,
                          check_compute_options(cpu_only()))
    out <- array(v[1, ], dim = node$dim)
    out[is.nan(out)] <- NA
    out
  }, error = function(e) NULL)
}

# The type print() and summary() name: the node's, except that a constrained
# variable (R/constrained.R), computed from a free one, is a variable.
greta_array_type <- function(node) {
  if (!is.null(node$constraint)) "variable" else node$type
}

# What print() calls a greta array, as greta does: "data", "operation",
# "variable", or "variable following a normal distribution".
greta_array_description <- function(node) {
  type <- greta_array_type(node)
  if (type == "variable" && !is.null(node$distribution)) {
    paste0(type, " following a ", distribution_label(node$distribution), " distribution")
  } else {
    type
  }
}

#' @rdname greta_array_methods
#' @export
summary.greta_array <- function(object, ...) {
  node <- get_node(object)
  type <- greta_array_type(node)
  family <- if (!is.null(node$distribution)) distribution_label(node$distribution)
  values <- if (identical(node$type, "data")) summary(array(node$value, dim = node$dim))
  structure(list(type = type, length = prod(node$dim), dim = node$dim, distribution = family,
                 values = values), class = "summary.greta_array")
}

#' @export
print.summary.greta_array <- function(x, ...) {
  n <- x$length
  cat(sprintf("'%s' greta array with %d element%s%s%s\n\n", x$type, n, if (n == 1) "" else "s",
              if (n == 1) "" else paste0(" (", paste(x$dim, collapse = "x"), ")"),
              if (is.null(x$distribution)) "" else
                paste0(" following a ", x$distribution, " distribution")))
  if (is.null(x$values)) cat("  (values currently unknown)\n") else print(x$values)
  invisible(x)
}

#' Extract parts of a greta array
#'
#' Indexing works as for R arrays: `x[i]` gives a column vector, `x[i, j]` a
#' matrix; dimensions are never dropped below two. The result is a new greta
#' array whose values are gathered from `x` by the engine.
#'
#' Selecting whole rows of a matrix, `x[i, ]` with `i` row numbers (which may
#' repeat, as a group index does), is recorded as a row gather that stores one
#' index per selected row rather than one per element: `gamma[group, ]` for a
#' `G x K` matrix of group effects and `N` observations keeps `N` indices, not
#' `N * K`.
#'
#' To replace elements, `x[i] <- value`, see [replace]; for `head()`,
#' `tail()` and `rep()`, see [rep.greta_array()].
#'
#' @param x a greta array
#' @param i,j,... indices, as for R arrays
#' @param drop ignored: greta arrays keep at least two dimensions
#' @return a greta array
#' @examples
#' theta <- normal(0, 1, dim = 5)
#' theta[2:3]
#' # a row per observation, from its group's row
#' gamma <- normal(0, 1, dim = c(3, 2))
#' group <- c(1, 3, 3, 2, 1)
#' gamma[group, ]
#' dim(gamma[group, ])
#' @name extract
#' @export
`[.greta_array` <- function(x, i, j, ..., drop = FALSE) {
  node <- get_node(x)
  n_index <- nargs() - 1L - !missing(drop)
  # An index of the user's own (positive integers in range, as a group
  # column is) is kept as it is, sharing R's memory: at 10^8 rows, a copy
  # of each index vector is 400 MB.
  whole_rows <- n_index == 2L && length(node$dim) == 2L && !missing(i) && missing(j)
  if ((n_index == 1L && !missing(i)) || whole_rows) {
    if (is_plain_positions(i, if (whole_rows) node$dim[1] else prod(node$dim))) {
      op <- if (whole_rows) "gather_rows" else "gather"
      dim <- c(length(i), if (whole_rows) node$dim[2] else 1L)
      return(new_operation(op, list(node), dim, index = i))
    }
  }
  positions <- array(seq_len(prod(node$dim)), dim = node$dim)
  selected <- tryCatch(
    if (n_index <= 1L) positions[i] else positions[i, j, ..., drop = FALSE],
    error = function(e) stop("invalid index for a greta array of dimension ",
                             paste(node$dim, collapse = " x "), ": ", conditionMessage(e),
                             call. = FALSE)
  )
  if (anyNA(selected)) {
    stop("index out of range (or NA) for a greta array of dimension ",
         paste(node$dim, collapse = " x "), call. = FALSE)
  }
  dim <- if (is.null(dim(selected))) c(length(selected), 1L) else dim(selected)
  if (length(dim) == 1L) dim <- c(dim, 1L)
  if (prod(dim) == 0) {
    # R's zero-extent selection, for data (greta allows it): an empty data
    # array of R's dimensions, which has no values to reach a model
    if (node$type == "data") {
      return(as_greta_array_from_node(new_node("data", dim, value = numeric(0))))
    }
    stop("indexing a greta array must select at least one element, except of data ",
         "(this selects none of a greta array of dimension ", paste(node$dim, collapse = " x "),
         ")", call. = FALSE)
  }
  if (n_index == 2L && length(node$dim) == 2L && !missing(i) && missing(j)) {
    # x[i, ]: whole rows. The first column of `selected` holds the row numbers.
    return(new_operation("gather_rows", list(node), dim, index = as.integer(selected[, 1L])))
  }
  new_operation("gather", list(node), dim, index = as.integer(selected))
}

# Records an operation node and returns its greta array.
new_operation <- function(op, parents, dim, ...) {
  as_greta_array_from_node(new_node("operation", dim, parents, op = op, ...))
}

# Whether `i` is an integer vector of positions 1..n, no attributes, no NA:
# an index that selects exactly its own positions.
is_plain_positions <- function(i, n) {
  is.integer(i) && is.null(attributes(i)) && length(i) > 0L && !anyNA(i) &&
    min(i) >= 1L && max(i) <= n
}
