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
  as_greta_array_from_node(new_node("data", dim, value = as.numeric(x)))
}
