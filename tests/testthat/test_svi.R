# svi(): variational fits against exact posteriors, the bounds, the result's
# interfaces (draws, print, mcmc() starts), the Pareto k diagnostic, and bad
# input.

# A conjugate normal model: y_i ~ normal(mu, 1), mu ~ normal(0, 10), so the
# posterior of mu is normal(sum(y) / (n + 1/100), 1 / sqrt(n + 1/100)).
conjugate_normal <- function() {
  y <- c(-0.4, 1.2, 0.9, 2.1, 0.3, 1.7, 0.8)
  mu <- normal(0, 10)
  distribution(y) <- normal(mu, 1)
  precision <- length(y) + 1 / 100
  list(model = model(mu), mean = sum(y) / precision, sd = 1 / sqrt(precision))
}

test_that("svi() with a mean-field guide recovers a conjugate normal posterior", {
  cn <- conjugate_normal()
  set.seed(61)
  fit <- svi(cn$model, particles = 8, n_iterations = 4000, tolerance = 0, decay_rate = 0.01,
             decay_steps = 4000, optimiser = adam(learning_rate = 0.05), verbose = FALSE)
  expect_s3_class(fit, "lockstep_svi")
  expect_equal(fit$iterations, 4000)
  expect_false(fit$converged)
  # the guide over the free parameter (mu is unconstrained: the same scale)
  expect_lt(abs(fit$guide$mean - cn$mean), 0.05 * cn$sd)
  expect_lt(abs(fit$guide$sd / cn$sd - 1), 0.05)
  expect_false(fit$guide$on_device)  # (a GPU's would be: tests/gpu)
  expect_lt(abs(fit$par$mu - cn$mean), 0.05 * cn$sd)
  # its draws: a greta_mcmc_list of 4 chains, within Monte Carlo error
  expect_s3_class(fit$draws, "greta_mcmc_list")
  expect_equal(coda::nchain(fit$draws), 4)
  d <- as.matrix(fit$draws)
  expect_equal(nrow(d), 1000)
  expect_lt(abs(mean(d[, "mu"]) - cn$mean), 4 * cn$sd / sqrt(1000) + 0.05 * cn$sd)
  expect_lt(abs(stats::sd(d[, "mu"]) / cn$sd - 1), 0.1)
  # the exact posterior is in the guide's family: k-hat is small
  expect_lt(fit$k_hat, 0.5)
  # the ELBO of the exact posterior is the log evidence
  y <- c(-0.4, 1.2, 0.9, 2.1, 0.3, 1.7, 0.8)
  log_evidence <- mvtnorm::dmvnorm(y, rep(0, 7), diag(7) + 100, log = TRUE)
  expect_lt(abs(fit$elbo - log_evidence), 0.05)
  # the loss trace, printing, summary, calculate()
  expect_length(fit$loss, 4000)
  expect_output(print(fit), "mean-field guide, 8 particles, ELBO")
  expect_output(print(fit), "Pareto k diagnostic")
  expect_s3_class(summary(fit), "summary.mcmc")
  expect_true(all(is.finite(fit$loss)))
  # set.seed() repeats a run
  set.seed(61)
  again <- svi(cn$model, particles = 8, n_iterations = 200, tolerance = 0, verbose = FALSE)
  set.seed(61)
  same <- svi(cn$model, particles = 8, n_iterations = 200, tolerance = 0, verbose = FALSE)
  expect_identical(again$loss, same$loss)
  expect_identical(as.matrix(again$draws), as.matrix(same$draws))
})

test_that("svi() stops on a converged ELBO and respects supports", {
  # a positive parameter through its log transform: the draws stay positive
  y <- c(0.8, 1.9, 0.4, 2.7, 1.1, 0.6)
  rate <- gamma(2, 1)
  distribution(y) <- exponential(rate)
  m <- model(rate)
  set.seed(62)
  fit <- svi(m, n_iterations = 20000, verbose = FALSE, optimiser = adam(learning_rate = 0.02))
  expect_true(fit$converged)
  expect_lt(fit$iterations, 20000)
  d <- as.matrix(fit$draws)
  expect_true(all(d[, "rate"] > 0))
  # the posterior is gamma(2 + 6, 1 + sum(y)): mean-field on log(rate) is close
  expect_lt(abs(mean(d[, "rate"]) - 8 / (1 + sum(y))), 0.1 * sqrt(8) / (1 + sum(y)))
})

test_that("svi()'s importance-weighted bound is at least the ELBO, and a point mass finds the mode", {
  # a correlated posterior, which a mean-field guide cannot match: the
  # importance-weighted bound (alpha = 0) sits above the ELBO
  z <- normal(0, 1, dim = 2)
  w <- as_data(c(0.3, -0.2))
  distribution(w) <- normal(z[1] + c(1, 1.1) * z[2], 0.2)
  m <- model(z)
  # (the mean-field guide's Pareto k is near 0.7 here: a warning, no matter)
  set.seed(63)
  elbo <- suppressWarnings(svi(m, particles = 8, n_iterations = 3000, tolerance = 0,
                               verbose = FALSE, optimiser = adam(learning_rate = 0.02)))
  set.seed(63)
  iw <- suppressWarnings(svi(m, particles = 8, alpha = 0, n_iterations = 3000, tolerance = 0,
                             verbose = FALSE, optimiser = adam(learning_rate = 0.02)))
  expect_gt(iw$elbo, elbo$elbo)
  expect_output(print(iw), "Renyi bound \\(alpha = 0\\)")
  # the importance-weighted guide is wider (it covers more of the posterior)
  expect_gt(sum(log(iw$guide$sd)), sum(log(elbo$guide$sd)))
  # a point mass: the mode of the free state (z is unconstrained: the MAP)
  set.seed(64)
  delta <- svi(m, guide = "delta", n_iterations = 3000, tolerance = 0, verbose = FALSE,
               optimiser = adam(learning_rate = 0.02))
  A <- cbind(1, c(1, 1.1))
  P <- diag(2) + crossprod(A) / 0.04
  mode <- drop(solve(P, crossprod(A, c(0.3, -0.2)) / 0.04))
  expect_equal(delta$guide$mean, mode, tolerance = 1e-3)
  expect_equal(delta$guide$sd, c(0, 0))
  expect_true(is.na(delta$k_hat))
})

test_that("svi()'s Pareto k flags a funnel, and a fit starts mcmc()", {
  # Neal's funnel: a mean-field guide cannot follow it
  v <- normal(0, 3)
  x <- normal(0, exp(v / 2), dim = 8)
  m <- model(v, x)
  set.seed(65)
  expect_warning(fit <- svi(m, n_iterations = 3000, verbose = FALSE), "Pareto k diagnostic is")
  expect_gt(fit$k_hat, 0.7)
  # too few draws for the tail's fit (loo gives Inf under 21): NA, not a
  # warning that the approximation is poor, and print() says why; 24 suffice
  set.seed(65)
  expect_silent(few <- svi(m, n_iterations = 3000, n_draws = 20, verbose = FALSE))
  expect_true(is.na(few$k_hat))
  expect_output(print(few), "not estimated \\(it needs n_draws of at least 24\\)")
  expect_equal(few$guide$mean, fit$guide$mean)  # the same fit
  set.seed(65)
  enough <- suppressWarnings(svi(m, n_iterations = 3000, n_draws = 24, verbose = FALSE))
  expect_false(is.na(enough$k_hat))
  expect_output(print(enough), "Pareto k diagnostic: ")
  expect_false(any(grepl("not estimated", capture.output(print(enough)))))
  # mcmc() from the guide
  cn <- conjugate_normal()
  set.seed(66)
  g <- svi(cn$model, n_iterations = 1000, verbose = FALSE)
  d <- mcmc(cn$model, initial_values = g, warmup = 100, n_samples = 100, chains = 2,
            verbose = FALSE)
  expect_equal(coda::nchain(d), 2)
  expect_error(mcmc(m, initial_values = g, warmup = 1, n_samples = 1, verbose = FALSE),
               "svi\\(\\) fit of a model with 1 free parameters")
})

test_that("svi() refuses bad input with clear errors", {
  cn <- conjugate_normal()
  m <- cn$model
  expect_error(svi("m"), "`model` must be a greta_model")
  expect_error(svi(m, particles = 0), "`particles`")
  expect_error(svi(m, guide = "full"), "`guide`")
  expect_error(svi(m, rank = 3), "`rank` is the low-rank guide's")
  expect_error(svi(m, initial_values = list(initials(mu = 1), initials(mu = 2))),
               "2 sets of initial values, but the guide takes one")
  expect_error(svi(m, guide = "delta", particles = 4), "particles = 1")
  expect_error(svi(m, guide = "delta", alpha = 0), "leave `alpha` at 1")
  expect_error(svi(m, optimiser = bfgs()), "first-order optimiser")
  expect_error(svi(m, alpha = NA), "`alpha`")
  expect_error(svi(m, decay_rate = 0), "`decay_rate`")
  expect_error(svi(m, tolerance = -1), "`tolerance`")
  expect_error(svi(m, n_draws = 2), "`n_draws`")
  # a diverging optimiser stops with the last finite guide and says so:
  # plain gradient descent with a step far beyond 2 / curvature overflows
  mu <- normal(0, 1)
  y <- c(0.3, -0.2, 0.1)
  distribution(y) <- normal(mu, 0.01)
  set.seed(67)
  # (the guide it returns is poor: the Pareto k says so too)
  expect_warning(
    expect_warning(fit <- svi(model(mu), optimiser = gradient_descent(learning_rate = 1),
                              n_iterations = 2000, tolerance = 0, verbose = FALSE),
                   "the optimiser diverged"),
    "Pareto k diagnostic")
  expect_lt(fit$iterations, 2000)
  expect_true(is.finite(fit$guide$mean))
  # ... where its bound was last finite (before the step that left it), so
  # that its draws are finite too; print() says it diverged
  expect_true(fit$diverged)
  expect_true(all(is.finite(fit$guide$sd)))
  expect_true(all(is.finite(as.matrix(fit$draws))))
  expect_output(print(fit), "diverged: the guide where the bound was last finite")
  expect_false(suppressWarnings(svi(model(mu), n_iterations = 10, tolerance = 0,
                                    verbose = FALSE))$diverged)
  # Renyi's bound below alpha = 0 is an upper bound: refused
  expect_error(svi(m, alpha = -5), "`alpha` must be at least 0")
})

test_that("svi() with a full-rank guide recovers a correlated posterior's covariance", {
  # z ~ multivariate normal: the posterior is the prior, in the guide's family
  # (correlations 0.7, -0.4 and -0.2; sds 2, 1 and 0.5)
  Sigma <- matrix(c(4, 1.4, -0.4,
                    1.4, 1, -0.1,
                    -0.4, -0.1, 0.25), 3, 3)
  mu <- c(1, -2, 0.5)
  z <- multivariate_normal(t(mu), Sigma)
  m <- model(z)
  set.seed(68)
  fit <- svi(m, guide = "full_rank", particles = 8, n_iterations = 6000, tolerance = 0,
             optimiser = adam(learning_rate = 0.05), decay_rate = 0.01, decay_steps = 6000,
             n_draws = 4000, verbose = FALSE)
  expect_equal(dim(fit$guide$scale), c(3L, 3L))
  expect_equal(fit$guide$scale[upper.tri(fit$guide$scale)], c(0, 0, 0))
  cov <- fit$guide$scale %*% t(fit$guide$scale)
  expect_lt(max(abs(cov - Sigma) / sqrt(outer(diag(Sigma), diag(Sigma)))), 0.08)
  expect_lt(max(abs(fit$guide$mean - mu) / sqrt(diag(Sigma))), 0.05)
  expect_lt(abs(fit$elbo), 0.05)  # the log evidence of a normalised density
  expect_lt(fit$k_hat, 0.5)
  d <- as.matrix(fit$draws)
  expect_lt(max(abs(stats::cov(d) - Sigma) / sqrt(outer(diag(Sigma), diag(Sigma)))), 0.12)
  expect_output(print(fit), "full-rank guide")
  # a rank-2 guide (a covariance W W' + diag(d^2)) covers this one too: its
  # log q by Woodbury's identity gives a small Pareto k
  set.seed(69)
  low <- svi(m, guide = "low_rank", rank = 2, particles = 8, n_iterations = 6000, tolerance = 0,
             optimiser = adam(learning_rate = 0.05), decay_rate = 0.01, decay_steps = 6000,
             n_draws = 4000, verbose = FALSE)
  expect_equal(dim(low$guide$factor), c(3L, 2L))
  low_cov <- low$guide$factor %*% t(low$guide$factor) + diag(low$guide$diagonal^2)
  expect_lt(max(abs(low_cov - Sigma) / sqrt(outer(diag(Sigma), diag(Sigma)))), 0.1)
  expect_equal(low$guide$sd, sqrt(diag(low_cov)))
  expect_lt(abs(low$elbo), 0.05)
  expect_lt(low$k_hat, 0.5)
  expect_output(print(low), "rank-2 guide")
  expect_error(svi(m, guide = "low_rank", rank = 4), "`rank` must be at most")
  # its log q against the normal density with the whole covariance
  zz <- matrix(rnorm(12), 4, 3)
  expect_equal(lockstep:::guide_log_density(low$guide, zz),
               mvtnorm::dmvnorm(zz, low$guide$mean, low_cov, log = TRUE), tolerance = 1e-10)
  # a mean-field guide has no scale matrix, and is narrower here
  set.seed(68)
  mf <- suppressWarnings(svi(m, particles = 8, n_iterations = 6000, tolerance = 0,
                             optimiser = adam(learning_rate = 0.05), decay_rate = 0.01,
                             decay_steps = 6000, verbose = FALSE))
  expect_null(mf$guide$scale)
  expect_lt(mf$guide$sd[1], 0.8 * sqrt(Sigma[1, 1]))
})

test_that("svi() on devices that own their groups (emulated) makes one device's fit", {
  m <- small_grouped_logit(70)
  old <- options(lockstep.backend = "emulated")
  on.exit(options(old))
  run <- function(devices) {
    set.seed(71)
    suppressWarnings(svi(m, n_iterations = 100, tolerance = 0, n_draws = 40, verbose = FALSE,
                         compute_options = cpu_only(threads = 1, devices = devices)))
  }
  one <- run(1)
  two <- run(2)
  expect_false(attr(one$handle, "device_shards"))
  expect_true(attr(two$handle, "device_shards"))
  expect_equal(two$loss, one$loss, tolerance = 1e-8)
  expect_equal(two$guide$mean, one$guide$mean, tolerance = 1e-8)
  # minibatches there: each device draws its own rows' tiles, and with the
  # guide held still the losses average to one device's whole-data losses
  held <- function(devices, batch_size) {
    set.seed(72)
    suppressWarnings(svi(m, batch_size = batch_size, optimiser = adam(learning_rate = 0),
                         n_iterations = 600, tolerance = 0, n_draws = 4, verbose = FALSE,
                         compute_options = cpu_only(threads = 1, devices = devices)))
  }
  batched <- held(2, 60)
  expect_true(attr(batched$handle, "device_shards"))
  difference <- batched$loss - held(1, NULL)$loss
  expect_gt(stats::sd(difference), 0.1)
  expect_lt(abs(mean(difference)), 4.5 * stats::sd(difference) / sqrt(length(difference)))
})

test_that("svi()'s draws work with calculate(), log_lik() and posterior", {
  cn <- conjugate_normal()
  y <- c(-0.4, 1.2, 0.9, 2.1, 0.3, 1.7, 0.8)
  mu <- normal(0, 10)
  distribution(y) <- normal(mu, 1)
  m <- model(mu)
  set.seed(72)
  fit <- svi(m, n_iterations = 2000, verbose = FALSE)
  doubled <- calculate(2 * mu, values = fit$draws)
  expect_equal(as.matrix(doubled)[, 1], 2 * as.matrix(fit$draws)[, "mu"], ignore_attr = TRUE)
  ll <- log_lik(fit$draws)
  expect_equal(dim(ll), c(1000L, 7L))
  expect_equal(ll[1, ], stats::dnorm(y, as.matrix(fit$draws)[1, "mu"], 1, log = TRUE),
               tolerance = 1e-10)
  d <- posterior::as_draws_df(fit$draws)
  expect_equal(posterior::ndraws(d), 1000)
  expect_lt(abs(mean(d$mu) - cn$mean), 0.1)
  # the fit itself stands for its draws
  expect_identical(calculate(2 * mu, values = fit), doubled)
  expect_identical(log_lik(fit), ll)
  expect_identical(as.matrix(fit), as.matrix(fit$draws))
  expect_identical(posterior::as_draws_df(fit), d)
  expect_identical(posterior::as_draws_array(fit), posterior::as_draws_array(fit$draws))
  # plot(): the loss and its running mean
  pdf(NULL)
  on.exit(grDevices::dev.off(), add = TRUE)
  expect_identical(plot(fit), fit)
  expect_error(plot(fit, window = 0), "`window`")
})

test_that("svi() keeps no raw draws of a model too large for them, and its draws still work", {
  cn <- conjugate_normal()
  old <- options(lockstep.max_raw_draws_mb = 0)
  on.exit(options(old))
  set.seed(73)
  fit <- svi(cn$model, n_iterations = 500, n_draws = 400, verbose = FALSE)
  expect_null(attr(fit$draws, "model_info")$raw_draws)
  expect_equal(nrow(as.matrix(fit$draws)), 400)
  expect_true(is.finite(fit$k_hat))
})

test_that("svi()'s low-rank guide defaults to a rank of sqrt(free parameters), at most 10", {
  z <- normal(0, 1, dim = 9)
  set.seed(74)
  fit <- suppressWarnings(svi(model(z), guide = "low_rank", n_iterations = 200, verbose = FALSE))
  expect_equal(ncol(fit$guide$factor), 3)
  big <- normal(0, 1, dim = 400)
  set.seed(75)
  fit <- suppressWarnings(  # (of a Pareto k after 20 iterations)
    svi(model(big), guide = "low_rank", n_iterations = 20, tolerance = 0, n_draws = 8,
        verbose = FALSE)
  )
  expect_equal(dim(fit$guide$factor), c(400L, 10L))
})

# y_i ~ normal(mu, 1) on n rows, mu ~ normal(0, 10): the exact posterior of mu
# is normal(sum(y) / (n + 1/100), 1 / sqrt(n + 1/100)).
many_rows_normal <- function(n) {
  set.seed(5)
  y <- stats::rnorm(n, 1.3, 1)
  mu <- normal(0, 10)
  distribution(y) <- normal(mu, 1)
  precision <- n + 1 / 100
  list(model = model(mu), mu = mu, mean = sum(y) / precision, sd = 1 / sqrt(precision))
}

test_that("svi()'s minibatches are unbiased: with the guide held still, their losses average to the whole data's", {
  mr <- many_rows_normal(2000)
  mu <- mr$mu  # (initials() names it)
  # a learning rate of 0 holds the guide at its start, and the same seed
  # draws the same particles at each iteration: the losses then differ by
  # the minibatch's estimate of the likelihood alone
  run <- function(batch_size) {
    set.seed(9)
    suppressWarnings(svi(mr$model, batch_size = batch_size, optimiser = adam(learning_rate = 0),
                         n_iterations = 2000, tolerance = 0, initial_values = initials(mu = 1),
                         n_draws = 4, verbose = FALSE))
  }
  whole <- run(NULL)
  batched <- run(200)
  expect_null(whole$batch_size)
  expect_equal(batched$batch_size, 200)
  difference <- batched$loss - whole$loss
  expect_gt(stats::sd(difference), 1)  # the minibatches do differ
  expect_lt(abs(mean(difference)), 4.5 * stats::sd(difference) / sqrt(length(difference)))
  # batch_size = all the rows is the whole data
  all_rows <- run(2000)
  expect_identical(all_rows$loss, whole$loss)
})

test_that("svi()'s minibatches in the tile kernel (the emulated backend, lane by lane) are unbiased", {
  mr <- many_rows_normal(400)
  mu <- mr$mu
  old <- options(lockstep.backend = "emulated", lockstep.tile_kernel = TRUE)
  on.exit(options(old))
  run <- function(batch_size) {
    set.seed(10)
    suppressWarnings(svi(mr$model, batch_size = batch_size, optimiser = adam(learning_rate = 0),
                         n_iterations = 400, tolerance = 0, initial_values = initials(mu = 1),
                         n_draws = 4, verbose = FALSE, compute_options = cpu_only(threads = 1)))
  }
  difference <- run(80)$loss - run(NULL)$loss
  expect_gt(stats::sd(difference), 1)
  expect_lt(abs(mean(difference)), 4.5 * stats::sd(difference) / sqrt(length(difference)))
})

test_that("svi() with minibatches of a tenth of the rows recovers a conjugate normal posterior", {
  mr <- many_rows_normal(2000)
  set.seed(1)
  fit <- svi(mr$model, batch_size = 200, particles = 8, n_iterations = 6000, tolerance = 0,
             decay_rate = 0.01, decay_steps = 6000, optimiser = adam(learning_rate = 0.05),
             verbose = FALSE)
  expect_lt(abs(fit$guide$mean - mr$mean), 0.5 * mr$sd)
  expect_lt(abs(fit$guide$sd / mr$sd - 1), 0.1)
  expect_output(print(fit), "minibatches of 200 rows")
})

test_that("svi() refuses minibatches and initial values it cannot use, naming them", {
  mr <- many_rows_normal(50)
  expect_error(svi(mr$model, batch_size = 0), "`batch_size` must be a whole number")
  expect_error(svi(mr$model, batch_size = 2.5), "`batch_size` must be a whole number")
  expect_error(svi(mr$model, batch_size = 51), "at most the likelihood's 50 rows, not 51")
  # a minibatch is drawn in blocks of at least 16 rows (or tile_rows)
  expect_error(svi(mr$model, batch_size = 15), "`batch_size` must be at least 16 rows")
  expect_error(svi(mr$model, batch_size = 4, compute_options = cpu_only(tile_rows = 5)),
               "`batch_size` must be at least 5 rows")
  # no likelihood over rows: a prior alone, and a multivariate normal
  # likelihood (evaluated whole)
  x <- normal(0, 1)
  expect_error(svi(model(x), batch_size = 5), "`batch_size` needs a likelihood over rows")
  Y <- matrix(stats::rnorm(20), 10, 2)
  m2 <- normal(0, 1, dim = 2)
  distribution(Y) <- multivariate_normal(t(m2), diag(2), n_realisations = 10)
  expect_error(svi(model(m2), batch_size = 5), "this model has none")
  # discrete variables never reach svi(): model() refuses them
  expect_error(model(poisson(3)), "discrete variable")
  # initial values whose log density is not finite: the variable is named
  a <- normal(0, 1)
  b <- normal(0, 1)
  counts <- c(1, 0, 3)
  distribution(counts) <- poisson(exp(a + b))
  expect_error(svi(model(a, b), initial_values = initials(a = 800), verbose = FALSE),
               "not finite at the initial values given for `a`")
  expect_error(mcmc(model(a, b), initial_values = initials(b = 0.5, a = 800), chains = 1,
                    verbose = FALSE),
               "not finite at the initial values given for `a`")
})
