# Arrays of values not known until the model is sampled, printed as greta
# prints them: `?` for each unknown (NA) value.

#' Arrays of unknown values
#'
#' `as.unknowns()` marks an R array or matrix whose `NA` values stand for
#' values not known until the model is sampled, so that it prints as greta
#' prints a greta array: `?` for each unknown value. `print()` of a greta
#' array uses it. (greta exports the same.)
#'
#' @param x an array, matrix or vector (`NA` for each unknown value), or an
#'   `unknowns` object
#' @param ... passed to [print.default()]
#' @return `as.unknowns()`: `x` with class `unknowns` added (a vector becomes
#'   a one-column matrix); `print()`: `x`, invisibly
#' @examples
#' u <- as.unknowns(matrix(c(1, NA, 3, NA), 2))
#' u
#' @export
as.unknowns <- function(x) {
  UseMethod("as.unknowns")
}

#' @export
as.unknowns.unknowns <- function(x) x

#' @export
as.unknowns.default <- function(x) {
  if (!is.atomic(x) || !(is.numeric(x) || is.logical(x) || is.character(x))) {
    stop("`x` of as.unknowns() must be a numeric array, matrix or vector, not ",
         class(x)[1], call. = FALSE)
  }
  if (is.null(dim(x))) x <- matrix(x, ncol = 1)
  class(x) <- c("unknowns", if (length(dim(x)) == 2L) "matrix", "array")
  x
}

#' @rdname as.unknowns
#' @export
print.unknowns <- function(x, ...) {
  shown <- unclass(x)
  # (as greta: known values as they are, and " ?" for the others)
  if (anyNA(shown)) shown[is.na(shown)] <- " ?"
  print.default(shown, quote = FALSE, ...)
  invisible(x)
}
