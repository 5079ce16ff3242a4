#' Functions of greta arrays
#'
#' `exp()`, `log()`, `log1p()`, `sqrt()` and `sum()` work on greta arrays as
#' they do on R arrays; `ilogit()` is the inverse logit, `1 / (1 + exp(-x))`
#' (`plogis()` in R).
#'
#' @param x a greta array
#' @param ... greta arrays or numbers (for `sum()`)
#' @param na.rm ignored: greta arrays have no missing values
#' @return a greta array
#' @examples
#' x <- variable(dim = 3)
#' exp(x)
#' sum(log1p(exp(x)))
#' ilogit(x)
#' @name functions
NULL

#' @rdname functions
#' @export
Math.greta_array <- function(x, ...) {
  supported <- c("exp", "log", "log1p", "sqrt")
  if (!.Generic %in% supported) {
    stop("`", .Generic, "()` is not supported for greta arrays yet (supported: ",
         paste(supported, collapse = ", "), ")", call. = FALSE)
  }
  elementwise_unary(.Generic, x)
}

#' @rdname functions
#' @export
Summary.greta_array <- function(..., na.rm = FALSE) {
  if (.Generic != "sum") {
    stop("`", .Generic, "()` is not supported for greta arrays yet", call. = FALSE)
  }
  parts <- lapply(list(...), function(x) {
    node <- get_node(as.greta_array(x))
    new_operation("sum", list(node), c(1L, 1L))
  })
  Reduce(`+`, parts)
}

#' @rdname functions
#' @export
ilogit <- function(x) {
  if (!is.greta_array(x)) return(stats::plogis(x))
  elementwise_unary("ilogit", x)
}
