# rhat() and ess_bulk() on draws with known behaviour, and summary() of a
# greta_mcmc_list with them.

ar1_chains <- function(n, chains, phi) {
  vapply(seq_len(chains), function(k) {
    e <- rnorm(n)
    y <- numeric(n)
    y[1] <- e[1] / sqrt(1 - phi^2)
    for (i in 2:n) y[i] <- phi * y[i - 1] + e[i]
    y
  }, numeric(n))
}

test_that("rhat() is about 1 for mixed chains and large for chains that differ", {
  set.seed(701)
  x <- matrix(rnorm(4000), ncol = 4)
  expect_lt(abs(rhat(x) - 1), 0.01)
  # one chain elsewhere
  expect_gt(rhat(x + rep(c(0, 0, 0, 2), each = 1000)), 1.1)
  # one chain wider: only the folded (rank-normalised |x - median|) part sees it
  expect_gt(rhat(x * rep(c(1, 1, 1, 3), each = 1000)), 1.05)
  # a trend within chains: split R-hat sees it
  expect_gt(rhat(x + seq(0, 3, length.out = 1000)), 1.1)
})

test_that("ess_bulk() matches the effective sample size of known processes", {
  set.seed(702)
  x <- matrix(rnorm(8000), ncol = 4)
  expect_equal(ess_bulk(x), 8000, tolerance = 0.15)
  # AR(1) with phi = 0.7: ESS = N (1 - phi) / (1 + phi); averaged over replicates
  phi <- 0.7
  ess <- replicate(5, ess_bulk(ar1_chains(4000, 4, phi)))
  expect_equal(mean(ess), 16000 * (1 - phi) / (1 + phi), tolerance = 0.15)
  # antithetic chains are more efficient than independent draws (capped at N log10 N)
  anti <- ar1_chains(2000, 4, -0.5)
  expect_gt(ess_bulk(anti), 8000)
  expect_lte(ess_bulk(anti), 8000 * log10(8000))
  # rank normalisation: a monotone transform does not change the bulk ESS
  expect_equal(ess_bulk(exp(x)), ess_bulk(x))
  # coda chains of one unnamed quantity (coda::mcmc() of a vector) are that
  # quantity's chains, not none
  unnamed <- coda::mcmc.list(lapply(1:4, function(k) coda::mcmc(x[, k])))
  expect_equal(unname(ess_bulk(unnamed)), ess_bulk(x))
  expect_equal(unname(rhat(unnamed)), rhat(x))
})

test_that("rhat() and ess_bulk() check their input and take a greta_mcmc_list", {
  expect_error(rhat("a"), "matrix of draws")
  expect_error(ess_bulk(1:3), "at least 4 rows")
  expect_equal(rhat(1:100), rhat(matrix(1:100, ncol = 1)))
  set.seed(703)
  m <- eight_schools_model()
  draws <- suppressWarnings(mcmc(m, n_samples = 300, warmup = 300, chains = 2, verbose = FALSE))
  r <- rhat(draws)
  e <- ess_bulk(draws)
  expect_equal(names(r), coda::varnames(draws))
  expect_true(all(r < 1.1))
  expect_true(all(e > 50))
  s <- summary(draws)
  expect_s3_class(s, "summary.mcmc")
  expect_equal(rownames(s$diagnostics), coda::varnames(draws))
  expect_equal(s$diagnostics$rhat, unname(r))
  out <- capture.output(print(s))
  expect_true(any(grepl("R-hat", out)))
  expect_true(any(grepl("ess_bulk", out)))
  # the sampler, its tuned step size and the metric that warmup learnt
  step <- signif(attr(draws, "model_info")$run$epsilon, 3)
  expect_length(step, coda::nchain(draws))
  expect_identical(s$sampler, sprintf(
    "nuts, step size %s, metric diagonal (chosen by metric = \"auto\")", step[1]))
  expect_true(any(grepl("4. Sampler: nuts", out, fixed = TRUE)))
  set.seed(704)
  per_chain <- suppressWarnings(mcmc(m, sampler = hmc(metric = "dense", adapt_metric = "per_chain",
                                                      adapt_step_size = "per_chain"),
                                     n_samples = 20, warmup = 100, chains = 2, verbose = FALSE))
  expect_match(summary(per_chain)$sampler,
               "^hmc, step sizes [0-9.e-]+ to [0-9.e-]+ \\(per chain\\), metric dense per chain$")
  set.seed(705)
  shared <- suppressWarnings(mcmc(m, sampler = hmc(adapt_step_size = "shared"), n_samples = 20,
                                  warmup = 100, chains = 2, verbose = FALSE))
  expect_match(summary(shared)$sampler, "^hmc, step size [0-9.e-]+, metric ")
})
