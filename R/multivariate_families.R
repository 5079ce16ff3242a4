# The multivariate distributions in R terms (R/multivariate.R), for what the
# engine does not do: the log density of each realisation (row) for log_lik(),
# and random draws for calculate(nsim =) and simulate(). `p` is one draw's
# parameters, a named list of matrices as the distribution's parameters are
# (vector ones 1 x k or n x k, Sigma k x k, size 1 x 1 or n x 1); `y` an n x k
# matrix. Each d() gives n log densities, each r() an n x k matrix.

# A 1 x k (or n x k) parameter as n rows; size as n numbers
mv_rows <- function(x, n) {
  if (nrow(x) == n) x else x[rep(1L, n), , drop = FALSE]
}
mv_size <- function(x, n) rep_len(as.numeric(x), n)

mv_families <- list(
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
  )
)

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
# their names.
mv_params <- function(values, cols, dims, names) {
  p <- lapply(seq_along(cols), function(j) matrix(values[cols[[j]]], dims[[j]][1], dims[[j]][2]))
  names(p) <- names
  p
}
