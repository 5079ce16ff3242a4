# Array functions of greta arrays: replacement, reshaping, repetition, binding,
# diagonals, outer and Kronecker products, apply() and tapply().
#
# None of them needs a kernel of its own. Each is lowered onto ops the engine
# already has (a gather `x[index]`, concat, elementwise arithmetic, sums, folds
# and matrix products), so every backend runs them and their gradients come
# from those ops' rules: a gather's backward is a scatter-add, so an element
# used twice gets both gradients, and one not used gets none.
#
# The indices are computed in R by applying R's own function to an array of
# element positions (`array(seq_len(n), dim)`): head(), diag(), aperm(),
# kronecker() and `[` of that array say which element of the greta array each
# element of the result comes from, with exactly R's semantics (negative and
# logical indices, matrix indices, recycling).

# -- helpers ---------------------------------------------------------------------

# The 1-based positions of the elements of an array of dimension `dim`.
element_positions <- function(dim) array(seq_len(prod(dim)), dim = dim)

# Dimensions of a selection of positions as greta keeps them: at least two.
kept_dim <- function(positions) {
  dim <- dim(positions)
  if (is.null(dim)) dim <- length(positions)
  if (length(dim) == 1L) dim <- c(dim, 1L)
  as.integer(dim)
}

# A greta array of the elements of `node` at 1-based `positions`, with
# dimension `dim`. Selecting every element in order is `node` itself (greta
# arrays are immutable, so no copy is needed).
gather_positions <- function(node, positions, dim = kept_dim(positions)) {
  dim <- as.integer(dim)  # (before `positions` loses its dimensions)
  positions <- as.integer(positions)
  if (length(positions) == 0L) {
    stop("the result would have no elements: greta arrays have at least one", call. = FALSE)
  }
  if (identical(positions, seq_len(prod(node$dim))) && identical(dim, node$dim)) {
    return(as_greta_array_from_node(node))
  }
  new_operation("gather", list(node), dim, index = positions)
}

# `x` (a greta array or R numbers) expanded to dimension `dim` by taking its
# elements at `positions`: a gather for a greta array; R numbers are expanded
# in R, as data.
expand_to <- function(x, positions, dim, arg) {
  if (is.greta_array(x)) return(gather_positions(get_node(x), positions, dim))
  if (!is.numeric(x) && !is.logical(x)) as_data_array(x, arg)  # says why not
  as_data_array(array(as.numeric(x)[positions], dim = dim), arg)
}

# The elements of nodes `nodes` one after the other, with dimension `dim`.
# Concatenated pairwise as a balanced tree, so that joining k pieces copies
# each element about log2(k) times, not up to k times as a chain would.
concat_balanced <- function(nodes, dim) {
  if (length(nodes) == 1L) return(reshape_node(nodes[[1]], dim))
  while (length(nodes) > 2L) {
    pairs <- seq(1L, length(nodes) - 1L, by = 2L)
    joined <- lapply(pairs, function(k) {
      a <- nodes[[k]]
      b <- nodes[[k + 1L]]
      get_node(new_operation("concat", list(a, b), c(prod(a$dim) + prod(b$dim), 1L)))
    })
    if (length(nodes) %% 2L == 1L) joined[[length(joined) + 1L]] <- nodes[[length(nodes)]]
    nodes <- joined
  }
  new_operation("concat", nodes, dim)
}

# `node` with dimension `dim` (of the same size, or `node` a scalar to fill it).
reshape_node <- function(node, dim) {
  dim <- as.integer(dim)
  if (identical(dim, node$dim)) return(as_greta_array_from_node(node))
  new_operation("gather", list(node), dim,
                index = rep_len(seq_len(prod(node$dim)), prod(dim)))
}

# Dimensions of a greta array, or of R values as as_data() would give them.
dim_of <- function(x) if (is.greta_array(x)) dim(x) else kept_dim(x)

format_dim <- function(dim) paste(dim, collapse = " x ")

# `FUN` as the name of one of the engine's elementwise binary ops: a string,
# or the operator itself.
binary_op_of <- function(FUN, what) {
  ops <- c("*" = "mul", "/" = "div", "+" = "add", "-" = "sub", "^" = "pow", "%%" = "mod",
           "%/%" = "idiv")
  if (is.character(FUN) && length(FUN) == 1L && FUN %in% names(ops)) return(ops[[FUN]])
  if (is.function(FUN)) {
    for (name in names(ops)) if (identical(FUN, get(name, envir = baseenv()))) return(ops[[name]])
  }
  stop("`FUN` of ", what, " on greta arrays must be one of ",
       paste0("\"", names(ops), "\"", collapse = ", "), call. = FALSE)
}

# -- replacement -------------------------------------------------------------------

#' Replace parts of a greta array
#'
#' `x[i] <- value`, `x[i, j] <- value` (and `x[i, j, k] <- value` for arrays,
#' or `x[m] <- value` with a matrix `m` of indices) work as for R arrays: the
#' selected elements of `x` become the elements of `value`, recycled if the
#' number of selected elements is a multiple of its length, as in R. `value`
#' is a greta array or R numbers. `diag(x) <- value` replaces the diagonal of a
#' greta matrix.
#'
#' The result is a new greta array (R assigns it to `x`) computed from both
#' `x` and `value`, so its gradient flows to the elements of `x` that were kept
#' and to `value`. This is how parameters are embedded in a larger array, e.g.
#' a matrix of zeros with some free elements.
#'
#' As in greta, the elements of a variable cannot be replaced (the replaced
#' elements would stay in the model as parameters that nothing uses): build
#' the array with [zeros()] or [ones()], or from an operation, and replace
#' elements of that.
#'
#' @param x a greta array (not a variable)
#' @param i,j,... indices, as for R arrays: numbers, logicals, or a matrix of
#'   indices
#' @param value a greta array or numbers
#' @return a greta array of the dimension of `x`
#' @examples
#' sigma <- variable(lower = 0, dim = 2)
#' rho <- variable(lower = -1, upper = 1)
#' S <- zeros(2, 2)
#' diag(S) <- sigma ^ 2
#' S[1, 2] <- S[2, 1] <- rho * sigma[1] * sigma[2]
#' S
#' x <- ones(4)
#' x[c(1, 3)] <- normal(0, 1, dim = 2)
#' x[4] <- 2
#' @name replace
#' @export
`[<-.greta_array` <- function(x, i, j, ..., value) {
  node <- get_node(x)
  if (node$type == "variable") {
    stop("cannot replace elements of a variable greta array: start from an array that is ",
         "not a variable, e.g. zeros() or ones(), and replace its elements", call. = FALSE)
  }
  if (!is.greta_array(value) && !is.numeric(value) && !is.logical(value)) {
    stop("`value` must be a greta array or numbers to replace elements of a greta array, not ",
         class(value)[1], call. = FALSE)
  }
  if (!missing(i)) check_index_type(i, "i")
  if (!missing(j)) check_index_type(j, "j")
  n_index <- nargs() - 2L
  positions <- element_positions(node$dim)
  selected <- tryCatch(
    if (n_index <= 1L) positions[i] else positions[i, j, ..., drop = FALSE],
    error = function(e) stop("invalid index for replacing elements of a greta array of ",
                             "dimension ", format_dim(node$dim), ": ", conditionMessage(e),
                             call. = FALSE)
  )
  if (anyNA(selected)) {
    stop("index out of range (or NA) for replacing elements of a greta array of dimension ",
         format_dim(node$dim), ": greta arrays cannot grow", call. = FALSE)
  }
  if (length(selected) == 0L) return(x)
  value <- get_node(as.greta_array(value, "value"))
  n <- prod(node$dim)
  m <- prod(value$dim)
  if (length(selected) %% m != 0L) {
    stop("the number of elements to replace (", length(selected), ") is not a multiple of ",
         "the length of `value` (", m, ")", call. = FALSE)
  }
  # the result gathers from c(x, value): element k keeps x[k] unless it is
  # replaced, then it takes its (recycled) element of value. Later
  # assignments to a repeated index win, as in R.
  index <- seq_len(n)
  index[as.integer(selected)] <- n + rep_len(seq_len(m), length(selected))
  both <- get_node(new_operation("concat", list(node, value), c(n + m, 1L)))
  gather_positions(both, index, node$dim)
}

check_index_type <- function(index, arg) {
  if (!is.numeric(index) && !is.logical(index)) {
    stop("index `", arg, "` of a greta array must be numbers or logicals, not ",
         class(index)[1], call. = FALSE)
  }
}

# -- dimensions and construction -----------------------------------------------------

#' Create and reshape greta arrays
#'
#' `zeros()` and `ones()` create data greta arrays of zeros and ones, and
#' `greta_array(data, dim)` one filled with `data` (recycled, as by
#' [base::array()]), as greta does: e.g. as a start for embedding parameters
#' with the replacement syntax (see [replace]). Given a greta array,
#' `greta_array()` reshapes it to `dim`, as `dim(x) <- dim` does.
#'
#' `dim(x) <- value` gives a greta array the dimensions `value` (its elements
#' keep R's column-major order), or, for a scalar greta array, fills an array
#' of those dimensions with it. `dim(x) <- NULL` makes it a column vector.
#'
#' @param ... the dimensions, as numbers or one vector (`zeros(3, 2)` or
#'   `zeros(c(3, 2))`)
#' @param data R numbers or a greta array
#' @param dim the dimensions: a number for a column vector, or a vector
#' @param x a greta array
#' @param value the new dimensions, or `NULL`
#' @return a greta array (data for `zeros()`, `ones()` and `greta_array()` of R
#'   numbers)
#' @examples
#' zeros(3)
#' ones(2, 3)
#' greta_array(1:3, dim = c(3, 2))
#' x <- variable(dim = 6)
#' greta_array(x, dim = c(2, 3))
#' dim(x) <- c(3, 2)
#' dim(x)
#' @name structures
NULL

#' @rdname structures
#' @export
zeros <- function(...) greta_array(0, structure_dim(...))

#' @rdname structures
#' @export
ones <- function(...) greta_array(1, structure_dim(...))

structure_dim <- function(...) {
  dim <- unlist(list(...), use.names = FALSE)
  if (length(dim) == 0L) stop("give the dimensions of the greta array", call. = FALSE)
  check_dim(dim, "dimensions")
}

#' @rdname structures
#' @export
greta_array <- function(data = 0, dim = length(data)) UseMethod("greta_array")

#' @export
greta_array.default <- function(data = 0, dim = length(data)) {
  if (!is.numeric(data) && !is.logical(data)) as_data_array(data, "data")  # says why not
  if (length(data) == 0L) stop("`data` has no elements", call. = FALSE)
  as_data_array(array(as.numeric(data), dim = check_dim(dim)), "data")
}

#' @export
greta_array.greta_array <- function(data = 0, dim = length(data)) {
  `dim<-.greta_array`(data, check_dim(dim))
}

#' @rdname structures
#' @export
`dim<-.greta_array` <- function(x, value) {
  node <- get_node(x)
  n <- prod(node$dim)
  dim <- check_dim(if (is.null(value)) n else value, "dim")
  if (prod(dim) != n && n != 1) {
    stop("dims [product ", prod(dim), "] do not match the length of the greta array [", n,
         "]", call. = FALSE)
  }
  reshape_node(node, dim)
}

#' Permute the dimensions of a greta array
#'
#' `aperm(a, perm)` permutes the dimensions of a greta array as
#' [base::aperm()] does for R arrays: dimension `k` of the result is dimension
#' `perm[k]` of `a`. With `perm = NULL` the dimensions are reversed, so for a
#' matrix `aperm(a)` is `t(a)`. greta arrays of any number of dimensions are
#' permuted; the engine gathers the elements in their new order (a transpose
#' for a matrix), and the gradient flows back to each element.
#'
#' @param a a greta array
#' @param perm a permutation of `seq_along(dim(a))`, or `NULL` to reverse the
#'   dimensions
#' @param resize only `TRUE` (greta arrays always have their dimensions)
#' @param ... ignored
#' @return a greta array of dimension `dim(a)[perm]`
#' @examples
#' x <- variable(dim = c(2, 3, 4))
#' dim(aperm(x, c(3, 1, 2)))
#' m <- variable(dim = c(2, 3))
#' dim(aperm(m))
#' @export
aperm.greta_array <- function(a, perm = NULL, resize = TRUE, ...) {
  d <- dim(a)
  n_dim <- length(d)
  if (is.null(perm)) perm <- rev(seq_len(n_dim))
  if (!is.numeric(perm) || length(perm) != n_dim || anyNA(perm) ||
      !setequal(perm, seq_len(n_dim)) || anyDuplicated(perm)) {
    stop("`perm` of aperm() must be a permutation of 1:", n_dim, " (`a` has dimension ",
         format_dim(d), "), not ", paste(deparse(perm), collapse = ""), call. = FALSE)
  }
  if (!isTRUE(resize)) {
    stop("aperm() of a greta array takes only `resize = TRUE`", call. = FALSE)
  }
  perm <- as.integer(perm)
  if (n_dim == 2L && identical(perm, 2:1)) return(t(a))
  positions <- aperm(element_positions(d), perm)
  gather_positions(get_node(a), positions, dim(positions))
}

# -- repetition, head and tail ------------------------------------------------------

#' Repeat, and take the first or last parts of, greta arrays
#'
#' `rep()` repeats the elements of a greta array as [base::rep()] does (with
#' `times`, `each` and `length.out`) and returns a column vector, as greta
#' does. `head()` and `tail()` keep the first or last `n` rows of a greta
#' array (of each dimension, for a vector `n`), as R's do for arrays; a
#' negative `n` drops the last (first) `-n`.
#'
#' @param x a greta array
#' @param n as for [utils::head()]
#' @param ... for `rep()`: `times`, `each`, `length.out`; for `head()` and
#'   `tail()`: passed to R's methods (`keepnums` is ignored)
#' @return a greta array
#' @examples
#' x <- variable(dim = 3)
#' rep(x, times = 2)
#' rep(x, each = 2, length.out = 5)
#' y <- variable(dim = c(10, 2))
#' head(y)
#' tail(y, 3)
#' @name rep.greta_array
#' @export
rep.greta_array <- function(x, ...) {
  n <- length(x)
  positions <- tryCatch(rep(seq_len(n), ...), error = function(e) {
    stop("invalid arguments to rep() of a greta array: ", conditionMessage(e), call. = FALSE)
  })
  if (length(positions) == 0L) {
    stop("rep() of a greta array must give at least one element", call. = FALSE)
  }
  gather_positions(get_node(x), positions, c(length(positions), 1L))
}

#' @rdname rep.greta_array
#' @importFrom utils head tail
#' @export
head.greta_array <- function(x, n = 6L, ...) {
  check_head_n(n, "head")
  node <- get_node(x)
  gather_positions(node, utils::head(element_positions(node$dim), n, ...))
}

#' @rdname rep.greta_array
#' @export
tail.greta_array <- function(x, n = 6L, ...) {
  check_head_n(n, "tail")
  node <- get_node(x)
  gather_positions(node, utils::tail(element_positions(node$dim), n, ...))
}

check_head_n <- function(n, what) {
  if (!is.numeric(n) || length(n) == 0L || any(n != round(n), na.rm = TRUE)) {
    stop("`n` of ", what, "() must be whole numbers", call. = FALSE)
  }
}

#' @importFrom utils str
#' @export
str.greta_array <- function(object, ...) {
  node <- get_node(object)
  extents <- ifelse(node$dim == 1L, "1", paste0("1:", node$dim))
  shown <- if (node$type == "data") {
    values <- node$value[seq_len(min(10L, length(node$value)))]
    paste(c(format(values, digits = 3), if (length(node$value) > 10L) "..."), collapse = " ")
  } else {
    "?"
  }
  # a constrained variable (R/constrained.R, joint()) is computed from free ones
  type <- if (is.null(node$constraint)) node$type else "variable"
  cat(" 'greta_array' ", type, " num [", paste(extents, collapse = ", "), "] ", shown,
      "\n", sep = "")
  invisible()
}

# -- binding ------------------------------------------------------------------------

#' Combine greta arrays along a dimension
#'
#' `abind()` binds greta arrays (and R arrays and numbers) along dimension
#' `along`, as [abind::abind()] does, with greta's signature: only `along` is
#' used for greta arrays. Arguments must have the same dimensions except along
#' `along`; one with a dimension fewer gets a dimension of extent 1 there.
#' `along` may be a new dimension: `0` (or any value below 1) puts it first,
#' `N + 1` (or any value above `N`) last, and a fraction between two
#' dimensions puts it between them, where `N` is the most dimensions of any
#' argument (the default `along = N` binds along the last dimension).
#'
#' On R values `abind()` calls [abind::abind()] (the abind package must then
#' be installed).
#'
#' @param ... greta arrays, R arrays or numbers
#' @param along the dimension to bind along
#' @param rev.along,new.names,force.array,make.names,use.anon.names,use.first.dimnames,hier.names,use.dnns
#'   as for [abind::abind()]; ignored (with a warning) for greta arrays, which
#'   have no dimnames
#' @return a greta array
#' @examples
#' a <- variable(dim = c(2, 3))
#' b <- variable(dim = c(2, 3))
#' dim(abind(a, b))  # along the last dimension: 2 x 6
#' dim(abind(a, b, along = 1))  # 4 x 3
#' dim(abind(a, b, along = 3))  # a new dimension: 2 x 3 x 2
#' @export
abind <- function(..., along = N, rev.along = NULL, new.names = NULL, force.array = TRUE,
                  make.names = use.anon.names, use.anon.names = FALSE,
                  use.first.dimnames = FALSE, hier.names = FALSE, use.dnns = FALSE) {
  args <- list(...)
  if (any(vapply(args, is.greta_array, logical(1)))) {
    N <- max(vapply(args, function(x) max(2L, length(dim(x))), integer(1)))  # nolint
    ignored <- !is.null(rev.along) || !is.null(new.names) || !isTRUE(force.array) ||
      !identical(use.anon.names, FALSE) || !identical(use.first.dimnames, FALSE) ||
      !identical(hier.names, FALSE) || !identical(use.dnns, FALSE) ||
      !identical(make.names, use.anon.names)
    if (ignored) {
      warning("only `along` is used when abind() binds greta arrays; the other arguments ",
              "are ignored", call. = FALSE)
    }
    return(abind_greta(args, along))
  }
  if (!requireNamespace("abind", quietly = TRUE)) {
    stop("abind() of R arrays (not greta arrays) needs the abind package: ",
         "install.packages(\"abind\")", call. = FALSE)
  }
  call <- match.call()
  call[[1]] <- quote(abind::abind)
  eval(call, parent.frame())
}

abind_greta <- function(args, along) {
  args <- Filter(Negate(is.null), args)
  if (!is.numeric(along) || length(along) != 1L || is.na(along)) {
    stop("`along` of abind() must be a single number", call. = FALSE)
  }
  dims <- lapply(args, dim_of)
  n <- max(lengths(dims))
  # a new dimension where `along` is outside 1..n or between two dimensions
  if (along < 1 || along > n || along != round(along)) {
    n <- n + 1L
    along <- max(1L, min(n, ceiling(along)))
  }
  along <- as.integer(along)
  pre <- seq_len(along - 1L)
  post <- if (along <= n - 1L) along:(n - 1L) else integer()
  dims <- lapply(seq_along(dims), function(k) {
    d <- dims[[k]]
    if (length(d) == n - 1L) d <- c(d[pre], 1L, d[post])
    if (length(d) != n) {
      stop("argument ", k, " of abind() has dimension ", format_dim(d), ", which cannot be ",
           "bound along dimension ", along, " of a ", n, "-dimensional result", call. = FALSE)
    }
    d
  })
  for (axis in seq_len(n)[-along]) {
    extents <- vapply(dims, `[`, integer(1), axis)
    if (any(extents != extents[1])) {
      stop("abind() needs arguments of the same dimensions except along dimension ", along,
           ", but their dimension ", axis, " has extents ", paste(extents, collapse = ", "),
           call. = FALSE)
    }
  }
  dim_out <- dims[[1]]
  dim_out[along] <- sum(vapply(dims, `[`, integer(1), along))
  nodes <- lapply(seq_along(args), function(k) {
    get_node(as.greta_array(args[[k]], paste0("argument ", k, " of abind()")))
  })
  # positions in c(args...) of each element of the result: each argument's
  # positions moved to have `along` last, stacked, and moved back
  perm <- c(seq_len(n)[-along], along)
  offsets <- cumsum(c(0, vapply(nodes, function(x) prod(x$dim), numeric(1))))
  stacked <- unlist(lapply(seq_along(nodes), function(k) {
    aperm(array(offsets[k] + seq_len(prod(dims[[k]])), dims[[k]]), perm)
  }))
  positions <- aperm(array(stacked, dim_out[perm]), order(perm))
  total <- length(positions)
  if (identical(as.integer(positions), seq_len(total))) {
    # along the last dimension: the arguments one after the other
    return(concat_balanced(nodes, dim_out))
  }
  gather_positions(get_node(concat_balanced(nodes, c(total, 1L))), positions, dim_out)
}

# -- diagonals ------------------------------------------------------------------------

#' Diagonals of greta arrays
#'
#' `diag(x)` of a greta matrix is its diagonal, as a column vector; of a greta
#' vector (a column or a row vector), it is a square matrix with `x` on its
#' diagonal and zeros elsewhere. `diag(x, nrow, ncol)` puts `x` (recycled) on
#' the diagonal of an `nrow x ncol` matrix. `diag(x) <- value` replaces the
#' diagonal of a greta matrix (see [replace]). On R values these are base R's
#' functions, so `diag(3)` is still the 3 x 3 identity matrix.
#'
#' A `1 x 1` greta array counts as a matrix: `diag()` of it is itself (as
#' base R's `diag()` of a `1 x 1` matrix is its element), but `diag(x, nrow)`
#' puts it on the diagonal of an `nrow x nrow` matrix.
#'
#' @param x a greta array, or an R value for base R
#' @param nrow,ncol the dimensions of a matrix built from `x`
#' @param names as for [base::diag()]; ignored for greta arrays
#' @param value a greta array or numbers: one number, or one per diagonal
#'   element
#' @return a greta array (for R values, what base R returns)
#' @examples
#' S <- variable(dim = c(3, 3))
#' diag(S)
#' sigma <- variable(lower = 0, dim = 3)
#' diag(sigma)
#' diag(3)
#' @export
diag <- function(x = 1, nrow, ncol, names = TRUE) UseMethod("diag")

#' @export
diag.default <- function(x = 1, nrow, ncol, names = TRUE) {
  # base::diag() counts its arguments (diag(3) is an identity matrix, diag(3, 1)
  # is not), so pass on only those that were given
  args <- list()
  if (!missing(x)) args$x <- x
  if (!missing(nrow)) args$nrow <- nrow
  if (!missing(ncol)) args$ncol <- ncol
  if (!missing(names)) args$names <- names
  do.call(base::diag, args)
}

#' @export
diag.greta_array <- function(x = 1, nrow, ncol, names = TRUE) {
  node <- get_node(x)
  d <- node$dim
  if (length(d) != 2L) {
    stop("diag() needs a two-dimensional greta array (a matrix or a vector), but `x` has ",
         "dimension ", format_dim(d), call. = FALSE)
  }
  is_vector <- min(d) == 1L && max(d) > 1L
  is_scalar <- max(d) == 1L
  build <- is_vector || is_scalar && (!missing(nrow) || !missing(ncol))
  if (!build) {
    if (!missing(nrow) || !missing(ncol)) {
      stop("`nrow` and `ncol` cannot be given when `x` of diag() is a matrix (", format_dim(d),
           ")", call. = FALSE)
    }
    return(gather_positions(node, base::diag(element_positions(d))))
  }
  n <- if (missing(nrow)) prod(d) else check_extent(nrow, "nrow")
  m <- if (missing(ncol)) n else check_extent(ncol, "ncol")
  k <- min(n, m)
  # gather from c(x, 0): the diagonal takes x (recycled), the rest the zero
  size <- prod(d)
  index <- rep(size + 1L, n * m)
  index[(seq_len(k) - 1L) * (n + 1L) + 1L] <- rep_len(seq_len(size), k)
  padded <- get_node(new_operation("concat", list(node, get_node(as_data_array(0, "0"))),
                                   c(size + 1L, 1L)))
  gather_positions(padded, index, c(n, m))
}

check_extent <- function(x, arg) {
  if (!is.numeric(x) || length(x) != 1L || is.na(x) || x < 1 || x != round(x)) {
    stop("`", arg, "` must be a single positive whole number", call. = FALSE)
  }
  as.integer(x)
}

#' @rdname diag
#' @export
`diag<-` <- function(x, value) {
  if (!is.greta_array(x) && !is.greta_array(value)) return(base::`diag<-`(x, value))
  x <- as.greta_array(x, "x")
  d <- dim(x)
  if (length(d) != 2L) {
    stop("`diag<-` needs a two-dimensional greta array, but `x` has dimension ",
         format_dim(d), call. = FALSE)
  }
  k <- min(d)
  if (!length(value) %in% c(1, k)) {
    stop("`value` of `diag<-` must have length 1 or ", k, " (the length of the diagonal), ",
         "not ", length(value), call. = FALSE)
  }
  x[cbind(seq_len(k), seq_len(k))] <- value
  x
}

# -- outer and Kronecker products ---------------------------------------------------------

#' Outer and Kronecker products of greta arrays
#'
#' `outer(X, Y, FUN)` (and `X %o% Y`) combines every element of `X` with every
#' element of `Y`, as [base::outer()] does: element `[i, j]` of the result is
#' `FUN(X[i], Y[j])`. Its dimensions are those of `X` followed by those of
#' `Y`, where a greta vector (a column or row vector) counts as a vector of its
#' length, so the outer product of two greta vectors is a matrix.
#' `kronecker(X, Y, FUN)` (and `X %x% Y`) is the Kronecker product of two
#' greta matrices (or R matrices and numbers), as [base::kronecker()]: block
#' `[i, j]` of the result is `FUN(X[i, j], Y)`.
#'
#' `FUN` is one of the arithmetic operators `"*"` (the default), `"/"`,
#' `"+"`, `"-"`, `"^"`, `"%%"` and `"%/%"`, as a string or the operator itself.
#' Either argument may be R numbers. The engine gathers each operand to the
#' result's size and combines them elementwise; on R values these are base R's
#' functions.
#'
#' @param X,Y greta arrays or R numbers
#' @param FUN an arithmetic operator
#' @param make.dimnames,... passed to base R for R values; ignored for greta
#'   arrays
#' @return a greta array (for R values, what base R returns)
#' @examples
#' a <- variable(dim = 3)
#' b <- variable(dim = 2)
#' outer(a, b)
#' a %o% c(1, 2)
#' A <- variable(dim = c(2, 2))
#' kronecker(A, diag(2))
#' dim(A %x% matrix(1, 3, 2))
#' @export
outer <- function(X, Y, FUN = "*", ...) {
  if (!is.greta_array(X) && !is.greta_array(Y)) return(base::outer(X, Y, FUN, ...))
  op <- binary_op_of(FUN, "outer()")
  dx <- outer_dim(X)
  dy <- outer_dim(Y)
  nx <- prod(dx)
  ny <- prod(dy)
  dim <- c(dx, dy)
  a <- expand_to(X, rep(seq_len(nx), times = ny), dim, "X")
  b <- expand_to(Y, rep(seq_len(ny), each = nx), dim, "Y")
  elementwise_binary(op, a, b, "outer()")
}

# outer()'s dimensions of an operand: a greta vector counts by its length.
outer_dim <- function(x) {
  d <- dim(x)
  if (is.null(d)) return(length(x))
  if (is.greta_array(x) && length(d) == 2L && min(d) == 1L) return(prod(d))
  as.integer(d)
}

#' @rdname outer
#' @export
`%o%` <- function(X, Y) outer(X, Y)

#' @rdname outer
#' @export
kronecker <- function(X, Y, FUN = "*", make.dimnames = FALSE, ...) {
  if (!is.greta_array(X) && !is.greta_array(Y)) {
    return(base::kronecker(X, Y, FUN = FUN, make.dimnames = make.dimnames, ...))
  }
  op <- binary_op_of(FUN, "kronecker()")
  dx <- kronecker_dim(X, "X")
  dy <- kronecker_dim(Y, "Y")
  dim <- dx * dy
  a <- expand_to(X, base::kronecker(element_positions(dx), array(1L, dy)), dim, "X")
  b <- expand_to(Y, base::kronecker(array(1L, dx), element_positions(dy)), dim, "Y")
  elementwise_binary(op, a, b, "kronecker()")
}

kronecker_dim <- function(x, arg) {
  d <- dim_of(x)
  if (length(d) != 2L) {
    stop("kronecker() of greta arrays needs two-dimensional arguments, but `", arg,
         "` has dimension ", format_dim(d), call. = FALSE)
  }
  d
}

#' @rdname outer
#' @export
`%x%` <- function(X, Y) kronecker(X, Y)

# -- apply and tapply -------------------------------------------------------------------

#' Apply a function over the margins or groups of a greta array
#'
#' `apply(X, MARGIN, FUN)` applies `FUN` to each row (`MARGIN = 1`), column
#' (`MARGIN = 2`) or other margin of a greta array, as [base::apply()] does,
#' for the functions greta allows: `"sum"`, `"max"`, `"mean"`, `"min"` and
#' `"prod"` give a column vector of one value per slice (an array of dimension
#' `dim(X)[MARGIN]` for several margins); `"cumsum"` and `"cumprod"` give, as
#' base R does, a matrix with the cumulative values of each slice in a column.
#'
#' `tapply(X, INDEX, FUN)` applies `FUN` (`"sum"`, `"max"`, `"mean"`,
#' `"min"` or `"prod"`) to the elements of a greta column vector `X` in each
#' group of `INDEX`, R values (numbers, strings or a factor) of the same
#' length, as greta does: the result is a column vector with one element per
#' group present in `INDEX`, in sorted order. Elements whose `INDEX` is `NA`
#' are left out, as base R leaves them out. With a list of groupings (factors,
#' or vectors that become factors), as base R: an array with a dimension per
#' grouping, of its number of levels, one cell per combination in base R's
#' order; a combination no element has takes `default`, which must then be a
#' number (e.g. `default = 0`: a greta array cannot hold base R's `NA`).
#'
#' `FUN` is a name or the function itself (e.g. `sum`). Sums and means over the
#' rows or columns of a matrix are row and column sums. Otherwise `"sum"`,
#' `"max"`, `"min"` and `"prod"` are one grouped reduction, whatever the number
#' of slices or groups: for `tapply()` the elements of `X` reduced by group,
#' for `apply()` the elements of `X` reduced by the slice they belong to. Each
#' group is reduced in the order of its elements (sums in double precision), so
#' results do not depend on the backend; the gradient of `"max"` and `"min"`
#' goes to the first maximum or minimum of each group (`which.max()`'s), and
#' that of `"prod"` handles zeros exactly. `"mean"` is the sum divided by the
#' number of elements. `"cumsum"` and `"cumprod"` are computed slice by slice
#' (one gather and one cumulative op for each).
#'
#' On R values these are base R's functions.
#'
#' @param X a greta array (for `tapply()`, a column vector), or an R value
#' @param MARGIN the dimensions to apply over, as numbers
#' @param INDEX R values, one per element of `X`
#' @param FUN the function to apply
#' @param ...,simplify passed to base R for R values; ignored for greta arrays
#' @param default for `tapply()`, the value of a cell that no element falls in
#'   (with several groupings; see Details)
#' @return a greta array (for R values, what base R returns)
#' @examples
#' X <- variable(dim = c(4, 3))
#' apply(X, 1, "max")
#' apply(X, 2, sum)
#' apply(X, 2, "cumsum")
#' y <- variable(dim = 6)
#' tapply(y, c(1, 1, 2, 2, 2, 3), "sum")
#' tapply(y, c("a", "b", "a", "b", "a", "b"), mean)
#' # two groupings: a 2 x 3 array of sums, one per combination
#' tapply(y, list(c(1, 2, 1, 2, 1, 2), c("u", "v", "w", "u", "v", "w")), "sum")
#' @export
apply <- function(X, MARGIN, FUN, ..., simplify = TRUE) UseMethod("apply")

#' @export
apply.default <- function(X, MARGIN, FUN, ..., simplify = TRUE) {
  base::apply(X, MARGIN, FUN, ..., simplify = simplify)
}

#' @export
apply.greta_array <- function(X, MARGIN, FUN = c("sum", "max", "mean", "min", "prod",
                                                 "cumsum", "cumprod"), ...,
                              simplify = TRUE) {
  fun <- function_name(FUN, c("sum", "max", "mean", "min", "prod", "cumsum", "cumprod"),
                       "apply()")
  node <- get_node(X)
  d <- node$dim
  margin <- check_margin(MARGIN, length(d))
  slice_axes <- seq_along(d)[-margin]
  slice_size <- prod(d[slice_axes])
  slices <- prod(d[margin])
  if (fun %in% c("cumsum", "cumprod")) {
    dim_out <- c(slice_size, d[margin])
  } else {
    dim_out <- if (length(margin) == 1L) c(d[margin], 1L) else d[margin]
  }
  if (fun %in% c("sum", "mean") && length(d) == 2L && length(margin) == 1L) {
    # rows or columns of a matrix: the engine's row and column sums
    f <- switch(paste0(fun, margin), sum1 = rowSums, sum2 = colSums, mean1 = rowMeans,
                mean2 = colMeans)
    return(f(X))
  }
  # column k of `by_slice` holds the positions of the elements of slice k
  by_slice <- matrix(aperm(element_positions(d), c(slice_axes, margin)), slice_size, slices)
  if (!fun %in% c("cumsum", "cumprod")) {
    # X's elements as a column, grouped by their slice: one grouped reduction
    slice_of <- integer(prod(d))
    slice_of[as.vector(by_slice)] <- rep(seq_len(slices), each = slice_size)
    column <- get_node(reshape_node(node, c(prod(d), 1L)))
    return(reshape_node(get_node(tapply_groups(column, slice_of, slices, fun)), dim_out))
  }
  parts <- lapply(seq_len(slices), function(k) {
    slice <- get_node(gather_positions(node, by_slice[, k], c(slice_size, 1L)))
    get_node(new_operation(fun, list(slice), c(slice_size, 1L)))
  })
  concat_balanced(parts, dim_out)
}

check_margin <- function(MARGIN, n_dim) {
  if (is.greta_array(MARGIN)) {
    stop("`MARGIN` of apply() must be R numbers, not a greta array", call. = FALSE)
  }
  if (!is.numeric(MARGIN) || length(MARGIN) == 0L || anyNA(MARGIN) ||
      any(MARGIN != round(MARGIN)) || any(MARGIN < 1) || any(MARGIN > n_dim) ||
      anyDuplicated(MARGIN)) {
    stop("`MARGIN` of apply() on a greta array must be distinct dimension numbers between 1 ",
         "and ", n_dim, call. = FALSE)
  }
  as.integer(MARGIN)
}

# `FUN` as one of the names `allowed`: a name, or the base function itself.
function_name <- function(FUN, allowed, what) {
  if (is.character(FUN) && length(FUN) >= 1L && identical(FUN, allowed)) return(allowed[1])
  if (is.character(FUN) && length(FUN) == 1L && FUN %in% allowed) return(FUN)
  if (is.function(FUN)) {
    # base's function, or lockstep's own that masks it (sum, max, ...: R/functions.R)
    for (name in allowed) {
      if (identical(FUN, get(name, envir = baseenv())) ||
          identical(FUN, get(name, envir = topenv()))) return(name)
    }
  }
  stop("`FUN` of ", what, " on a greta array must be one of ",
       paste0("\"", allowed, "\"", collapse = ", "), " (a name, or the function itself)",
       call. = FALSE)
}

#' @rdname apply
#' @export
tapply <- function(X, INDEX, FUN = NULL, ..., default = NA, simplify = TRUE) {
  UseMethod("tapply")
}

#' @export
tapply.default <- function(X, INDEX, FUN = NULL, ..., default = NA, simplify = TRUE) {
  base::tapply(X, INDEX, FUN, ..., default = default, simplify = simplify)
}

#' @export
tapply.greta_array <- function(X, INDEX, FUN = c("sum", "max", "mean", "min", "prod"), ...,
                               default = NA, simplify = TRUE) {
  fun <- function_name(FUN, c("sum", "max", "mean", "min", "prod"), "tapply()")
  node <- get_node(X)
  if (length(node$dim) != 2L || node$dim[2] != 1L) {
    stop("`X` of tapply() must be a greta column vector (n x 1), but has dimension ",
         format_dim(node$dim), call. = FALSE)
  }
  if (is.greta_array(INDEX)) {
    stop("`INDEX` of tapply() must be R values, not a greta array", call. = FALSE)
  }
  n <- node$dim[1]
  if (is.list(INDEX) && !is.data.frame(INDEX) && length(INDEX) == 1L) INDEX <- INDEX[[1]]
  if (is.list(INDEX)) return(tapply_cells(node, INDEX, fun, default))
  if (!is.atomic(INDEX) || !is.null(dim(INDEX)) && length(dim(INDEX)) > 1L &&
      min(dim(INDEX)) > 1L) {
    stop("`INDEX` of tapply() on a greta array must be a vector, or a list of them (one ",
         "grouping each)", call. = FALSE)
  }
  if (length(INDEX) != n) {
    stop("`INDEX` of tapply() must have one value per element of `X` (", n, "), but has ",
         length(INDEX), call. = FALSE)
  }
  groups <- sort(unique(INDEX[!is.na(INDEX)]))
  if (length(groups) == 0L) stop("`INDEX` of tapply() has no values that are not NA", call. = FALSE)
  group <- match(INDEX, groups)
  tapply_groups(node, group, length(groups), fun)
}

# tapply() over several groupings (a list of factors, or of vectors, which
# become factors), as base R: an array of dimension the numbers of levels,
# one cell per combination, named by the levels. A cell no element falls in
# takes `default`, which must then be a number (base R's NA cannot be held
# by a greta array).
tapply_cells <- function(node, INDEX, fun, default) {
  n <- node$dim[1]
  lengths_ok <- vapply(INDEX, function(f) is.atomic(f) && is.null(dim(f)) && length(f) == n,
                       logical(1))
  if (length(INDEX) == 0L || !all(lengths_ok)) {
    stop("each grouping in the list `INDEX` of tapply() must be a vector (or factor) with ",
         "one value per element of `X` (", n, ")", call. = FALSE)
  }
  factors <- lapply(INDEX, as.factor)
  levels <- lapply(factors, levels)
  dims <- lengths(levels)
  # the cell of each element, column-major as base R's (NA: left out)
  cell <- rep(1L, n); stride <- 1L
  for (k in seq_along(factors)) {
    cell <- cell + (as.integer(factors[[k]]) - 1L) * stride
    stride <- stride * dims[k]
  }
  present <- sort(unique(cell[!is.na(cell)]))
  if (length(present) == 0L) stop("`INDEX` of tapply() has no values that are not NA", call. = FALSE)
  reduced <- tapply_groups(node, match(cell, present), length(present), fun)
  cells <- prod(dims)
  if (length(present) < cells) {
    if (!is.numeric(default) || length(default) != 1L || !is.finite(default)) {
      stop(cells - length(present), " of the ", cells, " combinations of the groupings in ",
           "`INDEX` have no elements: give tapply() a number for them, e.g. `default = 0` ",
           "(base R's NA cannot be a value of a greta array)", call. = FALSE)
    }
    # the reduced cells, then `default`, gathered into every cell's place
    where <- match(seq_len(cells), present)
    where[is.na(where)] <- length(present) + 1L
    reduced <- c(reduced, default)[where]
  }
  reshape_node(get_node(reduced), unname(dims))
}

# Reduces the elements of column vector `node` by group (`group[i]` in 1..G,
# or NA to leave element i out), giving a G x 1 greta array: one segment op
# (the engine's grouped reduction, kernels/segment.hpp), however many groups
# there are. A mean is the sum over the group's count.
tapply_groups <- function(node, group, G, fun) {
  op <- if (fun == "mean") "sum" else fun
  index <- ifelse(is.na(group), 0L, as.integer(group))  # (0: left out)
  out <- new_operation(paste0("segment_", op), list(node), c(G, 1L), index = index)
  if (fun == "mean") out / tabulate(group, nbins = G) else out
}
