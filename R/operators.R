# Arithmetic operators on greta arrays. Each records an operation node; the
# engine computes. Elementwise operators accept operands of equal dimensions,
# or a scalar with anything (greta's broadcasting).

#' Arithmetic, comparison and logical operators for greta arrays
#'
#' `+`, `-`, `*`, `/`, `^`, `%%` and `%/%` work elementwise on greta arrays
#' and R numbers, with a scalar broadcast against an array of any dimension;
#' unary minus negates. `%*%` is the matrix product. `atan2(y, x)` is the
#' elementwise angle of the points `(x, y)`, as [base::atan2()].
#'
#' Values follow R: `x ^ y` is `NaN` for a negative `x` and a non-integer `y`,
#' `x %% y` has the sign of `y` (`NaN` for `y = 0`) and `x %/% y` is
#' `floor(x / y)`, so that `x == y * (x %/% y) + x %% y`.
#'
#' @section Gradients: As greta's. `x ^ y` has gradient `y * x ^ (y - 1)` with
#'   respect to `x` and `x ^ y * log(x)` with respect to `y` for `x > 0`, and 0
#'   with respect to `y` where `x <= 0` (where a power of a negative base is
#'   defined at all, it is only so at integer `y`). `x %% y` has gradient 1
#'   with respect to `x` and `-(x %/% y)` with respect to `y` (the derivatives
#'   of `x - y * floor(x / y)` between its steps). `x %/% y` is a step function
#'   and has gradient 0 with respect to both.
#'
#' The comparisons `>`, `<`, `>=`, `<=`, `==` and `!=` and the logical
#' operators `!`, `&` and `|` work elementwise too, as greta's do: the result
#' is a greta array of 1 where the condition holds and 0 where it does not
#' (`!x`, `x & y` and `x | y` treat nonzero values as true). On data they are
#' computed at once, as R computes them; of parameters they are step
#' functions, with gradient 0.
#'
#' lockstep masks [base::atan2()] with a function that calls base R for R
#' values.
#'
#' @param e1,e2,x,y greta arrays or numbers
#' @return a greta array (for `atan2()` of R values, what base R returns)
#' @examples
#' a <- variable(dim = 3)
#' b <- as_data(c(1, 2, 3))
#' a * b + 1
#' -a / 2
#' a ^ 2 + b ^ a
#' b %% 2
#' atan2(a, b)
#' # comparisons and logical operators: 1 where true, 0 where false
#' b > 1.5
#' (b > 1) & (b < 3)
#' a >= b
#' X <- as_data(matrix(1:6, 3, 2))
#' beta <- variable(dim = 2)
#' X %*% beta
#' @name operators
NULL

#' @rdname operators
#' @export
Ops.greta_array <- function(e1, e2) {
  ops <- arithmetic_operators
  # errors about an operand (missing values) name it as the user wrote it
  names <- c(operand_name(substitute(e1)), if (!missing(e2)) operand_name(substitute(e2)))
  if (.Generic %in% c(">", "<", ">=", "<=", "==", "!=", "!", "&", "|")) {
    return(compare_or_combine(.Generic, e1, if (!missing(e2)) e2, names))
  }
  if (!.Generic %in% names(ops)) {
    stop("the operator `", .Generic, "` is not supported for greta arrays (supported: ",
         paste(c(names(ops), "comparisons", "!, & and |"), collapse = ", "), ")", call. = FALSE)
  }
  if (missing(e2)) {
    if (.Generic == "+") return(e1)
    if (.Generic == "-") return(elementwise_unary("neg", e1))
    stop("the operator `", .Generic, "` needs two operands", call. = FALSE)
  }
  elementwise_binary(ops[[.Generic]], e1, e2, .Generic, names)
}

# An operand's expression as the user wrote it, for messages (shortened).
operand_name <- function(expr) {
  text <- paste(deparse(expr, width.cutoff = 60L), collapse = " ")
  if (nchar(text) > 40) paste0(substr(text, 1, 37), "...") else text
}

# R's arithmetic operators and the engine's binary ops (ops.def) they lower to.
arithmetic_operators <- c("+" = "add", "-" = "sub", "*" = "mul", "/" = "div", "^" = "pow",
                          "%%" = "mod", "%/%" = "idiv")

# A comparison or logical operator, elementwise with greta's broadcasting:
# 1 where it holds and 0 where not, as greta gives (R's TRUE and FALSE as
# numbers). On data alone R computes it; otherwise the comparisons are the
# engine's greater, greater_equal and equal ops (math/binary.hpp; a step
# function: its gradient is 0, as greta's is), and the logical operators are
# made of sign() and abs(): a nonzero x is |sign(x)|.
compare_or_combine <- function(op, e1, e2 = NULL, names = c("e1", "e2")) {
  a <- as.greta_array(e1, names[1])
  b <- if (!is.null(e2)) as.greta_array(e2, names[2])
  dim <- if (is.null(b)) dim(a) else broadcast_dim(dim(a), dim(b), op)
  data_value <- function(x) {
    node <- get_node(x)
    if (identical(node$type, "data")) as.numeric(node$value)
  }
  va <- data_value(a)
  vb <- if (!is.null(b)) data_value(b)
  if (!is.null(va) && (is.null(b) || !is.null(vb))) {
    f <- get(op, envir = baseenv())
    value <- if (is.null(b)) f(va) else f(va, vb)
    return(as_data(array(as.numeric(value), dim = dim)))
  }
  nonzero <- function(x) abs(sign(x))
  compare <- function(name, x, y) elementwise_binary(name, x, y, op)
  switch(op,
         ">" = compare("greater", a, b), "<" = compare("greater", b, a),
         ">=" = compare("greater_equal", a, b), "<=" = compare("greater_equal", b, a),
         "==" = compare("equal", a, b), "!=" = 1 - compare("equal", a, b),
         "!" = 1 - nonzero(a),
         "&" = nonzero(a) * nonzero(b),
         "|" = {
           na <- nonzero(a)
           nb <- nonzero(b)
           na + nb - na * nb
         })
}

elementwise_unary <- function(op, x) {
  node <- get_node(as.greta_array(x))
  new_operation(op, list(node), node$dim)
}

elementwise_binary <- function(op, e1, e2, symbol = op, names = c("e1", "e2")) {
  a <- get_node(as.greta_array(e1, names[1]))
  b <- get_node(as.greta_array(e2, names[2]))
  new_operation(op, list(a, b), broadcast_dim(a$dim, b$dim, symbol))
}

# Dimensions of an elementwise result: equal dims, or a scalar with anything.
broadcast_dim <- function(a, b, what) {
  if (identical(a, b)) return(a)
  if (prod(a) == 1) return(b)
  if (prod(b) == 1) return(a)
  stop("cannot ", what, " greta arrays of incompatible dimensions: ",
       paste(a, collapse = " x "), " and ", paste(b, collapse = " x "),
       " (dimensions must match, or one must be a scalar)", call. = FALSE)
}

#' @rdname operators
#' @export
atan2 <- function(y, x) {
  if (!is.greta_array(y) && !is.greta_array(x)) return(base::atan2(y, x))
  elementwise_binary("atan2", y, x, "atan2")
}

#' @rdname operators
#' @export
`%*%` <- function(x, y) {
  if (!is.greta_array(x) && !is.greta_array(y)) return(base::`%*%`(x, y))
  a <- get_node(as.greta_array(x, operand_name(substitute(x))))
  b <- get_node(as.greta_array(y, operand_name(substitute(y))))
  if (length(a$dim) != 2L || length(b$dim) != 2L) {
    stop("`%*%` needs two-dimensional greta arrays", call. = FALSE)
  }
  if (a$dim[2] != b$dim[1]) {
    stop("non-conformable greta arrays in `%*%`: ", paste(a$dim, collapse = " x "), " and ",
         paste(b$dim, collapse = " x "), call. = FALSE)
  }
  new_operation("matmul", list(a, b), c(a$dim[1], b$dim[2]))
}

#' Sweep a row or column vector out of a greta array
#'
#' `sweep(x, MARGIN, STATS, FUN)` combines each row (`MARGIN = 1`) or each
#' column (`MARGIN = 2`) of a two-dimensional greta array `x` with the matching
#' element of `STATS`, as [base::sweep()] does: with `MARGIN = 1` the result's
#' element `[i, j]` is `FUN(x[i, j], STATS[i])`, with `MARGIN = 2` it is
#' `FUN(x[i, j], STATS[j])`. `FUN` is one of `"+"`, `"-"`, `"*"` and `"/"`.
#'
#' The arithmetic operators keep greta's rule (operands of equal dimensions, or
#' a scalar), so `sweep()` is how a vector is applied across a matrix, e.g. to
#' scale the columns of a matrix of random effects by their standard
#' deviations. The engine reads `STATS` once per row or column; nothing of the
#' matrix's size is built from it.
#'
#' lockstep masks [base::sweep()] with a function that dispatches on greta
#' arrays and calls base R for R values.
#'
#' @param x a greta array with two dimensions (or an R array, for base R)
#' @param MARGIN `1` (rows) or `2` (columns)
#' @param STATS a greta array or numbers: a vector (either a column or a row
#'   vector) of length `nrow(x)` for `MARGIN = 1` or `ncol(x)` for `MARGIN = 2`
#' @param FUN `"+"`, `"-"` (the default, as in base R), `"*"` or `"/"`, as a
#'   string or the operator itself
#' @param check.margin,... passed to [base::sweep()] for R values; ignored for
#'   greta arrays, whose `STATS` must have the exact length
#' @return a greta array of the dimensions of `x` (for R values, what base R
#'   returns)
#' @examples
#' z <- variable(dim = c(4, 3))
#' sigma <- variable(lower = 0, dim = 3)
#' gamma <- sweep(z, 2, sigma, "*")  # column j scaled by sigma[j]
#' centred <- sweep(z, 1, c(1, 2, 3, 4))  # i subtracted from row i
#' dim(gamma)
#' # on R values, base R
#' sweep(matrix(1:6, 2), 2, c(10, 20, 30), "+")
#' @export
sweep <- function(x, MARGIN, STATS, FUN = "-", check.margin = TRUE, ...) UseMethod("sweep")

#' @export
sweep.default <- function(x, MARGIN, STATS, FUN = "-", check.margin = TRUE, ...) {
  if (is.greta_array(STATS)) return(sweep.greta_array(as.greta_array(x, "x"), MARGIN, STATS, FUN))
  base::sweep(x, MARGIN, STATS, FUN = FUN, check.margin = check.margin, ...)
}

#' @export
sweep.greta_array <- function(x, MARGIN, STATS, FUN = "-", check.margin = TRUE, ...) {
  node <- get_node(x)
  if (length(node$dim) != 2L) {
    stop("sweep() needs a two-dimensional greta array, but `x` has dimension ",
         paste(node$dim, collapse = " x "), call. = FALSE)
  }
  if (!is.numeric(MARGIN) || length(MARGIN) != 1L || !MARGIN %in% c(1, 2)) {
    stop("`MARGIN` of sweep() on a greta array must be 1 (rows) or 2 (columns)", call. = FALSE)
  }
  op <- sweep_op(FUN)
  n <- node$dim[MARGIN]
  vector_dim <- if (MARGIN == 1) c(n, 1L) else c(1L, n)
  stats <- sweep_stats(STATS, n, vector_dim, MARGIN)
  new_operation(op, list(node, stats), node$dim)
}

sweep_op <- function(FUN) {
  ops <- c("+" = "add", "-" = "sub", "*" = "mul", "/" = "div")
  if (is.character(FUN) && length(FUN) == 1L && FUN %in% names(ops)) return(ops[[FUN]])
  if (is.function(FUN)) {
    for (name in names(ops)) if (identical(FUN, get(name, envir = baseenv()))) return(ops[[name]])
  }
  stop("`FUN` of sweep() on a greta array must be one of \"+\", \"-\", \"*\" and \"/\"",
       call. = FALSE)
}

# STATS as a node of dimension `vector_dim` (n x 1 for rows, 1 x n for columns):
# R numbers become data of that shape, a greta vector of the other orientation
# is transposed.
sweep_stats <- function(STATS, n, vector_dim, MARGIN) {
  what <- if (MARGIN == 1) "nrow(x)" else "ncol(x)"
  if (!is.greta_array(STATS)) {
    if (!is.numeric(STATS) && !is.logical(STATS)) as_data_array(STATS, "STATS")  # says why not
    if (length(STATS) != n) {
      stop("`STATS` of sweep() must have length ", what, " = ", n, ", but has length ",
           length(STATS), call. = FALSE)
    }
    return(get_node(as_data_array(array(as.numeric(STATS), dim = vector_dim), "STATS")))
  }
  node <- get_node(STATS)
  if (length(node$dim) != 2L || min(node$dim) != 1L || prod(node$dim) != n) {
    stop("`STATS` of sweep() must be a vector of length ", what, " = ", n,
         ", but is a greta array of dimension ", paste(node$dim, collapse = " x "), call. = FALSE)
  }
  if (identical(node$dim, as.integer(vector_dim))) return(node)
  get_node(new_operation("transpose", list(node), vector_dim))
}
