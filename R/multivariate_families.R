# The multivariate distributions in R terms (R/multivariate.R), for what the
# engine does not do: random draws for calculate(nsim =) and simulate()
# (their log densities are the model's own terms, which log_lik() traces).
# `p` is one draw's parameters, a named list of matrices as the
# distribution's parameters are (vector ones 1 x k or n x k, Sigma k x k,
# size 1 x 1 or n x 1). Each r() gives an n x k matrix; the distributions
# over matrices (R/wishart_lkj.R) one k x k matrix.

# A 1 x k (or n x k) parameter as n rows; size as n numbers
mv_rows <- function(x, n) {
  if (nrow(x) == n) x else x[rep(1L, n), , drop = FALSE]
}
mv_size <- function(x, n) rep_len(as.numeric(x), n)

mv_families <- list(
  # mixture() and joint() (R/mixture.R, R/joint.R): their components in
  # attr(p, "spec")
  mixture = mixture_family,
  joint = joint_family,
  # custom_distribution() (R/custom_distributions.R): its own `sample` in attr(p, "spec")
  custom = custom_family,
  multivariate_normal = list(
    r = function(p, n, k) {
      U <- chol(p$Sigma)
      mv_rows(p$mean, n) + matrix(stats::rnorm(n * k), n, k) %*% U
    }
  ),
  dirichlet = list(
    r = function(p, n, k) mv_rdirichlet(mv_rows(p$alpha, n))
  ),
  categorical = list(
    r = function(p, n, k) {
      prob <- mv_rows(p$prob, n)
      out <- matrix(0, n, k)
      for (i in seq_len(n)) out[i, sample.int(k, 1L, prob = prob[i, ])] <- 1
      out
    }
  ),
  multinomial = list(
    r = function(p, n, k) {
      mv_rmultinom(mv_size(p$size, n), mv_rows(p$prob, n))
    }
  ),
  dirichlet_multinomial = list(
    r = function(p, n, k) {
      mv_rmultinom(mv_size(p$size, n), mv_rdirichlet(mv_rows(p$alpha, n)))
    }
  ),
  lkj_correlation = list(
    r = function(p, n, k) mv_rlkj(as.numeric(p$eta), k)
  ),
  wishart = list(
    r = function(p, n, k) mv_rwishart(as.numeric(p$df), p$Sigma)
  )
)

# An LKJ(eta) correlation matrix of dimension K by the C-vine method
# (Lewandowski, Kurowicka and Joe 2009, section 3.2): the partial correlation
# of variables k and i given 1, ..., k - 1 is Beta(b_k, b_k) on (-1, 1), b_k =
# eta + (K - 1 - k) / 2, and turned into a correlation by the recursion
# r = r sqrt((1 - P[l, i]^2) (1 - P[l, k]^2)) + P[l, i] P[l, k], l = k - 1, ..., 1.
mv_rlkj <- function(eta, K) {
  P <- matrix(0, K, K)
  out <- diag(K)
  for (k in seq_len(K - 1L)) {
    b <- eta + (K - 1 - k) / 2
    for (i in (k + 1L):K) {
      P[k, i] <- 2 * stats::rbeta(1L, b, b) - 1
      r <- P[k, i]
      for (l in rev(seq_len(k - 1L))) {
        r <- r * sqrt((1 - P[l, i]^2) * (1 - P[l, k]^2)) + P[l, i] * P[l, k]
      }
      out[k, i] <- out[i, k] <- r
    }
  }
  out
}

# A Wishart draw (mean df Sigma): stats::rWishart(), which needs df >= K; for
# K - 1 < df < K the Bartlett decomposition, W = L A t(A) t(L) with L =
# t(chol(Sigma)), A lower triangular, A_ii^2 ~ chi-squared(df - i + 1) and
# standard normals below the diagonal.
mv_rwishart <- function(df, Sigma) {
  K <- nrow(Sigma)
  if (df >= K) return(stats::rWishart(1L, df, Sigma)[, , 1L])
  A <- matrix(0, K, K)
  A[lower.tri(A)] <- stats::rnorm(K * (K - 1) / 2)
  diag(A) <- sqrt(stats::rchisq(K, df - seq_len(K) + 1))
  LA <- t(chol(Sigma)) %*% A
  W <- LA %*% t(LA)
  (W + t(W)) / 2
}

# Rows of Dirichlet draws: normalised gamma draws
mv_rdirichlet <- function(alpha) {
  g <- matrix(stats::rgamma(length(alpha), shape = alpha), nrow(alpha), ncol(alpha))
  g / rowSums(g)
}

mv_rmultinom <- function(size, prob) {
  out <- matrix(0, nrow(prob), ncol(prob))
  for (i in seq_len(nrow(prob))) out[i, ] <- stats::rmultinom(1L, size[i], prob[i, ])
  out
}

mv_family <- function(family, what) {
  f <- mv_families[[family]]
  if (is.null(f)) {
    stop(what, " does not support the ", family, "() distribution", call. = FALSE)
  }
  f
}

# One draw's parameters from a row of engine values: `values` a vector, `cols`
# the positions of each parameter in it, `dims` their dimensions, `names`
# their names; `spec` the components of a mixture() or joint(), which their
# functions read as attr(p, "spec").
mv_params <- function(values, cols, dims, names, spec = NULL) {
  p <- lapply(seq_along(cols), function(j) array(values[cols[[j]]], dims[[j]]))
  names(p) <- names
  attr(p, "spec") <- spec
  p
}
