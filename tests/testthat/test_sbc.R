# Simulation-based calibration (Talts et al. 2018) of nuts() in make check: a
# small, quick version of bench/sbc.R (whose runs of 500-2000 replications on
# two hierarchical models are in bench/RESULTS.md). Each replication draws
# the parameters of a non-centred normal hierarchy from their prior,
# simulates data, samples the posterior and records the rank of each true
# value among 19 thinned draws; over replications the ranks must be uniform
# on 0..19 (a chi-square test on 5 bins, per parameter). A sampler that
# misses part of the posterior, or a log density or gradient that is wrong,
# piles the ranks up at the ends or in the middle.

test_that("nuts() is calibrated on a small hierarchical model (simulation-based calibration)", {
  reps <- 100
  L <- 19
  bins <- 5
  J <- 4
  sigma <- c(1.5, 1, 2, 1.2)
  ranks <- matrix(0, reps, 3, dimnames = list(NULL, c("mu", "tau", "theta1")))
  for (r in seq_len(reps)) {
    set.seed(20000 + r)
    mu_true <- rnorm(1, 0, 2)
    tau_true <- abs(rnorm(1, 0, 1))
    z_true <- rnorm(J)
    y <- rnorm(J, mu_true + tau_true * z_true, sigma)
    mu <- normal(0, 2)
    tau <- normal(0, 1, truncation = c(0, Inf))
    z <- normal(0, 1, dim = J)
    theta <- mu + tau * z
    distribution(y) <- normal(theta, sigma)
    theta1 <- theta[1]
    draws <- suppressWarnings(mcmc(model(mu, tau, theta1), n_samples = 200, warmup = 300,
                                   chains = 2, verbose = FALSE))
    post <- as.matrix(draws)
    keep <- round(seq(1, nrow(post), length.out = L))
    truth <- c(mu = mu_true, tau = tau_true, theta1 = mu_true + tau_true * z_true[1])
    for (p in colnames(ranks)) ranks[r, p] <- sum(post[keep, p] < truth[[p]])
  }
  for (p in colnames(ranks)) {
    counts <- tabulate(floor(ranks[, p] / ((L + 1) / bins)) + 1, nbins = bins)
    test <- suppressWarnings(stats::chisq.test(counts))
    expect_gt(test$p.value, 0.001, label = sprintf("%s's ranks (bins %s): p", p,
                                                    paste(counts, collapse = " ")))
  }
})
