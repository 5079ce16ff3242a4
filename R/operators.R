# Arithmetic operators on greta arrays. Each records an operation node; the
# engine computes. Elementwise operators accept operands of equal dimensions,
# or a scalar with anything (greta's broadcasting).

#' Arithmetic operators for greta arrays
#'
#' `+`, `-`, `*` and `/` work elementwise on greta arrays and R numbers, with
#' a scalar broadcast against an array of any dimension; unary minus negates.
#' `%*%` is the matrix product.
#'
#' @param e1,e2,x,y greta arrays or numbers
#' @return a greta array
#' @examples
#' a <- variable(dim = 3)
#' b <- as_data(c(1, 2, 3))
#' a * b + 1
#' -a / 2
#' X <- as_data(matrix(1:6, 3, 2))
#' beta <- variable(dim = 2)
#' X %*% beta
#' @name operators
NULL

#' @rdname operators
#' @export
Ops.greta_array <- function(e1, e2) {
  ops <- c("+" = "add", "-" = "sub", "*" = "mul", "/" = "div")
  if (!.Generic %in% names(ops)) {
    stop("the operator `", .Generic, "` is not supported for greta arrays yet", call. = FALSE)
  }
  if (missing(e2)) {
    if (.Generic == "+") return(e1)
    if (.Generic == "-") return(elementwise_unary("neg", e1))
    stop("the operator `", .Generic, "` needs two operands", call. = FALSE)
  }
  elementwise_binary(ops[[.Generic]], e1, e2, .Generic)
}

elementwise_unary <- function(op, x) {
  node <- get_node(as.greta_array(x))
  new_operation(op, list(node), node$dim)
}

elementwise_binary <- function(op, e1, e2, symbol = op) {
  a <- get_node(as.greta_array(e1, "e1"))
  b <- get_node(as.greta_array(e2, "e2"))
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
`%*%` <- function(x, y) {
  if (!is.greta_array(x) && !is.greta_array(y)) return(base::`%*%`(x, y))
  a <- get_node(as.greta_array(x, "x"))
  b <- get_node(as.greta_array(y, "y"))
  if (length(a$dim) != 2L || length(b$dim) != 2L) {
    stop("`%*%` needs two-dimensional greta arrays", call. = FALSE)
  }
  if (a$dim[2] != b$dim[1]) {
    stop("non-conformable greta arrays in `%*%`: ", paste(a$dim, collapse = " x "), " and ",
         paste(b$dim, collapse = " x "), call. = FALSE)
  }
  new_operation("matmul", list(a, b), c(a$dim[1], b$dim[2]))
}
