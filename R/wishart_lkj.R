# Distributions over matrices: lkj_correlation() and wishart(), with greta's
# arguments. As multivariate distributions (R/multivariate.R) their log
# densities are expressions of ordinary ops, built by model() and added as a
# term of family target. As priors they create a matrix variable from a
# cholesky_variable() U (R/constrained.R): the matrix is t(U) %*% U, U is
# kept on its node (`cholesky_factor`), and the density term is written on U
# directly (no chol() of the variable), including the log |Jacobian| of the
# map U -> t(U) %*% U, so that the matrix has the distribution's density. On
# data the density is that of the data matrix, through chol() of the data.

#' Distributions over matrices
#'
#' `lkj_correlation()` is the LKJ distribution (Lewandowski, Kurowicka and Joe,
#' 2009) over `dimension x dimension` correlation matrices, with density
#' proportional to `det(Omega)^(eta - 1)`: `eta = 1` is uniform over
#' correlation matrices, larger `eta` favours weaker correlations. `wishart()`
#' is the Wishart distribution over `k x k` covariance matrices with `df`
#' degrees of freedom and scale matrix `Sigma` (that of [stats::rWishart()]:
#' the mean is `df * Sigma`), with density
#' `det(W)^((df - k - 1) / 2) exp(-tr(Sigma^-1 W) / 2) /
#' (2^(df k / 2) det(Sigma)^(df / 2) Gamma_k(df / 2))`.
#'
#' Used on their own they create a variable with that prior, a symmetric
#' matrix `t(U) %*% U` of a [cholesky_variable()] `U` (with `correlation =
#' TRUE` for `lkj_correlation()`); the prior's log density is written on `U`
#' and includes the log |Jacobian| of `U -> t(U) %*% U` (for the LKJ
#' distribution on the factor it is Stan's `lkj_corr_cholesky`). With
#' [distribution()] they are the likelihood of a data matrix: a correlation
#' matrix (symmetric, positive definite, with a unit diagonal) or a covariance
#' matrix (symmetric, positive definite). As in greta (TensorFlow
#' Probability), both log densities include their normalising constants.
#'
#' When `Sigma` of `wishart()` is `chol2symm(S)` (or a `wishart()` or
#' `lkj_correlation()` variable), its Cholesky factor `S` is used directly, as
#' greta does: `Sigma` is not factorised again (`S` must then be upper
#' triangular with a positive diagonal, as [chol2symm()] requires).
#'
#' [calculate()] with `nsim` and [simulate()] draw them: `wishart()` with
#' [stats::rWishart()] (by the Bartlett decomposition when `df < k`),
#' `lkj_correlation()` by the C-vine method of Lewandowski, Kurowicka and Joe
#' (2009). With data, [log_lik()] gives one column per matrix (one
#' realisation): its log density at each draw, normalising constant included.
#'
#' @param eta the positive concentration of the LKJ distribution (a number or a
#'   `1 x 1` greta array)
#' @param dimension the number of rows and columns of the correlation matrix
#'   (at least 2)
#' @param df the degrees of freedom of the Wishart distribution (a number or a
#'   `1 x 1` greta array, greater than `k - 1`)
#' @param Sigma the positive definite `k x k` scale matrix of the Wishart
#'   distribution
#' @return a greta array: a `dimension x dimension` (or `k x k`) variable
#'   following the distribution
#' @examples
#' # a 3 x 3 correlation matrix and standard deviations: a covariance matrix
#' Omega <- lkj_correlation(2, dimension = 3)
#' sds <- lognormal(0, 1, dim = 3)
#' Sigma <- (sds %*% t(sds)) * Omega
#' # a Wishart prior on a precision matrix
#' W <- wishart(5, diag(2))
#' # an observed correlation matrix with an unknown concentration
#' eta <- variable(lower = 0)
#' R <- as_data(matrix(c(1, 0.3, 0.3, 1), 2, 2))
#' distribution(R) <- lkj_correlation(eta)
#' # an observed covariance matrix with an unknown scale
#' V <- as_data(matrix(c(2, 0.5, 0.5, 1), 2, 2))
#' s <- variable(lower = 0)
#' distribution(V) <- wishart(4, s * diag(2))
#' m <- model(Omega, W, eta, s)
#' @name matrix_distributions
NULL

#' @rdname matrix_distributions
#' @export
lkj_correlation <- function(eta, dimension = 2) {
  family <- "lkj_correlation"
  eta <- scalar_parameter(eta, "eta", family)
  check_constant(eta, "eta", family, function(v) all(v > 0), "positive")
  if (!is.numeric(dimension) || length(dimension) != 1L || is.na(dimension) ||
      dimension < 2 || dimension != round(dimension)) {
    stop("`dimension` of lkj_correlation() must be a whole number, at least 2",
         call. = FALSE)
  }
  K <- as.integer(dimension)
  new_multivariate(family, list(eta = eta), c(K, K),
                   density = lkj_log_density,
                   prior = function(dim) factor_matrix(cholesky_variable(K, correlation = TRUE)),
                   check_data = function(y) {
                     if (!isSymmetric(y, tol = 1e-8) || any(abs(diag(y) - 1) > 1e-8) ||
                         inherits(try(chol(y), silent = TRUE), "try-error")) {
                       stop("data given a lkj_correlation() distribution must be a correlation ",
                            "matrix: symmetric, positive definite, with a unit diagonal",
                            call. = FALSE)
                     }
                   })
}

#' @rdname matrix_distributions
#' @export
wishart <- function(df, Sigma) {
  family <- "wishart"
  Sigma <- covariance_parameter(Sigma, family)
  K <- nrow(Sigma)
  df <- scalar_parameter(df, "df", family)
  check_constant(df, "df", family, function(v) all(v > K - 1),
                 paste0("greater than the dimension of `Sigma` minus 1 (", K - 1, ")"))
  new_multivariate(family, list(df = df, Sigma = Sigma), c(K, K),
                   density = wishart_log_density,
                   prior = function(dim) factor_matrix(cholesky_variable(K)),
                   check_data = function(y) {
                     if (!isSymmetric(y, tol = 1e-8) ||
                         inherits(try(chol(y), silent = TRUE), "try-error")) {
                       stop("data given a wishart() distribution must be a symmetric, ",
                            "positive definite matrix", call. = FALSE)
                     }
                   })
}

# A number or a 1 x 1 greta array
scalar_parameter <- function(x, name, family) {
  x <- as.greta_array(x, name)
  if (prod(dim(x)) != 1L) {
    stop("`", name, "` of ", family, "() must be a single number, but has dimension ",
         paste(dim(x), collapse = " x "), call. = FALSE)
  }
  if (!identical(as.integer(dim(x)), c(1L, 1L))) dim(x) <- c(1L, 1L)
  x
}

# t(U) %*% U, with U kept on its node for the density (chol2symm()'s
# representation, R/linalg.R)
factor_matrix <- function(U) chol2symm(U)

# The upper Cholesky factor of the target: the prior's own, or chol() of data
# (a target is data or the prior's matrix, so a kept factor is the prior's)
target_factor <- function(y) {
  list(U = upper_factor(y), prior = !is.null(get_node(y)$cholesky_factor))
}

# LKJ: log p(Omega) = (eta - 1) log det(Omega) - log c_K(eta), with L = t(U),
# log det(Omega) = 2 sum_i log L_ii, and (Lewandowski et al. 2009, as TFP's
# LKJ normaliser)
#   log c_K(eta) = sum_{k=1}^{K-1} (2 eta - 2 + K - k) (K - k) log 2
#                  + (K - k) lbeta(eta + (K - k - 1) / 2, eta + (K - k - 1) / 2).
# As a prior the density is on L (the free elements below its diagonal) and
# adds the log |Jacobian| of L -> Omega, sum_{i >= 2} (K - i) log L_ii: Stan's
# lkj_corr_cholesky, sum_{i >= 2} (K - i + 2 eta - 2) log L_ii (L_11 = 1).
lkj_log_density <- function(y, p) {
  K <- nrow(y)
  eta <- p$eta
  f <- target_factor(y)
  log_diag <- log(diag(f$U))[2:K]
  lp <- if (f$prior) {
    sum(log_diag * as_data(K - 2:K)) + (2 * eta - 2) * sum(log_diag)
  } else {
    (2 * eta - 2) * sum(log_diag)
  }
  lp - lkj_log_normaliser(eta, K)
}

lkj_log_normaliser <- function(eta, K) {
  k <- seq_len(K - 1L)
  m <- as_data(matrix(K - k, ncol = 1))           # K - k
  a <- eta + (m - 1) * 0.5                         # eta + (K - k - 1) / 2
  sum((2 * eta - 2 + m) * m * log(2) + m * (2 * lgamma(a) - lgamma(2 * a)))
}

# Wishart: log p(W) = (df - K - 1) / 2 log det W - tr(Sigma^-1 W) / 2
#   - df K / 2 log 2 - df / 2 log det Sigma - log Gamma_K(df / 2),
# log Gamma_K(a) = K (K - 1) / 4 log pi + sum_{j=1}^K lgamma(a + (1 - j) / 2).
# With W = t(U) %*% U and Sigma = t(S) %*% S: log det W = 2 sum log U_ii and
# tr(Sigma^-1 W) = |S^-T t(U)|^2. As a prior the density is on U (its upper
# triangle) and adds the log |Jacobian| of U -> W, K log 2 + sum_i (K - i + 1)
# log U_ii.
wishart_log_density <- function(y, p) {
  K <- nrow(y)
  df <- p$df
  f <- target_factor(y)
  S <- upper_factor(p$Sigma)
  log_diag <- log(diag(f$U))
  z <- backsolve(S, t(f$U), transpose = TRUE)
  half <- as_data(matrix((1 - seq_len(K)) / 2, ncol = 1))
  log_mv_gamma <- K * (K - 1) / 4 * log(pi) + sum(lgamma(df * 0.5 + half))
  lp <- (df - K - 1) * sum(log_diag) - 0.5 * sum(z * z) - df * (K * 0.5 * log(2)) -
    df * sum(log(diag(S))) - log_mv_gamma
  if (f$prior) {
    lp <- lp + K * log(2) + sum(log_diag * as_data(matrix(K - seq_len(K) + 1, ncol = 1)))
  }
  lp
}
