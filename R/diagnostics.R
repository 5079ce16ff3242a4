# Convergence diagnostics of draws: rank-normalised split R-hat and bulk
# effective sample size (Vehtari, Gelman, Simpson, Carpenter and Buerkner
# 2021, "Rank-normalization, folding, and localization: an improved R-hat"),
# as Stan and the posterior package report them, and summary() of a
# greta_mcmc_list with them.

#' R-hat and effective sample size of draws
#'
#' `rhat()` is the rank-normalised split R-hat of Vehtari et al. (2021): the
#' larger of the split R-hats of the rank-normalised draws and of their
#' rank-normalised distances from the median (which catches chains that
#' differ in scale). Values above 1.01 suggest the chains have not mixed.
#' `ess_bulk()` is the bulk effective sample size: the effective sample size
#' of the rank-normalised split chains, with Geyer's initial monotone
#' sequence, as Stan computes it. Both agree with the `posterior` package.
#'
#' @param x a matrix of draws of one quantity, one column per chain (or a
#'   vector: one chain), or a `greta_mcmc_list`, in which case the value for
#'   every quantity is returned (`NA` for each when the chains have fewer
#'   than 4 draws; a matrix needs at least 4 rows)
#' @return a number, or a named vector with one per quantity
#' @references Vehtari, A., Gelman, A., Simpson, D., Carpenter, B. and
#'   Buerkner, P.-C. (2021). Rank-normalization, folding, and localization: an
#'   improved R-hat for assessing convergence of MCMC. *Bayesian Analysis*
#'   16(2), 667-718.
#' @examples
#' set.seed(1)
#' draws <- matrix(rnorm(4000), ncol = 4)  # four well-mixed chains
#' rhat(draws)
#' ess_bulk(draws)
#' stuck <- draws + rep(c(0, 0, 0, 3), each = 1000)  # one chain elsewhere
#' rhat(stuck)
#' @export
rhat <- function(x) {
  if (inherits(x, "mcmc.list")) return(per_quantity(x, rhat))
  x <- draws_matrix(x)
  split <- split_chains(x)
  max(rhat_basic(rank_normalise(split)),
      rhat_basic(rank_normalise(abs(split - stats::median(split)))))
}

#' @rdname rhat
#' @export
ess_bulk <- function(x) {
  if (inherits(x, "mcmc.list")) return(per_quantity(x, ess_bulk))
  ess_basic(rank_normalise(split_chains(draws_matrix(x))))
}

draws_matrix <- function(x) {
  if (is.null(dim(x))) x <- matrix(x, ncol = 1)
  if (!is.numeric(x) || length(dim(x)) != 2 || nrow(x) < 4) {
    stop("`x` must be a matrix of draws with a column per chain and at least 4 rows",
         call. = FALSE)
  }
  x
}

per_quantity <- function(x, f) {
  # (chains of one unnamed quantity, as coda::mcmc() of a vector gives, have
  # no variable names: the quantity is then their only column)
  names <- coda::varnames(x)
  columns <- if (is.null(names)) seq_len(coda::nvar(x)) else names
  if (coda::niter(x) < 4) {  # too few draws to diagnose (summary() of a short run)
    return(stats::setNames(rep(NA_real_, length(columns)), names))
  }
  out <- vapply(columns, function(v) {
    f(vapply(x, function(chain) as.numeric(as.matrix(chain)[, v]), numeric(coda::niter(x))))
  }, numeric(1))
  names(out) <- names
  out
}

# Each chain's first and second halves as two chains (a middle draw of an
# odd-length chain is left out).
split_chains <- function(x) {
  n <- nrow(x) %/% 2
  cbind(x[seq_len(n), , drop = FALSE], x[nrow(x) - n + seq_len(n), , drop = FALSE])
}

# Normal scores of the pooled ranks (ties get their average rank).
rank_normalise <- function(x) {
  r <- rank(x, ties.method = "average")
  z <- stats::qnorm((r - 3 / 8) / (length(x) + 1 / 4))
  matrix(z, nrow(x), ncol(x))
}

rhat_basic <- function(x) {
  n <- nrow(x)
  if (any(!is.finite(x))) return(NA_real_)
  w <- mean(apply(x, 2, stats::var))
  b <- n * stats::var(colMeans(x))
  if (w == 0) return(if (b == 0) 1 else Inf)
  sqrt(((n - 1) / n * w + b / n) / w)
}

# Autocovariances of one chain at lags 0..n-1, by FFT (biased estimator, as
# Stan's).
autocovariance <- function(x) {
  n <- length(x)
  m <- 2^ceiling(log2(2 * n))
  y <- c(x - mean(x), rep(0, m - n))
  f <- stats::fft(y)
  ac <- Re(stats::fft(Mod(f)^2, inverse = TRUE))[seq_len(n)] / m
  ac / n
}

# Stan's effective sample size over chains (columns), with Geyer's initial
# positive and monotone sequences and the improved estimate for antithetic
# chains (stan::analyze::compute_effective_sample_size). rho[k + 1] is the
# autocorrelation at lag k.
ess_basic <- function(x) {
  n <- nrow(x)
  m <- ncol(x)
  if (any(!is.finite(x)) || n < 4) return(NA_real_)
  acov <- matrix(vapply(seq_len(m), function(j) autocovariance(x[, j]), numeric(n)), n, m)
  acov_mean <- rowMeans(acov)
  w <- mean(acov[1, ] * n / (n - 1))
  var_plus <- w * (n - 1) / n
  if (m > 1) var_plus <- var_plus + stats::var(colMeans(x))
  if (!(var_plus > 0)) return(NA_real_)
  rho <- numeric(n)
  rho[1] <- 1
  even <- 1
  odd <- 1 - (w - acov_mean[2]) / var_plus
  rho[2] <- odd
  s <- 1
  while (s < n - 4 && even + odd > 0) {
    even <- 1 - (w - acov_mean[s + 2]) / var_plus
    odd <- 1 - (w - acov_mean[s + 3]) / var_plus
    if (even + odd >= 0) {
      rho[s + 2] <- even
      rho[s + 3] <- odd
    }
    s <- s + 2
  }
  max_s <- s
  if (even > 0) rho[max_s + 2] <- even
  if (max_s >= 4) {
    for (k in seq(1, max_s - 3, by = 2)) {
      if (rho[k + 2] + rho[k + 3] > rho[k] + rho[k + 1]) {
        rho[k + 2] <- (rho[k] + rho[k + 1]) / 2
        rho[k + 3] <- rho[k + 2]
      }
    }
  }
  total <- n * m
  tau <- -1 + 2 * sum(rho[seq_len(max_s)]) + rho[max_s + 2]
  min(total / tau, total * log10(total))
}

#' @rdname greta_mcmc_list
#' @export
summary.greta_mcmc_list <- function(object, ...) {
  plain <- object
  attributes(plain) <- NULL
  plain <- coda::as.mcmc.list(lapply(object, function(chain) chain))
  out <- summary(plain, ...)
  out$diagnostics <- data.frame(rhat = rhat(object), ess_bulk = ess_bulk(object),
                                row.names = coda::varnames(object))
  out$sampler <- sampler_description(attr(object, "model_info")$run)
  class(out) <- c("summary.greta_mcmc_list", class(out))
  out
}

# What ran: the sampler's name, its tuned step size and the metric warmup
# learnt ("dense" (over the global parameters alone, on a model too large for
# a whole one) or "diagonal", and "per chain" when adapted per chain; with
# metric = "auto", the one it chose), as one line; NULL for a run that did not
# record them.
sampler_description <- function(run) {
  if (is.null(run$sampler)) return(NULL)
  parameters <- run$sampler$parameters
  factor <- run$metric_factor
  dense <- !is.null(factor) &&
    any(vapply(seq_len(dim(factor)[3]), function(k) {
      f <- factor[, , k, drop = TRUE]
      length(f) > 1 && any(f[upper.tri(f)] != 0)  # each slice: a lower factor's transpose
    }, logical(1)))
  metric <- if (dense) "dense" else "diagonal"
  if (dense && !is.null(attr(factor, "coordinates")))
    metric <- sprintf("dense over the %d global parameters, diagonal over the rest",
                      length(attr(factor, "coordinates")))
  if (identical(parameters$metric, "auto")) metric <- paste(metric, "(chosen by metric = \"auto\")")
  if (identical(parameters$adapt_metric, "per_chain")) metric <- paste(metric, "per chain")
  eps <- unique(signif(run$epsilon, 3))
  step <- if (length(eps) == 0) {
    ""
  } else if (length(eps) == 1) {
    sprintf(", step size %s", eps)
  } else {
    sprintf(", step sizes %s to %s (per chain)", min(eps), max(eps))
  }
  sprintf("%s%s, metric %s", run$sampler$name, step, metric)
}

#' @export
print.summary.greta_mcmc_list <- function(x, ...) {
  NextMethod()
  cat("3. Rank-normalised split R-hat and bulk effective sample size:\n\n")
  d <- x$diagnostics
  print(data.frame(rhat = round(d$rhat, 3), ess_bulk = round(d$ess_bulk),
                   row.names = rownames(d)), ...)
  cat("\n")
  if (!is.null(x$sampler)) cat("4. Sampler:", x$sampler, "\n\n")
  invisible(x)
}
