# Constrained variables: simplex_variable(), ordered_variable() and
# cholesky_variable(). Each is a free variable() of the right size, mapped to
# its constrained value by ordinary ops (so it runs on every backend and in
# both precisions without engine code of its own), and the log |Jacobian| of
# that map is added to the model's log density by a log_jacobian term
# (inst/include/lockstep/distributions/log_jacobian.hpp), which the engine
# leaves out when asked for no Jacobian (opt(adjust = FALSE)). The bijections
# are Stan's (reference manual, "Constraint transforms"); see each builder.

#' Constrained variables
#'
#' Variables whose values are constrained jointly, as greta's are:
#' `simplex_variable()` is positive and sums to 1 along its last dimension
#' (each row of a matrix is a simplex), `ordered_variable()` is strictly
#' increasing along its last dimension, and `cholesky_variable()` is the
#' upper-triangular Cholesky factor `U` (with a positive diagonal) of a
#' covariance matrix `t(U) %*% U`, or with `correlation = TRUE` of a
#' correlation matrix (the columns of `U` have unit length, so `t(U) %*% U`
#' has a unit diagonal).
#'
#' They are sampled on an unconstrained scale, as Stan does: a simplex by
#' stick-breaking, an ordered vector as its first element and the logs of its
#' increments, a covariance factor with the logs of its diagonal, a correlation
#' factor through `tanh()` of Stan's canonical partial correlations. The log
#' |Jacobian| of each map is part of the model's log density (and is left out
#' by `opt(adjust = FALSE)`), so with no other term on it a variable is
#' uniform: a simplex is uniform on the simplex (Dirichlet with all
#' concentrations 1), a correlation factor is uniform in the free elements of
#' its lower triangle.
#'
#' Like a [variable()], a constrained variable has no distribution of its own:
#' it cannot be drawn by [calculate()] with `nsim` or [simulate()]. Their
#' initial values are given to [initials()] on the constrained scale, with all
#' their elements (e.g. `initials(p = c(0.2, 0.3, 0.5))`); they are mapped to
#' the free scale by the inverse of the transform, and must be in the
#' variable's support.
#'
#' @param dim for `simplex_variable()` and `ordered_variable()`, the
#'   dimensions: a number `K` for a `1 x K` row vector (as in greta), or a
#'   vector of dimensions whose last is at least 2; for `cholesky_variable()`,
#'   the size `n` of the `n x n` factor, or `c(n, n)`
#' @param correlation `FALSE` for the factor of a covariance matrix, `TRUE`
#'   for the factor of a correlation matrix
#' @return a greta array
#' @examples
#' # probabilities of three categories
#' p <- simplex_variable(3)
#' # two cut points of an ordinal model, and three ordered rows of 4
#' cuts <- ordered_variable(2)
#' o <- ordered_variable(c(3, 4))
#' # the upper Cholesky factor of a 3 x 3 covariance and a correlation matrix
#' u_cov <- cholesky_variable(3)
#' u_cor <- cholesky_variable(3, correlation = TRUE)
#' sigma <- t(u_cov) %*% u_cov
#' y <- as_data(t(c(0.2, 0.5, 0.3)))  # p is a 1 x 3 row vector
#' distribution(y) <- normal(p, 0.1)
#' m <- model(p)
#' @name constrained_variables
NULL

#' @rdname constrained_variables
#' @export
simplex_variable <- function(dim) {
  dim <- check_constrained_dim(dim, "simplex_variable")
  n_dim <- length(dim)
  K <- dim[n_dim]
  R <- prod(dim[-n_dim])
  free <- variable(dim = c(R, K - 1L))
  # Stan's stick-breaking: z_k = ilogit(y_k - log(K - k)) is the fraction of
  # what remains of the stick, r_k = prod_{j < k} (1 - z_j), that x_k takes,
  # and x_K = r_K is the rest. log r comes from one product with a constant
  # triangular matrix: log r_k = -sum_{j < k} log1pe(u_j), u = y - log(K - k).
  # (The offset makes y = 0 the simplex's centre.)
  col <- rep(seq_len(K - 1L), each = R)
  u <- free + matrix(-log(K - col), R, K - 1L)
  before <- outer(seq_len(K - 1L), seq_len(K), `<`) * 1  # [j, k]: j < k
  log_rest <- -log1pe(u) %*% before                          # R x K: log r
  z_then_one <- cbind(ilogit(u), matrix(1, R, 1L))           # z_k, then 1 for x_K
  x <- exp(log_rest) * z_then_one
  # log |J| = sum_k log z_k + log(1 - z_k) + log r_k (k < K): log z = -log1pe(-u),
  # log(1 - z) = -log1pe(u), and log1pe(u_j) appears in log r_k for K - 1 - j
  # of the k < K, hence its weight K - j.
  weight <- matrix(K - col, R, K - 1L)
  add_log_jacobian(-sum(log1pe(-u)) - sum(log1pe(u) * weight))
  constrained_array(x, dim, "simplex", function(value, name) {
    list(list(node = get_node(free), value = simplex_to_free(matrix(value, R, K), name)))
  })
}

# The inverse of the stick-breaking: with the sums of what follows each
# element, rest_k = sum_{j > k} x_j, z_k = x_k / (x_k + rest_k), so
# u_k = logit(z_k) = log x_k - log rest_k. Tail sums rather than 1 - cumsum(x)
# keep the last elements exact, and the forward map then gives x / sum(x).
simplex_to_free <- function(x, name) {
  K <- ncol(x)
  if (any(x <= 0) || any(abs(rowSums(x) - 1) > 1e-8)) {
    stop("the initial values for `", name, "` must be a simplex: positive, and summing to 1 ",
         "(within 1e-8) along its last dimension", call. = FALSE)
  }
  after <- outer(seq_len(K), seq_len(K - 1L), `>`) * 1  # [j, k]: j > k
  rest <- x %*% after
  u <- log(x[, -K, drop = FALSE]) - log(rest)
  u + matrix(log(K - seq_len(K - 1L)), nrow(x), K - 1L, byrow = TRUE)
}

#' @rdname constrained_variables
#' @export
ordered_variable <- function(dim) {
  dim <- check_constrained_dim(dim, "ordered_variable")
  n_dim <- length(dim)
  K <- dim[n_dim]
  R <- prod(dim[-n_dim])
  free <- variable(dim = c(R, K))
  # x_1 = y_1, x_k = x_{k-1} + exp(y_k): the first column and the exponentiated
  # increments, summed by a product with a constant upper-triangular matrix.
  steps <- cbind(free[, 1], exp(free[, 2:K]))
  upto <- outer(seq_len(K), seq_len(K), `<=`) * 1  # [j, k]: j <= k
  x <- steps %*% upto
  add_log_jacobian(sum(free[, 2:K]))
  constrained_array(x, dim, "ordered", function(value, name) {
    list(list(node = get_node(free), value = ordered_to_free(matrix(value, R, K), name)))
  })
}

# The inverse of ordered_variable()'s map: the first column, then the logs of
# the increments.
ordered_to_free <- function(x, name) {
  K <- ncol(x)
  steps <- x[, -1L, drop = FALSE] - x[, -K, drop = FALSE]
  if (any(steps <= 0)) {
    stop("the initial values for `", name, "` must be strictly increasing along its last ",
         "dimension", call. = FALSE)
  }
  cbind(x[, 1L], log(steps))
}

#' @rdname constrained_variables
#' @export
cholesky_variable <- function(dim, correlation = FALSE) {
  if (!is.numeric(dim) || anyNA(dim) || !length(dim) %in% 1:2 || any(dim < 1) ||
      any(dim != round(dim))) {
    stop("`dim` of cholesky_variable() must be a positive whole number n, or c(n, n)",
         call. = FALSE)
  }
  if (length(dim) == 2L && dim[1] != dim[2]) {
    stop("`dim` of cholesky_variable() must be square, but is ",
         paste(dim, collapse = " x "), call. = FALSE)
  }
  if (!is.logical(correlation) || length(correlation) != 1L || is.na(correlation)) {
    stop("`correlation` of cholesky_variable() must be TRUE or FALSE", call. = FALSE)
  }
  n <- as.integer(dim[1])
  made <- if (correlation) correlation_factor(n) else covariance_factor(n)
  constrained_array(made$U, c(n, n), if (correlation) "cholesky_correlation" else "cholesky",
                    function(value, name) {
                      check_upper_factor(value, name, correlation)
                      if (is.null(made$free)) return(list())  # the 1 x 1 correlation factor
                      list(list(node = get_node(made$free), value = made$to_free(value)))
                    })
}

# A cholesky_variable()'s initial value must be in its support: upper
# triangular with a positive diagonal, and for a correlation matrix's factor
# columns of unit length (the rows of L = t(U)).
check_upper_factor <- function(U, name, correlation) {
  if (!is_upper_cholesky(U)) {
    stop("the initial values for `", name, "` must be an upper triangular matrix with a ",
         "positive diagonal (zeros below it)", call. = FALSE)
  }
  if (correlation && any(abs(colSums(U^2) - 1) > 1e-8)) {
    stop("the initial values for `", name, "` must be the upper Cholesky factor of a ",
         "correlation matrix: its columns (the rows of t(U)) must have unit length (within ",
         "1e-8)", call. = FALSE)
  }
}

# The upper factor U = t(L) of a covariance matrix: the diagonal exp(y) (log
# |J| = the sum of those y), the elements above it free. Returns U, the free
# variable and the inverse map (from U to the free values).
covariance_factor <- function(n) {
  free <- variable(dim = n * (n + 1L) / 2L)
  upper <- which(upper.tri(diag(n), diag = TRUE))  # column-major positions
  on_diag <- upper %in% ((seq_len(n) - 1L) * n + seq_len(n))
  diag_free <- free[which(on_diag)]
  U <- zeros(n, n)
  U[upper[on_diag]] <- exp(diag_free)
  if (n > 1L) U[upper[!on_diag]] <- free[which(!on_diag)]
  add_log_jacobian(sum(diag_free))
  to_free <- function(value) {
    y <- value[upper]
    y[on_diag] <- log(y[on_diag])
    y
  }
  list(U = U, free = free, to_free = to_free)
}

# The upper factor U = t(L) of a correlation matrix, by Stan's transform: the
# canonical partial correlations w = tanh(y), one per element below L's
# diagonal, and, row i of L,
#   L[i, j] = w[i, j] * s[i, j] (j < i),  L[i, i] = s[i, i],
#   s[i, j] = sqrt(1 - sum_{k < j} L[i, k]^2) = prod_{k < j} sqrt(1 - w[i, k]^2),
# so that each row has unit length. With a = log(1 - w^2), log s is a constant
# linear map of a (one product), and log |J| = sum_{i > j} log s[i, j] + a[i, j]
# = sum_{i > k} a[i, k] (i - k + 1) / 2 (a[i, k] is in log s[i, j] for k < j < i).
correlation_factor <- function(n) {
  if (n == 1L) {
    # nothing to sample: the 1 x 1 factor of a correlation matrix is 1
    return(list(U = as_data(matrix(1, 1, 1)), free = NULL))
  }
  m <- n * (n - 1L) / 2L
  free <- variable(dim = m)
  lower <- which(lower.tri(diag(n)))  # L's free elements, column-major
  row_of <- row(diag(n))[lower]
  col_of <- col(diag(n))[lower]
  w <- tanh(free)
  # log(1 - tanh(y)^2) = 2 log 2 - 2 y - 2 log1pe(-2 y), finite for any y
  a <- 2 * log(2) - 2 * free - 2 * log1pe(-2 * free)
  # s for the elements below the diagonal, then for the diagonal of rows 2..n
  targets_row <- c(row_of, 2:n)
  targets_col <- c(col_of, 2:n)
  half <- outer(seq_len(m), seq_along(targets_row), function(p, q) {
    0.5 * (row_of[p] == targets_row[q] & col_of[p] < targets_col[q])
  })
  log_s <- t(half) %*% a  # column vector: (m + n - 1) x 1
  s <- exp(log_s)
  below <- w * s[seq_len(m)]
  U <- zeros(n, n)
  U[1, 1] <- 1
  # L[i, j] is U[j, i]
  U[(row_of - 1L) * n + col_of] <- below
  U[(2:n - 1L) * n + 2:n] <- s[m + seq_len(n - 1L)]
  add_log_jacobian(sum(a * ((row_of - col_of + 1) / 2)))
  # The inverse: with T[i, j] = sum_{k >= j} L[i, k]^2 (tail sums of the row),
  # w[i, j] = L[i, j] / sqrt(T[i, j]), since 1 - w^2 = T[i, j + 1] / T[i, j]
  # telescopes to s[i, j] = sqrt(T[i, j] / T[i, 1]); so the forward map gives
  # back each row over its length.
  to_free <- function(value) {
    L <- t(value)
    tails <- t(apply(L^2, 1L, function(r) rev(cumsum(rev(r)))))
    atanh(L[lower] / sqrt(tails[lower]))
  }
  list(U = U, free = free, to_free = to_free)
}

# greta's rule for simplex and ordered variables: a number K is a 1 x K row
# vector, and the last dimension (where the constraint applies) has at least
# two elements.
check_constrained_dim <- function(dim, what) {
  if (!is.numeric(dim) || length(dim) == 0L || anyNA(dim) || any(dim < 1) ||
      any(dim != round(dim))) {
    stop("`dim` of ", what, "() must be a positive whole number or a vector of them",
         call. = FALSE)
  }
  dim <- as.integer(dim)
  if (length(dim) == 1L) dim <- c(1L, dim)
  if (dim[length(dim)] < 2L) {
    stop("the last dimension of `dim` of ", what, "() must be at least 2 (the constraint ",
         "applies along it), but `dim` is ", paste(dim, collapse = " x "), call. = FALSE)
  }
  dim
}

# The rows-by-last-dimension matrix `x` in the variable's dimensions (column-
# major: the first dimensions vary fastest, as the matrix's rows do), marked
# as a constrained variable for print(). `initial_values` maps a value of the
# variable (an array of its dimensions) and its name in initials() to the
# free variable's value (initial_pieces(), R/mcmc.R).
constrained_array <- function(x, dim, constraint, initial_values) {
  if (!identical(as.integer(dim(x)), as.integer(dim))) dim(x) <- dim
  node <- get_node(x)
  node$constraint <- constraint
  node$initial_values <- initial_values
  x
}

# Adds `expr` (a greta array of the free variables; its elements summed) to the
# model's log density as the log |Jacobian| of a constrained variable: a
# distribution node of family log_jacobian whose target is expr, a child of
# expr so that model()'s walk over the DAG (collect_dag) finds it. Its target
# is not data, so log_lik() does not count it as a likelihood, and simulation,
# which walks only towards inputs, never reaches it.
add_log_jacobian <- function(expr) {
  target <- get_node(expr)
  dist <- new_node("distribution", target$dim, parents = list(), family = "log_jacobian",
                   truncation = c(-Inf, Inf), target = target, discrete = FALSE,
                   support = c(-Inf, Inf), param_names = character(),
                   label = "log_jacobian")
  add_child(target, dist)
  invisible(dist)
}

is_log_jacobian <- function(node) {
  identical(node$type, "distribution") && identical(node$family, "log_jacobian")
}
