# The multivariate distributions in R terms (R/multivariate.R), for what the
# engine does not do: the log density of each realisation (row) for log_lik(),
# and random draws for calculate(nsim =) and simulate(). `p` is one draw's
# parameters, a named list of matrices as the distribution's parameters are
# (vector ones 1 x k or n x k, Sigma k x k, size 1 x 1 or n x 1); `y` an n x k
# matrix. Each d() gives n log densities, each r() an n x k matrix. The
# distributions over matrices (R/wishart_lkj.R, `matrix = TRUE`) take a
# whole k x k matrix as one realisation: d() gives its one log density, r()
# one k x k matrix.

# A 1 x k (or n x k) parameter as n rows; size as n numbers
mv_rows <- function(x, n) {
  if (nrow(x) == n) x else x[rep(1L, n), , drop = FALSE]
}
mv_size <- function(x, n) rep_len(as.numeric(x), n)

mv_families <- list(
  # mixture() and joint() (R/mixture.R, R/joint.R): one log density per element
  # (`elementwise`) or per row, their components in attr(p, "spec")
  mixture = mixture_family,
  joint = joint_family,
  multivariate_normal = list(
    d = function(y, p) {
      U <- chol(p$Sigma)
      z <- backsolve(U, t(y - mv_rows(p$mean, nrow(y))), transpose = TRUE)
      -0.5 * colSums(z * z) - sum(log(diag(U))) - 0.5 * ncol(y) * log(2 * pi)
    },
    r = function(p, n, k) {
      U <- chol(p$Sigma)
      mv_rows(p$mean, n) + matrix(stats::rnorm(n * k), n, k) %*% U
    }
  ),
  dirichlet = list(
    d = function(y, p) {
      a <- mv_rows(p$alpha, nrow(y))
      lgamma(rowSums(a)) - rowSums(lgamma(a)) + rowSums((a - 1) * log(y))
    },
    r = function(p, n, k) mv_rdirichlet(mv_rows(p$alpha, n))
  ),
  categorical = list(
    d = function(y, p) {
      prob <- mv_rows(p$prob, nrow(y))
      log(prob[cbind(seq_len(nrow(y)), max.col(y, ties.method = "first"))]) -
        log(rowSums(prob))
    },
    r = function(p, n, k) {
      prob <- mv_rows(p$prob, n)
      out <- matrix(0, n, k)
      for (i in seq_len(n)) out[i, sample.int(k, 1L, prob = prob[i, ])] <- 1
      out
    }
  ),
  multinomial = list(
    d = function(y, p) {
      prob <- mv_rows(p$prob, nrow(y))
      vapply(seq_len(nrow(y)), function(i) {
        stats::dmultinom(y[i, ], prob = prob[i, ], log = TRUE)
      }, numeric(1))
    },
    r = function(p, n, k) {
      mv_rmultinom(mv_size(p$size, n), mv_rows(p$prob, n))
    }
  ),
  dirichlet_multinomial = list(
    d = function(y, p) {
      a <- mv_rows(p$alpha, nrow(y))
      size <- mv_size(p$size, nrow(y))
      total <- rowSums(a)
      lgamma(total) + lgamma(size + 1) - lgamma(size + total) +
        rowSums(lgamma(y + a) - lgamma(a) - lgamma(y + 1))
    },
    r = function(p, n, k) {
      mv_rmultinom(mv_size(p$size, n), mv_rdirichlet(mv_rows(p$alpha, n)))
    }
  ),
  # log det(Omega) = 2 sum log diag(chol(Omega)); the normaliser is the model's
  lkj_correlation = list(
    matrix = TRUE,
    d = function(y, p) {
      eta <- as.numeric(p$eta)
      (eta - 1) * 2 * sum(log(diag(chol(y)))) - lkj_log_normaliser(eta, nrow(y), wrap = base::identity)
    },
    r = function(p, n, k) mv_rlkj(as.numeric(p$eta), k)
  ),
  # the model's formula (wishart_log_density()): with W = t(U) U and Sigma =
  # t(S) S, tr(Sigma^-1 W) = |S^-T t(U)|^2
  wishart = list(
    matrix = TRUE,
    d = function(y, p) {
      K <- nrow(y)
      df <- as.numeric(p$df)
      U <- chol(y)
      S <- chol(p$Sigma)
      z <- backsolve(S, t(U), transpose = TRUE)
      log_mv_gamma <- K * (K - 1) / 4 * log(pi) + sum(lgamma(df / 2 + (1 - seq_len(K)) / 2))
      (df - K - 1) * sum(log(diag(U))) - 0.5 * sum(z * z) - df * K / 2 * log(2) -
        df * sum(log(diag(S))) - log_mv_gamma
    },
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
  p <- lapply(seq_along(cols), function(j) matrix(values[cols[[j]]], dims[[j]][1], dims[[j]][2]))
  names(p) <- names
  attr(p, "spec") <- spec
  p
}
